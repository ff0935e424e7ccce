package coordinator

// Transactional offset commits (TxnOffsetCommit): offsets written inside a
// producer's transaction, kept pending until the transaction ends (Kafka's
// OffsetMetadataManager in 4.x; GroupMetadata's
// pendingTransactionalOffsetCommits in 3.9).
//
// A TxnOffsetCommit is one transactional batch, carrying the producer id
// and epoch, in the group's partition of __consumer_offsets; the partition
// checks the epoch and opens the producer's transaction there, so the
// partition's LSO stays below it. Its offsets are pending on the group,
// by producer id: OffsetFetch does not return them, and answers
// UNSTABLE_OFFSET_COMMIT for their partitions when asked for stable
// offsets. When the transaction coordinator has written the producer's
// COMMIT or ABORT marker to that partition it calls CompleteTxnOffsets: a
// commit makes them committed offsets, except where a regular commit
// written after them is already there (the offset of the record in
// __consumer_offsets decides, as Kafka's replayEndTransactionMarker); an
// abort drops them. Loading replays the same rules from the log. The
// transaction coordinator calls CompleteTxnOffsets after each marker it
// writes to __consumer_offsets.

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/partition"
)

// txnProducer is the producer a transactional batch is written for.
type txnProducer struct {
	id    int64
	epoch int16
	guard *partition.TxnVerificationGuard // nil: not verified
}

// TxnCommit is who sends a TxnOffsetCommit. Generation, MemberID and
// InstanceID come with v3+ (KIP-447); before, they are -1, "" and nil,
// which Kafka accepts whatever the group's state.
type TxnCommit struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Generation      int32
	MemberID        string
	InstanceID      *string
	// Guard is the verification guard taken on the group's
	// __consumer_offsets partition before the transaction coordinator
	// vouched for it (partition.Log.StartTxnVerification): the batch
	// opens no transaction there if the producer's marker came in
	// between. Nil: not verified, appended unchecked.
	Guard *partition.TxnVerificationGuard
}

// TxnOffsetCommit validates the committer and writes the offsets as
// pending in the producer's transaction; codes[i] is the answer for
// parts[i] (whose topic partitions the caller checked exist). A group
// error answers every partition; otherwise metadata over
// offset.metadata.max.bytes gets OFFSET_METADATA_TOO_LARGE and the other
// partitions are written. CommitTimestamp is used, ExpireTimestamp is not
// (transactional offsets have none).
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, groupID string, txn TxnCommit, parts []CommitPartition) []int16 {
	if len(parts) == 0 {
		return nil
	}
	fill := func(code int16) []int16 {
		codes := make([]int16, len(parts))
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	if groupID == "" {
		return fill(kerr.InvalidGroupID.Code)
	}
	if txn.ProducerID < 0 {
		// No transaction can have it (what Kafka's verification of the
		// transaction answers).
		return fill(kerr.InvalidProducerIDMapping.Code)
	}
	ps := commitParts(parts)
	for i := range ps {
		ps[i].entry.expireTimestamp = -1 // transactional commits never set one
	}
	var codes []int16
	// As Kafka 4.x: an unknown group is created for a commit from outside
	// any group (generation -1); a member of a group we do not have gets
	// ILLEGAL_GENERATION.
	if c.onGroup(ctx, groupID, txn.Generation < 0, func(g *group) { codes = g.txnCommit(txn, ps) }) {
		return codes
	}
	if c.isClosed() || ctx.Err() != nil {
		return fill(kerr.CoordinatorNotAvailable.Code)
	}
	return fill(kerr.IllegalGeneration.Code)
}

// validateTxnCommit is Kafka's validateOffsetCommit for a transactional
// commit: the member checks apply only when the request names a member or
// generation, and the group's state does not matter otherwise (no
// REBALANCE_IN_PROGRESS, no UNKNOWN_MEMBER_ID for an anonymous commit to
// a group with members).
func (g *group) validateTxnCommit(generation int32, memberID string, instanceID *string, parts []commitPart) int16 {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.sg != nil {
		return kerr.GroupIDNotFound.Code // ShareGroup.validateOffsetCommit
	}
	if g.cg != nil || g.stg != nil {
		if generation < 0 && memberID == "" && instanceID == nil {
			return 0
		}
		var code int16
		if g.stg != nil {
			code = g.validateStreamsCommit(-1, generation, memberID, parts)
		} else {
			code = g.validateConsumerCommit(-1, generation, memberID, parts)
		}
		if code == kerr.StaleMemberEpoch.Code {
			// Kafka's validateTransactionalOffsetCommit: transactional
			// clients know ILLEGAL_GENERATION.
			code = kerr.IllegalGeneration.Code
		}
		return code
	}
	if generation < 0 && g.state == stateEmpty {
		return 0
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.checkMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	}
	return 0
}

// txnCommit is TxnOffsetCommit on the group's goroutine.
func (g *group) txnCommit(txn TxnCommit, parts []commitPart) []int16 {
	codes := make([]int16, len(parts))
	if code := g.validateTxnCommit(txn.Generation, txn.MemberID, txn.InstanceID, parts); code != 0 {
		return fillCodes(codes, code)
	}
	recs := g.offsetRecords(parts, codes)
	if len(recs) == 0 {
		return codes
	}
	// The producer counts as having an open transaction on the group from
	// before its batch is in the log, so a CompleteTxnOffsets racing with
	// this commit finds the group.
	pending, opened := g.openTxn(txn.ProducerID)
	base, err := g.appendBatch(recs, &txnProducer{txn.ProducerID, txn.ProducerEpoch, txn.Guard})
	if err != nil {
		if opened {
			g.closeTxn(txn.ProducerID)
		}
		g.log.Warn().Err(err).Int64("producer_id", txn.ProducerID).Int16("producer_epoch", txn.ProducerEpoch).Msg("writing transactional offset commit failed")
		return fillCodes(codes, txnAppendErrorCode(err))
	}
	noteWritten(parts, codes, base, pending)
	return codes
}

// txnAppendErrorCode maps a failed write of a transactional offset commit:
// the producer's epoch or transaction refused by the partition, else as a
// regular commit.
func txnAppendErrorCode(err error) int16 {
	switch {
	case errors.Is(err, partition.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, partition.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	default:
		return appendErrorCode(err)
	}
}

// txnIndex finds the groups a producer has an open transaction on, so
// that CompleteTxnOffsets does not visit every group. The zero value is
// ready.
type txnIndex struct {
	mu     sync.Mutex
	groups map[int64]map[*group]struct{}
}

func (x *txnIndex) add(producerID int64, g *group) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.groups == nil {
		x.groups = map[int64]map[*group]struct{}{}
	}
	gs := x.groups[producerID]
	if gs == nil {
		gs = map[*group]struct{}{}
		x.groups[producerID] = gs
	}
	gs[g] = struct{}{}
}

func (x *txnIndex) remove(producerID int64, g *group) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if gs := x.groups[producerID]; gs != nil {
		delete(gs, g)
		if len(gs) == 0 {
			delete(x.groups, producerID)
		}
	}
}

// of returns the groups the producer has an open transaction on.
func (x *txnIndex) of(producerID int64) []*group {
	x.mu.Lock()
	defer x.mu.Unlock()
	gs := x.groups[producerID]
	out := make([]*group, 0, len(gs))
	for g := range gs {
		out = append(out, g)
	}
	return out
}

// openTxn returns the producer's pending offsets on the group, creating
// them (opened) if the producer had no open transaction here.
func (g *group) openTxn(producerID int64) (pending map[topicPartition]offsetEntry, opened bool) {
	if p, ok := g.txnOffsets[producerID]; ok {
		return p, false
	}
	p := map[topicPartition]offsetEntry{}
	g.txnOffsets[producerID] = p
	g.c.txnIdx.add(producerID, g)
	return p, true
}

// closeTxn forgets the producer's open transaction on the group and
// returns its pending offsets.
func (g *group) closeTxn(producerID int64) map[topicPartition]offsetEntry {
	p, ok := g.txnOffsets[producerID]
	if !ok {
		return nil
	}
	delete(g.txnOffsets, producerID)
	g.c.txnIdx.remove(producerID, g)
	return p
}

// unload forgets the group without writing anything: its log is gone
// (TopicDeleted of __consumer_offsets). Open transactions on it close;
// blocked joins and syncs get NOT_COORDINATOR.
func (g *group) unload() {
	for pid := range g.txnOffsets {
		g.closeTxn(pid)
	}
	g.offsets = map[topicPartition]offsetEntry{}
	g.failWaiters(kerr.NotCoordinator.Code)
	g.log.Info().Msg("group unloaded: __consumer_offsets was deleted")
	g.setState(stateDead)
}

// hasPendingTxnOffset reports whether an open transaction holds an offset
// for tp (Kafka's hasPendingTransactionalOffsets).
func (g *group) hasPendingTxnOffset(tp topicPartition) bool {
	for _, p := range g.txnOffsets {
		if _, ok := p[tp]; ok {
			return true
		}
	}
	return false
}

// dropPendingTxnOffset removes tp from every open transaction, as Kafka
// does when it writes (or replays) an offset tombstone for tp; the
// transactions stay open.
func (g *group) dropPendingTxnOffset(tp topicPartition) {
	for _, p := range g.txnOffsets {
		delete(p, tp)
	}
}

// completeTxn ends the producer's transaction on the group: on commit its
// pending offsets replace committed ones written before them.
func (g *group) completeTxn(producerID int64, commit bool) {
	pending := g.closeTxn(producerID)
	if pending == nil {
		return
	}
	if !commit {
		g.log.Debug().Int64("producer_id", producerID).Int("offsets", len(pending)).Msg("aborted transactional offset commits")
		return
	}
	applied := 0
	for tp, e := range pending {
		if cur, ok := g.offsets[tp]; ok && cur.recordOffset > e.recordOffset {
			// A regular commit written after the transactional one
			// is the newer offset.
			g.log.Info().Int64("producer_id", producerID).Str("topic", tp.topic).Int32("partition", tp.partition).
				Int64("record_offset", e.recordOffset).Int64("committed_record_offset", cur.recordOffset).
				Msg("skipping transactional offset commit older than the committed offset")
			continue
		}
		g.offsets[tp] = e
		applied++
	}
	g.log.Debug().Int64("producer_id", producerID).Int("offsets", applied).Msg("committed transactional offset commits")
}

// CompleteTxnOffsets is called by the transaction coordinator after it has
// written the producer's COMMIT or ABORT marker to the __consumer_offsets
// partition offsetsPartition (Kafka's GroupCoordinator.onTransactionCompleted
// / handleTxnCompletion): on commit the producer's pending offsets for every
// group in that partition become committed offsets; on abort they are
// dropped. It returns once every such group has applied it.
func (c *Coordinator) CompleteTxnOffsets(offsetsPartition int32, producerID int64, commit bool) {
	t := c.store.Topic(OffsetsTopic)
	if t == nil {
		return
	}
	n := int32(len(t.Partitions))
	for _, g := range c.txnIdx.of(producerID) {
		if c.OffsetsPartition(g.id, n) != offsetsPartition {
			continue
		}
		done := make(chan struct{})
		if g.do(context.Background(), func() { g.completeTxn(producerID, commit); close(done) }) {
			select {
			case <-done:
			case <-g.done:
			}
		}
	}
}
