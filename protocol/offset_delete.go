package protocol

// OffsetDelete: v0
//
// Behavior (KIP-496): deletes committed offsets of a group, writing
// tombstones. A group we do not have is GROUP_ID_NOT_FOUND; a non-empty
// group that is not a consumer group is NON_EMPTY_GROUP; in a non-empty
// consumer group (classic with protocol type "consumer", or KIP-848, whose
// regex subscriptions count with the topics they resolved to), a partition
// of a topic some member subscribes to is GROUP_SUBSCRIBED_TO_TOPIC. A partition of a topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.OffsetDelete.Int16(), 0, 0, handleOffsetDelete) }

func handleOffsetDelete(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if resp.ErrorCode = s.groupAuthCode(r, authz.OpDelete, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	codes := make([][]int16, len(req.Topics))
	var parts []coordinator.TopicPartition
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		topic := s.store.Topic(t.Topic)
		for j, p := range t.Partitions {
			if c := s.topicAuthCode(r, authz.OpRead, t.Topic); c != 0 {
				codes[i][j] = c
				continue
			}
			if topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			codes[i][j] = -1
			parts = append(parts, coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	code, partCodes := s.groups.DeleteOffsets(r.Ctx, req.Group, parts)
	resp.ErrorCode = code
	if code != 0 {
		return resp, nil
	}
	k := 0
	for i, t := range req.Topics {
		rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			c := codes[i][j]
			if c == -1 {
				c = partCodes[k]
				k++
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: c})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
