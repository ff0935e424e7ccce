package cleaner

import (
	"crypto/md5"
	"encoding/binary"
	"math/bits"
)

// offsetMap maps a key to the last offset it was seen at over the dirty
// range (Kafka's SkimpyOffsetMap). Each slot is a fixed 24 bytes: the
// key's 16-byte MD5 and offset+1 (0 marks an empty slot), so its memory is
// exactly the buffer it was given and never grows. Two keys with the same
// MD5 would be one key; Kafka accepts that 2^-128 risk, and so do we
// (never a short hash: jocko's xxhash map drops records on a collision).
type offsetMap struct {
	slots []byte // len = n * entrySize
	n     int    // number of slots
	// maxSlots is what the thread's share of
	// log.cleaner.dedupe.buffer.size holds; a pass uses fewer when the
	// dirty range has fewer records (it cannot then fill up), so a small
	// log does not touch the whole buffer.
	maxSlots int
	entries  int // slots in use
	// maxEntries is n times log.cleaner.io.buffer.load.factor (0.9): the
	// map counts as full beyond it, before probing gets slow.
	maxEntries int
	// latestOffset is the last offset put, raised by the caller past whole
	// batches and segments; the pass cleans up to latestOffset+1.
	latestOffset int64
	lookups      int64
	probes       int64
	// Beside the slots, two bitsets over the offsets from bitBase (the
	// first dirty offset): putBits marks the offsets whose record went
	// into the map, deadBits those a later record of the same key (the
	// same MD5) replaced. For such an offset the rewrite learns what get
	// would tell it, whether the record is its key's latest, without
	// hashing the key again and probing a slot far away in memory. They
	// cover at most 2*maxSlots offsets, which costs 1/48 of the buffer.
	bitBase, bitN     int64
	putBits, deadBits []uint64
}

const (
	hashSize  = md5.Size
	entrySize = hashSize + 8
	// loadFactor is log.cleaner.io.buffer.load.factor.
	loadFactor = 0.9
)

// newOffsetMap makes a map whose slots take at most bufBytes bytes, as
// Kafka's SkimpyOffsetMap sizes them (at least two slots, so one key
// always fits and every pass makes progress): the same slot count ends a
// pass where Kafka's does. The two bitsets over the pass's offsets add at
// most 2*maxSlots bits, bufBytes/96 each (about 2% in all). Memory is
// taken by reset, as a pass needs it.
func newOffsetMap(bufBytes int64) *offsetMap {
	m := &offsetMap{maxSlots: max(int(bufBytes/entrySize), 2)}
	m.reset(0)
	return m
}

// reset empties the map for a pass over at most records keyed records.
// The map then has the slots of the whole buffer, or fewer when even then
// the records could not fill it: the pass ends exactly where it would
// with the whole buffer.
func (m *offsetMap) reset(records int64) { m.resetFrom(records, 0, 0) }

// resetFrom is reset with the bitsets over the span offsets from base.
func (m *offsetMap) resetFrom(records, base, span int64) {
	m.bitBase, m.bitN = base, min(max(span, 0), 2*int64(m.maxSlots))
	words := int((m.bitN + 63) / 64)
	if cap(m.putBits) < words {
		m.putBits, m.deadBits = make([]uint64, words), make([]uint64, words)
	}
	m.putBits, m.deadBits = m.putBits[:words], m.deadBits[:words]
	clear(m.putBits)
	clear(m.deadBits)
	n := m.maxSlots
	if need := float64(records)/loadFactor + 2; need < float64(n) {
		n = int(need)
	}
	if cap(m.slots) < n*entrySize {
		m.slots = make([]byte, n*entrySize)
	}
	m.slots = m.slots[:n*entrySize]
	clear(m.slots)
	m.n = n
	m.maxEntries = max(1, int(float64(n)*loadFactor))
	m.entries = 0
	m.latestOffset = -1
}

// full reports whether no new key may be added.
func (m *offsetMap) full() bool { return m.entries >= m.maxEntries }

// utilization is the fraction of slots in use.
func (m *offsetMap) utilization() float64 { return float64(m.entries) / float64(m.n) }

// find returns the slot for hash h: the one holding it or the empty one
// where it would go (linear probing; the map is never completely full).
func (m *offsetMap) find(h *[hashSize]byte) (int, bool) {
	// The slot from the hash's top 64 bits scaled to n (a multiply, not
	// a division).
	hi, _ := bits.Mul64(binary.BigEndian.Uint64(h[:8]), uint64(m.n))
	i := int(hi)
	m.lookups++
	for {
		m.probes++
		s := m.slots[i*entrySize : (i+1)*entrySize]
		if binary.BigEndian.Uint64(s[hashSize:]) == 0 {
			return i, false
		}
		if [hashSize]byte(s[:hashSize]) == *h {
			return i, true
		}
		if i++; i == m.n {
			i = 0
		}
	}
}

// put records offset as the latest offset of key. REQUIRES: !full() or the
// key is present (callers check full() before every put, as Kafka does).
func (m *offsetMap) put(key []byte, offset int64) {
	h := md5.Sum(key)
	i, found := m.find(&h)
	s := m.slots[i*entrySize : (i+1)*entrySize]
	if !found {
		copy(s, h[:])
		m.entries++
	} else {
		setBit(m.deadBits, int64(binary.BigEndian.Uint64(s[hashSize:]))-1-m.bitBase, m.bitN)
	}
	binary.BigEndian.PutUint64(s[hashSize:], uint64(offset+1))
	setBit(m.putBits, offset-m.bitBase, m.bitN)
	m.latestOffset = offset
}

func setBit(bs []uint64, i, n int64) {
	if i >= 0 && i < n {
		bs[i>>6] |= 1 << (i & 63)
	}
}

// superseded reports whether the key of the record at offset has a later
// offset in the map: get(key) > offset, answered from the bitsets when
// the record went into the map.
func (m *offsetMap) superseded(key []byte, offset int64) bool {
	if i := offset - m.bitBase; i >= 0 && i < m.bitN {
		w, b := i>>6, uint64(1)<<(i&63)
		if m.putBits[w]&b != 0 {
			return m.deadBits[w]&b != 0
		}
	}
	return m.get(key) > offset
}

// get returns the latest offset of key, -1 if absent.
func (m *offsetMap) get(key []byte) int64 {
	h := md5.Sum(key)
	i, found := m.find(&h)
	if !found {
		return -1
	}
	return int64(binary.BigEndian.Uint64(m.slots[i*entrySize+hashSize:])) - 1
}
