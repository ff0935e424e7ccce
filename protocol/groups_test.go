package protocol

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
)

func init() {
	versionChecks[kmsg.OffsetCommit.Int16()] = checkOffsetCommitVersion
	versionChecks[kmsg.OffsetFetch.Int16()] = checkOffsetFetchVersion
	versionChecks[kmsg.FindCoordinator.Int16()] = checkFindCoordinatorVersion
	versionChecks[kmsg.JoinGroup.Int16()] = checkJoinGroupVersion
	versionChecks[kmsg.Heartbeat.Int16()] = checkHeartbeatVersion
	versionChecks[kmsg.LeaveGroup.Int16()] = checkLeaveGroupVersion
	versionChecks[kmsg.SyncGroup.Int16()] = checkSyncGroupVersion
	versionChecks[kmsg.DescribeGroups.Int16()] = checkDescribeGroupsVersion
	versionChecks[kmsg.ListGroups.Int16()] = checkListGroupsVersion
	versionChecks[kmsg.DeleteGroups.Int16()] = checkDeleteGroupsVersion
	versionChecks[kmsg.OffsetDelete.Int16()] = checkOffsetDeleteVersion
}

// groupBroker is a test broker whose groups rebalance without the initial
// delay, so a JoinGroup is answered without moving the clock (and whose
// transaction coordinator runs over those groups, as every test broker's).
func groupBroker(t testing.TB) (*testBroker, *wire) {
	t.Helper()
	b := startBrokerTuned(t, nil, nil, func(cfg *coordinator.Config) {
		cfg.InitialRebalanceDelay = 0
		cfg.StreamsInitialRebalanceDelay = 0
		cfg.OffsetsTopicPartitions = 3
	})
	return b, dialWire(t, b.addr)
}

func expectErr(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// joinAt joins group at version v (through MEMBER_ID_REQUIRED from v4) and
// returns the answer.
func joinAt(t *testing.T, w *wire, v int16, group string, instance *string) *kmsg.JoinGroupResponse {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(v)
	req.Group = group
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 20000
	req.ProtocolType = "consumer"
	req.InstanceID = instance
	meta := kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	resp := w.roundTrip(req).(*kmsg.JoinGroupResponse)
	if v >= 4 && instance == nil {
		expectErr(t, "first join", resp.ErrorCode, kerr.MemberIDRequired)
		req.MemberID = resp.MemberID
		resp = w.roundTrip(req).(*kmsg.JoinGroupResponse)
	}
	expectErr(t, "join", resp.ErrorCode, nil)
	return resp
}

// stable makes a one-member stable group at JoinGroup/SyncGroup v9/v5.
func stable(t *testing.T, w *wire, group string) (member string, gen int32) {
	t.Helper()
	j := joinAt(t, w, 9, group, nil)
	s := kmsg.NewPtrSyncGroupRequest()
	s.SetVersion(5)
	s.Group, s.Generation, s.MemberID = group, j.Generation, j.MemberID
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("assigned")}}
	expectErr(t, "sync", w.roundTrip(s).(*kmsg.SyncGroupResponse).ErrorCode, nil)
	return j.MemberID, j.Generation
}

func checkFindCoordinatorVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(v)
	if v < 4 {
		req.CoordinatorKey = "g"
		resp := w.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		expectErr(t, "find", resp.ErrorCode, nil)
		if resp.NodeID != 1 || resp.Host != "127.0.0.1" || resp.Port != b.s.cfg.AdvertisedPort {
			t.Fatalf("coordinator %+v", resp)
		}
	} else {
		req.CoordinatorKeys = []string{"a", "b"}
		resp := w.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "b" || resp.Coordinators[1].NodeID != 1 || resp.Coordinators[1].ErrorCode != 0 {
			t.Fatalf("coordinators %+v", resp.Coordinators)
		}
	}
	if tp := b.store.Topic(coordinator.OffsetsTopic); tp == nil || len(tp.Partitions) != 3 || tp.Config.CleanupPolicy != "compact" {
		t.Fatalf("__consumer_offsets not created as expected: %+v", tp)
	}
	if v >= 1 {
		req.CoordinatorType = 1
		resp := w.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		code := resp.ErrorCode
		if v >= 4 {
			code = resp.Coordinators[0].ErrorCode
		}
		expectErr(t, "transaction key", code, nil)
		if tp := b.store.Topic(coordinator.TxnTopic); tp == nil || tp.Config.CleanupPolicy != "compact" {
			t.Fatalf("__transaction_state not created as expected: %+v", tp)
		}
	}
}

func checkJoinGroupVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	_, w := groupBroker(t)
	r := joinAt(t, w, v, "g", nil)
	if r.Generation != 1 || r.LeaderID != r.MemberID || len(r.Members) != 1 {
		t.Fatalf("join %+v", r)
	}
	if v >= 7 && (r.ProtocolType == nil || *r.ProtocolType != "consumer" || r.Protocol == nil || *r.Protocol != "range") {
		t.Fatalf("protocol type/name %v %v", r.ProtocolType, r.Protocol)
	}
	if v < 7 && (r.Protocol == nil || *r.Protocol != "range") {
		t.Fatalf("protocol %v", r.Protocol)
	}
	if v >= 5 {
		inst := "i"
		r := joinAt(t, w, v, "static", &inst)
		if len(r.Members) != 1 || r.Members[0].InstanceID == nil || *r.Members[0].InstanceID != "i" {
			t.Fatalf("static join %+v", r)
		}
	}
	bad := kmsg.NewPtrJoinGroupRequest()
	bad.SetVersion(v)
	bad.Group, bad.SessionTimeoutMillis, bad.ProtocolType = "g2", 1, "consumer"
	bad.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	expectErr(t, "short session", w.roundTrip(bad).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
}

func checkSyncGroupVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	_, w := groupBroker(t)
	j := joinAt(t, w, 9, "g", nil)
	s := kmsg.NewPtrSyncGroupRequest()
	s.SetVersion(v)
	s.Group, s.Generation, s.MemberID = "g", j.Generation, j.MemberID
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("a")}}
	if v >= 5 {
		s.ProtocolType, s.Protocol = strp("consumer"), strp("range")
	}
	resp := w.roundTrip(s).(*kmsg.SyncGroupResponse)
	expectErr(t, "sync", resp.ErrorCode, nil)
	if string(resp.MemberAssignment) != "a" {
		t.Fatalf("assignment %q", resp.MemberAssignment)
	}
	if v >= 5 && (resp.ProtocolType == nil || *resp.ProtocolType != "consumer" || *resp.Protocol != "range") {
		t.Fatalf("protocol %v %v", resp.ProtocolType, resp.Protocol)
	}
	s.Generation++
	expectErr(t, "wrong generation", w.roundTrip(s).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration)
	if v >= 5 {
		s.Generation--
		s.Protocol = strp("roundrobin")
		expectErr(t, "wrong protocol", w.roundTrip(s).(*kmsg.SyncGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	}
}

func checkHeartbeatVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	_, w := groupBroker(t)
	m, gen := stable(t, w, "g")
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(v)
	hb.Group, hb.Generation, hb.MemberID = "g", gen, m
	expectErr(t, "heartbeat", w.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	hb.Generation = gen + 1
	expectErr(t, "wrong generation", w.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
	hb.MemberID = "other"
	expectErr(t, "unknown member", w.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
}

func checkLeaveGroupVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	m, _ := stable(t, w, "g")
	req := kmsg.NewPtrLeaveGroupRequest()
	req.SetVersion(v)
	req.Group = "g"
	if v < 3 {
		req.MemberID = m
		expectErr(t, "leave", w.roundTrip(req).(*kmsg.LeaveGroupResponse).ErrorCode, nil)
		expectErr(t, "leave again", w.roundTrip(req).(*kmsg.LeaveGroupResponse).ErrorCode, kerr.UnknownMemberID)
	} else {
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m}, {MemberID: "nobody"}}
		resp := w.roundTrip(req).(*kmsg.LeaveGroupResponse)
		expectErr(t, "leave", resp.ErrorCode, nil)
		if len(resp.Members) != 2 || resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("members %+v", resp.Members)
		}
	}
	if d, _ := b.s.groups.DescribeGroup(t.Context(), "g", 5); d.State != "Empty" {
		t.Fatalf("state after leave %s", d.State)
	}
}

func commitReq(v int16, group string, gen int32, member, topic string, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(v)
	req.Group, req.Generation, req.MemberID = group, gen, member
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = 0, offset, 7, strp("m")
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
	return req
}

func fetchOffset(t *testing.T, w *wire, group, topic string) kmsg.OffsetFetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(7)
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	resp := w.roundTrip(req).(*kmsg.OffsetFetchResponse)
	return resp.Topics[0].Partitions[0]
}

func checkOffsetCommitVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	tp := b.createTopic(t, "t", 1, nil)
	// From v10 topics go by id.
	byID := func(r *kmsg.OffsetCommitRequest, id [16]byte) *kmsg.OffsetCommitRequest {
		if v >= 10 {
			r.Topics[0].Topic, r.Topics[0].TopicID = "", id
		}
		return r
	}
	resp := w.roundTrip(byID(commitReq(v, "simple", -1, "", "t", 5), tp.ID)).(*kmsg.OffsetCommitResponse)
	expectErr(t, "simple commit", resp.Topics[0].Partitions[0].ErrorCode, nil)
	if v >= 10 && resp.Topics[0].TopicID != tp.ID {
		t.Fatalf("answer's topic id %x", resp.Topics[0].TopicID)
	}
	got := fetchOffset(t, w, "simple", "t")
	wantEpoch := int32(-1)
	if v >= 6 {
		wantEpoch = 7
	}
	if got.Offset != 5 || got.LeaderEpoch != wantEpoch || *got.Metadata != "m" {
		t.Fatalf("fetched %+v", got)
	}
	resp = w.roundTrip(byID(commitReq(v, "simple", -1, "", "nope", 5), [16]byte{0xee})).(*kmsg.OffsetCommitResponse)
	unknown := kerr.UnknownTopicOrPartition
	if v >= 10 {
		unknown = kerr.UnknownTopicID
	}
	expectErr(t, "unknown topic", resp.Topics[0].Partitions[0].ErrorCode, unknown)
	if v >= 1 {
		m, gen := stable(t, w, "g")
		resp = w.roundTrip(byID(commitReq(v, "g", gen, m, "t", 9), tp.ID)).(*kmsg.OffsetCommitResponse)
		expectErr(t, "member commit", resp.Topics[0].Partitions[0].ErrorCode, nil)
		resp = w.roundTrip(byID(commitReq(v, "g", gen+1, m, "t", 9), tp.ID)).(*kmsg.OffsetCommitResponse)
		expectErr(t, "wrong generation", resp.Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	}
}

func checkOffsetFetchVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	b.createTopic(t, "t", 2, nil)
	for _, g := range []string{"g1", "g2"} {
		w.roundTrip(commitReq(6, g, -1, "", "t", 3))
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(v)
	if v < 8 {
		req.Group = "g1"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
		resp := w.roundTrip(req).(*kmsg.OffsetFetchResponse)
		ps := resp.Topics[0].Partitions
		if len(ps) != 2 || ps[0].Offset != 3 || ps[1].Offset != -1 || ps[1].LeaderEpoch != -1 {
			t.Fatalf("fetched %+v", ps)
		}
		if v >= 5 && ps[0].LeaderEpoch != 7 {
			t.Fatalf("leader epoch %d", ps[0].LeaderEpoch)
		}
		if v >= 2 {
			req.Topics = nil
			resp = w.roundTrip(req).(*kmsg.OffsetFetchResponse)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Offset != 3 {
				t.Fatalf("all offsets %+v", resp.Topics)
			}
		}
		return
	}
	tp := b.store.Topic("t")
	topic := func(p int32) []kmsg.OffsetFetchRequestGroupTopic {
		if v >= 10 {
			return []kmsg.OffsetFetchRequestGroupTopic{{TopicID: tp.ID, Partitions: []int32{p}}}
		}
		return []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{p}}}
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: "g1", Topics: topic(0)},
		{Group: "g2"},
		{Group: "unknown", Topics: topic(1)},
	}
	resp := w.roundTrip(req).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 3 {
		t.Fatalf("groups %+v", resp.Groups)
	}
	for i, want := range []int64{3, 3, -1} {
		g := resp.Groups[i]
		if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != want {
			t.Fatalf("group %d: %+v", i, g)
		}
		if v >= 10 && g.Topics[0].TopicID != tp.ID {
			t.Fatalf("group %d: topic id %x", i, g.Topics[0].TopicID)
		}
	}
	if v >= 10 {
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g1", Topics: []kmsg.OffsetFetchRequestGroupTopic{{TopicID: [16]byte{0xee}, Partitions: []int32{0}}}}}
		resp = w.roundTrip(req).(*kmsg.OffsetFetchResponse)
		expectErr(t, "unknown topic id", resp.Groups[0].Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID)
	}
}

func checkDescribeGroupsVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	_, w := groupBroker(t)
	m, _ := stable(t, w, "g")
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(v)
	req.Groups = []string{"g", "unknown"}
	req.IncludeAuthorizedOperations = true
	resp := w.roundTrip(req).(*kmsg.DescribeGroupsResponse)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" || len(g.Members) != 1 ||
		g.Members[0].MemberID != m || string(g.Members[0].MemberAssignment) != "assigned" || g.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("described %+v", g)
	}
	if v >= 3 && g.AuthorizedOperations != groupAuthorizedOperations {
		t.Fatalf("authorized operations %d", g.AuthorizedOperations)
	}
	u := resp.Groups[1]
	if v >= 6 {
		expectErr(t, "unknown group", u.ErrorCode, kerr.GroupIDNotFound)
	} else if u.ErrorCode != 0 || u.State != "Dead" {
		t.Fatalf("unknown group %+v", u)
	}
}

func checkListGroupsVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	b.createTopic(t, "t", 1, nil)
	stable(t, w, "a")
	w.roundTrip(commitReq(6, "b", -1, "", "t", 1))
	req := kmsg.NewPtrListGroupsRequest()
	req.SetVersion(v)
	resp := w.roundTrip(req).(*kmsg.ListGroupsResponse)
	if len(resp.Groups) != 2 || resp.Groups[0].Group != "a" || resp.Groups[0].ProtocolType != "consumer" || resp.Groups[1].ProtocolType != "" {
		t.Fatalf("groups %+v", resp.Groups)
	}
	if v >= 4 {
		req.StatesFilter = []string{"Empty"}
		resp = w.roundTrip(req).(*kmsg.ListGroupsResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].Group != "b" || resp.Groups[0].GroupState != "Empty" {
			t.Fatalf("state filter %+v", resp.Groups)
		}
	}
	if v >= 5 {
		req.StatesFilter, req.TypesFilter = nil, []string{"consumer"}
		if resp = w.roundTrip(req).(*kmsg.ListGroupsResponse); len(resp.Groups) != 0 {
			t.Fatalf("type filter %+v", resp.Groups)
		}
		req.TypesFilter = []string{"classic"}
		if resp = w.roundTrip(req).(*kmsg.ListGroupsResponse); len(resp.Groups) != 2 || resp.Groups[0].GroupType != "classic" {
			t.Fatalf("type filter %+v", resp.Groups)
		}
	}
}

func checkDeleteGroupsVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	b.createTopic(t, "t", 1, nil)
	w.roundTrip(commitReq(6, "g", -1, "", "t", 1))
	stable(t, w, "busy")
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.SetVersion(v)
	req.Groups = []string{"g", "busy", "unknown"}
	resp := w.roundTrip(req).(*kmsg.DeleteGroupsResponse)
	for i, want := range []*kerr.Error{nil, kerr.NonEmptyGroup, kerr.GroupIDNotFound} {
		expectErr(t, fmt.Sprintf("group %s", resp.Groups[i].Group), resp.Groups[i].ErrorCode, want)
	}
	if got := fetchOffset(t, w, "g", "t"); got.Offset != -1 {
		t.Fatalf("offset after delete %d", got.Offset)
	}
}

func checkOffsetDeleteVersion(t *testing.T, _ *testBroker, _ *wire, v int16) {
	b, w := groupBroker(t)
	b.createTopic(t, "t", 1, nil)
	w.roundTrip(commitReq(6, "g", -1, "", "t", 1))
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.SetVersion(v)
	req.Group = "g"
	req.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "nope", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	resp := w.roundTrip(req).(*kmsg.OffsetDeleteResponse)
	expectErr(t, "offset delete", resp.ErrorCode, nil)
	expectErr(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
	expectErr(t, "unknown topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if got := fetchOffset(t, w, "g", "t"); got.Offset != -1 {
		t.Fatalf("offset after delete %d", got.Offset)
	}
	// A consumer group subscribed to the topic keeps its offset.
	m, gen := stable(t, w, "active")
	w.roundTrip(commitReq(6, "active", gen, m, "t", 1))
	req.Group = "active"
	req.Topics = req.Topics[:1]
	resp = w.roundTrip(req).(*kmsg.OffsetDeleteResponse)
	expectErr(t, "subscribed", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	req.Group = "unknown"
	expectErr(t, "unknown group", w.roundTrip(req).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
}

// TestDeleteOffsetsTopic: Kafka 4.3.1 deletes __consumer_offsets when
// asked (no internal-topic check in ControllerApis.deleteTopics or
// ReplicationControlManager.deleteTopic), answers NONE with name and id,
// and its group coordinator resigns the deleted partitions
// (BrokerMetadataPublisher.updateCoordinator -> onResignation): the
// groups and their committed offsets are gone, and a member's next
// heartbeat is told to find its coordinator again. The topic comes back
// on the next use, empty.
func TestDeleteOffsetsTopic(t *testing.T) {
	b, w := groupBroker(t)
	b.createTopic(t, "t", 1, nil)
	resp := w.roundTrip(commitReq(8, "simple", -1, "", "t", 5)).(*kmsg.OffsetCommitResponse)
	expectErr(t, "commit", resp.Topics[0].Partitions[0].ErrorCode, nil)
	m, gen := stable(t, w, "g")
	id := b.store.Topic(coordinator.OffsetsTopic).ID

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: strp(coordinator.OffsetsTopic)}}
	r := w.roundTrip(req).(*kmsg.DeleteTopicsResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || r.Topics[0].ErrorMessage != nil ||
		*r.Topics[0].Topic != coordinator.OffsetsTopic || r.Topics[0].TopicID != [16]byte(id) {
		t.Fatalf("delete: %+v", r.Topics)
	}
	if got := fetchOffset(t, w, "simple", "t"); got.ErrorCode != 0 || got.Offset != -1 {
		t.Fatalf("offset after the offsets topic was deleted: %+v", got)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.Generation, hb.MemberID = "g", gen, m
	got := w.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode
	hb.Group = "never-existed"
	if want := w.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode; got != want || got == 0 {
		t.Fatalf("heartbeat of a member of an unloaded group: %d, of an unknown group %d", got, want)
	}
	resp = w.roundTrip(commitReq(8, "simple", -1, "", "t", 6)).(*kmsg.OffsetCommitResponse)
	expectErr(t, "commit after", resp.Topics[0].Partitions[0].ErrorCode, nil)
	if got := fetchOffset(t, w, "simple", "t"); got.Offset != 6 {
		t.Fatalf("offset committed after deletion: %+v", got)
	}
}
