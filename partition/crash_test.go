package partition

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
)

func openMem(t *testing.T, fsys *memfs.FS) (*Store, error) {
	t.Helper()
	return openMemWith(t, fsys, 0)
}

// openMemWith is openMem with a replay cache budget (0: the default).
func openMemWith(t *testing.T, fsys *memfs.FS, replayCacheBudget int64) (*Store, error) {
	t.Helper()
	return Open(Config{Dir: "/data", NodeID: 1, FS: fsys, Clock: clock.NewManual(testStart), Logger: zerolog.Nop(), ReplayCacheBudget: replayCacheBudget})
}

// TestCrashAtEveryOperation stops the machine at the k-th file-system
// operation, for k = 0, 1, 2, ... until a run finishes first, and checks
// that the data dir left by the crash opens, is consistent, and (with
// flush.messages=1) holds every acknowledged batch.
func TestCrashAtEveryOperation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ov      map[string]string
		durable bool
	}{
		{"flush.messages=1", map[string]string{"flush.messages": "1", "internal.segment.bytes": "300", "index.interval.bytes": "50"}, true},
		{"default flush policy", map[string]string{"internal.segment.bytes": "300"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k := 0; k < 10000; k++ {
				fsys := memfs.New()
				fsys.FailAfter(k)
				var acked [][]byte
				s, err := openMem(t, fsys)
				if err == nil {
					tp, err := s.CreateTopic("t", 1, tc.ov, false)
					if err == nil {
						for i := 0; i < 6; i++ {
							b := mkBatch(t, 2, int64(i), 40)
							if _, err := tp.Partitions[0].Append(b); err != nil {
								break
							}
							acked = append(acked, b) // rewritten in place by Append
						}
					}
					s.Close()
				}
				finished := fsys.Ops() < k // the run ended before the crash point

				if checkCrashed(t, k, fsys, acked, tc.durable, finished) {
					return
				}
			}
			t.Fatal("did not finish")
		})
	}
}

// TestCrashCreatingManyPartitions crashes at every file-system operation
// of a CreateTopics of many partitions (which fsyncs the data dir once,
// not each partition): after the crash the topic is absent, or present
// with every partition, each of which opens and takes appends.
func TestCrashCreatingManyPartitions(t *testing.T) {
	const n = 20
	for k := 0; k < 100000; k++ {
		fsys := memfs.New()
		fsys.FailAfter(k)
		created := false
		s, err := openMem(t, fsys)
		if err == nil {
			_, err = s.CreateTopic("m", n, nil, false)
			created = err == nil
			s.Close()
		}
		finished := fsys.Ops() < k

		s2, err := openMem(t, fsys.CrashClone())
		if err != nil {
			t.Fatalf("k=%d: open after crash: %v", k, err)
		}
		tp := s2.Topic("m")
		switch {
		case tp == nil && created:
			t.Fatalf("k=%d: acknowledged topic lost", k)
		case tp != nil && len(tp.Partitions) != n:
			t.Fatalf("k=%d: %d partitions after crash, want %d", k, len(tp.Partitions), n)
		case tp != nil:
			for _, l := range tp.Partitions {
				if r, err := l.Append(mkBatch(t, 1, 1, 1)); err != nil || r.BaseOffset != 0 {
					t.Fatalf("k=%d: append to %s-%d after crash: %+v %v", k, l.Topic(), l.Partition(), r, err)
				}
			}
		}
		if endCrashRun(t, k, s2, finished) {
			return
		}
	}
	t.Fatal("did not finish")
}

// checkCrashed opens the data dir a crash at point k left in fsys and
// checks it: it opens, holds every batch of acked when durable, and takes
// an append at its end. It reports whether the sweep is done (the run
// finished before reaching k).
func checkCrashed(t *testing.T, k int, fsys *memfs.FS, acked [][]byte, durable, finished bool) bool {
	t.Helper()
	s2, err := openMem(t, fsys.CrashClone())
	if err != nil {
		t.Fatalf("k=%d: open after crash: %v", k, err)
	}
	tp := s2.Topic("t")
	if tp == nil {
		if len(acked) > 0 {
			t.Fatalf("k=%d: topic lost with %d acknowledged batches", k, len(acked))
		}
		s2.Close()
		return false
	}
	got := readAll(t, tp.Partitions[0])
	if durable {
		if len(got) < len(acked) {
			t.Fatalf("k=%d: %d batches after crash, %d acknowledged", k, len(got), len(acked))
		}
		for i, b := range acked {
			if !bytes.Equal(got[i], b) {
				t.Fatalf("k=%d: batch %d differs", k, i)
			}
		}
	}
	// Whatever survived takes appends at its end.
	leo := tp.Partitions[0].Offsets().LogEndOffset
	if r, err := tp.Partitions[0].Append(mkBatch(t, 1, 1, 1)); err != nil || r.BaseOffset != leo {
		t.Fatalf("k=%d: append after crash: %+v %v", k, r, err)
	}
	return endCrashRun(t, k, s2, finished)
}

// endCrashRun closes the store reopened after crash point k and reports
// whether the sweep is done (the run finished before reaching k).
func endCrashRun(t *testing.T, k int, s *Store, finished bool) bool {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("k=%d: close: %v", k, err)
	}
	if finished {
		t.Logf("%d crash points", k)
	}
	return finished
}
