package cleaner

// Transaction bookkeeping for a pass.
//
// Two parts, as in Kafka's cleaner. First the aborted transactions, from
// one scan of the whole log's batch headers (logScan): an ABORT marker of
// producer P aborts P's transactional data batches since P's previous
// marker. Kafka reads them from the .txnindex; the results are the same
// wherever that index is correct. Then, batch by batch through the
// rewrite, txnMetadata (Kafka's CleanedTransactionMetadata) says which
// data batches are aborted, which markers no longer guard any data, and
// which aborted transactions go into the cleaned segment's .txnindex
// (those whose marker must stay).
//
// The producers' last batches, which the rewrite keeps, are not decided
// here: they come from the partition's producer state
// (Log.LastRecordsOfActiveProducers, Kafka's lastRecordsOfActiveProducers),
// read for each group; see filterBatch.

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

// logScan is what one scan of every batch header of a log yields.
type logScan struct {
	// openTxn is the first offset of each producer's transaction that no
	// marker has ended yet in the log, by producer id.
	openTxn map[int64]int64
	aborted []abortedTxn // sorted by firstOffset
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
	return &logScan{openTxn: map[int64]int64{}, firstUnstable: -1, firstBatchMaxTs: map[int64]int64{}, records: map[int64]int64{}}
}

// add notes one batch. ctrlType is the control record's type (-1 when the
// control batch has no record).
func (s *logScan) add(h recordbatch.Header, ctrlType int16) {
	pid := h.ProducerID()
	if pid < 0 {
		return
	}
	first, open := s.openTxn[pid]
	if !h.Control() {
		if h.Transactional() && !open {
			s.openTxn[pid] = h.BaseOffset()
		}
		return
	}
	switch ctrlType {
	case recordbatch.ControlAbort:
		if open {
			s.aborted = append(s.aborted, abortedTxn{producerID: pid, firstOffset: first, lastOffset: h.LastOffset()})
		}
		delete(s.openTxn, pid)
	case recordbatch.ControlCommit:
		delete(s.openTxn, pid)
	}
}

// finish sorts the aborted transactions and finds the first unstable
// offset.
func (s *logScan) finish() {
	sort.Slice(s.aborted, func(i, j int) bool { return s.aborted[i].firstOffset < s.aborted[j].firstOffset })
	for _, first := range s.openTxn {
		if s.firstUnstable < 0 || first < s.firstUnstable {
			s.firstUnstable = first
		}
	}
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
	// indexed are the aborted transactions whose ABORT marker was met and
	// could not be discarded since the group began (Kafka's cleanedIndex):
	// the cleaned segment's .txnindex.
	indexed []abortedTxn
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
// transaction was met in this pass. An ABORT marker that must stay is
// added to indexed.
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
		if a == nil || !a.seen {
			return true
		}
		t.indexed = append(t.indexed, a.txn)
		return false
	case recordbatch.ControlCommit:
		had := t.committed[pid]
		delete(t.committed, pid)
		return !had
	}
	return false
}
