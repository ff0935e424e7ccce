package protocol

// JoinGroup: v0-9
//
// Behavior: the classic group protocol of coordinator/ (see its package
// doc). The request blocks until the group's join phase ends, as in Kafka;
// a closed connection abandons it. An empty group id is INVALID_GROUP_ID;
// a session timeout outside group.min/max.session.timeout.ms is
// INVALID_SESSION_TIMEOUT; no protocol type or no protocols, or none in
// common with the group, is INCONSISTENT_GROUP_PROTOCOL. A group at
// group.max.size turns new members away with GROUP_MAX_SIZE_REACHED and
// no member id (Kafka 3.9's acceptJoiningMember). A new member whose
// JoinGroup the join phase has not answered within 5 minutes is dropped
// with UNKNOWN_MEMBER_ID (Kafka's NewMemberJoinTimeoutMs). The member id
// is the client id, "-", and a UUID, as Kafka builds it.
//
// Version notes:
//   - v1: RebalanceTimeoutMillis (v0 uses the session timeout)
//   - v2: throttle
//   - v3: no schema change
//   - v4: a first join without member id gets MEMBER_ID_REQUIRED and the
//     id to rejoin with (KIP-394)
//   - v5: InstanceID (static membership, KIP-345)
//   - v6: flexible
//   - v7: ProtocolType and nullable Protocol in the response
//   - v8: Reason (KIP-800), logged only
//   - v9: SkipAssignment: a static leader rejoining a stable group keeps
//     the assignment (KIP-814); before v9 that rejoin rebalances

import (
	"errors"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() {
	register(kmsg.JoinGroup.Int16(), 0, 9, handleJoinGroup)
	register(kmsg.SyncGroup.Int16(), 0, 5, handleSyncGroup)
	register(kmsg.Heartbeat.Int16(), 0, 4, handleHeartbeat)
	register(kmsg.LeaveGroup.Int16(), 0, 5, handleLeaveGroup)
}

// errRequestAbandoned ends a blocked group request whose connection or
// server is closing: the connection is closed anyway.
var errRequestAbandoned = errors.New("protocol: request abandoned by a closing connection")

// clientInfo is the client id and host Kafka records on a group member
// (the host as Kafka prints an InetAddress: "/127.0.0.1").
func clientInfo(r *Request) coordinator.ClientInfo {
	ci := coordinator.ClientInfo{}
	if r.ClientID != nil {
		ci.ClientID = *r.ClientID
	}
	if r.Remote != nil {
		host := r.Remote.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		ci.ClientHost = "/" + host
	}
	return ci
}

func handleJoinGroup(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	if code := s.groupAuthCode(r, authz.OpRead, req.Group); code != 0 {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = code, -1
		return resp, nil
	}
	resp := s.groups.JoinGroup(r.Ctx, req, clientInfo(r))
	if resp == nil {
		return nil, errRequestAbandoned
	}
	resp.Version = r.Version
	return resp, nil
}
