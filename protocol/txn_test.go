package protocol

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
)

func init() {
	versionChecks[kmsg.InitProducerID.Int16()] = checkInitProducerIDVersion
	versionChecks[kmsg.AddPartitionsToTxn.Int16()] = checkAddPartitionsToTxnVersion
	versionChecks[kmsg.AddOffsetsToTxn.Int16()] = checkAddOffsetsToTxnVersion
	versionChecks[kmsg.EndTxn.Int16()] = checkEndTxnVersion
	versionChecks[kmsg.DescribeTransactions.Int16()] = checkDescribeTransactionsVersion
	versionChecks[kmsg.ListTransactions.Int16()] = checkListTransactionsVersion
}

// initTxn gives id a producer id and epoch through the wire.
func initTxn(t *testing.T, w *wire, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(5)
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = 60000
	resp := w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	expectErr(t, "InitProducerId "+id, resp.ErrorCode, nil)
	return resp.ProducerID, resp.ProducerEpoch
}

func addPartitionsV3(t *testing.T, w *wire, v int16, id string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnResponse {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(v)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	return w.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
}

func fencedCode(v, from int16) *kerr.Error {
	if v < from {
		return kerr.InvalidProducerEpoch
	}
	return kerr.ProducerFenced
}

func checkInitProducerIDVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(v)
	req.TransactionTimeoutMillis = -1 // ignored without a transactional id
	resp := w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		t.Fatalf("idempotent: %+v", resp)
	}
	idem := resp.ProducerID

	id := fmt.Sprintf("init-v%d", v)
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = 900001
	resp = w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	expectErr(t, "timeout above max", resp.ErrorCode, kerr.InvalidTransactionTimeout)
	req.TransactionTimeoutMillis = 60000
	resp = w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID == idem || resp.ProducerEpoch != 0 {
		t.Fatalf("transactional: %+v", resp)
	}
	pid := resp.ProducerID
	resp = w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != 1 {
		t.Fatalf("second init: %+v", resp)
	}
	if v < 3 {
		return
	}
	req.ProducerID, req.ProducerEpoch = pid, 1
	resp = w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 || resp.ProducerID != pid || resp.ProducerEpoch != 2 {
		t.Fatalf("KIP-360 bump: %+v", resp)
	}
	req.ProducerID, req.ProducerEpoch = pid+100, 0
	resp = w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	expectErr(t, "other producer id", resp.ErrorCode, fencedCode(v, 4))
	req.ProducerID, req.ProducerEpoch = pid, -1
	resp = w.roundTrip(req).(*kmsg.InitProducerIDResponse)
	expectErr(t, "id without epoch", resp.ErrorCode, kerr.InvalidRequest)
}

func checkAddPartitionsToTxnVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	id := fmt.Sprintf("add-v%d", v)
	pid, epoch := initTxn(t, w, id)
	if v < 4 {
		resp := addPartitionsV3(t, w, v, id, pid, epoch, "base", 0, 1)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[1].ErrorCode != 0 {
			t.Fatalf("add: %+v", resp)
		}
		resp = addPartitionsV3(t, w, v, id, pid, epoch+1, "base", 0)
		expectErr(t, "fenced", resp.Topics[0].Partitions[0].ErrorCode, fencedCode(v, 2))

		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.SetVersion(v)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		for _, tn := range []string{"base", "nope", "__consumer_offsets"} {
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = tn, []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		b.s.groups.EnsureOffsetsTopic()
		resp = w.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
		got := map[string]int16{}
		for _, rt := range resp.Topics {
			got[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		if got["base"] != kerr.OperationNotAttempted.Code || got["nope"] != kerr.UnknownTopicOrPartition.Code || got["__consumer_offsets"] != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("one bad partition: %+v", got)
		}
		return
	}
	// v4+: a batch, one transaction verified only.
	other := id + "-other"
	opid, oepoch := initTxn(t, w, other)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(v)
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, pid, epoch
	tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "base", Partitions: []int32{0}}}
	vtx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	vtx.TransactionalID, vtx.ProducerID, vtx.ProducerEpoch, vtx.VerifyOnly = other, opid, oepoch, true
	vtx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "base", Partitions: []int32{1}}}
	req.Transactions = append(req.Transactions, tx, vtx)
	resp := w.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 || len(resp.Transactions) != 2 {
		t.Fatalf("batched: %+v", resp)
	}
	if c := resp.Transactions[0].Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("add: %s", codeName(c))
	}
	if c := resp.Transactions[1].Topics[0].Partitions[0].ErrorCode; c != kerr.TransactionAbortable.Code {
		t.Fatalf("verify of a partition not added: %s", codeName(c))
	}
	// Verifying the one added passes.
	tx.VerifyOnly = true
	req.Transactions = req.Transactions[:1]
	resp = w.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
	if c := resp.Transactions[0].Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("verify of an added partition: %s", codeName(c))
	}
}

func checkAddOffsetsToTxnVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	id := fmt.Sprintf("offsets-v%d", v)
	pid, epoch := initTxn(t, w, id)
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.SetVersion(v)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, "g"
	resp := w.roundTrip(req).(*kmsg.AddOffsetsToTxnResponse)
	expectErr(t, "add offsets", resp.ErrorCode, nil)
	s := b.s.txns.DescribeTransaction(id)
	if s.State != "Ongoing" || len(s.Topics) != 1 || s.Topics[0].Topic != coordinator.OffsetsTopic {
		t.Fatalf("describe %+v", s)
	}
	req.ProducerEpoch = epoch + 3
	resp = w.roundTrip(req).(*kmsg.AddOffsetsToTxnResponse)
	expectErr(t, "fenced", resp.ErrorCode, fencedCode(v, 2))
}

func checkEndTxnVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	id := fmt.Sprintf("end-v%d", v)
	pid, epoch := initTxn(t, w, id)
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(v)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, true
	resp := w.roundTrip(req).(*kmsg.EndTxnResponse)
	expectErr(t, "end with nothing open", resp.ErrorCode, kerr.InvalidTxnState)

	if r := addPartitionsV3(t, w, 3, id, pid, epoch, "base", 0); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add: %+v", r)
	}
	resp = w.roundTrip(req).(*kmsg.EndTxnResponse)
	expectErr(t, "commit", resp.ErrorCode, nil)
	wantEpoch := epoch
	if v >= 5 {
		wantEpoch = epoch + 1 // KIP-890 part 2
		if resp.ProducerID != pid || resp.ProducerEpoch != wantEpoch {
			t.Fatalf("v5 answer %d/%d", resp.ProducerID, resp.ProducerEpoch)
		}
	}
	log, _ := b.store.Log("base", 0)
	res, err := log.Read(log.Offsets().HighWatermark-1, 1<<20, true)
	if err != nil || len(res.Records) == 0 {
		t.Fatalf("read marker: %v", err)
	}
	resp = w.roundTrip(req).(*kmsg.EndTxnResponse)
	expectErr(t, "commit retry", resp.ErrorCode, nil)
	req.Commit = false
	resp = w.roundTrip(req).(*kmsg.EndTxnResponse)
	expectErr(t, "abort after commit", resp.ErrorCode, kerr.InvalidTxnState)
	req.ProducerEpoch = wantEpoch + 5
	resp = w.roundTrip(req).(*kmsg.EndTxnResponse)
	expectErr(t, "fenced", resp.ErrorCode, fencedCode(v, 2))
	req.TransactionalID = "never-seen"
	resp = w.roundTrip(req).(*kmsg.EndTxnResponse)
	expectErr(t, "unknown id", resp.ErrorCode, kerr.InvalidProducerIDMapping)
}

func checkDescribeTransactionsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	pid, epoch := initTxn(t, w, "describe-me")
	if r := addPartitionsV3(t, w, 3, "describe-me", pid, epoch, "base", 1, 0); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add: %+v", r)
	}
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.SetVersion(v)
	req.TransactionalIDs = []string{"describe-me", "nobody"}
	resp := w.roundTrip(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 2 {
		t.Fatalf("%+v", resp)
	}
	s := resp.TransactionStates[0]
	if s.ErrorCode != 0 || s.State != "Ongoing" || s.ProducerID != pid || s.ProducerEpoch != epoch || s.TimeoutMillis != 60000 ||
		s.StartTimestamp != b.nowMs() || len(s.Topics) != 1 || len(s.Topics[0].Partitions) != 2 {
		t.Fatalf("describe %+v", s)
	}
	expectErr(t, "unknown id", resp.TransactionStates[1].ErrorCode, kerr.TransactionalIDNotFound)
}

func checkListTransactionsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	id := fmt.Sprintf("list-v%d", v)
	pid, epoch := initTxn(t, w, id)
	if r := addPartitionsV3(t, w, 3, id, pid, epoch, "base", 0); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add: %+v", r)
	}
	req := kmsg.NewPtrListTransactionsRequest()
	req.SetVersion(v)
	req.StateFilters = []string{"Ongoing", "Bogus"}
	req.ProducerIDFilters = []int64{pid}
	resp := w.roundTrip(req).(*kmsg.ListTransactionsResponse)
	if resp.ErrorCode != 0 || len(resp.UnknownStateFilters) != 1 || resp.UnknownStateFilters[0] != "Bogus" ||
		len(resp.TransactionStates) != 1 || resp.TransactionStates[0].TransactionalID != id || resp.TransactionStates[0].TransactionState != "Ongoing" {
		t.Fatalf("list %+v", resp)
	}
	if v >= 1 {
		req.DurationFilterMillis = 60000 // started just now: not running that long
		resp = w.roundTrip(req).(*kmsg.ListTransactionsResponse)
		if len(resp.TransactionStates) != 0 {
			t.Fatalf("duration filter %+v", resp.TransactionStates)
		}
		req.DurationFilterMillis = -1
	}
	if v >= 2 {
		req.StateFilters, req.ProducerIDFilters = nil, nil
		req.TransactionalIDPattern = kmsg.StringPtr("list-v[0-9]")
		resp = w.roundTrip(req).(*kmsg.ListTransactionsResponse)
		if len(resp.TransactionStates) != 3 {
			t.Fatalf("pattern %+v", resp.TransactionStates)
		}
		req.TransactionalIDPattern = kmsg.StringPtr("list")
		resp = w.roundTrip(req).(*kmsg.ListTransactionsResponse)
		if len(resp.TransactionStates) != 0 {
			t.Fatalf("a pattern matching part of the id: %+v", resp.TransactionStates)
		}
		req.TransactionalIDPattern = kmsg.StringPtr("(")
		resp = w.roundTrip(req).(*kmsg.ListTransactionsResponse)
		expectErr(t, "bad pattern", resp.ErrorCode, kerr.InvalidRegularExpression)
	}
}

// TestDeleteTxnStateTopic: Kafka 4.3.1 deletes __transaction_state when
// asked (answering NONE with name and id) and its transaction coordinator
// resigns the deleted partitions (BrokerMetadataPublisher.updateCoordinator
// -> TransactionCoordinator.onResignation): every transactional id is
// forgotten, so the next InitProducerId starts it afresh.
func TestDeleteTxnStateTopic(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	initTxn(t, w, "tx")
	id := b.store.Topic(coordinator.TxnTopic).ID
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: strp(coordinator.TxnTopic)}}
	r := w.roundTrip(req).(*kmsg.DeleteTopicsResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || r.Topics[0].ErrorMessage != nil || r.Topics[0].TopicID != [16]byte(id) {
		t.Fatalf("delete: %+v", r.Topics)
	}
	d := kmsg.NewPtrDescribeTransactionsRequest()
	d.SetVersion(0)
	d.TransactionalIDs = []string{"tx"}
	resp := w.roundTrip(d).(*kmsg.DescribeTransactionsResponse)
	expectErr(t, "described after deletion", resp.TransactionStates[0].ErrorCode, kerr.TransactionalIDNotFound)
	if _, epoch := initTxn(t, w, "tx"); epoch != 0 {
		t.Fatalf("epoch after deletion %d, want a fresh id at 0", epoch)
	}
}
