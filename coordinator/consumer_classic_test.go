package coordinator

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicClient is a consumer speaking the classic protocol with the
// consumer embedded protocol (subscription v1, with owned partitions), as
// a cooperative client: it keeps what SyncGroup gave it and reports it in
// its next JoinGroup.
type classicClient struct {
	e     *env
	group string
	id    string
	gen   int32
	topic string
	owned []int32
	inst  *string
}

func (c *classicClient) joinRequest() *kmsg.JoinGroupRequest {
	sub := kmsg.NewConsumerMemberMetadata()
	sub.Version = 1
	sub.Topics = []string{c.topic}
	if len(c.owned) > 0 {
		sub.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: c.topic, Partitions: c.owned}}
	}
	r := joinReq(9, c.group, c.id, c.inst, "")
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "cooperative-sticky", Metadata: sub.AppendTo(nil)}}
	return r
}

// join joins (through MEMBER_ID_REQUIRED when new) and returns the answer.
func (c *classicClient) join() *kmsg.JoinGroupResponse {
	c.e.t.Helper()
	r := wait(c.e.t, c.e.join(c.joinRequest()))
	if r.ErrorCode == kerr.MemberIDRequired.Code {
		c.id = r.MemberID
		r = wait(c.e.t, c.e.join(c.joinRequest()))
	}
	if r.ErrorCode == 0 {
		c.id, c.gen = r.MemberID, r.Generation
	}
	return r
}

// sync syncs (as leader with assign, if given) and keeps the assignment.
func (c *classicClient) sync(assign map[string][]int32) *kmsg.SyncGroupResponse {
	c.e.t.Helper()
	enc := map[string]string{}
	for id, ps := range assign {
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = 1
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: c.topic, Partitions: ps}}
		enc[id] = string(a.AppendTo(nil))
	}
	r := c.e.sync(c.group, c.gen, c.id, enc)
	if r.ErrorCode == 0 {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(r.MemberAssignment); err != nil {
			c.e.t.Fatalf("sync %s: assignment does not decode: %v", c.id, err)
		}
		c.owned = nil
		for _, t := range a.Topics {
			c.owned = append(c.owned, t.Partitions...)
		}
		slices.Sort(c.owned)
	}
	return r
}

// step is one heartbeat of a classic member in a consumer group: told to
// rejoin, it joins and syncs.
func (c *classicClient) step() {
	c.e.t.Helper()
	code := c.e.heartbeat(c.group, c.gen, c.id, nil)
	if code == 0 {
		return
	}
	if code != kerr.RebalanceInProgress.Code {
		c.e.t.Fatalf("classic %s heartbeat: %v", c.id, kerr.ErrorForCode(code))
	}
	if r := c.join(); r.ErrorCode != 0 {
		c.e.t.Fatalf("classic %s rejoin: %v", c.id, kerr.ErrorForCode(r.ErrorCode))
	}
	if r := c.sync(nil); r.ErrorCode != 0 && r.ErrorCode != kerr.RebalanceInProgress.Code {
		c.e.t.Fatalf("classic %s sync: %v", c.id, kerr.ErrorForCode(r.ErrorCode))
	}
}

// noDoubleOwners fails if a partition of topic t is held by two members.
func noDoubleOwners(t *testing.T, tid [16]byte, classic []*classicClient, consumers []*cgClient) int {
	t.Helper()
	seen := map[int32]string{}
	add := func(p int32, who string) {
		if o, dup := seen[p]; dup {
			t.Fatalf("partition %d owned by %s and %s", p, o, who)
		}
		seen[p] = who
	}
	for _, c := range classic {
		for _, p := range c.owned {
			add(p, c.id)
		}
	}
	for _, c := range consumers {
		for tp := range c.owned {
			if tp.id == tid {
				add(tp.partition, c.id)
			}
		}
	}
	return len(seen)
}

// TestConsumerGroupOnlineUpgradeAndDowngrade: a classic group with a
// member becomes a consumer group when a consumer-protocol member joins;
// a second classic member joins the consumer group through JoinGroup; the
// members reconcile (never a partition owned twice) to a Stable group
// covering every partition, which survives a restart; when the consumer
// member leaves, the group is classic again and rebalances.
func TestConsumerGroupOnlineUpgradeAndDowngrade(t *testing.T) {
	e := newEnv(t, nil)
	top := e.topic("t", 4)
	a := &classicClient{e: e, group: "g", topic: "t"}
	if r := a.join(); r.ErrorCode != 0 || r.LeaderID != a.id {
		t.Fatalf("classic join: %+v", r)
	}
	if r := a.sync(map[string][]int32{a.id: {0, 1, 2, 3}}); r.ErrorCode != 0 {
		t.Fatalf("classic sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	classicGen := a.gen

	c := e.newClient("g", "c-member", "t")
	c.ok() // the upgrade
	if d := e.describeCG("g"); d.ErrorCode != 0 || len(d.Members) != 2 {
		t.Fatalf("after the upgrade: %+v", d)
	}
	if c.epoch != classicGen+1 {
		t.Fatalf("consumer member epoch %d, want the classic generation %d + 1", c.epoch, classicGen)
	}
	b := &classicClient{e: e, group: "g", topic: "t"}
	if r := b.join(); r.ErrorCode != 0 || r.LeaderID != "" || r.ProtocolType == nil || *r.ProtocolType != "consumer" {
		t.Fatalf("classic join to the consumer group: %+v", r)
	}
	b.sync(nil)

	classic := []*classicClient{a, b}
	consumers := []*cgClient{c}
	stable := false
	for round := 0; round < 20 && !stable; round++ {
		for _, cl := range classic {
			cl.step()
			noDoubleOwners(t, top.ID, classic, consumers)
		}
		c.ok()
		noDoubleOwners(t, top.ID, classic, consumers)
		stable = e.describeCG("g").State == "Stable"
	}
	if !stable {
		t.Fatalf("group not Stable after 20 rounds: %+v", e.describeCG("g"))
	}
	if n := noDoubleOwners(t, top.ID, classic, consumers); n != 4 {
		t.Fatalf("%d of 4 partitions owned", n)
	}
	for _, m := range e.describeCG("g").Members {
		want := int8(0)
		if m.MemberID == c.id {
			want = 1
		}
		if m.MemberType != want {
			t.Fatalf("member %s type %d, want %d", m.MemberID, m.MemberType, want)
		}
	}
	// A classic member commits with its generation (the member epoch).
	expectCode(t, "classic commit", commit(e, "g", a.gen, a.id, map[string]int64{"t": 5}), nil)
	expectCode(t, "classic commit ahead", commit(e, "g", a.gen+1, a.id, map[string]int64{"t": 5}), kerr.IllegalGeneration)

	e.restart()
	d := e.describeCG("g")
	if d.State != "Stable" || len(d.Members) != 3 {
		t.Fatalf("after restart: %+v", d)
	}
	for _, cl := range classic {
		expectCode(t, "classic heartbeat after restart", e.heartbeat("g", cl.gen, cl.id, nil), nil)
	}

	c.leave(leaveEpoch) // the last consumer-protocol member: downgrade
	if got := e.state("g"); got != "PreparingRebalance" {
		t.Fatalf("after the downgrade the group is %s", got)
	}
	dg, _ := e.c.DescribeGroup(context.Background(), "g", 5)
	if dg.ProtocolType != "consumer" || len(dg.Members) != 2 {
		t.Fatalf("downgraded group: %+v", dg)
	}
	if d := e.describeCG("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe of the classic group: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	for _, cl := range classic {
		expectCode(t, "heartbeat after downgrade", e.heartbeat("g", cl.gen, cl.id, nil), kerr.RebalanceInProgress)
	}
	ch := e.join(a.joinRequest())
	rb := b.join()
	ra := wait(t, ch)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.Generation != rb.Generation {
		t.Fatalf("rejoin after downgrade: %+v %+v", ra, rb)
	}
	a.gen, b.gen = ra.Generation, rb.Generation
	leader, follower := a, b
	if ra.LeaderID == b.id {
		leader, follower = b, a
	}
	fch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { fch <- follower.sync(nil) }()
	expectCode(t, "leader sync", leader.sync(map[string][]int32{leader.id: {0, 1}, follower.id: {2, 3}}).ErrorCode, nil)
	expectCode(t, "follower sync", wait(t, fch).ErrorCode, nil)
	if got := e.state("g"); got != "Stable" {
		t.Fatalf("classic group after the downgrade's rebalance: %s", got)
	}
	e.restart()
	if got := e.state("g"); got != "Stable" {
		t.Fatalf("downgraded group after restart: %s", got)
	}
}

// TestConsumerGroupMigrationPolicy: with the migration disabled, a
// consumer member cannot join a classic group with members, nor a classic
// member a consumer group with members; an upgrade-only policy keeps a
// mixed group a consumer group when its consumer member leaves.
func TestConsumerGroupMigrationPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy           string
		upgrade          bool
		downgradeOnLeave bool
	}{
		{MigrationDisabled, false, false},
		{MigrationDowngrade, false, false},
		{MigrationUpgrade, true, false},
		{MigrationBidirectional, true, true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.ConsumerMigrationPolicy = tc.policy })
			e.topic("t", 2)
			a := &classicClient{e: e, group: "g", topic: "t"}
			a.join()
			a.sync(map[string][]int32{a.id: {0, 1}})
			c := e.newClient("g", "c-member", "t")
			r := c.heartbeat()
			if !tc.upgrade {
				expectCode(t, "consumer joins classic group", r.ErrorCode, kerr.GroupIDNotFound)
				return
			}
			expectCode(t, "consumer joins classic group", r.ErrorCode, nil)
			c.leave(leaveEpoch)
			if got := e.describeCG("g").ErrorCode == 0; got == tc.downgradeOnLeave {
				t.Fatalf("consumer group after the consumer member left: %v, want downgraded %v", got, tc.downgradeOnLeave)
			}
		})
	}
	e := newEnv(t, func(c *Config) { c.ConsumerMigrationPolicy = MigrationDisabled })
	e.topic("t", 2)
	c := e.newClient("g", "c-member", "t")
	c.ok()
	b := &classicClient{e: e, group: "g", topic: "t"}
	expectCode(t, "classic joins consumer group, migration disabled", b.join().ErrorCode, kerr.InconsistentGroupProtocol)
}

// TestConsumerGroupClassicMemberTimeouts: a classic member told to rejoin
// that does not is fenced after its rebalance timeout, and one that does
// not heartbeat after its session timeout.
func TestConsumerGroupClassicMemberTimeouts(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("t", 2)
	c := e.newClient("g", "c-member", "t")
	c.ok()
	b := &classicClient{e: e, group: "g", topic: "t"}
	if r := b.join(); r.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	b.sync(nil)
	// No sync after a join for longer than the rebalance timeout: fenced.
	b.join()
	// A request through the group's goroutine after the join: it arms
	// the group's timer (at the top of its loop) before serving this, so
	// the deadline exists before the clock moves.
	e.describeCG("g")
	e.clk.Advance(rebalance + 1)
	expectCode(t, "heartbeat after the sync timeout", e.heartbeat("g", b.gen, b.id, nil), kerr.UnknownMemberID)

	b = &classicClient{e: e, group: "g", topic: "t"}
	b.join()
	b.sync(nil)
	e.describeCG("g") // the timer armed first, as above
	e.clk.Advance(session + 1)
	c.ok()
	expectCode(t, "heartbeat after the session timeout", e.heartbeat("g", b.gen, b.id, nil), kerr.UnknownMemberID)
}

// TestConsumerProtocolDisabled: group.coordinator.rebalance.protocols
// without "consumer" answers ConsumerGroupHeartbeat and
// ConsumerGroupDescribe with UNSUPPORTED_VERSION, as Kafka's KafkaApis.
func TestConsumerProtocolDisabled(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.DisableConsumerProtocol = true })
	e.topic("t", 1)
	expectCode(t, "heartbeat", e.newClient("g", "m", "t").heartbeat().ErrorCode, kerr.UnsupportedVersion)
	expectCode(t, "describe", e.describeCG("g").ErrorCode, kerr.UnsupportedVersion)
}

// TestConsumerGroupDowngradeByStaticReplacement: a classic static member
// taking the place of the last consumer-protocol member (same instance
// id) turns the group classic at once, holding that member's assignment,
// without a rebalance (Kafka's validateOnlineDowngradeWithReplacedMemberId).
func TestConsumerGroupDowngradeByStaticReplacement(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("t", 4)
	a := &classicClient{e: e, group: "g", topic: "t"}
	a.join()
	a.sync(map[string][]int32{a.id: {0, 1, 2, 3}})
	inst := "instance-1"
	c := e.newClient("g", "c-member", "t")
	c.instance = &inst
	c.ok()
	// Reconcile until Stable (bounded).
	for round := 0; round < 20 && e.describeCG("g").State != "Stable"; round++ {
		a.step()
		c.ok()
	}
	var cTarget int
	for _, m := range e.describeCG("g").Members {
		if m.MemberID == c.id {
			for _, tp := range m.Assignment.TopicPartitions {
				cTarget += len(tp.Partitions)
			}
		}
	}
	if cTarget == 0 {
		t.Fatalf("consumer member holds nothing: %+v", e.describeCG("g"))
	}
	b := &classicClient{e: e, group: "g", topic: "t", inst: &inst}
	r := b.join()
	if r.ErrorCode != 0 {
		t.Fatalf("static classic join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if got := e.state("g"); got != "Stable" {
		t.Fatalf("after the replacement the group is %s, want a Stable classic group", got)
	}
	if s := b.sync(nil); s.ErrorCode != 0 || len(b.owned) != cTarget {
		t.Fatalf("sync of the replacing member: %v, owns %v, want the %d partitions of the replaced one", kerr.ErrorForCode(s.ErrorCode), b.owned, cTarget)
	}
	expectCode(t, "old consumer member", c.heartbeat().ErrorCode, kerr.GroupIDNotFound)
}
