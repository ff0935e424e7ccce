package recordbatch

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Streaming validation of a compressed batch. Validate does not need the
// inflated records once it has looked at them, so for gzip, lz4 and zstd it
// has the codec write its output, block by block, to a recordSink that
// parses records where they lie: the whole inflated batch is never held
// (only a record split between blocks is copied, into a carry buffer that
// grows within the bound), nothing is copied out of the codec's buffers,
// and the memory bound is enforced by counting bytes. Snappy's raw block has no stream form and is inflated whole into
// a pooled buffer, as is any batch whose caller keeps the records
// (ValidateOptions.Keep).
//
// The stream gives exactly the errors of inflating the whole batch first:
// on a record error the rest of the stream is read, and a codec error or
// the bound (which the whole-batch order would have met first) wins.

// carryPool holds the sinks' carry buffers; ones grown past maxCarry by a
// large record are left to the GC.
var carryPool sync.Pool // *[]byte

const maxCarry = 1 << 20

// zstdStreamDecoder returns a pooled stream decoder; creating one costs
// far more than a batch's worth of decoding.
func zstdStreamDecoder() (*zstdStream, error) {
	if zd, _ := zstdStreamDecoders.Get().(*zstdStream); zd != nil {
		return zd, nil
	}
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecodeAllCapLimit(true), // also stops Reset decoding a bytes.Reader whole
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow))
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrCorruptCompressed, err)
	}
	return &zstdStream{d: d}, nil
}

// openStream returns a reader of src inflated with c (gzip, lz4 or zstd)
// from the codec's pool, which writes its output with WriteTo, and the
// function that gives it back. Like
// decompress, a zstd frame declaring more than limit bytes is refused
// before anything is decoded.
func openStream(c Codec, src []byte, limit int) (io.WriterTo, func(), error) {
	if len(src) == 0 {
		return nil, nil, fmt.Errorf("%w: empty %v data", ErrCorruptCompressed, c)
	}
	switch c {
	case Gzip:
		gr, _ := gzipReaders.Get().(*gzipReader)
		if gr == nil {
			gr = new(gzipReader)
		}
		gr.br.Reset(src)
		if err := gr.r.Reset(&gr.br); err != nil {
			gzipReaders.Put(gr)
			return nil, nil, fmt.Errorf("%w: gzip: %v", ErrCorruptCompressed, err)
		}
		return &gr.r, func() { gr.br.Reset(nil); gzipReaders.Put(gr) }, nil
	case LZ4:
		ls, err := openLZ4Stream(src)
		if err != nil {
			return nil, nil, err
		}
		return ls, ls.release, nil
	case Zstd:
		var h zstd.Header
		if h.Decode(src) == nil && h.HasFCS && h.FrameContentSize > uint64(limit) {
			return nil, nil, fmt.Errorf("%w: frame of %d bytes, limit %d", ErrTooLarge, h.FrameContentSize, limit)
		}
		zd, err := zstdStreamDecoder()
		if err != nil {
			return nil, nil, err
		}
		zd.br.Reset(src)
		if err := zd.d.Reset(&zd.br); err != nil {
			zd.br.Reset(nil)
			zstdStreamDecoders.Put(zd)
			return nil, nil, fmt.Errorf("%w: zstd: %v", ErrCorruptCompressed, err)
		}
		return zd.d, func() { zd.br.Reset(nil); zstdStreamDecoders.Put(zd) }, nil
	}
	return nil, nil, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

// recordSink walks records as the codec writes its output to it (the
// codecs' io.WriterTo): whole records are parsed where they lie in the
// codec's own buffer, without a copy; only a record split between two
// writes is assembled in carry. After a record error the rest of the
// output is still taken and counted, so that a codec error or the bound,
// which inflating the whole batch first would have met, wins.
type recordSink struct {
	w        recordWalker
	acc      summarizer // accumulates into sum
	sum      Summary
	carry    []byte // the start of a record the next write completes
	total    int    // bytes written so far
	limit    int
	leftover int   // bytes after the last record
	err      error // the first record error
	done     bool  // every record parsed
}

// wholeRecord reports whether b starts with a whole record, or with
// something parseRecord rejects whatever follows.
func wholeRecord(b []byte) bool {
	size, n := readVarint(b)
	return n < 0 || n > 0 && n+int(max(size, 0)) <= len(b)
}

// Write takes the next piece of the inflated records.
func (k *recordSink) Write(p []byte) (int, error) {
	n := len(p)
	if k.total += n; k.total > k.limit {
		return 0, fmt.Errorf("%w: limit %d", ErrTooLarge, k.limit)
	}
	for len(p) > 0 && k.err == nil {
		switch {
		case k.done:
			k.leftover += len(p)
			p = nil
		case len(k.carry) > 0:
			// Complete the carried record: its length varint first, then
			// the bytes it announces.
			take := maxVarintLen - len(k.carry)
			if size, vn := readVarint(k.carry); vn > 0 {
				take = vn + int(max(size, 0)) - len(k.carry)
			}
			take = max(1, min(take, len(p)))
			k.carry = append(k.carry, p[:take]...)
			p = p[take:]
			if wholeRecord(k.carry) {
				// The carry holds exactly one record: parse takes it all.
				k.parse(k.carry)
				k.carry = k.carry[:0]
			}
		case wholeRecord(p):
			p = p[k.parse(p):]
		default:
			k.carry = append(k.carry, p...)
			p = nil
		}
	}
	return n, nil
}

// parse parses the record at the start of b, checks and counts it, and
// returns its size; on an error it records it and returns len(b).
func (k *recordSink) parse(b []byte) int {
	var r Record
	n, err := parseRecord(b, &r, false)
	if err != nil {
		k.err = fmt.Errorf("record %d: %w", k.w.i, err)
		return len(b)
	}
	if err := k.w.accept(&r); err != nil {
		k.err = err
		return len(b)
	}
	k.acc.add(&r)
	k.done = k.w.i == k.w.count
	return n
}

// run inflates r into the sink and returns the walk's error, with the
// whole-batch walk's precedence: codec error or bound, then records.
func (k *recordSink) run(r io.WriterTo) error {
	if k.w.count == 0 {
		k.done = true
	}
	if _, err := r.WriteTo(k); err != nil {
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrCorruptCompressed) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrCorruptCompressed, err)
	}
	// At the end of the output a started record, or a missing one, fails
	// as parsing what is left would.
	for k.err == nil && !k.done {
		k.carry = k.carry[k.parse(k.carry):]
	}
	k.carry = k.carry[:0]
	if k.err != nil {
		return k.err
	}
	_, err := k.w.finish(k.leftover)
	return err
}

// maxVarintLen is the longest varint.
const maxVarintLen = 5

// validateStream is Validate's walk of a gzip, lz4 or zstd batch's
// records (data, compressed) through a recordSink, from the summary s
// has so far. It is a function of its own, taking and returning s by
// value, so that Validate's uncompressed path keeps its state on the
// stack; here the sink holds everything, one allocation.
func validateStream(h Header, data []byte, opts ValidateOptions, s Summary) (Summary, error) {
	r, release, err := openStream(s.Codec, data, opts.MaxDecompressed)
	if err != nil {
		return Summary{}, err
	}
	defer release()
	k := &recordSink{w: walkerFor(h, opts.Origin, false), sum: s, limit: opts.MaxDecompressed}
	k.acc = newSummarizer(h, &k.sum)
	carry, _ := carryPool.Get().(*[]byte)
	if carry == nil {
		carry = new([]byte)
	}
	k.carry = (*carry)[:0]
	err = k.run(r)
	if cap(k.carry) <= maxCarry {
		*carry = k.carry[:0]
	}
	carryPool.Put(carry)
	if err != nil {
		return Summary{}, err
	}
	k.sum.RecordBytes = k.total
	k.sum.Records = int(h.RecordCount())
	return k.sum, nil
}
