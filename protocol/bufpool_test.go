package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBufPool(t *testing.T) {
	for _, tc := range []struct {
		n, class int
	}{
		{0, -1}, {1, -1}, {4095, -1}, {4096, 12}, {4097, 13}, {1 << 20, 20}, {1<<20 + 1, 21},
		{1 << maxBufClass, maxBufClass}, {1<<maxBufClass + 1, -1},
	} {
		if got := bufClass(tc.n); got != tc.class {
			t.Errorf("bufClass(%d) = %d, want %d", tc.n, got, tc.class)
		}
		b := getBuf(tc.n)
		if len(b) != tc.n {
			t.Errorf("getBuf(%d): len %d", tc.n, len(b))
		}
		if tc.class >= 0 && cap(b) != 1<<tc.class {
			t.Errorf("getBuf(%d): cap %d, want %d", tc.n, cap(b), 1<<tc.class)
		}
		putBuf(b)
	}
	putBuf(make([]byte, 5000)) // not a class size: dropped, not pooled
	for range 10 {
		if b := tryGetBuf(5000); b != nil && cap(b) != 8192 {
			t.Fatalf("tryGetBuf(5000) cap %d", cap(b))
		}
	}
	var r Request
	x, y := r.readBuf(10000), r.readBuf(20000)
	if len(x) != 10000 || len(y) != 20000 || len(r.bufs) != 2 {
		t.Fatalf("readBuf: %d %d %d", len(x), len(y), len(r.bufs))
	}
	r.dropBufs(1)
	if len(r.bufs) != 1 {
		t.Fatalf("dropBufs left %d", len(r.bufs))
	}
	r.releaseBufs()
	if len(r.bufs) != 0 {
		t.Fatalf("releaseBufs left %d", len(r.bufs))
	}
}

// TestReadFramePooled reads back-to-back frames whose sizes are not size
// classes, with pooled buffers (capacity above the frame) at hand: each
// frame must end at its own size, never taking the next frame's bytes.
func TestReadFramePooled(t *testing.T) {
	sizes := []int{5000, 70000, 1<<20 + 3, 5000, 3*readChunk + 17}
	var stream []byte
	for i, n := range sizes {
		stream = binary.BigEndian.AppendUint32(stream, uint32(n))
		stream = append(stream, bytes.Repeat([]byte{byte(i + 1)}, n)...)
	}
	for round := range 2 { // the second round finds the first's buffers pooled
		r := bytes.NewReader(stream)
		for i, n := range sizes {
			f, err := readFrame(r, 4*readChunk)
			if err != nil {
				t.Fatalf("round %d frame %d: %v", round, i, err)
			}
			if len(f) != n || !bytes.Equal(f, bytes.Repeat([]byte{byte(i + 1)}, n)) {
				t.Fatalf("round %d frame %d: got %d bytes, want %d of %d", round, i, len(f), n, i+1)
			}
			releaseFrame(kmsg.Produce.Int16(), f)
		}
		if r.Len() != 0 {
			t.Fatalf("round %d: %d bytes left", round, r.Len())
		}
	}
}

// TestBufPoolNoAllocs: taking a pooled buffer and giving it back
// allocates nothing once the pools are warm (not even the box sync.Pool
// carries it in).
func TestBufPoolNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	putBuf(getBuf(64 << 10))
	if n := testing.AllocsPerRun(100, func() { putBuf(getBuf(64 << 10)) }); n != 0 {
		t.Fatalf("%v allocations per getBuf and putBuf", n)
	}
}
