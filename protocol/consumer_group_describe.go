package protocol

// ConsumerGroupDescribe: v0-1
//
// Behavior (KIP-848): each KIP-848 group's state (Empty, Assigning,
// Reconciling, Stable), group epoch, target assignment epoch, assignor,
// and per member its epoch, client, subscription (names and regex), and
// current and target assignments by topic id and name. A group we do not
// have, or a classic one, is GROUP_ID_NOT_FOUND with Kafka's message.
// Authorized operations when asked for: everything Kafka's ACLs allow on
// a group (there is no authorizer); otherwise INT32_MIN.
//
// Version notes:
//   - v1: member MemberType (KIP-1099): always consumer here, since
//     classic members of consumer groups are not built

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.ConsumerGroupDescribe.Int16(), 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		if !s.consumerGroupsEnabled() {
			// group.version 0 (UpdateFeatures), as Kafka answers it.
			resp.Groups = append(resp.Groups, kmsg.ConsumerGroupDescribeResponseGroup{Group: id, ErrorCode: kerr.UnsupportedVersion.Code})
			continue
		}
		if s.groups == nil {
			resp.Groups = append(resp.Groups, kmsg.ConsumerGroupDescribeResponseGroup{Group: id, ErrorCode: coordinatorNotAvailable})
			continue
		}
		if id == "" {
			resp.Groups = append(resp.Groups, kmsg.ConsumerGroupDescribeResponseGroup{Group: id, ErrorCode: kerr.InvalidGroupID.Code})
			continue
		}
		if code := s.groupAuthCode(r, authz.OpDescribe, id); code != 0 {
			resp.Groups = append(resp.Groups, kmsg.ConsumerGroupDescribeResponseGroup{Group: id, ErrorCode: code, AuthorizedOperations: authorizedOperationsUnset})
			continue
		}
		d := s.groups.ConsumerGroupDescribe(r.Ctx, id, r.Version)
		s.hideUndescribableAssignments(r, &d)
		if d.ErrorCode == 0 && req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = s.authorizedOps(r, authz.ResourceGroup, id)
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
