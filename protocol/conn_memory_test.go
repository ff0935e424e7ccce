package protocol

import (
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdleConnectionHeldMemoryBounded: what an idle connection keeps on
// the heap after requests is bounded by the connection's fixed buffers,
// not by the requests it served: after a 256 KiB request frame (an
// ApiVersions with a long software name; below socket.request.max.bytes)
// and a Metadata, each of many idle connections
// holds far less than the frame (its buffer went back to the pool, which a
// garbage collection empties). The 1,000 idle connections figure of the
// bench (-measure memory) rests on this; the test counts heap bytes only.
func TestIdleConnectionHeldMemoryBounded(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory distorts heap figures")
	}
	const conns, frame = 40, 256 << 10
	b := startBroker(t, nil)
	alive(t, b.addr)
	heap := func() uint64 {
		var ms runtime.MemStats
		for range 3 { // twice empties sync.Pool (its victim cache), once more for luck
			runtime.GC()
		}
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	ws := make([]*wire, 0, conns)
	for range conns {
		w := dialWire(t, b.addr)
		w.roundTrip(apiVersionsReq(3))
		big := apiVersionsReq(3)
		big.ClientSoftwareName = strings.Repeat("x", frame)
		w.roundTrip(big)
		w.roundTrip(kmsg.NewPtrMetadataRequest())
		ws = append(ws, w)
	}
	after := heap()
	per := (int64(after) - int64(before)) / conns
	t.Logf("heap held per idle connection after a %d KiB request: %d bytes", frame>>10, per)
	// The connection's bufio.Reader (16 KiB) and its state, with room to
	// spare, and a fraction of the frame.
	if per > 48<<10 {
		t.Fatalf("each idle connection holds %d bytes of heap, over 48 KiB: a request's buffer is kept per connection", per)
	}
	for _, w := range ws {
		w.nc.Close()
	}
}
