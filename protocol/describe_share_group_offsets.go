package protocol

// DescribeShareGroupOffsets: v0-1
//
// Behavior: each share-partition's start offset (SPSO) and leader epoch
// from the share state persister's summary (-1 where there is no state),
// for the topics asked or, with Topics null, every share-partition the
// group initialized; GROUP_ID_NOT_FOUND for a group that is not a share
// group, UNKNOWN_TOPIC_OR_PARTITION per partition. Authorization: DESCRIBE
// on the group (GROUP_AUTHORIZATION_FAILED for it), DESCRIBE on each topic
// named (TOPIC_AUTHORIZATION_FAILED per partition; left out of an
// all-topics answer).
//
// Version notes: v1 adds Lag: the high watermark minus the SPSO minus the
// records above it whose delivery is complete (-1 without state).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeShareGroupOffsets.Int16(), 0, 1, handleDescribeShareGroupOffsets) }

func handleDescribeShareGroupOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range req.Groups {
		resp.Groups = append(resp.Groups, s.describeShareGroupOffsets(r, g))
	}
	return resp, nil
}

// describeShareGroupOffsets is one group's answer with Kafka's checks:
// DESCRIBE on the group; named topics the client may not DESCRIBE are
// TOPIC_AUTHORIZATION_FAILED per partition, and such topics are left out
// of an all-topics answer.
func (s *Server) describeShareGroupOffsets(r *Request, g kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	if !s.shareGroupsEnabled() {
		out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		out.GroupID, out.ErrorCode, out.ErrorMessage = g.GroupID, unsupportedVersion, &unsupportedVersionMessage
		return out
	}
	if code := s.groupAuthCode(r, authz.OpDescribe, g.GroupID); code != 0 {
		out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		out.GroupID, out.ErrorCode, out.ErrorMessage = g.GroupID, code, authErrMessage(code)
		return out
	}
	if s.cfg.Authorizer == nil {
		return s.groups.DescribeShareGroupOffsets(r.Ctx, r.Version, g)
	}
	all := g.Topics == nil
	var refused []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	if !all {
		g.Topics, refused = splitAuthorized(slices.Clone(g.Topics),
			func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) bool {
				return s.authorizeTopic(r, authz.OpDescribe, t.Topic)
			},
			func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
				rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.StartOffset, rp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
					rp.ErrorMessage = authErrMessage(rp.ErrorCode)
					rt.Partitions = append(rt.Partitions, rp)
				}
				return rt
			})
	}
	out := s.groups.DescribeShareGroupOffsets(r.Ctx, r.Version, g)
	if out.ErrorCode != 0 {
		return out
	}
	if all {
		kept := out.Topics[:0]
		for _, t := range out.Topics {
			if s.authorizeTopic(r, authz.OpDescribe, t.Topic) {
				kept = append(kept, t)
			}
		}
		out.Topics = kept
	}
	out.Topics = append(out.Topics, refused...)
	return out
}
