package coordinator

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// runningGroups counts the groups whose goroutine runs.
func (c *Coordinator) runningGroups() int {
	n := 0
	for _, g := range c.allGroups() {
		g.runMu.Lock()
		if g.running {
			n++
		}
		g.runMu.Unlock()
	}
	return n
}

// settledGoroutines waits (bounded) for goroutines that are ending to end
// and returns how many are left.
func settledGoroutines(limit int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 5000 && n > limit; i++ { // 10 s: a loaded CI machine with -race
		time.Sleep(2 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestIdleGroupsPark: 10,000 group ids, each used for a commit and a
// fetch and a classic member's join, sync and leave, leave O(1)
// goroutines: idle groups park, and the next request to one starts it
// again with its state intact.
func TestIdleGroupsPark(t *testing.T) {
	e := newEnv(t, nil)
	base := runtime.NumGoroutine()
	const groups = 10000
	for i := range groups {
		id := fmt.Sprintf("g-%d", i)
		expectCode(t, "commit", commit(e, id, -1, "", map[string]int64{"t": int64(i)}), nil)
		if i%100 == 0 { // a whole classic membership on some of them
			m, _ := e.stableGroup(id, 1)
			code, _ := e.c.LeaveGroup(context.Background(), id, []kmsg.LeaveGroupRequestMember{{MemberID: m[0]}})
			expectCode(t, "leave", code, nil)
		}
	}
	if n := e.c.runningGroups(); n > 0 {
		// a group may still be between its last request and parking
		if n = settledRunning(e.c); n > 0 {
			t.Fatalf("%d of %d idle groups still have a goroutine", n, groups)
		}
	}
	if n := settledGoroutines(base + 10); n > base+10 {
		t.Fatalf("%d goroutines after cycling %d groups, %d before", n, groups, base)
	}
	// A parked group wakes with its offsets and takes members again.
	if got := fetch(e, "g-4242")["t"]; got != 4242 {
		t.Fatalf("parked group's offset %d, want 4242", got)
	}
	e.stableGroup("g-4242", 2)
	if s := e.state("g-4242"); s != "Stable" {
		t.Fatalf("woken group %s, want Stable", s)
	}
	if n := settledRunning(e.c); n != 1 {
		t.Fatalf("%d groups running, want the one Stable group", n)
	}
	// Close with parked groups does not hang, and a parked group after
	// Close answers as gone.
	e.close()
}

// settledRunning waits (bounded) for groups that are about to park,
// until at most one runs.
func settledRunning(c *Coordinator) int { return settledTo(c, 1) }

// settledTo waits (bounded) until at most limit groups run.
func settledTo(c *Coordinator, limit int) int {
	n := c.runningGroups()
	for i := 0; i < 5000 && n > limit; i++ { // 10 s: a loaded CI machine with -race
		time.Sleep(2 * time.Millisecond)
		n = c.runningGroups()
	}
	return n
}

// TestShareAndStreamsMembersKeepGroupsRunning: a share or streams member,
// even one without a session deadline, keeps its group from parking.
func TestShareAndStreamsMembersKeepGroupsRunning(t *testing.T) {
	e := newEnv(t, nil)
	g := newGroup(e.c, "x")
	g.sg = newShareGroup()
	g.sg.members["m"] = &sgMember{id: "m"}
	if g.idle() {
		t.Error("a share group with a member is idle")
	}
	g = newGroup(e.c, "y")
	g.stg = newStreamsGroup()
	g.stg.members["m"] = &stgMember{id: "m"}
	if g.idle() {
		t.Error("a streams group with a member is idle")
	}
}

// TestShareAndStreamsGroupsParkAndWake: a share group and a streams group
// whose members left park, and wake with their epochs (and the streams
// group its topology).
func TestShareAndStreamsGroupsParkAndWake(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.store.CreateTopic("t", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hb := func(member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.SetVersion(1)
		r.GroupID, r.MemberID, r.MemberEpoch = "sg", member, epoch
		if epoch == 0 {
			r.SubscribedTopicNames = []string{"t"}
		}
		return e.c.ShareGroupHeartbeat(ctx, r, ClientInfo{ClientID: "c", ClientHost: "/h"})
	}
	if r := hb("a", 0); r.ErrorCode != 0 {
		t.Fatalf("share join: %d", r.ErrorCode)
	}
	if n := e.c.runningGroups(); n != 1 {
		t.Fatalf("%d groups running with a share member, want 1", n)
	}
	before := e.c.ShareGroupDescribe(ctx, "sg")
	if r := hb("a", -1); r.ErrorCode != 0 {
		t.Fatalf("share leave: %d", r.ErrorCode)
	}

	c := e.newStreamsClient("app", "m1", wordCount("t"))
	c.send(c.request())
	if c.last.ErrorCode != 0 {
		t.Fatalf("streams join: %d", c.last.ErrorCode)
	}
	leave := c.request()
	leave.MemberEpoch = -1
	c.send(leave)
	if n := settledTo(e.c, 0); n != 0 {
		t.Fatalf("%d groups running after their members left, want 0", n)
	}
	after := e.c.ShareGroupDescribe(ctx, "sg")
	if after.ErrorCode != 0 || after.GroupEpoch <= before.GroupEpoch || len(after.Members) != 0 {
		t.Fatalf("woken share group %+v (before %+v)", after, before)
	}
	if r := hb("b", 0); r.ErrorCode != 0 || r.MemberEpoch <= after.GroupEpoch {
		t.Fatalf("share rejoin after waking: %+v", r)
	}
	d := e.c.StreamsGroupDescribe(ctx, "app")
	if d.ErrorCode != 0 || d.Topology == nil || len(d.Topology.Subtopologies) != 2 || d.Epoch < 1 {
		t.Fatalf("woken streams group %+v", d)
	}
}
