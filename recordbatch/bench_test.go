package recordbatch

import (
	"testing"
)

// benchBatch builds a batch of about 1 MiB of 1 KiB records, as a producer
// would send on the hot path.
func benchBatch(b *testing.B, c Codec) []byte {
	b.Helper()
	recs := make([]Record, 1024)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: int64(i),
			Key: []byte("key-0000"), Value: largeValue(i)}
	}
	batch, err := Build(BatchSpec{BaseTimestamp: 1700000000000, ProducerID: 1, BaseSequence: 0, Codec: c}, recs)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

func benchValidate(b *testing.B, c Codec) {
	batch := benchBatch(b, c)
	opts := ValidateOptions{MaxDecompressed: 4 << 20}
	s, err := Validate(batch, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(s.RecordBytes)) // throughput in uncompressed bytes
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Validate(batch, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	for _, c := range []Codec{None, LZ4, Snappy, Zstd, Gzip} {
		b.Run(c.String(), func(b *testing.B) { benchValidate(b, c) })
	}
}

func BenchmarkRecords(b *testing.B) {
	batch := benchBatch(b, None)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Records(batch, 4<<20); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, c := range []Codec{None, LZ4} {
		b.Run(c.String(), func(b *testing.B) {
			batch := benchBatch(b, None)
			recs, err := Records(batch, 4<<20)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(BatchSpec{Codec: c}, recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecompressLZ4 inflates the records of benchBatch's lz4 batch
// (64 KiB blocks, as the Java producer writes) whole into a reused buffer,
// as Validate does when the records are kept, and streams them through
// Validate's record sink, as the produce path does.
func BenchmarkDecompressLZ4(b *testing.B) {
	batch := benchBatch(b, LZ4)
	data := batch[HeaderSize:]
	b.Run("whole", func(b *testing.B) {
		dst, err := decompress(LZ4, nil, data, 4<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(dst)))
		b.ReportAllocs()
		for b.Loop() {
			if dst, err = decompress(LZ4, dst, data, 4<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stream", func(b *testing.B) { benchValidate(b, LZ4) })
}
