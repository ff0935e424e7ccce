package partition

// The transaction-facing contract of a Log: what the produce path, the
// transaction coordinator and the group coordinator (transactional offset
// commits) call. Producer state itself (sequence checks, open
// transactions) lives in producer_state.go, the aborted-transaction index
// in txn_index.go, producer-state snapshots in producer_snapshot.go.

import (
	"fmt"
	"math"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// TxnMarker ends one producer's transaction on one partition.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the transaction.version the marker is
	// written under (WriteTxnMarkers v2, KIP-1228): from 2 on the
	// coordinator bumped the epoch before writing it, so its epoch must
	// be above the producer's (equal only for a retry once the
	// transaction is over); below 2 (and for the coordinator's own
	// markers) an epoch equal to the producer's is accepted.
	TransactionVersion int16
}

// AbortedTxn is one entry of the aborted-transaction index, as Fetch
// returns it to read_committed consumers.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// ProducerInfo is one producer's state on a partition, as
// DescribeProducers reports it.
type ProducerInfo struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64 // -1: no open transaction
}

// AppendWithOrigin is Append for a batch written by a broker component
// rather than a client (recordbatch.OriginInternal: the group coordinator's
// transactional offset commits): the producer epoch is checked, sequence
// numbers are not (Kafka's AppendOrigin.COORDINATOR), and no duplicate
// is looked for.
func (l *Log) AppendWithOrigin(batch []byte, origin recordbatch.Origin) (AppendResult, error) {
	return l.appendOrigin(batch, origin, nil, nil, nil)
}

// TxnVerificationGuard is what StartTxnVerification hands out and
// AppendVerified checks (Kafka 3.6+'s VerificationGuard). The zero value
// is Kafka's sentinel: the producer had an ongoing transaction on the
// partition when verification started, so no new one may be opened with
// it.
type TxnVerificationGuard struct {
	v *txnVerification
	// strictMarker is set only on the guard WriteTxnMarker passes for a
	// marker of transaction.version 2 or above (checkMarkerEpochLocked):
	// a marker never opens a transaction, so no verification is asked
	// of it, and the guard carries its epoch rule instead.
	strictMarker bool
}

// StartTxnVerification is called before asking the transaction
// coordinator whether this partition is in the producer's transaction,
// and its guard passed to AppendVerified with the batch (Kafka's
// UnifiedLog.maybeStartTransactionVerification). The producer's marker
// clears the guard, so a batch verified just before its transaction
// ended cannot open a transaction here that no coordinator will end.
// With an ongoing transaction of that epoch already here, the guard is
// the zero one.
func (l *Log) StartTxnVerification(producerID int64, producerEpoch int16) TxnVerificationGuard {
	now := l.store.clock.Now().UnixMilli()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pstate.startVerification(producerID, producerEpoch, now)
}

// AppendVerified is AppendWithOrigin for a transactional batch verified
// with the transaction coordinator after StartTxnVerification returned
// guard: a batch that would open a transaction on the partition fails
// with ErrInvalidTxnState unless guard is still the producer's current
// one (Kafka's batchMissingRequiredVerification). A batch continuing the
// producer's ongoing transaction needs none.
func (l *Log) AppendVerified(batch []byte, origin recordbatch.Origin, guard TxnVerificationGuard) (AppendResult, error) {
	return l.appendOrigin(batch, origin, nil, &guard, nil)
}

// WriteTxnMarker appends the COMMIT or ABORT control batch that ends the
// producer's transaction on this partition and returns its offset. It
// completes the open transaction (moving the LSO once the high watermark
// passes the marker) and, for an abort, adds the transaction to the
// aborted-transaction index. A marker whose coordinator epoch is older
// than the last one seen for the producer fails with
// ErrTransactionCoordinatorFenced, one with an older producer epoch with
// ErrInvalidProducerEpoch (at transaction.version 2, one not above it
// unless retrying; see TxnMarker.TransactionVersion). A marker for a
// producer without an open transaction here is written all the same, as
// Kafka does.
func (l *Log) WriteTxnMarker(m TxnMarker) (int64, error) {
	mk := recordbatch.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}
	batch, err := recordbatch.BuildEndTxnMarker(0, leaderEpoch, l.store.clock.Now().UnixMilli(), m.ProducerID, m.ProducerEpoch, mk)
	if err != nil {
		return -1, err
	}
	var guard *TxnVerificationGuard
	if m.TransactionVersion >= 2 {
		guard = &TxnVerificationGuard{strictMarker: true}
	}
	res, err := l.appendOrigin(batch, recordbatch.OriginInternal, &mk, guard, nil)
	return res.BaseOffset, err
}

// checkMarkerEpochLocked is the transaction.version 2 rule for a marker
// of producer epoch h.ProducerEpoch() at offset (Kafka's
// ProducerAppendInfo.checkProducerEpoch): the epoch must be above the
// producer's, or equal to it once the transaction here is over (or at
// the maximum epoch), which is a retry of a marker already written
// (KAFKA-19999). The older-epoch case prepare reports itself.
// REQUIRES: mu held.
func (l *Log) checkMarkerEpochLocked(h recordbatch.Header, offset int64) error {
	cur := l.pstate.producers[h.ProducerID()]
	if cur == nil || h.ProducerEpoch() != cur.epoch {
		return nil
	}
	if cur.txnFirstOffset < 0 || cur.epoch == math.MaxInt16 {
		return nil
	}
	return withDetail(ErrInvalidProducerEpoch, fmt.Sprintf(
		"Epoch of producer %d at offset %d in %s is %d, which is <= the last seen epoch %d (TV2)",
		h.ProducerID(), offset, l.tpName(), h.ProducerEpoch(), cur.epoch))
}

// AbortedTransactions returns the aborted transactions that overlap the
// offsets [from, upTo): those whose first offset is below upTo and whose
// abort marker is at or past from, ordered as the index holds them (by
// marker offset). As Kafka's collectAbortedTransactions it searches from
// the segment holding from, until an entry's LSO shows that no later
// transaction can start below upTo.
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	segs := *l.segs.Load()
	i := 0
	for i+1 < len(segs) && segs[i+1].base <= from {
		i++
	}
	var out []AbortedTxn
	for ; i < len(segs); i++ {
		var done bool
		out, done = collectAborted(segs[i].abortedEntries(), from, upTo, out)
		if done {
			break
		}
	}
	return out
}

// Producers returns the state of every producer the partition knows, by
// producer id.
func (l *Log) Producers() []ProducerInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pstate.list()
}

// ExpireProducers forgets the producers without an open transaction whose
// last batch timestamp is at least producer.id.expiration.ms old (Kafka's
// removeExpiredProducers, run every
// producer.id.expiration.check.interval.ms). It returns how many went.
func (l *Log) ExpireProducers(expirationMs int64) int {
	now := l.store.clock.Now().UnixMilli()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pstate.expire(now, expirationMs)
}

func (l *Log) tpName() string { return fmt.Sprintf("%s-%d", l.topic, l.partition) }

// producerCheckLocked is the producer-state step of an append at base:
// a duplicate of one of the producer's last batches (client batches
// only) is answered with the original's offsets; otherwise the batch is
// validated (sequence checks for client batches only) and its update
// returned for applyProducerLocked. With a guard, a batch opening a
// transaction must present the producer's current verification.
// REQUIRES: mu held.
func (l *Log) producerCheckLocked(h recordbatch.Header, base int64, origin recordbatch.Origin, marker *recordbatch.EndTxnMarker, guard *TxnVerificationGuard) (*AppendResult, appendInfo, error) {
	client := origin == recordbatch.OriginClient
	if client {
		if d, ok := l.pstate.duplicate(h); ok {
			// UnifiedLog.append: the duplicate's first and last offset,
			// its timestamp as the log append time, our log start offset.
			return &AppendResult{BaseOffset: d.firstOffset(), LogAppendTime: d.timestamp,
				LogStartOffset: l.logStart.Load(), Duplicate: true}, appendInfo{}, nil
		}
	}
	if marker != nil && guard != nil && guard.strictMarker {
		if err := l.checkMarkerEpochLocked(h, base); err != nil {
			return nil, appendInfo{}, err
		}
	}
	info, err := l.pstate.prepare(h, base, marker, client, false, l.tpName)
	if err == nil && info.newTxn && guard != nil && !l.pstate.verified(h.ProducerID(), *guard) {
		return nil, appendInfo{}, withDetail(ErrInvalidTxnState, "Record was not part of an ongoing transaction")
	}
	return nil, info, err
}

// applyProducerLocked installs the update of a batch just written to seg,
// records an aborted transaction in seg's .txnindex, and publishes the
// transactions that hold the LSO. It runs before the high watermark moves
// past the batch, so readers never see an LSO past a transaction's start.
// REQUIRES: mu held.
func (l *Log) applyProducerLocked(info *appendInfo, seg *segment) error {
	done, lso := l.pstate.apply(info, l.hw.Load().offset)
	if info.newTxn || info.completed != nil {
		l.publishTxnView()
	}
	if done != nil && done.aborted {
		return seg.appendAbortedLocked(l.store.fs, abortedEntry{
			producerID: done.producerID, firstOffset: done.firstOffset,
			lastOffset: done.lastOffset, lastStableOffset: lso,
		})
	}
	return nil
}

func (l *Log) publishTxnView() {
	v := append([]txnSpan(nil), l.pstate.spans...)
	l.txnView.Store(&v)
}

// lastStable is the LSO for high watermark hw (loaded before the view, so
// a transaction that started below hw is in it): the first offset of the
// oldest transaction not yet decided below hw, never below the log start
// offset (Kafka's firstUnstableOffset) nor past hw.
func (l *Log) lastStable(hw, logStart int64) int64 {
	v := l.txnView.Load()
	if v == nil {
		return hw
	}
	return min(max(lsoFrom(*v, hw), logStart), hw)
}

// controlMarker reads the transaction marker of a control batch, nil if
// it holds none.
func controlMarker(batch []byte) *recordbatch.EndTxnMarker {
	recs, err := recordbatch.Records(batch, 1<<20)
	if err != nil || len(recs) == 0 {
		return nil
	}
	m, err := recordbatch.ParseEndTxnMarker(recs[0])
	if err != nil {
		return nil
	}
	return &m
}
