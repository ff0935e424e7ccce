package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// groupConfigs start a broker whose groups rebalance at once and accept
// short session timeouts, so group tests take seconds.
var groupConfigs = []string{
	"group.initial.rebalance.delay.ms=0",
	"group.min.session.timeout.ms=1000",
	"offsets.topic.num.partitions=5",
}

// groupOpts are a group consumer's options with short timeouts.
func groupOpts(group string, topics ...string) []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
}

// produceN produces n records to each of partitions 0..parts-1, keyed
// "p<partition>-<i>".
func (b *broker) produceN(t testing.TB, topic string, parts int32, n int, tag string) {
	t.Helper()
	cl := b.newClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("%s-p%d-%d", tag, p, i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// describeGroup describes one group through kadm.
func (b *broker) describeGroup(t testing.TB, adm *kadm.Client, group string) kadm.DescribedGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatalf("describe groups: %v", err)
	}
	return d[group]
}

// waitGroup polls DescribeGroups until ok accepts the group (a real broker
// runs on the wall clock, so this waits for its rebalances).
func (b *broker) waitGroup(t testing.TB, adm *kadm.Client, group string, what string, ok func(kadm.DescribedGroup) bool) kadm.DescribedGroup {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var d kadm.DescribedGroup
	for time.Now().Before(deadline) {
		d = b.describeGroup(t, adm, group)
		if ok(d) {
			return d
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s never became %s; last: state %s, %d members", group, what, d.State, len(d.Members))
	return d
}

// assignedPartitions returns each member's assigned partitions of topic.
func assignedPartitions(t testing.TB, d kadm.DescribedGroup, topic string) map[string][]int32 {
	t.Helper()
	out := map[string][]int32{}
	for _, m := range d.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			t.Fatalf("member %s: assignment is not a consumer assignment", m.MemberID)
		}
		for _, tp := range a.Topics {
			if tp.Topic == topic {
				out[m.MemberID] = append(out[m.MemberID], tp.Partitions...)
			}
		}
	}
	return out
}

// stableWith is a waitGroup condition: Stable, n members, and every
// partition of topic assigned to exactly one of them.
func stableWith(t testing.TB, n int, topic string, parts int32) func(kadm.DescribedGroup) bool {
	return func(d kadm.DescribedGroup) bool {
		if d.State != "Stable" || len(d.Members) != n {
			return false
		}
		seen := map[int32]int{}
		for _, ps := range assignedPartitions(t, d, topic) {
			if len(ps) == 0 {
				return false
			}
			for _, p := range ps {
				seen[p]++
			}
		}
		if len(seen) != int(parts) {
			return false
		}
		for _, c := range seen {
			if c != 1 {
				return false
			}
		}
		return true
	}
}

// consumed collects what group members polled, failing on duplicates.
type consumed struct {
	mu   sync.Mutex
	by   map[string]string // record key -> consumer name
	dups []string
}

func (c *consumed) poll(ctx context.Context, name string, cl *kgo.Client) {
	for ctx.Err() == nil {
		c.add(name, cl.PollFetches(ctx))
	}
}

// add records what name polled.
func (c *consumed) add(name string, fs kgo.Fetches) {
	fs.EachRecord(func(r *kgo.Record) {
		c.mu.Lock()
		if prev, ok := c.by[string(r.Key)]; ok {
			c.dups = append(c.dups, fmt.Sprintf("%s by %s and %s", r.Key, prev, name))
		}
		c.by[string(r.Key)] = name
		c.mu.Unlock()
	})
}

// waitFor waits until want distinct records were consumed, or timeout.
func (c *consumed) waitFor(want int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for c.count() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// check fails unless want distinct records were consumed, none twice.
func (c *consumed) check(t testing.TB, want int) {
	t.Helper()
	if n := c.count(); n != want {
		t.Fatalf("consumed %d distinct records, want %d", n, want)
	}
	if len(c.dups) > 0 {
		t.Fatalf("records consumed twice: %v", c.dups[:min(len(c.dups), 10)])
	}
}

func (c *consumed) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}

func TestGroupThreeMembersShareElevenPartitions(t *testing.T) {
	b := startBroker(t, "", groupConfigs...)
	const topic, group, parts = "share11", "g-share", int32(11)
	b.createTopic(t, topic, parts, nil)
	adm := kadm.NewClient(b.newClient(t))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := &consumed{by: map[string]string{}}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := 0; i < 3; i++ {
		cl := b.newClient(t, groupOpts(group, topic)...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got.poll(ctx, fmt.Sprintf("consumer-%d", i), cl)
		}()
	}
	d := b.waitGroup(t, adm, group, "stable with 3 members", stableWith(t, 3, topic, parts))
	if d.Protocol != "cooperative-sticky" || d.ProtocolType != "consumer" {
		t.Errorf("protocol %q type %q", d.Protocol, d.ProtocolType)
	}

	const per = 20
	b.produceN(t, topic, parts, per, "a")
	want := int(parts) * per
	got.waitFor(want, 60*time.Second)
	cancel()
	wg.Wait()
	got.check(t, want)
	// Each partition was read by the one member it is assigned to.
	owner := map[int32]string{}
	for key, who := range got.by {
		var p, i int32
		fmt.Sscanf(key, "a-p%d-%d", &p, &i)
		if prev, ok := owner[p]; ok && prev != who {
			t.Fatalf("partition %d consumed by %s and %s", p, prev, who)
		}
		owner[p] = who
	}
}

func TestGroupMemberLeavingRebalances(t *testing.T) {
	b := startBroker(t, "", groupConfigs...)
	const topic, group, parts = "leave", "g-leave", int32(6)
	b.createTopic(t, topic, parts, nil)
	adm := kadm.NewClient(b.newClient(t))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stay := b.newClient(t, groupOpts(group, topic)...)
	leaver, closeLeaver := b.tempClient(t, groupOpts(group, topic)...)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, cl := range []*kgo.Client{stay, leaver} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
	}
	before := b.waitGroup(t, adm, group, "stable with 2 members", stableWith(t, 2, topic, parts))
	closeLeaver() // sends LeaveGroup
	after := b.waitGroup(t, adm, group, "stable with 1 member", stableWith(t, 1, topic, parts))
	if after.Members[0].MemberID == "" {
		t.Fatal("no member id")
	}
	for _, m := range before.Members {
		if m.MemberID == after.Members[0].MemberID {
			return // the member that stayed now owns everything
		}
	}
	t.Fatalf("remaining member %s was not in the group before", after.Members[0].MemberID)
}

func TestGroupCommitsSurviveRestart(t *testing.T) {
	b := startBroker(t, "", groupConfigs...)
	const topic, group, parts = "resume", "g-resume", int32(3)
	b.createTopic(t, topic, parts, nil)
	b.produceN(t, topic, parts, 10, "first")

	consume := func(b *broker, want int, tag string) {
		t.Helper()
		cl, closeCl := b.tempClient(t, append(groupOpts(group, topic), kgo.DisableAutoCommit())...)
		defer closeCl()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		seen := map[string]bool{}
		for len(seen) < want && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				if !strings.HasPrefix(string(r.Key), tag+"-") {
					t.Errorf("record %s consumed again after the commit", r.Key)
				}
				if seen[string(r.Key)] {
					t.Errorf("record %s consumed twice", r.Key)
				}
				seen[string(r.Key)] = true
			})
		}
		if len(seen) != want {
			t.Fatalf("consumed %d records, want %d", len(seen), want)
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	consume(b, 30, "first")

	adm := kadm.NewClient(b.newClient(t))
	fetchOffsets := func(adm *kadm.Client) map[int32]int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		os, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("fetch offsets: %v", err)
		}
		out := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic {
				out[o.Partition] = o.At
			}
		})
		return out
	}
	committed := fetchOffsets(adm)
	for p := int32(0); p < parts; p++ {
		if committed[p] != 10 {
			t.Fatalf("committed offsets before restart: %v", committed)
		}
	}

	b = b.restart(t)
	adm = kadm.NewClient(b.newClient(t))
	if after := fetchOffsets(adm); fmt.Sprint(after) != fmt.Sprint(committed) {
		t.Fatalf("committed offsets after restart %v, before %v", after, committed)
	}
	b.produceN(t, topic, parts, 5, "second")
	consume(b, 15, "second")
}

func TestGroupStaticMemberRestartsWithoutRebalance(t *testing.T) {
	b := startBroker(t, "", groupConfigs...)
	const topic, group, parts = "static", "g-static", int32(2)
	b.createTopic(t, topic, parts, nil)
	b.produceN(t, topic, parts, 5, "s")
	adm := kadm.NewClient(b.newClient(t))

	run := func() {
		cl, closeCl := b.tempClient(t, append(groupOpts(group, topic), kgo.InstanceID("instance-1"))...)
		defer closeCl() // a static member does not leave on close
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for ctx.Err() == nil {
			if fs := cl.PollFetches(ctx); fs.NumRecords() > 0 {
				return
			}
		}
		t.Fatal("static member consumed nothing")
	}
	run()
	first := b.waitGroup(t, adm, group, "stable", stableWith(t, 1, topic, parts))
	gen := groupGeneration(t, b, group)
	run()
	second := b.waitGroup(t, adm, group, "stable", stableWith(t, 1, topic, parts))
	if second.Members[0].MemberID == first.Members[0].MemberID {
		t.Fatal("the restarted static member kept its member id")
	}
	if id := second.Members[0].InstanceID; id == nil || *id != "instance-1" {
		t.Fatalf("instance id %v", id)
	}
	if g := groupGeneration(t, b, group); g != gen {
		t.Fatalf("generation went from %d to %d: the static restart rebalanced", gen, g)
	}
}

// groupGeneration finds the generation of a group of one member: kadm's
// DescribeGroups does not show it, but a Heartbeat from that member answers
// ILLEGAL_GENERATION for every generation but the current one.
func groupGeneration(t testing.TB, b *broker, group string) int32 {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	d := b.describeGroup(t, adm, group)
	if len(d.Members) != 1 {
		t.Fatalf("want one member, have %d", len(d.Members))
	}
	m := d.Members[0]
	for g := int32(1); g < 100; g++ {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID, req.InstanceID = group, g, m.MemberID, m.InstanceID
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		if resp.ErrorCode == 0 {
			return g
		}
		if resp.ErrorCode != kerr.IllegalGeneration.Code {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	t.Fatal("no generation found")
	return 0
}

func TestGroupSilentMemberIsEvicted(t *testing.T) {
	b := startBroker(t, "", groupConfigs...)
	const group = "g-silent"
	cl := b.newClient(t)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = group
	join.SessionTimeoutMillis = 1500
	join.RebalanceTimeoutMillis = 3000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{}).AppendTo(nil)}}
	resp, err := join.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v %v", err, resp)
	}
	join.MemberID = resp.MemberID
	if resp, err = join.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join: %v %v", err, resp)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = group, resp.Generation, resp.MemberID
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: resp.MemberID, MemberAssignment: []byte{}}}
	if sr, err := sync.RequestWith(ctx, cl); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("sync: %v %v", err, sr)
	}
	// The sync made the group Stable with this member. No heartbeats
	// follow: after 1.5 s the member is evicted and the group empties.
	b.waitGroup(t, adm, group, "empty", func(d kadm.DescribedGroup) bool { return d.State == "Empty" && len(d.Members) == 0 })
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = group, resp.Generation, resp.MemberID
	if hr, err := hb.RequestWith(ctx, cl); err != nil || hr.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of the evicted member: %v %v", err, hr)
	}
}

func TestGroupBadInput(t *testing.T) {
	b := startBroker(t, "", groupConfigs...)
	const topic = "bad-input"
	b.createTopic(t, topic, 1, nil)
	cl := b.newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	check := func(t *testing.T, name string, got int16, want *kerr.Error) {
		t.Helper()
		var w int16
		if want != nil {
			w = want.Code
		}
		if got != w {
			t.Errorf("%s: got %v, want %v", name, kerr.ErrorForCode(got), want)
		}
	}

	t.Run("join", func(t *testing.T) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = "bad"
		req.SessionTimeoutMillis = 10
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "short session", resp.ErrorCode, kerr.InvalidSessionTimeout)
		req.SessionTimeoutMillis = 6000
		req.Protocols = nil
		resp, err = req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "no protocols", resp.ErrorCode, kerr.InconsistentGroupProtocol)
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		req.MemberID = "made-up"
		resp, err = req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "unknown member", resp.ErrorCode, kerr.UnknownMemberID)
	})
	t.Run("heartbeat and sync of unknown group", func(t *testing.T) {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = "nope", 1, "m"
		hr, err := hb.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "heartbeat", hr.ErrorCode, kerr.UnknownMemberID)
		sy := kmsg.NewPtrSyncGroupRequest()
		sy.Group, sy.Generation, sy.MemberID = "nope", 1, "m"
		sr, err := sy.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "sync", sr.ErrorCode, kerr.UnknownMemberID)
	})
	t.Run("commit", func(t *testing.T) {
		// Topics by name: OffsetCommit v9 (v10 names them by id).
		v9 := kversion.Stable()
		v9.SetMaxKeyVersion(8, 9)
		cl := b.newClient(t, kgo.MaxVersions(v9))
		big := strings.Repeat("x", 5000)
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = "simple"
		req.Topics = []kmsg.OffsetCommitRequestTopic{
			{Topic: "no-such-topic", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}},
			{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{
				{Partition: 0, Offset: 1, Metadata: &big},
				{Partition: 7, Offset: 1},
				{Partition: 0, Offset: 3},
			}},
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "unknown topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		check(t, "metadata too large", resp.Topics[1].Partitions[0].ErrorCode, kerr.OffsetMetadataTooLarge)
		check(t, "unknown partition", resp.Topics[1].Partitions[1].ErrorCode, kerr.UnknownTopicOrPartition)
		check(t, "simple commit", resp.Topics[1].Partitions[2].ErrorCode, nil)

		req.Generation, req.MemberID = 5, "who"
		req.Topics = req.Topics[1:]
		req.Topics[0].Partitions = req.Topics[0].Partitions[2:]
		resp, err = req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "member of an empty group", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	})
	t.Run("describe and delete unknown", func(t *testing.T) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"never"}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "describe v6", resp.Groups[0].ErrorCode, kerr.GroupIDNotFound)
		del := kmsg.NewPtrDeleteGroupsRequest()
		del.Groups = []string{"never"}
		dr, err := del.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "delete", dr.Groups[0].ErrorCode, kerr.GroupIDNotFound)
	})
	t.Run("internal topic visible", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range resp.Topics {
			if tp.Topic != nil && *tp.Topic == "__consumer_offsets" {
				if !tp.IsInternal || len(tp.Partitions) != 5 {
					t.Fatalf("__consumer_offsets: internal %v, %d partitions", tp.IsInternal, len(tp.Partitions))
				}
				return
			}
		}
		t.Fatal("__consumer_offsets not in Metadata")
	})
}

func TestGroupAdmin(t *testing.T) {
	b := startBroker(t, "", groupConfigs...)
	const topic, group, parts = "admin-groups", "g-admin", int32(2)
	b.createTopic(t, topic, parts, nil)
	adm := kadm.NewClient(b.newClient(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// An admin commit to a group nobody is in (generation -1).
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1, Metadata: "m0"})
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 7, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed[group]; !ok || g.State != "Empty" || g.ProtocolType != "" {
		t.Fatalf("listed %+v", listed)
	}
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup(topic, 0); o.At != 5 || o.Metadata != "m0" {
		t.Fatalf("fetched %+v", o)
	}
	dr, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {1: {}}})
	if err != nil || dr.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, dr.Error())
	}
	fetched, err = adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup(topic, 1); ok {
		t.Fatalf("partition 1 offset still there: %+v", fetched)
	}
	dg, err := adm.DeleteGroup(ctx, group)
	if err != nil || dg.Err != nil {
		t.Fatalf("delete group: %v %v", err, dg.Err)
	}
	listed, err = adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed[group]; ok {
		t.Fatal("deleted group still listed")
	}
	d := b.describeGroup(t, adm, group)
	if !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Fatalf("describe deleted group: %v", d.Err)
	}
}
