package protocol

// AlterShareGroupOffsets: v0
//
// Behavior: sets the start offset of share-partitions of an empty share
// group (the group is created if it does not exist), initializing their
// share state there (in-flight state dropped, state epoch moved);
// NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND for a group of
// another type, UNKNOWN_TOPIC_OR_PARTITION per partition. Authorization:
// READ on the group (GROUP_AUTHORIZATION_FAILED for the request), READ on
// each topic (TOPIC_AUTHORIZATION_FAILED for its partitions).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.AlterShareGroupOffsets.Int16(), 0, 0, handleAlterShareGroupOffsets) }

func handleAlterShareGroupOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	if !s.shareGroupsEnabled() {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = unsupportedVersion, &unsupportedVersionMessage
		return resp, nil
	}
	if code := s.groupAuthCode(r, authz.OpRead, req.GroupID); code != 0 {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, authErrMessage(code)
		return resp, nil
	}
	var refused []kmsg.AlterShareGroupOffsetsResponseTopic
	req.Topics, refused = splitAuthorized(req.Topics,
		func(t kmsg.AlterShareGroupOffsetsRequestTopic) bool {
			return s.authorizeTopic(r, authz.OpRead, t.Topic)
		},
		func(t kmsg.AlterShareGroupOffsetsRequestTopic) kmsg.AlterShareGroupOffsetsResponseTopic {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			if st := s.store.Topic(t.Topic); st != nil {
				rt.TopicID = st.ID
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rp.ErrorMessage = authErrMessage(rp.ErrorCode)
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	resp := s.groups.AlterShareGroupOffsets(r.Ctx, req)
	if resp.ErrorCode == 0 {
		resp.Topics = append(refused, resp.Topics...)
	}
	return resp, nil
}
