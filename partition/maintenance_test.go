package partition

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// smallSegmentLog makes a log of five segments holding one 2-record batch
// each: bases 0, 2, 4, 6, 8.
func smallSegmentLog(t *testing.T, e *testEnv, s *Store) *Log {
	t.Helper()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "200", "file.delete.delay.ms": "1000"}).Partitions[0]
	for i := 0; i < 5; i++ {
		mustAppend(t, l, mkBatch(t, 2, int64(100*i), 40))
	}
	if n := len(l.Segments()); n != 5 {
		t.Fatalf("%d segments", n)
	}
	return l
}

func segBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.Segments() {
		out = append(out, s.BaseOffset)
	}
	return out
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSegmentsAndReadSegment(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := smallSegmentLog(t, e, s)
	infos := l.Segments()
	for i, si := range infos {
		if si.BaseOffset != int64(2*i) || si.NextOffset != int64(2*i+2) || si.Active != (i == 4) || si.MaxTimestamp != int64(100*i+1) {
			t.Fatalf("segment %d: %+v", i, si)
		}
		b := make([]byte, si.Size)
		if n, err := l.ReadSegment(si.BaseOffset, b, 0); err != nil || int64(n) != si.Size {
			t.Fatalf("ReadSegment: %d %v", n, err)
		}
		if h := batchesIn(t, b); len(h) != 1 || h[0].BaseOffset() != si.BaseOffset {
			t.Fatal("segment bytes")
		}
	}
	if _, err := l.ReadSegment(3, make([]byte, 10), 0); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("ReadSegment of no segment: %v", err)
	}
}

// TestReplaceSegments swaps a cleaned segment in for two old ones, the way
// the cleaner does, and checks reads, file names, delayed removal and a
// restart.
func TestReplaceSegments(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := smallSegmentLog(t, e, s)
	dir := l.Dir()
	seg0, _ := os.ReadFile(filepath.Join(dir, "00000000000000000000.log"))
	seg2, _ := os.ReadFile(filepath.Join(dir, "00000000000000000002.log"))
	// Cleaned output: both batches, no indexes (they are rebuilt).
	os.WriteFile(filepath.Join(dir, "00000000000000000000.log.cleaned"), append(append([]byte{}, seg0...), seg2...), 0o644)

	cleaned := append(append([]byte{}, seg0...), seg2...)
	if err := l.ReplaceSegments([]int64{0, 4}, 0); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("non-consecutive replacement: %v", err)
	}
	if m := segFiles(t, dir, ".cleaned"); len(m) != 0 {
		t.Fatalf("aborted replacement left %v", m)
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000006.log.cleaned"), cleaned[:10], 0o644)
	if err := l.ReplaceSegments([]int64{6, 8}, 6); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("replacing the active segment: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000000.log.cleaned"), cleaned, 0o644)

	if err := l.ReplaceSegments([]int64{0, 2}, 0); err != nil {
		t.Fatal(err)
	}
	if got := segBases(l); !equalInts(got, []int64{0, 4, 6, 8}) {
		t.Fatalf("segments %v", got)
	}
	if si := l.Segments()[0]; si.NextOffset != 4 || si.MaxTimestamp != 101 {
		t.Fatalf("new segment %+v", si)
	}
	if n := len(readAll(t, l)); n != 5 {
		t.Fatalf("%d batches", n)
	}
	if r, err := l.Read(3, 1<<20, true); err != nil || batchesIn(t, r.Records)[0].BaseOffset() != 2 {
		t.Fatalf("Read(3) after replace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000002.log.deleted")); err != nil {
		t.Fatalf("old segment not renamed .deleted: %v", err)
	}
	e.clock.Advance(time.Second)
	l.rollWG.Wait()
	for _, suffix := range []string{".deleted", ".swap", ".cleaned"} {
		if m := segFiles(t, dir, suffix); len(m) != 0 {
			t.Fatalf("left behind %v", m)
		}
	}
	mustAppend(t, l, mkBatch(t, 1, 1000, 1))
	s.Close()
	s = e.open()
	defer s.Close()
	l = s.Topic("t").Partitions[0]
	if got := segBases(l); !equalInts(got, []int64{0, 4, 6, 8, 10}) {
		t.Fatalf("segments after restart %v", got)
	}
	checkLog(t, l, 6, 11)
}

func TestDeleteSegmentsBefore(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := smallSegmentLog(t, e, s)
	if _, err := l.DeleteSegmentsBefore(11); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past HW: %v", err)
	}
	if n, err := l.DeleteSegmentsBefore(4); err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if got := segBases(l); !equalInts(got, []int64{4, 6, 8}) {
		t.Fatalf("segments %v", got)
	}
	if o := l.Offsets(); o.LogStartOffset != 4 {
		t.Fatalf("offsets %+v", o)
	}
	if _, err := l.Read(3, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	// Everything, the active segment included.
	if n, err := l.DeleteSegmentsBefore(10); err != nil || n != 3 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if got := segBases(l); !equalInts(got, []int64{10}) {
		t.Fatalf("segments %v", got)
	}
	if o := l.Offsets(); o != (Offsets{10, 10, 10, 10}) {
		t.Fatalf("offsets %+v", o)
	}
	if r := mustAppend(t, l, mkBatch(t, 1, 1, 1)); r.BaseOffset != 10 || r.LogStartOffset != 10 {
		t.Fatalf("append %+v", r)
	}
	if n := len(readAll(t, l)); n != 1 {
		t.Fatalf("%d batches", n)
	}
	s.Close()
	s = e.open()
	l = s.Topic("t").Partitions[0]
	if o := l.Offsets(); o.LogStartOffset != 10 || o.LogEndOffset != 11 {
		t.Fatalf("after restart %+v", o)
	}
	if m := segFiles(t, l.Dir(), ".deleted"); len(m) != 0 {
		t.Fatalf("left behind %v", m)
	}
}
