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
// reads the codec's output through a window of streamWindow bytes and
// parses records as they arrive: the whole inflated batch is never held
// (only a record larger than the window grows it, within the bound), the
// window stays in cache, and the memory bound is enforced by counting
// bytes. Snappy's raw block has no stream form and is inflated whole into
// a pooled buffer, as is any batch whose caller keeps the records
// (ValidateOptions.Keep).
//
// The stream gives exactly the errors of inflating the whole batch first:
// on a record error the rest of the stream is read, and a codec error or
// the bound (which the whole-batch order would have met first) wins.

// streamWindow is the window's size: a zstd block is at most 128 KiB and
// lz4 blocks of Kafka's producers 64 KiB, so one read rarely splits one.
const streamWindow = 128 << 10

var windowPool = sync.Pool{New: func() any { b := make([]byte, streamWindow); return &b }}

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
// from the codec's pool, and the function that gives it back. Like
// decompress, a zstd frame declaring more than limit bytes is refused
// before anything is decoded.
func openStream(c Codec, src []byte, limit int) (io.Reader, func(), error) {
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
		lr := lz4Readers.Get().(*lz4Reader)
		lr.br.Reset(src)
		lr.r.Reset(&lr.br)
		return lr.r, func() { lr.br.Reset(nil); lz4Readers.Put(lr) }, nil
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

// recordStream feeds a recordWalker from an inflating reader through a
// window: win[start:end] holds inflated bytes not yet parsed.
type recordStream struct {
	r          io.Reader
	win        []byte
	start, end int
	total      int // bytes read from r so far
	limit      int
	eof        bool
	stalls     int // reads in a row that returned nothing
}

// maxStalls bounds the empty reads fill accepts in a row from a reader
// that neither makes progress nor fails (none of ours does).
const maxStalls = 100

// fill reads more of the stream into the window, making room for at
// least need unparsed bytes first (moving them to the front, growing the
// window if it is smaller than need). At EOF it sets eof.
func (s *recordStream) fill(need int) error {
	if s.start > 0 && len(s.win)-s.start < need {
		s.end = copy(s.win, s.win[s.start:s.end])
		s.start = 0
	}
	if need > len(s.win) {
		// need is within the bound (next checks); doubling stops there.
		grown := make([]byte, max(need, min(2*len(s.win), s.limit)))
		s.end = copy(grown, s.win[s.start:s.end])
		s.start = 0
		s.win = grown
	}
	n, err := s.r.Read(s.win[s.end:])
	s.end += n
	s.total += n
	if n == 0 && err == nil {
		if s.stalls++; s.stalls > maxStalls {
			return fmt.Errorf("%w: the decompressor makes no progress", ErrCorruptCompressed)
		}
	} else {
		s.stalls = 0
	}
	if s.total > s.limit {
		return fmt.Errorf("%w: limit %d", ErrTooLarge, s.limit)
	}
	if err == io.EOF {
		s.eof = true
		return nil
	}
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrCorruptCompressed, err)
	}
	return nil
}

// drain reads the rest of the stream, counting it, and returns the codec
// error or ErrTooLarge it meets. The unparsed bytes are dropped.
func (s *recordStream) drain() error {
	for !s.eof {
		s.start, s.end = 0, 0
		if err := s.fill(1); err != nil {
			return err
		}
	}
	return nil
}

// next returns the next whole record's bytes (or, at the end of the
// stream, whatever is left, for parseRecord to reject), reading more as
// needed. A record claiming more than the bound allows is reported as
// truncated once the stream ends within the bound, as parsing the whole
// inflated batch would.
func (s *recordStream) next() ([]byte, error) {
	for {
		avail := s.win[s.start:s.end]
		size, n := readVarint(avail)
		if n < 0 || s.eof {
			return avail, nil
		}
		if n > 0 {
			need := n + int(max(size, 0))
			if need <= len(avail) {
				return avail, nil
			}
			if int64(s.total-len(avail))+int64(need) > int64(s.limit) {
				// Cannot be whole within the bound: either the stream
				// passes the bound, or it ends short of the record.
				parsed := s.total - len(avail)
				if err := s.drain(); err != nil {
					return nil, err
				}
				return nil, recordLengthError(size, s.total-parsed-n)
			}
			if err := s.fill(need); err != nil {
				return nil, err
			}
			continue
		}
		if err := s.fill(maxVarintLen); err != nil {
			return nil, err
		}
	}
}

// maxVarintLen is the longest varint.
const maxVarintLen = 5

// nextStream is recordWalker.next over a stream: it parses the next
// record into r, false at the end. Errors are those of the whole-batch
// walk (see the type's doc).
func (w *recordWalker) nextStream(s *recordStream, r *Record) (bool, error) {
	if w.i == w.count {
		// Whatever follows the last record is left over.
		parsed := s.total - (s.end - s.start)
		if err := s.drain(); err != nil {
			return false, err
		}
		w.data, w.p = nil, 0
		return w.finish(s.total - parsed)
	}
	b, err := s.next()
	if err != nil {
		if errors.Is(err, ErrCorruptRecords) {
			err = fmt.Errorf("record %d: %w", w.i, err)
		}
		return false, err
	}
	n, err := parseRecord(b, r, w.keepHeaders)
	if err != nil {
		err = fmt.Errorf("record %d: %w", w.i, err)
	} else {
		s.start += n
		err = w.accept(r)
	}
	if err != nil {
		if derr := s.drain(); derr != nil {
			return false, derr
		}
		return false, err
	}
	return true, nil
}
