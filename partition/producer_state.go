package partition

// Producer state per partition, as Kafka's ProducerStateManager and
// ProducerAppendInfo keep it: per producer id the epoch, the metadata of
// its last 5 batches (for duplicate detection), the coordinator epoch of
// its last transaction marker, and the first offset of its open
// transaction. It is guarded by Log.mu; what readers need without the lock
// (the LSO) is published as an immutable view (txnView).

import (
	"fmt"
	"math"
	"sort"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// numBatchesToRetain is Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN:
// the producer's max.in.flight.requests.per.connection limit for
// idempotence.
const numBatchesToRetain = 5

// Kafka's defaults for producer.id.expiration.ms and
// producer.id.expiration.check.interval.ms.
const (
	DefaultProducerIDExpirationMs              = 86400000
	DefaultProducerIDExpirationCheckIntervalMs = 600000
)

// batchMeta is one appended batch of a producer (Kafka's BatchMetadata).
type batchMeta struct {
	lastSeq     int32
	lastOffset  int64
	offsetDelta int32
	timestamp   int64
}

func (b batchMeta) firstSeq() int32    { return decrementSequence(b.lastSeq, b.offsetDelta) }
func (b batchMeta) firstOffset() int64 { return b.lastOffset - int64(b.offsetDelta) }

// producerEntry is one producer's state (Kafka's ProducerStateEntry).
type producerEntry struct {
	id               int64
	epoch            int16       // recordbatch.NoProducerEpoch: unknown
	batches          []batchMeta // oldest first, at most numBatchesToRetain
	coordinatorEpoch int32       // -1 until a marker is seen
	lastTimestamp    int64
	txnFirstOffset   int64 // -1: no open transaction
	// buf backs batches (a clone's own copy), so that cloning an entry
	// for an append allocates the entry alone.
	buf [numBatchesToRetain]batchMeta
}

func newProducerEntry(id int64) *producerEntry {
	return &producerEntry{id: id, epoch: recordbatch.NoProducerEpoch, coordinatorEpoch: -1, lastTimestamp: -1, txnFirstOffset: -1}
}

// copyTo makes c a copy of e that shares nothing with it.
func (e *producerEntry) copyTo(c *producerEntry) {
	*c = *e
	if len(e.batches) <= len(c.buf) {
		c.batches = c.buf[:copy(c.buf[:], e.batches)]
	} else {
		c.batches = append([]batchMeta(nil), e.batches...)
	}
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return recordbatch.NoSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

func (e *producerEntry) lastDataOffset() int64 {
	if len(e.batches) == 0 {
		return -1
	}
	return e.batches[len(e.batches)-1].lastOffset
}

func (e *producerEntry) lastOffsetDelta() int32 {
	if len(e.batches) == 0 {
		return 0
	}
	return e.batches[len(e.batches)-1].offsetDelta
}

// setEpoch moves to a new epoch, forgetting the old epoch's batches.
func (e *producerEntry) setEpoch(epoch int16) {
	if e.epoch != epoch {
		e.batches = e.batches[:0]
		e.epoch = epoch
	}
}

func (e *producerEntry) addBatch(epoch int16, lastSeq int32, lastOffset int64, offsetDelta int32, ts int64) {
	e.setEpoch(epoch)
	if len(e.batches) == numBatchesToRetain {
		e.batches = append(e.batches[:0], e.batches[1:]...)
	}
	e.batches = append(e.batches, batchMeta{lastSeq, lastOffset, offsetDelta, ts})
	e.lastTimestamp = ts
}

// duplicateOf is the batch this one repeats: same epoch and exactly the
// same sequence range among the retained batches (findDuplicateBatch).
func (e *producerEntry) duplicateOf(epoch int16, firstSeq, lastSeq int32) (batchMeta, bool) {
	if e.epoch != epoch {
		return batchMeta{}, false
	}
	for _, b := range e.batches {
		if b.firstSeq() == firstSeq && b.lastSeq == lastSeq {
			return b, true
		}
	}
	return batchMeta{}, false
}

// incrementSequence and decrementSequence wrap at Int32.MaxValue as
// Kafka's DefaultRecordBatch does.
func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}

func inSequence(lastSeq, nextSeq int32) bool {
	return int64(nextSeq) == int64(lastSeq)+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// batchSeqs returns a batch's first and last sequence.
func batchSeqs(h recordbatch.Header) (int32, int32) {
	first := h.BaseSequence()
	if first == recordbatch.NoSequence {
		return first, first
	}
	return first, incrementSequence(first, h.LastOffsetDelta())
}

// txnSpan is a transaction that holds the LSO back: open (end =
// MaxInt64) or completed with its marker at end, which holds the LSO
// until the high watermark passes it (Kafka's unreplicatedTxns).
type txnSpan struct {
	producerID int64
	first      int64
	end        int64
}

// completedTxn is a transaction a marker ended (Kafka's CompletedTxn).
type completedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64 // the marker's offset
	aborted     bool
}

// producerState is the per-Log state. REQUIRES: Log.mu for everything.
type producerState struct {
	producers map[int64]*producerEntry
	spans     []txnSpan // sorted by first offset
	// verifying: the producers whose transaction verification started
	// while they had no ongoing transaction here (Kafka's
	// verificationStates); cleared by their next transactional batch.
	verifying map[int64]*txnVerification
	// spare is the entry that prepare edits, in no map: apply swaps it
	// with the one it replaces, so that an append allocates no entry
	// (the map's entries are read and replaced only under Log.mu).
	spare *producerEntry
}

// editable returns a copy of cur (a new producer's entry if nil) that
// prepare may change, in the spare entry.
func (ps *producerState) editable(cur *producerEntry) *producerEntry {
	if ps.spare == nil {
		ps.spare = new(producerEntry)
	}
	cur.copyTo(ps.spare)
	return ps.spare
}

// txnVerification is one producer's verification guard; its identity is
// the guard.
type txnVerification struct {
	startMs int64 // for expiry with the producers
}

func newProducerState() *producerState {
	return &producerState{producers: map[int64]*producerEntry{}, verifying: map[int64]*txnVerification{}}
}

// startVerification returns the zero guard if the producer has an ongoing
// transaction of epoch here, else its verification guard, made if none.
func (ps *producerState) startVerification(pid int64, epoch int16, nowMs int64) TxnVerificationGuard {
	if e := ps.producers[pid]; e != nil && e.txnFirstOffset >= 0 && e.epoch == epoch {
		return TxnVerificationGuard{}
	}
	v := ps.verifying[pid]
	if v == nil {
		v = &txnVerification{startMs: nowMs}
		ps.verifying[pid] = v
	}
	return TxnVerificationGuard{v: v}
}

// verified reports whether guard is the producer's current verification.
func (ps *producerState) verified(pid int64, guard TxnVerificationGuard) bool {
	return guard.v != nil && ps.verifying[pid] == guard.v
}

// appendInfo is a validated update for one batch, applied once the batch
// is written (Kafka's ProducerAppendInfo).
type appendInfo struct {
	entry     *producerEntry
	newTxn    bool          // the batch opens a transaction at its base offset
	completed *completedTxn // the batch is a marker ending a transaction
	txnBatch  bool          // transactional: ends the producer's verification
}

// duplicate reports a client batch that repeats one of the producer's last
// five (same epoch, same sequence range).
func (ps *producerState) duplicate(h recordbatch.Header) (batchMeta, bool) {
	e := ps.producers[h.ProducerID()]
	if e == nil || h.Control() {
		return batchMeta{}, false
	}
	first, last := batchSeqs(h)
	return e.duplicateOf(h.ProducerEpoch(), first, last)
}

// prepare validates a batch with a producer id at firstOffset and returns
// the update it makes. marker is the batch's transaction marker for a
// control batch (nil for any other control batch). checkSeq is false for
// batches the broker writes itself (the group coordinator's transactional
// offset commits) and for replay at recovery; epochs are checked unless
// replaying.
func (ps *producerState) prepare(h recordbatch.Header, firstOffset int64, marker *recordbatch.EndTxnMarker, checkSeq, replay bool, tp func() string) (appendInfo, error) {
	pid := h.ProducerID()
	cur := ps.producers[pid]
	if cur == nil {
		cur = newProducerEntry(pid)
	}
	upd := ps.editable(cur)
	epoch := h.ProducerEpoch()
	lastOffset := firstOffset + int64(h.LastOffsetDelta())
	if !replay && epoch < cur.epoch {
		// KIP-588: INVALID_PRODUCER_EPOCH lets the producer abort and
		// retry rather than die (ProducerFenced before Kafka 2.7).
		return appendInfo{}, withDetail(ErrInvalidProducerEpoch, fmt.Sprintf(
			"Epoch of producer %d at offset %d in %s is %d, which is smaller than the last seen epoch %d",
			pid, firstOffset, tp(), epoch, cur.epoch))
	}
	if h.Control() {
		if marker == nil {
			// Other control types carry no transaction state.
			return appendInfo{entry: upd}, nil
		}
		if !replay && cur.coordinatorEpoch > marker.CoordinatorEpoch {
			return appendInfo{}, withDetail(ErrTransactionCoordinatorFenced, fmt.Sprintf(
				"Invalid coordinator epoch for producer %d at offset %d in partition %s: %d (zombie), %d (current)",
				pid, firstOffset, tp(), marker.CoordinatorEpoch, cur.coordinatorEpoch))
		}
		info := appendInfo{entry: upd, txnBatch: true}
		if cur.txnFirstOffset >= 0 {
			info.completed = &completedTxn{producerID: pid, firstOffset: cur.txnFirstOffset, lastOffset: firstOffset, aborted: !marker.Commit}
		}
		upd.setEpoch(epoch)
		upd.coordinatorEpoch = marker.CoordinatorEpoch
		upd.txnFirstOffset = -1
		upd.lastTimestamp = h.MaxTimestamp()
		return info, nil
	}

	first, last := batchSeqs(h)
	if checkSeq && !replay {
		if err := checkSequence(cur, epoch, first, firstOffset, tp); err != nil {
			return appendInfo{}, err
		}
	}
	upd.addBatch(epoch, last, lastOffset, h.LastOffsetDelta(), h.MaxTimestamp())
	info := appendInfo{entry: upd, txnBatch: h.Transactional()}
	switch {
	case upd.txnFirstOffset >= 0 && !h.Transactional():
		if !replay {
			return appendInfo{}, withDetail(ErrInvalidTxnState, fmt.Sprintf(
				"Expected transactional write from producer %d at offset %d in partition %s", pid, firstOffset, tp()))
		}
	case upd.txnFirstOffset < 0 && h.Transactional():
		upd.txnFirstOffset = firstOffset
		info.newTxn = true
	}
	return info, nil
}

// checkSequence is ProducerAppendInfo.checkSequence for one batch: a new
// epoch starts at sequence 0 (unless the partition knows no epoch for the
// producer, post KIP-360), and within an epoch each batch follows the
// last; a producer whose state the partition lost (no epoch) may continue
// at any sequence.
func checkSequence(cur *producerEntry, epoch int16, firstSeq int32, offset int64, tp func() string) error {
	if epoch != cur.epoch {
		if firstSeq != 0 && cur.epoch != recordbatch.NoProducerEpoch {
			return withDetail(ErrOutOfOrderSequence, fmt.Sprintf(
				"Invalid sequence number for new epoch of producer %d at offset %d in partition %s: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				cur.id, offset, tp(), epoch, firstSeq, cur.epoch))
		}
		return nil
	}
	lastSeq := cur.lastSeq()
	if cur.epoch == recordbatch.NoProducerEpoch || inSequence(lastSeq, firstSeq) {
		return nil
	}
	return withDetail(ErrOutOfOrderSequence, fmt.Sprintf(
		"Out of order sequence number for producer %d at offset %d in partition %s: %d (incoming seq. number), %d (current end sequence number)",
		cur.id, offset, tp(), firstSeq, lastSeq))
}

// apply installs a prepared update after its batch was written, returning
// the completed transaction (if any) with the LSO to record for it in the
// aborted-transaction index. hw is the current high watermark, below which
// completed transactions no longer hold the LSO.
func (ps *producerState) apply(info *appendInfo, hw int64) (done *completedTxn, lso int64) {
	e := info.entry
	old := ps.producers[e.id]
	ps.producers[e.id] = e
	if e == ps.spare {
		ps.spare = old // nil for a new producer
	}
	if info.txnBatch {
		// Either the transaction is now open here or it ended: the
		// verification is used up (as Kafka's appendInfo update).
		delete(ps.verifying, e.id)
	}
	if !info.newTxn && info.completed == nil {
		return nil, 0 // the transactions holding the LSO are unchanged
	}
	spans := ps.spans[:0:0]
	for _, s := range ps.spans {
		if s.end >= hw { // still holds the LSO
			spans = append(spans, s)
		}
	}
	if info.newTxn {
		spans = append(spans, txnSpan{producerID: e.id, first: e.txnFirstOffset, end: math.MaxInt64})
	}
	if c := info.completed; c != nil {
		// Kafka's lastStableOffset(completedTxn): the first offset of the
		// oldest other open transaction, else the offset after the marker.
		lso = c.lastOffset + 1
		for i := range spans {
			s := &spans[i]
			if s.producerID == c.producerID && s.first == c.firstOffset && s.end == math.MaxInt64 {
				s.end = c.lastOffset
			} else if s.end == math.MaxInt64 && s.first < lso {
				lso = s.first
			}
		}
		done = c
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].first < spans[j].first })
	ps.spans = spans
	return done, lso
}

// lsoFrom is the last stable offset for high watermark hw given spans:
// the first offset of the oldest transaction still open or whose marker
// is not yet below hw, capped at hw.
func lsoFrom(spans []txnSpan, hw int64) int64 {
	for _, s := range spans {
		if s.end >= hw {
			return min(s.first, hw)
		}
	}
	return hw
}

// producers lists the state for DescribeProducers, by producer id.
func (ps *producerState) list() []ProducerInfo {
	out := make([]ProducerInfo, 0, len(ps.producers))
	for _, e := range ps.producers {
		out = append(out, ProducerInfo{
			ProducerID:            e.id,
			ProducerEpoch:         e.epoch,
			LastSequence:          e.lastSeq(),
			LastTimestamp:         e.lastTimestamp,
			CoordinatorEpoch:      e.coordinatorEpoch,
			CurrentTxnStartOffset: e.txnFirstOffset,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// expire removes producers without an open transaction whose last
// timestamp is expirationMs or more before nowMs (Kafka's
// removeExpiredProducers), returning how many went.
func (ps *producerState) expire(nowMs, expirationMs int64) int {
	n := 0
	for id, e := range ps.producers {
		if e.txnFirstOffset < 0 && nowMs-e.lastTimestamp >= expirationMs {
			delete(ps.producers, id)
			n++
		}
	}
	for id, v := range ps.verifying {
		if nowMs-v.startMs >= expirationMs {
			delete(ps.verifying, id)
		}
	}
	return n
}
