package partition

import (
	"bytes"
	"testing"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
)

// TestCrashPendingAppends crashes at every file-system operation of
// Produce's order under flush.messages=1: several batches written to two
// partitions (rolling small segments, so directory fsyncs are due) before
// any is waited for, then the waits. Every batch whose Wait succeeded is
// in the log after the crash, in order, whatever else was lost.
func TestCrashPendingAppends(t *testing.T) {
	ov := map[string]string{"flush.messages": "1", "internal.segment.bytes": "300", "index.interval.bytes": "50"}
	for k := 0; k < 20000; k++ {
		fsys := memfs.New()
		fsys.FailAfter(k)
		acked := make([][][]byte, 2) // per partition
		s, err := openMem(t, fsys)
		if err == nil {
			tp, err := s.CreateTopic("t", 2, ov, false)
		rounds:
			for round := 0; err == nil && round < 3; round++ {
				var pend []PendingAppend
				var batches [][]byte
				var parts []int
				for i := 0; i < 4; i++ {
					part := i % 2
					l := tp.Partitions[part]
					b := mkBatch(t, 2, int64(round*4+i), 40)
					p, err := l.AppendWithConfigPending(l.ConfigSnapshot(), b, nil)
					if err != nil {
						break
					}
					pend, batches, parts = append(pend, p), append(batches, b), append(parts, part)
				}
				for i := range pend {
					if _, err := pend[i].Wait(); err != nil {
						break rounds
					}
					acked[parts[i]] = append(acked[parts[i]], batches[i])
				}
				if len(pend) < 4 {
					break
				}
			}
			s.Close()
		}
		finished := fsys.Ops() < k

		s2, err := openMem(t, fsys.CrashClone())
		if err != nil {
			t.Fatalf("k=%d: open after crash: %v", k, err)
		}
		tp := s2.Topic("t")
		if tp == nil {
			if len(acked[0])+len(acked[1]) > 0 {
				t.Fatalf("k=%d: topic lost with acknowledged batches", k)
			}
			s2.Close()
			continue
		}
		for part, want := range acked {
			got := readAll(t, tp.Partitions[part])
			if len(got) < len(want) {
				t.Fatalf("k=%d: partition %d: %d batches after crash, %d acknowledged", k, part, len(got), len(want))
			}
			for i, b := range want {
				if !bytes.Equal(got[i], b) {
					t.Fatalf("k=%d: partition %d: batch %d differs", k, part, i)
				}
			}
		}
		if endCrashRun(t, k, s2, finished) {
			return
		}
	}
	t.Fatal("did not finish")
}
