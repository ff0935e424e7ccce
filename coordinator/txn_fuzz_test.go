package coordinator

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// FuzzLoadTxnRecords feeds untrusted bytes, as read from
// __transaction_state at start-up, to the loader: as a record key and
// value, and as a run of batches. Invariants: never panics; a record that
// decodes re-encodes to a record that decodes to the same metadata; the
// batch loader never reports an offset for bytes holding no whole batch.
func FuzzLoadTxnRecords(f *testing.F) {
	d := &txnData{producerID: 7, prevProducerID: -1, nextProducerID: -1, producerEpoch: 3, lastEpoch: -1, timeoutMs: 60000,
		state: txnOngoing, partitions: map[TopicPartition]struct{}{{"a", 0}: {}, {"b", 2}: {}}, startMs: 10, lastUpdateMs: 20}
	rec := txnRecord("tx", d)
	tomb := txnRecord("tx", nil)
	seed := func(key, value []byte) []byte {
		out := []byte{byte(len(key))}
		out = append(out, key...)
		return append(out, value...)
	}
	f.Add(seed(rec.Key, rec.Value))
	f.Add(seed(tomb.Key, nil))
	batch, err := recordbatch.Build(recordbatch.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]recordbatch.Record{rec, {OffsetDelta: 1, Key: tomb.Key}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append([]byte{0xff}, batch...))
	c := newTxnCoordinator(DefaultTxnConfig(), nil)
	c.log = zerolog.Nop()
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		if in[0] == 0xff {
			out := map[string]*txnData{}
			next, err := c.loadTxnBatches(in[1:], out)
			if err == nil && next >= 0 && len(in) < 1+recordbatch.HeaderSize {
				t.Fatalf("offset %d from %d bytes", next, len(in)-1)
			}
			return
		}
		n := int(in[0])
		if n > len(in)-1 {
			n = len(in) - 1
		}
		key, value := in[1:1+n], in[1+n:]
		id, d, ok := decodeTxnRecord(key, value)
		if !ok || d == nil {
			return
		}
		r := txnRecord(id, d)
		id2, d2, ok := decodeTxnRecord(r.Key, r.Value)
		if !ok || id2 != id || d2 == nil || d2.producerID != d.producerID || d2.producerEpoch != d.producerEpoch ||
			d2.state != d.state || len(d2.partitions) != len(d.partitions) {
			t.Fatalf("re-decoded %+v, want %+v", d2, d)
		}
	})
}

// FuzzProducerIDsFile feeds untrusted bytes, as read from the data dir's
// producer id block file at start-up, to its decoder. Invariants: never
// panics; a decoded block start is never negative and re-encodes to the
// same bytes.
func FuzzProducerIDsFile(f *testing.F) {
	f.Add(encodeProducerIDs(0))
	f.Add(encodeProducerIDs(123000))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		next, err := decodeProducerIDs(in)
		if err != nil || len(in) == 0 {
			return
		}
		if next < 0 || string(encodeProducerIDs(next)) != string(in) {
			t.Fatalf("decoded %d from % x", next, in)
		}
	})
}
