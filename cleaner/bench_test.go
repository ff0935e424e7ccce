package cleaner

import (
	"fmt"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/cleaner/cleanerbench"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// BenchmarkClean cleans a never-cleaned log of 100-record batches (100-byte
// values, 10,000 keys, 1 MiB segments) in one pass on disk. MB/s is log
// bytes per second (compressed bytes for LZ4), records/s the records
// filtered; peak-heap-MB is the largest heap growth seen during the pass
// (cleanerbench.Clean), map-MB the offset map it used, MB/cpu-s log MB
// per CPU-second of the process during the pass. BenchmarkCleanWorkload
// is issue 15's workload.
func BenchmarkClean(b *testing.B) {
	for _, c := range []struct {
		codec recordbatch.Codec
		mb    int
	}{{recordbatch.None, 32}, {recordbatch.LZ4, 16}} {
		b.Run(fmt.Sprintf("%v/%dMiB", c.codec, c.mb), func(b *testing.B) {
			benchClean(b, c.codec, int64(c.mb)<<20)
		})
	}
}

func benchClean(b *testing.B, codec recordbatch.Codec, logBytes int64) {
	b.ReportAllocs()
	var peak uint64
	var mapBytes int
	var records int64
	var elapsed, cpu time.Duration
	var dirty int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e := newTestEnv(b, nil)
		e.quiet = true
		e.open()
		l := e.topic("bench", map[string]string{"segment.bytes": fmt.Sprint(1 << 20)})
		value := make([]byte, 100)
		var size int64
		for n := 0; size < logBytes; n++ {
			recs := make([]recordbatch.Record, 100)
			for j := range recs {
				recs[j] = recordbatch.Record{OffsetDelta: int32(j), TimestampDelta: int64(j),
					Key: []byte(fmt.Sprintf("key-%05d", (n*100+j*37)%10000)), Value: value}
			}
			bb, err := recordbatch.Build(recordbatch.BatchSpec{Codec: codec, BaseTimestamp: e.now(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(bb); err != nil {
				b.Fatal(err)
			}
			size += int64(len(bb))
		}
		e.appendRecs(l, plain, kv("last", "1"))
		b.SetBytes(size)
		b.StartTimer()
		r, err := cleanerbench.Clean(e.cleaner, l)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		elapsed += r.Wall
		cpu += r.CPU
		dirty += r.DirtyBytes
		peak = max(peak, r.PeakHeap)
		st, _ := e.cleaner.LastStats(tpOf(l))
		records += st.MessagesRead
		m := <-e.cleaner.maps
		mapBytes = len(m.slots)
		e.cleaner.maps <- m
		e.close()
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(mapBytes)/(1<<20), "map-MB")
	b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(dirty)/1e6/cpu.Seconds(), "MB/cpu-s")
}
