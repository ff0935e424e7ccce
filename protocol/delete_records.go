package protocol

// DeleteRecords: v0-2
//
// Behavior (Kafka's KafkaApis.handleDeleteRecordsRequest,
// ReplicaManager.deleteRecordsOnLocalLog, Partition.deleteRecordsOnLeader,
// UnifiedLog.maybeIncrementLogStartOffset; KIP-107):
//   - Moves the partition's log start offset up to the requested offset
//     (-1 means the high watermark); records below it are gone for
//     clients: ListOffsets earliest returns it, Fetch below it gets
//     OFFSET_OUT_OF_RANGE, and retention deletes the segments wholly below
//     it at its next run. An offset at or below the log start offset is a
//     successful no-op. LowWatermark is the log start offset afterwards.
//   - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION. Internal
//     topics: INVALID_TOPIC_EXCEPTION. cleanup.policy without delete:
//     POLICY_VIOLATION. An offset below -1 or past the high watermark:
//     OFFSET_OUT_OF_RANGE. A failed partition's LowWatermark is -1.
//   - TimeoutMillis bounds Kafka's wait for followers to catch up; a
//     single replica answers at once.
//
// Version notes:
//   - v1: no schema change
//   - v2: flexible
// Kafka 4.x serves v0-2 as 3.9 does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DeleteRecords.Int16(), 0, 2, handleDeleteRecords) }

// deleteRecordsHighWatermark is DeleteRecordsRequest.HIGH_WATERMARK.
const deleteRecordsHighWatermark = -1

func handleDeleteRecords(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			l, err := s.store.Log(rt.Topic, rp.Partition)
			switch {
			case !s.authorizeTopic(r, authz.OpDelete, rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case err != nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case partition.IsInternalTopic(rt.Topic):
				sp.ErrorCode = kerr.InvalidTopicException.Code
			case !l.Config().Delete():
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				offset := rp.Offset
				if offset == deleteRecordsHighWatermark {
					offset = l.Offsets().HighWatermark
				}
				if offset < 0 {
					sp.ErrorCode = kerr.OffsetOutOfRange.Code
					break
				}
				start, err := l.AdvanceLogStartOffset(offset)
				if err != nil {
					sp.ErrorCode = s.errorCode(err)
					break
				}
				sp.LowWatermark = start
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
