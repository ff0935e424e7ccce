package recordbatch

import (
	"bytes"
	"testing"
)

// ForEachRecordScratch yields what ForEachRecord does, decompressing into
// the caller's buffer and keeping it for the next batch.
func TestForEachRecordScratch(t *testing.T) {
	recs := []Record{{OffsetDelta: 0, Key: []byte("k0"), Value: bytes.Repeat([]byte("v"), 500)},
		{OffsetDelta: 1, Key: []byte("k1"), Value: nil, Headers: []RecordHeader{{Key: "h", Value: []byte("x")}}}}
	var scratch []byte
	for _, c := range []Codec{None, Gzip, Snappy, LZ4, Zstd} {
		b, err := Build(BatchSpec{Codec: c, BaseTimestamp: 10, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		var got []Record
		if err := ForEachRecordScratch(b, &scratch, 1<<20, func(r Record) error {
			got = append(got, r)
			return nil
		}); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		want, err := Records(b, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d records, want %d", c, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) ||
				(got[i].Value == nil) != (want[i].Value == nil) || len(got[i].Headers) != len(want[i].Headers) {
				t.Fatalf("%v: record %d: %+v, want %+v", c, i, got[i], want[i])
			}
		}
		if c != None {
			if cap(scratch) == 0 {
				t.Fatalf("%v: scratch not kept", c)
			}
			before := &scratch[:1][0]
			if err := ForEachRecordScratch(b, &scratch, 1<<20, func(Record) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if &scratch[:1][0] != before {
				t.Fatalf("%v: scratch reallocated for a batch that fits", c)
			}
			// A failure leaves the buffer usable.
			if err := ForEachRecordScratch(b, &scratch, 10, func(Record) error { return nil }); err == nil {
				t.Fatalf("%v: limit ignored", c)
			}
			if cap(scratch) == 0 {
				t.Fatalf("%v: scratch lost after an error", c)
			}
		}
	}
	if err := ForEachRecordScratch(nil, nil, 1, func(Record) error { return nil }); err == nil {
		t.Fatal("empty batch accepted")
	}
}
