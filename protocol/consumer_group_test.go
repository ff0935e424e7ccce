package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	versionChecks[68] = checkConsumerGroupHeartbeatVersion
	versionChecks[69] = checkConsumerGroupDescribeVersion
}

// cgJoin sends a first ConsumerGroupHeartbeat at version v.
func cgJoin(t *testing.T, w *wire, v int16, group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, member, 30000
	req.SubscribedTopicNames = topics
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return w.roundTrip(req).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func checkConsumerGroupHeartbeatVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	tp := b.createTopic(t, "t", 3, nil)
	member := "client-made-id"
	if v == 0 {
		member = "" // v0: the coordinator makes it
	}
	resp := cgJoin(t, w, v, "g", member, "t")
	expectErr(t, "join", resp.ErrorCode, nil)
	if resp.MemberID == nil || *resp.MemberID == "" || resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join answer %+v", resp)
	}
	if v >= 1 && *resp.MemberID != member {
		t.Fatalf("member id %q, want the client's", *resp.MemberID)
	}
	if resp.Assignment == nil || len(resp.Assignment.Topics) != 1 || resp.Assignment.Topics[0].TopicID != tp.ID || len(resp.Assignment.Topics[0].Partitions) != 3 {
		t.Fatalf("assignment %+v", resp.Assignment)
	}
	if v >= 1 {
		empty := cgJoin(t, w, v, "g", "", "t")
		expectErr(t, "v1 empty member id", empty.ErrorCode, kerr.InvalidRequest)
		re := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		re.SetVersion(v)
		re.Group, re.MemberID, re.RebalanceTimeoutMillis = "g2", "m", 30000
		rx := "t|u"
		re.SubscribedTopicRegex = &rx
		re.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		rr := w.roundTrip(re).(*kmsg.ConsumerGroupHeartbeatResponse)
		expectErr(t, "regex join", rr.ErrorCode, nil)
		if rr.Assignment == nil || len(rr.Assignment.Topics) != 1 {
			t.Fatalf("regex assignment %+v", rr.Assignment)
		}
	}
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.SetVersion(v)
	leave.Group, leave.MemberID, leave.MemberEpoch = "g", *resp.MemberID, -1
	lr := w.roundTrip(leave).(*kmsg.ConsumerGroupHeartbeatResponse)
	expectErr(t, "leave", lr.ErrorCode, nil)
	if lr.MemberEpoch != -1 {
		t.Fatalf("leave epoch %d", lr.MemberEpoch)
	}
	lr = w.roundTrip(leave).(*kmsg.ConsumerGroupHeartbeatResponse)
	expectErr(t, "leave again", lr.ErrorCode, kerr.UnknownMemberID)
}

func checkConsumerGroupDescribeVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	b.createTopic(t, "t", 2, nil)
	expectErr(t, "join", cgJoin(t, w, 1, "g", "m1", "t").ErrorCode, nil)
	stable(t, w, "classic")
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.SetVersion(v)
	req.Groups = []string{"g", "classic", "unknown"}
	req.IncludeAuthorizedOperations = true
	resp := w.roundTrip(req).(*kmsg.ConsumerGroupDescribeResponse)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 1 || g.AssignmentEpoch != 1 || g.AssignorName != "uniform" ||
		len(g.Members) != 1 || g.Members[0].MemberID != "m1" || len(g.Members[0].Assignment.TopicPartitions) != 1 ||
		g.Members[0].Assignment.TopicPartitions[0].Topic != "t" || g.AuthorizedOperations != groupAuthorizedOperations {
		t.Fatalf("described %+v", g)
	}
	if v >= 1 && g.Members[0].MemberType != 1 {
		t.Fatalf("member type %d", g.Members[0].MemberType)
	}
	expectErr(t, "classic group", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	expectErr(t, "unknown group", resp.Groups[2].ErrorCode, kerr.GroupIDNotFound)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.SetVersion(5)
	lg.TypesFilter = []string{"consumer"}
	l := w.roundTrip(lg).(*kmsg.ListGroupsResponse)
	if len(l.Groups) != 1 || l.Groups[0].Group != "g" || l.Groups[0].GroupType != "consumer" || l.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups consumer: %+v", l.Groups)
	}
}
