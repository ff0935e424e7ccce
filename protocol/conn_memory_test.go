package protocol

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdleConnectionHeldMemoryBounded: what an idle connection keeps on
// the heap after requests is bounded by the connection's fixed buffers,
// not by the requests it served: after a large request and a Metadata,
// each of many idle connections holds far less than that request took.
// The large request is a 256 KiB frame (an ApiVersions with a long
// software name; below socket.request.max.bytes), whose buffer goes back
// to the pool, which a garbage collection empties; or a Produce naming
// many topics, whose decoded request and response a connection must not
// keep for reuse (recycle). The 1,000 idle connections figure of the
// bench (-measure memory) rests on this; the test counts heap bytes only.
func TestIdleConnectionHeldMemoryBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory distorts heap figures")
	}
	const frame, produceTopics = 256 << 10, 32 << 10
	for _, tc := range []struct {
		name  string
		conns int
		big   func() kmsg.Request
	}{
		{"256 KiB ApiVersions", 40, func() kmsg.Request {
			big := apiVersionsReq(3)
			big.ClientSoftwareName = strings.Repeat("x", frame)
			return big
		}},
		// About 2 MiB of topics decoded, and as many in the answer.
		{"Produce of 32Ki topics", 8, func() kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks, req.TimeoutMillis = 1, 1000
			for i := range produceTopics {
				pt := kmsg.NewProduceRequestTopic()
				pt.Topic = fmt.Sprintf("t%d", i)
				req.Topics = append(req.Topics, pt)
			}
			return req
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, nil)
			alive(t, b.addr)
			big := tc.big()
			before := heapAfterGC()
			ws := make([]*wire, 0, tc.conns)
			for range tc.conns {
				w := dialWire(t, b.addr)
				w.roundTrip(apiVersionsReq(3))
				w.roundTrip(big)
				w.roundTrip(kmsg.NewPtrMetadataRequest())
				ws = append(ws, w)
			}
			after := heapAfterGC()
			per := (int64(after) - int64(before)) / int64(tc.conns)
			t.Logf("heap held per idle connection after the request: %d bytes", per)
			// The connection's bufio.Reader (16 KiB) and its state, with
			// room to spare, and a fraction of the request.
			if per > 48<<10 {
				t.Fatalf("each idle connection holds %d bytes of heap, over 48 KiB: a request's memory is kept per connection", per)
			}
			for _, w := range ws {
				w.nc.Close()
			}
		})
	}
}

// heapAfterGC is the live heap once garbage collections have emptied
// sync.Pool (twice for its victim cache, once more for luck).
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
