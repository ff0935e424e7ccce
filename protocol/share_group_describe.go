package protocol

// ShareGroupDescribe: v1
//
// Behavior: each group's epoch, assignment epoch, assignor ("simple"),
// state (Empty or Stable) and members with their subscriptions and
// assignments; GROUP_ID_NOT_FOUND for a group we do not have or one of
// another type. Authorization: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED); a group whose assignments name a topic
// the client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED without
// members. Authorized operations (KIP-430) when asked for, else
// -2147483648.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.ShareGroupDescribe.Int16(), 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		if !s.shareGroupsEnabled() {
			d := kmsg.NewShareGroupDescribeResponseGroup()
			d.GroupID, d.ErrorCode = id, unsupportedVersion
			resp.Groups = append(resp.Groups, d)
			continue
		}
		if code := s.groupAuthCode(r, authz.OpDescribe, id); code != 0 {
			d := kmsg.NewShareGroupDescribeResponseGroup()
			d.GroupID, d.ErrorCode, d.AuthorizedOperations = id, code, authorizedOperationsUnset
			resp.Groups = append(resp.Groups, d)
			continue
		}
		d := s.groups.ShareGroupDescribe(r.Ctx, id)
		if d.ErrorCode == 0 && req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = s.authorizedOps(r, authz.ResourceGroup, id)
		}
		s.hideUndescribableShareAssignments(r, &d)
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
