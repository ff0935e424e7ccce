package protocol

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceDecodedBytes walks a Produce request body (after the header) at
// version and returns the Go bytes kmsg will allocate to decode it: its
// topic and partition elements, topic name and transactional id copies,
// and maps for unknown tags. Records are slices of the frame and cost
// nothing. A body that does not parse is left to kmsg to refuse (0, nil
// is never returned for it: the error is).
func produceDecodedBytes(body []byte, version int16) (int, error) {
	w := wireReader{b: body, flexible: version >= 9}
	cost := 0
	if version >= 3 {
		cost += w.nullableString()
	}
	w.skip(2 + 4) // acks, timeout
	topics := w.arrayLen()
	cost += topics * int(unsafe.Sizeof(kmsg.ProduceRequestTopic{}))
	for range topics {
		if w.err != nil || cost > maxDecodedBytes {
			break
		}
		if version <= 12 {
			cost += w.nullableString()
		} else {
			w.skip(16)
		}
		parts := w.arrayLen()
		cost += parts * int(unsafe.Sizeof(kmsg.ProduceRequestTopicPartition{}))
		for range parts {
			if w.err != nil || cost > maxDecodedBytes {
				break
			}
			w.skip(4)
			w.nullableBytes()
			cost += w.tags()
		}
		cost += w.tags()
	}
	cost += w.tags()
	return cost, w.err
}

var errWire = errors.New("protocol: malformed request")

// wireReader reads Kafka's primitive encodings without allocating; the first
// problem sticks in err and every later read is a no-op.
type wireReader struct {
	b        []byte
	flexible bool
	err      error
}

func (w *wireReader) skip(n int) {
	if w.err != nil {
		return
	}
	if n < 0 || n > len(w.b) {
		w.err = errWire
		return
	}
	w.b = w.b[n:]
}

func (w *wireReader) uvarint() uint64 {
	if w.err != nil {
		return 0
	}
	v, n := binary.Uvarint(w.b)
	if n <= 0 {
		w.err = errWire
		return 0
	}
	w.b = w.b[n:]
	return v
}

func (w *wireReader) int16() int {
	if w.err != nil || len(w.b) < 2 {
		w.err = errWire
		return 0
	}
	v := int16(binary.BigEndian.Uint16(w.b))
	w.b = w.b[2:]
	return int(v)
}

func (w *wireReader) int32() int {
	if w.err != nil || len(w.b) < 4 {
		w.err = errWire
		return 0
	}
	v := int32(binary.BigEndian.Uint32(w.b))
	w.b = w.b[4:]
	return int(v)
}

// length reads a compact (uvarint, plus one) or classic length; -1 is
// null.
func (w *wireReader) length(classic func() int) int {
	if !w.flexible {
		return classic()
	}
	v := w.uvarint()
	if v > uint64(len(w.b))+1 {
		w.err = errWire
		return 0
	}
	return int(v) - 1
}

// nullableString skips a (nullable) string and returns its copy's size.
func (w *wireReader) nullableString() int {
	n := w.length(w.int16)
	if n > 0 {
		w.skip(n)
		return n
	}
	return 0
}

func (w *wireReader) nullableBytes() {
	if n := w.length(w.int32); n > 0 {
		w.skip(n)
	}
}

// arrayLen reads an array's count; null and empty are 0. Each element is
// at least a byte, as kmsg checks.
func (w *wireReader) arrayLen() int {
	var n int
	if w.flexible {
		// kmsg's CompactArrayLen: a 32-bit uvarint taken as an int32,
		// less one, so a count past MaxInt32 wraps negative and reads
		// as null (what kmsg decodes, the pre-pass must accept).
		v := w.uvarint()
		if v > math.MaxUint32 {
			w.err = errWire
			return 0
		}
		n = int(int32(uint32(v)) - 1)
	} else {
		n = w.int32()
	}
	if n < 0 {
		return 0
	}
	if n > len(w.b) {
		w.err = errWire
		return 0
	}
	return n
}

// tags skips a tag section (flexible versions) and returns what kmsg's
// Tags spends on its unknown tags.
func (w *wireReader) tags() int {
	if !w.flexible {
		return 0
	}
	n := w.uvarint()
	if n > uint64(len(w.b)) {
		w.err = errWire
		return 0
	}
	for range n {
		w.uvarint() // key
		w.skip(int(min(w.uvarint(), uint64(len(w.b))+1)))
		if w.err != nil {
			return 0
		}
	}
	if n == 0 {
		return 0
	}
	return tagMapBytes + int(n-1)*tagEntryBytes
}

// tagEntryBytes is what each further unknown tag in one Tags costs
// (measured: ~104 bytes).
const tagEntryBytes = 104
