package protocol

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

// allow is an ACL letting every principal do op on rt/name (pt: literal
// or prefixed).
func allow(rt int8, name string, pt int8, op int8) partition.ACL {
	return partition.ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: authz.WildcardPrincipal, Host: "*", Operation: op, Permission: authz.PermissionAllow}
}

// aclGroupBroker is groupBroker with an authorizer and no super user.
func aclGroupBroker(t *testing.T, acls ...partition.ACL) (*testBroker, *wire) {
	t.Helper()
	b := startBrokerTuned(t, func(c *Config) {
		c.Authorizer = authz.New(authz.Config{}, acls, func([]partition.ACL) error { return nil })
	}, nil, func(cfg *coordinator.Config) {
		cfg.InitialRebalanceDelay = 0
		cfg.StreamsInitialRebalanceDelay = 0
		cfg.OffsetsTopicPartitions = 3
	})
	return b, dialWire(t, b.addr)
}

// TestShareAPIsAuthorization: a non-super principal with READ on group
// "sg-ok" and READ on topic "ok" only, checked as Kafka 4.3's KafkaApis.
func TestShareAPIsAuthorization(t *testing.T) {
	b, w := aclGroupBroker(t,
		allow(authz.ResourceGroup, "sg-ok", authz.PatternLiteral, authz.OpRead),
		allow(authz.ResourceTopic, "ok", authz.PatternLiteral, authz.OpRead),
	)
	ok := b.createTopic(t, "ok", 1, nil)
	secret := b.createTopic(t, "secret", 1, nil)

	hb := func(group string, topics ...string) int16 {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID, req.SubscribedTopicNames = group, "m1-aaaaaaaaaaaaaaaaaa", topics
		return w.roundTrip(req).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
	}
	expectErr(t, "heartbeat, group refused", hb("sg-no", "ok"), kerr.GroupAuthorizationFailed)
	expectErr(t, "heartbeat, topic refused", hb("sg-ok", "ok", "secret"), kerr.TopicAuthorizationFailed)
	expectErr(t, "heartbeat", hb("sg-ok", "ok"), nil)

	desc := kmsg.NewPtrShareGroupDescribeRequest()
	desc.SetVersion(1)
	desc.GroupIDs, desc.IncludeAuthorizedOperations = []string{"sg-no", "sg-ok"}, true
	dr := w.roundTrip(desc).(*kmsg.ShareGroupDescribeResponse)
	expectErr(t, "describe, group refused", dr.Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	expectErr(t, "describe", dr.Groups[1].ErrorCode, nil)
	if got, want := dr.Groups[1].AuthorizedOperations, int32(1<<authz.OpRead|1<<authz.OpDescribe); got != want {
		t.Errorf("authorized operations %b, want %b", got, want)
	}

	fetch := func(group string, ids ...[16]byte) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		member := "m1-aaaaaaaaaaaaaaaaaa"
		req.GroupID, req.MemberID, req.MaxBytes, req.MaxRecords, req.BatchSize = &group, &member, 1<<20, 10, 10
		for _, id := range ids {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			req.Topics = append(req.Topics, kmsg.ShareFetchRequestTopic{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{rp}})
		}
		return w.roundTrip(req).(*kmsg.ShareFetchResponse)
	}
	expectErr(t, "fetch, group refused", fetch("sg-no", ok.ID).ErrorCode, kerr.GroupAuthorizationFailed)
	fr := fetch("sg-ok", ok.ID, secret.ID)
	expectErr(t, "fetch", fr.ErrorCode, nil)
	codes := map[[16]byte]int16{}
	for _, tp := range fr.Topics {
		codes[tp.TopicID] = tp.Partitions[0].ErrorCode
	}
	if len(codes) != 2 || codes[ok.ID] != 0 || codes[secret.ID] != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("fetch partition codes %v", codes)
	}

	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.SetVersion(1)
	no, member := "sg-no", "m1-aaaaaaaaaaaaaaaaaa"
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &no, &member, 1
	expectErr(t, "acknowledge, group refused", w.roundTrip(ack).(*kmsg.ShareAcknowledgeResponse).ErrorCode, kerr.GroupAuthorizationFailed)

	dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dso.SetVersion(1)
	dso.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{
		{GroupID: "sg-no"},
		{GroupID: "sg-ok", Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "secret", Partitions: []int32{0}}}},
	}
	dsr := w.roundTrip(dso).(*kmsg.DescribeShareGroupOffsetsResponse)
	expectErr(t, "describe offsets, group refused", dsr.Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	if g := dsr.Groups[1]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || g.Topics[0].Partitions[0].StartOffset != -1 {
		t.Errorf("describe offsets, topic refused: %+v", g)
	}

	alter := func(group, topic string) *kmsg.AlterShareGroupOffsetsResponse {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
		return w.roundTrip(req).(*kmsg.AlterShareGroupOffsetsResponse)
	}
	expectErr(t, "alter offsets, group refused", alter("sg-no", "ok").ErrorCode, kerr.GroupAuthorizationFailed)
	ar := alter("sg-alter-ok", "secret")
	expectErr(t, "alter offsets, group", ar.ErrorCode, kerr.GroupAuthorizationFailed)
	// The member is still in sg-ok: Kafka's coordinator runs with the
	// authorized topics (none) and refuses the non-empty group, and the
	// whole answer is that error, without topics.
	ar = alter("sg-ok", "secret")
	if ar.ErrorCode != kerr.NonEmptyGroup.Code || len(ar.Topics) != 0 {
		t.Errorf("alter offsets of a non-empty group, topic refused: %+v, want NON_EMPTY_GROUP and no topics", ar)
	}
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.SetVersion(1)
	leave.GroupID, leave.MemberID, leave.MemberEpoch = "sg-ok", "m1-aaaaaaaaaaaaaaaaaa", -1
	expectErr(t, "leave", w.roundTrip(leave).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, nil)
	ar = alter("sg-ok", "secret")
	if ar.ErrorCode != 0 || len(ar.Topics) != 1 || len(ar.Topics[0].Partitions) != 1 || ar.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alter offsets of the empty group, topic refused: %+v, want its partition TOPIC_AUTHORIZATION_FAILED", ar)
	}

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "sg-ok" // READ, not DELETE
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "ok"}}
	expectErr(t, "delete offsets without DELETE", w.roundTrip(del).(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode, kerr.GroupAuthorizationFailed)
}

// TestShareOffsetsTopicAuthorization: an empty share group the principal
// may READ and DELETE, and a topic it may not READ. Both topics have share
// state (the refused one's written past the authorizer), so the all-topics
// describe has the refused topic to leave out.
func TestShareOffsetsTopicAuthorization(t *testing.T) {
	b, w := aclGroupBroker(t,
		allow(authz.ResourceGroup, "sg", authz.PatternLiteral, authz.OpRead),
		allow(authz.ResourceGroup, "sg", authz.PatternLiteral, authz.OpDelete),
		allow(authz.ResourceTopic, "ok", authz.PatternLiteral, authz.OpRead),
	)
	b.createTopic(t, "ok", 1, nil)
	b.createTopic(t, "secret", 1, nil)
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sg"
	for _, n := range []string{"ok", "secret"} {
		alter.Topics = append(alter.Topics, kmsg.AlterShareGroupOffsetsRequestTopic{Topic: n, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0}}})
	}
	ar := w.roundTrip(alter).(*kmsg.AlterShareGroupOffsetsResponse)
	codes := map[string]int16{}
	for _, tp := range ar.Topics {
		codes[tp.Topic] = tp.Partitions[0].ErrorCode
	}
	if ar.ErrorCode != 0 || len(codes) != 2 || codes["ok"] != 0 || codes["secret"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alter: %d %v", ar.ErrorCode, codes)
	}
	// The refused topic's state, set as an authorized principal would.
	direct := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	direct.GroupID = "sg"
	direct.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "secret", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0}}}}
	if dr := b.s.groups.AlterShareGroupOffsets(context.Background(), direct); dr.ErrorCode != 0 || len(dr.Topics) != 1 || dr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter secret without the authorizer: %+v", dr)
	}
	// All topics: the refused topic is left out, the other listed.
	allTopics := func() []string {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}
		resp := w.roundTrip(req).(*kmsg.DescribeShareGroupOffsetsResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("all-topics describe: %+v", resp.Groups)
		}
		var names []string
		for _, tp := range resp.Groups[0].Topics {
			names = append(names, tp.Topic)
		}
		return names
	}
	if got := allTopics(); len(got) != 1 || got[0] != "ok" {
		t.Errorf("all-topics describe lists %v, want [ok] (secret refused)", got)
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "sg"
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "ok"}, {Topic: "secret"}}
	dr := w.roundTrip(del).(*kmsg.DeleteShareGroupOffsetsResponse)
	codes = map[string]int16{}
	for _, tp := range dr.Topics {
		codes[tp.Topic] = tp.ErrorCode
	}
	if dr.ErrorCode != 0 || len(codes) != 2 || codes["ok"] != 0 || codes["secret"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("delete: %d %v", dr.ErrorCode, codes)
	}
	// ok's state is gone, secret's kept and still left out.
	if got := allTopics(); len(got) != 0 {
		t.Errorf("all-topics describe after the delete lists %v, want none", got)
	}
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = "sg"
	if g := b.s.groups.DescribeShareGroupOffsets(context.Background(), 1, rg); len(g.Topics) != 1 || g.Topics[0].Topic != "secret" {
		t.Errorf("share state after the delete, without the authorizer: %+v, want secret's only", g.Topics)
	}
}

// TestStreamsAPIsAuthorization: READ on group "g", DESCRIBE on the
// topology's topics, no CREATE: the changelog is not created and the
// status says why; a topic it may not describe fails the heartbeat.
func TestStreamsAPIsAuthorization(t *testing.T) {
	b, w := aclGroupBroker(t,
		allow(authz.ResourceGroup, "g", authz.PatternLiteral, authz.OpRead),
		allow(authz.ResourceTopic, "in", authz.PatternLiteral, authz.OpDescribe),
		allow(authz.ResourceTopic, "g-", authz.PatternPrefixed, authz.OpDescribe),
	)
	b.createTopic(t, "in", 1, nil)
	expectErr(t, "group refused", w.roundTrip(sgJoin(t, w, 0, "other", "m1")).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode, kerr.GroupAuthorizationFailed)
	bad := sgJoin(t, w, 0, "g", "m1")
	bad.Topology.Subtopologies[0].SourceTopics = []string{"in", "secret"}
	expectErr(t, "topic refused", w.roundTrip(bad).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode, kerr.TopicAuthorizationFailed)

	resp := w.roundTrip(sgJoin(t, w, 0, "g", "m1")).(*kmsg.StreamsGroupHeartbeatResponse)
	expectErr(t, "join", resp.ErrorCode, nil)
	if len(resp.Status) != 1 || resp.Status[0].StatusCode != streamsMissingInternalTopics || !strings.Contains(resp.Status[0].StatusDetail, "Unauthorized to CREATE on topics g-store-changelog.") {
		t.Errorf("status %+v", resp.Status)
	}
	if b.store.Topic("g-store-changelog") != nil {
		t.Error("created an internal topic without CREATE")
	}

	desc := kmsg.NewPtrStreamsGroupDescribeRequest()
	desc.Groups, desc.IncludeAuthorizedOperations = []string{"other", "g"}, true
	dr := w.roundTrip(desc).(*kmsg.StreamsGroupDescribeResponse)
	expectErr(t, "describe, group refused", dr.Groups[0].ErrorCode, kerr.GroupAuthorizationFailed)
	expectErr(t, "describe", dr.Groups[1].ErrorCode, nil)
	if got, want := dr.Groups[1].AuthorizedOperations, int32(1<<authz.OpRead|1<<authz.OpDescribe); got != want {
		t.Errorf("authorized operations %b, want %b", got, want)
	}
}

// TestStreamsInternalTopicsCreatedWithCreate: CREATE on the topic (not on
// the cluster) is enough, as Kafka's rule.
func TestStreamsInternalTopicsCreatedWithCreate(t *testing.T) {
	b, w := aclGroupBroker(t,
		allow(authz.ResourceGroup, "g", authz.PatternLiteral, authz.OpRead),
		allow(authz.ResourceTopic, "in", authz.PatternLiteral, authz.OpDescribe),
		allow(authz.ResourceTopic, "g-", authz.PatternPrefixed, authz.OpCreate),
		allow(authz.ResourceTopic, "g-", authz.PatternPrefixed, authz.OpDescribe),
	)
	b.createTopic(t, "in", 1, nil)
	resp := w.roundTrip(sgJoin(t, w, 0, "g", "m1")).(*kmsg.StreamsGroupHeartbeatResponse)
	expectErr(t, "join", resp.ErrorCode, nil)
	if b.store.Topic("g-store-changelog") == nil {
		t.Errorf("changelog not created with CREATE on it: %+v", resp.Status)
	}
}

// TestShareSessionACLRevoked: READ on a session's topic taken away stops
// the session fetching it at its next fetch, which names no topic:
// TOPIC_AUTHORIZATION_FAILED, nothing acquired (Kafka checks the session's
// partitions on every fetch).
func TestShareSessionACLRevoked(t *testing.T) {
	acls := []partition.ACL{
		allow(authz.ResourceGroup, "sg-ok", authz.PatternLiteral, authz.OpRead),
		allow(authz.ResourceTopic, "ok", authz.PatternLiteral, authz.OpRead),
	}
	a := authz.New(authz.Config{}, acls, func([]partition.ACL) error { return nil })
	b := startBrokerTuned(t, func(c *Config) { c.Authorizer = a }, nil, func(cfg *coordinator.Config) {
		cfg.InitialRebalanceDelay = 0
		cfg.OffsetsTopicPartitions = 3
	})
	w := dialWire(t, b.addr)
	ok := b.createTopic(t, "ok", 1, nil)
	member := "m1-aaaaaaaaaaaaaaaaaa"
	for i := 0; i < 3; i++ {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID, req.SubscribedTopicNames = "sg-ok", member, []string{"ok"}
		if i > 0 {
			req.MemberEpoch = 1
			req.SubscribedTopicNames = nil
		}
		r := w.roundTrip(req).(*kmsg.ShareGroupHeartbeatResponse)
		if r.ErrorCode != 0 || r.MemberEpoch != 1 {
			t.Fatalf("heartbeat %d: code %d epoch %d, want 0 and epoch 1", i, r.ErrorCode, r.MemberEpoch)
		}
	}
	b.appendN(t, "ok", 0, 5)
	fetch := func(epoch int32, withTopic bool) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		g := "sg-ok"
		req.GroupID, req.MemberID, req.MaxBytes, req.MaxRecords, req.BatchSize = &g, &member, 1<<20, 2, 2
		req.ShareSessionEpoch = epoch
		if withTopic {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: ok.ID, Partitions: []kmsg.ShareFetchRequestTopicPartition{rp}}}
		}
		return w.roundTrip(req).(*kmsg.ShareFetchResponse)
	}
	// The precondition: with READ the session's first fetch acquires
	// records (2 of the 5; 3 are left for the fetch after the revoke).
	r := fetch(0, true)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("first fetch: %+v", r)
	}
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.AcquiredRecords) == 0 || len(p.Records) == 0 {
		t.Fatalf("first fetch, before the revoke: code %d, %d acquired ranges, %d bytes; want records acquired", p.ErrorCode, len(p.AcquiredRecords), len(p.Records))
	}
	rt := int8(authz.ResourceTopic)
	if _, err := a.Delete([]authz.Filter{{ResourceType: rt, PatternType: authz.PatternAny, Operation: authz.OpAny, Permission: authz.PermissionAllow}}); err != nil {
		t.Fatal(err)
	}
	r = fetch(1, false)
	expectErr(t, "fetch after the revoke", r.ErrorCode, nil)
	for _, tp := range r.Topics {
		if len(tp.Partitions) != 1 {
			t.Errorf("after revoke: %d partitions answered, want 1", len(tp.Partitions))
		}
		for _, p := range tp.Partitions {
			if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.AcquiredRecords) > 0 {
				t.Errorf("after READ was revoked: code %d, %d acquired ranges; want TOPIC_AUTHORIZATION_FAILED, none", p.ErrorCode, len(p.AcquiredRecords))
			}
		}
	}
	if n := len(r.Topics); n != 1 {
		t.Errorf("after revoke: %d topics answered, want 1", n)
	}
}

// TestShareGroupIDAuthorized: as Kafka, ShareFetch and ShareAcknowledge
// refuse a null group id with INVALID_REQUEST, and authorize READ on an
// empty one (GROUP_AUTHORIZATION_FAILED without it) before the member id.
func TestShareGroupIDAuthorized(t *testing.T) {
	a := authz.New(authz.Config{}, nil, func([]partition.ACL) error { return nil })
	b := startBrokerTuned(t, func(c *Config) { c.Authorizer = a }, nil, func(cfg *coordinator.Config) {
		cfg.InitialRebalanceDelay = 0
		cfg.OffsetsTopicPartitions = 3
	})
	w := dialWire(t, b.addr)
	empty, member := "", ""
	for _, tc := range []struct {
		group *string
		code  int16
	}{{nil, kerr.InvalidRequest.Code}, {&empty, kerr.GroupAuthorizationFailed.Code}} {
		f := kmsg.NewPtrShareFetchRequest()
		f.SetVersion(1)
		f.GroupID, f.MemberID = tc.group, &member
		fr := w.roundTrip(f).(*kmsg.ShareFetchResponse)
		ack := kmsg.NewPtrShareAcknowledgeRequest()
		ack.SetVersion(1)
		ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = tc.group, &member, 1
		ar := w.roundTrip(ack).(*kmsg.ShareAcknowledgeResponse)
		if fr.ErrorCode != tc.code || ar.ErrorCode != tc.code {
			t.Errorf("group %v: ShareFetch %d, ShareAcknowledge %d, want %d", tc.group, fr.ErrorCode, ar.ErrorCode, tc.code)
		}
	}
}
