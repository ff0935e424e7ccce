package partition

import (
	"fmt"
	"os"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
)

// BenchmarkOpenManyPartitions opens (and closes) a store of 2,000
// partitions of one batch each after a clean shutdown: the per-partition
// cost of start-up.
func BenchmarkOpenManyPartitions(b *testing.B) {
	const topics, perTopic = 20, 100
	dir := b.TempDir()
	cfg := Config{Dir: dir, NodeID: 1, FS: vfs.OS{}, Clock: clock.Real{}, Logger: zerolog.Nop()}
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	batch := mkBatch(b, 1, 1, 100)
	for t := range topics {
		tp, err := s.CreateTopic(fmt.Sprintf("t%d", t), perTopic, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range tp.Partitions {
			if _, err := l.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	_, _ = os.Stat("/kcompatd-open-starts") // a marker for strace
	for b.Loop() {
		s, err := Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = os.Stat("/kcompatd-open-done")
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/(topics*perTopic), "µs/partition")
}
