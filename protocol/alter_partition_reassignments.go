package protocol

// AlterPartitionReassignments: v0-1
//
// Behavior (Kafka's ReplicationControlManager.alterPartitionReassignments):
//   - Nothing can move on one broker: every partition's only replica is us.
//     Each partition is answered on its own, in request order:
//   - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION with Kafka's
//     messages.
//   - Replicas null cancels a reassignment; none is ever in progress, so
//     NO_REASSIGNMENT_IN_PROGRESS.
//   - v1 with AllowReplicationFactorChange false: a target whose length is
//     not the current replication factor (1) gets INVALID_REPLICATION_FACTOR
//     "The replication factor is changed from 1 to N" (KIP-860).
//   - Otherwise the target is checked as Kafka's
//     validateManualPartitionAssignment does (INVALID_REPLICA_ASSIGNMENT for
//     an empty list, a broker that is not us, or us twice); the one valid
//     target, [node.id], is the current assignment, so it succeeds with
//     nothing to do, as in Kafka.
//
// Version notes:
//   - v0: flexible from the start
//   - v1: AllowReplicationFactorChange in the request, echoed in the
//     response (KIP-860)

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() {
	register(kmsg.AlterPartitionAssignments.Int16(), 0, 1, handleAlterPartitionReassignments)
}

func handleAlterPartitionReassignments(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRFChange := r.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRFChange
	denied := s.clusterAuthCode(r, authz.OpAlter)
	resp.ErrorCode = denied
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		topic := s.store.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			code, msg := int16(0), ""
			switch {
			case denied != 0:
				code = denied
			case topic == nil:
				code, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find a topic named %s.", t.Topic)
			case p.Partition < 0 || int(p.Partition) >= len(topic.Partitions):
				code, msg = kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find partition %s:%d.", t.Topic, p.Partition)
			case p.Replicas == nil:
				code = kerr.NoReassignmentInProgress.Code
			case !allowRFChange && len(p.Replicas) != 1:
				code, msg = kerr.InvalidReplicationFactor.Code, fmt.Sprintf("The replication factor is changed from 1 to %d", len(p.Replicas))
			default:
				if m := s.checkReplicaList(p.Replicas, -1); m != "" {
					code, msg = kerr.InvalidReplicaAssignment.Code, m
				}
			}
			rp.ErrorCode = code
			if msg != "" {
				rp.ErrorMessage = msgPtr(msg)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
