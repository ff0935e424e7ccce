package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endTxnV is EndTxn at version v: its code and the producer id and epoch
// it answers.
func endTxnV(t *testing.T, w *wire, v int16, id string, pid int64, epoch int16, commit bool) (int16, int64, int16) {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(v)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp := w.roundTrip(req).(*kmsg.EndTxnResponse)
	return resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch
}

// TestTxnV2Flow: a client of transaction.version 2 as Kafka 4.3.1 serves
// it, rule by rule: Produce v12+ and TxnOffsetCommit v5 add their
// partitions without AddPartitionsToTxn or AddOffsetsToTxn, EndTxn v5
// bumps the epoch the next transaction uses, and the old epoch is fenced
// on every path; a client of transaction.version 1 on the same broker
// keeps its protocol.
func TestTxnV2Flow(t *testing.T) {
	b, w := txnBroker(t)
	tp := b.createTopic(t, "t", 2, nil)
	now := b.nowMs()
	produce := func(v int16, id string, pid int64, epoch int16, part, seq int32) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := produceReq(v, "t", tp.ID, part, producerBatch(t, now, pid, epoch, seq, 1, true))
		req.TransactionID = strp(id)
		return onlyProducePartition(t, w.roundTrip(req))
	}
	describe := func(id string) kmsg.DescribeTransactionsResponseTransactionState {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		return w.roundTrip(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
	}

	pid, e0 := initTxn(t, w, "v2")
	// Produce v12+: the partition joins the transaction, which starts.
	for _, c := range []struct {
		v    int16
		part int32
		seq  int32
	}{{12, 0, 0}, {13, 1, 0}, {13, 0, 1}} {
		if p := produce(c.v, "v2", pid, e0, c.part, c.seq); p.ErrorCode != 0 {
			t.Fatalf("produce v%d to %d: %s", c.v, c.part, codeName(p.ErrorCode))
		}
	}
	if d := describe("v2"); d.State != "Ongoing" || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
		t.Fatalf("after implicit adds: %+v", d)
	}
	// TxnOffsetCommit v5: the group's offsets join it too.
	p := producer{"v2", pid, e0}
	expectErr(t, "txn offset commit v5", txnCommitCode(t, w.roundTrip(txnCommitReq(5, "g2", p, -1, "", "t", 0, 3))), nil)
	if d := describe("v2"); len(d.Topics) != 2 {
		t.Fatalf("offsets partition not added: %+v", d.Topics)
	}
	code, rpid, e1 := endTxnV(t, w, 5, "v2", pid, e0, true)
	if code != 0 || rpid != pid || e1 != e0+1 {
		t.Fatalf("EndTxn v5: %s %d/%d, want epoch %d", codeName(code), rpid, e1, e0+1)
	}
	if got := fetchStableOffset(t, w, "g2", "t"); got.ErrorCode != 0 || got.Offset != 3 {
		t.Fatalf("committed offset: %+v", got)
	}
	if o := tp.Partitions[0].Offsets(); o.LastStableOffset != o.HighWatermark || o.LogEndOffset != 3 {
		t.Fatalf("partition 0 after commit: %+v (two records and the marker)", o)
	}

	// The old epoch is fenced everywhere; the retry of the EndTxn is
	// answered NONE with the new epoch (Kafka's TV2 retry rules).
	for _, c := range []struct {
		name string
		got  int16
		want *kerr.Error
	}{
		{"produce at the old epoch", produce(12, "v2", pid, e0, 0, 2).ErrorCode, kerr.InvalidProducerEpoch},
		{"txn offset commit at the old epoch", txnCommitCode(t, w.roundTrip(txnCommitReq(5, "g2", p, -1, "", "t", 0, 4))), kerr.InvalidProducerEpoch},
		{"produce from another producer id", produce(13, "v2", pid+100, e1, 0, 0).ErrorCode, kerr.InvalidProducerIDMapping},
		{"produce for an unknown id", produce(13, "nope", pid, e1, 0, 0).ErrorCode, kerr.InvalidProducerIDMapping},
	} {
		expectErr(t, c.name, c.got, c.want)
	}
	if code, _, e := endTxnV(t, w, 5, "v2", pid, e0, true); code != 0 || e != e1 {
		t.Fatalf("EndTxn v5 retry: %s epoch %d", codeName(code), e)
	}

	// The next transaction at the bumped epoch, aborted: the epoch moves
	// again, the record is not visible to read_committed.
	if p := produce(13, "v2", pid, e1, 1, 0); p.ErrorCode != 0 {
		t.Fatalf("second transaction: %s", codeName(p.ErrorCode))
	}
	if code, _, e2 := endTxnV(t, w, 5, "v2", pid, e1, false); code != 0 || e2 != e1+1 {
		t.Fatalf("abort: %s epoch %d", codeName(code), e2)
	}
	if d := describe("v2"); d.State != "CompleteAbort" || d.ProducerEpoch != e1+1 {
		t.Fatalf("after abort: %+v", d)
	}

	// A transaction.version 1 client beside it: AddPartitionsToTxn v3,
	// Produce v11 verified, EndTxn v4 keeps the epoch.
	pid1, f0 := initTxn(t, w, "v1")
	if p := produce(11, "v1", pid1, f0, 0, 0); p.ErrorCode != kerr.TransactionAbortable.Code {
		t.Fatalf("TV1 produce before AddPartitionsToTxn: %s, want TRANSACTION_ABORTABLE", codeName(p.ErrorCode))
	}
	if r := addPartitionsV3(t, w, 3, "v1", pid1, f0, "t", 0); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn v3: %+v", r)
	}
	if p := produce(11, "v1", pid1, f0, 0, 0); p.ErrorCode != 0 {
		t.Fatalf("TV1 produce: %s", codeName(p.ErrorCode))
	}
	if code, _, _ := endTxnV(t, w, 4, "v1", pid1, f0, true); code != 0 {
		t.Fatalf("EndTxn v4: %s", codeName(code))
	}
	if d := describe("v1"); d.State != "CompleteCommit" || d.ProducerEpoch != f0 {
		t.Fatalf("TV1 commit moved the epoch: %+v", d)
	}
}
