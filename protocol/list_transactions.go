package protocol

// ListTransactions: v0-2
//
// Behavior (KIP-664, Kafka's TransactionStateManager.listTransactionStates):
// every transactional id (none Dead) matching all filters: StateFilters
// (state names; ones Kafka does not know are returned in
// UnknownStateFilters and match nothing), ProducerIDFilters, v1+
// DurationFilterMillis (only transactions running longer than it; -1:
// any), v2+ TransactionalIDPattern (a regular expression the whole id must
// match; empty or null: any; one that does not compile is
// INVALID_REGULAR_EXPRESSION). Deliberate difference: the pattern is Go's
// RE2 syntax, not java.util.regex (the common subset behaves the same;
// lookarounds and backreferences are refused).
//
// Version notes:
//   - v0: flexible
//   - v1: DurationFilterMillis (KIP-994)
//   - v2: TransactionalIDPattern (KIP-1152)

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.ListTransactions.Int16(), 0, 2, handleListTransactions) }

func handleListTransactions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if s.txns == nil {
		resp.ErrorCode = coordinatorNotAvailable
		return resp, nil
	}
	f := coordinator.ListFilter{States: req.StateFilters, ProducerIDs: req.ProducerIDFilters, DurationMs: -1}
	if r.Version >= 1 {
		f.DurationMs = req.DurationFilterMillis
	}
	if r.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(`^(?:` + *req.TransactionalIDPattern + `)$`)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.Pattern = re
	}
	resp.TransactionStates, resp.UnknownStateFilters, resp.ErrorCode = s.txns.ListTransactions(f)
	if !s.authorizeCluster(r, authz.OpDescribe) { // else only the ids r may describe
		kept := resp.TransactionStates[:0]
		for _, st := range resp.TransactionStates {
			if s.authorizeTxnID(r, authz.OpDescribe, st.TransactionalID) {
				kept = append(kept, st)
			}
		}
		resp.TransactionStates = kept
	}
	return resp, nil
}
