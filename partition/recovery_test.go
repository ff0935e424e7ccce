package partition

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// crashedDir builds a data dir with topic t (one partition) holding the
// given batches, abandoned without a clean shutdown. It returns the batch
// sizes.
func crashedDir(t *testing.T, e *testEnv, overrides map[string]string, n int) []int {
	t.Helper()
	s := e.open()
	l := mustCreate(t, s, "t", 1, overrides).Partitions[0]
	var sizes []int
	for i := 0; i < n; i++ {
		b := mkBatch(t, 2, int64(100+i), 30)
		sizes = append(sizes, len(b))
		mustAppend(t, l, b)
	}
	s.abandon()
	return sizes
}

func checkLog(t *testing.T, l *Log, batches int, leo int64) {
	t.Helper()
	if o := l.Offsets(); o.LogEndOffset != leo || o.HighWatermark != leo {
		t.Fatalf("offsets %+v, want log end offset %d", o, leo)
	}
	if got := len(readAll(t, l)); got != batches {
		t.Fatalf("%d batches, want %d", got, batches)
	}
	// The log takes appends at the right offset after recovery.
	if r := mustAppend(t, l, mkBatch(t, 1, 1, 1)); r.BaseOffset != leo {
		t.Fatalf("append after recovery at %d, want %d", r.BaseOffset, leo)
	}
	if got := len(readAll(t, l)); got != batches+1 {
		t.Fatalf("%d batches after append, want %d", got, batches+1)
	}
}

// TestRecoveryTornTail cuts the last batch at every byte: recovery must
// keep exactly the whole batches before it.
func TestRecoveryTornTail(t *testing.T) {
	tmpl := newEnv(t)
	sizes := crashedDir(t, tmpl, map[string]string{"index.interval.bytes": "50"}, 4)
	last := sizes[len(sizes)-1]
	full := 0
	for _, n := range sizes {
		full += n
	}
	for cut := 1; cut <= last; cut++ {
		e := newEnv(t)
		copyDir(t, tmpl.dir, e.dir)
		seg := filepath.Join(e.dir, "t-0", "00000000000000000000.log")
		if err := os.Truncate(seg, int64(full-cut)); err != nil {
			t.Fatal(err)
		}
		s := e.open()
		checkLog(t, s.Topic("t").Partitions[0], 3, 6)
		if st, _ := os.Stat(seg); st.Size() != int64(full-last+sizes[0]) && st.Size() != int64(full-last)+int64(len(mkBatch(t, 1, 1, 1))) {
			t.Fatalf("cut %d: segment is %d bytes", cut, st.Size())
		}
		s.Close()
	}
}

// TestRecoveryCorruptMiddle flips a byte in the middle batch of the last
// segment: that batch and everything after it go.
func TestRecoveryCorruptMiddle(t *testing.T) {
	e := newEnv(t)
	sizes := crashedDir(t, e, map[string]string{"internal.segment.bytes": "400"}, 7)
	// 136-byte batches, two per segment: segments at 0, 4, 8, 12.
	logs := segFiles(t, filepath.Join(e.dir, "t-0"), ".log")
	if len(logs) != 4 {
		t.Fatalf("%d segments", len(logs))
	}
	// Corrupt the second segment (0..3 survive) and check that later ones
	// are deleted too.
	b, _ := os.ReadFile(logs[1])
	b[sizes[0]+40] ^= 0xff
	os.WriteFile(logs[1], b, 0o644)
	// No recovery point: everything is re-validated.
	s := e.open()
	checkLog(t, s.Topic("t").Partitions[0], 3, 6)
	if n := len(segFiles(t, filepath.Join(e.dir, "t-0"), ".log")); n != 2 {
		t.Fatalf("%d segments after recovery, want 2", n)
	}
	s.Close()
}

// TestRecoveryCorruptLastSegment flips a CRC-covered byte of the third of
// five batches in the only segment: two batches survive.
func TestRecoveryCorruptLastSegment(t *testing.T) {
	e := newEnv(t)
	sizes := crashedDir(t, e, nil, 5)
	seg := filepath.Join(e.dir, "t-0", "00000000000000000000.log")
	b, _ := os.ReadFile(seg)
	b[sizes[0]+sizes[1]+recordbatchHeaderSizeForTest+3] ^= 0x01
	os.WriteFile(seg, b, 0o644)
	s := e.open()
	checkLog(t, s.Topic("t").Partitions[0], 2, 4)
	s.Close()
}

const recordbatchHeaderSizeForTest = 61

// TestRecoveryRebuildsIndexes deletes or garbles index files after a clean
// shutdown; the next start rebuilds them byte for byte.
func TestRecoveryRebuildsIndexes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mangle func(path string)
	}{
		{"missing index", func(p string) { os.Remove(p + ".index") }},
		{"missing timeindex", func(p string) { os.Remove(p + ".timeindex") }},
		{"index past the log", func(p string) { os.WriteFile(p+".index", []byte{0, 0, 0, 1, 0x7f, 0, 0, 0}, 0o644) }},
		{"index offset past the segment", func(p string) { os.WriteFile(p+".index", []byte{0, 0, 0x7f, 1, 0, 0, 0, 1}, 0o644) }},
		{"kafka preallocated zeros", func(p string) {
			b, _ := os.ReadFile(p + ".index")
			os.WriteFile(p+".index", append(b, make([]byte, 800)...), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open()
			l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "1000", "index.interval.bytes": "100"}).Partitions[0]
			for i := 0; i < 20; i++ {
				mustAppend(t, l, mkBatch(t, 2, int64(i), 30))
			}
			s.Close()
			dir := filepath.Join(e.dir, "t-0")
			seg := filepath.Join(dir, "00000000000000000000")
			wantIdx, _ := os.ReadFile(seg + ".index")
			wantT, _ := os.ReadFile(seg + ".timeindex")
			if len(wantIdx) == 0 || len(wantT) == 0 {
				t.Fatal("no index entries to test with")
			}
			tc.mangle(seg)
			s = e.open()
			defer s.Close()
			checkLog(t, s.Topic("t").Partitions[0], 20, 40)
			gotIdx, _ := os.ReadFile(seg + ".index")
			gotT, _ := os.ReadFile(seg + ".timeindex")
			if !bytes.Equal(gotIdx, wantIdx) || !bytes.Equal(gotT, wantT) {
				t.Fatalf("rebuilt indexes differ:\n%x\n%x\n%x\n%x", gotIdx, wantIdx, gotT, wantT)
			}
		})
	}
}

// TestCleanRestartReadsNothing: after Close, Open reads no segment data.
func TestCleanRestartReadsNothing(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	for i := 0; i < 3; i++ {
		l := mustCreate(t, s, "t"+string(rune('a'+i)), 2, map[string]string{"internal.segment.bytes": "500"}).Partitions[0]
		for j := 0; j < 20; j++ {
			mustAppend(t, l, mkBatch(t, 3, int64(j), 20))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean shutdown file: %v", err)
	}
	s = e.open()
	if n := s.RecoveryBytesRead(); n != 0 {
		t.Fatalf("clean restart read %d bytes", n)
	}
	if _, err := os.Stat(filepath.Join(e.dir, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("clean shutdown file still there after open: %v", err)
	}
	checkLog(t, s.Topic("ta").Partitions[0], 20, 60)
	s.Close()
}

// TestUncleanRestartScansOnlyPastRecoveryPoint: segments below the
// checkpointed recovery point are not re-read.
func TestUncleanRestartScansOnlyPastRecoveryPoint(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "500"}).Partitions[0]
	for j := 0; j < 20; j++ {
		mustAppend(t, l, mkBatch(t, 3, int64(j), 20))
	}
	l.rollWG.Wait() // the rolled segments' background flushes
	if err := s.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	segs := *l.segs.Load()
	active := segs[len(segs)-1]
	rp := l.RecoveryPoint()
	if rp < active.base {
		t.Fatalf("recovery point %d below the active segment's base %d", rp, active.base)
	}
	activeSize := active.size.Load()
	s.abandon()
	s = e.open()
	if n := s.RecoveryBytesRead(); n != activeSize {
		t.Fatalf("recovery read %d bytes, want only the active segment's %d", n, activeSize)
	}
	checkLog(t, s.Topic("t").Partitions[0], 20, 60)
	s.Close()
}

// TestRecoveryEmptyAndZeroFilledTail: a tail of zeros (a file system that
// extended the file but never wrote the data) is truncated.
func TestRecoveryZeroFilledTail(t *testing.T) {
	e := newEnv(t)
	crashedDir(t, e, nil, 3)
	seg := filepath.Join(e.dir, "t-0", "00000000000000000000.log")
	f, _ := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(make([]byte, 4096))
	f.Close()
	s := e.open()
	checkLog(t, s.Topic("t").Partitions[0], 3, 6)
	s.Close()
}

// TestRecoveryCompletesSwap: a crash in the middle of the cleaner's swap
// leaves either the old segments or the new one, never both.
func TestRecoveryCompletesSwap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prepare  func(dir string, seg0, seg2 []byte)
		segments []string
	}{
		{"swap written, old segments still there", func(dir string, seg0, seg2 []byte) {
			os.WriteFile(filepath.Join(dir, "00000000000000000000.log.swap"), append(append([]byte{}, seg0...), seg2...), 0o644)
		}, []string{"00000000000000000000.log", "00000000000000000004.log", "00000000000000000006.log", "00000000000000000008.log"}},
		{"swap written, one old segment renamed .deleted", func(dir string, seg0, seg2 []byte) {
			os.WriteFile(filepath.Join(dir, "00000000000000000000.log.swap"), append(append([]byte{}, seg0...), seg2...), 0o644)
			os.Rename(filepath.Join(dir, "00000000000000000002.log"), filepath.Join(dir, "00000000000000000002.log.deleted"))
		}, []string{"00000000000000000000.log", "00000000000000000004.log", "00000000000000000006.log", "00000000000000000008.log"}},
		{"cleaning unfinished", func(dir string, seg0, seg2 []byte) {
			os.WriteFile(filepath.Join(dir, "00000000000000000000.log.cleaned"), seg0[:10], 0o644)
			os.WriteFile(filepath.Join(dir, "00000000000000000000.index.cleaned"), nil, 0o644)
		}, []string{"00000000000000000000.log", "00000000000000000002.log", "00000000000000000004.log", "00000000000000000006.log", "00000000000000000008.log"}},
		{"split unfinished (KAFKA-6264)", func(dir string, seg0, seg2 []byte) {
			os.WriteFile(filepath.Join(dir, "00000000000000000002.log.swap"), seg2, 0o644)
			os.WriteFile(filepath.Join(dir, "00000000000000000000.log.cleaned"), seg0, 0o644)
		}, []string{"00000000000000000000.log", "00000000000000000002.log", "00000000000000000004.log", "00000000000000000006.log", "00000000000000000008.log"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open()
			l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "300"}).Partitions[0]
			for i := 0; i < 5; i++ {
				mustAppend(t, l, mkBatch(t, 2, int64(i), 40)) // one per segment
			}
			s.Close()
			dir := filepath.Join(e.dir, "t-0")
			seg0, _ := os.ReadFile(filepath.Join(dir, "00000000000000000000.log"))
			seg2, _ := os.ReadFile(filepath.Join(dir, "00000000000000000002.log"))
			tc.prepare(dir, seg0, seg2)
			s = e.open()
			defer s.Close()
			var names []string
			for _, p := range segFiles(t, dir, "") {
				names = append(names, filepath.Base(p))
			}
			logs := segFiles(t, dir, ".log")
			if len(logs) != len(tc.segments) {
				t.Fatalf("files %v, want segments %v", names, tc.segments)
			}
			for i, p := range logs {
				if filepath.Base(p) != tc.segments[i] {
					t.Fatalf("files %v, want segments %v", names, tc.segments)
				}
			}
			for _, n := range names {
				if filepath.Ext(n) == ".swap" || filepath.Ext(n) == ".cleaned" || filepath.Ext(n) == ".deleted" {
					t.Fatalf("left behind %s", n)
				}
			}
			checkLog(t, s.Topic("t").Partitions[0], 5, 10)
		})
	}
}
