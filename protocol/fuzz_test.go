package protocol

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRequestFrame feeds arbitrary bytes through the request path up to
// the handler (FuzzServerRequests goes on through a live server): size prefix (readFrame, with a small limit), header
// (parseHeader, skipTags) and body (kmsg decode) against the served table.
//
// Invariants: it never panics; readFrame never returns more bytes than the
// input holds nor a frame above the limit; a frame that decodes re-encodes
// (kmsg AppendTo) into bytes that decode again at the same version.
func FuzzRequestFrame(f *testing.F) {
	id := "fuzz"
	seed := func(req kmsg.Request, v int16) {
		req.SetVersion(v)
		f.Add(encodeRequest(req, 1, &id))
	}
	for v := int16(0); v <= 4; v++ {
		seed(apiVersionsReq(v), v)
	}
	for v := int16(0); v <= 13; v++ {
		m := kmsg.NewPtrMetadataRequest()
		m.Topics = []kmsg.MetadataRequestTopic{{Topic: &id}}
		seed(m, v)
	}
	for _, v := range []int16{3, 7, 9, 13} {
		p := kmsg.NewPtrProduceRequest()
		p.Acks = -1
		p.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 49, 0, 0, 0, 0, 2}}}}}
		seed(p, v)
	}
	for _, v := range []int16{0, 5, 10} {
		l := kmsg.NewPtrListOffsetsRequest()
		l.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1}}}}
		seed(l, v)
	}
	for _, v := range []int16{0, 5, 7} {
		c := kmsg.NewPtrCreateTopicsRequest()
		c.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: 1, ReplicationFactor: 1}}
		seed(c, v)
	}
	for _, v := range []int16{0, 4, 6} {
		d := kmsg.NewPtrDeleteTopicsRequest()
		d.TopicNames = []string{"t"}
		d.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &id}}
		seed(d, v)
	}
	for _, s := range serverFuzzSeeds(f) { // FuzzServerRequests' seeds: more APIs, codecs and nasty frames
		f.Add(s.data)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 10, 0, 18, 0, 9, 0, 0, 0, 1, 0xff, 0xff})

	table := servedVersions(nil)
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, err := readFrame(bytes.NewReader(in), limit)
		if err != nil {
			return
		}
		if len(frame) > len(in)-4 || len(frame) > limit {
			t.Fatalf("frame of %d bytes from %d input bytes", len(frame), len(in))
		}
		h, _, req, err := decodeRequest(table, frame)
		if err != nil {
			return
		}
		again := kmsg.RequestForKey(h.key)
		again.SetVersion(h.version)
		if err := again.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatalf("key %d v%d: re-encoded request does not decode: %v", h.key, h.version, err)
		}
	})
}
