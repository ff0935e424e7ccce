package protocol

// ShareGroupHeartbeat: v1
//
// Behavior (KIP-932, Kafka 4.3's GroupMetadataManager.shareGroupHeartbeat):
// a member joins with the id it made (epoch 0, with its subscribed
// topics), heartbeats with its member epoch, or leaves (epoch -1). The
// group epoch moves when the membership, a subscription or the
// subscribed topics change; the target assignment is then computed by
// the share SimpleAssignor (several members may share a partition) and
// becomes each member's assignment at once. A partition first assigned
// has its share state initialized at share.auto.offset.reset. Heartbeat
// interval and session timeout are share.heartbeat.interval.ms and
// share.session.timeout.ms (group configs) over group.share.*; the
// assignment is sent on join and when it changed. Errors as Kafka's:
// INVALID_REQUEST for a malformed request, UNKNOWN_MEMBER_ID,
// FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED (group.share.max.size),
// GROUP_ID_NOT_FOUND for a group of another type. Authorization: READ on
// the group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on every subscribed
// topic (TOPIC_AUTHORIZATION_FAILED).
//
// Deliberate differences: the assignor's spread is ours (balanced, by
// sorted member id), so which member gets which partition can differ
// from Kafka's; the assignment is computed at once, not every
// share.assignment.interval.ms.
//
// Version notes: v1 is the only version Kafka 4.3 serves (v0 was the
// early-access one).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.ShareGroupHeartbeat.Int16(), 1, 1, handleShareGroupHeartbeat) }

func handleShareGroupHeartbeat(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupHeartbeatRequest)
	if !s.shareGroupsEnabled() {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = unsupportedVersion
		return resp, nil
	}
	if code := s.groupHeartbeatAuthCode(r, req.GroupID, req.SubscribedTopicNames); code != 0 {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	return s.groups.ShareGroupHeartbeat(r.Ctx, req, clientInfo(r)), nil
}
