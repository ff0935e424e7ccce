package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

func init() { versionChecks[kmsg.DescribeProducers.Int16()] = checkDescribeProducersVersion }

// producerBatch is a batch of n records from producer pid.
func producerBatch(t testing.TB, ts int64, pid int64, epoch int16, seq int32, n int, txn bool) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("v")}
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: ts, MaxTimestamp: ts, ProducerID: pid,
		ProducerEpoch: epoch, BaseSequence: seq, Transactional: txn}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkDescribeProducersVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	tp := b.ensureTopic(t, "dp", 1)
	if _, err := tp.Partitions[0].Append(producerBatch(t, b.nowMs(), 42, 3, 0, 2, false)); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	req.SetVersion(v)
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "dp", Partitions: []int32{0, 5}}, {Topic: "nope", Partitions: []int32{0}}}
	resp := w.roundTrip(req).(*kmsg.DescribeProducersResponse)
	if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("topics %+v", resp.Topics)
	}
	p0 := resp.Topics[0].Partitions[0]
	if p0.ErrorCode != 0 || len(p0.ActiveProducers) != 1 {
		t.Fatalf("partition 0 %+v", p0)
	}
	ap := p0.ActiveProducers[0]
	if ap.ProducerID != 42 || ap.ProducerEpoch != 3 || ap.LastSequence != 1 || ap.LastTimestamp != b.nowMs() ||
		ap.CoordinatorEpoch != -1 || ap.CurrentTxnStartOffset != -1 {
		t.Errorf("producer %+v", ap)
	}
	if c := resp.Topics[0].Partitions[1].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partition 5: %d", c)
	}
	if c := resp.Topics[1].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %d", c)
	}
}

// TestProduceIdempotence: duplicates answer the original offset and write
// nothing; gaps and old epochs get Kafka's codes and messages.
func TestProduceIdempotence(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "idem", 1, nil)
	w := dialWire(t, b.addr)
	produce := func(batch []byte) kmsg.ProduceResponseTopicPartition {
		return onlyProducePartition(t, w.roundTrip(produceReq(9, "idem", tp.ID, 0, batch)))
	}
	now := b.nowMs()
	if p := produce(producerBatch(t, now, 1, 0, 0, 3, false)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first: %+v", p)
	}
	if p := produce(producerBatch(t, now, 1, 0, 3, 1, false)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("second: %+v", p)
	}
	for _, c := range []struct {
		name  string
		batch []byte
		code  int16
		base  int64
	}{
		{"duplicate of the first", producerBatch(t, now, 1, 0, 0, 3, false), 0, 0},
		{"duplicate of the second", producerBatch(t, now, 1, 0, 3, 1, false), 0, 3},
		{"gap", producerBatch(t, now, 1, 0, 5, 1, false), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"new epoch not at 0", producerBatch(t, now, 1, 1, 4, 1, false), kerr.OutOfOrderSequenceNumber.Code, -1},
	} {
		p := produce(c.batch)
		if p.ErrorCode != c.code || p.BaseOffset != c.base {
			t.Errorf("%s: %+v", c.name, p)
		}
		if c.code != 0 && (p.ErrorMessage == nil || *p.ErrorMessage == "") {
			t.Errorf("%s: no message", c.name)
		}
		if c.code == 0 && p.LogAppendTime != now {
			t.Errorf("%s: duplicate's log append time %d, want the batch timestamp %d", c.name, p.LogAppendTime, now)
		}
	}
	if p := produce(producerBatch(t, now, 1, 2, 0, 1, false)); p.ErrorCode != 0 || p.BaseOffset != 4 {
		t.Fatalf("epoch bump: %+v", p)
	}
	if p := produce(producerBatch(t, now, 1, 1, 0, 1, false)); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch: %+v", p)
	}
	if o := tp.Partitions[0].Offsets(); o.LogEndOffset != 5 {
		t.Fatalf("LEO %d, want 5", o.LogEndOffset)
	}
}

// TestProduceTransactionalVerification: a transactional batch is appended
// only when the transaction coordinator vouches for the partition: below
// Produce v12 it verifies the partition is in the transaction (KIP-890
// part 1), from v12 it adds it (transaction.version 2); their codes are
// the partition's answer, TRANSACTION_ABORTABLE only from v11.
func TestProduceTransactionalVerification(t *testing.T) {
	var verdict int16
	var asked []string
	hook := func(kind string) func(string, int64, int16, string, int32) int16 {
		return func(txnID string, pid int64, epoch int16, topic string, part int32) int16 {
			asked = append(asked, kind+":"+txnID+"/"+topic)
			return verdict
		}
	}
	b := startBroker(t, func(c *Config) {
		c.VerifyTxnPartition = hook("verify")
		c.AddTxnPartition = hook("add")
	})
	tp := b.createTopic(t, "tx", 1, nil)
	w := dialWire(t, b.addr)
	now := b.nowMs()
	for _, c := range []struct {
		version int16
		verdict int16
		want    int16
		asked   string
	}{
		{9, kerr.InvalidTxnState.Code, kerr.InvalidTxnState.Code, "verify"},
		{3, kerr.TransactionAbortable.Code, kerr.InvalidTxnState.Code, "verify"},
		{10, kerr.TransactionAbortable.Code, kerr.InvalidTxnState.Code, "verify"},
		{11, kerr.TransactionAbortable.Code, kerr.TransactionAbortable.Code, "verify"},
		{11, kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code, "verify"},
		{12, kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code, "add"},
		{13, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicas.Code, "add"},
		{13, kerr.InvalidProducerIDMapping.Code, kerr.InvalidProducerIDMapping.Code, "add"},
	} {
		verdict, asked = c.verdict, nil
		req := produceReq(c.version, "tx", tp.ID, 0, producerBatch(t, now, 3, 0, 0, 1, true))
		req.TransactionID = strp("app")
		if p := onlyProducePartition(t, w.roundTrip(req)); p.ErrorCode != c.want {
			t.Fatalf("v%d, coordinator says %s: %+v, want %s", c.version, codeName(c.verdict), p, codeName(c.want))
		}
		if len(asked) != 1 || asked[0] != c.asked+":app/tx" {
			t.Fatalf("v%d asked %v, want %s", c.version, asked, c.asked)
		}
	}
	if o := tp.Partitions[0].Offsets(); o.LogEndOffset != 0 {
		t.Fatalf("a refused batch was written: %+v", o)
	}
	for _, v := range []int16{11, 12} {
		verdict = 0
		req := produceReq(v, "tx", tp.ID, 0, producerBatch(t, now, 3, 0, int32(v-11), 1, true))
		req.TransactionID = strp("app")
		if p := onlyProducePartition(t, w.roundTrip(req)); p.ErrorCode != 0 || p.BaseOffset != int64(v-11) {
			t.Fatalf("v%d vouched for: %+v", v, p)
		}
	}
	if o := tp.Partitions[0].Offsets(); o.LastStableOffset != 0 || o.HighWatermark != 2 {
		t.Fatalf("offsets %+v, want LSO 0", o)
	}
}

// TestFetchReadCommittedAborted: read_committed stops at the LSO and lists the
// aborted transactions of the returned range; read_uncommitted reads to
// the high watermark with a null list.
func TestFetchReadCommittedAborted(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "rc", 1, nil)
	l := tp.Partitions[0]
	now := b.nowMs()
	app := func(batch []byte) {
		if _, err := l.AppendWithOrigin(batch, recordbatch.OriginInternal); err != nil {
			t.Fatal(err)
		}
	}
	app(producerBatch(t, now, 5, 0, 0, 2, true))                                                         // 0-1 aborted
	app(producerBatch(t, now, 6, 0, 0, 1, true))                                                         // 2 committed
	if _, err := l.WriteTxnMarker(partition.TxnMarker{ProducerID: 5, CoordinatorEpoch: 1}); err != nil { // 3
		t.Fatal(err)
	}
	if _, err := l.WriteTxnMarker(partition.TxnMarker{ProducerID: 6, CoordinatorEpoch: 1, Commit: true}); err != nil { // 4
		t.Fatal(err)
	}
	app(producerBatch(t, now, 7, 0, 0, 1, true)) // 5, open
	app(producerBatch(t, now, 8, 0, 0, 1, false))

	w := dialWire(t, b.addr)
	for _, v := range []int16{4, 11, 12, 17} {
		for _, iso := range []int8{0, 1} {
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(v)
			req.MaxBytes = 1 << 20
			req.SessionEpoch = -1
			req.IsolationLevel = iso
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "rc", tp.ID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := w.roundTrip(req).(*kmsg.FetchResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.HighWatermark != 7 || p.LastStableOffset != 5 {
				t.Fatalf("v%d iso %d: %+v", v, iso, p)
			}
			var last int64 = -1
			for rec := p.RecordBatches; len(rec) > 0; {
				h := recordbatch.Header(rec)
				last = h.LastOffset()
				rec = rec[h.Size():]
			}
			if iso == 1 {
				if last != 4 || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 5 || p.AbortedTransactions[0].FirstOffset != 0 {
					t.Fatalf("v%d read_committed: last %d, aborted %+v", v, last, p.AbortedTransactions)
				}
			} else if last != 6 || p.AbortedTransactions != nil {
				t.Fatalf("v%d read_uncommitted: last %d, aborted %+v", v, last, p.AbortedTransactions)
			}
		}
	}
	// A fetch past the aborted transaction's marker gets no entry.
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxBytes = 1 << 20
	req.SessionEpoch = -1
	req.IsolationLevel = 1
	req.Topics = []kmsg.FetchRequestTopic{{Topic: "rc", Partitions: []kmsg.FetchRequestTopicPartition{{FetchOffset: 4, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1}}}}
	p := w.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.AbortedTransactions) != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch at 4: %+v", p)
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
