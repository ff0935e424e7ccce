package protocol

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// How much memory decoding a request may take.
//
// kmsg sizes each array from the count the client sends, checked only
// against the bytes left (one byte per element): an array of count n
// allocates n Go elements (up to a few hundred bytes each) before any of
// them is read, and a tag section's unknown tags each cost a map (~336
// bytes for three wire bytes). So a frame of n bytes may allocate up to
// n x costPerByte(type) while it is decoded, where costPerByte follows from
// the request's Go types alone (below): the widest element of each level
// of nesting, plus the tag maps in flexible versions and the string copies.
//
// Every request but Produce is refused (the connection closed, as for a
// frame above socket.request.max.bytes) when its frame exceeds
// maxDecodedBytes / costPerByte of its type and version: with 256 MiB
// that is 583 KiB-2.3 MiB for the flexible versions (the tag maps
// dominate) and 1.9 MiB or more for older ones. Measured
// (TestBigLegitimateRequestsFit, at least 1.5x room at every version):
// OffsetCommit, ListOffsets, Fetch, OffsetFetch of 10,000 partitions
// (Fetch v18: 332 KB of a 1.08 MB limit), a Metadata of 20,000 topics of
// 30 characters (v12: 980 KB of 1.67 MB, so about 34,000 such topics at
// most), a DescribeConfigs of 10,000 topics. The worst a hostile frame
// can make kmsg allocate is maxDecodedBytes per request being decoded
// (one per connection at a time). Produce frames carry
// their records as bytes, which kmsg does not copy: a pre-pass over the
// frame (produce_bound.go) counts its topics, partitions and tags and
// refuses one whose decoded form would exceed maxDecodedBytes, whatever
// its size. So decoding one request costs at most maxDecodedBytes beside
// its frame.
const maxDecodedBytes = 256 << 20

// tagMapBytes is what kmsg's Tags spends on a struct's first unknown tag
// (a map with one entry, measured: 336 bytes), for at least two wire
// bytes (the tag's number and size).
const tagMapBytes = 336

// frameLimit is the largest frame of an API at a version whose decode
// stays within maxDecodedBytes; 0: no limit from the decode (Produce,
// bounded by its pre-pass).
func frameLimit(key, version int16) int {
	if key == kmsg.Produce.Int16() {
		return 0
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return 0
	}
	req.SetVersion(version)
	return maxDecodedBytes / costPerByte(reflect.TypeOf(req).Elem(), req.IsFlexible())
}

// costPerByte bounds the Go bytes kmsg may allocate per frame byte while
// decoding a value of type t. kmsg sizes an array from its count, checked
// only against the bytes left (one per element), so at each level of
// nesting of arrays (and of pointers to structs or strings, each
// allocated for at least its nullable marker byte) the elements allocated
// are at most the frame's bytes: the arrays already filled hold elements
// of at least a byte each, all before the header of the one being filled,
// whose count is at most the bytes after it. So a level costs at most
// B x its widest element, and the levels add up (levelBytes). Strings
// are copied (a byte each); bytes are slices of the frame. In flexible
// versions an unknown tag costs a map (tagMapBytes) for at least three
// wire bytes (the section's count, the tag's number and size), further
// tags of a section less (tagEntryBytes for two), and tag sections do not
// overlap in the frame: tagMapBytes/3 per byte, once.
func costPerByte(t reflect.Type, flexible bool) int {
	var widest []int
	levelBytes(t, 0, 0, &widest)
	cost := 1
	for _, w := range widest {
		cost += w
	}
	if flexible {
		cost += tagMapBytes / 3
	}
	return cost
}

// levelBytes records in (*widest)[level] the widest element allocated at
// each level of nesting of arrays and pointers in t.
func levelBytes(t reflect.Type, level, seen int, widest *[]int) {
	if seen > 16 { // kmsg's types are not recursive; a guard all the same
		return
	}
	alloc := func(elem reflect.Type) {
		for len(*widest) <= level {
			*widest = append(*widest, 0)
		}
		(*widest)[level] = max((*widest)[level], int(elem.Size()))
		levelBytes(elem, level+1, seen+1, widest)
	}
	switch t.Kind() {
	case reflect.Pointer:
		alloc(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() != reflect.Uint8 { // bytes: a slice of the frame
			alloc(t.Elem())
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				levelBytes(f.Type, level, seen+1, widest)
			}
		}
	}
}

// frameLimits[key][version] is frameLimit, computed once for the
// registered APIs.
var frameLimits = sync.OnceValue(func() map[int16][]int {
	out := make(map[int16][]int, len(apis))
	for key, a := range apis {
		ls := make([]int, a.max+1)
		for v := a.min; v <= a.max; v++ {
			ls[v] = frameLimit(key, v)
		}
		out[key] = ls
	}
	return out
})

// checkDecodeBound refuses a request body whose decoded form could take
// more than maxDecodedBytes (errDecodeBound, which closes the
// connection).
func checkDecodeBound(key, version int16, body []byte) error {
	if key == kmsg.Produce.Int16() {
		n, err := produceDecodedBytes(body, version)
		if err != nil {
			return fmt.Errorf("%w: key %d version %d: %v", errBody, key, version, err)
		}
		if n > maxDecodedBytes {
			return fmt.Errorf("%w: Produce v%d of %d bytes would take over %d bytes decoded (topic and partition entries, tags)", errDecodeBound, version, len(body), maxDecodedBytes)
		}
		return nil
	}
	ls := frameLimits()[key]
	if int(version) >= len(ls) || version < 0 {
		return nil
	}
	if lim := ls[version]; lim > 0 && len(body) > lim {
		return fmt.Errorf("%w: %s v%d of %d bytes (at most %d at this version, so that its decoded form stays within %d bytes)", errDecodeBound, kmsg.NameForKey(key), version, len(body), lim, maxDecodedBytes)
	}
	return nil
}
