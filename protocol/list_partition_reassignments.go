package protocol

// ListPartitionReassignments: v0
//
// Behavior (Kafka's ReplicationControlManager.listPartitionReassignments):
//   - No reassignment is ever in progress on one broker (see
//     alter_partition_reassignments.go), so the answer lists no topics,
//     whether Topics is null (everything) or names topics, known or not:
//     Kafka lists only partitions with a reassignment in progress and
//     leaves out unknown names without an error.
//
// Version notes:
//   - v0: flexible from the start

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() {
	register(kmsg.ListPartitionReassignments.Int16(), 0, 0, handleListPartitionReassignments)
}

func handleListPartitionReassignments(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	resp.ErrorCode = s.clusterAuthCode(r, authz.OpDescribe)
	return resp, nil
}
