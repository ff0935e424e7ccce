package coordinator

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// benchCoordinator is a coordinator on a fresh store with a manual clock
// and no logging, closed when b ends.
func benchCoordinator(b *testing.B, offsetsPartitions int32) (*Coordinator, *partition.Store) {
	clk := clock.NewManual(epoch)
	st, err := partition.Open(partition.Config{Dir: b.TempDir(), Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OffsetsTopicPartitions = offsetsPartitions
	cfg.OffsetsRetentionCheckInterval = 1000 * time.Hour
	cfg.Clock, cfg.Logger = clk, zerolog.Nop()
	c, err := New(cfg, st)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close(); st.Close() })
	return c, st
}

// BenchmarkConsumerSteadyHeartbeat is the heartbeat of a member of a
// stable 50-member group subscribed to 20 topics: nothing changes, so
// the heartbeat should cost little more than the round trip to the
// group's goroutine.
func BenchmarkConsumerSteadyHeartbeat(b *testing.B) {
	c, st := benchCoordinator(b, 1)
	var topics []string
	for i := 0; i < 20; i++ {
		name := "t" + strconv.Itoa(i)
		if _, err := st.CreateTopic(name, 10, nil, false); err != nil {
			b.Fatal(err)
		}
		topics = append(topics, name)
	}
	type mem struct {
		id    string
		epoch int32
		owned []kmsg.ConsumerGroupHeartbeatRequestTopic
	}
	req := func(m *mem, full bool) *kmsg.ConsumerGroupHeartbeatRequest {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, "g", m.id, m.epoch
		r.RebalanceTimeoutMillis = -1
		if full || m.epoch == 0 {
			r.RebalanceTimeoutMillis = 60000
			r.SubscribedTopicNames = topics
			r.Topics = m.owned
			if r.Topics == nil {
				r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			}
		}
		return r
	}
	send := func(m *mem, full bool) {
		resp := c.ConsumerGroupHeartbeat(context.Background(), req(m, full), ClientInfo{ClientID: "c", ClientHost: "/127.0.0.1"})
		if resp.ErrorCode != 0 {
			b.Fatalf("heartbeat: %d %v", resp.ErrorCode, deref(resp.ErrorMessage))
		}
		m.epoch = resp.MemberEpoch
		if resp.Assignment != nil {
			m.owned = nil
			for _, t := range resp.Assignment.Topics {
				m.owned = append(m.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
	}
	members := make([]*mem, 50)
	for i := range members {
		members[i] = &mem{id: "member-" + strconv.Itoa(i)}
	}
	// Reconcile everyone (bounded: a stable group takes a few rounds).
	for round := 0; round < 10; round++ {
		for _, m := range members {
			send(m, true)
		}
	}
	if s := c.ConsumerGroupDescribe(context.Background(), "g", 1); s.State != "Stable" {
		b.Fatalf("group is %s, not Stable", s.State)
	}
	m := members[0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(m, false)
	}
}
