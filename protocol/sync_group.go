package protocol

// SyncGroup: v0-5
//
// Behavior: followers block until the leader's SyncGroup carries the
// assignment (or the group rebalances: REBALANCE_IN_PROGRESS); the leader's
// assignment is written to __consumer_offsets before anyone is answered.
// Unknown group or member: UNKNOWN_MEMBER_ID; a stale generation:
// ILLEGAL_GENERATION; an instance id registered to another member:
// FENCED_INSTANCE_ID; during the join phase: REBALANCE_IN_PROGRESS.
//
// Version notes:
//   - v1: throttle
//   - v2: no schema change
//   - v3: InstanceID (KIP-345)
//   - v4: flexible
//   - v5: ProtocolType and Protocol, checked against the group's
//     (INCONSISTENT_GROUP_PROTOCOL) and returned

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

var coordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code

func handleSyncGroup(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SyncGroupRequest)
	if code := s.groupAuthCode(r, authz.OpRead, req.Group); code != 0 {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode, resp.MemberAssignment = code, []byte{}
		return resp, nil
	}
	resp := s.groups.SyncGroup(r.Ctx, req)
	if resp == nil {
		return nil, errRequestAbandoned
	}
	resp.Version = r.Version
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp, nil
}
