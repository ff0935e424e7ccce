package protocol

import (
	"encoding/binary"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

var allCodecs = []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd}

// recordsOf is the records section of an uncompressed batch of recs.
func recordsOf(t testing.TB, ts int64, recs ...recordbatch.Record) []byte {
	t.Helper()
	return testBatch(t, recordbatch.None, ts, recs...)[recordbatch.HeaderSize:]
}

// batchOf wraps a records section (compressed with c here) in a
// producer's header claiming count records from base timestamp ts.
func batchOf(t testing.TB, c recordbatch.Codec, ts int64, count int32, records []byte) []byte {
	t.Helper()
	z, err := recordbatch.Compress(c, nil, records)
	if err != nil {
		t.Fatal(err)
	}
	b := compressedBatch(t, c, z, count)
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	return rewriteCRC(b)
}

// TestProduceCompressedRecordErrors: the records of a batch are validated
// with the same answer (code, record errors, message) whatever the
// producer's codec, on topics that store the producer's codec and on one
// that recompresses; the answers are pinned to the uncompressed ones.
func TestProduceCompressedRecordErrors(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.MaxDecompressedBytes = 1 << 20 })
	b.createTopic(t, "p", 1, nil)
	b.createTopic(t, "compact", 1, map[string]string{"cleanup.policy": "compact"})
	b.createTopic(t, "strict", 1, map[string]string{"message.timestamp.before.max.ms": "60000", "message.timestamp.after.max.ms": "60000"})
	b.createTopic(t, "to-lz4", 1, map[string]string{"compression.type": "lz4", "cleanup.policy": "compact"})
	now := b.nowMs()
	rec := func(key string, tsDelta int64) recordbatch.Record {
		r := recordbatch.Record{Value: make([]byte, 300), TimestampDelta: tsDelta,
			Headers: []recordbatch.RecordHeader{{Key: "trace", Value: []byte("t-1")}}}
		if key != "" {
			r.Key = []byte(key)
		}
		return r
	}
	three := recordsOf(t, now, rec("a", 0), rec("b", 1), rec("c", 2))
	// One record whose header key is null: 20 = zigzag(10) body bytes.
	nullHeaderKey := []byte{20, 0, 0, 0, 2, 'k', 2, 'v', 2, 1, 1}
	cases := []struct {
		name    string
		topic   string
		ts      int64
		count   int32
		records []byte
		want    *kerr.Error // nil: accepted
		recErrs []int32     // relative offsets in ErrorRecords
	}{
		{"valid", "p", now, 3, three, nil, nil},
		{"valid recompressed", "to-lz4", now, 3, three, nil, nil},
		{"null key on compacted topic", "compact", now, 3, recordsOf(t, now, rec("a", 0), rec("", 0), rec("", 0)), kerr.InvalidRecord, []int32{1, 2}},
		{"null key on recompressing compacted topic", "to-lz4", now, 2, recordsOf(t, now, rec("", 0), rec("b", 0)), kerr.InvalidRecord, []int32{0}},
		{"timestamp out of range", "strict", now, 3, recordsOf(t, now, rec("a", 0), rec("b", -120_000), rec("c", 0)), kerr.InvalidTimestamp, []int32{1}},
		{"fewer records than count", "p", now, 4, three, kerr.InvalidRecord, nil},
		{"more records than count", "p", now, 2, three, kerr.InvalidRecord, nil},
		{"trailing byte", "p", now, 3, append(append([]byte(nil), three...), 0), kerr.InvalidRecord, nil},
		{"offset delta gap", "p", now, 3, func() []byte {
			rs := []recordbatch.Record{rec("a", 0), rec("b", 0), rec("c", 0)}
			rs[1].OffsetDelta, rs[2].OffsetDelta = 1, 3
			b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: now}, rs)
			if err != nil {
				t.Fatal(err)
			}
			return b[recordbatch.HeaderSize:]
		}(), kerr.InvalidRecord, nil},
		{"null header key", "p", now, 1, nullHeaderKey, kerr.InvalidRecord, nil},
	}
	w := dialWire(t, b.addr)
	for _, tc := range cases {
		for _, c := range allCodecs {
			batch := batchOf(t, c, tc.ts, tc.count, tc.records)
			sp := onlyProducePartition(t, w.roundTrip(produceReq(11, tc.topic, [16]byte{}, 0, batch)))
			want := int16(0)
			if tc.want != nil {
				want = tc.want.Code
			}
			if sp.ErrorCode != want {
				t.Errorf("%s, %v: %s, want %v", tc.name, c, kerr.ErrorForCode(sp.ErrorCode), tc.want)
				continue
			}
			var got []int32
			for _, e := range sp.ErrorRecords {
				got = append(got, e.RelativeOffset)
			}
			if !reflect.DeepEqual(got, tc.recErrs) {
				t.Errorf("%s, %v: record errors at %v, want %v", tc.name, c, got, tc.recErrs)
			}
			if tc.want == nil && (sp.BaseOffset < 0 || sp.ErrorMessage != nil) {
				t.Errorf("%s, %v: %+v", tc.name, c, sp)
			}
		}
	}
}

// TestProduceInflatesOnce counts, through the Server.inflated seam, how
// often the produce path inflates an accepted compressed batch: once,
// whether the batch is stored as sent or recompressed for the topic's
// compression.type, and never for an uncompressed one. A batch rejected
// with per-record errors is inflated a second time to list them.
func TestProduceInflatesOnce(t *testing.T) {
	var inflations atomic.Int64
	b := startBrokerPrep(t, nil, func(s *Server) { s.inflated = func() { inflations.Add(1) } })
	topics := map[string]string{"producer": "producer", "zstd": "zstd", "lz4": "lz4", "gzip": "gzip", "none": "uncompressed"}
	for name, ct := range topics {
		b.createTopic(t, name, 1, map[string]string{"compression.type": ct})
	}
	compact := b.createTopic(t, "compact", 1, map[string]string{"cleanup.policy": "compact"})
	w := dialWire(t, b.addr)
	now := b.nowMs()
	records := recordsOf(t, now, recordbatch.Record{Key: []byte("k1"), Value: make([]byte, 2000)},
		recordbatch.Record{Key: []byte("k2"), Value: []byte("v")})
	produce := func(topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
		return onlyProducePartition(t, w.roundTrip(produceReq(11, topic, [16]byte{}, 0, batch)))
	}
	for _, c := range allCodecs {
		for name := range topics {
			before := inflations.Load()
			if sp := produce(name, batchOf(t, c, now, 2, records)); sp.ErrorCode != 0 {
				t.Fatalf("%v to %s: %s", c, name, kerr.ErrorForCode(sp.ErrorCode))
			}
			want := int64(1)
			if c == recordbatch.None {
				want = 0
			}
			if n := inflations.Load() - before; n != want {
				t.Errorf("%v to topic %s: inflated %d times, want %d", c, name, n, want)
			}
		}
	}
	// Rejected with record errors: inflated to validate, then to list.
	before := inflations.Load()
	nullKeys := recordsOf(t, now, recordbatch.Record{Value: []byte("v")})
	if sp := produce("compact", batchOf(t, recordbatch.Zstd, now, 1, nullKeys)); sp.ErrorCode != kerr.InvalidRecord.Code || len(sp.ErrorRecords) != 1 {
		t.Fatalf("null key on compacted topic: %+v", sp)
	}
	if n := inflations.Load() - before; n != 2 {
		t.Errorf("rejected batch inflated %d times, want 2", n)
	}
	if compact.Partitions[0].Offsets().LogEndOffset != 0 {
		t.Error("rejected batch was written")
	}
}
