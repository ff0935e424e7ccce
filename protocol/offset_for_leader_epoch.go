package protocol

// OffsetForLeaderEpoch: v0-4
//
// Behavior (Kafka's KafkaApis.handleOffsetForLeaderEpochRequest,
// Partition.lastOffsetForLeaderEpoch and LeaderEpochFileCache.endOffsetFor):
//   - Consumers send it after a leader change or when validating a
//     position (KIP-320): LeaderEpoch is the epoch of the last record they
//     consumed, and the answer is where that epoch ends, so they can tell
//     whether the log was truncated below their position.
//   - CurrentLeaderEpoch (v2+), unless -1, is checked against ours (0 on a
//     single broker): below it FENCED_LEADER_EPOCH, above it
//     UNKNOWN_LEADER_EPOCH, and then no offsets are returned.
//   - The requested epoch 0 (ours, the latest) ends at the log end offset;
//     -1 and epochs above ours are unknown: no error, epoch and end offset
//     -1; epochs below -1 get the start offset of epoch 0 (the log start
//     offset), as Kafka answers for an epoch older than its cache.
//   - Unknown topics or partitions get UNKNOWN_TOPIC_OR_PARTITION.
//   - ReplicaID (v3+) only decides authorization in Kafka (consumers send
//     -1, followers their id); without an authorizer every caller is
//     answered alike.
//
// Version notes:
//   - v1: LeaderEpoch in the response
//   - v2: CurrentLeaderEpoch, throttle
//   - v3: ReplicaID
//   - v4: flexible
// Kafka 4.0 serves v2+ only; 3.9 serves v0+, and so do we.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.OffsetForLeaderEpoch.Int16(), 0, 4, handleOffsetForLeaderEpoch) }

// noPartitionLeaderEpoch is RecordBatch.NO_PARTITION_LEADER_EPOCH: the
// client does not know the current epoch and asks for no check.
const noPartitionLeaderEpoch = -1

func handleOffsetForLeaderEpoch(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	follower := s.authorizeCluster(r, authz.OpClusterAction) // may read every topic
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			l, err := s.store.Log(rt.Topic, rp.Partition)
			switch {
			case !follower && !s.authorizeTopic(r, authz.OpDescribe, rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case err != nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case r.Version >= 2 && rp.CurrentLeaderEpoch != noPartitionLeaderEpoch && rp.CurrentLeaderEpoch < l.LeaderEpoch():
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case r.Version >= 2 && rp.CurrentLeaderEpoch != noPartitionLeaderEpoch && rp.CurrentLeaderEpoch > l.LeaderEpoch():
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			default:
				sp.LeaderEpoch, sp.EndOffset = l.EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
