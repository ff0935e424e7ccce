package protocol

// AddPartitionsToTxn: v0-5
//
// Behavior (Kafka's KafkaApis.handleAddPartitionsToTxnRequest):
//   - v0-3 (clients): one transaction; its partitions join the producer's
//     transaction (Empty or Complete* -> Ongoing). Every partition gets
//     the transaction's code. A partition of a topic we do not have is
//     UNKNOWN_TOPIC_OR_PARTITION and one of an internal topic
//     TOPIC_AUTHORIZATION_FAILED (Kafka never authorizes clients to write
//     internal topics), and then nothing is added: the other partitions
//     get OPERATION_NOT_ATTEMPTED.
//   - v4-5 (brokers, KIP-890 part 1): a batch of transactions, each
//     answered on its own; VerifyOnly asks whether the partitions are
//     already in the ongoing transaction (TRANSACTION_ABORTABLE per
//     partition if not) without adding them; without it they are added
//     for a client of transaction.version 2. With no authorizer, the
//     CLUSTER_ACTION Kafka requires for v4+ is granted.
//   - Coordinator codes: INVALID_PRODUCER_ID_MAPPING (unknown id or
//     another producer id), PRODUCER_FENCED (another epoch;
//     INVALID_PRODUCER_EPOCH below v2), CONCURRENT_TRANSACTIONS
//     (PrepareCommit/PrepareAbort), INVALID_REQUEST (empty id).
//
// Version notes:
//   - v1: no schema change
//   - v2: PRODUCER_FENCED instead of INVALID_PRODUCER_EPOCH
//   - v3: flexible
//   - v4: batched transactions, VerifyOnly, top-level ErrorCode
//   - v5: no schema change (TRANSACTION_ABORTABLE, KIP-890)

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.AddPartitionsToTxn.Int16(), 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version < 4 {
		parts := txnTopicPartitions(len(req.Topics), func(i int) (string, []int32) { return req.Topics[i].Topic, req.Topics[i].Partitions })
		codes := s.addPartitionsToTxnAuth(r, req.TransactionalID, parts)
		if codes == nil {
			codes = s.addPartitionsToTxn(r.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, parts)
		}
		for _, g := range groupTxnResults(parts, codes) {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = g.topic
			for i, p := range g.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, g.codes[i]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if resp.ErrorCode = s.clusterAuthCode(r, authz.OpClusterAction); resp.ErrorCode != 0 { // v4+: from brokers
		return resp, nil
	}
	for _, tx := range req.Transactions {
		parts := txnTopicPartitions(len(tx.Topics), func(i int) (string, []int32) { return tx.Topics[i].Topic, tx.Topics[i].Partitions })
		codes := s.addPartitionsToTxn(r.Version, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, parts)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, g := range groupTxnResults(parts, codes) {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = g.topic
			for i, p := range g.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, g.codes[i]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}

// txnTopicPartitions flattens a request's topics into distinct
// partitions (Kafka collects them in a set).
func txnTopicPartitions(n int, topic func(i int) (string, []int32)) []coordinator.TopicPartition {
	seen := map[coordinator.TopicPartition]bool{}
	var out []coordinator.TopicPartition
	for i := 0; i < n; i++ {
		name, ps := topic(i)
		for _, p := range ps {
			tp := coordinator.TopicPartition{Topic: name, Partition: p}
			if !seen[tp] {
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	return out
}

// addPartitionsToTxn answers one transaction of the request: a code per
// partition of parts.
func (s *Server) addPartitionsToTxn(version int16, txnID string, pid int64, epoch int16, verifyOnly bool, parts []coordinator.TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	all := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	failed := false
	for i, tp := range parts {
		t := s.store.Topic(tp.Topic)
		switch {
		case version < 4 && t != nil && t.Internal:
			codes[i], failed = kerr.TopicAuthorizationFailed.Code, true
		case t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions):
			codes[i], failed = kerr.UnknownTopicOrPartition.Code, true
		}
	}
	if failed {
		for i := range codes {
			if codes[i] == 0 {
				codes[i] = kerr.OperationNotAttempted.Code
			}
		}
		return codes
	}
	if s.txns == nil {
		return all(coordinatorNotAvailable)
	}
	if verifyOnly {
		return s.txns.VerifyPartitions(txnID, pid, epoch, parts)
	}
	add := s.txns.AddPartitions
	if version >= 4 {
		// Brokers send v4+ without VerifyOnly only for clients of
		// transaction.version 2 (AddPartitionsToTxnManager's
		// ADD_PARTITION), so the transaction records TV2.
		add = s.txns.AddPartitionsTV2
	}
	code := add(txnID, pid, epoch, parts)
	if version < 2 && code == kerr.ProducerFenced.Code {
		code = kerr.InvalidProducerEpoch.Code
	}
	return all(code)
}

// txnTopicResult is one topic's partitions and codes in a response.
type txnTopicResult struct {
	topic      string
	partitions []int32
	codes      []int16
}

// groupTxnResults groups partitions and codes by topic, in name and
// partition order.
func groupTxnResults(parts []coordinator.TopicPartition, codes []int16) []txnTopicResult {
	idx := make([]int, len(parts))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		pa, pb := parts[idx[a]], parts[idx[b]]
		if pa.Topic != pb.Topic {
			return pa.Topic < pb.Topic
		}
		return pa.Partition < pb.Partition
	})
	var out []txnTopicResult
	for _, i := range idx {
		p := parts[i]
		if n := len(out); n == 0 || out[n-1].topic != p.Topic {
			out = append(out, txnTopicResult{topic: p.Topic})
		}
		g := &out[len(out)-1]
		g.partitions = append(g.partitions, p.Partition)
		g.codes = append(g.codes, codes[i])
	}
	return out
}
