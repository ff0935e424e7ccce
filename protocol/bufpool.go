package protocol

import (
	mathbits "math/bits"
	"sync"
)

// Large buffers on the hot paths (Produce request frames, the record bytes
// a Fetch reads) are recycled through power-of-two size classes instead of
// being allocated, zeroed and collected per request: at a GB/s that churn
// costs more CPU than the copies themselves. A buffer goes back to its
// pool only once nothing refers to it any more (the response is written);
// sync.Pool lets the GC drop what an idle broker does not use, so memory
// follows the load, not the data size.
const (
	minBufClass = 12 // 4 KiB: smaller buffers are cheap to allocate
	maxBufClass = 26 // 64 MiB: partition reads are capped there
)

var bufPools [maxBufClass + 1]sync.Pool

// boxes recycles the *[]byte that carry buffers through bufPools: putBuf
// would otherwise allocate one per buffer it takes back.
var boxes sync.Pool

// unbox returns the buffer in p and recycles p.
func unbox(p *[]byte) []byte {
	b := *p
	*p = nil
	boxes.Put(p)
	return b
}

// bufClass is the size class of a buffer of n bytes: the smallest power of
// two >= n, or -1 for sizes that are not pooled.
func bufClass(n int) int {
	if n < 1<<minBufClass || n > 1<<maxBufClass {
		return -1
	}
	return mathbits.Len(uint(n - 1))
}

// getBuf returns a buffer of len n whose contents are undefined. Its
// capacity is n's size class, so putBuf can take it back.
func getBuf(n int) []byte {
	c := bufClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	if p, _ := bufPools[c].Get().(*[]byte); p != nil {
		return unbox(p)[:n]
	}
	return make([]byte, n, 1<<c)
}

// tryGetBuf is getBuf when a pooled buffer is at hand, else nil: for
// callers that must not allocate n bytes on a peer's word alone.
func tryGetBuf(n int) []byte {
	c := bufClass(n)
	if c < 0 {
		return nil
	}
	if p, _ := bufPools[c].Get().(*[]byte); p != nil {
		return unbox(p)[:n]
	}
	return nil
}

// putBuf recycles b. The caller must hold the only reference to b's
// array; buffers whose capacity is not a size class are left to the GC.
func putBuf(b []byte) {
	c := bufClass(cap(b))
	if c < 0 || cap(b) != 1<<c {
		return
	}
	p, _ := boxes.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	*p = b[:0]
	bufPools[c].Put(p)
}

// readBuf returns a pooled buffer of len n (contents undefined) that
// lives until the response is written. A Request built outside a
// connection (tests) never releases its buffers; they are left to the GC.
func (r *Request) readBuf(n int) []byte {
	b := getBuf(n)
	r.bufs = append(r.bufs, b)
	return b
}

// releaseBufs recycles the buffers from readBuf (and from dropBufs'
// cut-off point on). Nothing may refer to them afterwards.
func (r *Request) releaseBufs() { r.dropBufs(0) }

// dropBufs recycles the buffers handed out since the first n, for a
// handler discarding what it read (a long poll reading again).
func (r *Request) dropBufs(n int) {
	for i := n; i < len(r.bufs); i++ {
		putBuf(r.bufs[i])
		r.bufs[i] = nil
	}
	r.bufs = r.bufs[:n]
}
