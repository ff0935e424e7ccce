package recordbatch

import (
	"fmt"
	"hash/crc32"
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

// BenchmarkCRC measures hash/crc32's Castagnoli over one buffer, the
// whole cost of CheckCRC for a batch of that size (the budget's CRC-32C
// figure is for this machine), and the same bytes fed in 4 KiB pieces.
func BenchmarkCRC(b *testing.B) {
	for _, n := range []int{16 << 10, 1 << 20} {
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Checksum(buf, crcTable)
			}
		})
		b.Run(fmt.Sprintf("%dKiB-in-4KiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				var c uint32
				for p := 0; p < n; p += 4 << 10 {
					c = crc32.Update(c, crcTable, buf[p:p+4<<10])
				}
			}
		})
	}
}

// BenchmarkRecordWalk is the per-record walk of Validate alone (no CRC):
// "checked" parses every record with parseRecordChecked, "fast" with
// parseRecord, which tries parseRecordFast first.
func BenchmarkRecordWalk(b *testing.B) {
	batch := benchBatch(b, None)
	data := batch[HeaderSize:]
	count := int(Header(batch).RecordCount())
	for _, tc := range []struct {
		name  string
		parse func([]byte, *Record, bool) (int, error)
	}{{"checked", parseRecordChecked}, {"fast", parseRecord}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var r Record
			for b.Loop() {
				p := 0
				for i := 0; i < count; i++ {
					n, err := tc.parse(data[p:], &r, false)
					if err != nil {
						b.Fatal(err)
					}
					p += n
				}
				if p != len(data) {
					b.Fatal("left over")
				}
			}
		})
	}
}

// BenchmarkValidateCold validates copies of the 1 MiB batch in turn, 64
// MiB in all, so each batch is out of the caches when Validate reads it,
// as a batch in a large Produce frame is after the socket read.
func BenchmarkValidateCold(b *testing.B) {
	batch := benchBatch(b, None)
	copies := make([][]byte, 64)
	for i := range copies {
		copies[i] = append([]byte(nil), batch...)
	}
	opts := ValidateOptions{MaxDecompressed: 4 << 20}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := Validate(copies[i%len(copies)], opts); err != nil {
			b.Fatal(err)
		}
		i++
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
