package coordinator

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sgClient is a Kafka Streams member as the tests drive it: it owns what
// the last answer assigned it (revoked tasks are dropped at once) and
// reports that in every heartbeat. The internal topics an answer asks
// for are created, as the protocol layer does.
type sgClient struct {
	e        *env
	group    string
	id       string
	process  string
	epoch    int32
	owned    tasksTuple
	topology *kmsg.StreamsGroupHeartbeatRequestTopology
	last     *kmsg.StreamsGroupHeartbeatResponse
}

// wordCount is a topology like Kafka Streams' for a count regrouped by
// value: subtopology 0 reads in and writes the repartition topic,
// subtopology 1 reads it and keeps a changelog.
func wordCount(in string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{in}, []string{"app-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.SourceTopics = []string{"app-words-repartition"}
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "app-words-repartition", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "delete"}}}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "app-counts-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

func (e *env) newStreamsClient(group, id string, topology *kmsg.StreamsGroupHeartbeatRequestTopology) *sgClient {
	return &sgClient{e: e, group: group, id: id, process: "process-" + id, owned: emptyTuple(), topology: topology}
}

func (c *sgClient) request() *kmsg.StreamsGroupHeartbeatRequest {
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = c.group, c.id, c.epoch
	if c.epoch == 0 {
		r.RebalanceTimeoutMillis = int32(rebalance / time.Millisecond)
		r.Topology = c.topology
		r.ProcessID = &c.process
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		return r
	}
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = taskIDsOf(c.owned.active), taskIDsOf(c.owned.standby), taskIDsOf(c.owned.warmup)
	return r
}

func (c *sgClient) send(r *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	c.e.t.Helper()
	resp, create := c.e.c.StreamsGroupHeartbeat(context.Background(), r, ClientInfo{ClientID: "client-" + c.id, ClientHost: "/127.0.0.1"})
	for _, t := range create {
		if _, err := c.e.store.CreateTopic(t.Name, t.Partitions, t.Configs, false); err != nil {
			c.e.t.Fatalf("creating %s: %v", t.Name, err)
		}
	}
	c.last = resp
	if resp.ErrorCode != 0 {
		return resp
	}
	c.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		c.owned = tasksTuple{taskSetOf(resp.ActiveTasks), taskSetOf(resp.StandbyTasks), taskSetOf(resp.WarmupTasks)}
	}
	return resp
}

func (c *sgClient) heartbeat() *kmsg.StreamsGroupHeartbeatResponse {
	c.e.t.Helper()
	resp := c.send(c.request())
	if resp.ErrorCode != 0 {
		c.e.t.Fatalf("member %s heartbeat: %s %v", c.id, kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	return resp
}

func (c *sgClient) leave() {
	r := c.request()
	r.MemberEpoch = leaveEpoch
	if resp := c.send(r); resp.ErrorCode != 0 {
		c.e.t.Fatalf("leave: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	c.owned = emptyTuple()
}

func statusCodes(resp *kmsg.StreamsGroupHeartbeatResponse) []int8 {
	var out []int8
	for _, s := range resp.Status {
		out = append(out, s.StatusCode)
	}
	return out
}

// checkNeverOwnedTwice fails if two clients own the same active task.
func checkNeverOwnedTwice(t *testing.T, cs []*sgClient) {
	t.Helper()
	owner := map[taskID]string{}
	for _, c := range cs {
		for tk := range c.owned.active {
			if o, ok := owner[tk]; ok {
				t.Fatalf("task %v owned by %s and %s", tk, o, c.id)
			}
			owner[tk] = c.id
		}
	}
}

func TestStreamsAssignor(t *testing.T) {
	tuple := func(active ...taskID) tasksTuple {
		tt := emptyTuple()
		for _, a := range active {
			tt.active[a] = struct{}{}
		}
		return tt
	}
	t0 := func(p int32) taskID { return taskID{"0", p} }
	for _, tc := range []struct {
		name     string
		members  []assignMember
		tasks    map[string]int32
		standbys int
		want     map[string]int // active tasks per member
		kept     map[string][]taskID
		standby  map[string]int
	}{
		{name: "one member takes all", members: []assignMember{{id: "a", processID: "p1"}}, tasks: map[string]int32{"0": 3, "1": 3},
			want: map[string]int{"a": 6}},
		{name: "balanced split", members: []assignMember{{id: "a", processID: "p1"}, {id: "b", processID: "p2"}, {id: "c", processID: "p3"}},
			tasks: map[string]int32{"0": 4}, want: map[string]int{"a": 2, "b": 1, "c": 1}},
		{name: "sticky when a member joins", members: []assignMember{
			{id: "a", processID: "p1", prev: tuple(t0(0), t0(1))}, {id: "b", processID: "p2", prev: tuple(t0(2), t0(3))}, {id: "c", processID: "p3"}},
			tasks: map[string]int32{"0": 4}, want: map[string]int{"a": 2, "b": 1, "c": 1},
			kept: map[string][]taskID{"a": {t0(0), t0(1)}, "b": {t0(2)}}},
		{name: "sticky when a member leaves", members: []assignMember{
			{id: "a", processID: "p1", prev: tuple(t0(0), t0(1))}, {id: "c", processID: "p3", prev: tuple(t0(4), t0(5))}},
			tasks: map[string]int32{"0": 6}, want: map[string]int{"a": 3, "c": 3},
			kept: map[string][]taskID{"a": {t0(0), t0(1)}, "c": {t0(4), t0(5)}}},
		{name: "fewer tasks than members", members: []assignMember{{id: "a"}, {id: "b"}, {id: "c"}},
			tasks: map[string]int32{"0": 1}, want: map[string]int{"a": 1, "b": 0, "c": 0}},
		{name: "standbys on other processes", members: []assignMember{{id: "a", processID: "p1"}, {id: "b", processID: "p2"}},
			tasks: map[string]int32{"0": 2}, standbys: 1, want: map[string]int{"a": 1, "b": 1}, standby: map[string]int{"a": 1, "b": 1}},
		{name: "no standby on the active's process", members: []assignMember{{id: "a", processID: "p1"}, {id: "b", processID: "p1"}},
			tasks: map[string]int32{"0": 2}, standbys: 1, want: map[string]int{"a": 1, "b": 1}, standby: map[string]int{"a": 0, "b": 0}},
		{name: "no tasks (topology not ready)", members: []assignMember{{id: "a"}}, tasks: nil, want: map[string]int{"a": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := assignTasks(tc.members, tc.tasks, tc.standbys)
			seen := taskSet{}
			for id, n := range tc.want {
				if len(got[id].active) != n {
					t.Errorf("member %s: %d active tasks, want %d (%v)", id, len(got[id].active), n, got)
				}
				for tk := range got[id].active {
					if _, dup := seen[tk]; dup {
						t.Errorf("task %v assigned twice", tk)
					}
					seen[tk] = struct{}{}
					if _, also := got[id].standby[tk]; also {
						t.Errorf("task %v active and standby on %s", tk, id)
					}
				}
			}
			var total int32
			for _, n := range tc.tasks {
				total += n
			}
			if len(seen) != int(total) {
				t.Errorf("%d tasks assigned, want %d", len(seen), total)
			}
			for id, ts := range tc.kept {
				for _, tk := range ts {
					if _, ok := got[id].active[tk]; !ok {
						t.Errorf("member %s lost task %v", id, tk)
					}
				}
			}
			for id, n := range tc.standby {
				if len(got[id].standby) != n {
					t.Errorf("member %s: %d standbys, want %d", id, len(got[id].standby), n)
				}
			}
		})
	}
}

func TestConfigureTopology(t *testing.T) {
	sub := func(id string, sources, sinks []string, reps, changelogs []stTopicInfo, co ...stCopartition) stSubtopology {
		return stSubtopology{id: id, sources: sources, repartitionSinks: sinks, repartitionSources: reps, changelogs: changelogs, copartitions: co}
	}
	topics := map[string]int32{"in": 3, "in2": 3, "in4": 4, "rep-existing": 3, "changelog-wrong": 1}
	count := func(n string) int32 {
		if c, ok := topics[n]; ok {
			return c
		}
		return -1
	}
	for _, tc := range []struct {
		name     string
		subs     []stSubtopology
		status   int8 // -1: ready
		tasks    map[string]int32
		toCreate map[string]int32
	}{
		{name: "ready, no internal topics", subs: []stSubtopology{sub("0", []string{"in"}, nil, nil, nil)},
			status: -1, tasks: map[string]int32{"0": 3}},
		{name: "missing source topic", subs: []stSubtopology{sub("0", []string{"nope"}, nil, nil, nil)},
			status: streamsMissingSourceTopics},
		{name: "repartition and changelog derived and missing", subs: []stSubtopology{
			sub("0", []string{"in4"}, []string{"rep"}, nil, nil),
			sub("1", []string{"rep"}, nil, []stTopicInfo{{name: "rep"}}, []stTopicInfo{{name: "cl"}})},
			status: streamsMissingInternalTopics, toCreate: map[string]int32{"rep": 4, "cl": 4}},
		{name: "fixed repartition count", subs: []stSubtopology{
			sub("0", []string{"in"}, []string{"rep"}, nil, nil),
			sub("1", []string{"rep"}, nil, []stTopicInfo{{name: "rep", partitions: 7}}, nil)},
			status: streamsMissingInternalTopics, toCreate: map[string]int32{"rep": 7}},
		{name: "existing internal topics: ready", subs: []stSubtopology{
			sub("0", []string{"in"}, []string{"rep-existing"}, nil, nil),
			sub("1", []string{"rep-existing"}, nil, []stTopicInfo{{name: "rep-existing"}}, nil)},
			status: -1, tasks: map[string]int32{"0": 3, "1": 3}},
		{name: "changelog with the wrong partition count", subs: []stSubtopology{
			sub("0", []string{"in"}, nil, nil, []stTopicInfo{{name: "changelog-wrong"}})},
			status: streamsIncorrectlyPartitionedTopic},
		{name: "copartitioned sources disagree", subs: []stSubtopology{
			sub("0", []string{"in", "in4"}, nil, nil, nil, stCopartition{sources: []int16{0, 1}})},
			status: streamsIncorrectlyPartitionedTopic},
		{name: "copartitioned sources agree", subs: []stSubtopology{
			sub("0", []string{"in", "in2"}, nil, nil, nil, stCopartition{sources: []int16{0, 1}})},
			status: -1, tasks: map[string]int32{"0": 3}},
		{name: "repartition topic follows its copartition group", subs: []stSubtopology{
			sub("0", []string{"in4"}, []string{"rep"}, nil, nil),
			sub("1", []string{"in", "rep"}, nil, []stTopicInfo{{name: "rep"}}, nil, stCopartition{sources: []int16{0}, repartitionSources: []int16{0}})},
			status: streamsMissingInternalTopics, toCreate: map[string]int32{"rep": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := configureTopology(&streamsTopology{subs: tc.subs}, count)
			if tc.status < 0 {
				if !ct.ready() || ct.detail != "" {
					t.Fatalf("not ready: %d %s", ct.status, ct.detail)
				}
				for s, n := range tc.tasks {
					if ct.tasks[s] != n {
						t.Errorf("subtopology %s: %d tasks, want %d", s, ct.tasks[s], n)
					}
				}
				return
			}
			if ct.ready() || ct.status != tc.status || ct.detail == "" {
				t.Fatalf("status %d %q ready %v, want status %d", ct.status, ct.detail, ct.ready(), tc.status)
			}
			got := map[string]int32{}
			for _, c := range ct.toCreate {
				got[c.Name] = c.Partitions
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.toCreate) && !(len(got) == 0 && tc.toCreate == nil) {
				t.Errorf("to create %v, want %v", got, tc.toCreate)
			}
		})
	}
}

func TestStreamsHeartbeatValidation(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("in", 2)
	topo := wordCount("in")
	for _, tc := range []struct {
		name string
		mod  func(r *kmsg.StreamsGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"empty member id", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"empty group", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidGroupID},
		{"no rebalance timeout", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"no topology", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }, kerr.InvalidRequest},
		{"tasks when joining", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"one task type null", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.StandbyTasks = nil }, kerr.InvalidRequest},
		{"epoch below -2", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"topology after joining", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = 3 }, kerr.InvalidRequest},
		{"changelog with partitions", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			t := *topo
			t.Subtopologies = append([]kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{}, topo.Subtopologies...)
			t.Subtopologies[1].StateChangelogTopics = []kmsg.TopicInfo{{Topic: "c", NumPartitions: 3}}
			r.Topology = &t
		}, kerr.StreamsInvalidTopology},
		{"static member", func(r *kmsg.StreamsGroupHeartbeatRequest) { id := "i"; r.InstanceID = &id }, kerr.UnknownServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.newStreamsClient("g-"+tc.name, "m1", topo)
			r := c.request()
			tc.mod(r)
			if resp := c.send(r); resp.ErrorCode != tc.want.Code {
				t.Fatalf("got %v %v, want %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, tc.want)
			}
		})
	}
	// Not a member, not a group.
	c := e.newStreamsClient("nogroup", "m1", topo)
	c.epoch = 1
	if resp := c.send(c.request()); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	a := e.newStreamsClient("g", "a", topo)
	a.heartbeat()
	b := e.newStreamsClient("g", "b", topo)
	b.epoch = 1
	if resp := b.send(b.request()); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown member: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	a.epoch += 5
	if resp := a.send(a.request()); resp.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("epoch ahead: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// A consumer group heartbeat to a streams group.
	cg := e.newClient("g", "x", "in")
	if resp := cg.send(cg.request()); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a streams group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestStreamsHeartbeatStatus(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newStreamsClient("g", "a", wordCount("in"))
	// The source topic is missing: no tasks, MISSING_SOURCE_TOPICS.
	resp := a.heartbeat()
	if fmt.Sprint(statusCodes(resp)) != fmt.Sprint([]int8{streamsMissingSourceTopics}) || len(resp.ActiveTasks) != 0 {
		t.Fatalf("status %v tasks %v", resp.Status, resp.ActiveTasks)
	}
	if d := e.c.StreamsGroupDescribe(context.Background(), "g"); d.State != "NotReady" {
		t.Fatalf("state %s", d.State)
	}
	e.topic("in", 2)
	// The internal topics are asked for, then found.
	resp = a.heartbeat()
	if fmt.Sprint(statusCodes(resp)) != fmt.Sprint([]int8{streamsMissingInternalTopics}) {
		t.Fatalf("status %v", resp.Status)
	}
	for _, n := range []string{"app-words-repartition", "app-counts-changelog"} {
		if tt := e.store.Topic(n); tt == nil || len(tt.Partitions) != 2 {
			t.Fatalf("internal topic %s: %v", n, tt)
		}
	}
	resp = a.heartbeat()
	if len(resp.Status) != 0 || len(a.owned.active) != 4 {
		t.Fatalf("status %v owned %v", resp.Status, a.owned)
	}
	if d := e.c.StreamsGroupDescribe(context.Background(), "g"); d.State != "Stable" || len(d.Members) != 1 {
		t.Fatalf("describe %+v", d)
	}
	// A member with an older topology epoch is told STALE_TOPOLOGY.
	old := *wordCount("in")
	old.Epoch = -1
	b := e.newStreamsClient("g", "b", &old)
	if resp := b.heartbeat(); fmt.Sprint(statusCodes(resp)) != fmt.Sprint([]int8{streamsStaleTopology}) {
		t.Fatalf("stale: %v", resp.Status)
	}
	// A different topology at the same epoch is refused.
	other := wordCount("in2")
	c := e.newStreamsClient("g", "c", other)
	if resp := c.send(c.request()); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("other topology: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// SHUTDOWN_APPLICATION reaches every member.
	r := a.request()
	r.ShutdownApplication = true
	a.send(r)
	if resp := b.heartbeat(); !strings.Contains(fmt.Sprint(statusCodes(resp)), fmt.Sprint(streamsShutdownApplication)) {
		t.Fatalf("shutdown: %v", resp.Status)
	}
	// Internal topics with the wrong partition count.
	e.topic("in3", 3)
	e.topic("x-changelog", 1)
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s.SubtopologyID, s.SourceTopics = "0", []string{"in3"}
	s.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "x-changelog"}}
	top.Subtopologies = append(top.Subtopologies, s)
	d := e.newStreamsClient("g2", "d", &top)
	if resp := d.heartbeat(); fmt.Sprint(statusCodes(resp)) != fmt.Sprint([]int8{streamsIncorrectlyPartitionedTopic}) {
		t.Fatalf("wrong partitions: %v", resp.Status)
	}
}

// TestStreamsTasksMoveNeverOwnedTwice: two members split the tasks, one
// leaves and the other gets them all; heartbeats in random order, and no
// active task is ever owned by two members.
func TestStreamsTasksMoveNeverOwnedTwice(t *testing.T) {
	for seed := int64(0); seed < 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t, nil)
			e.topic("in", 4)
			rng := rand.New(rand.NewSource(seed))
			a := e.newStreamsClient("g", "a", wordCount("in"))
			for range 3 {
				a.heartbeat()
			}
			if len(a.owned.active) != 8 {
				t.Fatalf("a owns %v", a.owned.active)
			}
			b := e.newStreamsClient("g", "b", wordCount("in"))
			cs := []*sgClient{a, b}
			for range 12 {
				cs[rng.Intn(2)].heartbeat()
				checkNeverOwnedTwice(t, cs)
				checkActiveOwnerIndex(t, e, "g")
			}
			for range 3 {
				a.heartbeat()
				b.heartbeat()
				checkNeverOwnedTwice(t, cs)
				checkActiveOwnerIndex(t, e, "g")
			}
			if len(a.owned.active) != 4 || len(b.owned.active) != 4 {
				t.Fatalf("split %v / %v", a.owned.active, b.owned.active)
			}
			d := e.c.StreamsGroupDescribe(context.Background(), "g")
			if d.State != "Stable" || len(d.Members) != 2 {
				t.Fatalf("describe %+v", d)
			}
			kept := a.owned.active.clone()
			b.leave()
			a.heartbeat()
			if len(a.owned.active) != 8 || !kept.subsetOf(a.owned.active) {
				t.Fatalf("after leave a owns %v", a.owned.active)
			}
			checkActiveOwnerIndex(t, e, "g")
		})
	}
}

// checkActiveOwnerIndex: the group's activeOwner index (Kafka's
// StreamsGroup keeps the same, currentActiveTaskToProcessId) is what the
// members' assigned and pending-revocation active tasks say.
func checkActiveOwnerIndex(t *testing.T, e *env, groupID string) {
	t.Helper()
	g := e.c.lookup(groupID, false)
	if g == nil {
		t.Fatalf("group %q not found", groupID)
	}
	var problem string
	ran := g.do(context.Background(), func() {
		sg := g.stg
		if sg == nil {
			problem = "not a streams group"
			return
		}
		want := map[taskID]string{}
		for id, m := range sg.members {
			for _, ts := range []taskSet{m.assigned.active, m.pendingRevocation.active} {
				for task := range ts {
					if o, dup := want[task]; dup && o != id {
						problem = fmt.Sprintf("task %v active in %s and %s", task, o, id)
					}
					want[task] = id
				}
			}
		}
		if problem == "" && !maps.Equal(want, sg.activeOwner) {
			problem = fmt.Sprintf("activeOwner %v, the members say %v", sg.activeOwner, want)
		}
	})
	if !ran || problem != "" {
		t.Fatalf("active owner index (ran %v): %s", ran, problem)
	}
}

// TestStreamsSessionTimeoutMovesTasks: a member that stops heartbeating is
// fenced after group.streams.session.timeout.ms and its tasks move.
func TestStreamsSessionTimeoutMovesTasks(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("in", 2)
	a := e.newStreamsClient("g", "a", wordCount("in"))
	b := e.newStreamsClient("g", "b", wordCount("in"))
	for range 4 {
		a.heartbeat()
		b.heartbeat()
	}
	if len(a.owned.active) != 2 || len(b.owned.active) != 2 {
		t.Fatalf("split %v / %v", a.owned.active, b.owned.active)
	}
	for range 5 {
		e.clk.Advance(e.cfg.StreamsSessionTimeout / 4)
		a.heartbeat()
	}
	a.heartbeat()
	if len(a.owned.active) != 4 {
		t.Fatalf("a owns %v after b expired", a.owned.active)
	}
	if resp := b.send(b.request()); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	checkActiveOwnerIndex(t, e, "g")
}

// TestStreamsGroupResumesAfterRestart: the records bring every member
// back at its epoch and tasks.
func TestStreamsGroupResumesAfterRestart(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("in", 2)
	a := e.newStreamsClient("g", "a", wordCount("in"))
	b := e.newStreamsClient("g", "b", wordCount("in"))
	for range 4 {
		a.heartbeat()
		b.heartbeat()
	}
	before := e.c.StreamsGroupDescribe(context.Background(), "g")
	e.restart()
	a.e, b.e = e, e
	after := e.c.StreamsGroupDescribe(context.Background(), "g")
	bt, at := *before.Topology, *after.Topology
	before.Topology, after.Topology = nil, nil
	if fmt.Sprint(before) != fmt.Sprint(after) || fmt.Sprint(bt) != fmt.Sprint(at) {
		t.Fatalf("before %+v\nafter  %+v", before, after)
	}
	checkActiveOwnerIndex(t, e, "g") // rebuilt by the load
	ea := a.epoch
	a.heartbeat()
	if a.epoch != ea || len(a.owned.active) != 2 {
		t.Fatalf("after restart: epoch %d (was %d), owned %v", a.epoch, ea, a.owned.active)
	}
	// Offsets: commits check the member epoch as Kafka's streams groups.
	commit := func(member string, epoch int32, version int16) int16 {
		return e.c.CommitOffsets(context.Background(), version, "g", epoch, member, nil,
			[]CommitPartition{{Topic: "in", Partition: 0, Offset: 5, LeaderEpoch: -1, CommitTimestamp: 1, ExpireTimestamp: -1}})[0]
	}
	expectCode(t, "commit at epoch", commit("a", a.epoch, 9), nil)
	expectCode(t, "commit ahead", commit("a", a.epoch+1, 9), kerr.StaleMemberEpoch)
	expectCode(t, "unknown member", commit("z", a.epoch, 9), kerr.UnknownMemberID)
	expectCode(t, "old version", commit("a", a.epoch, 8), kerr.UnsupportedVersion)
	if code := e.c.CheckFetchMember(context.Background(), "g", &a.id, a.epoch+1); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch with a stale epoch: %v", kerr.ErrorForCode(code))
	}
	ls := e.c.ListGroups(nil, []string{"streams"})
	if len(ls) != 1 || ls[0].Group != "g" || ls[0].ProtocolType != "streams" || ls[0].State != "Stable" {
		t.Fatalf("list %+v", ls)
	}
	expectCode(t, "delete non-empty", e.c.DeleteGroup(context.Background(), "g"), kerr.NonEmptyGroup)
	a.leave()
	b.leave()
	expectCode(t, "delete empty", e.c.DeleteGroup(context.Background(), "g"), nil)
	e.restart()
	if ls := e.c.ListGroups(nil, nil); len(ls) != 0 {
		t.Fatalf("deleted group back: %+v", ls)
	}
}

// kafkaStreamsRecords are the streams group records Apache Kafka 4.3.1
// wrote for the java-streams compat client (the last value of each type).
func kafkaStreamsRecords(t testing.TB) [][3]string {
	f, err := os.Open("testdata/streams_records_kafka431.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][3]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 {
			out = append(out, [3]string{fs[0], fs[1], fs[2]})
		}
	}
	return out
}

// TestStreamsRecordsKafkaGolden decodes each record Kafka 4.3.1 wrote and
// encodes it again: the bytes must be Kafka's.
func TestStreamsRecordsKafkaGolden(t *testing.T) {
	recs := kafkaStreamsRecords(t)
	if len(recs) < 6 {
		t.Fatalf("%d golden records", len(recs))
	}
	for _, r := range recs {
		key, _ := hex.DecodeString(r[1])
		val, _ := hex.DecodeString(r[2])
		typ := binary.BigEndian.Uint16(key)
		groupID, memberID, err := parseStreamsKey(typ, key)
		if err != nil {
			t.Fatalf("key %s: %v", r[1], err)
		}
		var mp *string
		if memberID != "" {
			mp = &memberID
		}
		if got := consumerKey(int16(typ), groupID, mp); string(got) != string(key) {
			t.Errorf("type %d key\n got %x\nwant %x", typ, got, key)
		}
		sg := newStreamsGroup()
		if err := decodeStreamsRecord(sg, typ, memberID, val); err != nil {
			t.Fatalf("type %d: %v", typ, err)
		}
		var ms int64
		if typ == recStreamsGroupTargetMetadata {
			ms = int64(binary.BigEndian.Uint64(val[len(val)-8:]))
		}
		if got, _ := encodeStreamsRecord(sg, typ, memberID, ms); string(got) != string(val) {
			t.Errorf("type %d value\n got %x\nwant %x", typ, got, val)
		}
	}
}

// encodeStreamsRecord is the value of the record of type typ as the
// coordinator writes it from sg (memberID's for member records; the
// target metadata's assignment time at ms, which decoding drops); false
// for a type with no value of its own.
func encodeStreamsRecord(sg *streamsGroup, typ uint16, memberID string, ms int64) ([]byte, bool) {
	switch typ {
	case recStreamsGroupMetadata:
		return streamsMetadataValue(sg), true
	case recStreamsGroupMemberMetadata:
		return streamsMemberValue(sg.members[memberID]), true
	case recStreamsGroupCurrentMember:
		return streamsCurrentValue(sg.members[memberID]), true
	case recStreamsGroupTargetMember:
		return streamsTargetMemberValue(sg.target[memberID]), true
	case recStreamsGroupTargetMetadata:
		return streamsTargetMetadataValue(sg.assignmentEpoch, time.UnixMilli(ms)), true
	case recStreamsGroupTopology:
		return streamsTopologyValue(sg.topology), true
	}
	return nil, false
}

// FuzzStreamsRecords: any bytes as any streams record value decode to an
// error or a state, never a panic; a decoded value encodes again, and
// that encoding decodes and encodes to the same bytes (what the
// coordinator writes it reads back as it was).
func FuzzStreamsRecords(f *testing.F) {
	for _, r := range kafkaStreamsRecords(f) {
		key, _ := hex.DecodeString(r[1])
		val, _ := hex.DecodeString(r[2])
		f.Add(binary.BigEndian.Uint16(key), val)
	}
	f.Fuzz(func(t *testing.T, typ uint16, value []byte) {
		typ = recStreamsGroupMetadata + typ%7
		sg := newStreamsGroup()
		if err := decodeStreamsRecord(sg, typ, "m", value); err != nil {
			return
		}
		first, ok := encodeStreamsRecord(sg, typ, "m", 1_700_000_000_000)
		if !ok {
			return
		}
		again := newStreamsGroup()
		if err := decodeStreamsRecord(again, typ, "m", first); err != nil {
			t.Fatalf("type %d: the re-encoded value %x does not decode: %v", typ, first, err)
		}
		if second, _ := encodeStreamsRecord(again, typ, "m", 1_700_000_000_000); string(second) != string(first) {
			t.Fatalf("type %d: round trip changed the value\n first %x\nsecond %x", typ, first, second)
		}
	})
}

// TestStreamsDisabled: without streams in
// group.coordinator.rebalance.protocols both APIs answer
// UNSUPPORTED_VERSION, as Kafka's KafkaApis.
func TestStreamsDisabled(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.StreamsDisabled = true })
	e.topic("in", 1)
	a := e.newStreamsClient("g", "a", wordCount("in"))
	expectCode(t, "heartbeat", a.send(a.request()).ErrorCode, kerr.UnsupportedVersion)
	expectCode(t, "describe", e.c.StreamsGroupDescribe(context.Background(), "g").ErrorCode, kerr.UnsupportedVersion)
}

// TestStreamsInitialRebalanceDelay: a new group's first assignment waits
// group.streams.initial.rebalance.delay.ms (ASSIGNMENT_DELAYED meanwhile),
// so a member joining within the delay is assigned with the first.
func TestStreamsInitialRebalanceDelay(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.StreamsInitialRebalanceDelay = 3 * time.Second })
	e.topic("in", 2)
	for _, n := range []string{"app-words-repartition", "app-counts-changelog"} {
		if _, err := e.store.CreateTopic(n, 2, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	a := e.newStreamsClient("g", "a", wordCount("in"))
	b := e.newStreamsClient("g", "b", wordCount("in"))
	for _, c := range []*sgClient{a, b} {
		resp := c.heartbeat()
		// The member takes an epoch (Kafka answers 1), so it heartbeats
		// as a member, not as a join.
		if fmt.Sprint(statusCodes(resp)) != fmt.Sprint([]int8{streamsAssignmentDelayed}) || len(c.owned.active) != 0 || c.epoch < 1 {
			t.Fatalf("%s during the delay: status %v, owned %v", c.id, resp.Status, c.owned.active)
		}
	}
	e.clk.Advance(3 * time.Second)
	for range 3 {
		a.heartbeat()
		b.heartbeat()
	}
	if len(a.last.Status) != 0 || len(a.owned.active) != 2 || len(b.owned.active) != 2 {
		t.Fatalf("after the delay: status %v, owned %v / %v", a.last.Status, a.owned.active, b.owned.active)
	}
	// Later joins are not delayed.
	c := e.newStreamsClient("g", "c", wordCount("in"))
	if resp := c.heartbeat(); len(resp.Status) != 0 {
		t.Fatalf("later join: %v", resp.Status)
	}
}

// TestStreamsEndpointsAndStandbys: with one standby replica each task has
// its standby on the other process; members with a user endpoint learn
// which partitions each endpoint serves (interactive queries) whenever
// their endpoint epoch is behind.
func TestStreamsEndpointsAndStandbys(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.StreamsNumStandbyReplicas = 1 })
	e.topic("in", 2)
	a := e.newStreamsClient("g", "a", wordCount("in"))
	b := e.newStreamsClient("g", "b", wordCount("in"))
	endpoint := func(c *sgClient, port uint16) {
		r := c.request()
		r.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h-" + c.id, Port: port}
		if resp := c.send(r); resp.ErrorCode != 0 {
			t.Fatalf("%s: %v", c.id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	endpoint(a, 1)
	endpoint(b, 2)
	var resp *kmsg.StreamsGroupHeartbeatResponse
	for range 4 {
		a.heartbeat()
		resp = b.heartbeat()
	}
	for _, c := range []*sgClient{a, b} {
		if len(c.owned.active) != 2 || len(c.owned.standby) != 2 || hasAny(c.owned.active, c.owned.standby) {
			t.Fatalf("%s: active %v standby %v", c.id, c.owned.active, c.owned.standby)
		}
	}
	r := b.request()
	r.EndpointInformationEpoch = 0
	resp = b.send(r)
	if len(resp.PartitionsByUserEndpoint) != 2 || resp.EndpointInformationEpoch == 0 {
		t.Fatalf("endpoints %+v epoch %d", resp.PartitionsByUserEndpoint, resp.EndpointInformationEpoch)
	}
	served := map[string]int{}
	for _, ep := range resp.PartitionsByUserEndpoint {
		for _, p := range ep.ActivePartitions {
			served[p.Topic] += len(p.Partitions)
		}
	}
	if served["in"] != 2 || served["app-words-repartition"] != 2 {
		t.Fatalf("active partitions by endpoint %v", served)
	}
	r = b.request()
	r.EndpointInformationEpoch = resp.EndpointInformationEpoch
	if again := b.send(r); again.PartitionsByUserEndpoint != nil {
		t.Fatalf("endpoints sent again at the same epoch: %+v", again.PartitionsByUserEndpoint)
	}
}
