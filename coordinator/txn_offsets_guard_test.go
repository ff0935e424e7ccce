package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/partition"
)

// TestTxnOffsetCommitVerificationGuard: a transactional offset commit
// whose transaction ended (marker written) after the coordinator vouched
// for it must not open a transaction in __consumer_offsets that no
// coordinator will end (LSO stuck, offsets pending forever):
// INVALID_TXN_STATE. With a fresh guard it is written.
func TestTxnOffsetCommitVerificationGuard(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.c.EnsureOffsetsTopic(); err != nil {
		t.Fatal(err)
	}
	p := PartitionFor("g", e.cfg.OffsetsTopicPartitions)
	log, err := e.store.Log(OffsetsTopic, p)
	if err != nil {
		t.Fatal(err)
	}
	commitWith := func(g partition.TxnVerificationGuard) []int16 {
		return e.c.TxnOffsetCommit(context.Background(), "g",
			TxnCommit{TransactionalID: "tx", ProducerID: 100, Generation: -1, Guard: &g},
			[]CommitPartition{{Topic: "a", Offset: 5, LeaderEpoch: -1, CommitTimestamp: e.c.Now(), ExpireTimestamp: -1}})
	}

	g := log.StartTxnVerification(100, 0)
	if _, err := log.WriteTxnMarker(partition.TxnMarker{ProducerID: 100, Commit: true}); err != nil { // EndTxn meanwhile
		t.Fatal(err)
	}
	e.c.CompleteTxnOffsets(p, 100, true)
	if codes := commitWith(g); len(codes) != 1 || codes[0] != kerr.InvalidTxnState.Code {
		t.Fatalf("commit after the marker: %v", codes)
	}
	if o := log.Offsets(); o.LastStableOffset != o.LogEndOffset {
		t.Fatalf("offsets %+v: a transaction was opened", o)
	}
	if got := fetchStable(e, "g", "a"); got["a"] != -1 {
		t.Fatalf("after refused commit: %v", got)
	}

	if codes := commitWith(log.StartTxnVerification(100, 0)); len(codes) != 1 || codes[0] != 0 {
		t.Fatalf("verified commit: %v", codes)
	}
	if got := fetchStable(e, "g", "a"); got["a"] != -2 {
		t.Fatalf("pending commit: %v", got)
	}
}
