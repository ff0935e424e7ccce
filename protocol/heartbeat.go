package protocol

// Heartbeat: v0-4
//
// Behavior: keeps a member's session alive. Unknown group or member, or
// an Empty group: UNKNOWN_MEMBER_ID; a stale generation:
// ILLEGAL_GENERATION; a fenced static instance: FENCED_INSTANCE_ID; during
// the join phase REBALANCE_IN_PROGRESS (the session is still extended), so
// the member rejoins.
//
// Version notes:
//   - v1: throttle
//   - v2: no schema change
//   - v3: InstanceID (KIP-345)
//   - v4: flexible

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func handleHeartbeat(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if resp.ErrorCode = s.groupAuthCode(r, authz.OpRead, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	resp.ErrorCode = s.groups.Heartbeat(r.Ctx, req)
	return resp, nil
}
