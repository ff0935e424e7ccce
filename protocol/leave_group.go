package protocol

// LeaveGroup: v0-5
//
// Behavior: removes members and rebalances the rest. v0-2 name one member
// and answer with a top-level code; v3+ name several (by member id, or by
// instance id for static members) and answer per member: UNKNOWN_MEMBER_ID
// for an unknown one, FENCED_INSTANCE_ID when the member id does not match
// the instance's. An unknown group answers UNKNOWN_MEMBER_ID for each.
//
// Version notes:
//   - v1: throttle
//   - v2: no schema change
//   - v3: batched Members with InstanceID (KIP-345)
//   - v4: flexible
//   - v5: Reason (KIP-800), logged only

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func handleLeaveGroup(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode = s.groupAuthCode(r, authz.OpRead, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	members := req.Members
	if r.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	code, codes := s.groups.LeaveGroup(r.Ctx, req.Group, members)
	resp.ErrorCode = code
	if code != 0 {
		return resp, nil
	}
	if r.Version < 3 {
		resp.ErrorCode = codes[0]
		return resp, nil
	}
	for i, m := range members {
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{
			MemberID:   m.MemberID,
			InstanceID: m.InstanceID,
			ErrorCode:  codes[i],
		})
	}
	return resp, nil
}
