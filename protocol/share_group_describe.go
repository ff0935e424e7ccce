package protocol

// ShareGroupDescribe: v1
//
// Behavior: each group's epoch, assignment epoch, assignor ("simple"),
// state (Empty or Stable) and members with their subscriptions and
// assignments; GROUP_ID_NOT_FOUND for a group we do not have or one of
// another type. Authorized operations are not computed (no ACLs):
// -2147483648 as Kafka answers when they are not asked for.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.ShareGroupDescribe.Int16(), 1, 1, handleShareGroupDescribe) }

func handleShareGroupDescribe(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		resp.Groups = append(resp.Groups, s.groups.ShareGroupDescribe(r.Ctx, id))
	}
	return resp, nil
}
