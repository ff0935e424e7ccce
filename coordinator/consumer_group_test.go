package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
)

// cgClient is a KIP-848 consumer as the tests drive it: it owns what the
// last answer assigned it (revoked partitions are dropped at once, as a
// client that commits and releases them before its next heartbeat) and
// reports that in every heartbeat.
type cgClient struct {
	e        *env
	group    string
	id       string
	instance *string
	epoch    int32
	owned    partSet
	topics   []string
	regex    *string
	assignor *string
	version  int16
}

func (e *env) newClient(group, id string, topics ...string) *cgClient {
	return &cgClient{e: e, group: group, id: id, topics: topics, owned: partSet{}, version: 1}
}

func (c *cgClient) request() *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = c.version
	r.Group, r.MemberID, r.MemberEpoch, r.InstanceID = c.group, c.id, c.epoch, c.instance
	r.RebalanceTimeoutMillis = int32(rebalance / time.Millisecond)
	if c.regex != nil {
		r.SubscribedTopicRegex = c.regex
	} else {
		r.SubscribedTopicNames = c.topics
	}
	r.ServerAssignor = c.assignor
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if c.epoch != 0 {
		for _, t := range c.owned.byTopic() {
			r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.id, Partitions: t.partitions})
		}
	}
	return r
}

// send sends r and applies a successful answer.
func (c *cgClient) send(r *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	c.e.t.Helper()
	resp := c.e.c.ConsumerGroupHeartbeat(context.Background(), r, ClientInfo{ClientID: "client-" + c.id, ClientHost: "/127.0.0.1"})
	if resp.ErrorCode != 0 {
		return resp
	}
	if resp.MemberID != nil {
		c.id = *resp.MemberID
	}
	c.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		c.owned = partSet{}
		for _, t := range resp.Assignment.Topics {
			for _, p := range t.Partitions {
				c.owned[topicIDPartition{t.TopicID, p}] = struct{}{}
			}
		}
	}
	return resp
}

func (c *cgClient) heartbeat() *kmsg.ConsumerGroupHeartbeatResponse {
	c.e.t.Helper()
	return c.send(c.request())
}

// ok heartbeats and fails the test on an error.
func (c *cgClient) ok() *kmsg.ConsumerGroupHeartbeatResponse {
	c.e.t.Helper()
	r := c.heartbeat()
	if r.ErrorCode != 0 {
		c.e.t.Fatalf("member %s heartbeat: %v %v", c.id, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	return r
}

func (c *cgClient) leave(epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
	r := c.request()
	r.MemberEpoch = epoch
	resp := c.send(r)
	c.owned = partSet{}
	return resp
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (e *env) topic(name string, partitions int32) *partition.Topic {
	e.t.Helper()
	t, err := e.store.CreateTopic(name, partitions, nil, false)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

// disjoint fails if two clients own one partition.
func disjoint(t *testing.T, clients ...*cgClient) {
	t.Helper()
	seen := map[topicIDPartition]string{}
	for _, c := range clients {
		for tp := range c.owned {
			if o, dup := seen[tp]; dup {
				t.Fatalf("partition %d owned by %s and %s", tp.partition, o, c.id)
			}
			seen[tp] = c.id
		}
	}
}

func (e *env) describeCG(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	return e.c.ConsumerGroupDescribe(context.Background(), group, 1)
}

func TestConsumerGroupRevokeBeforeAssign(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("t", 6)
	a := e.newClient("g", "a", "t")
	a.ok()
	if len(a.owned) != 6 || a.epoch != 1 {
		t.Fatalf("first member: epoch %d, %d partitions", a.epoch, len(a.owned))
	}
	b := e.newClient("g", "b", "t")
	b.ok()
	if len(b.owned) != 0 || b.epoch != 2 {
		t.Fatalf("second member before revocation: epoch %d, %d partitions", b.epoch, len(b.owned))
	}
	if s := e.describeCG("g").State; s != "Reconciling" {
		t.Fatalf("state %s, want Reconciling", s)
	}
	// a learns what to give up, still at epoch 1 (UNREVOKED_PARTITIONS).
	old := a.owned.clone()
	r := a.heartbeat()
	if r.ErrorCode != 0 || a.epoch != 1 || len(a.owned) != 3 {
		t.Fatalf("revocation: %v epoch %d owned %d", r.ErrorCode, a.epoch, len(a.owned))
	}
	disjoint(t, a, b)
	// b must wait until a confirmed.
	bb := b.request()
	b.send(bb)
	if len(b.owned) != 0 {
		t.Fatal("partitions given before their owner revoked them")
	}
	_ = old
	a.ok() // a confirms: it owns only 3 now, and moves to epoch 2
	if a.epoch != 2 {
		t.Fatalf("a epoch %d after revoking, want 2", a.epoch)
	}
	b.ok()
	if len(b.owned) != 3 {
		t.Fatalf("b got %d partitions after the revocation, want 3", len(b.owned))
	}
	disjoint(t, a, b)
	d := e.describeCG("g")
	if d.State != "Stable" || d.Epoch != 2 || d.AssignmentEpoch != 2 || len(d.Members) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	if l := e.c.ListGroups(nil, []string{"consumer"}); len(l) != 1 || l[0].State != "Stable" || l[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v", l)
	}
	if l := e.c.ListGroups(nil, []string{"classic"}); len(l) != 0 {
		t.Fatalf("ListGroups classic: %+v", l)
	}
}

func TestConsumerGroupSessionAndRevocationTimeouts(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ConsumerSessionTimeout = 45 * time.Second })
	e.topic("t", 4)
	a := e.newClient("g", "a", "t")
	b := e.newClient("g", "b", "t")
	a.ok()
	b.ok()
	a.ok()
	a.ok()
	b.ok()
	if len(a.owned) != 2 || len(b.owned) != 2 {
		t.Fatalf("owned %d/%d", len(a.owned), len(b.owned))
	}
	// b goes silent; a keeps heartbeating.
	for i := 0; i < 10; i++ {
		e.clk.Advance(5 * time.Second)
		a.ok()
	}
	if d := e.describeCG("g"); len(d.Members) != 1 {
		t.Fatalf("members after b's session expired: %d", len(d.Members))
	}
	a.ok()
	if len(a.owned) != 4 {
		t.Fatalf("a owns %d after b was fenced, want 4", len(a.owned))
	}
	if r := b.heartbeat(); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// A member that never revokes is fenced after its rebalance timeout.
	c := e.newClient("g", "c", "t")
	c.ok()
	r := a.request()
	r.Topics = nil // a never says it released anything
	a.send(r)
	e.clk.Advance(rebalance + time.Second)
	c.ok()
	if d := e.describeCG("g"); len(d.Members) != 1 || d.Members[0].MemberID != "c" {
		t.Fatalf("after revocation timeout: %+v", d.Members)
	}
	c.ok()
	if len(c.owned) != 4 {
		t.Fatalf("c owns %d, want 4", len(c.owned))
	}
}

func TestConsumerGroupFencing(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("t", 2)
	a := e.newClient("g", "a", "t")
	a.ok()
	r := a.request()
	r.MemberEpoch = 5
	expectCode(t, "epoch ahead", a.send(r).ErrorCode, kerr.FencedMemberEpoch)
	// A second member moves a to epoch 2 after revoking one partition.
	b := e.newClient("g", "b", "t")
	b.ok()
	a.ok()
	a.ok()
	if a.epoch != 2 {
		t.Fatalf("a epoch %d", a.epoch)
	}
	// The previous epoch with a subset of the assignment is accepted
	// (the answer with the new epoch was lost).
	r = a.request()
	r.MemberEpoch = 1
	if resp := a.send(r); resp.ErrorCode != 0 || resp.MemberEpoch != 2 {
		t.Fatalf("previous epoch: %v %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	r = a.request()
	r.MemberEpoch = 1
	r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: [16]byte{1}, Partitions: []int32{0}})
	expectCode(t, "previous epoch owning more", a.send(r).ErrorCode, kerr.FencedMemberEpoch)
	u := e.newClient("g", "nobody", "t")
	u.epoch = 3
	expectCode(t, "unknown member", u.heartbeat().ErrorCode, kerr.UnknownMemberID)
	expectCode(t, "leave unknown", u.leave(-1).ErrorCode, kerr.UnknownMemberID)
	// Leaving: the member is gone and its partitions go to b.
	if resp := a.leave(-1); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", resp)
	}
	b.ok()
	if len(b.owned) != 2 {
		t.Fatalf("b owns %d after a left", len(b.owned))
	}
}

// staticAndDynamic makes a group g over a topic t of 4 partitions, with
// a static member a (instance inst) and a dynamic one b, reconciled: a
// owns kept, 2 partitions.
func staticAndDynamic(e *env, inst *string) (a, b *cgClient, kept partSet) {
	e.t.Helper()
	e.topic("t", 4)
	a = e.newClient("g", "a", "t")
	a.instance = inst
	b = e.newClient("g", "b", "t")
	a.ok()
	b.ok()
	a.ok()
	a.ok()
	b.ok()
	kept = a.owned.clone()
	if len(kept) != 2 {
		e.t.Fatalf("a owns %d", len(kept))
	}
	return a, b, kept
}

func TestConsumerGroupStaticMember(t *testing.T) {
	e := newEnv(t, nil)
	inst := "instance-1"
	a, b, kept := staticAndDynamic(e, &inst)
	// The same member rejoining in place (after FENCED_MEMBER_EPOCH, or a
	// lost answer) is given its partitions again.
	a.epoch, a.owned = 0, partSet{}
	a.ok()
	if !a.owned.equal(kept) {
		t.Fatalf("static member rejoining in place got %v, want %v", a.owned.sorted(), kept.sorted())
	}
	// Another process with the same instance id cannot join yet.
	a2 := e.newClient("g", "a2", "t")
	a2.instance = &inst
	expectCode(t, "unreleased", a2.heartbeat().ErrorCode, kerr.UnreleasedInstanceID)
	// a leaves for now (epoch -2): its assignment is kept.
	if r := a.leave(-2); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	b.ok()
	if len(b.owned) != 2 {
		t.Fatalf("b took partitions of a static member that left for now: %d", len(b.owned))
	}
	// It comes back with a new member id and gets the same partitions at
	// once, without a new group epoch.
	epochBefore := e.describeCG("g").Epoch
	a2.ok()
	if !a2.owned.equal(kept) {
		t.Fatalf("rejoined static member got %v, want %v", a2.owned.sorted(), kept.sorted())
	}
	if d := e.describeCG("g"); d.Epoch != epochBefore || len(d.Members) != 2 {
		t.Fatalf("after static rejoin: epoch %d (was %d), %d members", d.Epoch, epochBefore, len(d.Members))
	}
	a.epoch = a2.epoch
	expectCode(t, "old id of the instance", a.heartbeat().ErrorCode, kerr.FencedInstanceID)
	a.instance = nil
	expectCode(t, "old id", a.heartbeat().ErrorCode, kerr.UnknownMemberID)
	// Left for now and not back within the session timeout: removed.
	a2.leave(-2)
	for i := 0; i < 10; i++ {
		e.clk.Advance(5 * time.Second)
		b.ok()
	}
	b.ok()
	if len(b.owned) != 4 {
		t.Fatalf("b owns %d after the static member's session ended", len(b.owned))
	}
}

func TestConsumerGroupRegexSubscription(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("orders-1", 2)
	e.topic("other", 2)
	re := "orders-.*"
	a := e.newClient("g", "a")
	a.regex = &re
	a.ok()
	if len(a.owned) != 2 {
		t.Fatalf("regex member owns %d, want 2", len(a.owned))
	}
	e.topic("orders-2", 3)
	a.ok()
	if len(a.owned) != 2 {
		t.Fatal("regex re-resolved before its refresh interval")
	}
	e.clk.Advance(e.cfg.ConsumerRegexRefreshInterval)
	a.ok()
	if len(a.owned) != 5 {
		t.Fatalf("after refresh: %d partitions, want 5", len(a.owned))
	}
	if err := e.store.DeleteTopic("orders-1"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(e.cfg.ConsumerRegexRefreshInterval)
	a.ok()
	a.ok()
	if len(a.owned) != 3 {
		t.Fatalf("after deleting a matched topic: %d partitions, want 3", len(a.owned))
	}
	bad := "orders-("
	b := e.newClient("g", "b")
	b.regex = &bad
	expectCode(t, "bad regex", b.heartbeat().ErrorCode, kerr.InvalidRegularExpression)
}

func TestConsumerGroupHeartbeatValidation(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ConsumerMaxSize = 1 })
	e.topic("t", 1)
	base := func() *kmsg.ConsumerGroupHeartbeatRequest { return e.newClient("g", "m", "t").request() }
	empty := ""
	unknown := "sticky"
	cases := []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidGroupID},
		{"empty member v1", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"owned on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"empty instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = &empty }, kerr.InvalidRequest},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"epoch below -2", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = &unknown }, kerr.UnsupportedAssignor},
		{"unknown group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 }, kerr.GroupIDNotFound},
	}
	for _, tc := range cases {
		r := base()
		tc.mod(r)
		resp := e.c.ConsumerGroupHeartbeat(context.Background(), r, ClientInfo{})
		expectCode(t, tc.name, resp.ErrorCode, tc.want)
	}
	// v0 makes the member id.
	v0 := e.newClient("g", "", "t")
	v0.version = 0
	v0.ok()
	if v0.id == "" {
		t.Fatal("v0 got no member id")
	}
	// group.consumer.max.size.
	expectCode(t, "full", e.newClient("g", "second", "t").heartbeat().ErrorCode, kerr.GroupMaxSizeReached)
	// A classic group with members whose metadata is not the consumer
	// embedded protocol does not become a consumer group.
	_, ch := e.joinNew("classic", "meta")
	wait(t, ch)
	expectCode(t, "classic group", e.newClient("classic", "m", "t").heartbeat().ErrorCode, kerr.GroupIDNotFound)
	if d := e.describeCG("classic"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe classic: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	// A JoinGroup to a full consumer group (checked first, as Kafka's
	// classicGroupJoinToConsumerGroup).
	r := wait(t, e.join(joinReq(9, "g", "", nil, "meta")))
	expectCode(t, "join consumer group", r.ErrorCode, kerr.GroupMaxSizeReached)
}

func TestConsumerGroupOffsetCommit(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("t", 2)
	a := e.newClient("g", "a", "t")
	a.ok()
	part := []CommitPartition{{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: -1, ExpireTimestamp: -1}}
	commit := func(version int16, epoch int32, member string) int16 {
		return oneCode(t, e.c.CommitOffsets(context.Background(), version, "g", epoch, member, nil, part))
	}
	expectCode(t, "member epoch", commit(9, a.epoch, "a"), nil)
	expectCode(t, "stale epoch", commit(9, a.epoch+1, "a"), kerr.StaleMemberEpoch)
	expectCode(t, "unknown member", commit(9, a.epoch, "x"), kerr.UnknownMemberID)
	expectCode(t, "anonymous while members", commit(9, -1, ""), kerr.UnknownMemberID)
	expectCode(t, "old version", commit(8, a.epoch, "a"), kerr.UnsupportedVersion)
	id, other := "a", "x"
	ctx := context.Background()
	expectCode(t, "fetch as member", e.c.CheckFetchMember(ctx, "g", &id, a.epoch), nil)
	expectCode(t, "fetch stale", e.c.CheckFetchMember(ctx, "g", &id, a.epoch+1), kerr.StaleMemberEpoch)
	expectCode(t, "fetch unknown", e.c.CheckFetchMember(ctx, "g", &other, 1), kerr.UnknownMemberID)
	expectCode(t, "fetch as admin", e.c.CheckFetchMember(ctx, "g", nil, -1), nil)
	// After an epoch bump that kept partition 0 with a, the old epoch
	// still commits it.
	b := e.newClient("g", "b", "t")
	b.ok()
	a.ok()
	a.ok()
	b.ok()
	kept := int32(-1)
	for tp := range a.owned {
		kept = tp.partition
	}
	part[0].Partition = kept
	expectCode(t, "older epoch, partition held since", commit(9, 1, "a"), nil)
	part[0].Partition = 1 - kept
	expectCode(t, "older epoch, partition not held", commit(9, 1, "a"), kerr.StaleMemberEpoch)
	code, codes := e.c.DeleteOffsets(context.Background(), "g", []TopicPartition{{"t", 0}})
	if code != 0 || codes[0] != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("OffsetDelete of a subscribed topic: %v %v", code, codes)
	}
	expectCode(t, "delete non-empty", e.c.DeleteGroup(context.Background(), "g"), kerr.NonEmptyGroup)
	a.leave(-1)
	b.leave(-1)
	expectCode(t, "anonymous when empty", commit(9, -1, ""), nil)
	expectCode(t, "delete empty", e.c.DeleteGroup(context.Background(), "g"), nil)
	if d := e.describeCG("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group described: %+v", d)
	}
}

func TestConsumerGroupSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("t", 4)
	inst := "i"
	a := e.newClient("g", "a", "t")
	a.instance = &inst
	b := e.newClient("g", "b", "t")
	a.ok()
	b.ok()
	a.ok() // a is revoking: UNREVOKED_PARTITIONS survives the restart
	before, _ := json.Marshal(e.describeCG("g"))
	e.restart()
	after, _ := json.Marshal(e.describeCG("g"))
	if string(before) != string(after) {
		t.Fatalf("describe changed across restart:\n%+v\n%+v", before, after)
	}
	a.ok()
	b.ok()
	disjoint(t, a, b)
	if len(a.owned) != 2 || len(b.owned) != 2 || a.epoch != 2 || b.epoch != 2 {
		t.Fatalf("after restart: a %d@%d b %d@%d", len(a.owned), a.epoch, len(b.owned), b.epoch)
	}
	// Once more, stable, and after members left and the group was
	// deleted nothing comes back.
	e.restart()
	a.ok()
	b.ok()
	a.leave(-1)
	b.leave(-1)
	expectCode(t, "delete", e.c.DeleteGroup(context.Background(), "g"), nil)
	e.restart()
	if d := e.describeCG("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group came back: %+v", d)
	}
}

// TestConsumerGroupChurn drives members joining, leaving, crashing and
// heartbeating, and the coordinator restarting, in random order: no
// partition is ever owned by two members, and once the churn stops every
// partition is owned, balanced.
func TestConsumerGroupChurn(t *testing.T) {
	for _, assignor := range []string{UniformAssignor, RangeAssignor} {
		t.Run(assignor, func(t *testing.T) {
			e := newEnv(t, nil)
			e.topic("t1", 7)
			e.topic("t2", 5)
			rng := rand.New(rand.NewSource(churnSeed))
			var live []*cgClient
			next := 0
			name := assignor
			for step := 0; step < 400; step++ {
				switch op := rng.Intn(20); {
				case op == 19:
					// The broker restarts: everything is resumed from
					// __consumer_offsets.
					e.restart()
				case op == 0 || len(live) == 0:
					c := e.newClient("g", fmt.Sprintf("m%d", next), "t1", "t2")
					c.assignor = &name
					next++
					c.ok()
					live = append(live, c)
				case op == 1 && len(live) > 1:
					i := rng.Intn(len(live))
					live[i].leave(-1)
					live = slices.Delete(live, i, i+1)
				case op == 2 && len(live) > 1:
					// A crash: the member stops; its session runs out.
					i := rng.Intn(len(live))
					live = slices.Delete(live, i, i+1)
					for elapsed := time.Duration(0); elapsed <= e.cfg.ConsumerSessionTimeout; elapsed += 5 * time.Second {
						for _, c := range live {
							c.ok()
							disjoint(t, live...)
						}
						e.clk.Advance(5 * time.Second)
					}
				default:
					live[rng.Intn(len(live))].ok()
				}
				disjoint(t, live...)
			}
			for round := 0; round < 5; round++ {
				for _, c := range live {
					c.ok()
					disjoint(t, live...)
				}
			}
			total, lo, hi := 0, 1<<30, 0
			for _, c := range live {
				total += len(c.owned)
				lo, hi = min(lo, len(c.owned)), max(hi, len(c.owned))
			}
			if total != 12 {
				t.Fatalf("%d partitions owned at the end, want 12", total)
			}
			if assignor == UniformAssignor && hi-lo > 1 {
				t.Fatalf("unbalanced: %d..%d over %d members", lo, hi, len(live))
			}
			if d := e.describeCG("g"); d.State != "Stable" || d.AssignorName != assignor {
				t.Fatalf("final state %s assignor %s", d.State, d.AssignorName)
			}
		})
	}
}

func TestConsumerGroupDescribeGroupsAndOffsetExpiry(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OffsetsRetention, c.ConsumerSessionTimeout = time.Hour, 2*time.Hour })
	e.topic("t", 2)
	e.topic("gone", 1)
	a := e.newClient("g", "a", "t")
	a.ok()
	d, found := e.c.DescribeGroup(context.Background(), "g", 5)
	if !found || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "uniform" || len(d.Members) != 1 {
		t.Fatalf("DescribeGroups: %+v", d)
	}
	var asg kmsg.ConsumerMemberAssignment
	if err := asg.ReadFrom(d.Members[0].MemberAssignment); err != nil || len(asg.Topics) != 1 || asg.Topics[0].Topic != "t" || len(asg.Topics[0].Partitions) != 2 {
		t.Fatalf("member assignment %+v (%v)", asg, err)
	}
	// Offsets of a topic nobody subscribes to expire by commit time even
	// while the group has members; the subscribed topic's do not.
	for _, topic := range []string{"t", "gone"} {
		code := oneCode(t, e.c.CommitOffsets(context.Background(), 9, "g", a.epoch, "a", nil,
			[]CommitPartition{{Topic: topic, Partition: 0, Offset: 5, LeaderEpoch: -1, CommitTimestamp: e.c.Now(), ExpireTimestamp: -1}}))
		expectCode(t, "commit "+topic, code, nil)
	}
	for i := 0; i < 13; i++ {
		e.clk.Advance(5 * time.Minute)
		a.ok()
	}
	e.c.ExpireOffsets()
	got, _ := e.c.FetchOffsets(context.Background(), "g", nil)
	if len(got) != 1 || got[0].Topic != "t" {
		t.Fatalf("offsets after expiry: %+v", got)
	}
	// Empty, and its last offset expired: the group goes, records and all.
	a.leave(-1)
	e.clk.Advance(2 * time.Hour)
	e.c.ExpireOffsets()
	if d := e.describeCG("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("expired group: %+v", d)
	}
	e.restart()
	if d := e.describeCG("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("expired group came back: %+v", d)
	}
}

// churnSeed seeds TestConsumerGroupChurn (seeds 1-12 were tried).
const churnSeed = 1

// TestConsumerGroupRegexOnlyDescribableTopics: a regex resolves to the
// topics the heartbeat's principal may DESCRIBE, as Kafka's
// refreshRegularExpressions filters with the triggering request's
// authorization.
func TestConsumerGroupRegexOnlyDescribableTopics(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("orders-open", 2)
	e.topic("orders-secret", 3)
	re := "orders-.*"
	a := e.newClient("g", "a")
	a.regex = &re
	ci := ClientInfo{ClientID: "client-a", ClientHost: "/127.0.0.1", DescribesTopic: func(topic string) bool { return topic != "orders-secret" }}
	resp := e.c.ConsumerGroupHeartbeat(context.Background(), a.request(), ci)
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	a.id, a.epoch = *resp.MemberID, resp.MemberEpoch
	n := 0
	if resp.Assignment != nil {
		for _, tp := range resp.Assignment.Topics {
			n += len(tp.Partitions)
		}
	}
	if n != 2 {
		t.Fatalf("assigned %d partitions, want the 2 of the describable topic", n)
	}
}
