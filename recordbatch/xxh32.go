package recordbatch

import (
	"encoding/binary"
	"math/bits"
)

// xxh32 is the 32-bit xxHash of b with seed 0, which the lz4 frame format
// uses for its header, block and content checksums. pierrec/lz4 keeps its
// own in an internal package, so we have ours.

const (
	xxhPrime1 uint32 = 2654435761
	xxhPrime2 uint32 = 2246822519
	xxhPrime3 uint32 = 3266489917
	xxhPrime4 uint32 = 668265263
	xxhPrime5 uint32 = 374761393
)

func xxhRound(acc, lane uint32) uint32 {
	return bits.RotateLeft32(acc+lane*xxhPrime2, 13) * xxhPrime1
}

func xxh32(b []byte) uint32 {
	n := len(b)
	var h uint32
	if n >= 16 {
		// Four lanes over 16-byte stripes (the seed is 0).
		p1 := xxhPrime1 // a variable: the sums wrap, as constants may not
		v1 := p1 + xxhPrime2
		v2 := xxhPrime2
		v3 := uint32(0)
		v4 := -p1
		for ; len(b) >= 16; b = b[16:] {
			v1 = xxhRound(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = xxhRound(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = xxhRound(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = xxhRound(v4, binary.LittleEndian.Uint32(b[12:]))
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) +
			bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = xxhPrime5
	}
	h += uint32(n)
	for ; len(b) >= 4; b = b[4:] {
		h += binary.LittleEndian.Uint32(b) * xxhPrime3
		h = bits.RotateLeft32(h, 17) * xxhPrime4
	}
	for _, c := range b {
		h += uint32(c) * xxhPrime5
		h = bits.RotateLeft32(h, 11) * xxhPrime1
	}
	h ^= h >> 15
	h *= xxhPrime2
	h ^= h >> 13
	h *= xxhPrime3
	h ^= h >> 16
	return h
}
