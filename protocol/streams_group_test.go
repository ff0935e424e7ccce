package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	versionChecks[88] = checkStreamsGroupHeartbeatVersion
	versionChecks[89] = checkStreamsGroupDescribeVersion
}

// sgJoin sends a first StreamsGroupHeartbeat: one subtopology reading in
// with a changelog.
func sgJoin(t *testing.T, w *wire, v int16, group, member string) *kmsg.StreamsGroupHeartbeatRequest {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, member, 30000
	process := "p-" + member
	req.ProcessID = &process
	topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s.SubtopologyID, s.SourceTopics = "0", []string{"in"}
	s.StateChangelogTopics = []kmsg.TopicInfo{{Topic: group + "-store-changelog", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}
	topo.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s}
	req.Topology = &topo
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

// checkStreamsGroupHeartbeatVersion: the first heartbeat asks for the
// changelog (MISSING_INTERNAL_TOPICS) and the handler creates it with one
// partition per task; the next one is given every task; a leave ends it.
func checkStreamsGroupHeartbeatVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	b.createTopic(t, "in", 3, nil)
	req := sgJoin(t, w, v, "g", "m1")
	resp := w.roundTrip(req).(*kmsg.StreamsGroupHeartbeatResponse)
	expectErr(t, "join", resp.ErrorCode, nil)
	if resp.MemberID != "m1" || resp.MemberEpoch < 1 || resp.HeartbeatIntervalMillis != 5000 ||
		len(resp.Status) != 1 || resp.Status[0].StatusCode != 3 || resp.ActiveTasks == nil || len(resp.ActiveTasks) != 0 {
		t.Fatalf("join answer %+v", resp)
	}
	if tp := b.store.Topic("g-store-changelog"); tp == nil || len(tp.Partitions) != 3 || tp.Config.CleanupPolicy != "compact" {
		t.Fatalf("changelog topic %+v", tp)
	}
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.SetVersion(v)
	hb.Group, hb.MemberID, hb.MemberEpoch = "g", "m1", resp.MemberEpoch
	resp = w.roundTrip(hb).(*kmsg.StreamsGroupHeartbeatResponse)
	expectErr(t, "heartbeat", resp.ErrorCode, nil)
	if len(resp.Status) != 0 || len(resp.ActiveTasks) != 1 || len(resp.ActiveTasks[0].Partitions) != 3 {
		t.Fatalf("heartbeat answer %+v", resp)
	}
	bad := sgJoin(t, w, v, "g", "")
	expectErr(t, "empty member id", w.roundTrip(bad).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode, kerr.InvalidRequest)
	hb.MemberEpoch = -1
	lr := w.roundTrip(hb).(*kmsg.StreamsGroupHeartbeatResponse)
	expectErr(t, "leave", lr.ErrorCode, nil)
	if lr.MemberEpoch != -1 {
		t.Fatalf("leave epoch %d", lr.MemberEpoch)
	}
	expectErr(t, "leave again", w.roundTrip(hb).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
}

func checkStreamsGroupDescribeVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	b.createTopic(t, "in", 2, nil)
	expectErr(t, "join", w.roundTrip(sgJoin(t, w, 0, "g", "m1")).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode, nil)
	stable(t, w, "classic")
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.SetVersion(v)
	req.Groups = []string{"g", "classic", "unknown", ""}
	req.IncludeAuthorizedOperations = true
	resp := w.roundTrip(req).(*kmsg.StreamsGroupDescribeResponse)
	if len(resp.Groups) != 4 {
		t.Fatalf("groups %+v", resp.Groups)
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "NotReady" || g.Topology == nil || len(g.Topology.Subtopologies) != 1 ||
		len(g.Members) != 1 || g.Members[0].ProcessID != "p-m1" || g.AuthorizedOperations != groupAuthorizedOperations {
		t.Fatalf("described %+v", g)
	}
	expectErr(t, "classic", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	expectErr(t, "unknown", resp.Groups[2].ErrorCode, kerr.GroupIDNotFound)
	expectErr(t, "empty", resp.Groups[3].ErrorCode, kerr.InvalidGroupID)
}
