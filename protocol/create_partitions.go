package protocol

// CreatePartitions: v0-3
//
// Behavior (Kafka's ControllerApis.createPartitions and
// ReplicationControlManager.createPartitions, in their order of checks):
//   - A topic named twice gets one INVALID_REQUEST "Duplicate topic name."
//     entry, before the others.
//   - Then per topic: unknown topic (UNKNOWN_TOPIC_OR_PARTITION); a count
//     equal to or below the current one (INVALID_PARTITIONS: partitions only
//     grow); assignments given but not one per new partition, or one that
//     is empty, names any broker but us, names us twice or has a replica
//     count other than the topic's (1) (INVALID_REPLICA_ASSIGNMENT, with
//     Kafka's messages). On one broker the only valid assignment is [our
//     node id].
//   - A request adding more than partition.MaxPartitionsPerRequest (10000)
//     partitions over its topics is refused whole, every entry
//     POLICY_VIOLATION "Unable to perform excessively large batch
//     operation." (Kafka's controller: one record per new partition, at
//     most 10000 records per operation).
//   - ValidateOnly runs every check and creates nothing.
//   - New partitions are created synchronously (empty logs, then the
//     catalog), so TimeoutMillis is not needed.
//
// Version notes:
//   - v1: no schema change (throttle on quota violation)
//   - v2: flexible
//   - v3: no schema change (THROTTLING_QUOTA_EXCEEDED, KIP-599)

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.CreatePartitions.Int16(), 0, 3, handleCreatePartitions) }

func handleCreatePartitions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)

	count := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	var adding int64
	for _, t := range req.Topics {
		if tp := s.store.Topic(t.Topic); tp != nil && count[t.Topic] == 1 && int(t.Count) > len(tp.Partitions) {
			adding += int64(int(t.Count) - len(tp.Partitions))
		}
	}
	if adding > partition.MaxPartitionsPerRequest {
		for _, t := range req.Topics {
			resp.Topics = append(resp.Topics, createPartitionsResult(t.Topic, kerr.PolicyViolation.Code, msgPtr(partition.TooManyPartitionsCreatePartitions)))
		}
		return resp, nil
	}
	reported := make(map[string]bool)
	for _, t := range req.Topics {
		if count[t.Topic] > 1 && !reported[t.Topic] {
			reported[t.Topic] = true
			resp.Topics = append(resp.Topics, createPartitionsResult(t.Topic, kerr.InvalidRequest.Code, msgPtr("Duplicate topic name.")))
		}
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		if count[t.Topic] > 1 {
			continue
		}
		code, msg := s.createPartitions(r, t, req.ValidateOnly)
		resp.Topics = append(resp.Topics, createPartitionsResult(t.Topic, code, msg))
	}
	return resp, nil
}

func createPartitionsResult(topic string, code int16, msg *string) kmsg.CreatePartitionsResponseTopic {
	rt := kmsg.NewCreatePartitionsResponseTopic()
	rt.Topic = topic
	rt.ErrorCode = code
	rt.ErrorMessage = msg
	return rt
}

// createPartitions checks and applies one topic's request and returns its
// error code and message.
func (s *Server) createPartitions(r *Request, t *kmsg.CreatePartitionsRequestTopic, validateOnly bool) (int16, *string) {
	if !s.authorizeTopic(r, authz.OpAlter, t.Topic) {
		return kerr.TopicAuthorizationFailed.Code, msgPtr("The topic authorization is failed.")
	}
	topic := s.store.Topic(t.Topic)
	if topic == nil {
		return kerr.UnknownTopicOrPartition.Code, nil
	}
	cur := int32(len(topic.Partitions))
	switch {
	case t.Count == cur:
		return kerr.InvalidPartitions.Code, msgPtr(fmt.Sprintf("Topic already has %d partition(s).", cur))
	case t.Count < cur:
		return kerr.InvalidPartitions.Code, msgPtr(fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, cur, t.Count))
	}
	additional := t.Count - cur
	if t.Assignment != nil {
		if int64(len(t.Assignment)) != int64(additional) {
			return kerr.InvalidReplicaAssignment.Code, msgPtr(fmt.Sprintf(
				"Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(t.Assignment)))
		}
		for _, a := range t.Assignment {
			if msg := s.checkReplicaList(a.Replicas, 1); msg != "" {
				return kerr.InvalidReplicaAssignment.Code, &msg
			}
		}
	}
	if _, err := s.store.CreatePartitions(t.Topic, t.Count, validateOnly); err != nil {
		return s.errorAnswer(r, err, t.Topic, -1)
	}
	if !validateOnly {
		s.log.Debug().Str("topic", t.Topic).Int32("partitions", t.Count).Msg("created partitions")
	}
	return 0, nil
}

// checkReplicaList is Kafka's validateManualPartitionAssignment against a
// cluster of one broker: the message for the first problem, or "". rf < 0
// skips the replica count check.
func (s *Server) checkReplicaList(replicas []int32, rf int) string {
	if len(replicas) == 0 {
		return "The manual partition assignment includes an empty replica list."
	}
	// Kafka checks the sorted list; with one valid id, the first foreign
	// id in sorted order is the smallest.
	foreign, found := int32(0), false
	for _, b := range replicas {
		if b != s.cfg.NodeID && (!found || b < foreign) {
			foreign, found = b, true
		}
	}
	if found && (foreign < s.cfg.NodeID || countOf(replicas, s.cfg.NodeID) < 2) {
		return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", foreign)
	}
	if countOf(replicas, s.cfg.NodeID) > 1 {
		return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", s.cfg.NodeID)
	}
	if rf >= 0 && len(replicas) != rf {
		return fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	return ""
}

func countOf(xs []int32, x int32) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
