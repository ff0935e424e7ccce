package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
)

func init() { versionChecks[kmsg.TxnOffsetCommit.Int16()] = checkTxnOffsetCommitVersion }

// txnBroker is groupBroker: its transaction coordinator runs over its
// group coordinator, so EndTxn completes transactional offset commits.
func txnBroker(t testing.TB) (*testBroker, *wire) {
	t.Helper()
	return groupBroker(t)
}

// producer is a transactional producer's id and epoch.
type producer struct {
	txnID string
	id    int64
	epoch int16
}

// beginTxnOffsets gets a producer id for txnID and adds group's
// __consumer_offsets partition to its transaction.
func beginTxnOffsets(t *testing.T, w *wire, txnID, group string) producer {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	init.TransactionalID = strp(txnID)
	init.TransactionTimeoutMillis = 60000
	ir := w.roundTrip(init).(*kmsg.InitProducerIDResponse)
	expectErr(t, "init producer id", ir.ErrorCode, nil)
	p := producer{txnID, ir.ProducerID, ir.ProducerEpoch}
	addOffsets(t, w, p, group)
	return p
}

func addOffsets(t *testing.T, w *wire, p producer, group string) {
	t.Helper()
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.SetVersion(3)
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = p.txnID, p.id, p.epoch, group
	expectErr(t, "add offsets to txn", w.roundTrip(add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
}

func endTxnReq(t *testing.T, w *wire, p producer, commit bool) {
	t.Helper()
	end := kmsg.NewPtrEndTxnRequest()
	end.SetVersion(3)
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = p.txnID, p.id, p.epoch, commit
	expectErr(t, "end txn", w.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode, nil)
}

func txnCommitReq(v int16, group string, p producer, gen int32, member, topic string, partition int32, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(v)
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.txnID, group, p.id, p.epoch
	req.Generation, req.MemberID = gen, member
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = partition, offset, 7, strp("m")
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
	return req
}

func txnCommitCode(t *testing.T, r kmsg.Response) int16 {
	t.Helper()
	resp := r.(*kmsg.TxnOffsetCommitResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func fetchStableOffset(t *testing.T, w *wire, group, topic string) kmsg.OffsetFetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group, req.RequireStable = group, true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	return w.roundTrip(req).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
}

func checkTxnOffsetCommitVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := txnBroker(t)
	b.createTopic(t, "t", 1, nil)

	p := beginTxnOffsets(t, w, "tx", "simple")
	expectErr(t, "txn commit", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "simple", p, -1, "", "t", 0, 5))), nil)
	expectErr(t, "unknown topic", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "simple", p, -1, "", "nope", 0, 5))), kerr.UnknownTopicOrPartition)
	expectErr(t, "unknown partition", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "simple", p, -1, "", "t", 1, 5))), kerr.UnknownTopicOrPartition)
	expectErr(t, "empty group", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "", p, -1, "", "t", 0, 5))), kerr.InvalidGroupID)
	stale := p
	stale.epoch--
	expectErr(t, "stale epoch", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "simple", stale, -1, "", "t", 0, 5))), kerr.InvalidProducerEpoch)
	// A group whose partition the transaction does not have (the other
	// partitions of __consumer_offsets; 3 of them here).
	other := "other"
	for coordinator.PartitionFor(other, 3) == coordinator.PartitionFor("simple", 3) {
		other += "x"
	}
	var want *kerr.Error
	switch {
	case v >= 5: // transaction.version 2: added implicitly
	case v >= 4:
		want = kerr.TransactionAbortable
	default:
		want = kerr.InvalidTxnState
	}
	expectErr(t, "partition not in the transaction", txnCommitCode(t, w.roundTrip(txnCommitReq(v, other, p, -1, "", "t", 0, 5))), want)

	// Pending: invisible, and unstable when stable offsets are asked for.
	if got := fetchOffset(t, w, "simple", "t"); got.Offset != -1 || got.ErrorCode != 0 {
		t.Fatalf("pending offset fetched: %+v", got)
	}
	if got := fetchStableOffset(t, w, "simple", "t"); got.ErrorCode != kerr.UnstableOffsetCommit.Code || got.Offset != -1 {
		t.Fatalf("require_stable while pending: %+v", got)
	}
	endTxnReq(t, w, p, true)
	got := fetchStableOffset(t, w, "simple", "t")
	wantEpoch := int32(-1)
	if v >= 2 {
		wantEpoch = 7
	}
	if got.ErrorCode != 0 || got.Offset != 5 || got.LeaderEpoch != wantEpoch || *got.Metadata != "m" {
		t.Fatalf("after commit: %+v", got)
	}

	addOffsets(t, w, p, "g")
	if v >= 3 {
		m, gen := stable(t, w, "g")
		expectErr(t, "member", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "g", p, gen, m, "t", 0, 9))), nil)
		expectErr(t, "wrong generation", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "g", p, gen+1, m, "t", 0, 9))), kerr.IllegalGeneration)
		expectErr(t, "unknown member", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "g", p, gen, "x", "t", 0, 9))), kerr.UnknownMemberID)
	} else {
		// Before v3 the request names no member: accepted for a group
		// with members.
		stable(t, w, "g")
		expectErr(t, "anonymous to active group", txnCommitCode(t, w.roundTrip(txnCommitReq(v, "g", p, 5, "ignored", "t", 0, 9))), nil)
	}
	endTxnReq(t, w, p, false)
	if got := fetchStableOffset(t, w, "g", "t"); got.ErrorCode != 0 || got.Offset != -1 {
		t.Fatalf("after abort: %+v", got)
	}
}

// TestOffsetFetchRequireStableBatched checks require_stable in the
// batched (v8+) shape, and that it is ignored below v7.
func TestOffsetFetchRequireStableBatched(t *testing.T) {
	b, w := txnBroker(t)
	b.createTopic(t, "t", 2, nil)
	w.roundTrip(commitReq(8, "g", -1, "", "t", 3))
	p := beginTxnOffsets(t, w, "tx", "g")
	expectErr(t, "txn commit", txnCommitCode(t, w.roundTrip(txnCommitReq(5, "g", p, -1, "", "t", 0, 4))), nil)

	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(9)
	req.RequireStable = true
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}
	ps := w.roundTrip(req).(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions
	if ps[0].ErrorCode != kerr.UnstableOffsetCommit.Code || ps[0].Offset != -1 || ps[1].ErrorCode != 0 || ps[1].Offset != -1 {
		t.Fatalf("v9 require_stable: %+v", ps)
	}
	req.RequireStable = false
	ps = w.roundTrip(req).(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].Offset != 3 {
		t.Fatalf("v9 without require_stable: %+v", ps)
	}
	// v6 has no require_stable: the committed offset.
	old := kmsg.NewPtrOffsetFetchRequest()
	old.SetVersion(6)
	old.Group = "g"
	old.RequireStable = true // not encoded at v6
	old.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if p := w.roundTrip(old).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 3 {
		t.Fatalf("v6: %+v", p)
	}
	endTxnReq(t, w, p, true)
	req.RequireStable = true
	ps = w.roundTrip(req).(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].Offset != 4 {
		t.Fatalf("after commit: %+v", ps)
	}
}
