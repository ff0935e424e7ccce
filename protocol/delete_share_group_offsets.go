package protocol

// DeleteShareGroupOffsets: v0
//
// Behavior: deletes the share state of the named topics' share-partitions
// of an empty share group (the next assignment initializes them again at
// share.auto.offset.reset); GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, and
// UNKNOWN_TOPIC_OR_PARTITION per topic. Authorization: DELETE on the group
// (GROUP_AUTHORIZATION_FAILED for the request), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for it).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DeleteShareGroupOffsets.Int16(), 0, 0, handleDeleteShareGroupOffsets) }

func handleDeleteShareGroupOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	if !s.shareGroupsEnabled() {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = unsupportedVersion, &unsupportedVersionMessage
		return resp, nil
	}
	if code := s.groupAuthCode(r, authz.OpDelete, req.GroupID); code != 0 {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, authErrMessage(code)
		return resp, nil
	}
	var refused []kmsg.DeleteShareGroupOffsetsResponseTopic
	req.Topics, refused = splitAuthorized(req.Topics,
		func(t kmsg.DeleteShareGroupOffsetsRequestTopic) bool {
			return s.authorizeTopic(r, authz.OpRead, t.Topic)
		},
		func(t kmsg.DeleteShareGroupOffsetsRequestTopic) kmsg.DeleteShareGroupOffsetsResponseTopic {
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			rt.ErrorMessage = authErrMessage(rt.ErrorCode)
			return rt
		})
	resp := s.groups.DeleteShareGroupOffsets(r.Ctx, req)
	if resp.ErrorCode == 0 {
		resp.Topics = append(refused, resp.Topics...)
	}
	return resp, nil
}
