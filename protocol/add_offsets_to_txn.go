package protocol

// AddOffsetsToTxn: v0-4
//
// Behavior (Kafka's KafkaApis.handleAddOffsetsToTxnRequest): the group's
// __consumer_offsets partition (abs(groupId.hashCode) % partitions, the
// topic created if needed) joins the producer's transaction, with
// AddPartitionsToTxn's codes; its TxnOffsetCommits then become visible
// when the transaction commits.
//
// Version notes:
//   - v1: no schema change
//   - v2: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH
//   - v3: flexible
//   - v4: no schema change (TRANSACTION_ABORTABLE, KIP-890)

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.AddOffsetsToTxn.Int16(), 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if s.txns == nil {
		resp.ErrorCode = coordinatorNotAvailable
		return resp, nil
	}
	if resp.ErrorCode = s.txnIDAuthCode(r, authz.OpWrite, req.TransactionalID); resp.ErrorCode != 0 {
		return resp, nil
	}
	if resp.ErrorCode = s.groupAuthCode(r, authz.OpRead, req.Group); resp.ErrorCode != 0 {
		return resp, nil
	}
	resp.ErrorCode = s.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
	if r.Version < 2 && resp.ErrorCode == kerr.ProducerFenced.Code {
		resp.ErrorCode = kerr.InvalidProducerEpoch.Code
	}
	return resp, nil
}
