package coordinator

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinRaw hands a JoinGroup to its group and returns the channel the
// group answers on (not a copy made by another goroutine).
func (e *env) joinRaw(req *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	e.t.Helper()
	ch, _, r := e.c.startJoin(context.Background(), req, ClientInfo{ClientID: "c", ClientHost: "/127.0.0.1"})
	if r != nil {
		e.t.Fatalf("join answered at once: %+v", r)
	}
	return ch
}

// syncRaw is joinRaw for SyncGroup.
func (e *env) syncRaw(group string, gen int32, member string, assign map[string]string) chan *kmsg.SyncGroupResponse {
	e.t.Helper()
	ch, _, resp := e.c.startSync(context.Background(), syncReq(group, gen, member, assign))
	if resp != nil {
		e.t.Fatalf("sync answered at once: %+v", resp)
	}
	return ch
}

// rejoinRaw: a known member rejoins; its answer's channel.
func (e *env) rejoinRaw(group, id string) chan *kmsg.JoinGroupResponse {
	return e.joinRaw(joinReq(9, group, id, nil, "m"))
}

// newJoinRaw: a new member joins through MEMBER_ID_REQUIRED; its second
// join's channel.
func (e *env) newJoinRaw(group string) chan *kmsg.JoinGroupResponse {
	e.t.Helper()
	r := wait(e.t, e.joinRaw(joinReq(9, group, "", nil, "m")))
	expectCode(e.t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	return e.rejoinRaw(group, r.MemberID)
}

// TestWaitersAnsweredAfterPublish: a JoinGroup or SyncGroup answer given
// to a waiting member (by another member's request or by a timer) leaves
// only once the group's listing shows the state it was given in, so a
// client that lists or describes the group as soon as it has its answer
// sees that state. Each trigger runs on the group's goroutine, and the
// waiters' channels must still be empty when it returns (they were
// answered at once, before the publish that follows).
func TestWaitersAnsweredAfterPublish(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the waiting channels' lengths and the trigger.
		setup func(e *env) ([]func() int, func(g *group), string)
	}{{
		name: "last rejoin completes the join phase",
		setup: func(e *env) ([]func() int, func(g *group), string) {
			ids, _ := e.stableGroup("g", 2)
			c3 := e.newJoinRaw("g")
			c0 := e.rejoinRaw("g", ids[0])
			ch := make(chan *kmsg.JoinGroupResponse, 1)
			return []func() int{lenOf(c3), lenOf(c0)}, func(g *group) {
				g.join(joinReq(9, "g", ids[1], nil, "m"), ClientInfo{}, ch)
			}, "CompletingRebalance"
		},
	}, {
		name: "rebalance timeout completes the join phase",
		setup: func(e *env) ([]func() int, func(g *group), string) {
			ids, _ := e.stableGroup("g", 2)
			c3 := e.newJoinRaw("g")
			c0 := e.rejoinRaw("g", ids[0])
			return []func() int{lenOf(c3), lenOf(c0)}, func(g *group) {
				g.joinDeadline = g.c.clock.Now() // ids[1] never rejoins
				g.onTimer()
			}, "CompletingRebalance"
		},
	}, {
		name: "leader's sync answers the followers",
		setup: func(e *env) ([]func() int, func(g *group), string) {
			ids, gen := e.stableGroup("g", 2)
			c3 := e.newJoinRaw("g")
			c0, c1 := e.rejoinRaw("g", ids[0]), e.rejoinRaw("g", ids[1])
			var leader string
			var members []string
			for _, ch := range []chan *kmsg.JoinGroupResponse{c3, c0, c1} {
				r := wait(e.t, ch)
				expectCode(e.t, "rejoin", r.ErrorCode, nil)
				leader, gen = r.LeaderID, r.Generation
				members = append(members, r.MemberID)
			}
			var lens []func() int
			for _, id := range members {
				if id != leader {
					lens = append(lens, lenOf(e.syncRaw("g", gen, id, nil)))
				}
			}
			ch := make(chan *kmsg.SyncGroupResponse, 1)
			return lens, func(g *group) { g.sync(syncReq("g", gen, leader, nil), ch) }, "Stable"
		},
	}, {
		name: "sync timeout removes the leader and answers the followers",
		setup: func(e *env) ([]func() int, func(g *group), string) {
			ids, gen := e.stableGroup("g", 2)
			c0, c1 := e.rejoinRaw("g", ids[0]), e.rejoinRaw("g", ids[1])
			r0, r1 := wait(e.t, c0), wait(e.t, c1)
			gen = r0.Generation
			follower := r0.MemberID
			if r0.LeaderID == follower {
				follower = r1.MemberID
			}
			s := e.syncRaw("g", gen, follower, nil)
			return []func() int{lenOf(s)}, func(g *group) {
				g.syncDeadline = g.c.clock.Now() // the leader never syncs
				g.onTimer()
			}, "PreparingRebalance"
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			lens, trigger, want := tc.setup(e)
			g := e.c.lookup("g", false)
			ok := e.c.onGroup(context.Background(), "g", false, func(gg *group) {
				trigger(gg)
				if gg.state.String() != want {
					t.Errorf("state after the trigger %s, want %s", gg.state, want)
				}
				for i, n := range lens {
					if n() != 0 {
						t.Errorf("waiter %d answered before the group's listing was published", i)
					}
				}
			})
			if !ok {
				t.Fatal("group gone")
			}
			for i, n := range lens {
				if n() != 1 {
					t.Errorf("waiter %d not answered after the publish", i)
				}
			}
			if s := g.sum.Load().state.String(); s != want {
				t.Fatalf("published state %s, want %s", s, want)
			}
		})
	}
}

func lenOf[T any](ch chan T) func() int { return func() int { return len(ch) } }

// TestFailWaitersQueuesItsAnswers: failing the waiters (an online
// upgrade, an unload) queues their errors behind the answers the same
// operation queued before, and publish sends them all once the group's
// new state is listed; answers queued earlier keep what they said. Each
// trigger runs on the group's goroutine, where the waiters' channels must
// still be empty when it returns (but for an unload, whose Dead state is
// published at once, by setState, and its answers with it).
func TestFailWaitersQueuesItsAnswers(t *testing.T) {
	type waiter struct {
		n    func() int
		code func() int16
		want *kerr.Error
	}
	joinWaiter := func(ch chan *kmsg.JoinGroupResponse, want *kerr.Error) waiter {
		return waiter{lenOf(ch), func() int16 { return (<-ch).ErrorCode }, want}
	}
	for _, tc := range []struct {
		name      string
		setup     func(e *env) ([]waiter, func(g *group), string)
		publishes bool // the trigger publishes (and answers) itself
	}{{
		name: "an answer queued before stands",
		setup: func(e *env) ([]waiter, func(g *group), string) {
			e.stableGroup("g", 1)
			blocked := e.newJoinRaw("g") // waits for member 0 to rejoin
			queued := make(chan *kmsg.JoinGroupResponse, 1)
			return []waiter{joinWaiter(queued, nil), joinWaiter(blocked, kerr.RebalanceInProgress)}, func(g *group) {
				g.answerJoin(queued, g.joinResponse(9, "queued"))
				g.failWaiters(kerr.RebalanceInProgress.Code)
			}, "PreparingRebalance"
		},
	}, {
		name: "unload",
		setup: func(e *env) ([]waiter, func(g *group), string) {
			e.stableGroup("g", 1)
			blocked := e.newJoinRaw("g")
			return []waiter{joinWaiter(blocked, kerr.NotCoordinator)}, (*group).unload, "Dead"
		},
		publishes: true,
	}, {
		name: "online upgrade",
		setup: func(e *env) ([]waiter, func(g *group), string) {
			e.topic("t", 2)
			a := &classicClient{e: e, group: "g", topic: "t"}
			a.join()
			expectCode(e.t, "classic sync", a.sync(map[string][]int32{a.id: {0, 1}}).ErrorCode, nil)
			b := &classicClient{e: e, group: "g", topic: "t"}
			r := wait(e.t, e.joinRaw(b.joinRequest()))
			expectCode(e.t, "first join", r.ErrorCode, kerr.MemberIDRequired)
			b.id = r.MemberID
			blocked := e.joinRaw(b.joinRequest()) // waits for a to rejoin
			hb := heartbeatRequest{req: e.newClient("g", "c-member", "t").request()}
			return []waiter{joinWaiter(blocked, kerr.RebalanceInProgress)}, func(g *group) {
				if _, he := g.consumerHeartbeat(hb); he != nil {
					t.Errorf("upgrade: %+v", he)
				}
			}, "Empty" // the classic state of a consumer group
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			waiters, trigger, want := tc.setup(e)
			g := e.c.lookup("g", false)
			ok := e.c.onGroup(context.Background(), "g", false, func(gg *group) {
				trigger(gg)
				if gg.state.String() != want {
					t.Errorf("state after the trigger %s, want %s", gg.state, want)
				}
				for i, w := range waiters {
					if w.n() != 0 && !tc.publishes {
						t.Errorf("waiter %d answered before the group's state was published", i)
					}
				}
			})
			if !ok {
				t.Fatal("group gone")
			}
			if s := g.sum.Load().state.String(); s != want {
				t.Fatalf("published state %s, want %s", s, want)
			}
			for i, w := range waiters {
				if w.n() != 1 {
					t.Fatalf("waiter %d not answered after the publish", i)
				}
				expectCode(t, fmt.Sprintf("waiter %d", i), w.code(), w.want)
			}
		})
	}
}

// TestPanicReplacesQueuedAnswers: after a panic nothing the operation
// queued can be trusted, so an answer it queued before panicking leaves
// as NOT_COORDINATOR, as the blocked waiters' do.
func TestPanicReplacesQueuedAnswers(t *testing.T) {
	e := newEnv(t, nil)
	e.stableGroup("g", 1)
	blocked := e.newJoinRaw("g")
	queued := make(chan *kmsg.JoinGroupResponse, 1)
	old := e.c.lookup("g", false)
	if !old.do(context.Background(), func() {
		old.answerJoin(queued, old.joinResponse(9, "queued"))
		panic("injected: after queueing an answer")
	}) {
		t.Fatal("group gone before the panic")
	}
	wait(t, old.done)
	expectCode(t, "queued answer", wait(t, queued).ErrorCode, kerr.NotCoordinator)
	expectCode(t, "blocked join", wait(t, blocked).ErrorCode, kerr.NotCoordinator)
}
