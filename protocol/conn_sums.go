package protocol

import (
	"bufio"
	"encoding/binary"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// A Produce frame's batches are CRC-checked once the whole frame is read,
// when its first megabytes have left the CPU's cache; checking memory
// runs at a fraction of the speed of checking cached bytes. So the reader
// takes the CRCs of a large Produce frame's 64 KiB chunks as they arrive
// (recordbatch.ChunkSums), and Validate makes each batch's CRC from them.

// hotRead bounds one read of a summed frame: the bytes of one read are
// summed after it, and must still be cached then.
const hotRead = 256 << 10

// minSummedFrame is the smallest frame whose chunks are summed: below it
// the frame is still cached when served.
const minSummedFrame = 1 << 20

var sumsPool = sync.Pool{New: func() any { return new(recordbatch.ChunkSums) }}

// produceSums returns pooled sums for a Produce frame of n bytes whose
// body br is about to read, or nil for any other frame. It peeks at the
// API key, which the body starts with.
func produceSums(br *bufio.Reader, n int32) *recordbatch.ChunkSums {
	if n < minSummedFrame {
		return nil
	}
	k, err := br.Peek(2)
	if err != nil || int16(binary.BigEndian.Uint16(k)) != kmsg.Produce.Int16() {
		return nil
	}
	s := sumsPool.Get().(*recordbatch.ChunkSums)
	s.Reset()
	return s
}

// putSums recycles s (nil is ignored). Nothing may use it afterwards.
func putSums(s *recordbatch.ChunkSums) {
	if s != nil {
		s.Reset()
		sumsPool.Put(s)
	}
}

// inFrame is a request frame on its way from the reader to the handler,
// with its chunk CRCs if the reader took them.
type inFrame struct {
	b    []byte
	sums *recordbatch.ChunkSums
}
