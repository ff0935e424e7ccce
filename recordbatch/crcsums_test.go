package recordbatch

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestChunkSumsMatchCRC checks Sum against a direct CRC for ranges that
// start and end anywhere, over a buffer filled by reads of odd sizes and
// moved by growth, as readFrameBody fills a frame.
func TestChunkSumsMatchCRC(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	full := make([]byte, 9*SumChunk+4321)
	for i := range full {
		full[i] = byte(rng.Uint32())
	}
	var c ChunkSums
	buf := make([]byte, 0, 1000)
	for len(buf) < len(full) {
		n := min(1+rng.IntN(3*SumChunk), len(full)-len(buf))
		if len(buf)+n > cap(buf) {
			grown := make([]byte, len(buf), 2*(len(buf)+n))
			copy(grown, buf)
			buf = grown
		}
		buf = append(buf, full[len(buf):len(buf)+n]...)
		c.Grow(buf)
	}
	if len(c.sums) != 9 {
		t.Fatalf("%d chunks summed, want 9", len(c.sums))
	}
	for _, tc := range []struct{ off, end int }{
		{0, len(buf)},
		{0, SumChunk},
		{SumChunk, 2 * SumChunk},
		{CRCStart, 3*SumChunk + 17},
		{SumChunk - 1, 2*SumChunk + 1},
		{5 * SumChunk, len(buf)},
	} {
		checkSum(t, &c, buf, tc.off, tc.end)
	}
	for range 200 {
		off := rng.IntN(len(buf))
		checkSum(t, &c, buf, off, off+rng.IntN(len(buf)-off+1))
	}
}

func checkSum(t *testing.T, c *ChunkSums, buf []byte, off, end int) {
	t.Helper()
	got, ok := c.Sum(buf[off:end])
	wholeChunk := (off+SumChunk-1)/SumChunk < end/SumChunk
	if ok != wholeChunk {
		t.Fatalf("[%d, %d): ok %v, want %v", off, end, ok, wholeChunk)
	}
	if want := crc32.Checksum(buf[off:end], crcTable); ok && got != want {
		t.Fatalf("[%d, %d): crc %08x, want %08x", off, end, got, want)
	}
}

// TestChunkSumsOutside: a slice of another buffer, or a nil ChunkSums, is
// not summed (the caller computes its CRC).
func TestChunkSumsOutside(t *testing.T) {
	var c ChunkSums
	buf := make([]byte, 4*SumChunk)
	c.Grow(buf)
	other := make([]byte, 4*SumChunk)
	if _, ok := c.Sum(other); ok {
		t.Fatal("a slice of another buffer was summed")
	}
	if _, ok := c.Sum(buf[SumChunk:]); !ok {
		t.Fatal("a slice of the buffer was not summed")
	}
	var none *ChunkSums
	if _, ok := none.Sum(buf); ok {
		t.Fatal("nil ChunkSums summed")
	}
	c.Reset()
	if _, ok := c.Sum(buf); ok {
		t.Fatal("summed after Reset")
	}
}

// TestValidateWithSums: Validate with the chunk sums of the frame a batch
// lies in accepts the good batch and finds a corrupted byte, whether it
// falls in a summed chunk or in the unaligned ends read again.
func TestValidateWithSums(t *testing.T) {
	recs := make([]Record, 300)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), Key: []byte("k"), Value: largeValue(i)}
	}
	batch, err := Build(BatchSpec{BaseTimestamp: 1700000000000, ProducerID: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) < 3*SumChunk {
		t.Fatalf("batch of %d bytes spans too few chunks", len(batch))
	}
	const at = 777 // the batch's offset in its frame
	for _, flip := range []int{-1, CRCStart + 10, at + 2*SumChunk, len(batch) - 1} {
		frame := make([]byte, at+len(batch)+99)
		copy(frame[at:], batch)
		b := frame[at : at+len(batch)]
		if flip >= 0 {
			b[min(flip, len(b)-1)] ^= 0x40
		}
		var sums ChunkSums
		sums.Grow(frame)
		_, direct := Validate(b, ValidateOptions{})
		_, summed := Validate(b, ValidateOptions{Sums: &sums})
		if (direct == nil) != (flip < 0) || (summed == nil) != (direct == nil) {
			t.Fatalf("flip %d: error %v with sums, %v without", flip, summed, direct)
		}
		if direct != nil && summed != direct && summed.Error() != direct.Error() {
			t.Fatalf("flip %d: error %v with sums, %v without", flip, summed, direct)
		}
	}
}
