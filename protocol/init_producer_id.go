package protocol

// InitProducerId: v0-5
//
// Behavior (Kafka's KafkaApis.handleInitProducerIdRequest and
// TransactionCoordinator.handleInitProducerId):
//   - No transactional id: an idempotent producer, answered with a new
//     producer id at epoch 0, every time (ids come from durable blocks of
//     1000, so they never repeat across restarts).
//   - A transactional id: its epoch is bumped (a new id gets its first
//     producer id at epoch 0); an ongoing transaction is aborted with the
//     epoch fenced, answered CONCURRENT_TRANSACTIONS until the abort is
//     done; PrepareCommit/PrepareAbort answer CONCURRENT_TRANSACTIONS; an
//     exhausted epoch rotates to a new producer id. Empty id:
//     INVALID_REQUEST; a timeout <= 0 or above transaction.max.timeout.ms:
//     INVALID_TRANSACTION_TIMEOUT.
//   - v3+ (KIP-360): ProducerID and ProducerEpoch both -1, or both set
//     (else INVALID_REQUEST); set, they must be the current producer (or
//     the one a lost answer rotated away from), else PRODUCER_FENCED.
//
// Version notes:
//   - v1: no schema change
//   - v2: flexible
//   - v3: ProducerID and ProducerEpoch (KIP-360)
//   - v4: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH (below v4 the
//     latter is answered, as Kafka does for old clients)
//   - v5: no schema change (TRANSACTION_ABORTABLE, KIP-890)

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.InitProducerID.Int16(), 0, 5, handleInitProducerID) }

func handleInitProducerID(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	pid, epoch := int64(-1), int16(-1)
	if r.Version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	switch {
	case req.TransactionalID != nil && !s.authorizeTxnID(r, authz.OpWrite, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case req.TransactionalID == nil && !s.authorizeIdempotent(r):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	case s.txns == nil:
		resp.ErrorCode = coordinatorNotAvailable
		return resp, nil
	case (pid == -1) != (epoch == -1):
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = s.txns.InitProducerID(req.TransactionalID, req.TransactionTimeoutMillis, pid, epoch)
	if r.Version < 4 && resp.ErrorCode == kerr.ProducerFenced.Code {
		resp.ErrorCode = kerr.InvalidProducerEpoch.Code
	}
	return resp, nil
}
