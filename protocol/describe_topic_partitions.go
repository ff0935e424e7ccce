package protocol

// DescribeTopicPartitions: v0
//
// Behavior (Kafka's DescribeTopicPartitionsRequestHandler and
// KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse, KIP-966):
//   - An empty topic list means every topic; otherwise the names given,
//     each once. Either way only names at or after the cursor's topic are
//     considered, in name order.
//   - With a cursor and a topic list, the list must hold the cursor's
//     topic, and a cursor partition must not be negative; else every
//     requested topic gets INVALID_REQUEST (Kafka's error response, which
//     for an all-topics request is empty).
//   - At most ResponsePartitionLimit partitions are returned (clamped to
//     1..2000, max.request.partition.size.limit). When a topic does not fit,
//     NextCursor names the first partition left out; when the limit is
//     used up exactly, it names the next topic at partition 0.
//   - A requested name that does not exist gets UNKNOWN_TOPIC_OR_PARTITION,
//     or INVALID_TOPIC_EXCEPTION if Kafka could not create it; with an empty
//     list such names cannot arise.
//   - Partitions: we lead each with our leader epoch; replicas and ISR are
//     [node.id]; no ELR, last known ELR or offline replicas. Topic
//     authorized operations are every topic operation (no authorizer).

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeTopicPartitions.Int16(), 0, 0, handleDescribeTopicPartitions) }

// maxRequestPartitionSizeLimit is Kafka's max.request.partition.size.limit
// default.
const maxRequestPartitionSizeLimit = 2000

func handleDescribeTopicPartitions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)

	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	set := make(map[string]bool)
	if all {
		for _, t := range s.store.Topics() {
			if t.Name >= cursorTopic && s.authorizeTopic(r, authz.OpDescribe, t.Name) { // others are hidden
				set[t.Name] = true
			}
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic >= cursorTopic {
				set[t.Topic] = true
			}
		}
	}
	if req.Cursor != nil && ((!all && !set[req.Cursor.Topic]) || req.Cursor.Partition < 0) {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = msgPtr(t.Topic)
			rt.ErrorCode = kerr.InvalidRequest.Code
			rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)

	remaining := int(min(max(req.ResponsePartitionLimit, 1), maxRequestPartitionSizeLimit))
	for _, name := range names {
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		if !s.authorizeTopic(r, authz.OpDescribe, name) { // a named topic: existing or not
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = msgPtr(name)
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		t := s.store.Topic(name)
		if t == nil {
			if all {
				continue // deleted meanwhile
			}
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = msgPtr(name)
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if partition.ValidateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			}
			rt.IsInternal = partition.IsInternalTopic(name)
			rt.AuthorizedOperations = s.authorizedOps(r, authz.ResourceTopic, name)
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		start := 0
		if name == cursorTopic {
			start = int(req.Cursor.Partition)
		}
		n := len(t.Partitions)
		upper := min(n, start+remaining)
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = msgPtr(name)
		rt.TopicID = t.ID
		rt.IsInternal = t.Internal
		rt.AuthorizedOperations = s.authorizedOps(r, authz.ResourceTopic, name)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for p := start; p < upper; p++ {
			rt.Partitions = append(rt.Partitions, s.describeTopicPartition(t, int32(p)))
		}
		resp.Topics = append(resp.Topics, rt)
		if upper < n {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(upper)}
			break
		}
		remaining -= len(rt.Partitions)
	}
	return resp, nil
}

func (s *Server) describeTopicPartition(t *partition.Topic, p int32) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	rp.Partition = p
	rp.LeaderID = s.cfg.NodeID
	rp.LeaderEpoch = t.Partitions[p].LeaderEpoch()
	rp.Replicas = []int32{s.cfg.NodeID}
	rp.ISR = []int32{s.cfg.NodeID}
	rp.EligibleLeaderReplicas = []int32{}
	rp.LastKnownELR = []int32{}
	rp.OfflineReplicas = []int32{}
	return rp
}
