package cleaner

// Transaction and producer bookkeeping for a pass, from batch headers.
//
// Kafka takes aborted transactions from the .txnindex and the producers'
// last batches from its producer state. Neither exists in partition/ yet,
// so a pass derives both from one scan of the whole log's batch headers:
// an ABORT marker of producer P aborts P's transactional data batches
// since P's previous marker; a producer's last batch is its last data
// batch in the log. The results are the same as Kafka's wherever its
// indexes are correct, and the cleaner switches to partition's producer
// state without changing its rules once that exists.

import (
	"sort"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// abortedTxn is one aborted transaction: data from firstOffset, ABORT
// marker at lastOffset (Kafka's AbortedTxn).
type abortedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64
}

// producerEntry is what a pass knows of a producer (Kafka's
// ProducerStateEntry, reduced to what the cleaner reads).
type producerEntry struct {
	lastDataOffset int64 // lastOffset of its last data batch, -1 if none
	epoch          int16 // epoch of its last batch
	lastTimestamp  int64 // maxTimestamp of its last batch
	openTxnFirst   int64 // first offset of its open transaction, -1 if none
}

// logScan is what one scan of every batch header of a log yields.
type logScan struct {
	producers map[int64]*producerEntry
	aborted   []abortedTxn // sorted by firstOffset
	// firstUnstable is the first offset of the oldest open transaction
	// (bounds the LSO), or -1.
	firstUnstable int64
	// firstBatchMaxTs is each segment's first batch's max timestamp
	// (KIP-354), by base offset; absent for an empty segment.
	firstBatchMaxTs map[int64]int64
	// records are the record counts per segment, by base offset: they
	// size the offset map.
	records map[int64]int64
}

func newLogScan() *logScan {
	return &logScan{producers: map[int64]*producerEntry{}, firstUnstable: -1, firstBatchMaxTs: map[int64]int64{}, records: map[int64]int64{}}
}

// add notes one batch. ctrlType is the control record's type (-1 when the
// control batch has no record).
func (s *logScan) add(h recordbatch.Header, ctrlType int16) {
	pid := h.ProducerID()
	if pid < 0 {
		return
	}
	p := s.producers[pid]
	if p == nil {
		p = &producerEntry{lastDataOffset: -1, openTxnFirst: -1}
		s.producers[pid] = p
	}
	p.epoch = h.ProducerEpoch()
	p.lastTimestamp = h.MaxTimestamp()
	if !h.Control() {
		p.lastDataOffset = h.LastOffset()
		if h.Transactional() && p.openTxnFirst < 0 {
			p.openTxnFirst = h.BaseOffset()
		}
		return
	}
	switch ctrlType {
	case recordbatch.ControlAbort:
		if p.openTxnFirst >= 0 {
			s.aborted = append(s.aborted, abortedTxn{producerID: pid, firstOffset: p.openTxnFirst, lastOffset: h.LastOffset()})
		}
		p.openTxnFirst = -1
	case recordbatch.ControlCommit:
		p.openTxnFirst = -1
	}
}

// finish sorts the aborted transactions and finds the first unstable
// offset.
func (s *logScan) finish() {
	sort.Slice(s.aborted, func(i, j int) bool { return s.aborted[i].firstOffset < s.aborted[j].firstOffset })
	for _, p := range s.producers {
		if p.openTxnFirst >= 0 && (s.firstUnstable < 0 || p.openTxnFirst < s.firstUnstable) {
			s.firstUnstable = p.openTxnFirst
		}
	}
}

// activeProducers returns the producers Kafka would still hold in its
// producer state at now: an open transaction, or a last batch newer than
// producer.id.expiration.ms.
func (s *logScan) activeProducers(now, expirationMs int64) map[int64]*producerEntry {
	out := make(map[int64]*producerEntry, len(s.producers))
	for pid, p := range s.producers {
		if p.openTxnFirst >= 0 || now-p.lastTimestamp < expirationMs {
			out[pid] = p
		}
	}
	return out
}

// txnMetadata follows transactions through the batches of a pass (Kafka's
// CleanedTransactionMetadata): which data batches are aborted, and which
// markers no longer guard any data.
type txnMetadata struct {
	aborted []abortedTxn
	next    int
	// ongoing are aborted transactions whose range has started, by
	// producer; seen says a batch of it was met in this pass.
	ongoing map[int64]*ongoingAbort
	// committed are producers with transactional data met since their
	// last marker in this pass.
	committed map[int64]bool
}

type ongoingAbort struct {
	txn  abortedTxn
	seen bool
}

func newTxnMetadata(aborted []abortedTxn) *txnMetadata {
	return &txnMetadata{aborted: aborted, ongoing: map[int64]*ongoingAbort{}, committed: map[int64]bool{}}
}

func (t *txnMetadata) consumeUpTo(offset int64) {
	for t.next < len(t.aborted) && t.aborted[t.next].firstOffset <= offset {
		a := t.aborted[t.next]
		t.ongoing[a.producerID] = &ongoingAbort{txn: a}
		t.next++
	}
}

// onBatch is called for every data batch; it reports whether the batch
// belongs to an aborted transaction.
func (t *txnMetadata) onBatch(h recordbatch.Header) bool {
	t.consumeUpTo(h.LastOffset())
	if !h.Transactional() {
		return false
	}
	if a := t.ongoing[h.ProducerID()]; a != nil {
		a.seen = true
		return true
	}
	t.committed[h.ProducerID()] = true
	return false
}

// onControl is called for every control batch (ctrlType -1 when it has no
// record); it reports whether the marker may be discarded: no batch of its
// transaction was met in this pass.
func (t *txnMetadata) onControl(h recordbatch.Header, ctrlType int16) bool {
	t.consumeUpTo(h.LastOffset())
	if ctrlType < 0 {
		return true // an empty control batch was already cleaned
	}
	pid := h.ProducerID()
	switch ctrlType {
	case recordbatch.ControlAbort:
		a := t.ongoing[pid]
		delete(t.ongoing, pid)
		return a == nil || !a.seen
	case recordbatch.ControlCommit:
		had := t.committed[pid]
		delete(t.committed, pid)
		return !had
	}
	return false
}
