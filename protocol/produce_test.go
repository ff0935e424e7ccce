package protocol

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// rewriteCRC fixes the CRC after a test edits a batch, so that the edit
// itself is what is checked.
func rewriteCRC(b []byte) []byte {
	recordbatch.Header(b).UpdateCRC()
	return b
}

func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }

// compressedBatch builds a batch whose records section is payload,
// compressed with codec c as given (possibly garbage), with a valid CRC.
func compressedBatch(t testing.TB, c recordbatch.Codec, payload []byte, count int32) []byte {
	t.Helper()
	b := make([]byte, recordbatch.HeaderSize, recordbatch.HeaderSize+len(payload))
	b = append(b, payload...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-recordbatch.LogOverhead))
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(c))
	binary.BigEndian.PutUint32(b[23:], uint32(count-1))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	return rewriteCRC(b)
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestProduceBadInput(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.MaxDecompressedBytes = 1 << 20 })
	b.createTopic(t, "p", 1, nil)
	b.createTopic(t, "small", 1, map[string]string{"max.message.bytes": "200"})
	b.createTopic(t, "strict", 1, map[string]string{"message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "60000"})
	b.createTopic(t, "lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	now := b.nowMs()
	good := testBatch(t, recordbatch.None, now)

	mut := func(f func(b []byte) []byte) []byte { return f(cloneBytes(good)) }
	twoRecords := testBatch(t, recordbatch.None, now, recordbatch.Record{Key: []byte("a")}, recordbatch.Record{Key: []byte("b")})

	cases := []struct {
		name  string
		topic string
		part  int32
		recs  []byte
		want  *kerr.Error
	}{
		{"unknown topic", "nope", 0, good, kerr.UnknownTopicOrPartition},
		{"unknown partition", "p", 1, good, kerr.UnknownTopicOrPartition},
		{"negative partition", "p", -1, good, kerr.UnknownTopicOrPartition},
		{"null records", "p", 0, nil, kerr.InvalidRecord},
		{"fewer bytes than a size prefix", "p", 0, good[:10], kerr.InvalidRecord},
		{"truncated batch", "p", 0, good[:len(good)-3], kerr.InvalidRecord},
		{"batch length below minimum", "p", 0, mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 5); return b }), kerr.CorruptMessage},
		{"magic 1", "p", 0, mut(func(b []byte) []byte { b[16] = 1; return b }), kerr.InvalidRecord},
		{"two batches", "p", 0, append(cloneBytes(good), good...), kerr.InvalidRecord},
		{"trailing garbage", "p", 0, append(cloneBytes(good), 1, 2, 3), kerr.CorruptMessage},
		{"wrong crc", "p", 0, mut(func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }), kerr.CorruptMessage},
		{"base offset not 0", "p", 0, mut(func(b []byte) []byte { binary.BigEndian.PutUint64(b, 5); return b }), kerr.InvalidRecord},
		{"record count lies (high)", "p", 0, rewriteCRC(func() []byte {
			b := cloneBytes(twoRecords)
			binary.BigEndian.PutUint32(b[57:], 3)
			binary.BigEndian.PutUint32(b[23:], 2)
			return b
		}()), kerr.InvalidRecord},
		{"record count lies (low)", "p", 0, rewriteCRC(func() []byte {
			b := cloneBytes(twoRecords)
			binary.BigEndian.PutUint32(b[57:], 1)
			binary.BigEndian.PutUint32(b[23:], 0)
			return b
		}()), kerr.InvalidRecord},
		{"count disagrees with last offset delta", "p", 0, mut(func(b []byte) []byte { binary.BigEndian.PutUint32(b[23:], 4); return rewriteCRC(b) }), kerr.InvalidRecord},
		{"control batch", "p", 0, mut(func(b []byte) []byte { b[22] |= 0x20; return rewriteCRC(b) }), kerr.InvalidRecord},
		{"unknown codec", "p", 0, mut(func(b []byte) []byte { b[22] |= 0x07; return rewriteCRC(b) }), kerr.CorruptMessage},
		{"garbage gzip", "p", 0, compressedBatch(t, recordbatch.Gzip, []byte("definitely not gzip"), 1), kerr.CorruptMessage},
		{"garbage lz4", "p", 0, compressedBatch(t, recordbatch.LZ4, []byte("definitely not lz4"), 1), kerr.CorruptMessage},
		{"inflates past the limit", "p", 0, compressedBatch(t, recordbatch.Gzip, gzipBytes(make([]byte, 4<<20)), 1), kerr.MessageTooLarge},
		{"larger than max.message.bytes", "small", 0, testBatch(t, recordbatch.None, now, recordbatch.Record{Key: []byte("k"), Value: make([]byte, 300)}), kerr.MessageTooLarge},
		{"too large and bad crc", "small", 0, func() []byte {
			b := testBatch(t, recordbatch.None, now, recordbatch.Record{Key: []byte("k"), Value: make([]byte, 300)})
			b[len(b)-1] ^= 1
			return b
		}(), kerr.CorruptMessage},
		{"timestamp too old", "strict", 0, testBatch(t, recordbatch.None, now-120_000), kerr.InvalidTimestamp},
		{"timestamp too new", "strict", 0, testBatch(t, recordbatch.None, now+120_000), kerr.InvalidTimestamp},
		{"producer set LogAppendTime", "lat", 0, mut(func(b []byte) []byte { b[22] |= 0x08; return rewriteCRC(b) }), kerr.InvalidTimestamp},
	}
	w := dialWire(t, b.addr)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before int64 = -1
			if tp := b.store.Topic(tc.topic); tp != nil {
				before = tp.Partitions[0].Offsets().LogEndOffset
			}
			sp := onlyProducePartition(t, w.roundTrip(produceReq(11, tc.topic, [16]byte{}, tc.part, tc.recs)))
			if sp.ErrorCode != tc.want.Code {
				t.Fatalf("error %s, want %s", kerr.ErrorForCode(sp.ErrorCode), tc.want)
			}
			if sp.BaseOffset != -1 {
				t.Errorf("base offset %d on error", sp.BaseOffset)
			}
			if tp := b.store.Topic(tc.topic); tp != nil {
				if after := tp.Partitions[0].Offsets().LogEndOffset; after != before {
					t.Errorf("log end offset moved %d -> %d", before, after)
				}
			}
		})
	}
	// The connection survived every rejection and still appends.
	sp := onlyProducePartition(t, w.roundTrip(produceReq(11, "p", [16]byte{}, 0, good)))
	if sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("good batch after bad ones: %+v", sp)
	}
	// The strict topic takes timestamps inside its bounds, and -1.
	for _, ts := range []int64{now - 30_000, now + 30_000, -1} {
		if sp := onlyProducePartition(t, w.roundTrip(produceReq(11, "strict", [16]byte{}, 0, testBatch(t, recordbatch.None, ts)))); sp.ErrorCode != 0 {
			t.Errorf("timestamp %d: error %d", ts, sp.ErrorCode)
		}
	}
}

func TestProduceTimestampRecordErrors(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "strict", 1, map[string]string{"message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "1000"})
	now := b.nowMs()
	// Record 1 is 5 s old; records 0 and 2 are fine.
	batch := testBatch(t, recordbatch.None, now,
		recordbatch.Record{Key: []byte("a")},
		recordbatch.Record{Key: []byte("b"), TimestampDelta: -5000},
		recordbatch.Record{Key: []byte("c")})
	w := dialWire(t, b.addr)
	sp := onlyProducePartition(t, w.roundTrip(produceReq(8, "strict", [16]byte{}, 0, batch)))
	if sp.ErrorCode != kerr.InvalidTimestamp.Code || len(sp.ErrorRecords) != 1 || sp.ErrorRecords[0].RelativeOffset != 1 {
		t.Fatalf("got %+v", sp)
	}
	if sp.ErrorMessage == nil || *sp.ErrorMessage != "One or more records have been rejected due to invalid timestamp" {
		t.Errorf("message %v", sp.ErrorMessage)
	}
	if sp.LogStartOffset != 0 {
		t.Errorf("log start offset %d", sp.LogStartOffset)
	}
}

func TestProduceAcks(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "p", 1, nil)
	good := testBatch(t, recordbatch.None, b.nowMs())

	t.Run("invalid acks", func(t *testing.T) {
		w := dialWire(t, b.addr)
		req := produceReq(9, "p", [16]byte{}, 0, good)
		req.Acks = 2
		if sp := onlyProducePartition(t, w.roundTrip(req)); sp.ErrorCode != kerr.InvalidRequiredAcks.Code {
			t.Fatalf("error %d", sp.ErrorCode)
		}
	})
	t.Run("acks=0 success sends nothing", func(t *testing.T) {
		w := dialWire(t, b.addr)
		req := produceReq(9, "p", [16]byte{}, 0, cloneBytes(good))
		req.Acks = 0
		w.send(req)
		// The next response on the connection is the ApiVersions one.
		corr := w.send(apiVersionsReq(3))
		if _, err := w.recv(kmsg.ApiVersions.Int16(), 3, corr); err != nil {
			t.Fatal(err)
		}
		if leo := tp.Partitions[0].Offsets().LogEndOffset; leo != 1 {
			t.Fatalf("log end offset %d", leo)
		}
	})
	t.Run("acks=0 failure closes", func(t *testing.T) {
		w := dialWire(t, b.addr)
		req := produceReq(9, "nope", [16]byte{}, 0, good)
		req.Acks = 0
		w.send(req)
		w.expectClosed()
	})
}

func TestProduceTransactional(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "p", 1, nil)
	txn, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: b.nowMs(), Transactional: true,
		ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0}, []recordbatch.Record{{Key: []byte("k")}})
	if err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b.addr)
	req := produceReq(9, "p", [16]byte{}, 0, txn)
	if sp := onlyProducePartition(t, w.roundTrip(req)); sp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("without transactional id: error %d", sp.ErrorCode)
	}
	req.TransactionID = strp("tx")
	// The transaction coordinator does not know "tx" (Kafka's
	// verification answers INVALID_PRODUCER_ID_MAPPING).
	if sp := onlyProducePartition(t, w.roundTrip(req)); sp.ErrorCode != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("with transactional id: error %d", sp.ErrorCode)
	}
	// Idempotent, not transactional: appended.
	idem, _ := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: b.nowMs(), ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0},
		[]recordbatch.Record{{Key: []byte("k")}})
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "p", [16]byte{}, 0, idem))); sp.ErrorCode != 0 {
		t.Fatalf("idempotent: error %d", sp.ErrorCode)
	}
}

func TestProduceRecompressesForTopicCodec(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "gz", 1, map[string]string{"compression.type": "gzip"})
	w := dialWire(t, b.addr)
	batch := testBatch(t, recordbatch.None, b.nowMs(), recordbatch.Record{Key: []byte("a"), Value: []byte("1")}, recordbatch.Record{Key: []byte("b"), Value: []byte("2")})
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "gz", [16]byte{}, 0, batch))); sp.ErrorCode != 0 {
		t.Fatalf("error %d", sp.ErrorCode)
	}
	rr, err := tp.Partitions[0].Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	h := recordbatch.Header(rr.Records)
	if h.Codec() != recordbatch.Gzip {
		t.Fatalf("stored codec %v", h.Codec())
	}
	recs, err := recordbatch.Records(rr.Records[:h.Size()], 1<<20)
	if err != nil || len(recs) != 2 || string(recs[1].Value) != "2" {
		t.Fatalf("records %v %+v", err, recs)
	}
}

func TestProduceLogAppendTime(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	w := dialWire(t, b.addr)
	sp := onlyProducePartition(t, w.roundTrip(produceReq(2+3, "lat", [16]byte{}, 0, testBatch(t, recordbatch.None, 1))))
	if sp.ErrorCode != 0 || sp.LogAppendTime != b.nowMs() {
		t.Fatalf("got %+v, want log append time %d", sp, b.nowMs())
	}
}

func TestProduceDuplicatePartitionLastWins(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "p", 1, nil)
	req := produceReq(9, "p", [16]byte{}, 0, []byte("garbage"))
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = testBatch(t, recordbatch.None, b.nowMs())
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	w := dialWire(t, b.addr)
	if sp := onlyProducePartition(t, w.roundTrip(req)); sp.ErrorCode != 0 {
		t.Fatalf("error %d", sp.ErrorCode)
	}
	if leo := tp.Partitions[0].Offsets().LogEndOffset; leo != 1 {
		t.Fatalf("log end offset %d", leo)
	}
}

func TestProduceInternalTopic(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "__consumer_offsets", 1, map[string]string{"cleanup.policy": "compact"})
	w := dialWire(t, b.addr)
	sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "__consumer_offsets", [16]byte{}, 0, testBatch(t, recordbatch.None, b.nowMs()))))
	if sp.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("error %d, want INVALID_TOPIC_EXCEPTION", sp.ErrorCode)
	}
}

func TestProduceBrokerTimestampBounds(t *testing.T) {
	b := startBroker(t, nil)
	if err := b.store.AlterDynamicBrokerConfigs(false, partition.ReplaceConfigs(map[string]string{"log.message.timestamp.after.max.ms": "3600000"}), false); err != nil {
		t.Fatal(err)
	}
	b.createTopic(t, "p", 1, nil)
	b.createTopic(t, "lenient", 1, map[string]string{"message.timestamp.after.max.ms": "86400000"})
	w := dialWire(t, b.addr)
	future := testBatch(t, recordbatch.None, b.nowMs()+2*3_600_000)
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "p", [16]byte{}, 0, cloneBytes(future)))); sp.ErrorCode != kerr.InvalidTimestamp.Code {
		t.Fatalf("2h in the future: error %d", sp.ErrorCode)
	}
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "lenient", [16]byte{}, 0, cloneBytes(future)))); sp.ErrorCode != 0 {
		t.Fatalf("topic override: error %d", sp.ErrorCode)
	}
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "p", [16]byte{}, 0, testBatch(t, recordbatch.None, 0)))); sp.ErrorCode != 0 {
		t.Fatalf("old timestamp with unbounded before: error %d", sp.ErrorCode)
	}
}

// A CreateTime batch's maxTimestamp is set from its records, as Kafka's
// LogValidator does, not taken from the producer: a header that lies low
// would hide the records from timestamp lookups and expire them early.
func TestProduceSetsMaxTimestampFromRecords(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "ts", 1, nil)
	now := b.nowMs()
	batch := testBatch(t, recordbatch.None, now,
		recordbatch.Record{Key: []byte("a"), Value: []byte("1")},
		recordbatch.Record{Key: []byte("b"), Value: []byte("2"), TimestampDelta: 5000})
	h := recordbatch.Header(batch)
	if h.MaxTimestamp() != now+5000 {
		t.Fatalf("built max timestamp %d", h.MaxTimestamp())
	}
	binary.BigEndian.PutUint64(batch[35:], uint64(now+1)) // the lie
	h.UpdateCRC()
	w := dialWire(t, b.addr)
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "ts", [16]byte{}, 0, batch))); sp.ErrorCode != 0 {
		t.Fatalf("error %d", sp.ErrorCode)
	}
	log := tp.Partitions[0]
	rr, err := log.Read(0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	stored := recordbatch.Header(rr.Records)
	if stored.MaxTimestamp() != now+5000 || stored.CheckCRC() != nil {
		t.Fatalf("stored max timestamp %d (want %d), crc %v", stored.MaxTimestamp(), now+5000, stored.CheckCRC())
	}
	off, ts, found, err := log.OffsetForTimestamp(now + 5000)
	if err != nil || !found || off != 1 || ts != now+5000 {
		t.Fatalf("lookup: offset %d ts %d found %v err %v", off, ts, found, err)
	}
}
