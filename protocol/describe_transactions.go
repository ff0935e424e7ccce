package protocol

// DescribeTransactions: v0
//
// Behavior (KIP-664, Kafka's TransactionCoordinator.handleDescribeTransactions):
// per transactional id its state, producer id and epoch, timeout, start
// time (-1 before the first partition is added) and partitions;
// TRANSACTIONAL_ID_NOT_FOUND for an id we do not have (or one being
// expired), INVALID_REQUEST for an empty id.
//
// Version notes:
//   - v0: flexible

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeTransactions.Int16(), 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		if s.txns == nil {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, coordinatorNotAvailable
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		if code := s.txnIDAuthCode(r, authz.OpDescribe, id); code != 0 {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st := s.txns.DescribeTransaction(id)
		s.filterDescribableTxnTopics(r, &st)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
