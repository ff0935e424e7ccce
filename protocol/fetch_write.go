package protocol

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Fetch response is the one response assembled partly by hand: kmsg
// encodes everything around the record bytes, and the record bytes are
// written from the buffers they were read into (one writev), instead of
// being copied into the response buffer first. That copy was most of the
// CPU a fetch cost the server besides the kernel's own two copies.
//
// kmsg has no hook to leave a field out, so the places of the record bytes
// are found by encoding the response twice, with the spliced partitions'
// records empty and then one byte long: the two encodings differ exactly
// in those partitions' length prefixes (0 vs 1) and the inserted byte, and
// are otherwise identical, whatever the version. Anything else (never
// expected) falls back to kmsg's plain encoding.

// spliceMinBytes is the smallest record bytes of a partition written by
// reference; smaller ones are cheaper to copy than to give their own iovec.
const spliceMinBytes = 16 << 10

// splicePlaceholder stands in for spliced record bytes in the second
// encoding.
var splicePlaceholder = []byte{0}

// fetchSplicer holds one connection's scratch space for splicing, reused
// between responses.
type fetchSplicer struct {
	parts   []*kmsg.FetchResponseTopicPartition
	recs    [][]byte // record bytes of parts, in encoding order
	scratch []byte   // the second encoding
	lens    []byte   // re-encoded length prefixes
	bufs    net.Buffers
}

// encode appends resp's encoding after the response header already in dst
// (its first four bytes the frame size, set here) and returns the frame as
// buffers: pieces of dst, length prefixes, and each large partition's
// record bytes in place. ok is false when no partition is worth splicing
// or the encodings do not line up; the caller then encodes normally. dst
// is returned for reuse either way. The buffers refer to the record
// bytes: write them before those are recycled, then call clear.
func (s *fetchSplicer) encode(dst []byte, resp *kmsg.FetchResponse) (out net.Buffers, dstOut []byte, ok bool) {
	s.parts, s.recs = s.parts[:0], s.recs[:0]
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if len(p.RecordBatches) >= spliceMinBytes {
				s.parts = append(s.parts, p)
				s.recs = append(s.recs, p.RecordBatches)
			}
		}
	}
	if len(s.parts) == 0 {
		return nil, dst, false
	}
	restore := func() {
		for i, p := range s.parts {
			p.RecordBatches = s.recs[i]
		}
	}
	defer restore() // the handler's response is left as it was, even on a panic

	hdr := len(dst)
	for _, p := range s.parts {
		p.RecordBatches = splicePlaceholder[:0]
	}
	dst = resp.AppendTo(dst)
	for _, p := range s.parts {
		p.RecordBatches = splicePlaceholder
	}
	s.scratch = resp.AppendTo(s.scratch[:0])
	restore()

	e0, e1 := dst[hdr:], s.scratch
	if len(e1) != len(e0)+len(s.parts) {
		return nil, dst, false
	}
	flexible := resp.IsFlexible()
	s.lens = slices.Grow(s.lens[:0], 5*len(s.parts)) // never reallocated below: bufs point into it
	bufs := s.bufs[:0]
	size := len(dst) - 4
	from := 0    // start of the next piece of dst
	i, d := 0, 0 // position in e0; bytes e1 is ahead (placeholders so far)
	for _, recs := range s.recs {
		j := i + mismatch(e0[i:], e1[i+d:])
		if j >= len(e0) {
			return nil, dst, false
		}
		// The empty length prefix ends at j: compact (uvarint 1) or
		// classic (int32 0).
		start := j
		if flexible {
			if e0[j] != 1 || e1[j+d] != 2 {
				return nil, dst, false
			}
		} else {
			if j < 3 || e0[j-3]|e0[j-2]|e0[j-1]|e0[j] != 0 || e1[j+d] != 1 {
				return nil, dst, false
			}
			start = j - 3
		}
		l := len(s.lens)
		if flexible {
			s.lens = binary.AppendUvarint(s.lens, uint64(len(recs))+1)
		} else {
			s.lens = binary.BigEndian.AppendUint32(s.lens, uint32(len(recs)))
		}
		bufs = append(bufs, dst[from:hdr+start], s.lens[l:], recs)
		size += len(s.lens) - l - (j + 1 - start) + len(recs)
		from = hdr + j + 1
		i, d = j+1, d+1
	}
	if !bytes.Equal(e0[i:], e1[i+d:]) {
		return nil, dst, false
	}
	bufs = append(bufs, dst[from:])
	binary.BigEndian.PutUint32(dst, uint32(size))
	s.bufs = bufs
	return bufs, dst, true
}

// clear drops the references to the last response's record bytes, which
// go back to their pool.
func (s *fetchSplicer) clear() {
	clear(s.recs)
	clear(s.parts)
	clear(s.bufs[:cap(s.bufs)])
	s.recs, s.parts, s.bufs = s.recs[:0], s.parts[:0], s.bufs[:0]
	if cap(s.scratch) > 1<<20 {
		s.scratch = nil // small partitions inline made it large: do not pin it
	}
}

// mismatch is the index of the first byte where a and b differ, or the
// shorter length.
func mismatch(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if binary.LittleEndian.Uint64(a[i:]) != binary.LittleEndian.Uint64(b[i:]) {
			break
		}
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
