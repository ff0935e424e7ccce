package cleaner

import (
	"fmt"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// segmentReader walks the whole batches of one segment, reading it in
// chunks through the log's ReadSegment. A batch whose framing is broken is
// an error, never the end of the data (jocko treats any scan error as the
// end, and so loses the rest of the segment).
type segmentReader struct {
	log      Log
	base     int64
	size     int64 // bytes of the segment to read
	buf      []byte
	bufStart int64 // segment position of buf[0]
	pos      int64 // position of the next batch
	throttle *throttler
	read     *int64 // bytes read, for the stats
	// abort, if set, is asked after each chunk (Kafka's checkDone per
	// read buffer), so a pass over big segments stops soon when its log
	// is paused, deleted or no longer compacted.
	abort func() bool
	// headers makes next return only each batch's 61-byte header (after
	// a big batch reading only that), so a scan of the batch headers
	// does not read big batches' records; whole returns the current
	// batch when it is needed.
	headers bool
	// verify makes next check each batch's CRC. Callers that clear it
	// check every batch themselves (recordbatch's record walk does).
	verify    bool
	cur, curN int64 // position and size of the batch next returned
}

// readChunk is how much the reader asks for at once; headerChunk when
// it reads only batch headers.
const (
	readChunk   = 1 << 20
	headerChunk = 4 << 10
	bigBatch    = 64 << 10
)

// maxBatchBytes bounds one batch: no segment batch can exceed a segment,
// and Kafka's batch length is an int32.
const maxBatchBytes = 1 << 30

func newSegmentReader(l Log, base, size int64, buf []byte, t *throttler, read *int64) *segmentReader {
	return &segmentReader{log: l, base: base, size: size, buf: buf[:0], throttle: t, read: read, verify: true}
}

// next returns the next batch (valid until the following call) and its
// position, or nil at the end of the segment.
func (r *segmentReader) next() ([]byte, int64, error) {
	if r.pos >= r.size {
		return nil, 0, nil
	}
	if r.size-r.pos < recordbatch.LogOverhead {
		return nil, 0, fmt.Errorf("cleaner: segment %d: %d stray bytes at position %d", r.base, r.size-r.pos, r.pos)
	}
	hdr, err := r.window(r.pos, recordbatch.LogOverhead)
	if err != nil {
		return nil, 0, err
	}
	n := int64(recordbatch.Header(hdr).BatchLength()) + recordbatch.LogOverhead
	if n < recordbatch.HeaderSize || n > maxBatchBytes || r.pos+n > r.size {
		return nil, 0, fmt.Errorf("cleaner: segment %d: bad batch length %d at position %d of %d", r.base, n, r.pos, r.size)
	}
	r.cur, r.curN = r.pos, n
	want := n
	if r.headers {
		want = recordbatch.HeaderSize
	}
	b, err := r.window(r.pos, want)
	if err != nil {
		return nil, 0, err
	}
	h, err := recordbatch.ParseHeader(b)
	if err == nil && r.verify && !r.headers {
		// Checked at append and by recovery, but the cleaner rewrites what
		// it reads: a bad batch must stop it, not be copied into a new
		// segment with a fresh CRC.
		err = h.CheckCRC()
	}
	if err == nil && h.RecordCount() < 0 {
		err = fmt.Errorf("record count %d", h.RecordCount())
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cleaner: segment %d position %d: %w", r.base, r.pos, err)
	}
	pos := r.pos
	r.pos += n
	return b, pos, nil
}

// whole returns the whole batch next last returned (its header only, in
// headers mode), CRC checked.
func (r *segmentReader) whole() ([]byte, error) {
	b, err := r.window(r.cur, r.curN)
	if err != nil {
		return nil, err
	}
	if err := recordbatch.Header(b).CheckCRC(); err != nil {
		return nil, fmt.Errorf("cleaner: segment %d position %d: %w", r.base, r.cur, err)
	}
	return b, nil
}

// window returns n bytes at pos, refilling the buffer from pos when they
// are not all in it.
func (r *segmentReader) window(pos, n int64) ([]byte, error) {
	if pos >= r.bufStart && pos+n <= r.bufStart+int64(len(r.buf)) {
		off := pos - r.bufStart
		return r.buf[off : off+n], nil
	}
	chunk := int64(readChunk)
	if r.headers && r.curN >= bigBatch {
		// After a big batch, read just the next header: reading the
		// records too would copy bytes nobody looks at. Small batches
		// are read in whole chunks, one call (and no allocation in
		// the log's read path) per chunk rather than per batch.
		chunk = headerChunk
	}
	want := min(max(n, chunk), r.size-pos)
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	got := 0
	for int64(got) < want {
		k, err := r.log.ReadSegment(r.base, r.buf[got:], pos+int64(got))
		got += k
		if err != nil {
			return nil, err
		}
		if k == 0 {
			return nil, fmt.Errorf("cleaner: segment %d: short read at %d", r.base, pos+int64(got))
		}
	}
	r.bufStart = pos
	if r.read != nil {
		*r.read += want
	}
	if r.throttle != nil {
		r.throttle.wait(want)
	}
	if r.abort != nil && r.abort() {
		return nil, errAborted
	}
	return r.buf[:n], nil
}
