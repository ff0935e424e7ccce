package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
)

// TestFetchReadCommittedLSOMidBatch: DeleteRecords moving the log start
// offset into an open transaction's batch puts the LSO mid-batch; a
// read_committed fetch must not return that batch (records 5-9 are
// uncommitted).
func TestFetchReadCommittedLSOMidBatch(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "midlso", 1, nil)
	l := tp.Partitions[0]
	now := b.nowMs()
	if _, err := l.Append(producerBatch(t, now, 7, 0, 0, 10, true)); err != nil { // 0-9, open
		t.Fatal(err)
	}
	if _, err := l.Append(producerBatch(t, now, 8, 0, 0, 2, false)); err != nil { // 10-11
		t.Fatal(err)
	}
	if _, err := l.AdvanceLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b.addr)
	for _, iso := range []int8{0, 1} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		req.IsolationLevel = iso
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "midlso", Partitions: []kmsg.FetchRequestTopicPartition{{FetchOffset: 5, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1}}}}
		p := w.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LastStableOffset != 5 || p.LogStartOffset != 5 || p.HighWatermark != 12 {
			t.Fatalf("iso %d: %+v", iso, p)
		}
		if iso == 1 && len(p.RecordBatches) != 0 {
			t.Fatalf("read_committed returned %d bytes of the open transaction", len(p.RecordBatches))
		}
		if iso == 0 && len(p.RecordBatches) == 0 {
			t.Fatal("read_uncommitted returned nothing")
		}
	}
}

// TestProduceTxnEndsDuringVerification: the producer's transaction ends
// (its marker is written) between the coordinator's verification and the
// append; the batch must not open a transaction no coordinator will end
// (Kafka's verification guard): INVALID_TXN_STATE, nothing written, the
// LSO not held. Without the race the next attempt is appended.
func TestProduceTxnEndsDuringVerification(t *testing.T) {
	var tp *partition.Topic
	race := true
	b := startBroker(t, func(c *Config) {
		c.VerifyTxnPartition = func(txnID string, pid int64, epoch int16, topic string, part int32) int16 {
			if race {
				// EndTxn completes meanwhile (transaction.version 1:
				// no epoch bump).
				if _, err := tp.Partitions[0].WriteTxnMarker(partition.TxnMarker{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: 1, Commit: true}); err != nil {
					t.Error(err)
				}
			}
			return 0
		}
	})
	tp = b.createTopic(t, "race", 1, nil)
	w := dialWire(t, b.addr)
	now := b.nowMs()
	send := func(batch []byte) kmsg.ProduceResponseTopicPartition {
		req := produceReq(11, "race", tp.ID, 0, batch)
		req.TransactionID = strp("app")
		return onlyProducePartition(t, w.roundTrip(req))
	}
	if p := send(producerBatch(t, now, 3, 0, 0, 1, true)); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("append after the marker: %+v", p)
	}
	if o := tp.Partitions[0].Offsets(); o.LogEndOffset != 1 || o.LastStableOffset != 1 {
		t.Fatalf("offsets %+v: want only the marker, no open transaction", o)
	}
	race = false
	if p := send(producerBatch(t, now, 3, 0, 0, 1, true)); p.ErrorCode != 0 || p.BaseOffset != 1 {
		t.Fatalf("verified append: %+v", p)
	}
	if o := tp.Partitions[0].Offsets(); o.LastStableOffset != 1 {
		t.Fatalf("LSO %d, want the open transaction's 1", o.LastStableOffset)
	}
}
