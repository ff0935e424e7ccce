package recordbatch

import (
	"hash/crc32"
	"sync"
	"unsafe"
)

// ChunkSums holds the CRC-32C of a buffer's consecutive SumChunk-byte
// chunks, taken as the buffer fills (a Produce frame as it arrives from
// the socket), while each chunk is still in the CPU's cache. Sum then
// makes the CRC of any range of the buffer from the chunks inside it,
// reading again only the range's unaligned ends. By the time a request is
// served its first batches have left the cache, and a CRC of memory runs
// at a fraction of its speed on cached bytes.
//
// The CRC is linear: for a register s, R(s, A||B) = shift_len(B)(R(s, A))
// ^ R(0, B), where R(s, p) is the CRC register after p starting from s
// (no inversion) and shift_n(s) = R(s, n zero bytes) is a linear map, the
// same for every chunk (sumShift).
//
// The buffer must not change once summed. Not safe for concurrent use.
type ChunkSums struct {
	buf  []byte   // the summed buffer; its first len(sums)*SumChunk bytes are summed
	sums []uint32 // sums[i] = R(0, buf[i*SumChunk:(i+1)*SumChunk])
}

// SumChunk is the chunk size of ChunkSums: small enough that a chunk just
// read is still cached, large enough that combining chunks costs little.
const SumChunk = 64 << 10

// Reset forgets the sums, for a new buffer.
func (c *ChunkSums) Reset() { c.buf, c.sums = nil, c.sums[:0] }

// Grow sums the chunks of buf that are complete and not yet summed. buf
// holds the bytes summed before at the same offsets (it may be a copy
// grown from the buffer before).
func (c *ChunkSums) Grow(buf []byte) {
	c.buf = buf
	for n := len(c.sums); (n+1)*SumChunk <= len(buf); n++ {
		c.sums = append(c.sums, ^crc32.Update(^uint32(0), crcTable, buf[n*SumChunk:(n+1)*SumChunk]))
	}
}

// Sum returns the CRC-32C of p, a slice of the summed buffer, from the
// chunks p covers; false if p is not inside the buffer or covers no
// summed chunk (the caller computes it directly).
func (c *ChunkSums) Sum(p []byte) (uint32, bool) {
	if c == nil || len(p) == 0 || len(c.sums) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(c.buf)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	if at < base || at-base > uintptr(len(c.buf)) || int(at-base)+len(p) > len(c.buf) {
		return 0, false
	}
	off := int(at - base)
	end := off + len(p)
	first := (off + SumChunk - 1) / SumChunk // first whole chunk
	last := min(end/SumChunk, len(c.sums))   // after the last whole summed chunk
	if first >= last {
		return 0, false
	}
	shift := sumShift()
	s := ^crc32.Update(0, crcTable, c.buf[off:first*SumChunk]) // register after the head
	for _, x := range c.sums[first:last] {
		s = shift[0][byte(s)] ^ shift[1][byte(s>>8)] ^ shift[2][byte(s>>16)] ^ shift[3][s>>24] ^ x
	}
	return crc32.Update(^s, crcTable, c.buf[last*SumChunk:end]), true
}

// sumShift is shift_SumChunk as four byte tables: shift(s) is the xor of
// t[i][byte i of s].
var sumShift = sync.OnceValue(func() *[4][256]uint32 {
	zeros := make([]byte, SumChunk)
	var basis [32]uint32 // basis[k] = shift(1<<k)
	for k := range basis {
		basis[k] = ^crc32.Update(^(uint32(1) << k), crcTable, zeros)
	}
	t := new([4][256]uint32)
	for i := range t {
		for b := range 256 {
			var v uint32
			for bit := range 8 {
				if b&(1<<bit) != 0 {
					v ^= basis[8*i+bit]
				}
			}
			t[i][b] = v
		}
	}
	return t
})
