package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/partition"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// env is a coordinator over a real store in a temp dir, on a manual clock.
type env struct {
	t     *testing.T
	dir   string
	clk   *clock.Manual
	store *partition.Store
	c     *Coordinator
	cfg   Config
	fs    vfs.FS // nil: the OS's, in dir
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: clock.NewManual(epoch)}
	e.cfg = DefaultConfig()
	e.cfg.InitialRebalanceDelay = 0
	e.cfg.StreamsInitialRebalanceDelay = 0
	e.cfg.OffsetsTopicPartitions = 3
	e.cfg.OffsetsRetentionCheckInterval = 1000 * time.Hour // tests call ExpireOffsets
	if mod != nil {
		mod(&e.cfg)
	}
	e.open()
	return e
}

func (e *env) open() {
	e.t.Helper()
	st, err := partition.Open(partition.Config{Dir: e.dir, FS: e.fs, Clock: e.clk, Logger: zerolog.New(zerolog.NewTestWriter(e.t))})
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Clock = e.clk
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.InfoLevel)
	c, err := New(cfg, st)
	if err != nil {
		e.t.Fatal(err)
	}
	e.store, e.c = st, c
	e.t.Cleanup(e.close)
}

func (e *env) close() {
	if e.c != nil {
		e.c.Close()
		e.store.Close()
		e.c = nil
	}
}

func (e *env) restart() {
	e.close()
	e.open()
}

const (
	session   = 10 * time.Second
	rebalance = 20 * time.Second
)

func joinReq(version int16, group, memberID string, instance *string, meta string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group = group
	r.MemberID = memberID
	r.InstanceID = instance
	r.SessionTimeoutMillis = int32(session / time.Millisecond)
	r.RebalanceTimeoutMillis = int32(rebalance / time.Millisecond)
	r.ProtocolType = "consumer"
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte(meta)}}
	return r
}

// join hands a JoinGroup to its group (it returns once the group has
// handled it) and returns where its answer will arrive.
func (e *env) join(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch, g, r := e.c.startJoin(context.Background(), req, ClientInfo{ClientID: "c", ClientHost: "/127.0.0.1"})
	out := make(chan *kmsg.JoinGroupResponse, 1)
	if r != nil {
		out <- r
		return out
	}
	go func() {
		out <- await(context.Background(), ch, g, func() *kmsg.JoinGroupResponse { return nil })
	}()
	return out
}

func wait[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		panic("unreachable")
	}
}

// notYet checks that ch has no answer once the group has handled
// everything sent so far (a describe is a round trip through its goroutine).
func (e *env) notYet(t *testing.T, group string, ch <-chan *kmsg.JoinGroupResponse) {
	t.Helper()
	e.c.DescribeGroup(context.Background(), group, 5)
	select {
	case r := <-ch:
		t.Fatalf("unexpected answer: %+v", r)
	default:
	}
}

// joinNew joins a dynamic member through MEMBER_ID_REQUIRED and returns
// the channel of its second join.
func (e *env) joinNew(group, meta string) (string, <-chan *kmsg.JoinGroupResponse) {
	e.t.Helper()
	r := wait(e.t, e.join(joinReq(9, group, "", nil, meta)))
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		e.t.Fatalf("first join: %+v", r)
	}
	return r.MemberID, e.join(joinReq(9, group, r.MemberID, nil, meta))
}

func (e *env) sync(group string, gen int32, member string, assign map[string]string) *kmsg.SyncGroupResponse {
	e.t.Helper()
	return wait(e.t, e.syncAsync(group, gen, member, assign))
}

// syncReq is a v5 SyncGroup; assign is the leader's assignment.
func syncReq(group string, gen int32, member string, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.Generation, r.MemberID = group, gen, member
	for m, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	return r
}

func (e *env) syncAsync(group string, gen int32, member string, assign map[string]string) <-chan *kmsg.SyncGroupResponse {
	ch, g, resp := e.c.startSync(context.Background(), syncReq(group, gen, member, assign))
	out := make(chan *kmsg.SyncGroupResponse, 1)
	if resp != nil {
		out <- resp
		return out
	}
	go func() {
		out <- await(context.Background(), ch, g, func() *kmsg.SyncGroupResponse { return nil })
	}()
	return out
}

func (e *env) heartbeat(group string, gen int32, member string, instance *string) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.Generation, r.MemberID, r.InstanceID = group, gen, member, instance
	return e.c.Heartbeat(context.Background(), r)
}

func (e *env) state(group string) string {
	d, _ := e.c.DescribeGroup(context.Background(), group, 5)
	return d.State
}

func expectCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var wantCode int16
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		id   string
		n    int32
		want int32
	}{
		{"hello", 50, 99162322 % 50},     // "hello".hashCode() = 99162322
		{"polygenelubricants", 50, 0},    // hashCode is Integer.MIN_VALUE; Utils.abs gives 0
		{"", 50, 0},                      // hashCode 0
		{"Aa", 7, 2112 % 7},              // "Aa" and "BB" collide: 2112
		{"BB", 7, 2112 % 7},              //
		{"\U0001F600", 50, 1772899 % 50}, // surrogate pair D83D DE00: 55357*31+56832
	} {
		if got := PartitionFor(tc.id, tc.n); got != tc.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tc.id, tc.n, got, tc.want)
		}
	}
}

func TestJoinSyncSingleMember(t *testing.T) {
	e := newEnv(t, nil)
	id, ch := e.joinNew("g", "m1")
	r := wait(t, ch)
	expectCode(t, "join", r.ErrorCode, nil)
	if r.Generation != 1 || r.LeaderID != id || r.MemberID != id || len(r.Members) != 1 || *r.Protocol != "range" {
		t.Fatalf("join response: %+v", r)
	}
	if string(r.Members[0].ProtocolMetadata) != "m1" {
		t.Fatalf("leader got metadata %q", r.Members[0].ProtocolMetadata)
	}
	if s := e.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state %s", s)
	}
	expectCode(t, "heartbeat while completing", e.heartbeat("g", 1, id, nil), nil)
	sr := e.sync("g", 1, id, map[string]string{id: "a1"})
	expectCode(t, "sync", sr.ErrorCode, nil)
	if string(sr.MemberAssignment) != "a1" {
		t.Fatalf("assignment %q", sr.MemberAssignment)
	}
	if s := e.state("g"); s != "Stable" {
		t.Fatalf("state %s", s)
	}
	expectCode(t, "heartbeat", e.heartbeat("g", 1, id, nil), nil)
	expectCode(t, "heartbeat old generation", e.heartbeat("g", 0, id, nil), kerr.IllegalGeneration)
	expectCode(t, "heartbeat unknown member", e.heartbeat("g", 1, "nobody", nil), kerr.UnknownMemberID)
	expectCode(t, "heartbeat unknown group", e.heartbeat("other", 1, id, nil), kerr.UnknownMemberID)
	expectCode(t, "sync old generation", e.sync("g", 0, id, nil).ErrorCode, kerr.IllegalGeneration)
}

func TestJoinBadInput(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name string
		mod  func(*kmsg.JoinGroupRequest)
		want *kerr.Error
	}{
		{"empty group id", func(r *kmsg.JoinGroupRequest) { r.Group = "" }, kerr.InvalidGroupID},
		{"session too short", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 10 }, kerr.InvalidSessionTimeout},
		{"session too long", func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 1 << 30 }, kerr.InvalidSessionTimeout},
		{"no protocols", func(r *kmsg.JoinGroupRequest) { r.Protocols = nil }, kerr.InconsistentGroupProtocol},
		{"no protocol type", func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "" }, kerr.InconsistentGroupProtocol},
		{"unknown member of unknown group", func(r *kmsg.JoinGroupRequest) { r.MemberID = "x" }, kerr.UnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := joinReq(9, "g", "", nil, "m")
			tc.mod(req)
			expectCode(t, tc.name, wait(t, e.join(req)).ErrorCode, tc.want)
		})
	}

	// A member with a protocol the group does not speak.
	_, ch := e.joinNew("g2", "m")
	wait(t, ch)
	req := joinReq(9, "g2", "", nil, "m")
	req.Protocols[0].Name = "other"
	expectCode(t, "no common protocol", wait(t, e.join(req)).ErrorCode, kerr.InconsistentGroupProtocol)
	req = joinReq(9, "g2", "", nil, "m")
	req.ProtocolType = "connect"
	expectCode(t, "other protocol type", wait(t, e.join(req)).ErrorCode, kerr.InconsistentGroupProtocol)
}

// stableGroup makes a stable group of n dynamic members.
func (e *env) stableGroup(group string, n int) ([]string, int32) {
	e.t.Helper()
	var ids []string
	var chans []<-chan *kmsg.JoinGroupResponse
	for i := 0; i < n; i++ {
		id, ch := e.joinNew(group, "m")
		ids = append(ids, id)
		chans = append(chans, ch)
		if i == 0 {
			// With no initial delay the first member completes
			// alone; the others then rebalance with it.
			wait(e.t, chans[0])
			chans = chans[:0]
			continue
		}
	}
	if n == 1 {
		gen := int32(1)
		e.sync(group, gen, ids[0], map[string]string{ids[0]: "a"})
		return ids, gen
	}
	// Member 0 is in CompletingRebalance of generation 1; the joins of the
	// others moved the group to PreparingRebalance: member 0 rejoins.
	chans = append(chans, e.join(joinReq(9, group, ids[0], nil, "m")))
	var gen int32
	var leader string
	for _, ch := range chans {
		r := wait(e.t, ch)
		if r.ErrorCode != 0 {
			e.t.Fatalf("join: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		gen, leader = r.Generation, r.LeaderID
	}
	assign := map[string]string{}
	for _, id := range ids {
		assign[id] = "a-" + id
	}
	var syncs []<-chan *kmsg.SyncGroupResponse
	for _, id := range ids {
		if id != leader {
			syncs = append(syncs, e.syncAsync(group, gen, id, nil))
		}
	}
	expectCode(e.t, "leader sync", e.sync(group, gen, leader, assign).ErrorCode, nil)
	for _, ch := range syncs {
		expectCode(e.t, "follower sync", wait(e.t, ch).ErrorCode, nil)
	}
	return ids, gen
}

func TestRebalanceWhenMemberJoinsAndLeaves(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2)
	if s := e.state("g"); s != "Stable" {
		t.Fatalf("state %s", s)
	}
	// A third member joins: the others learn it from their heartbeat.
	id3, ch3 := e.joinNew("g", "m")
	e.notYet(t, "g", ch3)
	expectCode(t, "heartbeat during rebalance", e.heartbeat("g", gen, ids[0], nil), kerr.RebalanceInProgress)
	c0 := e.join(joinReq(9, "g", ids[0], nil, "m"))
	e.notYet(t, "g", c0)
	c1 := e.join(joinReq(9, "g", ids[1], nil, "m"))
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{c0, c1, ch3} {
		r := wait(t, ch)
		expectCode(t, "rejoin", r.ErrorCode, nil)
		if r.Generation != gen+1 {
			t.Fatalf("generation %d, want %d", r.Generation, gen+1)
		}
	}
	_ = id3
	// One leaves: the group rebalances again.
	code, codes := e.c.LeaveGroup(context.Background(), "g", []kmsg.LeaveGroupRequestMember{{MemberID: ids[1]}, {MemberID: "nobody"}})
	expectCode(t, "leave", code, nil)
	expectCode(t, "leave member", codes[0], nil)
	expectCode(t, "leave unknown member", codes[1], kerr.UnknownMemberID)
	if s := e.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state after leave %s", s)
	}
}

func TestRebalanceTimeoutRemovesMembers(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2)
	_, ch3 := e.joinNew("g", "m")
	c0 := e.join(joinReq(9, "g", ids[0], nil, "m"))
	e.notYet(t, "g", c0)
	// ids[1] keeps heartbeating within its session but never rejoins.
	for elapsed := time.Duration(0); elapsed < rebalance-time.Second; elapsed += 5 * time.Second {
		expectCode(t, "heartbeat", e.heartbeat("g", gen, ids[1], nil), kerr.RebalanceInProgress)
		e.clk.WaitForTimers(2) // the group's timer and the expiry loop's
		e.clk.Advance(5 * time.Second)
	}
	r0, r3 := wait(t, c0), wait(t, ch3)
	if r0.Generation != gen+1 || r3.Generation != gen+1 {
		t.Fatalf("generations %d %d", r0.Generation, r3.Generation)
	}
	leader := r0
	if r3.LeaderID == r3.MemberID {
		leader = r3
	}
	if len(leader.Members) != 2 {
		t.Fatalf("leader sees %d members, want 2", len(leader.Members))
	}
	expectCode(t, "removed member heartbeat", e.heartbeat("g", gen+1, ids[1], nil), kerr.UnknownMemberID)
}

func TestSessionTimeoutEvicts(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2)
	// ids[0] heartbeats halfway; ids[1] never again.
	e.clk.WaitForTimers(2)
	e.clk.Advance(session / 2)
	expectCode(t, "heartbeat", e.heartbeat("g", gen, ids[0], nil), nil)
	e.clk.WaitForTimers(2)
	e.clk.Advance(session / 2)
	if s := e.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	expectCode(t, "evicted heartbeat", e.heartbeat("g", gen, ids[1], nil), kerr.UnknownMemberID)
	r := wait(t, e.join(joinReq(9, "g", ids[0], nil, "m")))
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("after eviction: %+v", r)
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	_, c1 := e.joinNew("g", "m")
	e.notYet(t, "g", c1)
	e.clk.WaitForTimers(2)
	e.clk.Advance(2 * time.Second)
	_, c2 := e.joinNew("g", "m")
	e.clk.Advance(time.Second) // the first delay ends; a member arrived, so it waits again
	e.notYet(t, "g", c1)
	e.clk.WaitForTimers(2)
	e.clk.Advance(3 * time.Second)
	r1, r2 := wait(t, c1), wait(t, c2)
	if r1.Generation != 1 || r2.Generation != 1 {
		t.Fatalf("generations %d %d", r1.Generation, r2.Generation)
	}
}

func TestStaticMemberRestartWithoutRebalance(t *testing.T) {
	e := newEnv(t, nil)
	inst := "instance-1"
	r := wait(t, e.join(joinReq(9, "g", "", &inst, "m")))
	expectCode(t, "static join", r.ErrorCode, nil) // static members skip MEMBER_ID_REQUIRED
	old := r.MemberID
	expectCode(t, "sync", e.sync("g", r.Generation, old, map[string]string{old: "a"}).ErrorCode, nil)

	// A restart: same instance id, no member id.
	r2 := wait(t, e.join(joinReq(9, "g", "", &inst, "m")))
	expectCode(t, "rejoin", r2.ErrorCode, nil)
	if r2.MemberID == old || r2.Generation != r.Generation || !r2.SkipAssignment {
		t.Fatalf("static rejoin: %+v", r2)
	}
	if s := e.state("g"); s != "Stable" {
		t.Fatalf("state %s", s)
	}
	expectCode(t, "old id fenced", e.heartbeat("g", r.Generation, old, &inst), kerr.FencedInstanceID)
	expectCode(t, "new id", e.heartbeat("g", r.Generation, r2.MemberID, &inst), nil)
	sr := e.sync("g", r.Generation, r2.MemberID, nil)
	if string(sr.MemberAssignment) != "a" {
		t.Fatalf("assignment after restart %q", sr.MemberAssignment)
	}
}

func TestStaticLeaderBeforeV9Rebalances(t *testing.T) {
	e := newEnv(t, nil)
	inst := "i"
	r := wait(t, e.join(joinReq(5, "g", "", &inst, "m")))
	e.sync("g", r.Generation, r.MemberID, map[string]string{r.MemberID: "a"})
	r2 := wait(t, e.join(joinReq(5, "g", "", &inst, "m")))
	if r2.Generation != r.Generation+1 {
		t.Fatalf("generation %d, want a rebalance to %d", r2.Generation, r.Generation+1)
	}
}

func TestJoinV3NoMemberIDRequired(t *testing.T) {
	e := newEnv(t, nil)
	r := wait(t, e.join(joinReq(3, "g", "", nil, "m")))
	expectCode(t, "join v3", r.ErrorCode, nil)
	if r.MemberID == "" || r.Generation != 1 {
		t.Fatalf("%+v", r)
	}
}

func commit(e *env, group string, gen int32, member string, offsets map[string]int64) int16 {
	var parts []CommitPartition
	for topic, o := range offsets {
		parts = append(parts, CommitPartition{Topic: topic, Partition: 0, Offset: o, LeaderEpoch: -1, Metadata: "meta", CommitTimestamp: e.c.Now(), ExpireTimestamp: -1})
	}
	return oneCode(e.t, e.c.CommitOffsets(context.Background(), 8, group, gen, member, nil, parts))
}

// oneCode is the code every partition of a commit got.
func oneCode(t *testing.T, codes []int16) int16 {
	t.Helper()
	for _, c := range codes[1:] {
		if c != codes[0] {
			t.Fatalf("partitions got different codes %v", codes)
		}
	}
	return codes[0]
}

func fetch(e *env, group string) map[string]int64 {
	out := map[string]int64{}
	os, _ := e.c.FetchOffsets(context.Background(), group, nil)
	for _, o := range os {
		out[o.Topic] = o.Offset
	}
	return out
}

func TestCommitValidation(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "simple commit", commit(e, "simple", -1, "", map[string]int64{"t": 5}), nil)
	expectCode(t, "member commit to unknown group", commit(e, "nogroup", 3, "m", map[string]int64{"t": 5}), kerr.IllegalGeneration)
	parts := []CommitPartition{{Topic: "t", Offset: 1, LeaderEpoch: -1, ExpireTimestamp: -1}}
	expectCode(t, "v9 member commit to unknown group", oneCode(t, e.c.CommitOffsets(context.Background(), 9, "nogroup", 3, "m", nil, parts)), kerr.GroupIDNotFound)

	ids, gen := e.stableGroup("g", 1)
	expectCode(t, "member commit", commit(e, "g", gen, ids[0], map[string]int64{"t": 7}), nil)
	expectCode(t, "stale generation", commit(e, "g", gen-1, ids[0], map[string]int64{"t": 7}), kerr.IllegalGeneration)
	expectCode(t, "unknown member", commit(e, "g", gen, "x", map[string]int64{"t": 7}), kerr.UnknownMemberID)
	expectCode(t, "simple commit to active group", commit(e, "g", -1, "", map[string]int64{"t": 7}), kerr.UnknownMemberID)
	if got := fetch(e, "g")["t"]; got != 7 {
		t.Fatalf("fetched %d", got)
	}
	// During CompletingRebalance commits are refused.
	_, ch := e.joinNew("g", "m")
	r0 := wait(t, e.join(joinReq(9, "g", ids[0], nil, "m")))
	wait(t, ch)
	expectCode(t, "commit while completing", commit(e, "g", r0.Generation, ids[0], map[string]int64{"t": 8}), kerr.RebalanceInProgress)
}

func TestOffsetsAndGroupsSurviveRestart(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "simple commit", commit(e, "simple", -1, "", map[string]int64{"a": 1, "b": 2}), nil)
	ids, gen := e.stableGroup("g", 1)
	expectCode(t, "commit", commit(e, "g", gen, ids[0], map[string]int64{"t": 42}), nil)
	expectCode(t, "commit again", commit(e, "g", gen, ids[0], map[string]int64{"t": 43}), nil)
	expectCode(t, "delete", e.c.DeleteGroup(context.Background(), "simple"), nil)
	expectCode(t, "simple commit", commit(e, "simple2", -1, "", map[string]int64{"x": 9}), nil)

	e.restart()
	if got := fetch(e, "g"); got["t"] != 43 || len(got) != 1 {
		t.Fatalf("g offsets after restart: %v", got)
	}
	if got := fetch(e, "simple"); len(got) != 0 {
		t.Fatalf("deleted group has offsets after restart: %v", got)
	}
	if got := fetch(e, "simple2"); got["x"] != 9 {
		t.Fatalf("simple2 offsets after restart: %v", got)
	}
	d, found := e.c.DescribeGroup(context.Background(), "g", 5)
	if !found || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != ids[0] || string(d.Members[0].MemberAssignment) != "a" {
		t.Fatalf("group after restart: %+v", d)
	}
	// The member resumes: its generation is still valid.
	expectCode(t, "heartbeat after restart", e.heartbeat("g", gen, ids[0], nil), nil)
}

func TestOffsetExpiry(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OffsetsRetention = time.Hour })
	expectCode(t, "simple commit", commit(e, "simple", -1, "", map[string]int64{"a": 1}), nil)
	e.clk.Advance(30 * time.Minute)
	expectCode(t, "simple commit", commit(e, "simple", -1, "", map[string]int64{"b": 1}), nil)
	e.clk.Advance(31 * time.Minute)
	e.c.ExpireOffsets()
	if got := fetch(e, "simple"); len(got) != 1 || got["b"] != 1 {
		t.Fatalf("after first expiry: %v", got)
	}
	e.clk.Advance(time.Hour)
	e.c.ExpireOffsets()
	if l := e.c.ListGroups(nil, nil); len(l) != 0 {
		t.Fatalf("empty group without offsets still listed: %v", l)
	}
	e.restart()
	if got := fetch(e, "simple"); len(got) != 0 {
		t.Fatalf("expired offsets back after restart: %v", got)
	}
}

func TestDeleteGroupAndOffsetDelete(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "unknown", e.c.DeleteGroup(context.Background(), "nope"), kerr.GroupIDNotFound)
	ids, gen := e.stableGroup("g", 1)
	expectCode(t, "commit", commit(e, "g", gen, ids[0], map[string]int64{"t": 1, "u": 2}), nil)
	expectCode(t, "non-empty", e.c.DeleteGroup(context.Background(), "g"), kerr.NonEmptyGroup)
	code, _ := e.c.DeleteOffsets(context.Background(), "g", []TopicPartition{{"t", 0}})
	expectCode(t, "offset delete on non-consumer-metadata group", code, nil)
	e.c.LeaveGroup(context.Background(), "g", []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}})
	if s := e.state("g"); s != "Empty" {
		t.Fatalf("state after the last member left: %s", s)
	}
	if got := fetch(e, "g"); len(got) != 1 {
		t.Fatalf("offsets %v", got)
	}
	expectCode(t, "delete", e.c.DeleteGroup(context.Background(), "g"), nil)
	if d, found := e.c.DescribeGroup(context.Background(), "g", 5); found || d.State != "Dead" {
		t.Fatalf("describe deleted: %+v", d)
	}
}

func TestListGroupsFilters(t *testing.T) {
	e := newEnv(t, nil)
	e.stableGroup("a", 1)
	commit(e, "b", -1, "", map[string]int64{"t": 1})
	all := e.c.ListGroups(nil, nil)
	if len(all) != 2 || all[0].State != "Stable" || all[0].ProtocolType != "consumer" || all[1].State != "Empty" || all[1].ProtocolType != "" {
		t.Fatalf("list: %+v", all)
	}
	if l := e.c.ListGroups([]string{"stable"}, nil); len(l) != 1 || l[0].Group != "a" {
		t.Fatalf("state filter: %+v", l)
	}
	if l := e.c.ListGroups(nil, []string{"consumer"}); len(l) != 0 {
		t.Fatalf("type filter consumer: %+v", l)
	}
	if l := e.c.ListGroups(nil, []string{"Classic"}); len(l) != 2 {
		t.Fatalf("type filter classic: %+v", l)
	}
}

func TestSyncTimeoutRemovesMembers(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 2)
	id3, ch3 := e.joinNew("g", "m")
	c0 := e.join(joinReq(9, "g", ids[0], nil, "m"))
	c1 := e.join(joinReq(9, "g", ids[1], nil, "m"))
	wait(t, ch3)
	r0 := wait(t, c0)
	wait(t, c1)
	if r0.Generation != gen+1 {
		t.Fatal("no new generation")
	}
	// Everyone heartbeats but nobody syncs: after the rebalance timeout
	// they are all removed (KAFKA-13134).
	for elapsed := time.Duration(0); elapsed < rebalance; elapsed += 5 * time.Second {
		for _, id := range []string{ids[0], ids[1], id3} {
			expectCode(t, "heartbeat", e.heartbeat("g", gen+1, id, nil), nil)
		}
		e.clk.WaitForTimers(2)
		e.clk.Advance(5 * time.Second)
	}
	if s := e.state("g"); s != "Empty" {
		t.Fatalf("state %s", s)
	}
}

func TestTopicDeletedDropsOffsets(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "commit", commit(e, "g", -1, "", map[string]int64{"gone": 1, "kept": 2}), nil)
	e.c.TopicDeleted(context.Background(), "gone")
	if got := fetch(e, "g"); len(got) != 1 || got["kept"] != 2 {
		t.Fatalf("offsets after topic deletion: %v", got)
	}
	e.restart()
	if got := fetch(e, "g"); len(got) != 1 || got["kept"] != 2 {
		t.Fatalf("offsets after restart: %v", got)
	}
}

func TestStaticReplacedWhileRebalancingFencesOldJoin(t *testing.T) {
	e := newEnv(t, nil)
	inst := "i"
	r := wait(t, e.join(joinReq(9, "g", "", &inst, "m")))
	e.sync("g", r.Generation, r.MemberID, map[string]string{r.MemberID: "a"})
	// A dynamic member joins and the static one rejoins: generation 2.
	id2, ch2 := e.joinNew("g", "m")
	r1 := wait(t, e.join(joinReq(9, "g", r.MemberID, &inst, "m")))
	if wait(t, ch2).Generation != 2 || r1.Generation != 2 {
		t.Fatal("no generation 2")
	}
	// A third member joins; the static member rejoins with its old id and
	// waits for the second; then its restarted self joins with no id.
	_, ch3 := e.joinNew("g", "m")
	old := e.join(joinReq(9, "g", r.MemberID, &inst, "m"))
	e.notYet(t, "g", old)
	fresh := e.join(joinReq(9, "g", "", &inst, "m"))
	expectCode(t, "old join", wait(t, old).ErrorCode, kerr.FencedInstanceID)
	c2 := e.join(joinReq(9, "g", id2, nil, "m"))
	rf := wait(t, fresh)
	expectCode(t, "fresh join", rf.ErrorCode, nil)
	if rf.Generation != 3 || rf.MemberID == r.MemberID || wait(t, c2).Generation != 3 || wait(t, ch3).Generation != 3 {
		t.Fatalf("fresh %+v", rf)
	}
	expectCode(t, "old id heartbeat", e.heartbeat("g", 3, r.MemberID, &inst), kerr.FencedInstanceID)
}

func TestPendingMemberExpires(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 1)
	// A member id handed out with MEMBER_ID_REQUIRED but never used.
	r := wait(t, e.join(joinReq(9, "g", "", nil, "m")))
	expectCode(t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	// The existing member rejoins with new metadata: the join phase
	// waits for the pending id until it expires (a session timeout).
	c0 := e.join(joinReq(9, "g", ids[0], nil, "changed"))
	e.notYet(t, "g", c0)
	e.clk.WaitForTimers(2)
	e.clk.Advance(session)
	r0 := wait(t, c0)
	if r0.Generation != gen+1 || len(r0.Members) != 1 {
		t.Fatalf("rejoin %+v", r0)
	}
	expectCode(t, "expired pending id", wait(t, e.join(joinReq(9, "g", r.MemberID, nil, "m"))).ErrorCode, kerr.UnknownMemberID)
}
