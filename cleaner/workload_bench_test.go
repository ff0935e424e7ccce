package cleaner_test

import (
	"fmt"
	"testing"

	"github.com/kcompatd/kcompatd/cleaner"
	"github.com/kcompatd/kcompatd/cleaner/cleanerbench"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// BenchmarkCleanWorkload is issue 15's cleaner workload (cleanerbench):
// one pass over a never-cleaned log on disk (16 MiB segments). MB/cpu-s is
// dirty log MB per CPU-second of the process (getrusage around the pass),
// peak-heap-MB the largest live-heap growth during the pass. The /dedupe=1MiB
// cases bound the offset map below what the log needs (partial passes):
// their peak heap must not grow with the log size.
func BenchmarkCleanWorkload(b *testing.B) {
	for _, c := range []struct {
		codec  recordbatch.Codec
		mb     int64
		dedupe int64
	}{
		{recordbatch.None, 64, 128 << 20}, {recordbatch.LZ4, 64, 128 << 20}, {recordbatch.Zstd, 64, 128 << 20},
		{recordbatch.None, 32, 1 << 20}, {recordbatch.None, 128, 1 << 20},
	} {
		b.Run(fmt.Sprintf("%v/%dMiB/dedupe=%dMiB", c.codec, c.mb, c.dedupe>>20), func(b *testing.B) {
			benchWorkload(b, cleanerbench.Workload{LogBytes: c.mb << 20, SegmentBytes: 16 << 20, Codec: c.codec, Seed: 1}, c.dedupe)
		})
	}
}

func benchWorkload(b *testing.B, w cleanerbench.Workload, dedupe int64) {
	var cpu, peak, mallocs, alloc, dirty float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := partition.Open(partition.Config{Dir: b.TempDir(), NodeID: 1})
		if err != nil {
			b.Fatal(err)
		}
		tp, err := s.CreateTopic("bench", 1, map[string]string{"cleanup.policy": "compact", "segment.bytes": fmt.Sprint(w.SegmentBytes)}, false)
		if err != nil {
			b.Fatal(err)
		}
		l := tp.Partitions[0]
		if _, err := cleanerbench.Build(l, w); err != nil {
			b.Fatal(err)
		}
		cfg := cleaner.DefaultConfig()
		cfg.DedupeBufferSize = dedupe
		c := cleaner.New(s, cfg)
		b.StartTimer()
		r, err := cleanerbench.Clean(c, l)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(r.DirtyBytes)
		cpu += r.CPU.Seconds()
		dirty += float64(r.DirtyBytes)
		peak = max(peak, float64(r.PeakHeap))
		mallocs += float64(r.Mallocs)
		alloc += float64(r.AllocBytes)
		c.Close()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(dirty/1e6/cpu, "MB/cpu-s")
	b.ReportMetric(cpu/(dirty/1e9), "cpu-s/GB")
	b.ReportMetric(peak/(1<<20), "peak-heap-MB")
	b.ReportMetric(mallocs/float64(b.N), "mallocs/pass")
	b.ReportMetric(alloc/float64(b.N)/(1<<20), "alloc-MB/pass")
}
