package partition

import (
	"sort"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// maxDecompressed bounds the memory a timestamp lookup may spend inflating
// one compressed batch.
const maxDecompressed = 256 << 20

// segTimes is a segment with its largest timestamp, copied under Log.mu.
type segTimes struct {
	seg      *segment
	limit    int64 // bytes of the segment below the high watermark
	maxTs    int64
	offMaxTs int64
}

// timeSnapshot copies the segments below the high watermark with their
// largest timestamps.
func (l *Log) timeSnapshot() []segTimes {
	l.loadListed()
	l.mu.Lock()
	defer l.mu.Unlock()
	hw := l.hw.Load()
	segs := *l.segs.Load()
	out := make([]segTimes, 0, len(segs))
	for _, s := range segs {
		if s.base > hw.segBase {
			break
		}
		limit := s.size.Load()
		if s.base == hw.segBase {
			// min: the cleaner may have swapped in a smaller segment
			// with this base while the high watermark still names a
			// position in the old one (all of it below the HW).
			limit = min(hw.pos, limit)
		}
		maxTs, off := s.times.get()
		out = append(out, segTimes{s, limit, maxTs, off})
	}
	return out
}

// OffsetForTimestamp finds the first record with timestamp >= ts at or
// after the log start offset and below the high watermark (ListOffsets
// with a timestamp), as Kafka's fetchOffsetByTimestamp does: the first
// segment whose largest timestamp is >= ts, the time index to skip what is
// certainly older, then the batches and their records.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, found bool, err error) {
	if l.gone.Load() {
		return -1, -1, false, l.goneErr()
	}
	logStart := l.logStart.Load()
	for _, st := range l.timeSnapshot() {
		if st.maxTs < ts {
			continue
		}
		o, t, ok, err := offsetForTimestampIn(st, ts, logStart)
		if err != nil {
			return -1, -1, false, l.readErr(err)
		}
		if ok {
			return o, t, true, nil
		}
	}
	return -1, -1, false, nil
}

// offsetForTimestampIn is OffsetForTimestamp within one segment, with its
// files open.
func offsetForTimestampIn(st segTimes, ts, logStart int64) (offset, timestamp int64, found bool, err error) {
	seg := st.seg
	release, err := seg.use()
	if err != nil {
		return -1, -1, false, err
	}
	defer release()
	pos := int64(0)
	// Entries below ts cover only records older than ts.
	if e, ok, err := seg.timeIdx.floor(ts-1, seg.base); err != nil {
		return -1, -1, false, err
	} else if ok {
		if p, ok, err := seg.offIdx.floor(max(e.val, logStart), seg.base); err != nil {
			return -1, -1, false, err
		} else if ok {
			pos = p.val
		}
	}
	for pos < st.limit {
		b, h, err := readBatchAt(seg, pos, st.limit, false)
		if err != nil {
			return -1, -1, false, err
		}
		if h.MaxTimestamp() >= ts && h.LastOffset() >= logStart {
			if b, _, err = readBatchAt(seg, pos, st.limit, true); err != nil {
				return -1, -1, false, err
			}
			o, t, ok, err := firstRecordAtOrAfter(b, ts, logStart)
			if err != nil || ok {
				return o, t, ok, err
			}
		}
		pos += int64(h.Size())
	}
	return -1, -1, false, nil
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the first record carrying it; found is false for an empty log.
func (l *Log) MaxTimestamp() (timestamp, offset int64, found bool, err error) {
	if l.gone.Load() {
		return -1, -1, false, l.goneErr()
	}
	snap := l.timeSnapshot()
	best := -1
	for i, st := range snap {
		if st.maxTs >= 0 && (best < 0 || st.maxTs > snap[best].maxTs) {
			best = i
		}
	}
	if best < 0 {
		return -1, -1, false, nil
	}
	st := snap[best]
	seg := st.seg
	release, err := seg.use()
	if err != nil {
		return -1, -1, false, l.readErr(err)
	}
	defer release()
	pos := int64(0)
	if e, ok, err := seg.offIdx.floor(st.offMaxTs, seg.base); err != nil {
		return -1, -1, false, l.readErr(err)
	} else if ok {
		pos = e.val
	}
	found2, _, err := scanTo(seg, st.offMaxTs, pos, st.limit)
	if err != nil {
		return -1, -1, false, l.readErr(err)
	}
	if found2 < 0 {
		return st.maxTs, st.offMaxTs, true, nil
	}
	b, _, err := readBatchAt(seg, found2, st.limit, true)
	if err != nil {
		return -1, -1, false, l.readErr(err)
	}
	o, t, ok, err := firstRecordAtOrAfter(b, st.maxTs, l.logStart.Load())
	if err != nil {
		return -1, -1, false, l.readErr(err)
	}
	if !ok || t != st.maxTs {
		return st.maxTs, st.offMaxTs, true, nil
	}
	return t, o, true, nil
}

// readBatchAt reads the batch at pos: only its header unless whole.
func readBatchAt(seg *segment, pos, limit int64, whole bool) ([]byte, recordbatch.Header, error) {
	n := min(int64(recordbatch.HeaderSize), limit-pos)
	hb := make([]byte, n)
	if _, err := seg.log.ReadAt(hb, pos); err != nil {
		return nil, nil, err
	}
	h, err := recordbatch.ParseHeader(hb)
	if err != nil || pos+int64(h.Size()) > limit {
		return nil, nil, errCorruptSegment(seg, pos)
	}
	if !whole {
		return hb, h, nil
	}
	b := make([]byte, h.Size())
	if _, err := seg.log.ReadAt(b, pos); err != nil {
		return nil, nil, err
	}
	return b, recordbatch.Header(b), nil
}

// firstRecordAtOrAfter finds the first record of batch b with timestamp
// >= ts and offset >= minOffset. In a LogAppendTime batch every record
// carries the batch's max timestamp.
func firstRecordAtOrAfter(b []byte, ts, minOffset int64) (offset, timestamp int64, ok bool, err error) {
	h := recordbatch.Header(b)
	recs, err := recordbatch.Records(b, maxDecompressed)
	if err != nil {
		return 0, 0, false, err
	}
	i := sort.Search(len(recs), func(i int) bool { return h.BaseOffset()+int64(recs[i].OffsetDelta) >= minOffset })
	for _, r := range recs[i:] {
		t := h.BaseTimestamp() + r.TimestampDelta
		if h.LogAppendTime() {
			t = h.MaxTimestamp()
		}
		if t >= ts {
			return h.BaseOffset() + int64(r.OffsetDelta), t, true, nil
		}
	}
	return 0, 0, false, nil
}
