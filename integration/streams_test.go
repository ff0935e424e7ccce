package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsMember is a KIP-1071 member driven with raw StreamsGroupHeartbeat
// requests: it owns what the last answer assigned it (revoked tasks are
// dropped at once) and reports that in every heartbeat.
type streamsMember struct {
	id, process string
	epoch       int32
	active      map[string]bool // "subtopology/partition"
	last        *kmsg.StreamsGroupHeartbeatResponse
}

func streamsTopology(in string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{in}, []string{"app-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID, s1.SourceTopics = "1", []string{"app-words-repartition"}
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "app-words-repartition"}}
	s1.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "app-counts-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

func (m *streamsMember) heartbeat(t *testing.T, cl *kgo.Client, group string, epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = group, m.id, epoch
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 30000
		r.Topology = streamsTopology("in")
		r.ProcessID = &m.process
	} else {
		bySub := map[string][]int32{}
		for k := range m.active {
			var sub string
			var p int32
			fmt.Sscanf(k, "%s %d", &sub, &p)
			bySub[sub] = append(bySub[sub], p)
		}
		for sub, ps := range bySub {
			r.ActiveTasks = append(r.ActiveTasks, kmsg.TaskIDs{SubtopologyID: sub, Partitions: ps})
		}
	}
	// kgo does not route StreamsGroupHeartbeat to a coordinator: one
	// broker is the coordinator of every group.
	resp, err := r.RequestWith(context.Background(), cl.Broker(1))
	if err != nil {
		t.Fatalf("%s: heartbeat: %v", m.id, err)
	}
	m.last = resp
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("%s: heartbeat: %v %v", m.id, err, resp.ErrorMessage)
	}
	if epoch >= 0 {
		m.epoch = resp.MemberEpoch
	}
	if resp.ActiveTasks != nil {
		m.active = map[string]bool{}
		for _, ts := range resp.ActiveTasks {
			for _, p := range ts.Partitions {
				m.active[fmt.Sprintf("%s %d", ts.SubtopologyID, p)] = true
			}
		}
	}
	return resp
}

func neverOwnedTwice(t *testing.T, ms ...*streamsMember) {
	t.Helper()
	owner := map[string]string{}
	for _, m := range ms {
		for k := range m.active {
			if o, ok := owner[k]; ok {
				t.Fatalf("task %s owned by %s and %s", k, o, m.id)
			}
			owner[k] = m.id
		}
	}
}

// TestStreamsGroupTwoMembers drives a streams group (KIP-1071) on the real
// binary: the first member's topology makes the broker create the
// repartition and changelog topics (MISSING_INTERNAL_TOPICS meanwhile),
// then it gets all 8 tasks; a second member joins and the tasks are split,
// never owned by both; the group survives a restart at the same epochs;
// the second member leaves and its tasks move back.
func TestStreamsGroupTwoMembers(t *testing.T) {
	b := startBroker(t, "", "offsets.topic.num.partitions=3", "group.streams.initial.rebalance.delay.ms=0")
	b.createTopic(t, "in", 4, nil)
	cl := b.newClient(t)
	const group = "streams-app"
	a := &streamsMember{id: "member-a", process: "process-a"}
	c := &streamsMember{id: "member-b", process: "process-b"}

	resp := a.heartbeat(t, cl, group, 0)
	if len(resp.Status) != 1 || resp.Status[0].StatusCode != 3 {
		t.Fatalf("first heartbeat status %+v, want MISSING_INTERNAL_TOPICS", resp.Status)
	}
	for i := 0; len(a.active) != 8; i++ {
		if i == 10 {
			t.Fatalf("a owns %v, status %+v", a.active, a.last.Status)
		}
		a.heartbeat(t, cl, group, a.epoch)
	}
	c.heartbeat(t, cl, group, 0)
	for i := 0; len(a.active) != 4 || len(c.active) != 4 || len(a.last.Status) != 0; i++ {
		if i == 10 {
			t.Fatalf("split %v / %v", a.active, c.active)
		}
		a.heartbeat(t, cl, group, a.epoch)
		neverOwnedTwice(t, a, c)
		c.heartbeat(t, cl, group, c.epoch)
		neverOwnedTwice(t, a, c)
	}

	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups = []string{group}
	dresp, err := dreq.RequestWith(context.Background(), cl.Broker(1))
	if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].State != "Stable" || len(dresp.Groups[0].Members) != 2 {
		t.Fatalf("describe: %v %+v", err, dresp)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	lreq.TypesFilter = []string{"streams"}
	lresp, err := lreq.RequestWith(context.Background(), cl)
	if err != nil || len(lresp.Groups) != 1 || lresp.Groups[0].GroupType != "streams" || lresp.Groups[0].ProtocolType != "streams" {
		t.Fatalf("list: %v %+v", err, lresp)
	}

	b = b.restart(t)
	cl = b.newClient(t)
	ea, ec := a.epoch, c.epoch
	a.heartbeat(t, cl, group, a.epoch)
	c.heartbeat(t, cl, group, c.epoch)
	if a.epoch != ea || c.epoch != ec || len(a.active) != 4 || len(c.active) != 4 {
		t.Fatalf("after restart: epochs %d %d (were %d %d), tasks %v / %v", a.epoch, c.epoch, ea, ec, a.active, c.active)
	}

	c.heartbeat(t, cl, group, -1)
	c.active = nil
	for i := 0; len(a.active) != 8; i++ {
		if i == 10 {
			t.Fatalf("after leave a owns %v", a.active)
		}
		a.heartbeat(t, cl, group, a.epoch)
	}
}
