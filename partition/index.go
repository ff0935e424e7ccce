package partition

// Sparse indexes, in Kafka's file format (big-endian):
//
//	.index      entries of 8 bytes:  relativeOffset int32, position int32
//	.timeindex  entries of 12 bytes: timestamp int64, relativeOffset int32
//
// relativeOffset is the offset minus the segment's base offset. An offset
// index entry maps the last offset of a batch to the byte position where
// that batch starts; a time index entry says that the records up to that
// offset have timestamps up to that timestamp. Entries are strictly
// increasing; Kafka preallocates the files (segment.index.bytes) and
// zero-fills them, so the first entry that does not increase ends the
// index. kcompatd keeps the files exactly sized.
//
// The files are read with ReadAt and never cached in memory, so the memory
// a log costs does not grow with its size. The writer appends under the
// log's mutex and publishes the entry count with an atomic store after the
// write, so readers see only whole entries.

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12
	// indexSearchReadAll is the index size up to which lookups read the
	// whole file in one call rather than binary-searching entry by entry.
	indexSearchReadAll = 4096
)

// indexEntry is a decoded entry of either index: key is the relative offset
// (offset index) or the timestamp (time index); val is the position or the
// relative offset.
type indexEntry struct {
	key int64
	val int64
}

// decodeOffsetIndex decodes the valid prefix of an .index file: entries with
// strictly increasing relative offsets and positions. It never panics and
// returns at most len(b)/8 entries.
func decodeOffsetIndex(b []byte) []indexEntry {
	out := make([]indexEntry, 0, len(b)/offsetIndexEntrySize)
	prevRel, prevPos := int64(-1), int64(-1)
	for i := 0; i+offsetIndexEntrySize <= len(b); i += offsetIndexEntrySize {
		rel := int64(int32(binary.BigEndian.Uint32(b[i:])))
		pos := int64(int32(binary.BigEndian.Uint32(b[i+4:])))
		if rel <= prevRel || pos <= prevPos || rel < 0 || pos < 0 || (i == 0 && rel == 0 && pos == 0) {
			break
		}
		out = append(out, indexEntry{rel, pos})
		prevRel, prevPos = rel, pos
	}
	return out
}

// decodeTimeIndex decodes the valid prefix of a .timeindex file: strictly
// increasing timestamps with non-decreasing relative offsets.
func decodeTimeIndex(b []byte) []indexEntry {
	out := make([]indexEntry, 0, len(b)/timeIndexEntrySize)
	for i := 0; i+timeIndexEntrySize <= len(b); i += timeIndexEntrySize {
		ts := int64(binary.BigEndian.Uint64(b[i:]))
		rel := int64(int32(binary.BigEndian.Uint32(b[i+8:])))
		if rel < 0 || (i == 0 && ts == 0 && rel == 0) {
			break
		}
		if n := len(out); n > 0 && (ts <= out[n-1].key || rel < out[n-1].val) {
			break
		}
		out = append(out, indexEntry{ts, rel})
	}
	return out
}

// index is one index file of a segment.
type index struct {
	f         vfs.File
	entrySize int
	max       int64        // capacity in entries: segment.index.bytes / entrySize
	n         atomic.Int64 // entries written and visible to readers
	last      indexEntry   // last entry; writer only (log mutex)
	// scratch holds the entry append encodes; a local array would escape
	// through the File interface and cost an allocation per append.
	// Writer only (log mutex).
	scratch [timeIndexEntrySize]byte
}

func newIndex(f vfs.File, entrySize int, maxBytes int32) *index {
	m := int64(maxBytes) / int64(entrySize)
	if m < 1 {
		m = 1
	}
	return &index{f: f, entrySize: entrySize, max: m}
}

func (x *index) full() bool { return x.n.Load() >= x.max }

func (x *index) encode(b []byte, e indexEntry, base int64) {
	if x.entrySize == offsetIndexEntrySize {
		binary.BigEndian.PutUint32(b, uint32(int32(e.key-base)))
		binary.BigEndian.PutUint32(b[4:], uint32(int32(e.val)))
		return
	}
	binary.BigEndian.PutUint64(b, uint64(e.key))
	binary.BigEndian.PutUint32(b[8:], uint32(int32(e.val-base)))
}

// append writes one entry (absolute offsets; base is the segment's base
// offset). REQUIRES: log mutex held.
func (x *index) append(e indexEntry, base int64) error {
	b := x.scratch[:x.entrySize]
	x.encode(b, e, base)
	n := x.n.Load()
	if _, err := x.f.WriteAt(b, n*int64(x.entrySize)); err != nil {
		return err
	}
	x.last = e
	x.n.Store(n + 1)
	return nil
}

// rewrite replaces the file's contents with entries (absolute offsets).
func (x *index) rewrite(entries []indexEntry, base int64) error {
	b := make([]byte, len(entries)*x.entrySize)
	for i, e := range entries {
		x.encode(b[i*x.entrySize:], e, base)
	}
	if err := x.f.Truncate(0); err != nil {
		return err
	}
	if len(b) > 0 {
		if _, err := x.f.WriteAt(b, 0); err != nil {
			return err
		}
	}
	x.setLoaded(entries)
	return nil
}

// setLoaded adopts entries already in the file.
func (x *index) setLoaded(entries []indexEntry) {
	if len(entries) > 0 {
		x.last = entries[len(entries)-1]
	} else {
		x.last = indexEntry{-1, -1}
	}
	x.n.Store(int64(len(entries)))
}

// readAll reads and decodes the valid entries of the file (absolute).
func (x *index) readAll(base int64) ([]indexEntry, error) {
	st, err := x.f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size > int64(x.max+1)*int64(x.entrySize)+(64<<20) {
		return nil, fmt.Errorf("partition: index %s is %d bytes", x.f.Name(), size)
	}
	b := make([]byte, size)
	if _, err := x.f.ReadAt(b, 0); err != nil && int64(len(b)) != size {
		return nil, err
	}
	return x.decodeAbs(b, base), nil
}

func (x *index) decodeAbs(b []byte, base int64) []indexEntry {
	var es []indexEntry
	if x.entrySize == offsetIndexEntrySize {
		es = decodeOffsetIndex(b)
		for i := range es {
			es[i].key += base
		}
	} else {
		es = decodeTimeIndex(b)
		for i := range es {
			es[i].val += base
		}
	}
	return es
}

// entryAt reads entry i (absolute).
func (x *index) entryAt(i int64, base int64) (indexEntry, error) {
	b := x.scratch[:x.entrySize]
	if _, err := x.f.ReadAt(b, i*int64(x.entrySize)); err != nil {
		return indexEntry{}, err
	}
	if x.entrySize == offsetIndexEntrySize {
		return indexEntry{base + int64(int32(binary.BigEndian.Uint32(b))), int64(int32(binary.BigEndian.Uint32(b[4:])))}, nil
	}
	return indexEntry{int64(binary.BigEndian.Uint64(b)), base + int64(int32(binary.BigEndian.Uint32(b[8:])))}, nil
}

// floor returns the last entry whose key is <= key, or ok=false.
func (x *index) floor(key int64, base int64) (e indexEntry, ok bool, err error) {
	n := x.n.Load()
	if n == 0 {
		return e, false, nil
	}
	if n*int64(x.entrySize) <= indexSearchReadAll {
		b := make([]byte, n*int64(x.entrySize))
		if _, err := x.f.ReadAt(b, 0); err != nil {
			return e, false, err
		}
		for i := int64(0); i < n; i++ {
			var c indexEntry
			if x.entrySize == offsetIndexEntrySize {
				c = indexEntry{base + int64(int32(binary.BigEndian.Uint32(b[i*8:]))), int64(int32(binary.BigEndian.Uint32(b[i*8+4:])))}
			} else {
				c = indexEntry{int64(binary.BigEndian.Uint64(b[i*12:])), base + int64(int32(binary.BigEndian.Uint32(b[i*12+8:])))}
			}
			if c.key > key {
				break
			}
			e, ok = c, true
		}
		return e, ok, nil
	}
	lo, hi := int64(0), n-1 // invariant: answer in [lo-1, hi]
	for lo <= hi {
		mid := lo + (hi-lo)/2
		c, err := x.entryAt(mid, base)
		if err != nil {
			return e, false, err
		}
		if c.key <= key {
			e, ok = c, true
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return e, ok, nil
}
