package protocol

// TxnOffsetCommit: v0-5
//
// Behavior (Kafka's KafkaApis.handleTxnOffsetCommitRequest and the group
// coordinator's commitTransactionalOffset):
//   - A partition of a topic that does not exist:
//     UNKNOWN_TOPIC_OR_PARTITION, decided here; the other partitions go to
//     the coordinator, where an empty group id is INVALID_GROUP_ID and a
//     group error answers every one of them: a commit naming a member or
//     generation must come from a member of the group (UNKNOWN_MEMBER_ID,
//     FENCED_INSTANCE_ID) at its generation (ILLEGAL_GENERATION; also for
//     a group we do not have); one from outside any group (generation -1,
//     no member, as before v3) is accepted whatever the group's state, and
//     creates the group if needed. The group's state is not checked
//     otherwise (no REBALANCE_IN_PROGRESS for transactional commits).
//     For a KIP-848 group the generation is the member epoch: a member
//     (UNKNOWN_MEMBER_ID) at its epoch, where a stale one is
//     ILLEGAL_GENERATION (Kafka maps STALE_MEMBER_EPOCH to it for
//     transactional clients).
//   - Before the group is looked at, the transaction coordinator verifies
//     that the group's __consumer_offsets partition is in the producer's
//     ongoing transaction (AddOffsetsToTxn; Kafka 3.6+'s verification,
//     KIP-890 part 1): not added: INVALID_TXN_STATE, TRANSACTION_ABORTABLE
//     from v4; a fenced epoch: INVALID_PRODUCER_EPOCH; a transaction
//     ending: CONCURRENT_TRANSACTIONS; an unknown producer:
//     INVALID_PRODUCER_ID_MAPPING. Every partition gets that answer.
//     From v5 (transaction.version 2) the partition is added to the
//     transaction instead, starting it if none is open, with the same
//     codes otherwise.
//   - Metadata longer than offset.metadata.max.bytes:
//     OFFSET_METADATA_TOO_LARGE for that partition, the others are written.
//   - The offsets are one transactional batch with the producer's id and
//     epoch in the group's partition of __consumer_offsets (a stale epoch:
//     INVALID_PRODUCER_EPOCH) and stay pending until the transaction
//     coordinator writes the producer's marker there: visible to
//     OffsetFetch on commit, dropped on abort (coordinator/txn_offsets.go).
//     A verification guard taken on that partition before asking the
//     transaction coordinator makes the batch fail with INVALID_TXN_STATE
//     rather than open a transaction there if the producer's marker was
//     written in between (Kafka 3.6+'s VerificationGuard).
//
// Version notes:
//   - v0-1: COORDINATOR_LOAD_IN_PROGRESS answered as
//     COORDINATOR_NOT_AVAILABLE (KAFKA-7296)
//   - v1: no schema change
//   - v2: CommittedLeaderEpoch
//   - v3: flexible; GenerationID, MemberID, GroupInstanceID (KIP-447)
//   - v4: no schema change (KIP-890: errors the producer may abort on)
//   - v5: no schema change (KIP-890 part 2, transaction.version 2: the
//     partition is added to the transaction implicitly)

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.TxnOffsetCommit.Int16(), 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	// codes[i][j] answers req.Topics[i].Partitions[j]; -1 marks partitions
	// handed to the coordinator.
	codes := make([][]int16, len(req.Topics))
	var parts []coordinator.CommitPartition
	var now int64
	if s.groups != nil {
		now = s.groups.Now()
	}
	authCode := s.txnIDAuthCode(r, authz.OpWrite, req.TransactionalID)
	if authCode == 0 {
		authCode = s.groupAuthCode(r, authz.OpRead, req.Group)
	}
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		topic := s.store.Topic(t.Topic)
		for j, p := range t.Partitions {
			if codes[i][j] = s.groupTopicAuthCode(r, authCode, authz.OpRead, topic, t.Topic, false); codes[i][j] != 0 {
				continue
			}
			cp, code := s.commitPartition(topic, t.Topic, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, now)
			if codes[i][j] = code; code == -1 {
				if r.Version < 2 {
					cp.LeaderEpoch = -1
				}
				parts = append(parts, cp)
			}
		}
	}
	var partCodes []int16 // in parts' order
	if len(parts) > 0 {
		txn := coordinator.TxnCommit{
			TransactionalID: req.TransactionalID,
			ProducerID:      req.ProducerID,
			ProducerEpoch:   req.ProducerEpoch,
			Generation:      -1,
		}
		if r.Version >= 3 {
			txn.Generation, txn.MemberID, txn.InstanceID = req.Generation, req.MemberID, req.InstanceID
		}
		code, guard := s.verifyTxnOffsets(r.Version, req)
		txn.Guard = guard
		if code != 0 {
			partCodes = make([]int16, len(parts))
			for i := range partCodes {
				partCodes[i] = code
			}
		} else {
			partCodes = s.groups.TxnOffsetCommit(r.Ctx, req.Group, txn, parts)
		}
	}
	next := 0
	for i, t := range req.Topics {
		rt := kmsg.TxnOffsetCommitResponseTopic{Topic: t.Topic}
		for j, p := range t.Partitions {
			c := codes[i][j]
			if c == -1 {
				c = partCodes[next]
				next++
			}
			if r.Version < 2 && c == kerr.CoordinatorLoadInProgress.Code {
				// As Kafka: 0.11-2.0 producers did not expect it
				// (KAFKA-7296).
				c = coordinatorNotAvailable
			}
			rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: c})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// verifyTxnOffsets asks the transaction coordinator whether the group's
// __consumer_offsets partition is in the producer's ongoing transaction,
// and maps its answer as Kafka's AddPartitionsToTxnManager does for the
// group coordinator. An empty group id is left to the coordinator
// (INVALID_GROUP_ID comes first in Kafka 4.x). The guard, taken on the
// partition before asking, goes with the append (Kafka's
// maybeStartTransactionVerificationForPartition).
func (s *Server) verifyTxnOffsets(v int16, req *kmsg.TxnOffsetCommitRequest) (int16, *partition.TxnVerificationGuard) {
	if req.Group == "" {
		return 0, nil
	}
	if s.txns == nil {
		return coordinatorNotAvailable, nil
	}
	t, err := s.groups.EnsureOffsetsTopic()
	if err != nil {
		return coordinatorNotAvailable, nil
	}
	tp := coordinator.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: s.groups.OffsetsPartition(req.Group, int32(len(t.Partitions)))}
	var guard *partition.TxnVerificationGuard
	if req.ProducerID >= 0 {
		g := t.Partitions[tp.Partition].StartTxnVerification(req.ProducerID, req.ProducerEpoch)
		guard = &g
	}
	var code int16
	if v >= 5 {
		// transaction.version 2: the offsets join the transaction here
		// (Kafka's ADD_PARTITION for TxnOffsetCommit v5), no
		// AddOffsetsToTxn before.
		code = s.txns.AddPartitionsTV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []coordinator.TopicPartition{tp})
	} else {
		code = s.txns.VerifyPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []coordinator.TopicPartition{tp})[0]
	}
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code, nil
	case kerr.TransactionAbortable.Code:
		if v < 4 {
			return kerr.InvalidTxnState.Code, nil
		}
		return code, nil
	default:
		return code, guard
	}
}
