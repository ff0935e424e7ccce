package partition

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
)

// idleAll makes every log of s idle and closes every idle segment's
// files: the first sweep forgets the appends before it, the second
// unpins the active segments, the third (past segmentIdleMs) closes them.
func idleAll(s *Store, c *clock.Manual) {
	s.closeIdleSegments()
	for range 2 {
		c.Advance(2 * segmentIdleMs * time.Millisecond)
		s.closeIdleSegments()
	}
}

// activeOpen reports whether l's active segment has its files open.
func activeOpen(l *Log) bool {
	l.mu.Lock()
	seg := l.active
	l.mu.Unlock()
	seg.closeMu.Lock()
	defer seg.closeMu.Unlock()
	return seg.filesOpen
}

// TestIdleActiveSegmentReopensExactly: appending with the active
// segment's files closed by the idle sweep between appends (and a read
// now and then) leaves the segment's .log, .index and .timeindex byte for
// byte as an uninterrupted run does, before and after a clean close: the
// writer's state (size, index entry counts and last entries, bytes since
// the last index entry, largest timestamp) survives the reopen.
func TestIdleActiveSegmentReopensExactly(t *testing.T) {
	ov := map[string]string{"index.interval.bytes": "100"}
	// Timestamps out of order, so the time index's "largest so far"
	// bookkeeping matters; sizes vary, so the index interval does.
	tss := []int64{1000, 1005, 1003, 1010, 1010, 1002, 1020, 1015, 1030, 1025, 1031, 1040}
	run := func(closing bool) (before, after map[string][]byte) {
		e := newEnv(t)
		e.openSegments = 1
		e.ckptInterval = 1000 * time.Hour // the sweeps below are the only ones
		s := e.open()
		l := mustCreate(t, s, "t", 1, ov).Partitions[0]
		for i, ts := range tss {
			if closing {
				idleAll(s, e.clock)
				if activeOpen(l) {
					t.Fatalf("append %d: the idle active segment's files are still open", i)
				}
				if i%3 == 2 {
					if got := len(readAll(t, l)); got != i {
						t.Fatalf("read %d batches, want %d", got, i)
					}
				}
			} else {
				e.clock.Advance(4 * segmentIdleMs * time.Millisecond)
			}
			mustAppend(t, l, mkBatch(t, 1+i%3, ts, 20+37*i))
		}
		if closing {
			idleAll(s, e.clock)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		before = segmentBytes(t, l.Dir())
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return before, segmentBytes(t, l.Dir())
	}
	wantBefore, wantAfter := run(false)
	gotBefore, gotAfter := run(true)
	for _, c := range []struct {
		when      string
		got, want map[string][]byte
	}{{"before close", gotBefore, wantBefore}, {"after close", gotAfter, wantAfter}} {
		if len(c.want[indexSuffix]) == 0 || len(c.want[timeIndexSuffix]) == 0 {
			t.Fatalf("%s: the workload wrote no index entries", c.when)
		}
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if !bytes.Equal(c.got[suf], c.want[suf]) {
				t.Errorf("%s: %s differs: %x, uninterrupted %x", c.when, suf, c.got[suf], c.want[suf])
			}
		}
	}
}

// segmentBytes reads the first segment's three files in dir.
func segmentBytes(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		b, err := os.ReadFile(filepath.Join(dir, segmentFileName(0, suf)))
		if err != nil {
			t.Fatal(err)
		}
		out[suf] = b
	}
	return out
}

// TestIdlePartitionsHoldNoDescriptors: many partitions with data, left
// idle, and the same after a restart, keep at most the cache's files open
// (Config.OpenSegments segments of 3), not some per partition; a read and
// an append on one of them then work.
func TestIdlePartitionsHoldNoDescriptors(t *testing.T) {
	const parts, cacheSize = 40, 4
	bound := int64(3 * cacheSize)
	e := newEnv(t)
	e.openSegments = cacheSize
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	tp := mustCreate(t, s, "many", parts, nil)
	if n := e.fs.open.Load(); n > bound {
		t.Fatalf("%d files open after creating %d partitions, bound %d", n, parts, bound)
	}
	for _, l := range tp.Partitions {
		mustAppend(t, l, mkBatch(t, 2, 1000, 30))
	}
	idleAll(s, e.clock)
	if n := e.fs.open.Load(); n > bound {
		t.Fatalf("%d files open with %d idle partitions, bound %d", n, parts, bound)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open()
	defer s.Close()
	if n := e.fs.open.Load(); n > bound {
		t.Fatalf("%d files open after a start with %d partitions, bound %d", n, parts, bound)
	}
	idleAll(s, e.clock)
	l, _ := s.Log("many", 7)
	if got := readAll(t, l); len(got) != 1 {
		t.Fatalf("read %d batches, want 1", len(got))
	}
	if r := mustAppend(t, l, mkBatch(t, 1, 2000, 30)); r.BaseOffset != 2 {
		t.Fatalf("append at %d, want 2", r.BaseOffset)
	}
	if got := readAll(t, l); len(got) != 2 {
		t.Fatalf("read %d batches after the append, want 2", len(got))
	}
	if n := e.fs.open.Load(); n > bound+3 {
		t.Fatalf("%d files open with one busy partition, bound %d", n, bound+3)
	}
}

// TestCrashClosingIdleActiveSegments is TestCrashAtEveryOperation's sweep
// over a workload whose active segments' files are closed by the idle
// sweep between appends (and reopened by the next append, read or fsync):
// every crash point leaves a data dir that opens, and with
// flush.messages=1 every acknowledged batch is there.
func TestCrashClosingIdleActiveSegments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ov      map[string]string
		durable bool
	}{
		{"flush.messages=1", map[string]string{"flush.messages": "1", "internal.segment.bytes": "300", "index.interval.bytes": "50"}, true},
		{"default flush policy", map[string]string{"internal.segment.bytes": "300", "index.interval.bytes": "50"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k := 0; k < 20000; k++ {
				fsys := memfs.New()
				fsys.FailAfter(k)
				c := clock.NewManual(testStart)
				var acked [][]byte
				s, err := Open(Config{Dir: "/data", NodeID: 1, FS: fsys, Clock: c, Logger: zerolog.Nop(),
					OpenSegments: 1, RecoveryCheckpointInterval: 1000 * time.Hour})
				if err == nil {
					tp, err := s.CreateTopic("t", 2, tc.ov, false)
					if err == nil {
						for i := 0; i < 6; i++ {
							// A roll's background flush holds the files
							// it syncs: let it finish first.
							for _, l := range tp.Partitions {
								l.rollWG.Wait()
							}
							idleAll(s, c)
							if fsys.Ops() < k && activeOpen(tp.Partitions[0]) {
								t.Fatalf("k=%d: the idle active segment's files are still open", k)
							}
							b := mkBatch(t, 2, int64(i), 40)
							if _, err := tp.Partitions[0].Append(b); err != nil {
								break
							}
							acked = append(acked, b)
							if i%2 == 1 {
								// The other partition's active takes the
								// cache's one slot.
								tp.Partitions[1].Append(mkBatch(t, 1, int64(i), 10))
							}
						}
						idleAll(s, c)
					}
					s.Close()
				}
				finished := fsys.Ops() < k

				if checkCrashed(t, k, fsys, acked, tc.durable, finished) {
					return
				}
			}
			t.Fatal("did not finish")
		})
	}
}

// TestAbortMarkerRefusedWhenTxnIndexCannotOpen: the idle sweep closed the
// active segment's .txnindex; an abort marker whose .txnindex cannot be
// opened (out of descriptors) is refused before anything is written, and
// its retry writes the marker with its entry, so read_committed never
// sees the aborted records.
func TestAbortMarkerRefusedWhenTxnIndexCannotOpen(t *testing.T) {
	e := newEnv(t)
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	mustAppend(t, l, pidBatch(t, 5, 0, 0, 2, true)) // 0-1, aborted at 2
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, CoordinatorEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, pidBatch(t, 5, 0, 2, 2, true)) // 3-4
	idleAll(s, e.clock)
	mustAppend(t, l, mkBatch(t, 1, 1, 10)) // 5: wakes the segment
	e.fs.setOnOpen(emfileFor(txnIndexSuffix))
	leo := l.leo.Load()
	_, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, CoordinatorEpoch: 1})
	e.fs.setOnOpen(nil)
	if !errors.Is(err, ErrResourceLimit) {
		t.Fatalf("marker with the .txnindex unopenable: %v, want ErrResourceLimit", err)
	}
	if got := l.leo.Load(); got != leo || s.Offline() != nil {
		t.Fatalf("refused marker: log end %d -> %d, offline %v; want nothing written, online", leo, got, s.Offline())
	}
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, CoordinatorEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	got := l.AbortedTransactions(0, 100)
	if len(got) != 2 || got[1].FirstOffset != 3 {
		t.Fatalf("aborted transactions %+v; want two, the second from offset 3", got)
	}
}
