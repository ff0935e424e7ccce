package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// BenchmarkTxnCycle measures one transaction's coordinator work (add two
// partitions, commit: three __transaction_state writes and two markers)
// against a real store in a temp dir.
func BenchmarkTxnCycle(b *testing.B) {
	clk := clock.Real{}
	st, err := partition.Open(partition.Config{Dir: b.TempDir(), NodeID: 1, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateTopic("data", 2, nil, false); err != nil {
		b.Fatal(err)
	}
	cfg := DefaultTxnConfig()
	cfg.TopicPartitions = 3
	cfg.Clock = clk
	c, err := NewTxnCoordinator(cfg, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	id := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	pid, epoch, code := c.InitProducerID(&id, 60000, -1, -1)
	if code != 0 {
		b.Fatal(code)
	}
	parts := []TopicPartition{{"data", 0}, {"data", 1}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if code := c.AddPartitions(id, pid, epoch, parts); code != 0 {
			b.Fatal(code)
		}
		if code, _, _ := c.EndTxn(id, pid, epoch, true, false); code != 0 {
			b.Fatal(code)
		}
	}
}
