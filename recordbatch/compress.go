package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codecs. Every decoder writes into a buffer that grows only up to the
// caller's bound, so a small "compression bomb" costs at most about twice
// that bound plus the codec's working memory: gzip's 32 KiB window, one
// lz4 block of at most 4 MiB, and for a zstd frame that does not declare its
// size the window it declares (at most zstdMaxWindow); a zstd frame that
// declares its size decodes straight into an output of exactly that size.
// Encoders and decoders are pooled, as kgo does, because their state is
// large.
//
// Encoding uses the defaults of Kafka's and kgo's producers: gzip level 6,
// raw snappy blocks (kgo's non-streaming form; Java readers accept it),
// lz4 frames at the fast level with 64 KiB blocks (the Java producer's
// block size), zstd at the default level (about zstd's level 3, Kafka's
// default).

// xerialMagic opens snappy data framed by xerial's SnappyOutputStream,
// which the Java producer uses: the magic, int32 version and int32
// minimum compatible version (both 1), then chunks of int32 length plus
// a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// zstdMaxWindow bounds the window a zstd frame may declare, which a stream
// decoder must hold in memory. Clients at zstd's default level 3 use 2 MiB
// windows for streams (4 MiB at most up to level 16, 8 MiB up to 19);
// 32 MiB leaves room for higher levels.
const zstdMaxWindow = 32 << 20

var (
	// zstdAllDecoder serves DecodeAll, which is safe for concurrent use and
	// keeps its own pool of block decoders, one per GOMAXPROCS.
	zstdAllDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecodeAllCapLimit(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			panic(err) // static options
		}
		return d
	})
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithZeroFrames(true))
		if err != nil {
			panic(err) // static options
		}
		return e
	})
	zstdStreamDecoders sync.Pool // *zstdStream
	gzipReaders        sync.Pool // *gzipReader
	gzipWriters        = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return &gzipWriter{w: w}
	}}
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(err) // static options
		}
		return &lz4Writer{w: w}
	}}
)

type gzipReader struct {
	r  gzip.Reader
	br bytes.Reader
}

type zstdStream struct {
	d  *zstd.Decoder
	br bytes.Reader
}

type gzipWriter struct {
	w  *gzip.Writer
	sw sliceWriter
}

type lz4Writer struct {
	w  *lz4.Writer
	sw sliceWriter
}

// sliceWriter appends to a byte slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// Decompress inflates src, compressed with codec c, into a new slice. It
// fails with ErrTooLarge once the output would exceed limit bytes, having
// allocated no more than about max. Snappy accepts a raw block and the
// xerial framing of the Java producer; lz4 is one frame, read as Kafka
// reads it (lz4frame.go: no content checksum, nothing read after the end
// mark); gzip may hold several members. None returns a copy of src (bound applies).
func Decompress(c Codec, src []byte, limit int) ([]byte, error) {
	return decompress(c, nil, src, limit)
}

// decompress is Decompress writing into dst[:0], reusing its capacity.
func decompress(c Codec, dst, src []byte, limit int) ([]byte, error) {
	if limit < 0 {
		limit = 0
	}
	dst = dst[:0]
	switch c {
	case None:
		if len(src) > limit {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), limit)
		}
		return append(dst, src...), nil
	case Gzip, Snappy, LZ4, Zstd:
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
	}
	if len(src) == 0 {
		// Every codec's format has a header; lz4 and zstd readers would
		// otherwise report an empty stream.
		return nil, fmt.Errorf("%w: empty %v data", ErrCorruptCompressed, c)
	}
	switch c {
	case Gzip:
		return gunzip(dst, src, limit)
	case Snappy:
		return unsnappy(dst, src, limit)
	case LZ4:
		return unlz4(dst, src, limit)
	default:
		return unzstd(dst, src, limit)
	}
}

// initialCap guesses an output size for a stream of unknown length: four
// times the input (Kafka batches usually compress 2-5x), within the bound.
func initialCap(srcLen, limit int) int {
	n := srcLen * 4
	if n < 4<<10 {
		n = 4 << 10
	}
	return min(n, limit)
}

// boundedOut is dst[:0] as a decoder's output: its capacity cut to limit,
// and a new buffer of hint bytes if it has less.
func boundedOut(dst []byte, hint, limit int) []byte {
	out := dst[:0]
	if cap(out) > limit {
		out = out[:0:limit]
	}
	if cap(out) < hint {
		out = make([]byte, 0, hint)
	}
	return out
}

// growWithin returns out in a buffer of twice its capacity, at least
// minCap, at most limit.
func growWithin(out []byte, minCap, limit int) []byte {
	grown := make([]byte, len(out), min(limit, max(2*cap(out), minCap)))
	copy(grown, out)
	return grown
}

// readBounded reads r to EOF into dst[:0], growing it up to limit bytes.
func readBounded(dst []byte, r io.Reader, hint, limit int) ([]byte, error) {
	out := boundedOut(dst, hint, limit)
	for {
		if len(out) == cap(out) {
			if len(out) >= limit {
				// At the bound: any further byte is too many.
				var probe [1]byte
				n, err := io.ReadFull(r, probe[:])
				if n > 0 {
					return nil, fmt.Errorf("%w: limit %d", ErrTooLarge, limit)
				}
				if err == io.EOF {
					return out, nil
				}
				return nil, fmt.Errorf("%w: %v", ErrCorruptCompressed, err)
			}
			out = growWithin(out, 4<<10, limit)
		}
		n, err := r.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", ErrCorruptCompressed, err)
		}
	}
}

func gunzip(dst, src []byte, limit int) ([]byte, error) {
	gr, _ := gzipReaders.Get().(*gzipReader)
	if gr == nil {
		gr = new(gzipReader)
	}
	defer gzipReaders.Put(gr)
	gr.br.Reset(src)
	if err := gr.r.Reset(&gr.br); err != nil {
		return nil, fmt.Errorf("%w: gzip: %v", ErrCorruptCompressed, err)
	}
	// The trailer's ISIZE is the size mod 2^32 of the last member: for the
	// usual single member it sizes the output exactly. It is only a hint,
	// capped by limit.
	// Deflate cannot expand more than 1032:1, so a larger claim is a lie
	// meant to make us allocate; it is ignored and the buffer grows only
	// as real output arrives.
	hint := initialCap(len(src), limit)
	if len(src) >= 18 {
		if isize := int(binary.LittleEndian.Uint32(src[len(src)-4:])); isize <= limit && isize <= maxDeflateRatio*len(src) {
			hint = isize
		}
	}
	out, err := readBounded(dst, &gr.r, hint, limit)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Bounds on what a compressed input may claim to decode to, so that a
// declared size (gzip's ISIZE, snappy's preamble, zstd's frame content
// size) sizes an allocation only when the input could really produce it.
const (
	// maxDeflateRatio is deflate's largest possible expansion.
	maxDeflateRatio = 1032
	// zstdTrustedRatio: zstd can expand far more (RLE blocks), so a frame
	// declaring more than this ratio (or 1 MiB) is decoded as a stream
	// whose buffer grows with the real output, not sized up front.
	zstdTrustedRatio = 64
)

// maxSnappyDecoded is the most a snappy block of n bytes can decode to:
// its best element, a 3-byte copy, yields 64 bytes.
func maxSnappyDecoded(n int) int { return 22*n + 64 }

func unsnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:8], xerialMagic) {
		return unxerial(dst, src, limit)
	}
	return appendSnappyBlock(dst[:0], src, limit)
}

// appendSnappyBlock decodes one raw snappy block onto dst, checking the
// length it declares against what is left of limit before allocating.
func appendSnappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptCompressed, err)
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("%w: limit %d", ErrTooLarge, limit)
	}
	if n > maxSnappyDecoded(len(block)) {
		return nil, fmt.Errorf("%w: snappy: block of %d bytes claims %d decoded", ErrCorruptCompressed, len(block), n)
	}
	if cap(dst)-len(dst) < n {
		grown := make([]byte, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrCorruptCompressed, err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: snappy: short block", ErrCorruptCompressed)
	}
	return dst[:len(dst)+n], nil
}

// unxerial decodes xerial-framed snappy. The version fields are not
// checked, as neither the Java nor the Go clients check them.
func unxerial(dst, src []byte, limit int) ([]byte, error) {
	// Size the output once from the chunks' declared lengths.
	total := 0
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: xerial: truncated chunk length", ErrCorruptCompressed)
		}
		n := int(int32(binary.BigEndian.Uint32(rest)))
		if n <= 0 || n > len(rest)-4 {
			return nil, fmt.Errorf("%w: xerial: chunk length %d with %d bytes left", ErrCorruptCompressed, n, len(rest)-4)
		}
		d, err := snappy.DecodedLen(rest[4 : 4+n])
		if err != nil {
			return nil, fmt.Errorf("%w: xerial: %v", ErrCorruptCompressed, err)
		}
		if d > limit-total {
			return nil, fmt.Errorf("%w: limit %d", ErrTooLarge, limit)
		}
		if d > maxSnappyDecoded(n) {
			return nil, fmt.Errorf("%w: xerial: chunk of %d bytes claims %d decoded", ErrCorruptCompressed, n, d)
		}
		total += d
		rest = rest[4+n:]
	}
	out := dst[:0]
	if cap(out) < total {
		out = make([]byte, 0, total)
	}
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		n := int(binary.BigEndian.Uint32(rest))
		var err error
		if out, err = appendSnappyBlock(out, rest[4:4+n], limit); err != nil {
			return nil, err
		}
		rest = rest[4+n:]
	}
	return out, nil
}

func unzstd(dst, src []byte, limit int) ([]byte, error) {
	// A frame that declares its size (kgo, librdkafka) decodes in one
	// DecodeAll into a buffer of exactly that size; the cap limit makes
	// DecodeAll fail rather than grow it.
	var h zstd.Header
	sized := h.Decode(src) == nil && h.HasFCS
	if sized && h.FrameContentSize > uint64(limit) {
		return nil, fmt.Errorf("%w: frame of %d bytes, limit %d", ErrTooLarge, h.FrameContentSize, limit)
	}
	if sized && h.FrameContentSize <= uint64(max(zstdTrustedRatio*len(src), 1<<20)) {
		out := dst[:0]
		if want := int(h.FrameContentSize); cap(out) < want {
			out = make([]byte, 0, want)
		} else {
			out = out[:0:want]
		}
		if res, err := zstdAllDecoder().DecodeAll(src, out); err == nil {
			return res, nil
		}
		// Corrupt, or more frames follow: the stream decoder below tells
		// which, within the bound.
	}
	// The Java producer streams (zstd-jni) and declares no size: decode as
	// a stream into a buffer that grows up to the bound. Memory is the
	// frame's window (at most zstdMaxWindow) plus the output.
	zd, err := zstdStreamDecoder()
	if err != nil {
		return nil, err
	}
	defer zstdStreamDecoders.Put(zd)
	zd.br.Reset(src)
	if err := zd.d.Reset(&zd.br); err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrCorruptCompressed, err)
	}
	out, err := readBounded(dst, zd.d, initialCap(len(src), limit), limit)
	zd.br.Reset(nil)
	return out, err
}

// Compress appends the compressed form of src to dst.
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case None:
		return append(dst, src...), nil
	case Gzip:
		gw := gzipWriters.Get().(*gzipWriter)
		defer gzipWriters.Put(gw)
		gw.sw.b = dst
		gw.w.Reset(&gw.sw)
		if _, err := gw.w.Write(src); err != nil {
			return nil, err
		}
		if err := gw.w.Close(); err != nil {
			return nil, err
		}
		out := gw.sw.b
		gw.sw.b = nil
		return out, nil
	case Snappy:
		n := snappy.MaxEncodedLen(len(src))
		if n < 0 {
			return nil, fmt.Errorf("%w: %d bytes too large for snappy", ErrBadLength, len(src))
		}
		dst = grow(dst, n)
		enc := snappy.Encode(dst[len(dst):len(dst)+n], src)
		return dst[:len(dst)+len(enc)], nil
	case LZ4:
		lw := lz4Writers.Get().(*lz4Writer)
		defer lz4Writers.Put(lw)
		lw.sw.b = dst
		lw.w.Reset(&lw.sw)
		if _, err := lw.w.Write(src); err != nil {
			return nil, err
		}
		if err := lw.w.Close(); err != nil {
			return nil, err
		}
		out := lw.sw.b
		lw.sw.b = nil
		return out, nil
	case Zstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, c)
}

// grow returns b with room for n more bytes.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	g := make([]byte, len(b), len(b)+n)
	copy(g, b)
	return g
}
