package partition

// Producer-state snapshots, `<20-digit offset>.snapshot`, in Kafka's format
// (ProducerStateManager.writeSnapshot, version 1):
//
//	version int16 (1)  crc uint32 (CRC-32C of everything after it)
//	entries int32 count, then per producer:
//	  producerId int64  epoch int16  lastSequence int32  lastOffset int64
//	  offsetDelta int32  timestamp int64  coordinatorEpoch int32
//	  currentTxnFirstOffset int64 (-1: none)
//
// A snapshot named S holds the state of every batch below offset S. One is
// written at each segment roll (named after the new segment's base
// offset) and at a clean close (the log end offset), so recovery replays
// only the batches after the newest snapshot at or below the recovered
// log end offset. Snapshots go with the segments they sit in.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"path/filepath"
	"sort"

	"github.com/kcompatd/kcompatd/recordbatch"
)

const (
	snapshotSuffix    = ".snapshot"
	snapshotVersion   = 1
	snapshotHeader    = 10 // version, crc, entry count
	snapshotEntrySize = 46
	// maxSnapshotBytes bounds what a snapshot read allocates (about 5.8
	// million producers).
	maxSnapshotBytes = 256 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errCorruptSnapshot = errors.New("partition: corrupt producer-state snapshot")

// encodeSnapshot writes entries in Kafka's snapshot format, by producer id.
func encodeSnapshot(entries []*producerEntry) []byte {
	sorted := append([]*producerEntry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].id < sorted[j].id })
	b := make([]byte, 6, snapshotHeader+len(sorted)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, snapshotVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(sorted)))
	for _, e := range sorted {
		b = binary.BigEndian.AppendUint64(b, uint64(e.id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.lastSeq()))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastDataOffset()))
		b = binary.BigEndian.AppendUint32(b, uint32(e.lastOffsetDelta()))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// decodeSnapshot reads a snapshot file's bytes. Anything but a whole
// version 1 snapshot with a matching CRC is errCorruptSnapshot.
func decodeSnapshot(b []byte) ([]*producerEntry, error) {
	if len(b) < snapshotHeader {
		return nil, fmt.Errorf("%w: %d bytes", errCorruptSnapshot, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != snapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", errCorruptSnapshot, v)
	}
	if want, got := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[6:], castagnoli); want != got {
		return nil, fmt.Errorf("%w: crc %08x, computed %08x", errCorruptSnapshot, want, got)
	}
	n := int64(int32(binary.BigEndian.Uint32(b[6:])))
	if n < 0 || int64(len(b)) != snapshotHeader+n*snapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errCorruptSnapshot, n, len(b))
	}
	out := make([]*producerEntry, 0, n)
	seen := make(map[int64]bool, n)
	for p := b[snapshotHeader:]; len(p) > 0; p = p[snapshotEntrySize:] {
		e := newProducerEntry(int64(binary.BigEndian.Uint64(p)))
		e.epoch = int16(binary.BigEndian.Uint16(p[8:]))
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(p[14:]))
		delta := int32(binary.BigEndian.Uint32(p[22:]))
		e.lastTimestamp = int64(binary.BigEndian.Uint64(p[26:]))
		e.coordinatorEpoch = int32(binary.BigEndian.Uint32(p[34:]))
		e.txnFirstOffset = int64(binary.BigEndian.Uint64(p[38:]))
		if e.id < 0 || seen[e.id] || e.txnFirstOffset < -1 || delta < 0 {
			return nil, fmt.Errorf("%w: bad entry for producer %d", errCorruptSnapshot, e.id)
		}
		seen[e.id] = true
		if e.txnFirstOffset < 0 {
			e.txnFirstOffset = -1
		}
		if lastOffset >= 0 {
			e.batches = []batchMeta{{lastSeq: lastSeq, lastOffset: lastOffset, offsetDelta: delta, timestamp: e.lastTimestamp}}
		}
		out = append(out, e)
	}
	return out, nil
}

func snapshotName(offset int64) string { return segmentFileName(offset, snapshotSuffix) }

// snapshotLocked encodes the current producer state. REQUIRES: mu held.
func (l *Log) snapshotLocked() []byte {
	entries := make([]*producerEntry, 0, len(l.pstate.producers))
	for _, e := range l.pstate.producers {
		entries = append(entries, e)
	}
	return encodeSnapshot(entries)
}

// writeSnapshot writes a snapshot named offset atomically.
func (l *Log) writeSnapshot(offset int64, data []byte) error {
	return writeFileAtomic(l.store.fs, filepath.Join(l.dir, snapshotName(offset)), data)
}

// snapshotOffsets lists the offsets of the partition's snapshot files,
// ascending.
func (l *Log) snapshotOffsets() ([]int64, error) {
	entries, err := l.store.fs.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	return snapshotOffsetsIn(entries), nil
}

// snapshotOffsetsIn is snapshotOffsets of a directory listing.
func snapshotOffsetsIn(entries []fs.DirEntry) []int64 {
	var out []int64
	for _, e := range entries {
		if o, ok := parseSegmentFileName(e.Name(), snapshotSuffix); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// deleteSnapshotsBelow removes the snapshots below offset (the first
// remaining segment's base after segments were deleted), as Kafka removes
// a deleted segment's snapshot with it.
func (l *Log) deleteSnapshotsBelow(offset int64) {
	offs, err := l.snapshotOffsets()
	if err != nil {
		return
	}
	for _, o := range offs {
		if o >= offset {
			break
		}
		if err := l.store.fs.Remove(filepath.Join(l.dir, snapshotName(o))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.logger.Warn().Err(err).Int64("snapshot", o).Msg("cannot remove producer-state snapshot")
		}
	}
}

// loadProducerState rebuilds the producer state at open, once the
// segments are recovered up to leo: from the newest readable snapshot at
// or below leo (corrupt ones are removed and the next older one tried),
// replaying the batches after it. Without any snapshot it replays from the
// log start offset, except after a clean shutdown, where (as Kafka does
// for logs written before snapshots existed) it starts empty at leo.
// Aborted transactions met while replaying are written to the
// .txnindex of their marker's segment.
func (l *Log) loadProducerState(segs []*segment, leo, logStart int64, clean bool) error {
	fsys := l.store.fs
	offs, err := l.snapshotOffsets()
	if err != nil {
		return err
	}
	var kept []int64
	for _, o := range offs {
		if o > leo || o < logStart {
			if err := fsys.Remove(filepath.Join(l.dir, snapshotName(o))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		kept = append(kept, o)
	}
	ps := newProducerState()
	from := int64(-1)
	for i := len(kept) - 1; i >= 0 && from < 0; i-- {
		name := filepath.Join(l.dir, snapshotName(kept[i]))
		data, err := readFile(fsys, name, maxSnapshotBytes)
		var entries []*producerEntry
		if err == nil {
			entries, err = decodeSnapshot(data)
		}
		if err != nil {
			l.logger.Warn().Err(err).Str("file", name).Msg("ignoring unreadable producer-state snapshot")
			if rerr := fsys.Remove(name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				return rerr
			}
			continue
		}
		now := l.store.clock.Now().UnixMilli()
		expiry := l.store.producerExpirationMs()
		for _, e := range entries {
			if e.txnFirstOffset < 0 && now-e.lastTimestamp >= expiry {
				continue
			}
			ps.producers[e.id] = e
			if e.txnFirstOffset >= 0 {
				ps.spans = append(ps.spans, txnSpan{producerID: e.id, first: e.txnFirstOffset, end: math.MaxInt64})
			}
		}
		sort.Slice(ps.spans, func(i, j int) bool { return ps.spans[i].first < ps.spans[j].first })
		from = kept[i]
	}
	switch {
	case from >= 0:
	case clean && len(offs) == 0:
		from = leo
	default:
		from = logStart
	}
	l.pstate = ps
	if from < leo {
		for _, seg := range segs {
			if err := seg.truncateAbortedLocked(max(from, seg.base)); err != nil {
				return err
			}
		}
		if err := l.replayProducers(segs, from, leo); err != nil {
			return err
		}
		// The .txnindex entries replay rebuilt (or cut) must be durable
		// before a snapshot that covers them: after a power cut the
		// snapshot would be trusted and read_committed would show the
		// aborted records. (The snapshot's directory fsync makes a
		// newly created .txnindex's name durable too.)
		for i, seg := range segs {
			if i+1 < len(segs) && segs[i+1].base <= from {
				continue
			}
			if err := seg.syncTxnIndex(); err != nil {
				return err
			}
		}
		if err := l.writeSnapshot(leo, l.snapshotLocked()); err != nil {
			return err
		}
	}
	l.publishTxnView()
	return nil
}

// replayProducers applies the batches in [from, leo) to the producer
// state, reading batch headers (and the records of control batches).
func (l *Log) replayProducers(segs []*segment, from, leo int64) error {
	for i, seg := range segs {
		next := leo
		if i+1 < len(segs) {
			next = segs[i+1].base
		}
		if next <= from {
			continue
		}
		if cached, ok := l.replayCache.batches(seg, from); ok {
			// Recovery just read this segment and kept its producer
			// batches.
			for _, b := range cached {
				if err := l.replayBatch(seg, recordbatch.Header(b), from, leo); err != nil {
					return err
				}
			}
			continue
		}
		if err := seg.withFiles(func() error { return l.replaySegment(seg, from, leo) }); err != nil {
			return err
		}
	}
	return nil
}

// replaySegment is replayProducers over one segment read from its file.
// REQUIRES: the segment's files open (use).
func (l *Log) replaySegment(seg *segment, from, leo int64) error {
	size := seg.size.Load()
	r := chunkReader{f: seg.log, size: size, counter: &l.store.recoveryBytes}
	for pos := int64(0); pos+recordbatch.HeaderSize <= size; {
		hb, err := r.get(pos, recordbatch.HeaderSize)
		if err != nil {
			return err
		}
		h := recordbatch.Header(hb)
		bsz := int64(h.Size())
		if bsz < recordbatch.HeaderSize || pos+bsz > size {
			return errCorruptSegment(seg, pos)
		}
		if h.LastOffset() >= from && h.ProducerID() >= 0 {
			if h.Control() {
				b, err := r.get(pos, bsz)
				if err != nil {
					return err
				}
				h = recordbatch.Header(b)
			}
			if err := l.replayBatch(seg, h, from, leo); err != nil {
				return err
			}
		}
		pos += bsz
	}
	return nil
}

// replayBatch applies one batch of seg (its header, or the whole batch
// for a control batch) to the producer state.
func (l *Log) replayBatch(seg *segment, h recordbatch.Header, from, leo int64) error {
	if h.LastOffset() < from || h.ProducerID() < 0 {
		return nil
	}
	var marker *recordbatch.EndTxnMarker
	if h.Control() {
		marker = controlMarker(h)
	}
	info, err := l.pstate.prepare(h, h.BaseOffset(), marker, false, true, l.tpName)
	if err != nil {
		return err
	}
	done, lso := l.pstate.apply(&info, leo)
	if done != nil && done.aborted {
		e := abortedEntry{producerID: done.producerID, firstOffset: done.firstOffset, lastOffset: done.lastOffset, lastStableOffset: lso}
		return seg.appendAbortedLocked(l.store.fs, e)
	}
	return nil
}
