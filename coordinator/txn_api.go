package coordinator

// The transaction coordinator's operations, one per request kind, with
// Kafka's rules and error codes (TransactionCoordinator.scala). Codes are
// those the coordinator answers; the protocol handlers map them for old
// request versions (PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH).

import (
	"errors"
	"math"
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
)

// withTxn runs f with id's metadata locked; false if id is unknown.
func (c *TxnCoordinator) withTxn(id string, f func(t *txn)) bool {
	for i := 0; i < retries; i++ {
		t := c.lookup(id)
		if t == nil {
			return false
		}
		t.mu.Lock()
		if t.dead {
			t.mu.Unlock()
			continue
		}
		f(t)
		t.mu.Unlock()
		return true
	}
	return false
}

// getOrCreate returns id's metadata, creating it Empty with a new
// producer id and no epoch yet (Kafka's new TransactionMetadata).
//
// The producer id is generated before taking c.mu: a new block's fsync
// must not stall every lookup (produce verification among them). Two
// racing creations of one id waste one producer id, which is harmless.
func (c *TxnCoordinator) getOrCreate(id string, timeoutMs int32) (*txn, int16) {
	c.mu.Lock()
	closed, t := c.closed, c.txns[id]
	c.mu.Unlock()
	switch {
	case closed:
		return nil, kerr.CoordinatorNotAvailable.Code
	case t != nil:
		return t, 0
	}
	pid, err := c.pids.generate()
	if err != nil {
		c.log.Error().Err(err).Msg("generating producer id failed")
		return nil, kerr.UnknownServerError.Code
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	if t := c.txns[id]; t != nil {
		return t, 0
	}
	t = &txn{id: id, data: txnData{
		producerID:     pid,
		prevProducerID: noProducerID,
		nextProducerID: noProducerID,
		producerEpoch:  noProducerEpoch,
		lastEpoch:      noProducerEpoch,
		timeoutMs:      timeoutMs,
		state:          txnEmpty,
		partitions:     map[TopicPartition]struct{}{},
		startMs:        -1,
		lastUpdateMs:   c.clock.Now().UnixMilli(),
	}}
	t.publish()
	c.txns[id] = t
	return t, 0
}

// transitLocked writes d as id's new metadata and, once written, makes it
// current. As Kafka's prepareTransitionTo, every transition records the
// producer id it leaves as the previous one, so only the transition right
// after a rotation still knows the rotated-out id (the KIP-360 retry).
// REQUIRES: t.mu held.
func (c *TxnCoordinator) transitLocked(t *txn, d txnData) int16 {
	d.prevProducerID = t.data.producerID
	if err := c.txnLog.appendTxn(t.id, txnRecordAt(t.id, &d, txnValueVersionFor(c.TransactionVersion()))); err != nil {
		c.log.Warn().Err(err).Str("transactional_id", t.id).Str("state", d.state.String()).Msg("writing transaction state failed")
		return txnStateAppendErrorCode(err)
	}
	t.data = d
	t.publish()
	return 0
}

// txnStateAppendErrorCode is TransactionStateManager.appendTransactionToLog's
// mapping of a failed __transaction_state write.
func txnStateAppendErrorCode(err error) int16 {
	switch {
	case errors.Is(err, partition.ErrClosed), errors.Is(err, partition.ErrUnknownTopic):
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, partition.ErrStorage):
		return kerr.NotCoordinator.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

func (c *TxnCoordinator) nowMs() int64 { return c.clock.Now().UnixMilli() }

// InitProducerID serves InitProducerId. txnID nil: an idempotent producer,
// which gets a new producer id at epoch 0. expectedPID/expectedEpoch are
// the producer's current id and epoch (KIP-360, v3+), or -1/-1.
func (c *TxnCoordinator) InitProducerID(txnID *string, timeoutMs int32, expectedPID int64, expectedEpoch int16) (int64, int16, int16) {
	fail := func(code int16) (int64, int16, int16) { return noProducerID, noProducerEpoch, code }
	if txnID == nil {
		pid, err := c.pids.generate()
		if err != nil {
			c.log.Error().Err(err).Msg("generating producer id failed")
			return fail(kerr.UnknownServerError.Code)
		}
		return pid, 0, 0
	}
	id := *txnID
	switch {
	case id == "":
		return fail(kerr.InvalidRequest.Code)
	case timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds():
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	hasExpected := expectedPID != noProducerID
	for i := 0; i < retries; i++ {
		t, code := c.getOrCreate(id, timeoutMs)
		if code != 0 {
			return fail(code)
		}
		t.mu.Lock()
		if t.dead {
			t.mu.Unlock()
			continue
		}
		pid, epoch, code := c.initLocked(t, timeoutMs, hasExpected, expectedPID, expectedEpoch)
		t.mu.Unlock()
		return pid, epoch, code
	}
	return fail(kerr.CoordinatorNotAvailable.Code)
}

// initLocked is prepareInitProducerIdTransit and what follows it.
// REQUIRES: t.mu held.
func (c *TxnCoordinator) initLocked(t *txn, timeoutMs int32, hasExpected bool, expectedPID int64, expectedEpoch int16) (int64, int16, int16) {
	fail := func(code int16) (int64, int16, int16) { return noProducerID, noProducerEpoch, code }
	d := &t.data
	// A producer id and epoch given by the request fence the producer
	// unless: the metadata was just created (epoch -1), the id is the
	// current one (the epoch is checked below), or it is the one before a
	// rotation with an exhausted epoch (a retry of that rotation).
	if hasExpected && !(d.producerEpoch == noProducerEpoch || expectedPID == d.producerID ||
		(expectedPID == d.prevProducerID && epochExhausted(expectedEpoch))) {
		return fail(kerr.ProducerFenced.Code)
	}
	switch d.state {
	case txnPrepareCommit, txnPrepareAbort:
		return fail(kerr.ConcurrentTransactions.Code)
	case txnOngoing:
		// Fence the producer and abort its transaction; the client
		// retries on CONCURRENT_TRANSACTIONS and then gets the next
		// epoch (a new producer id if the fence exhausted the epochs).
		if d.producerEpoch == math.MaxInt16 {
			return fail(kerr.UnknownServerError.Code)
		}
		if code := c.fenceAndAbortLocked(t); code != 0 {
			return fail(code)
		}
		return fail(kerr.ConcurrentTransactions.Code)
	case txnEmpty, txnCompleteCommit, txnCompleteAbort:
	default:
		c.log.Error().Str("transactional_id", t.id).Str("state", d.state.String()).Msg("transaction in an illegal state")
		return fail(kerr.UnknownServerError.Code)
	}
	nd := d.clone()
	nd.partitions = map[TopicPartition]struct{}{}
	nd.state = txnEmpty
	nd.timeoutMs = timeoutMs
	nd.startMs = -1
	nd.lastUpdateMs = c.nowMs()
	nd.nextProducerID = noProducerID
	nd.clientTxnVersion = tv0
	if epochExhausted(d.producerEpoch) && (!hasExpected || expectedEpoch == d.producerEpoch) {
		pid, err := c.pids.generate()
		if err != nil {
			c.log.Error().Err(err).Msg("generating producer id failed")
			return fail(kerr.UnknownServerError.Code)
		}
		nd.producerID = pid
		nd.producerEpoch = 0
		nd.lastEpoch = noProducerEpoch
		if hasExpected {
			nd.lastEpoch = d.producerEpoch
		}
	} else {
		bumped := d.producerEpoch + 1
		switch {
		case !hasExpected:
			nd.producerEpoch, nd.lastEpoch = bumped, noProducerEpoch
		case d.producerEpoch == noProducerEpoch || expectedEpoch == d.producerEpoch:
			nd.producerEpoch, nd.lastEpoch = bumped, d.producerEpoch
		case expectedEpoch == d.lastEpoch:
			// A retry of a bump that succeeded: the same answer again.
			nd.producerEpoch, nd.lastEpoch = d.producerEpoch, d.lastEpoch
		default:
			return fail(kerr.ProducerFenced.Code)
		}
	}
	if code := c.transitLocked(t, nd); code != 0 {
		return fail(code)
	}
	c.log.Debug().Str("transactional_id", t.id).Int64("producer_id", nd.producerID).Int16("producer_epoch", nd.producerEpoch).Msg("initialized transactional id")
	return nd.producerID, nd.producerEpoch, 0
}

// fenceAndAbortLocked bumps the epoch of t's ongoing transaction and
// aborts it with the bumped epoch, so the old producer is fenced on every
// partition (Kafka's prepareFenceProducerEpoch then endTransaction from
// the coordinator). REQUIRES: t.mu held, t Ongoing.
func (c *TxnCoordinator) fenceAndAbortLocked(t *txn) int16 {
	bumped := t.data.producerEpoch + 1
	if t.hasFailedEpochFence {
		bumped = t.data.producerEpoch
	}
	// The fence is the one bump, whatever the finalized
	// transaction.version: Apache Kafka 4.3.1 with transaction.version 2
	// aborts a timed-out transaction at epoch e+1 and answers the fenced
	// producer's EndTxn v5 commit (epoch e) INVALID_TXN_STATE.
	code, _, _ := c.endLocked(t, t.data.producerID, bumped, false, tv0, true)
	return code
}

// AddPartitions serves AddPartitionsToTxn v0-3 and AddOffsetsToTxn (the
// group's __consumer_offsets partition): a client of transaction.version
// 1 adds its partitions itself.
func (c *TxnCoordinator) AddPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition) int16 {
	return c.addPartitions(txnID, pid, epoch, parts, tv0)
}

// AddPartitionsTV2 adds partitions for a client of transaction.version 2
// (KIP-890 part 2): the partitions a Produce v12+ or a TxnOffsetCommit v5
// writes to, added implicitly, and AddPartitionsToTxn v4+ without
// VerifyOnly (what Kafka's AddPartitionsToTxnManager sends for them). The
// rules are AddPartitions'; the metadata records client version 2.
func (c *TxnCoordinator) AddPartitionsTV2(txnID string, pid int64, epoch int16, parts []TopicPartition) int16 {
	return c.addPartitions(txnID, pid, epoch, parts, tv2)
}

// addPartitions is Kafka's handleAddPartitionsToTransaction.
func (c *TxnCoordinator) addPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition, clientTV int16) int16 {
	if txnID == "" {
		return kerr.InvalidRequest.Code
	}
	code := c.unknownIDCode()
	c.withTxn(txnID, func(t *txn) {
		d := &t.data
		switch {
		case d.producerID != pid:
			code = kerr.InvalidProducerIDMapping.Code
		case d.producerEpoch != epoch:
			code = kerr.ProducerFenced.Code
		case d.state == txnPrepareCommit || d.state == txnPrepareAbort:
			code = kerr.ConcurrentTransactions.Code
		case d.state == txnOngoing && d.hasAll(parts):
			code = 0
		default:
			nd := d.clone()
			now := c.nowMs()
			if d.state == txnEmpty || d.state == txnCompleteCommit || d.state == txnCompleteAbort {
				nd.startMs = now
			}
			nd.state = txnOngoing
			nd.lastUpdateMs = now
			nd.clientTxnVersion = clientTV
			for _, p := range parts {
				nd.partitions[p] = struct{}{}
			}
			code = c.transitLocked(t, nd)
		}
	})
	return code
}

// unknownIDCode is the answer for an id not found: Kafka's
// INVALID_PRODUCER_ID_MAPPING, or COORDINATOR_NOT_AVAILABLE once closed.
func (c *TxnCoordinator) unknownIDCode() int16 {
	if c.isClosed() {
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.InvalidProducerIDMapping.Code
}

func (d *txnData) hasAll(parts []TopicPartition) bool {
	for _, p := range parts {
		if _, ok := d.partitions[p]; !ok {
			return false
		}
	}
	return true
}

// AddOffsets serves AddOffsetsToTxn: the group's __consumer_offsets
// partition joins the transaction.
func (c *TxnCoordinator) AddOffsets(txnID string, pid int64, epoch int16, group string) int16 {
	if txnID == "" {
		return kerr.InvalidRequest.Code
	}
	if c.groups == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	t, err := c.groups.EnsureOffsetsTopic()
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	p := c.groups.OffsetsPartition(group, int32(len(t.Partitions)))
	return c.AddPartitions(txnID, pid, epoch, []TopicPartition{{OffsetsTopic, p}})
}

// VerifyPartitions is the VerifyOnly form of AddPartitionsToTxn (KIP-890
// part 1, Kafka's handleVerifyPartitionsInTransaction): whether each
// partition is in the producer's ongoing transaction. It reads the
// published snapshot, so it never waits behind a transaction's marker
// writes.
func (c *TxnCoordinator) VerifyPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	all := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	if txnID == "" {
		return all(kerr.InvalidRequest.Code)
	}
	t := c.lookup(txnID)
	if t == nil {
		return all(c.unknownIDCode())
	}
	d := t.view.Load()
	switch {
	case d.producerID != pid:
		return all(kerr.InvalidProducerIDMapping.Code)
	case d.producerEpoch != epoch:
		return all(kerr.ProducerFenced.Code)
	case d.state == txnPrepareCommit || d.state == txnPrepareAbort:
		return all(kerr.ConcurrentTransactions.Code)
	}
	for i, p := range parts {
		if _, ok := d.partitions[p]; !ok {
			codes[i] = kerr.TransactionAbortable.Code
		}
	}
	return codes
}

// VerifyProducePartition is the check before a transactional batch is
// appended (Kafka 3.6+'s produce-side verification through
// AddPartitionsToTxnManager and ReplicaManager): 0 if the partition is in
// the producer's ongoing transaction, else the code the produce answers
// with. TRANSACTION_ABORTABLE is what Produce v11+ gets; the produce
// handler answers INVALID_TXN_STATE instead below v11, as Kafka does.
func (c *TxnCoordinator) VerifyProducePartition(txnID string, pid int64, epoch int16, topic string, partition int32) int16 {
	return produceVerificationCode(c.VerifyPartitions(txnID, pid, epoch, []TopicPartition{{topic, partition}})[0])
}

// AddProducePartition is the check before a transactional batch of
// Produce v12+ is appended (transaction.version 2, Kafka's
// TransactionSupportedOperation ADD_PARTITION): the partition joins the
// producer's transaction if it is not in it yet, starting the
// transaction if none is open. The codes are VerifyProducePartition's.
func (c *TxnCoordinator) AddProducePartition(txnID string, pid int64, epoch int16, topic string, partition int32) int16 {
	return produceVerificationCode(c.AddPartitionsTV2(txnID, pid, epoch, []TopicPartition{{topic, partition}}))
}

// produceVerificationCode maps the coordinator's answer for a produce as
// Kafka's AddPartitionsToTxnManager and ReplicaManager do.
func produceVerificationCode(code int16) int16 {
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.ConcurrentTransactions.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
		// Retriable for the producer without a coordinator lookup.
		return kerr.NotEnoughReplicas.Code
	}
	return code
}

// EndTxn serves EndTxn. bumpEpoch marks EndTxn v5+ (transaction.version 2,
// KIP-890 part 2: the epoch is bumped at the end of every transaction, and
// an abort is accepted with no transaction open). It returns the code and
// the producer id and epoch EndTxn v5 reports.
func (c *TxnCoordinator) EndTxn(txnID string, pid int64, epoch int16, commit, bumpEpoch bool) (int16, int64, int16) {
	if txnID == "" {
		return kerr.InvalidRequest.Code, noProducerID, noProducerEpoch
	}
	code, rpid, repoch := c.unknownIDCode(), noProducerID, noProducerEpoch
	clientTV := tv0
	if bumpEpoch {
		clientTV = tv2
	}
	c.withTxn(txnID, func(t *txn) {
		code, rpid, repoch = c.endLocked(t, pid, epoch, commit, clientTV, false)
	})
	return code, rpid, repoch
}

// endLocked is Kafka's endTransaction: endTransactionWithTV1 for a
// clientTV below 2, the TV2 endTransaction then. fence marks the
// coordinator's own abort with a bumped epoch (from InitProducerId or a
// timeout); the request then comes from the coordinator, not a client.
// REQUIRES: t.mu held.
func (c *TxnCoordinator) endLocked(t *txn, pid int64, epoch int16, commit bool, clientTV int16, fence bool) (int16, int64, int16) {
	fail := func(code int16) (int16, int64, int16) { return code, noProducerID, noProducerEpoch }
	d := &t.data
	bumpEpoch := clientTV >= tv2
	clientTV2 := bumpEpoch && !fence
	// TV2 retries: the client's epoch is one below the bumped one, or it
	// is the exhausted epoch of the producer id rotated out.
	retryOnOverflow := clientTV2 && d.prevProducerID == pid && epoch == math.MaxInt16-1 && d.producerEpoch == 0
	retryOnEpochBump := clientTV2 && int32(d.producerEpoch) == int32(epoch)+1
	isRetry := retryOnOverflow || retryOnEpochBump
	var validEpoch bool
	if clientTV2 {
		// The same epoch in a completed state is the next transaction's
		// end, not a retry; a higher one is fenced.
		switch d.state {
		case txnPrepareCommit, txnPrepareAbort:
			validEpoch = retryOnEpochBump
		case txnCompleteCommit, txnCompleteAbort:
			validEpoch = isRetry || epoch == d.producerEpoch
		default:
			validEpoch = epoch == d.producerEpoch
		}
	} else {
		validEpoch = (fence || epoch == d.producerEpoch) && epoch >= d.producerEpoch
	}
	switch {
	case d.producerID != pid && !retryOnOverflow:
		return fail(kerr.InvalidProducerIDMapping.Code)
	case !validEpoch:
		return fail(kerr.ProducerFenced.Code)
	}
	invalid := func() (int16, int64, int16) {
		c.log.Debug().Str("transactional_id", t.id).Str("state", d.state.String()).Bool("commit", commit).Msg("EndTxn in an invalid state")
		return fail(kerr.InvalidTxnState.Code)
	}
	// What the state and the outcome asked for give, by Kafka's TV1
	// rules and its TV2 table: the retry of a completed outcome is NONE
	// with the current producer id and epoch; under TV2 an abort with
	// nothing open (Empty, or the last transaction completed) writes an
	// empty PrepareAbort/CompleteAbort to bump the epoch.
	emptyAbort := false
	switch d.state {
	case txnOngoing:
	case txnCompleteCommit:
		switch {
		case commit && (!clientTV2 || isRetry):
			return 0, d.producerID, d.producerEpoch
		case !commit && clientTV2 && !isRetry:
			emptyAbort = true
		default:
			return invalid()
		}
	case txnCompleteAbort:
		switch {
		case !commit && (!clientTV2 || isRetry):
			return 0, d.producerID, d.producerEpoch
		case !commit && clientTV2:
			emptyAbort = true
		default:
			return invalid()
		}
	case txnPrepareCommit:
		if commit {
			return fail(kerr.ConcurrentTransactions.Code)
		}
		return invalid()
	case txnPrepareAbort:
		if !commit {
			return fail(kerr.ConcurrentTransactions.Code)
		}
		return invalid()
	case txnEmpty:
		if commit || !clientTV2 {
			return invalid()
		}
		emptyAbort = true
	default:
		c.log.Error().Str("transactional_id", t.id).Str("state", d.state.String()).Msg("transaction in an illegal state")
		return fail(kerr.UnknownServerError.Code)
	}

	nd := d.clone()
	nd.state = txnPrepareAbort
	if commit {
		nd.state = txnPrepareCommit
	}
	nd.lastUpdateMs = c.nowMs()
	nd.clientTxnVersion = tv0
	if emptyAbort {
		// No partition was added: the start time is this abort's.
		nd.startMs = nd.lastUpdateMs
		nd.partitions = map[TopicPartition]struct{}{}
	}
	if fence {
		// In memory the epoch is bumped even if the write fails; it was
		// never returned, and hasFailedEpochFence keeps the next fence
		// from bumping it again.
		d.producerEpoch = epoch
		d.lastEpoch = noProducerEpoch
		t.publish()
		nd.producerEpoch = epoch
		nd.lastEpoch = noProducerEpoch
	} else if clientTV2 {
		// prepareAbortOrCommit under TV2: bump the epoch (an abort at
		// Short.MaxValue, only reachable through a TV1 fence, goes
		// through unbumped so the id can recover), remember the epoch
		// the client used, and with the epoch exhausted allocate the
		// producer id the completion rotates to.
		switch {
		case d.producerEpoch < math.MaxInt16:
			nd.producerEpoch = d.producerEpoch + 1
		case commit:
			c.log.Error().Str("transactional_id", t.id).Int64("producer_id", d.producerID).Msg("commit at the maximum producer epoch")
			return fail(kerr.UnknownServerError.Code)
		}
		nd.lastEpoch = d.producerEpoch
		nd.clientTxnVersion = tv2
		if epochExhausted(d.producerEpoch) {
			next, err := c.pids.generate()
			if err != nil {
				c.log.Error().Err(err).Msg("generating producer id failed")
				return fail(kerr.UnknownServerError.Code)
			}
			nd.nextProducerID = next
		}
	}
	if code := c.transitLocked(t, nd); code != 0 {
		if fence {
			t.hasFailedEpochFence = true
		}
		return fail(code)
	}
	t.hasFailedEpochFence = false
	// Kafka answers here and writes the markers in the background; here
	// they are local writes, done before answering, so a client's next
	// request finds the transaction complete. Markers that fail to write
	// leave it in Prepare*, retried by the abort timer. Either way the
	// answer is the producer id and epoch of the completion (Kafka's
	// prepareComplete): after a rotation the new id at epoch 0.
	c.completeLocked(t)
	if nd.nextProducerID != noProducerID {
		return 0, nd.nextProducerID, 0
	}
	return 0, nd.producerID, nd.producerEpoch
}

// completeLocked writes the markers of t's PrepareCommit or PrepareAbort
// transaction to every partition in it, then its CompleteCommit or
// CompleteAbort state. A partition whose marker is written leaves the
// transaction's set (Kafka's removePartition), so a retry writes only the
// rest. REQUIRES: t.mu held, t in Prepare*.
func (c *TxnCoordinator) completeLocked(t *txn) bool {
	d := &t.data
	commit := d.state == txnPrepareCommit
	m := partition.TxnMarker{ProducerID: d.producerID, ProducerEpoch: d.producerEpoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit}
	failed := false
	for _, tp := range d.sortedPartitions() {
		err := c.markers.writeMarker(tp, m)
		if err != nil && !errors.Is(err, partition.ErrUnknownTopic) {
			c.log.Warn().Err(err).Str("transactional_id", t.id).Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("writing transaction marker failed; will retry")
			failed = true
			continue
		}
		if err != nil {
			c.log.Info().Str("transactional_id", t.id).Str("topic", tp.Topic).Int32("partition", tp.Partition).Msg("dropping transaction marker of a deleted partition")
		}
		delete(d.partitions, tp)
	}
	t.publish()
	if failed {
		return false
	}
	nd := d.clone()
	nd.state = txnCompleteAbort
	if commit {
		nd.state = txnCompleteCommit
	}
	nd.partitions = map[TopicPartition]struct{}{}
	nd.lastUpdateMs = c.nowMs()
	// prepareComplete: the last epoch stays the one the client used
	// (before the bump, or Short.MaxValue-1 over a rotation), so its
	// retry is recognised.
	if d.clientTxnVersion >= tv2 && d.nextProducerID != noProducerID {
		nd.producerID = d.nextProducerID
		nd.producerEpoch = 0
	}
	nd.nextProducerID = noProducerID
	if code := c.transitLocked(t, nd); code != 0 {
		return false
	}
	return true
}

// AbortTimedOut aborts every Ongoing transaction older than its timeout,
// with the producer epoch bumped so the producer is fenced (Kafka's
// abortTimedOutTransactions), and retries the markers of transactions
// left in PrepareCommit or PrepareAbort by a failed write.
func (c *TxnCoordinator) AbortTimedOut() {
	now := c.nowMs()
	for _, t := range c.snapshot() {
		if c.closing() {
			return // the rest waits for the next start
		}
		t.mu.Lock()
		if t.dead {
			t.mu.Unlock()
			continue
		}
		d := &t.data
		switch {
		case d.state == txnOngoing && d.startMs+int64(d.timeoutMs) < now:
			if d.producerEpoch == math.MaxInt16 {
				break
			}
			pid, epoch := d.producerID, d.producerEpoch
			code := c.fenceAndAbortLocked(t)
			ev := c.log.Info()
			if code != 0 {
				ev = c.log.Warn().Int16("error_code", code)
			}
			ev.Str("transactional_id", t.id).Int64("producer_id", pid).Int16("producer_epoch", epoch).Msg("aborting timed out transaction")
		case d.state == txnPrepareCommit || d.state == txnPrepareAbort:
			c.completeLocked(t)
		}
		t.mu.Unlock()
	}
}

// RemoveExpired removes transactional ids with no transaction in progress
// whose last update is older than transactional.id.expiration.ms: a
// tombstone in __transaction_state, then gone from memory (Kafka's
// removeExpiredTransactionalIds).
func (c *TxnCoordinator) RemoveExpired() {
	cutoff := c.nowMs() - c.cfg.IDExpiration.Milliseconds()
	for _, t := range c.snapshot() {
		if c.closing() {
			return
		}
		t.mu.Lock()
		d := &t.data
		if t.dead || !d.state.expirationAllowed() || d.lastUpdateMs > cutoff {
			t.mu.Unlock()
			continue
		}
		if err := c.txnLog.appendTxn(t.id, txnRecord(t.id, nil)); err != nil {
			c.log.Warn().Err(err).Str("transactional_id", t.id).Msg("writing tombstone of expired transactional id failed")
			t.mu.Unlock()
			continue
		}
		c.forgetLocked(t)
		t.mu.Unlock()
		c.log.Debug().Str("transactional_id", t.id).Msg("removed expired transactional id")
	}
}

// forgetLocked removes t from memory: callers holding it look the id up
// again. REQUIRES: t.mu held.
func (c *TxnCoordinator) forgetLocked(t *txn) {
	t.dead = true
	c.mu.Lock()
	if c.txns[t.id] == t {
		delete(c.txns, t.id)
	}
	c.mu.Unlock()
}

// TopicDeleted forgets every transactional id when __transaction_state
// is deleted, as Kafka's transaction coordinator resigns the partitions
// of a deleted transaction log (BrokerMetadataPublisher.updateCoordinator
// -> TransactionCoordinator.onResignation, which removes their metadata
// without writing anything). The topic comes back, empty, on its next
// use; an id's next InitProducerId starts it afresh. Other topics are no
// concern of the transaction coordinator here.
func (c *TxnCoordinator) TopicDeleted(topic string) {
	if topic != TxnTopic {
		return
	}
	ts := c.snapshot()
	for _, t := range ts {
		t.mu.Lock()
		if !t.dead {
			c.forgetLocked(t)
		}
		t.mu.Unlock()
	}
	c.log.Info().Int("transactional_ids", len(ts)).Msg("transaction log deleted: transactional ids unloaded")
}

// DescribeTransaction is one id's answer to DescribeTransactions.
func (c *TxnCoordinator) DescribeTransaction(txnID string) kmsg.DescribeTransactionsResponseTransactionState {
	s := kmsg.NewDescribeTransactionsResponseTransactionState()
	s.TransactionalID = txnID
	if c.isClosed() {
		s.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return s
	}
	if txnID == "" {
		s.ErrorCode = kerr.InvalidRequest.Code
		return s
	}
	t := c.lookup(txnID)
	if t == nil {
		s.ErrorCode = kerr.TransactionalIDNotFound.Code
		return s
	}
	d := t.view.Load()
	if d.state == txnDead {
		s.ErrorCode = kerr.TransactionalIDNotFound.Code
		return s
	}
	s.ProducerID = d.producerID
	s.ProducerEpoch = d.producerEpoch
	s.State = d.state.String()
	s.TimeoutMillis = d.timeoutMs
	s.StartTimestamp = d.startMs
	for _, p := range d.sortedPartitions() {
		if n := len(s.Topics); n > 0 && s.Topics[n-1].Topic == p.Topic {
			s.Topics[n-1].Partitions = append(s.Topics[n-1].Partitions, p.Partition)
			continue
		}
		s.Topics = append(s.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: p.Topic, Partitions: []int32{p.Partition}})
	}
	return s
}

// ListFilter is ListTransactions' filters: states and producer ids (empty:
// all), a minimum running time (v1+, -1: none) and an id pattern (v2+,
// nil: all; it must match the whole id, as Java's Matcher.matches).
type ListFilter struct {
	States      []string
	ProducerIDs []int64
	DurationMs  int64
	Pattern     *regexp.Regexp
}

// ListTransactions serves ListTransactions (Kafka's listTransactionStates):
// the matching ids, sorted by id, and the state filters it does not know.
func (c *TxnCoordinator) ListTransactions(f ListFilter) ([]kmsg.ListTransactionsResponseTransactionState, []string, int16) {
	if c.isClosed() {
		return nil, nil, kerr.CoordinatorNotAvailable.Code
	}
	states := map[txnState]bool{}
	var unknown []string
	for _, name := range f.States {
		if s, ok := txnStateFromName(name); ok {
			states[s] = true
		} else {
			unknown = append(unknown, name)
		}
	}
	pids := map[int64]bool{}
	for _, p := range f.ProducerIDs {
		pids[p] = true
	}
	now := c.nowMs()
	out := []kmsg.ListTransactionsResponseTransactionState{}
	for _, t := range c.snapshot() {
		d := t.view.Load()
		switch {
		case d.state == txnDead:
		case len(pids) > 0 && !pids[d.producerID]:
		case len(f.States) > 0 && !states[d.state]:
		case f.DurationMs >= 0 && now-d.startMs <= f.DurationMs:
		case f.Pattern != nil && !f.Pattern.MatchString(t.id):
		default:
			s := kmsg.NewListTransactionsResponseTransactionState()
			s.TransactionalID = t.id
			s.ProducerID = d.producerID
			s.TransactionState = d.state.String()
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, unknown, 0
}
