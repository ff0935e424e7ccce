package protocol

// EndTxn: v0-5
//
// Behavior (Kafka's KafkaApis.handleEndTxnRequest and
// TransactionCoordinator.endTransaction):
//   - Ongoing: PrepareCommit/PrepareAbort is written to
//     __transaction_state, then a COMMIT or ABORT marker to every
//     partition of the transaction (for __consumer_offsets partitions the
//     producer's transactional offset commits become visible or are
//     dropped), then CompleteCommit/CompleteAbort. Deliberate difference:
//     Kafka answers after the Prepare write and writes the markers in the
//     background; the markers here are local appends, written before the
//     answer, so the next request finds the transaction complete (a
//     marker that fails to write leaves it in Prepare*, answered
//     CONCURRENT_TRANSACTIONS until the retry succeeds).
//   - Below v5 (Kafka's endTransactionWithTV1) a retry after completion
//     is answered as Kafka does: the same outcome again is NONE, the other
//     INVALID_TXN_STATE; Prepare* of the same outcome
//     CONCURRENT_TRANSACTIONS; Empty INVALID_TXN_STATE.
//   - INVALID_PRODUCER_ID_MAPPING for an unknown id or another producer
//     id, PRODUCER_FENCED for another epoch (INVALID_PRODUCER_EPOCH below
//     v2), INVALID_REQUEST for an empty id.
//
// Version notes:
//   - v1: no schema change
//   - v2: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH
//   - v3: flexible
//   - v4: no schema change (TRANSACTION_ABORTABLE, KIP-890)
//   - v5: transaction.version 2 rules (KIP-890 part 2, Kafka 4.x's TV2
//     endTransaction), whatever the finalized transaction.version: every
//     EndTxn bumps the epoch, the markers carry the bumped epoch, and
//     ProducerID/ProducerEpoch answer the id and epoch to use next; at
//     epoch 32766 a new producer id is allocated and answered at epoch 0.
//     A retry is the request with the epoch one below the current one (or
//     the rotated-out id at 32766): NONE for the outcome that completed,
//     with the current id and epoch. With the current epoch, an abort with
//     no transaction open (Empty, CompleteCommit, CompleteAbort) writes an
//     empty PrepareAbort/CompleteAbort and bumps the epoch; a commit there
//     is INVALID_TXN_STATE; a retry epoch in Empty is PRODUCER_FENCED.
//     Clients send v5 once transaction.version 2 is finalized, as it is
//     by default (api_versions.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.EndTxn.Int16(), 0, 5, handleEndTxn) }

func handleEndTxn(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if s.txns == nil {
		resp.ErrorCode = coordinatorNotAvailable
		return resp, nil
	}
	if resp.ErrorCode = s.txnIDAuthCode(r, authz.OpWrite, req.TransactionalID); resp.ErrorCode != 0 {
		return resp, nil
	}
	resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = s.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, r.Version >= 5)
	if r.Version < 2 && resp.ErrorCode == kerr.ProducerFenced.Code {
		resp.ErrorCode = kerr.InvalidProducerEpoch.Code
	}
	return resp, nil
}
