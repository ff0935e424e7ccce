package cleaner

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Log is what the cleaner needs of a partition log; *partition.Log has it.
type Log interface {
	Topic() string
	Partition() int32
	Config() partition.LogConfig
	Offsets() partition.Offsets
	Segments() []partition.SegmentInfo
	ReadSegment(base int64, p []byte, off int64) (int, error)
	CreateCleanedSegment(base int64) (vfs.File, error)
	RemoveCleanedSegment(base int64)
	WriteCleanedTxnIndex(base int64, kept []partition.AbortedTxnEntry) error
	ReplaceSegments(oldBases []int64, newBase int64) error
	DeleteSegmentsBefore(offset int64) (int, error)
	Deleted() bool
	LastRecordsOfActiveProducers() map[int64]partition.ProducerLastRecord
}

var _ Log = (*partition.Log)(nil)

// errAborted means a pass stopped because its log was deleted, changed
// under it, paused or the cleaner is shutting down; the checkpoint stays.
var errAborted = errors.New("cleaner: cleaning aborted")

// Stats describe one pass (Kafka's CleanerStats).
type Stats struct {
	BytesRead, BytesWritten      int64
	MapBytesRead                 int64 // bytes read to build the offset map
	MessagesRead, MessagesKept   int64
	InvalidMessages              int64 // keyless records dropped
	BatchesRebuilt, EmptyBatches int64
	BufferUtilization            float64
	FirstDirtyOffset, EndOffset  int64
	Groups                       int
}

// cleanRange is a log's cleanable range (spec section 7) and the sizes
// that rank it (section 6).
type cleanRange struct {
	firstDirty, firstUncleanable int64
	cleanBytes, cleanableBytes   int64
	// resetCheckpoint says the stored checkpoint was out of range and
	// firstDirty is the log start offset instead (KAFKA-8724).
	resetCheckpoint bool
	forced          bool // max.compaction.lag.ms passed (KIP-354)
}

func (r cleanRange) ratio() float64 {
	if r.cleanBytes+r.cleanableBytes == 0 {
		return 0
	}
	return float64(r.cleanableBytes) / float64(r.cleanBytes+r.cleanableBytes)
}

// segmentHolding returns the index of the segment containing offset (the
// last one whose base is <= offset), or 0.
func segmentHolding(segs []partition.SegmentInfo, offset int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].BaseOffset > offset })
	return max(i-1, 0)
}

// computeRange is Kafka's LogCleanerManager.cleanableOffsets and the size
// sums of LogToClean. checkpoint < 0 means none. firstBatchTs returns a
// segment's first batch's max timestamp (-1 if unknown or empty) and is
// called only when max.compaction.lag.ms can force a clean.
func computeRange(segs []partition.SegmentInfo, offs partition.Offsets, lso, checkpoint int64,
	cfg partition.LogConfig, now int64, firstBatchTs func(partition.SegmentInfo) int64) cleanRange {
	var r cleanRange
	if len(segs) == 0 {
		return r
	}
	r.firstDirty = checkpoint
	if checkpoint < 0 {
		r.firstDirty = offs.LogStartOffset
	} else if checkpoint < offs.LogStartOffset || checkpoint > offs.LogEndOffset {
		r.firstDirty = offs.LogStartOffset
		r.resetCheckpoint = true
	}
	active := segs[len(segs)-1]
	raw := min(lso, offs.HighWatermark, active.BaseOffset)
	dirtyFrom := segmentHolding(segs, r.firstDirty)
	if cfg.MinCompactionLagMs > 0 {
		// Kafka's s.largestTimestamp: a segment without timestamps is
		// judged by its file's modification time.
		for _, s := range segs[dirtyFrom : len(segs)-1] {
			if s.LargestTimestamp > now-cfg.MinCompactionLagMs {
				raw = min(raw, s.BaseOffset)
				break
			}
		}
	}
	if cfg.MaxCompactionLagMs > 0 && cfg.MaxCompactionLagMs < math.MaxInt64 && now-cfg.MaxCompactionLagMs > 0 {
		earliest := int64(math.MaxInt64)
		for _, s := range segs[dirtyFrom : len(segs)-1] {
			if ts := firstBatchTs(s); ts > 0 {
				earliest = min(earliest, ts)
			}
		}
		r.forced = earliest < now-cfg.MaxCompactionLagMs
	}
	raw = max(raw, r.firstDirty)
	r.firstUncleanable = segs[segmentHolding(segs, raw)].BaseOffset
	for _, s := range segs {
		if s.BaseOffset < r.firstDirty {
			r.cleanBytes += s.Size
		}
		if s.BaseOffset < r.firstUncleanable && s.NextOffset > r.firstDirty {
			r.cleanableBytes += s.Size
		}
	}
	return r
}

// pass is one cleaning of one log.
type pass struct {
	log       Log
	cfg       partition.LogConfig
	now       int64 // one instant for the whole pass
	opts      *Config
	offsetMap *offsetMap
	buf       []byte
	// scratch is the one buffer compressed batches are decompressed into,
	// and kept the one slice of records a rewritten batch keeps: records
	// alias scratch only until filterBatch has built their new batch, and
	// the map keeps only the keys' hashes, so both are reused batch after
	// batch (an LZ4 log otherwise costs about twice its uncompressed size
	// in garbage per pass).
	scratch  []byte
	kept     []recordbatch.Record
	out      []byte // cleanGroup's write buffer
	raw      []byte // a rebuilt compressed batch's records, before compression
	throttle *throttler
	abort    func() bool // true when the pass must stop
	stats    Stats

	segs []partition.SegmentInfo
	scan *logScan
	rng  cleanRange
	// active are the partition's active producers, read for each group
	// as Kafka's cleanSegments reads lastRecordsOfActiveProducers.
	active map[int64]partition.ProducerLastRecord
}

// scanLog reads every batch of the log once for the transaction and
// producer bookkeeping (see txn.go) and each segment's first batch
// timestamp.
func (p *pass) scanLog() error {
	p.scan = newLogScan()
	for _, s := range p.segs {
		r := newSegmentReader(p.log, s.BaseOffset, s.Size, p.buf, p.throttle, &p.stats.BytesRead)
		r.abort = p.abort
		// Headers only: the records are read (and checked) by the map
		// and the rewrite, which need them; a control batch's type
		// needs its record.
		r.headers = true
		first := true
		for {
			b, _, err := r.next()
			if err != nil {
				return err
			}
			if b == nil {
				break
			}
			h := recordbatch.Header(b)
			if first {
				p.scan.firstBatchMaxTs[s.BaseOffset] = h.MaxTimestamp()
				first = false
			}
			ct := int16(-1)
			if h.Control() {
				whole, err := r.whole()
				if err != nil {
					return err
				}
				if ct, err = p.controlType(whole); err != nil {
					return err
				}
			}
			p.scan.add(h, ct)
			p.scan.records[s.BaseOffset] += int64(h.RecordCount())
		}
		p.buf = r.buf
		if p.abort() {
			return errAborted
		}
	}
	p.scan.finish()
	return nil
}

// controlType returns a control batch's type (-1 without a record),
// having checked its CRC.
func (p *pass) controlType(b []byte) (int16, error) {
	if recordbatch.Header(b).RecordCount() == 0 {
		return -1, recordbatch.Header(b).CheckCRC()
	}
	ct := int16(-1)
	err := recordbatch.ForEachRecordScratch(b, &p.scratch, p.opts.MaxDecompressedBytes, func(r recordbatch.Record) error {
		if ct < 0 {
			t, err := recordbatch.ControlType(r)
			if err != nil {
				return err
			}
			ct = t
		}
		return nil
	})
	return ct, err
}

// buildMap fills the offset map from the dirty range (Kafka's
// buildOffsetMap): the last offset of every key, skipping control batches,
// aborted data, keyless records and records below firstDirty, stopping
// early when the map is full.
func (p *pass) buildMap() error {
	m := p.offsetMap
	start := p.rng.firstDirty
	var records int64
	for i := segmentHolding(p.segs, start); i < len(p.segs) && p.segs[i].BaseOffset < p.rng.firstUncleanable; i++ {
		records += p.scan.records[p.segs[i].BaseOffset]
	}
	m.resetFrom(records, start, p.rng.firstUncleanable-start)
	// Only transactions whose marker the scan will meet: one aborted
	// before the first segment scanned would otherwise stay "ongoing" and
	// hide its producer's later committed data (Kafka's
	// collectAbortedTransactions(start, end) likewise returns those with
	// lastOffset >= start).
	from := p.segs[segmentHolding(p.segs, start)].BaseOffset
	var aborted []abortedTxn
	for _, a := range p.scan.aborted {
		if a.lastOffset >= from {
			aborted = append(aborted, a)
		}
	}
	txn := newTxnMetadata(aborted)
	for i := segmentHolding(p.segs, start); i < len(p.segs) && p.segs[i].BaseOffset < p.rng.firstUncleanable; i++ {
		s := p.segs[i]
		r := newSegmentReader(p.log, s.BaseOffset, s.Size, p.buf, p.throttle, &p.stats.MapBytesRead)
		r.abort = p.abort
		r.verify = false // each batch is checked below, once
		full := false
		for !full {
			b, _, err := r.next()
			if err != nil {
				return err
			}
			if b == nil {
				break
			}
			h := recordbatch.Header(b)
			if h.Control() {
				ct, err := p.controlType(b)
				if err != nil {
					return err
				}
				txn.onControl(h, ct)
			} else if !txn.onBatch(h) && h.LastOffset() >= start {
				base := h.BaseOffset()
				err := recordbatch.ForEachRecordScratch(b, &p.scratch, p.opts.MaxDecompressedBytes, func(rec recordbatch.Record) error {
					off := base + int64(rec.OffsetDelta)
					if rec.Key == nil || off < start {
						return nil
					}
					if m.full() {
						full = true
						return errStop
					}
					m.put(rec.Key, off)
					return nil
				})
				if err != nil && !errors.Is(err, errStop) {
					return err
				}
			} else if err := h.CheckCRC(); err != nil {
				return err
			}
			if !full && h.LastOffset() >= start {
				m.latestOffset = h.LastOffset()
			}
		}
		p.buf = r.buf
		if full {
			break
		}
		m.latestOffset = max(m.latestOffset, s.NextOffset-1)
		if p.abort() {
			return errAborted
		}
	}
	p.stats.BufferUtilization = m.utilization()
	return nil
}

var errStop = errors.New("stop")

// groupSegments groups the segments to rewrite as Kafka's
// Cleaner.groupSegmentsBySize does: a group takes the next segment while
// the group's log bytes stay within segment.bytes, its offset index bytes
// and its time index bytes each within segment.index.bytes (the real
// sizes of the segments' indexes before cleaning), and the next segment's
// last offset stays within an int32 of the group's base offset; that
// last offset is estimated as the base of the segment after it minus
// one, or for the last segment firstUncleanable minus one, and not
// checked for an empty segment (KAFKA-12889).
func groupSegments(segs []partition.SegmentInfo, cfg partition.LogConfig, firstUncleanable int64) [][]partition.SegmentInfo {
	var groups [][]partition.SegmentInfo
	for len(segs) > 0 {
		g := segs[:1:1]
		logBytes, offIdx, timeIdx := segs[0].Size, segs[0].OffsetIndexBytes, segs[0].TimeIndexBytes
		segs = segs[1:]
		for len(segs) > 0 {
			n := segs[0]
			lastEstimate := firstUncleanable - 1
			if len(segs) > 1 {
				lastEstimate = segs[1].BaseOffset - 1
			}
			if logBytes+n.Size > int64(cfg.SegmentBytes) ||
				offIdx+n.OffsetIndexBytes > int64(cfg.SegmentIndexBytes) ||
				timeIdx+n.TimeIndexBytes > int64(cfg.SegmentIndexBytes) ||
				(n.Size > 0 && lastEstimate-g[0].BaseOffset > math.MaxInt32) {
				break
			}
			g = append(g, n)
			logBytes += n.Size
			offIdx += n.OffsetIndexBytes
			timeIdx += n.TimeIndexBytes
			segs = segs[1:]
		}
		groups = append(groups, g)
	}
	return groups
}

// run is one pass: scan, range, map, rewrite. It returns the new
// checkpoint (the first dirty offset of the next pass), or ok false when
// there was nothing to clean.
func (p *pass) run(checkpoint int64) (next int64, ok bool, err error) {
	p.segs = p.log.Segments()
	offs := p.log.Offsets()
	if len(p.segs) == 0 {
		return 0, false, nil
	}
	if err := p.scanLog(); err != nil {
		return 0, false, err
	}
	lso := offs.LastStableOffset
	if p.scan.firstUnstable >= 0 {
		lso = min(lso, max(p.scan.firstUnstable, offs.LogStartOffset))
	}
	p.rng = computeRange(p.segs, offs, lso, checkpoint, p.cfg, p.now, func(s partition.SegmentInfo) int64 {
		if ts, ok := p.scan.firstBatchMaxTs[s.BaseOffset]; ok {
			return ts
		}
		return -1
	})
	if p.rng.cleanableBytes == 0 {
		return p.rng.firstDirty, false, nil
	}
	p.stats.FirstDirtyOffset = p.rng.firstDirty
	if err := p.buildMap(); err != nil {
		return 0, false, err
	}
	end := p.offsetMap.latestOffset + 1
	if end <= p.rng.firstDirty {
		return p.rng.firstDirty, false, nil
	}
	p.stats.EndOffset = end
	var toClean []partition.SegmentInfo
	for _, s := range p.segs[:len(p.segs)-1] {
		if s.BaseOffset < end {
			toClean = append(toClean, s)
		}
	}
	groups := groupSegments(toClean, p.cfg, p.rng.firstUncleanable)
	p.stats.Groups = len(groups)
	txn := newTxnMetadata(p.scan.aborted)
	for _, g := range groups {
		if p.abort() || p.log.Deleted() {
			return 0, false, errAborted
		}
		if err := p.cleanGroup(g, txn); err != nil {
			return 0, false, err
		}
	}
	return end, true, nil
}

// cleanGroup rewrites one group of segments into one new segment named
// after the group's first base offset and swaps it in.
func (p *pass) cleanGroup(g []partition.SegmentInfo, txn *txnMetadata) error {
	base := g[0].BaseOffset
	p.active = p.log.LastRecordsOfActiveProducers()
	txn.indexed = txn.indexed[:0]
	f, err := p.log.CreateCleanedSegment(base)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		f.Close()
		p.log.RemoveCleanedSegment(base)
		return err
	}
	// out collects the group's output up to a write of readChunk bytes;
	// it is kept for the next group.
	out := p.out[:0]
	defer func() { p.out = out[:0] }()
	var written int64
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		if _, err := f.WriteAt(out, written); err != nil {
			return err
		}
		written += int64(len(out))
		p.throttle.wait(int64(len(out))) // Kafka throttles writes too
		out = out[:0]
		return nil
	}
	for _, s := range g {
		r := newSegmentReader(p.log, s.BaseOffset, s.Size, p.buf, p.throttle, &p.stats.BytesRead)
		r.abort = p.abort
		r.verify = false // filterBatch checks each batch, once
		for {
			b, _, err := r.next()
			if err != nil {
				return fail(err)
			}
			if b == nil {
				break
			}
			if out, err = p.filterBatch(b, txn, out); err != nil {
				return fail(err)
			}
			if len(out) >= readChunk {
				if err := flush(); err != nil {
					return fail(err)
				}
			}
		}
		p.buf = r.buf
		if p.abort() {
			return fail(errAborted)
		}
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		p.log.RemoveCleanedSegment(base)
		return err
	}
	p.stats.BytesWritten += written
	// The group's .txnindex: the aborted transactions whose markers it
	// keeps because it still met their data (Kafka's cleanedIndex). The
	// LSO at the abort is the partition's, or at least the first offset.
	kept := make([]partition.AbortedTxnEntry, len(txn.indexed))
	for i, a := range txn.indexed {
		kept[i] = partition.AbortedTxnEntry{ProducerID: a.producerID, FirstOffset: a.firstOffset, LastOffset: a.lastOffset, LastStableOffset: a.firstOffset}
	}
	if err := p.log.WriteCleanedTxnIndex(base, kept); err != nil {
		p.log.RemoveCleanedSegment(base)
		return err
	}
	bases := make([]int64, len(g))
	for i, s := range g {
		bases[i] = s.BaseOffset
	}
	if err := p.log.ReplaceSegments(bases, base); err != nil {
		if errors.Is(err, partition.ErrSegmentsChanged) {
			return fmt.Errorf("%w: %v", errAborted, err)
		}
		return err
	}
	return nil
}

// filterBatch decides one batch of the rewrite (spec section 9, Kafka's
// Cleaner.cleanInto and MemoryRecords.filterTo) and appends what stays of
// it to out.
func (p *pass) filterBatch(b []byte, txn *txnMetadata, out []byte) ([]byte, error) {
	h := recordbatch.Header(b)
	p.stats.MessagesRead += int64(h.RecordCount())
	var canDiscard, discardRecords bool
	if h.Control() {
		ct, err := p.controlType(b)
		if err != nil {
			return nil, err
		}
		canDiscard = txn.onControl(h, ct)
		discardRecords = canDiscard && h.HasDeleteHorizon() && h.BaseTimestamp() <= p.now
	} else {
		canDiscard = txn.onBatch(h)
		discardRecords = canDiscard
		if discardRecords {
			// Not walked below: checked here (a header kept from it
			// must not be a corrupt one).
			if err := h.CheckCRC(); err != nil {
				return nil, err
			}
		}
	}
	// The last batch of an active producer stays, even emptied: its last
	// data batch, or when its epoch has none, its control batches of
	// that epoch (Kafka's isBatchLastRecordOfProducer).
	retainEmpty := false
	if pid := h.ProducerID(); pid >= 0 {
		if e, ok := p.active[pid]; ok {
			if e.LastDataOffset >= 0 {
				retainEmpty = h.LastOffset() == e.LastDataOffset
			} else {
				retainEmpty = h.Control() && h.ProducerEpoch() == e.Epoch
			}
		}
	}
	if !retainEmpty && h.LastOffset()+1 == p.rng.firstUncleanable {
		retainEmpty = true // keeps the log end offset across a reload (KAFKA-17076)
	}
	if discardRecords && !retainEmpty {
		return out, nil
	}
	markerForEmptyTxn := canDiscard && h.Control()

	base := h.BaseOffset()
	latest := p.offsetMap.latestOffset
	total := int(h.RecordCount())
	var kept []recordbatch.Record
	tombstones := false
	if !discardRecords {
		// Decoded even when empty: a batch is never copied unchecked.
		// The header's record count is only a hint for the capacity: a
		// corrupt segment can claim billions (FuzzFilterSegment).
		kept = p.kept[:0]
		if cap(kept) == 0 {
			kept = make([]recordbatch.Record, 0, max(1, min(total, 1024)))
		}
		err := recordbatch.ForEachRecordScratch(b, &p.scratch, p.opts.MaxDecompressedBytes, func(r recordbatch.Record) error {
			off := base + int64(r.OffsetDelta)
			keep := true
			switch {
			case off > latest, h.Control():
			case r.Key == nil:
				p.stats.InvalidMessages++
				keep = false
			default:
				retainDelete := !h.HasDeleteHorizon() || p.now < h.BaseTimestamp()
				keep = !p.offsetMap.superseded(r.Key, off) && (r.Value != nil || retainDelete)
			}
			if keep {
				if r.Value == nil && !h.Control() {
					tombstones = true
				}
				kept = append(kept, r)
			}
			return nil
		})
		p.kept = kept[:0] // reused by the next batch, once this one is built
		if err != nil {
			return nil, err
		}
	}
	p.stats.MessagesKept += int64(len(kept))
	needHorizon := (tombstones || markerForEmptyTxn) && !h.HasDeleteHorizon()
	if len(kept) == total && total > 0 && !needHorizon {
		return append(out, b...), nil
	}
	if len(kept) == 0 {
		if !retainEmpty {
			return out, nil
		}
		if total > 0 {
			p.stats.EmptyBatches++
		}
		// Rebuilt even when already empty: the same 61 bytes for a batch
		// this cleaner wrote, and never a payload copied unchecked.
		return appendEmptyHeader(out, h)
	}
	p.stats.BatchesRebuilt++
	spec := h.Spec()
	// Each record's timestamp as readers see it: base + delta, or for
	// LogAppendTime the batch's maxTimestamp (Kafka rebuilds such batches
	// with every record at that time).
	oldBase := h.BaseTimestamp()
	tsOf := func(r *recordbatch.Record) int64 {
		if h.LogAppendTime() {
			return h.MaxTimestamp()
		}
		return oldBase + r.TimestampDelta
	}
	newBase := tsOf(&kept[0])
	if needHorizon {
		spec.DeleteHorizon = true
		newBase = p.now + p.cfg.DeleteRetentionMs
	} else if h.HasDeleteHorizon() {
		newBase = oldBase // a horizon, once stamped, never moves
	}
	maxTs := int64(math.MinInt64)
	for i := range kept {
		ts := tsOf(&kept[i])
		maxTs = max(maxTs, ts)
		kept[i].TimestampDelta = ts - newBase
	}
	spec.BaseTimestamp = newBase
	if h.LogAppendTime() {
		maxTs = h.MaxTimestamp()
	}
	return appendRebuilt(out, &p.raw, spec, kept, maxTs)
}

// appendEmptyHeader appends the header-only copy of h Kafka writes for a
// batch kept only for its offsets and producer fields
// (DefaultRecordBatch.writeEmptyHeader): no records, codec none, no
// horizon, baseTimestamp -1, the original maxTimestamp and lastOffsetDelta.
func appendEmptyHeader(out []byte, h recordbatch.Header) ([]byte, error) {
	var raw []byte // unused: no records, no codec
	spec := h.Spec()
	spec.Codec = recordbatch.None
	spec.DeleteHorizon = false
	spec.BaseTimestamp = -1
	return appendRebuilt(out, &raw, spec, nil, h.MaxTimestamp())
}
