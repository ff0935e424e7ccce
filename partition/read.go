package partition

import (
	"sort"
	"sync"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// batchPrefix is the part of a batch header a scan needs: baseOffset,
// batchLength and lastOffsetDelta.
const batchPrefix = recordbatch.PrefixSize

// maxReadBytes caps what one Read returns (beyond a first batch larger
// than that with minOne), whatever maxBytes the client asked for, like the
// broker's fetch.max.bytes (55 MiB by default), so a fetch cannot make the
// broker allocate without bound.
const maxReadBytes = 64 << 20

// scanBufSize is how much a header scan reads at a time; the scan starts at
// an offset index entry, so it usually covers index.interval.bytes or less.
const scanBufSize = 16 << 10

// Read returns whole batches from the one containing offset, up to
// maxBytes (but at least one batch when minOne), never past the high
// watermark (ReadUncommitted). ErrOffsetOutOfRange if offset is outside
// [logStart, LEO]; Records may be empty (offset >= HW, or nothing fits
// without minOne). The batches come from one segment, in one ReadAt into
// a fresh buffer that the caller owns.
func (l *Log) Read(offset int64, maxBytes int32, minOne bool) (ReadResult, error) {
	return l.readWith(offset, maxBytes, minOne, ReadUncommitted, nil)
}

// ReadWith is Read at isolation iso into a buffer from alloc, which must
// return a slice of len n (its contents are overwritten; nil alloc: make).
// Records is a prefix of that buffer, so a caller recycling buffers (a
// fetch writing the bytes to a socket) skips allocating and zeroing one
// per read; alloc is called at most once, and a buffer it returned may be
// recycled even when ReadWith fails. ReadCommitted reads as
// ReadUncommitted, then cuts the batches at the last stable offset
// (committedPrefix) and lists the aborted transactions of what is left.
// What it returns is told to Config.Observer as read (Fetch's bytes out).
func (l *Log) ReadWith(offset int64, maxBytes int32, minOne bool, iso Isolation, alloc func(n int) []byte) (ReadResult, error) {
	res, err := l.readWith(offset, maxBytes, minOne, iso, alloc)
	if o := l.store.cfg.Observer; o != nil && len(res.Records) > 0 {
		o.Read(l.topic, len(res.Records))
	}
	return res, err
}

// readWith is ReadWith without the observer.
func (l *Log) readWith(offset int64, maxBytes int32, minOne bool, iso Isolation, alloc func(n int) []byte) (ReadResult, error) {
	res, err := l.readUncommitted(offset, maxBytes, minOne, alloc)
	if err != nil || iso != ReadCommitted {
		return res, err
	}
	res.Records = committedPrefix(res.Records, res.LastStableOffset)
	if len(res.Records) > 0 {
		res.AbortedTransactions = l.AbortedTransactions(offset, endOffsetOf(res.Records))
	}
	return res, nil
}

// readUncommitted is ReadWith for ReadUncommitted.
func (l *Log) readUncommitted(offset int64, maxBytes int32, minOne bool, alloc func(n int) []byte) (ReadResult, error) {
	if l.gone.Load() {
		return ReadResult{}, l.goneErr()
	}
	if err := l.store.Offline(); err != nil {
		return ReadResult{}, err
	}
	hw := l.hw.Load()
	segs := *l.segs.Load()
	start := l.logStart.Load()
	res := ReadResult{Offsets: Offsets{
		LogStartOffset:   start,
		HighWatermark:    hw.offset,
		LastStableOffset: l.lastStable(hw.offset, start),
		LogEndOffset:     l.leo.Load(),
	}}
	// As in Kafka, an offset between the high watermark and the log end
	// offset (written, not yet durable) reads as empty, not out of range.
	if offset < res.LogStartOffset || offset > max(res.LogEndOffset, hw.offset) {
		return res, ErrOffsetOutOfRange
	}
	if offset >= hw.offset {
		return res, nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	for ; i < len(segs); i++ {
		seg := segs[i]
		if seg.base > hw.segBase {
			break
		}
		limit := seg.size.Load()
		if seg.base == hw.segBase {
			// min: the cleaner may have swapped in a smaller segment
			// with this base while the high watermark still names a
			// position in the old one (all of it below the HW).
			limit = min(hw.pos, limit)
		}
		b, found, err := l.readSegment(seg, offset, limit, maxBytes, minOne, alloc)
		if err != nil {
			return res, l.readErr(err)
		}
		if !found {
			continue // offset is in a gap past this segment's batches
		}
		res.Records = b
		return res, nil
	}
	return res, nil
}

// readSegment reads from seg the batches from the one holding offset, with
// the segment's files open for the read; found is false if offset is past
// the segment's batches below limit.
func (l *Log) readSegment(seg *segment, offset, limit int64, maxBytes int32, minOne bool, alloc func(n int) []byte) (b []byte, found bool, err error) {
	release, err := seg.use()
	if err != nil {
		return nil, false, err
	}
	defer release()
	pos, err := l.startPosition(seg, offset)
	if err != nil {
		return nil, false, err
	}
	at, first, err := scanTo(seg, offset, pos, limit)
	if err != nil || at < 0 {
		return nil, false, err
	}
	b, err = readBatches(seg, at, first, limit, maxBytes, minOne, alloc)
	return b, err == nil, err
}

// startPosition is where to start scanning for offset: the batch of the
// largest offset index entry at or below it.
func (l *Log) startPosition(seg *segment, offset int64) (int64, error) {
	e, ok, err := seg.offIdx.floor(offset, seg.base)
	if err != nil || !ok {
		return 0, err
	}
	return e.val, nil
}

// scanBufs recycles header-scan buffers: every Read scans.
var scanBufs = sync.Pool{New: func() any { b := make([]byte, scanBufSize); return &b }}

// scanTo walks batch headers from pos to the first batch whose last offset
// is >= offset, returning its position and size, or -1 if none before
// limit.
func scanTo(seg *segment, offset, pos, limit int64) (found int64, size int64, err error) {
	var backing, buf []byte
	var bufPos int64
	defer func() {
		if backing != nil {
			scanBufs.Put(&backing)
		}
	}()
	for pos+batchPrefix <= limit {
		if pos+batchPrefix > bufPos+int64(len(buf)) {
			n := min(int64(scanBufSize), limit-pos)
			if backing == nil {
				backing = *scanBufs.Get().(*[]byte)
			}
			buf, bufPos = backing[:n], pos
			if _, err := seg.log.ReadAt(buf, pos); err != nil {
				return -1, 0, err
			}
		}
		h := recordbatch.Header(buf[pos-bufPos:])
		sz := int64(h.Size())
		if sz < recordbatch.HeaderSize || pos+sz > limit {
			return -1, 0, errCorruptSegment(seg, pos)
		}
		if h.LastOffset() >= offset {
			return pos, sz, nil
		}
		pos += sz
	}
	return -1, 0, nil
}

// readBatches reads the whole batches from pos (the first is firstSize
// bytes) that fit in maxBytes, or just the first if none fits and minOne.
func readBatches(seg *segment, pos, firstSize, limit int64, maxBytes int32, minOne bool, alloc func(int) []byte) ([]byte, error) {
	want := min(limit-pos, int64(max(maxBytes, 0)), maxReadBytes)
	if want < firstSize {
		if !minOne {
			return nil, nil
		}
		want = firstSize
	}
	var buf []byte
	if alloc != nil {
		buf = alloc(int(want))[:want]
	} else {
		buf = make([]byte, want)
	}
	if _, err := seg.log.ReadAt(buf, pos); err != nil {
		return nil, err
	}
	// Cut at the last whole batch.
	n := int64(0)
	for n+recordbatch.LogOverhead <= want {
		sz := int64(recordbatch.Header(buf[n:]).Size())
		if sz < recordbatch.HeaderSize || n+sz > want {
			break
		}
		n += sz
	}
	if n == 0 {
		return nil, errCorruptSegment(seg, pos)
	}
	return buf[:n], nil
}

// committedPrefix cuts records before the first batch whose last offset is
// at or past lso (the read_committed bound). The LSO is usually a batch
// boundary, but DeleteRecords can move the log start offset (and so the
// LSO) into the middle of an open transaction's batch; that batch is not
// returned, as Kafka returns nothing from the LSO's batch on. Only batch
// headers are looked at, and records need not be whole: a partial trailing
// batch below lso stays.
func committedPrefix(records []byte, lso int64) []byte {
	pos := 0
	for len(records)-pos >= recordbatch.LogOverhead {
		h := recordbatch.Header(records[pos:])
		base := h.BaseOffset()
		last := base
		if len(records)-pos >= recordbatch.PrefixSize {
			last = h.LastOffset()
		}
		if base >= lso || last >= lso {
			return records[:pos]
		}
		n := int(h.BatchLength())
		if n < 0 || n > len(records)-pos-recordbatch.LogOverhead {
			break // a partial trailing batch below the limit stays, as from Kafka
		}
		pos += recordbatch.LogOverhead + n
	}
	return records
}

// endOffsetOf is the offset after the last whole batch of records, -1 if
// there is none (only headers are read).
func endOffsetOf(records []byte) int64 {
	end := int64(-1)
	for pos := 0; len(records)-pos >= recordbatch.PrefixSize; {
		h := recordbatch.Header(records[pos:])
		n := int(h.BatchLength())
		if n < 0 || n > len(records)-pos-recordbatch.LogOverhead {
			break
		}
		end = h.LastOffset() + 1
		pos += recordbatch.LogOverhead + n
	}
	return end
}
