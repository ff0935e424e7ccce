package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGeneratedMemberIDVersion is the ConsumerGroupHeartbeat version
// from which the client must bring its member id (KIP-1082); v0 lets the
// coordinator make one on the first heartbeat.
const consumerGeneratedMemberIDVersion = 1

// ConsumerGroupHeartbeat serves a ConsumerGroupHeartbeat (KIP-848): it
// validates the request as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid, then joins, heartbeats
// or leaves on the group's goroutine.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, client ClientInfo) *kmsg.ConsumerGroupHeartbeatResponse {
	fail := func(e *heartbeatError) *kmsg.ConsumerGroupHeartbeatResponse {
		r := &kmsg.ConsumerGroupHeartbeatResponse{Version: req.Version, ErrorCode: e.code}
		if e.msg != "" {
			msg := e.msg
			r.ErrorMessage = &msg
		}
		return r
	}
	if c.cfg.DisableConsumerProtocol {
		// group.coordinator.rebalance.protocols without "consumer":
		// Kafka's KafkaApis answers UNSUPPORTED_VERSION.
		return fail(hbErr(kerr.UnsupportedVersion, ""))
	}
	hr, e := c.validateHeartbeat(req, client)
	if e != nil {
		return fail(e)
	}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	if !c.onGroup(ctx, req.Group, req.MemberEpoch == 0, func(g *group) { resp, e = g.consumerHeartbeat(hr) }) {
		if c.isClosed() {
			return fail(hbErr(kerr.CoordinatorNotAvailable, ""))
		}
		return fail(hbErr(kerr.GroupIDNotFound, "Consumer group "+req.Group+" not found."))
	}
	if e != nil {
		return fail(e)
	}
	return resp
}

func (c *Coordinator) validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, client ClientInfo) (heartbeatRequest, *heartbeatError) {
	hr := heartbeatRequest{req: req, client: client}
	invalid := func(msg string) (heartbeatRequest, *heartbeatError) {
		return hr, hbErr(kerr.InvalidRequest, msg)
	}
	if strings.TrimSpace(req.Group) == "" {
		return hr, hbErr(kerr.InvalidGroupID, "GroupId can't be empty.")
	}
	if req.Version >= consumerGeneratedMemberIDVersion || req.MemberEpoch != 0 {
		if strings.TrimSpace(req.MemberID) == "" {
			return invalid("MemberId can't be empty.")
		}
	} else if req.MemberID == "" {
		// v0: the coordinator names a new member.
		req.MemberID = newUUIDString()
	}
	if req.InstanceID != nil && strings.TrimSpace(*req.InstanceID) == "" {
		return invalid("InstanceId can't be empty.")
	}
	if req.RackID != nil && strings.TrimSpace(*req.RackID) == "" {
		return invalid("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if len(req.Topics) != 0 || req.Topics == nil {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && (req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "") {
			return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case req.MemberEpoch == leaveStaticEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveStaticEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		re, err := compileSubscriptionRegex(*req.SubscribedTopicRegex)
		if err != nil {
			return hr, hbErr(kerr.InvalidRegularExpression, "SubscribedTopicRegex `"+*req.SubscribedTopicRegex+"` is not a valid regular expression: "+err.Error()+".")
		}
		hr.regex = re
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return hr, hbErr(kerr.UnsupportedAssignor, "ServerAssignor "+*req.ServerAssignor+" is not supported. Supported assignors: "+strings.Join(c.cfg.ConsumerAssignors, ", ")+".")
	}
	return hr, nil
}

// newUUIDString is Kafka's Uuid.randomUuid().toString(): 16 random bytes
// in URL-safe base64 without padding.
func newUUIDString() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ConsumerGroupDescribe describes one group for ConsumerGroupDescribe:
// GROUP_ID_NOT_FOUND for a group we do not have or a classic one.
func (c *Coordinator) ConsumerGroupDescribe(ctx context.Context, groupID string, version int16) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.ConsumerGroupDescribeResponseGroup{Group: groupID, AuthorizedOperations: -2147483648}
	if c.cfg.DisableConsumerProtocol {
		d.ErrorCode = kerr.UnsupportedVersion.Code
		return d
	}
	found := c.onGroup(ctx, groupID, false, func(g *group) {
		if g.cg == nil || g.state == stateDead {
			return
		}
		d = g.describeConsumer(version)
	})
	if code, msg := c.describeError(groupID, "consumer", found, d.State != ""); code != 0 {
		d.ErrorCode, d.ErrorMessage = code, msg
		if code == kerr.GroupIDNotFound.Code {
			d.State = "Dead"
		}
	}
	return d
}

func (g *group) describeConsumer(version int16) kmsg.ConsumerGroupDescribeResponseGroup {
	cg := g.cg
	d := kmsg.ConsumerGroupDescribeResponseGroup{
		Group:                g.id,
		State:                cg.state().String(),
		Epoch:                cg.epoch,
		AssignmentEpoch:      cg.assignmentEpoch,
		AssignorName:         g.preferredAssignor(),
		AuthorizedOperations: -2147483648,
	}
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopics = append([]string{}, m.subscribedNames...)
		if m.regex != "" {
			re := m.regex
			dm.SubscribedTopicRegex = &re
		}
		dm.Assignment = g.describeAssignment(m.assigned)
		dm.TargetAssignment = g.describeAssignment(cg.target[m.id])
		if version >= 1 {
			dm.MemberType = 1 // consumer (KIP-1099)
			if m.classic != nil {
				dm.MemberType = 0 // classic
			}
		}
		d.Members = append(d.Members, dm)
	}
	if d.Members == nil {
		d.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
	}
	return d
}

func (g *group) describeAssignment(s partSet) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range s.byTopic() {
		name := ""
		if tt := g.c.store.TopicByID(t.id); tt != nil {
			name = tt.Name
		}
		a.TopicPartitions = append(a.TopicPartitions, kmsg.AssignmentTopicPartition{TopicID: t.id, Topic: name, Partitions: t.partitions})
	}
	return a
}

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit
// for an OffsetCommit (version >= 0) or a TxnOffsetCommit (version -1):
// epoch -1 commits only while the group has no members; otherwise the
// member must exist (UNKNOWN_MEMBER_ID), use OffsetCommit v9+
// (UNSUPPORTED_VERSION) and bring its member epoch (STALE_MEMBER_EPOCH).
// As Kafka 4.3 relaxes the epoch check, an older epoch is accepted when
// the member has held every committed partition since that epoch, so a
// commit racing an epoch bump that did not take those partitions away
// succeeds.
func (g *group) validateConsumerCommit(version int16, epoch int32, memberID string, parts []commitPart) int16 {
	cg := g.cg
	if epoch < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if version >= 0 && version < 9 && m.classic == nil {
		return kerr.UnsupportedVersion.Code
	}
	if epoch == m.epoch {
		return 0
	}
	if epoch > m.epoch && m.classic != nil {
		return kerr.IllegalGeneration.Code // Kafka's validateMemberEpoch for a classic member
	}
	if epoch > m.epoch || epoch < 0 {
		return kerr.StaleMemberEpoch.Code
	}
	for _, p := range parts {
		t := g.c.store.Topic(p.tp.topic)
		if t == nil {
			return kerr.StaleMemberEpoch.Code
		}
		at, ok := m.assignedAt[topicIDPartition{t.ID, p.tp.partition}]
		if !ok || at > epoch {
			return kerr.StaleMemberEpoch.Code
		}
	}
	return 0
}

// describeConsumerClassic is DescribeGroups' answer for a consumer group,
// as Kafka's ConsumerGroup.asDescribedGroup: protocol type "consumer",
// the assignor as the protocol, and each member's subscription and
// assignment in the classic consumer protocol's encoding.
func (g *group) describeConsumerClassic() kmsg.DescribeGroupsResponseGroup {
	cg := g.cg
	d := kmsg.DescribeGroupsResponseGroup{
		Group:                g.id,
		State:                cg.state().String(),
		ProtocolType:         "consumer",
		Protocol:             g.preferredAssignor(),
		AuthorizedOperations: -2147483648,
		Members:              []kmsg.DescribeGroupsResponseGroupMember{},
	}
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		sub := kmsg.NewConsumerMemberMetadata()
		for _, t := range g.subscribedTopicsOf(m) {
			sub.Topics = append(sub.Topics, t.Name)
		}
		slices.Sort(sub.Topics)
		asg := kmsg.NewConsumerMemberAssignment()
		for _, t := range m.assigned.byTopic() {
			if tt := g.c.store.TopicByID(t.id); tt != nil {
				asg.Topics = append(asg.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tt.Name, Partitions: t.partitions})
			}
		}
		d.Members = append(d.Members, kmsg.DescribeGroupsResponseGroupMember{
			MemberID:         m.id,
			InstanceID:       m.instanceID,
			ClientID:         m.clientID,
			ClientHost:       m.clientHost,
			ProtocolMetadata: sub.AppendTo(nil),
			MemberAssignment: asg.AppendTo(nil),
		})
	}
	return d
}

// CheckFetchMember is Kafka's ConsumerGroup.validateOffsetFetch for
// OffsetFetch v9+: a request that names a member of a consumer group must
// be from a member (UNKNOWN_MEMBER_ID) at its member epoch
// (STALE_MEMBER_EPOCH). Classic groups, groups we do not have and
// requests with no member id and a negative epoch pass, as in Kafka.
func (c *Coordinator) CheckFetchMember(ctx context.Context, groupID string, memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	var code int16
	c.onGroup(ctx, groupID, false, func(g *group) {
		if (g.cg == nil && g.stg == nil) || g.state == stateDead {
			return
		}
		id := ""
		if memberID != nil {
			id = *memberID
		}
		if g.stg != nil {
			code = g.checkStreamsFetchMember(id, epoch)
			return
		}
		m := g.cg.members[id]
		switch {
		case m == nil:
			code = kerr.UnknownMemberID.Code
		case m.epoch != epoch:
			code = kerr.StaleMemberEpoch.Code
		}
	})
	return code
}
