package partition

import (
	"testing"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
)

// TestReplayCacheBudgetFallback: with the replay cache's budget too small
// for any segment, the producer-state replay reads the segments again and
// rebuilds the same state (producers, LSO, aborted transactions) as with
// the cache.
func TestReplayCacheBudgetFallback(t *testing.T) {
	fsys := memfs.New()
	s, err := openMem(t, fsys)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := s.CreateTopic("t", 1, map[string]string{"internal.segment.bytes": "250", "flush.messages": "1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := tp.Partitions[0]
	mustAppend(t, l, pidBatch(t, 1, 0, 0, 2, false))
	mustAppend(t, l, pidBatch(t, 2, 0, 0, 1, true))
	mustAppend(t, l, pidBatch(t, 1, 0, 2, 1, false))
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 2, CoordinatorEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, pidBatch(t, 3, 0, 0, 2, true))
	mustAppend(t, l, pidBatch(t, 1, 0, 3, 2, false))
	mustAppend(t, l, pidBatch(t, 2, 1, 0, 1, true))
	l.rollWG.Wait()
	s.abandon()

	// Without snapshots or a recovery point, the whole log is recovered
	// and replayed.
	crashed := fsys.CrashClone()
	if entries, err := crashed.ReadDir("/data/t-0"); err == nil {
		for _, e := range entries {
			if _, isSnap := parseSegmentFileName(e.Name(), snapshotSuffix); isSnap {
				crashed.Remove("/data/t-0/" + e.Name())
			}
		}
	}
	crashed.Remove("/data/" + cleanShutdownFile)
	crashed.Remove("/data/" + recoveryPointFile)
	if err := crashed.SyncDir("/data/t-0"); err != nil {
		t.Fatal(err)
	}
	if err := crashed.SyncDir("/data"); err != nil {
		t.Fatal(err)
	}

	observe := func(budget int64) (pstateView, int64) {
		t.Helper()
		s, err := openMemWith(t, crashed.CrashClone(), budget)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		l := s.Topic("t").Partitions[0]
		o := l.Offsets()
		return pstateView{l.Producers(), o.LastStableOffset, o.LogEndOffset, l.AbortedTransactions(0, o.LogEndOffset)}, s.RecoveryBytesRead()
	}
	want, cachedRead := observe(64 << 20)
	got, fallbackRead := observe(1)
	if fallbackRead <= cachedRead {
		t.Fatalf("read %d bytes with a tiny budget, %d with the cache: the fallback did not re-read", fallbackRead, cachedRead)
	}
	if len(want.producers) != 3 || want.lso != 5 || len(want.aborted) != 1 {
		t.Fatalf("cached replay: %+v", want)
	}
	if got.lso != want.lso || got.leo != want.leo || len(got.producers) != len(want.producers) || len(got.aborted) != len(want.aborted) {
		t.Fatalf("fallback %+v, cached %+v", got, want)
	}
	for i := range got.producers {
		if got.producers[i] != want.producers[i] {
			t.Fatalf("producer %+v, cached %+v", got.producers[i], want.producers[i])
		}
	}
	for i := range got.aborted {
		if got.aborted[i] != want.aborted[i] {
			t.Fatalf("aborted %+v, cached %+v", got.aborted, want.aborted)
		}
	}
}

// TestReplayedTxnIndexDurableBeforeSnapshot: .txnindex entries rebuilt by
// the producer-state replay at load are fsynced before the snapshot that
// covers them is written, so a power cut right after the load cannot
// leave a snapshot that hides an aborted transaction.
func TestReplayedTxnIndexDurableBeforeSnapshot(t *testing.T) {
	fsys := memfs.New()
	s, err := openMem(t, fsys)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := s.CreateTopic("t", 1, map[string]string{"flush.messages": "1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := tp.Partitions[0]
	mustAppend(t, l, pidBatch(t, 2, 0, 0, 2, true))                                            // 0-1
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 2, CoordinatorEpoch: 1}); err != nil { // 2: abort
		t.Fatal(err)
	}
	mustAppend(t, l, pidBatch(t, 1, 0, 0, 1, false)) // 3
	s.Close()

	// Lose the snapshots and the .txnindex: the next load replays the
	// whole log and writes the abort entry again.
	dir := fsys.CrashClone()
	entries, err := dir.ReadDir("/data/t-0")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		_, isSnap := parseSegmentFileName(e.Name(), snapshotSuffix)
		_, isTxn := parseSegmentFileName(e.Name(), txnIndexSuffix)
		if isSnap || isTxn {
			dir.Remove("/data/t-0/" + e.Name())
		}
	}
	dir.Remove("/data/" + cleanShutdownFile)
	if err := dir.SyncDir("/data/t-0"); err != nil {
		t.Fatal(err)
	}
	if err := dir.SyncDir("/data"); err != nil {
		t.Fatal(err)
	}
	dir = dir.CrashClone()

	s, err = openMem(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Topic("t").Partitions[0].AbortedTransactions(0, 4); len(got) != 1 {
		t.Fatalf("after replay: aborted %+v", got)
	}
	// Power cut right after the load.
	crashed := dir.CrashClone()
	s.abandon()
	s, err = openMem(t, crashed)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Topic("t").Partitions[0].AbortedTransactions(0, 4); len(got) != 1 || got[0].ProducerID != 2 || got[0].FirstOffset != 0 {
		t.Fatalf("after a crash following the load: aborted %+v, want producer 2's from 0", got)
	}
}
