package partition

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTxnIndexThroughSwapAndRetention: the cleaner's swap keeps an
// aborted transaction's entry while its marker stays in the output and
// drops it with the marker; retention deletes .txnindex and snapshot
// files with their segments.
func TestTxnIndexThroughSwapAndRetention(t *testing.T) {
	for _, keepMarker := range []bool{true, false} {
		e := newEnv(t)
		s := e.open()
		l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "150", "file.delete.delay.ms": "1000"}).Partitions[0]
		mustAppend(t, l, pidBatch(t, 5, 0, 0, 2, true)) // 0-1, segment 0
		if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, CoordinatorEpoch: 1}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			mustAppend(t, l, mkBatch(t, 1, 1, 40))
		}
		segs := l.Segments()
		if len(segs) < 3 {
			t.Fatalf("%d segments", len(segs))
		}
		markerSeg := segs[0].BaseOffset
		for _, si := range segs {
			if si.BaseOffset <= 2 {
				markerSeg = si.BaseOffset
			}
		}
		dir := l.Dir()
		txnPath := filepath.Join(dir, segmentFileName(markerSeg, txnIndexSuffix))
		if _, err := os.Stat(txnPath); err != nil {
			t.Fatalf("no .txnindex in the marker's segment %d: %v", markerSeg, err)
		}
		// The "cleaned" output of the segments up to the marker's: the
		// same bytes, or without the marker batch.
		var bases []int64
		var out []byte
		for _, si := range segs {
			if si.BaseOffset > markerSeg {
				break
			}
			bases = append(bases, si.BaseOffset)
			b, _ := os.ReadFile(si.LogPath)
			for len(b) > 0 {
				h := batchesIn(t, b)[0]
				if keepMarker || !h.Control() {
					out = append(out, b[:h.Size()]...)
				}
				b = b[h.Size():]
			}
		}
		os.WriteFile(filepath.Join(dir, segmentFileName(bases[0], logSuffix)+cleanedSuffix), out, 0o644)
		if err := l.ReplaceSegments(bases, bases[0]); err != nil {
			t.Fatal(err)
		}
		got := l.AbortedTransactions(0, 100)
		if keepMarker != (len(got) == 1) {
			t.Fatalf("keepMarker=%v: aborted %+v", keepMarker, got)
		}
		_, err := os.Stat(filepath.Join(dir, segmentFileName(bases[0], txnIndexSuffix)))
		if keepMarker != (err == nil) {
			t.Fatalf("keepMarker=%v: .txnindex after swap: %v", keepMarker, err)
		}
		e.clock.Advance(time.Second)
		l.rollWG.Wait()
		if m := segFiles(t, dir, ".deleted"); len(m) != 0 {
			t.Fatalf("left behind %v", m)
		}
		// Retention past everything: the .txnindex and the snapshots
		// below the new first segment go.
		last := l.Segments()[len(l.Segments())-1].BaseOffset
		if _, err := l.DeleteSegmentsBefore(last); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		l.rollWG.Wait()
		if m := segFiles(t, dir, txnIndexSuffix); len(m) != 0 {
			t.Fatalf(".txnindex left after retention: %v", m)
		}
		offs, _ := l.snapshotOffsets()
		for _, o := range offs {
			if o < last {
				t.Fatalf("snapshot %d below the log start %d", o, last)
			}
		}
		if got := l.AbortedTransactions(0, 100); len(got) != 0 {
			t.Fatalf("aborted after retention %+v", got)
		}
		s.Close()
	}
}
