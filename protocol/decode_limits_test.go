package protocol

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestFrame is a request header (v1, or v2 for flexible versions)
// followed by body.
func requestFrame(key, version int16, flexible bool, body []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 'c')
	if flexible {
		b = append(b, 0) // header tags
	}
	return append(b, body...)
}

// repeat appends n copies of unit to b.
func repeat(b []byte, unit []byte, n int) []byte {
	for range n {
		b = append(b, unit...)
	}
	return b
}

// allocated is the bytes f allocates (this goroutine is the only one
// working meanwhile).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestDecodeBounded: hostile frames cost at most maxDecodedBytes to
// decode: they are refused before kmsg allocates (errDecodeBound, which
// closes the connection), or decode within the bound. Before the bound,
// the 100 MiB Fetch allocated about 3 GB.
func TestDecodeBounded(t *testing.T) {
	const frameMiB = 100
	// Fetch v18: header fields, then a topic count as large as the
	// frame allows (kmsg checks 2 bytes per topic: ~50M topics of 80
	// bytes each).
	fetch := binary.BigEndian.AppendUint32(nil, 0)                  // max wait
	fetch = binary.BigEndian.AppendUint32(fetch, 1)                 // min bytes
	fetch = binary.BigEndian.AppendUint32(fetch, 1<<20)             // max bytes
	fetch = append(fetch, 0)                                        // isolation
	fetch = binary.BigEndian.AppendUint32(fetch, 0)                 // session id
	fetch = binary.BigEndian.AppendUint32(fetch, 0xffffffff)        // epoch
	fetch = binary.AppendUvarint(fetch, uint64(frameMiB<<20)/2)     // topics
	fetch = append(fetch, make([]byte, frameMiB<<20-len(fetch))...) // zeros
	// Metadata v12 with millions of empty topic entries: a zero topic
	// id, a null name, an empty tag section each.
	var md []byte
	md = binary.AppendUvarint(md, 3_000_000+1)
	md = repeat(md, append(make([]byte, 16), 0, 0), 3_000_000)
	md = append(md, 0, 0, 0) // allow auto creation, authorized ops, tags
	// The same entries, each with an unknown tag (kmsg keeps a map per
	// entry), in a frame just under Metadata v12's limit.
	unit := append(make([]byte, 16), 0, 1, 9, 0) // id, null name, one tag #9 of 0 bytes
	n := (frameLimits()[kmsg.Metadata.Int16()][12] - 8) / len(unit)
	var mdTags []byte
	mdTags = binary.AppendUvarint(mdTags, uint64(n)+1)
	mdTags = repeat(mdTags, unit, n)
	mdTags = append(mdTags, 0, 0, 0)
	// Produce v9: ~17M partitions of 6 bytes (index, null records, no
	// tags) in one topic: 40 bytes each decoded.
	var produce []byte
	produce = append(produce, 0)    // null transactional id
	produce = append(produce, 0, 1) // acks
	produce = append(produce, 0, 0, 0, 0)
	produce = binary.AppendUvarint(produce, 2) // one topic
	produce = append(produce, 2, 't')
	parts := (frameMiB<<20 - len(produce) - 8) / 6
	produce = binary.AppendUvarint(produce, uint64(parts)+1)
	produce = repeat(produce, []byte{0, 0, 0, 0, 0, 0}, parts)
	produce = append(produce, 0, 0)

	cases := []struct {
		name   string
		frame  []byte
		refuse bool
	}{
		{"100 MiB Fetch v18 with 50M topics", requestFrame(1, 18, true, fetch), true},
		{"Metadata v12 with 3M empty topics", requestFrame(3, 12, true, md), true},
		{"Metadata v12 at its limit, a tag on every topic", requestFrame(3, 12, true, mdTags), false},
		{"100 MiB Produce v9 with 17M partitions", requestFrame(0, 9, true, produce), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			got := allocated(func() { _, _, _, err = decodeRequest(apis, tc.frame) })
			t.Logf("%d byte frame: %d bytes allocated decoding it (%v)", len(tc.frame), got, err)
			if tc.refuse && !errors.Is(err, errDecodeBound) {
				t.Fatalf("decode = %v, want errDecodeBound", err)
			}
			if !tc.refuse && err != nil {
				t.Fatalf("decode = %v, want it decoded", err)
			}
			if got > maxDecodedBytes {
				t.Fatalf("decoding allocated %d bytes, bound %d", got, maxDecodedBytes)
			}
		})
	}
}

// TestProducePrePassMatchesKmsg: the Produce pre-pass accepts what kmsg
// decodes and counts at least what kmsg allocates for its elements.
func TestProducePrePassMatchesKmsg(t *testing.T) {
	for _, v := range []int16{3, 8, 9, 12, 13} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		id := "txn"
		req.TransactionID = &id
		for i := range 3 {
			tp := kmsg.NewProduceRequestTopic()
			tp.Topic = "topic"
			tp.TopicID[0] = byte(i)
			for p := range 4 {
				pp := kmsg.NewProduceRequestTopicPartition()
				pp.Partition = int32(p)
				pp.Records = []byte("records")
				tp.Partitions = append(tp.Partitions, pp)
			}
			req.Topics = append(req.Topics, tp)
		}
		body := req.AppendTo(nil)
		n, err := produceDecodedBytes(body, v)
		if err != nil {
			t.Fatalf("v%d: pre-pass refused a valid request: %v", v, err)
		}
		if n < 3*96 {
			t.Fatalf("v%d: pre-pass counted %d bytes for 3 topics and 12 partitions", v, n)
		}
		if _, err := produceDecodedBytes(body[:len(body)-3], v); err == nil && v >= 9 {
			t.Fatalf("v%d: pre-pass accepted a truncated body", v)
		}
	}
}

// FuzzProducePrePass: the pre-pass never panics, and accepts every body
// kmsg decodes (so it refuses nothing valid but what is too large).
func FuzzProducePrePass(f *testing.F) {
	for _, v := range []int16{3, 9, 13} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "t"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = []byte{1, 2, 3}
		tp.Partitions = append(tp.Partitions, pp)
		req.Topics = append(req.Topics, tp)
		f.Add(v, req.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, v int16, body []byte) {
		if v < 0 || v > 13 {
			return
		}
		_, err := produceDecodedBytes(body, v)
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		if req.ReadFrom(body) == nil && err != nil {
			t.Fatalf("v%d: kmsg decodes %x, the pre-pass refuses it: %v", v, body, err)
		}
	})
}
