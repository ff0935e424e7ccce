package cleaner

import "testing"

// A batch whose trailing records are cleaned away keeps its original
// lastOffsetDelta (spec sections 3 and 9; Kafka's overrideLastOffset), so
// an idempotent producer's last sequence, baseSequence + lastOffsetDelta,
// is the same after compaction.
func TestCleanedBatchKeepsLastOffsetDelta(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, batchOpts{pid: 7, epoch: 0, seq: 0}, kv("a", "1"), kv("b", "1"))
	e.appendRecs(l, plain, kv("b", "2"))
	e.appendRecs(l, plain, kv("c", "1"))
	e.cleanAll(l)
	hs := readBatches(t, l)
	if hs[0].RecordCount() != 1 {
		t.Fatalf("batch 0 has %d records, want 1 (b=1 is shadowed by b=2)", hs[0].RecordCount())
	}
	if hs[0].LastOffset() != 1 || hs[0].BaseSequence()+hs[0].LastOffsetDelta() != 1 {
		t.Fatalf("batch 0 last offset %d, last sequence %d; want 1 and 1", hs[0].LastOffset(), hs[0].BaseSequence()+hs[0].LastOffsetDelta())
	}
}
