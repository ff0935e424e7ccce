package recordbatch

// Kafka's record fields use zigzag varints: "varint" is a zigzag int32 of at
// most 5 bytes, "varlong" a zigzag int64 of at most 10 (ByteUtils.java).
// Reading matches Java exactly: a continuation bit on the last allowed byte
// is an error, and bits that overflow the type in the last byte are dropped.

// readVarint decodes a varint at the start of b. n is the number of bytes
// read, 0 if b ends first, -1 if the varint is longer than 5 bytes.
func readVarint(b []byte) (v int32, n int) {
	if len(b) > 0 && b[0] < 0x80 { // one byte: most lengths and deltas
		u := uint32(b[0])
		return int32(u>>1) ^ -int32(u&1), 1
	}
	var u uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
	}
	return 0, -1
}

// readVarlong decodes a varlong at the start of b, with readVarint's n.
func readVarlong(b []byte) (v int64, n int) {
	var u uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, -1
}

func zigzag32(v int32) uint32 { return uint32(v<<1) ^ uint32(v>>31) }
func zigzag64(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func appendUvarint(b []byte, u uint64) []byte {
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func appendVarint(b []byte, v int32) []byte  { return appendUvarint(b, uint64(zigzag32(v))) }
func appendVarlong(b []byte, v int64) []byte { return appendUvarint(b, zigzag64(v)) }

func sizeUvarint(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func sizeVarint(v int32) int  { return sizeUvarint(uint64(zigzag32(v))) }
func sizeVarlong(v int64) int { return sizeUvarint(zigzag64(v)) }
