package protocol

// DeleteGroups: v0-2
//
// Behavior: deletes Empty groups with their committed offsets, writing
// tombstones to __consumer_offsets (for a KIP-848 group, of its
// ConsumerGroup* records too). A group with members is NON_EMPTY_GROUP;
// one we do not have GROUP_ID_NOT_FOUND.
//
// Version notes:
//   - v1: no schema change
//   - v2: flexible

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DeleteGroups.Int16(), 0, 2, handleDeleteGroups) }

func handleDeleteGroups(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		code := s.groupAuthCode(r, authz.OpDelete, id)
		if code == 0 {
			code = coordinatorNotAvailable
		}
		if code == coordinatorNotAvailable && s.groups != nil {
			code = s.groups.DeleteGroup(r.Ctx, id)
		}
		resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: id, ErrorCode: code})
	}
	return resp, nil
}
