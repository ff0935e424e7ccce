package protocol

// ConsumerGroupHeartbeat: v0-1
//
// Behavior (KIP-848, Kafka 4.x's GroupMetadataManager.consumerGroupHeartbeat):
// a member joins (epoch 0), heartbeats with its member epoch and what it
// owns, or leaves (epoch -1; -2 for a static member leaving for now, its
// assignment kept for the session timeout). The coordinator computes the
// target assignment with the server-side assignor ("uniform" or "range",
// group.consumer.assignors; the member's ServerAssignor if given), and
// hands each member its partitions only once every other member has
// revoked them: a partition is never owned twice. Heartbeat interval and
// session timeout are the broker's group.consumer.heartbeat.interval.ms
// and group.consumer.session.timeout.ms; a member that does not revoke
// within its rebalance timeout is fenced. Errors as Kafka's, with its
// messages: INVALID_REQUEST for a malformed request, UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID,
// GROUP_MAX_SIZE_REACHED (group.consumer.max.size),
// UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, and GROUP_ID_NOT_FOUND
// for a classic group with members (the online migration of KIP-848 is
// not built; an empty classic group becomes a consumer group).
//
// Deliberate differences: the assignors are our own (uniform: balanced
// within one partition and sticky; range: per-topic ranges, sticky within
// quota), so which member gets which partition can differ from Kafka's;
// subscribed topics are looked up at each heartbeat (Kafka reacts to
// metadata images); a static member rejoining with epoch 0 and its own
// member id is re-admitted in place rather than UNRELEASED_INSTANCE_ID;
// rack-aware assignment is not built (RackID is kept and described);
// classic members cannot join a consumer group (JoinGroup answers
// INCONSISTENT_GROUP_PROTOCOL while it has members).
//
// Version notes:
//   - v0: the coordinator makes the member id when the first heartbeat
//     has none
//   - v1: SubscribedTopicRegex (broker-side regex, RE2 syntax as Go's
//     regexp, close to Kafka's RE2J, matching the whole topic name); the
//     client must generate its member id (KIP-1082)

import (
	"github.com/kcompatd/kcompatd/protocol/authz"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ConsumerGroupHeartbeat.Int16(), 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !s.consumerGroupsEnabled() {
		// group.version 0 (UpdateFeatures): as Kafka, no message.
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if s.groups == nil {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = coordinatorNotAvailable
		return resp, nil
	}
	if code := s.consumerGroupHeartbeatAuthCode(r, req); code != 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	ci := clientInfo(r)
	if s.cfg.Authorizer != nil {
		ci.DescribesTopic = func(topic string) bool { return s.authorizeTopic(r, authz.OpDescribe, topic) }
	}
	return s.groups.ConsumerGroupHeartbeat(r.Ctx, req, ci), nil
}
