package coordinator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// slowJoin is a join of a member with a long session and rebalance
// timeout (Kafka Streams style), so a join phase it starts outlasts
// newMemberJoinTimeout.
func slowJoin(r *kmsg.JoinGroupRequest) *kmsg.JoinGroupRequest {
	r.SessionTimeoutMillis = int32((8 * time.Minute) / time.Millisecond)
	r.RebalanceTimeoutMillis = int32((10 * time.Minute) / time.Millisecond)
	return r
}

// slowStableGroup is a Stable group of one slowJoin member.
func (e *env) slowStableGroup(group string) (string, int32) {
	e.t.Helper()
	r := wait(e.t, e.join(slowJoin(joinReq(9, group, "", nil, "m"))))
	expectCode(e.t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	r = wait(e.t, e.join(slowJoin(joinReq(9, group, r.MemberID, nil, "m"))))
	expectCode(e.t, "join", r.ErrorCode, nil)
	expectCode(e.t, "sync", e.sync(group, r.Generation, r.MemberID, map[string]string{r.MemberID: "a"}).ErrorCode, nil)
	return r.MemberID, r.Generation
}

// TestNewMemberJoinTimeout is Kafka's NewMemberJoinTimeoutMs (KAFKA-7610):
// a member added in a join phase that outlasts 5 minutes is dropped with
// its JoinGroup answered UNKNOWN_MEMBER_ID and no member id; the phase
// goes on without it.
func TestNewMemberJoinTimeout(t *testing.T) {
	e := newEnv(t, nil)
	a, gen := e.slowStableGroup("g")
	b, chB := e.joinNew("g", "m") // the join phase now lasts up to 10 min
	e.notYet(t, "g", chB)
	e.clk.WaitForTimers(2)
	e.clk.Advance(newMemberJoinTimeout - time.Second)
	e.notYet(t, "g", chB)
	e.clk.WaitForTimers(2)
	e.clk.Advance(time.Second)
	rb := wait(t, chB)
	expectCode(t, "new member's join", rb.ErrorCode, kerr.UnknownMemberID)
	if rb.MemberID != "" || rb.Generation != -1 {
		t.Fatalf("new member's join answer %+v, want no member id and generation -1", rb)
	}
	if s := e.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s, want PreparingRebalance (the old member has not rejoined)", s)
	}
	expectCode(t, "dropped member heartbeat", e.heartbeat("g", gen, b, nil), kerr.UnknownMemberID)
	expectCode(t, "old member heartbeat", e.heartbeat("g", gen, a, nil), kerr.RebalanceInProgress)
	ra := wait(t, e.join(slowJoin(joinReq(9, "g", a, nil, "m"))))
	expectCode(t, "old member rejoin", ra.ErrorCode, nil)
	if ra.Generation != gen+1 || len(ra.Members) != 1 || ra.Members[0].MemberID != a {
		t.Fatalf("rejoin %+v, want generation %d with the old member only", ra, gen+1)
	}
}

// TestNewMemberHeartbeatKeepsSessionTimeout: as in Kafka, a heartbeat from
// a new member reschedules its expiry by its session timeout, which still
// runs while its JoinGroup waits (it stays new until the phase completes).
func TestNewMemberHeartbeatKeepsSessionTimeout(t *testing.T) {
	e := newEnv(t, nil)
	_, gen := e.slowStableGroup("g")
	b, chB := e.joinNew("g", "m")
	expectCode(t, "new member heartbeat", e.heartbeat("g", gen, b, nil), kerr.RebalanceInProgress)
	e.clk.WaitForTimers(2)
	e.clk.Advance(session)
	expectCode(t, "new member's join", wait(t, chB).ErrorCode, kerr.UnknownMemberID)
}

// TestOldMemberJoinDoesNotTimeOut: a member that is not new waits in a
// join phase for as long as it lasts.
func TestOldMemberJoinDoesNotTimeOut(t *testing.T) {
	e := newEnv(t, nil)
	a, _ := e.slowStableGroup("g")
	// c joins the group (generation 2): a and c are old members.
	rc := wait(t, e.join(slowJoin(joinReq(9, "g", "", nil, "m"))))
	chC := e.join(slowJoin(joinReq(9, "g", rc.MemberID, nil, "m")))
	ra := wait(t, e.join(slowJoin(joinReq(9, "g", a, nil, "m"))))
	c := wait(t, chC).MemberID
	gen := ra.Generation
	syncC := e.syncAsync("g", gen, c, nil)
	expectCode(t, "sync", e.sync("g", gen, a, map[string]string{a: "x", c: "y"}).ErrorCode, nil)
	expectCode(t, "sync", wait(t, syncC).ErrorCode, nil)

	// b joins; a rejoins at once, c only after b's join timed out.
	_, chB := e.joinNew("g", "m")
	chA := e.join(slowJoin(joinReq(9, "g", a, nil, "m")))
	e.clk.WaitForTimers(2)
	e.clk.Advance(newMemberJoinTimeout)
	expectCode(t, "new member's join", wait(t, chB).ErrorCode, kerr.UnknownMemberID)
	e.notYet(t, "g", chA)
	expectCode(t, "c's heartbeat", e.heartbeat("g", gen, c, nil), kerr.RebalanceInProgress)
	chC = e.join(slowJoin(joinReq(9, "g", c, nil, "m")))
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{chA, chC} {
		r := wait(t, ch)
		expectCode(t, "old member's join", r.ErrorCode, nil)
		if r.Generation != gen+1 {
			t.Fatalf("generation %d, want %d", r.Generation, gen+1)
		}
	}
}

func TestGroupMaxSize(t *testing.T) {
	max2 := func(c *Config) { c.MaxGroupSize = 2 }
	full := func(t *testing.T, what string, r *kmsg.JoinGroupResponse) {
		t.Helper()
		expectCode(t, what, r.ErrorCode, kerr.GroupMaxSizeReached)
		if r.MemberID != "" {
			t.Fatalf("%s: member id %q, want none", what, r.MemberID)
		}
	}

	t.Run("stable group at the limit", func(t *testing.T) {
		e := newEnv(t, max2)
		ids, gen := e.stableGroup("g", 2)
		full(t, "new dynamic member", wait(t, e.join(joinReq(9, "g", "", nil, "m"))))
		inst := "i"
		full(t, "new static member", wait(t, e.join(joinReq(9, "g", "", &inst, "m"))))
		// A member of the group is let in: a follower with unchanged
		// metadata gets the current generation.
		var leader string
		e.c.onGroup(context.Background(), "g", false, func(g *group) { leader = g.leader })
		follower := ids[0]
		if follower == leader {
			follower = ids[1]
		}
		r := wait(t, e.join(joinReq(9, "g", follower, nil, "m")))
		expectCode(t, "follower rejoin", r.ErrorCode, nil)
		if r.Generation != gen {
			t.Fatalf("follower rejoin %+v, want generation %d", r, gen)
		}
	})

	t.Run("rejoined members over the limit turn away the rest", func(t *testing.T) {
		e := newEnv(t, max2)
		ids, gen := e.stableGroup("g", 1)
		// Two ids handed out while the group has one member (pending ids
		// do not count), both join: the group has 3 members, 2 rejoined.
		rc := wait(t, e.join(joinReq(9, "g", "", nil, "m")))
		rd := wait(t, e.join(joinReq(9, "g", "", nil, "m")))
		expectCode(t, "first join c", rc.ErrorCode, kerr.MemberIDRequired)
		expectCode(t, "first join d", rd.ErrorCode, kerr.MemberIDRequired)
		chC := e.join(joinReq(9, "g", rc.MemberID, nil, "m"))
		chD := e.join(joinReq(9, "g", rd.MemberID, nil, "m"))
		e.notYet(t, "g", chD)
		full(t, "old member rejoining last", wait(t, e.join(joinReq(9, "g", ids[0], nil, "m"))))
		for _, ch := range []<-chan *kmsg.JoinGroupResponse{chC, chD} {
			r := wait(t, ch)
			expectCode(t, "join", r.ErrorCode, nil)
			if r.Generation != gen+1 {
				t.Fatalf("generation %d, want %d", r.Generation, gen+1)
			}
			if r.LeaderID == r.MemberID && len(r.Members) != 2 {
				t.Fatalf("leader sees %d members, want 2", len(r.Members))
			}
		}
		expectCode(t, "turned away member heartbeat", e.heartbeat("g", gen+1, ids[0], nil), kerr.UnknownMemberID)
	})

	t.Run("pending id over the limit is dropped", func(t *testing.T) {
		e := newEnv(t, max2)
		ids, gen := e.stableGroup("g", 1)
		rc := wait(t, e.join(joinReq(9, "g", "", nil, "m")))
		rd := wait(t, e.join(joinReq(9, "g", "", nil, "m")))
		chC := e.join(joinReq(9, "g", rc.MemberID, nil, "m"))
		ch0 := e.join(joinReq(9, "g", ids[0], nil, "m"))
		e.notYet(t, "g", ch0) // waits for the pending id of d
		full(t, "pending member over the limit", wait(t, e.join(joinReq(9, "g", rd.MemberID, nil, "m"))))
		for _, ch := range []<-chan *kmsg.JoinGroupResponse{chC, ch0} {
			r := wait(t, ch)
			expectCode(t, "join", r.ErrorCode, nil)
			if r.Generation != gen+1 {
				t.Fatalf("generation %d, want %d", r.Generation, gen+1)
			}
		}
		// Its id is gone, and the group is full.
		expectCode(t, "dropped pending id", wait(t, e.join(joinReq(9, "g", rd.MemberID, nil, "m"))).ErrorCode, kerr.GroupMaxSizeReached)
	})

	t.Run("group loaded over the limit rebalances", func(t *testing.T) {
		e := newEnv(t, nil)
		ids, gen := e.stableGroup("g", 3)
		e.cfg.MaxGroupSize = 2
		e.restart()
		if s := e.state("g"); s != "PreparingRebalance" {
			t.Fatalf("state after load %s, want PreparingRebalance", s)
		}
		ch0 := e.join(joinReq(9, "g", ids[0], nil, "m"))
		ch1 := e.join(joinReq(9, "g", ids[1], nil, "m"))
		e.notYet(t, "g", ch1)
		full(t, "third member", wait(t, e.join(joinReq(9, "g", ids[2], nil, "m"))))
		for _, ch := range []<-chan *kmsg.JoinGroupResponse{ch0, ch1} {
			r := wait(t, ch)
			expectCode(t, "join", r.ErrorCode, nil)
			if r.Generation != gen+1 {
				t.Fatalf("generation %d, want %d", r.Generation, gen+1)
			}
		}
	})

	t.Run("group loaded within the limit stays stable", func(t *testing.T) {
		e := newEnv(t, nil)
		e.stableGroup("g", 2)
		e.cfg.MaxGroupSize = 2
		e.restart()
		if s := e.state("g"); s != "Stable" {
			t.Fatalf("state after load %s, want Stable", s)
		}
	})
}

func TestJavaLength(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{"é", 1},          // 2 bytes, one UTF-16 unit
		{"€", 1},          // 3 bytes
		{"\U0001F600", 2}, // 4 bytes, a surrogate pair
		{"a\xffb", 3},     // an invalid byte decodes to U+FFFD
	} {
		if got := javaLength(tc.s); got != tc.want {
			t.Errorf("javaLength(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

// TestCommitChecksGroupBeforeMetadata: as Kafka (doCommitOffsets, then
// storeOffsets), a group error answers every partition, oversized ones
// included; a valid commit refuses only the oversized partitions.
func TestCommitChecksGroupBeforeMetadata(t *testing.T) {
	big := strings.Repeat("x", 4097)
	parts := func(metas ...string) []CommitPartition {
		var out []CommitPartition
		for i, m := range metas {
			out = append(out, CommitPartition{Topic: "t", Partition: int32(i), Offset: 10 + int64(i), LeaderEpoch: -1, Metadata: m, ExpireTimestamp: -1})
		}
		return out
	}
	tooLarge, none := kerr.OffsetMetadataTooLarge.Code, int16(0)
	for _, tc := range []struct {
		name      string
		version   int16
		group     string // "" : the stable group's
		gen       int32  // added to the group's generation
		member    string // "" : the group's member
		parts     []CommitPartition
		want      []int16
		committed []int32 // partitions that must have an offset after
	}{
		{name: "unknown member", member: "x", parts: parts(big, "ok"), want: []int16{kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code}},
		{name: "stale generation", gen: -1, parts: parts(big, "ok"), want: []int16{kerr.IllegalGeneration.Code, kerr.IllegalGeneration.Code}},
		{name: "unknown group v8", version: 8, group: "nogroup", parts: parts(big), want: []int16{kerr.IllegalGeneration.Code}},
		{name: "unknown group v9", version: 9, group: "nogroup", parts: parts(big), want: []int16{kerr.GroupIDNotFound.Code}},
		{name: "valid commit", parts: parts(big, "ok", ""), want: []int16{tooLarge, none, none}, committed: []int32{1, 2}},
		{name: "every partition too large", parts: parts(big, big), want: []int16{tooLarge, tooLarge}},
		{name: "limit counts UTF-16 units", parts: parts(
			strings.Repeat("é", 4096),          // 8192 bytes, 4096 units
			strings.Repeat("\U0001F600", 2048), // 4096 units
			strings.Repeat("\U0001F600", 2049), // 4098 units
		), want: []int16{none, none, tooLarge}, committed: []int32{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			ids, gen := e.stableGroup("g", 1)
			group, member := "g", ids[0]
			if tc.group != "" {
				group = tc.group
			}
			if tc.member != "" {
				member = tc.member
			}
			v := tc.version
			if v == 0 {
				v = 8
			}
			got := e.c.CommitOffsets(context.Background(), v, group, gen+tc.gen, member, nil, tc.parts)
			if len(got) != len(tc.want) {
				t.Fatalf("codes %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("partition %d: got %v, want %v", i, kerr.ErrorForCode(got[i]), kerr.ErrorForCode(tc.want[i]))
				}
			}
			var ps []int32
			for i := range tc.parts {
				ps = append(ps, int32(i))
			}
			os, _ := e.c.FetchOffsets(context.Background(), group, map[string][]int32{"t": ps})
			committed := map[int32]bool{}
			for _, p := range tc.committed {
				committed[p] = true
			}
			for _, o := range os {
				if has := o.Offset >= 0; has != committed[o.Partition] {
					t.Fatalf("partition %d: offset %d, committed want %v", o.Partition, o.Offset, committed[o.Partition])
				}
			}
		})
	}
}

// TestCommitRefusedForMetadataKeepsSession: the commit counts as the
// member's heartbeat once the group checks pass, even if every partition
// is then refused for its metadata (Kafka heartbeats before storeOffsets).
func TestCommitRefusedForMetadataKeepsSession(t *testing.T) {
	e := newEnv(t, nil)
	ids, gen := e.stableGroup("g", 1)
	e.clk.WaitForTimers(2)
	e.clk.Advance(session - time.Second)
	p := []CommitPartition{{Topic: "t", Offset: 1, LeaderEpoch: -1, Metadata: strings.Repeat("x", 5000), ExpireTimestamp: -1}}
	expectCode(t, "oversized commit", oneCode(t, e.c.CommitOffsets(context.Background(), 8, "g", gen, ids[0], nil, p)), kerr.OffsetMetadataTooLarge)
	e.clk.WaitForTimers(2)
	e.clk.Advance(2 * time.Second)
	expectCode(t, "heartbeat after the old session end", e.heartbeat("g", gen, ids[0], nil), nil)
}

// TestInitialDelayExtendsOnlyInFirstGeneration: as Kafka (newMemberAdded
// is set only at generation 0), members arriving during the initial delay
// of a group that was Empty after earlier generations do not extend it.
func TestInitialDelayExtendsOnlyInFirstGeneration(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
	a, ch := e.joinNew("g", "m")
	e.clk.WaitForTimers(2)
	e.clk.Advance(3 * time.Second)
	expectCode(t, "first member", wait(t, ch).ErrorCode, nil)
	code, codes := e.c.LeaveGroup(context.Background(), "g", []kmsg.LeaveGroupRequestMember{{MemberID: a}})
	expectCode(t, "leave", code, nil)
	expectCode(t, "leave member", codes[0], nil)
	if s := e.state("g"); s != "Empty" {
		t.Fatalf("state %s, want Empty", s)
	}
	_, c1 := e.joinNew("g", "m")
	e.clk.WaitForTimers(2)
	e.clk.Advance(2 * time.Second)
	_, c2 := e.joinNew("g", "m")
	e.clk.WaitForTimers(2)
	e.clk.Advance(time.Second)
	r1, r2 := wait(t, c1), wait(t, c2)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.Generation != 3 || r2.Generation != 3 {
		t.Fatalf("joins %+v %+v, want generation 3 after one delay", r1, r2)
	}
}
