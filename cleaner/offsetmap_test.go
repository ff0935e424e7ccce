package cleaner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestSupersededAgreesWithGet: the bitsets answer exactly what a map
// lookup would, inside their span and past it (where the lookup answers).
func TestSupersededAgreesWithGet(t *testing.T) {
	for _, c := range []struct{ buf, span int64 }{{1 << 16, 5000}, {1 << 16, 10}, {10 * entrySize, 100}, {1 << 16, 0}} {
		rng := rand.New(rand.NewPCG(uint64(c.buf), uint64(c.span)))
		m := newOffsetMap(c.buf)
		const base = 1000
		m.resetFrom(3000, base, c.span)
		keys := map[int64][]byte{}
		for off := int64(base); off < base+3000 && !m.full(); off++ {
			if rng.IntN(5) == 0 {
				continue // a gap, a keyless or a control record: not put
			}
			k := []byte(fmt.Sprint("k", rng.IntN(400)))
			m.put(k, off)
			keys[off] = k
		}
		for off := int64(base - 10); off < base+3010; off++ {
			k, ok := keys[off]
			if !ok {
				k = []byte(fmt.Sprint("k", rng.IntN(400)))
			}
			if got, want := m.superseded(k, off), m.get(k) > off; got != want {
				t.Fatalf("buf %d span %d: superseded(%s, %d) = %v, get says %v", c.buf, c.span, k, off, got, want)
			}
		}
	}
}
