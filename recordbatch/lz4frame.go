package recordbatch

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// LZ4 frames, read as Kafka's Lz4BlockInputStream reads them: we walk the
// frame over the batch's own bytes and decode each block straight into its
// destination with pierrec/lz4's block decoder (only the frame format is
// ours), with no copy of the compressed bytes and no content checksum.
//
//	+-------+-----+----+----------------+----+----------------------+
//	| magic | FLG | BD | content size   | HC | blocks... | end mark |
//	| 4, LE |  1  |  1 | 8, if FLG bit 3|  1 |           | 4 zeros  |
//	+-------+-----+----+----------------+----+----------------------+
//	block: int32 LE size (high bit: stored uncompressed), data,
//	       then an xxh32 of the data if FLG bit 4 (block checksum)
//	after the end mark: xxh32 of the content if FLG bit 2
//
// FLG: bits 7-6 version (01), 5 block independence (must be 1: Kafka
// refuses dependent blocks), 4 block checksum, 3 content size, 2 content
// checksum, 1-0 reserved (0; bit 0 is the newer dictionary ID, which Kafka
// counts as reserved). BD: bit 7 and bits 3-0 reserved (0), bits 6-4 the
// block maximum size, 4 to 7 for 64 KiB, 256 KiB, 1 MiB, 4 MiB. HC is
// byte 1 of the xxh32 of FLG through the content size (v2 batches; only
// v0 message sets carry the old clients' wrong HC, which Kafka ignores).
//
// Where Kafka's reader and pierrec's differ, we are Kafka's:
//   - A block size whose low 31 bits are zero ends the frame, even with
//     the uncompressed bit set (pierrec reads an empty block).
//   - Bytes after the end mark (and content checksum) are ignored; pierrec
//     reads them as further frames.
//   - The content checksum and content size are not checked (pierrec
//     checks both); the size is only an allocation hint. Kafka's reader
//     consumes the checksum unread (a TODO; KAFKA-20528 proposes to
//     check it, still open), so a producer's wrong checksum is accepted.
//   - Dependent blocks, skippable frames and legacy frames are refused.
//   - A truncated content checksum is refused, as Kafka's getInt throws.

// These constants are part of the lz4 frame format.
const (
	lz4Magic          = 0x184D2204
	lz4MinHeader      = 7 // magic, FLG, BD, HC
	lz4FlagVersion    = 0xC0
	lz4Version1       = 0x40
	lz4FlagIndepend   = 0x20
	lz4FlagBlockSum   = 0x10
	lz4FlagSize       = 0x08
	lz4FlagContentSum = 0x04
	lz4FlagReserved   = 0x03
	lz4BDReserved     = 0x8F
	lz4RawBlock       = 1 << 31
)

// lz4Frame is a frame's descriptor.
type lz4Frame struct {
	blockMax    int
	sizeIndex   int   // BD's block size value minus 4
	blockSums   bool  // each block is followed by its xxh32
	contentSum  bool  // the end mark is followed by an xxh32
	contentSize int64 // declared, or -1
	first       int   // offset of the first block
}

func errLZ4(format string, args ...any) error {
	return fmt.Errorf("%w: lz4: "+format, append([]any{ErrCorruptCompressed}, args...)...)
}

// parseLZ4Frame reads the frame descriptor at the start of src, with
// Kafka's checks in Kafka's order.
func parseLZ4Frame(src []byte) (lz4Frame, error) {
	if len(src) < 6 {
		return lz4Frame{}, errLZ4("truncated frame header")
	}
	if m := binary.LittleEndian.Uint32(src); m != lz4Magic {
		return lz4Frame{}, errLZ4("magic %#08x", m)
	}
	flg, bd := src[4], src[5]
	switch {
	case flg&lz4FlagReserved != 0:
		return lz4Frame{}, errLZ4("reserved FLG bits %#02x", flg)
	case flg&lz4FlagIndepend == 0:
		return lz4Frame{}, errLZ4("dependent blocks")
	case flg&lz4FlagVersion != lz4Version1:
		return lz4Frame{}, errLZ4("version %d", flg>>6)
	case bd&lz4BDReserved != 0:
		return lz4Frame{}, errLZ4("reserved BD bits %#02x", bd)
	case bd>>4 < 4:
		return lz4Frame{}, errLZ4("block size value %d", bd>>4)
	}
	f := lz4Frame{
		sizeIndex:   int(bd>>4) - 4,
		blockMax:    1 << (2*int(bd>>4) + 8),
		blockSums:   flg&lz4FlagBlockSum != 0,
		contentSum:  flg&lz4FlagContentSum != 0,
		contentSize: -1,
		first:       lz4MinHeader,
	}
	if flg&lz4FlagSize != 0 {
		f.first += 8
		if len(src) < f.first-1 {
			return lz4Frame{}, errLZ4("truncated content size")
		}
		f.contentSize = int64(binary.LittleEndian.Uint64(src[6:]) & (1<<63 - 1))
	}
	if len(src) < f.first {
		return lz4Frame{}, errLZ4("truncated frame header")
	}
	if hc := byte(xxh32(src[4:f.first-1]) >> 8); src[f.first-1] != hc {
		return lz4Frame{}, errLZ4("header checksum %#02x, want %#02x", src[f.first-1], hc)
	}
	return f, nil
}

// block returns the block at src[pos:], whether it is stored
// uncompressed, and where the next one starts; data is nil at the end
// mark, with next past it and the content checksum. With sums, a block's
// checksum (if the frame has them) is verified.
func (f *lz4Frame) block(src []byte, pos int, sums bool) (data []byte, raw bool, next int, err error) {
	if len(src)-pos < 4 {
		return nil, false, 0, errLZ4("truncated block size")
	}
	x := binary.LittleEndian.Uint32(src[pos:])
	pos += 4
	raw = x&lz4RawBlock != 0
	n := int(x &^ lz4RawBlock)
	if n == 0 {
		if f.contentSum {
			if len(src)-pos < 4 {
				return nil, false, 0, errLZ4("truncated content checksum")
			}
			pos += 4
		}
		return nil, false, pos, nil
	}
	if n > f.blockMax {
		return nil, false, 0, errLZ4("block of %d bytes, max %d", n, f.blockMax)
	}
	if len(src)-pos < n {
		return nil, false, 0, errLZ4("truncated block: %d bytes of %d", len(src)-pos, n)
	}
	data = src[pos : pos+n]
	pos += n
	if f.blockSums {
		if len(src)-pos < 4 {
			return nil, false, 0, errLZ4("truncated block checksum")
		}
		if sums {
			if want, got := binary.LittleEndian.Uint32(src[pos:]), xxh32(data); got != want {
				return nil, false, 0, errLZ4("block checksum %#08x, want %#08x", got, want)
			}
		}
		pos += 4
	}
	return data, raw, pos, nil
}

// maxLZ4Decoded bounds what an lz4 block of n bytes can decode to: its
// densest form, match-length bytes of 255, yields under 255 bytes each.
func maxLZ4Decoded(n int) int { return 255*n + 24 }

// Sizing a whole decode: the output is first guessed at lz4GuessRatio
// times the input (Kafka batches usually compress 2-5x), at least
// lz4GuessBlock.
const (
	lz4GuessBlock = 64 << 10
	lz4GuessRatio = 8
)

// lz4BlockBufs pools one block's output per block maximum size, for the
// stream and for the bound check of a whole decode.
var lz4BlockBufs [4]sync.Pool // *[]byte

func getLZ4Block(f *lz4Frame) *[]byte {
	if b, _ := lz4BlockBufs[f.sizeIndex].Get().(*[]byte); b != nil {
		return b
	}
	b := make([]byte, f.blockMax)
	return &b
}

// unlz4 decodes the frame in src into dst[:0], growing it up to limit.
func unlz4(dst, src []byte, limit int) ([]byte, error) {
	f, err := parseLZ4Frame(src)
	if err != nil {
		return nil, err
	}
	// A first walk sizes the output: stored blocks exactly, compressed
	// ones within a block (writers fill every block but the last), capped
	// by the bound. Errors wait for the decoding walk, which meets them in
	// the stream's order (a block's checksum, its data, then the bound).
	bound := 0
	for pos := f.first; bound < limit; {
		data, isRaw, next, err := f.block(src, pos, false)
		if err != nil || data == nil {
			break
		}
		if isRaw {
			bound += len(data)
		} else {
			bound += min(f.blockMax, maxLZ4Decoded(len(data)))
		}
		pos = next
	}
	bound = min(bound, limit)
	// The bound says little of what a frame holds: past 64 KiB blocks
	// (kgo's default is 4 MiB) a frame is often one partly filled block,
	// and tiny compressed blocks each count up to a whole block though
	// they may decode to nothing. So guess from the input instead; the
	// output grows past the guess as blocks need (for blocks over
	// lz4GuessBlock, one that does not fit is decoded aside).
	hint := min(bound, max(lz4GuessRatio*len(src), lz4GuessBlock))
	if f.contentSize >= 0 && f.contentSize <= int64(bound) {
		hint = int(f.contentSize)
	}
	out := boundedOut(dst, hint, limit)
	for pos := f.first; ; {
		data, isRaw, next, err := f.block(src, pos, true)
		if err != nil {
			return nil, err
		}
		if data == nil {
			return out, nil
		}
		pos = next
		room := limit - len(out)
		if isRaw {
			if len(data) > room {
				return nil, fmt.Errorf("%w: limit %d", ErrTooLarge, limit)
			}
			out = append(out, data...)
			continue
		}
		want := min(f.blockMax, maxLZ4Decoded(len(data)), room)
		if f.blockMax > lz4GuessBlock {
			want = min(want, max(cap(out)-len(out), lz4GuessBlock))
		}
		if cap(out)-len(out) < want {
			out = growWithin(out, len(out)+want, limit)
		}
		if want > 0 { // pierrec's assembly faults on an empty nil dst
			n, err := lz4.UncompressBlock(data, out[len(out):len(out)+want])
			if err == nil {
				out = out[:len(out)+n]
				continue
			}
			if want == f.blockMax {
				return nil, errLZ4("block: %v", err)
			}
		}
		// Given less than a block's room (the bound, the guess, or our
		// estimate), the block may be valid: decode it aside to tell.
		if out, err = appendLZ4Block(out, data, &f, limit); err != nil {
			return nil, err
		}
	}
}

// appendLZ4Block decodes a compressed block into a pooled buffer and
// appends it to out, within limit.
func appendLZ4Block(out, data []byte, f *lz4Frame, limit int) ([]byte, error) {
	b := getLZ4Block(f)
	defer lz4BlockBufs[f.sizeIndex].Put(b)
	n, err := lz4.UncompressBlock(data, *b)
	if err != nil {
		return nil, errLZ4("block: %v", err)
	}
	if n > limit-len(out) {
		return nil, fmt.Errorf("%w: limit %d", ErrTooLarge, limit)
	}
	if cap(out)-len(out) < n {
		out = growWithin(out, len(out)+n, limit)
	}
	return append(out, (*b)[:n]...), nil
}

// lz4Stream writes a frame's output block by block (io.WriterTo), for
// Validate's record sink: a stored block is written from src itself, a
// compressed one from a pooled block buffer.
type lz4Stream struct {
	src []byte
	f   lz4Frame
	buf *[]byte // taken at the first compressed block
}

var lz4Streams = sync.Pool{New: func() any { return new(lz4Stream) }}

// openLZ4Stream checks the frame's header and returns its stream.
func openLZ4Stream(src []byte) (*lz4Stream, error) {
	f, err := parseLZ4Frame(src)
	if err != nil {
		return nil, err
	}
	s := lz4Streams.Get().(*lz4Stream)
	s.src, s.f = src, f
	return s, nil
}

func (s *lz4Stream) release() {
	if s.buf != nil {
		lz4BlockBufs[s.f.sizeIndex].Put(s.buf)
	}
	*s = lz4Stream{}
	lz4Streams.Put(s)
}

func (s *lz4Stream) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for pos := s.f.first; ; {
		data, raw, next, err := s.f.block(s.src, pos, true)
		if err != nil || data == nil {
			return total, err
		}
		pos = next
		if !raw {
			if s.buf == nil {
				s.buf = getLZ4Block(&s.f)
			}
			n, err := lz4.UncompressBlock(data, *s.buf)
			if err != nil {
				return total, errLZ4("block: %v", err)
			}
			data = (*s.buf)[:n]
		}
		n, err := w.Write(data)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}
