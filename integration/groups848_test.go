package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumer848Configs start a broker whose KIP-848 groups heartbeat every
// 250 ms and time sessions out after 3 s, so membership changes take
// seconds.
var consumer848Configs = []string{
	"offsets.topic.num.partitions=5",
	"group.consumer.min.heartbeat.interval.ms=100",
	"group.consumer.heartbeat.interval.ms=250",
	"group.consumer.min.session.timeout.ms=1000",
	"group.consumer.session.timeout.ms=3000",
}

// opts848 are the options of a KIP-848 group member (kgo's
// ServerSideBalancer) that processes and commits what it polled before it
// lets a revocation through, so every record is processed exactly once.
func opts848(group string, balancer kgo.GroupBalancer, topics ...string) []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(balancer),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.FetchMaxWait(250 * time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
}

// member848 polls, records and commits until ctx ends.
func member848(ctx context.Context, t *testing.T, name string, cl *kgo.Client, got *consumed) {
	for ctx.Err() == nil {
		got.add(name, cl.PollFetches(ctx))
		if err := cl.CommitUncommittedOffsets(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("%s: commit: %v", name, err)
		}
		cl.AllowRebalance()
	}
}

// run848 runs KIP-848 members, all recording into got, until stop.
type run848 struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	got    *consumed
}

// newRun848 returns a run848 that t's cleanup stops.
func newRun848(t *testing.T) *run848 {
	ctx, cancel := context.WithCancel(context.Background())
	r := &run848{t: t, ctx: ctx, cancel: cancel, got: &consumed{by: map[string]string{}}}
	t.Cleanup(r.stop)
	return r
}

// start runs cl as the member name; the returned function stops it and
// waits until it returned.
func (r *run848) start(name string, cl *kgo.Client) func() {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(done)
		member848(ctx, r.t, name, cl, r.got)
	}()
	return func() { cancel(); <-done }
}

// stop stops every member and waits for them.
func (r *run848) stop() {
	r.cancel()
	r.wg.Wait()
}

// describe848 is one ConsumerGroupDescribe.
func (b *broker) describe848(t testing.TB, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	return resp.Groups[0]
}

// wait848 waits until the group is Stable with n members owning every
// partition of topic, each partition once.
func (b *broker) wait848(t testing.TB, group string, n int, parts int32) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var d kmsg.ConsumerGroupDescribeResponseGroup
	for time.Now().Before(deadline) {
		d = b.describe848(t, group)
		owned := map[int32]int{}
		for _, m := range d.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					owned[p]++
				}
			}
		}
		ok := d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == n && len(owned) == int(parts)
		for _, c := range owned {
			ok = ok && c == 1
		}
		if ok {
			return d
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s not stable with %d members: %+v", group, n, d)
	return d
}

// TestConsumerGroup848ChurnConsumesEveryRecordOnce: KIP-848 members join
// and leave while records flow; every record is processed exactly once
// (a partition is never owned by two members, and offsets are committed
// before a partition moves), with both server-side assignors.
func TestConsumerGroup848ChurnConsumesEveryRecordOnce(t *testing.T) {
	for _, bal := range []kgo.GroupBalancer{kgo.StickyBalancer(), kgo.RangeBalancer()} {
		t.Run(bal.ProtocolName(), func(t *testing.T) {
			b := startBroker(t, "", consumer848Configs...)
			const topic, parts = "churn848", int32(8)
			group := "g848-" + bal.ProtocolName()
			b.createTopic(t, topic, parts, nil)

			run := newRun848(t)
			got := run.got
			start := func(name string) func() {
				cl, closeCl := b.tempClient(t, opts848(group, bal, topic)...)
				stop := run.start(name, cl)
				return func() { stop(); closeCl() }
			}
			stops := []func(){start("m0"), start("m1")}
			b.wait848(t, group, 2, parts)

			// Records flow while members join and leave.
			per := scale(50)
			const rounds = 8
			produced := make(chan struct{})
			go func() {
				defer close(produced)
				for round := 0; round < rounds; round++ {
					b.produceN(t, topic, parts, per, fmt.Sprintf("r%d", round))
					time.Sleep(100 * time.Millisecond)
				}
			}()
			for change := 0; change < 4; change++ {
				if change%2 == 0 { // a member joins
					stops = append(stops, start(fmt.Sprintf("m%d", 2+change)))
				} else { // the oldest member leaves
					stops[0]()
					stops = stops[1:]
				}
				b.wait848(t, group, len(stops), parts)
			}
			<-produced
			want := rounds * int(parts) * per
			got.waitFor(want, 90*time.Second)
			d := b.wait848(t, group, len(stops), parts)
			for _, s := range stops {
				s()
			}
			got.check(t, want)
			if d.AssignorName != map[string]string{"sticky": "uniform", "range": "range"}[bal.ProtocolName()] {
				t.Errorf("assignor %q", d.AssignorName)
			}
			// Every record's offset was committed.
			b.checkCommittedAtEnd(t, group, topic)
		})
	}
}

// committed is a group's committed offsets of topic via OffsetFetch.
func (b *broker) committed(t testing.TB, group, topic string) map[int32]int64 {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, g := range resp.Groups {
		for _, rt := range g.Topics {
			if rt.Topic == topic {
				for _, p := range rt.Partitions {
					out[p.Partition] = p.Offset
				}
			}
		}
	}
	for _, rt := range resp.Topics {
		if rt.Topic == topic {
			for _, p := range rt.Partitions {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out
}

// TestConsumerGroup848SurvivesKill: a broker killed with SIGKILL while a
// KIP-848 group rebalances comes back with its members, epochs and
// assignments, and the members carry on without rejoining.
func TestConsumerGroup848SurvivesKill(t *testing.T) {
	b := startBroker(t, "", append(consumer848Configs[:len(consumer848Configs):len(consumer848Configs)],
		// Long sessions, so the members are still there after the
		// restart and resume with their epochs.
		"group.consumer.max.session.timeout.ms=60000", "group.consumer.session.timeout.ms=30000")...)
	const topic, group, parts = "kill848", "g-kill848", int32(6)
	b.createTopic(t, topic, parts, nil)
	run := newRun848(t)
	got := run.got
	for i := 0; i < 2; i++ {
		run.start(fmt.Sprint("m", i), b.newClient(t, opts848(group, kgo.StickyBalancer(), topic)...))
	}
	before := b.wait848(t, group, 2, parts)
	// A third member joins: the group rebalances; kill the broker then.
	run.start("m2", b.newClient(t, opts848(group, kgo.StickyBalancer(), topic)...))
	deadline := time.Now().Add(30 * time.Second)
	for len(b.describe848(t, group).Members) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	b = b.crashRestartSamePort(t)
	after := b.wait848(t, group, 3, parts)
	ids := map[string]bool{}
	for _, m := range after.Members {
		ids[m.MemberID] = true
	}
	for _, m := range before.Members {
		if !ids[m.MemberID] {
			t.Fatalf("member %s did not survive the kill: %+v", m.MemberID, after.Members)
		}
	}
	if after.Epoch <= before.Epoch {
		t.Fatalf("group epoch %d after the kill, %d before", after.Epoch, before.Epoch)
	}
	b.produceN(t, topic, parts, 20, "after")
	want := int(parts) * 20
	got.waitFor(want, 60*time.Second)
	run.stop()
	got.check(t, want)
}

// TestConsumerGroup848RegexPicksUpNewTopic: a KIP-848 member subscribed
// by a broker-side regex gets a matching topic created after it joined
// (at the coordinator's next regex refresh, 10 s as Kafka's), and not a
// topic that does not match.
func TestConsumerGroup848RegexPicksUpNewTopic(t *testing.T) {
	b := startBroker(t, "", consumer848Configs...)
	b.createTopic(t, "rx-orders-1", 2, nil)
	run := newRun848(t)
	run.start("m", b.newClient(t, append(opts848("g-rx", kgo.RangeBalancer(), "rx-orders-.*"), kgo.ConsumeRegex())...))
	b.wait848(t, "g-rx", 1, 2)
	b.createTopic(t, "rx-orders-2", 3, nil)
	b.createTopic(t, "rx-other", 1, nil)
	b.produceN(t, "rx-orders-1", 2, 5, "a")
	b.produceN(t, "rx-orders-2", 3, 5, "b")
	b.produceN(t, "rx-other", 1, 5, "c")
	run.got.waitFor(25, 60*time.Second)
	d := b.describe848(t, "g-rx")
	run.stop()
	run.got.check(t, 25)
	if len(d.Members) != 1 || len(d.Members[0].Assignment.TopicPartitions) != 2 {
		t.Fatalf("assignment after the new topic: %+v", d.Members)
	}
}
