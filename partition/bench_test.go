package partition

import (
	"encoding/binary"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
)

func benchStore(b *testing.B, overrides map[string]string) (*Store, *Log) {
	b.Helper()
	s, err := Open(Config{Dir: b.TempDir(), NodeID: 1, FS: vfs.OS{}, Clock: clock.Real{}, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	tp, err := s.CreateTopic("bench", 1, overrides, false)
	if err != nil {
		b.Fatal(err)
	}
	return s, tp.Partitions[0]
}

// BenchmarkAppend appends 1 MiB batches (1 KiB records) to the page
// cache, Kafka's default flush policy. Append rewrites offsets in place,
// so one batch is reused.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		ov   map[string]string
	}{
		{"nofsync", nil},
		{"flush.messages=1", map[string]string{"flush.messages": "1"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, l := benchStore(b, bc.ov)
			defer s.Close()
			batch := mkBatch(b, 1000, 1, 1024)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead reads 1 MiB per call sequentially through a log of 16 KiB
// batches, as a consumer does.
func BenchmarkRead(b *testing.B) {
	s, l := benchStore(b, map[string]string{"segment.bytes": "67108864"})
	defer s.Close()
	batch := mkBatch(b, 16, 1, 1000)
	const total = 128 << 20
	for n := 0; n < total; n += len(batch) {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	hw := l.Offsets().HighWatermark
	for _, bc := range []struct {
		name  string
		alloc func(int) []byte
	}{
		{"fresh", nil},
		// A recycled buffer, as the fetch handler passes: no allocation
		// and zeroing per read.
		{"reused", func() func(int) []byte {
			var buf []byte
			return func(n int) []byte {
				if cap(buf) < n {
					buf = make([]byte, n)
				}
				return buf[:n]
			}
		}()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				r, err := l.ReadWith(off, 1<<20, true, ReadUncommitted, bc.alloc)
				if err != nil {
					b.Fatal(err)
				}
				off += int64(len(r.Records) / len(batch) * 16)
				if off >= hw {
					off = 0
				}
			}
		})
	}
}

// BenchmarkAppendIdempotent appends small batches (10 records of 100
// bytes) without and with a producer id, to show what the producer-state
// checks cost per append. The sequence is rewritten in place (Append does
// not check the CRC; Produce validated it).
func BenchmarkAppendIdempotent(b *testing.B) {
	for _, idem := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "idempotent"}[idem], func(b *testing.B) {
			s, l := benchStore(b, nil)
			defer s.Close()
			batch := mkBatch(b, 10, 1, 100)
			if idem {
				// Producer id 1, epoch 0 (offsets 43 and 51).
				binary.BigEndian.PutUint64(batch[43:], 1)
				binary.BigEndian.PutUint16(batch[51:], 0)
			}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if idem {
					binary.BigEndian.PutUint32(batch[53:], uint32(i*10))
				}
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
