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
// bytes for two wire bytes). So a frame of n bytes may allocate up to
// n x costPerByte(type) while it is decoded, where costPerByte follows from
// the request's Go types alone (below): their largest element, once per
// level of nesting (the arrays being filled when the decode fails, plus
// the elements already read, each at least a byte), plus the tag maps in
// flexible versions and the string copies.
//
// Every request but Produce is refused (the connection closed, as for a
// frame above socket.request.max.bytes) when its frame exceeds
// maxDecodedBytes / costPerByte of its type and version: with 128 MiB
// that is 270-800 KiB for the flexible versions (the tag maps dominate)
// and up to 4 MiB for older ones; a Fetch v18 may name about 10,000
// partitions (340 KiB), an OffsetCommit v10 about 20,000. Produce frames carry
// their records as bytes, which kmsg does not copy: a pre-pass over the
// frame (produce_bound.go) counts its topics, partitions and tags and
// refuses one whose decoded form would exceed maxDecodedBytes, whatever
// its size. So decoding one request costs at most maxDecodedBytes beside
// its frame.
const maxDecodedBytes = 128 << 20

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
// decoding a value of type t.
func costPerByte(t reflect.Type, flexible bool) int {
	depth, widest := shape(t, 0)
	cost := (depth+1)*widest + 1 // arrays being filled and read, string copies
	if flexible {
		cost += tagMapBytes / 2
	}
	return cost
}

// shape returns the deepest nesting of arrays in t and the widest Go
// element of any of them.
func shape(t reflect.Type, seen int) (depth, widest int) {
	if seen > 16 { // kmsg's types are not recursive; a guard all the same
		return 0, 0
	}
	switch t.Kind() {
	case reflect.Pointer:
		return shape(t.Elem(), seen+1)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return 0, 0 // bytes: a slice of the frame
		}
		d, w := shape(t.Elem(), seen+1)
		return d + 1, max(w, int(t.Elem().Size()))
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			d, w := shape(f.Type, seen+1)
			depth, widest = max(depth, d), max(widest, w)
		}
	}
	return depth, widest
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
