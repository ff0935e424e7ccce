package recordbatch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// testBatch builds a small uncompressed batch with distinctive header values.
func testBatch(t testing.TB) []byte {
	t.Helper()
	b, err := Build(BatchSpec{BaseOffset: 0x0102030405060708, LeaderEpoch: 0x11223344, Codec: None,
		Transactional: true, BaseTimestamp: 1000, MaxTimestamp: 0, ProducerID: 0x0a0b0c0d0e0f1011,
		ProducerEpoch: 0x2122, BaseSequence: 0x31323334},
		[]Record{
			{TimestampDelta: 0, OffsetDelta: 0, Key: []byte("a"), Value: []byte("1")},
			{TimestampDelta: 7, OffsetDelta: 1, Key: []byte("b"), Value: []byte("2"),
				Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}},
		})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHeaderAccessors(t *testing.T) {
	b := testBatch(t)
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	// Check the layout byte by byte against the offsets of Kafka's
	// DefaultRecordBatch, independently of the accessors.
	be := binary.BigEndian
	raw := []struct {
		name string
		got  int64
		want int64
	}{
		{"baseOffset", int64(be.Uint64(b[0:])), 0x0102030405060708},
		{"batchLength", int64(be.Uint32(b[8:])), int64(len(b) - 12)},
		{"partitionLeaderEpoch", int64(be.Uint32(b[12:])), 0x11223344},
		{"magic", int64(b[16]), 2},
		{"crc", int64(be.Uint32(b[17:])), int64(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))},
		{"attributes", int64(be.Uint16(b[21:])), 0x10},
		{"lastOffsetDelta", int64(be.Uint32(b[23:])), 1},
		{"baseTimestamp", int64(be.Uint64(b[27:])), 1000},
		{"maxTimestamp", int64(be.Uint64(b[35:])), 1007},
		{"producerId", int64(be.Uint64(b[43:])), 0x0a0b0c0d0e0f1011},
		{"producerEpoch", int64(be.Uint16(b[51:])), 0x2122},
		{"baseSequence", int64(be.Uint32(b[53:])), 0x31323334},
		{"recordCount", int64(be.Uint32(b[57:])), 2},
	}
	for _, r := range raw {
		if r.got != r.want {
			t.Errorf("raw %s = %#x, want %#x", r.name, r.got, r.want)
		}
	}
	acc := []struct {
		name      string
		got, want any
	}{
		{"BaseOffset", h.BaseOffset(), int64(0x0102030405060708)},
		{"BatchLength", h.BatchLength(), int32(len(b) - 12)},
		{"Size", h.Size(), len(b)},
		{"LeaderEpoch", h.LeaderEpoch(), int32(0x11223344)},
		{"Magic", h.Magic(), int8(2)},
		{"CRC", h.CRC(), be.Uint32(b[17:])},
		{"Attributes", h.Attributes(), int16(0x10)},
		{"LastOffsetDelta", h.LastOffsetDelta(), int32(1)},
		{"LastOffset", h.LastOffset(), int64(0x0102030405060709)},
		{"BaseTimestamp", h.BaseTimestamp(), int64(1000)},
		{"MaxTimestamp", h.MaxTimestamp(), int64(1007)},
		{"ProducerID", h.ProducerID(), int64(0x0a0b0c0d0e0f1011)},
		{"ProducerEpoch", h.ProducerEpoch(), int16(0x2122)},
		{"BaseSequence", h.BaseSequence(), int32(0x31323334)},
		{"RecordCount", h.RecordCount(), int32(2)},
		{"Codec", h.Codec(), None},
		{"LogAppendTime", h.LogAppendTime(), false},
		{"Transactional", h.Transactional(), true},
		{"Control", h.Control(), false},
		{"HasDeleteHorizon", h.HasDeleteHorizon(), false},
	}
	for _, a := range acc {
		if a.got != a.want {
			t.Errorf("%s() = %v, want %v", a.name, a.got, a.want)
		}
	}
}

func TestHeaderAttributeBits(t *testing.T) {
	cases := []struct {
		attrs                      uint16
		codec                      Codec
		lat, txn, control, horizon bool
	}{
		{0x00, None, false, false, false, false},
		{0x01, Gzip, false, false, false, false},
		{0x02, Snappy, false, false, false, false},
		{0x03, LZ4, false, false, false, false},
		{0x04, Zstd, false, false, false, false},
		{0x07, Codec(7), false, false, false, false},
		{0x08, None, true, false, false, false},
		{0x10, None, false, true, false, false},
		{0x20, None, false, false, true, false},
		{0x40, None, false, false, false, true},
		{0x7c, Zstd, true, true, true, true},
		{0xff80, None, false, false, false, false}, // unused high bits
	}
	b := make([]byte, HeaderSize)
	for _, c := range cases {
		binary.BigEndian.PutUint16(b[offAttributes:], c.attrs)
		h := Header(b)
		if h.Codec() != c.codec || h.LogAppendTime() != c.lat || h.Transactional() != c.txn ||
			h.Control() != c.control || h.HasDeleteHorizon() != c.horizon {
			t.Errorf("attrs %#x: codec %v lat %v txn %v control %v horizon %v", c.attrs,
				h.Codec(), h.LogAppendTime(), h.Transactional(), h.Control(), h.HasDeleteHorizon())
		}
	}
}

func TestHeaderSetters(t *testing.T) {
	b := testBatch(t)
	h := Header(b)
	crc := h.CRC()

	// Outside the CRC: no recompute needed.
	h.SetBaseOffset(-7)
	h.SetLeaderEpoch(99)
	if h.BaseOffset() != -7 || h.LeaderEpoch() != 99 || h.CRC() != crc || h.CheckCRC() != nil {
		t.Fatalf("base offset %d epoch %d crc %#x/%#x: %v", h.BaseOffset(), h.LeaderEpoch(), h.CRC(), crc, h.CheckCRC())
	}

	h.SetMaxTimestamp(1007) // unchanged: no rewrite
	if h.CRC() != crc {
		t.Fatal("SetMaxTimestamp with the same value changed the CRC")
	}
	h.SetMaxTimestamp(5000)
	if h.MaxTimestamp() != 5000 || h.LogAppendTime() || h.CheckCRC() != nil || h.CRC() == crc {
		t.Fatalf("SetMaxTimestamp: %d %v", h.MaxTimestamp(), h.CheckCRC())
	}

	h.SetLogAppendTime(123456)
	if !h.LogAppendTime() || h.BaseTimestamp() != 1000 || h.MaxTimestamp() != 123456 || h.CheckCRC() != nil {
		t.Fatalf("SetLogAppendTime: lat %v base %d max %d crc %v", h.LogAppendTime(), h.BaseTimestamp(), h.MaxTimestamp(), h.CheckCRC())
	}
	if !h.Transactional() || h.Codec() != None {
		t.Fatal("SetLogAppendTime clobbered other attribute bits")
	}
	// Records still decode, and Validate reports the LogAppendTime.
	s, err := Validate(b, ValidateOptions{Origin: OriginInternal})
	if err != nil || s.MaxTimestamp != 123456 || s.MinTimestamp != 123456 {
		t.Fatalf("after SetLogAppendTime: %+v %v", s, err)
	}
}

func TestCRC(t *testing.T) {
	b := testBatch(t)
	h := Header(b)
	if err := h.CheckCRC(); err != nil {
		t.Fatal(err)
	}
	want := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))
	if h.ComputeCRC() != want || h.CRC() != want {
		t.Fatalf("crc %#x computed %#x want %#x", h.CRC(), h.ComputeCRC(), want)
	}
	binary.BigEndian.PutUint32(b[offCRC:], want^1)
	if err := h.CheckCRC(); !errors.Is(err, ErrCRC) {
		t.Fatalf("wrong stored crc: %v", err)
	}
	h.UpdateCRC()
	if h.CheckCRC() != nil || h.CRC() != want {
		t.Fatal("UpdateCRC did not restore the CRC")
	}
	// Trailing bytes beyond the batch are not covered.
	longer := append(append([]byte{}, b...), 0xde, 0xad)
	if err := Header(longer).CheckCRC(); err != nil {
		t.Fatalf("trailing bytes: %v", err)
	}
	if err := Header(b[:len(b)-1]).CheckCRC(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short: %v", err)
	}
	// An unparsed header with a negative length must not panic.
	bad := append([]byte{}, b...)
	binary.BigEndian.PutUint32(bad[offBatchLength:], 0xffffff00)
	if err := Header(bad).CheckCRC(); !errors.Is(err, ErrBadLength) {
		t.Fatalf("negative length: %v", err)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	good := testBatch(t)
	mod := func(f func(b []byte)) []byte {
		b := append([]byte{}, good...)
		f(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"16 bytes", good[:16], ErrTruncated},
		{"17 bytes", good[:17], nil}, // magic visible: not decided yet
		{"60 bytes", good[:60], ErrTruncated},
		{"magic 1", mod(func(b []byte) { b[16] = 1 }), ErrBadMagic},
		{"magic 3", mod(func(b []byte) { b[16] = 3 }), ErrBadMagic},
		{"magic -1", mod(func(b []byte) { b[16] = 0xff }), ErrBadMagic},
		{"length 48", mod(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 48) }), ErrBadLength},
		{"length 0", mod(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 0) }), ErrBadLength},
		{"length negative", mod(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 0x80000000) }), ErrBadLength},
		{"length 49 (empty records)", mod(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 49) }), nil},
	}
	for _, c := range cases {
		_, err := ParseHeader(c.b)
		if c.name == "17 bytes" {
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// TestTruncationAndFlips cuts a valid batch at every length and flips one
// byte in each header region and in the records, as etcd's TestReadRecord
// does, checking each error with errors.Is.
func TestTruncationAndFlips(t *testing.T) {
	good := testBatch(t)
	opts := ValidateOptions{MaxDecompressed: 1 << 20, Origin: OriginInternal}
	for n := 0; n < len(good); n++ {
		_, err := Validate(good[:n], opts)
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: %v, want ErrTruncated", n, err)
		}
		if _, err := Records(good[:n], 1<<20); !errors.Is(err, ErrTruncated) {
			t.Fatalf("Records cut at %d: %v", n, err)
		}
	}
	flips := []struct {
		region string
		off    int
		want   error
	}{
		{"baseOffset", 3, nil}, // not covered by the CRC (internal origin)
		{"batchLength", 11, ErrTruncated},
		{"batchLength high", 8, ErrBadLength}, // 0x80... is negative
		{"partitionLeaderEpoch", 14, nil},
		{"magic", 16, ErrBadMagic},
		{"crc", 18, ErrCRC},
		{"attributes", 22, ErrCRC},
		{"lastOffsetDelta", 26, ErrCRC},
		{"baseTimestamp", 30, ErrCRC},
		{"maxTimestamp", 40, ErrCRC},
		{"producerId", 45, ErrCRC},
		{"producerEpoch", 52, ErrCRC},
		{"baseSequence", 55, ErrCRC},
		{"recordCount", 60, ErrCRC},
		{"records", HeaderSize + 3, ErrCRC},
		{"last byte", len(good) - 1, ErrCRC},
	}
	for _, f := range flips {
		b := append([]byte{}, good...)
		b[f.off] ^= 0x80
		_, err := Validate(b, opts)
		if f.want == nil && err != nil || f.want != nil && !errors.Is(err, f.want) {
			t.Errorf("flip %s (byte %d): %v, want %v", f.region, f.off, err, f.want)
		}
		if f.want != nil && !IsCorruption(err) {
			t.Errorf("flip %s: %v is not a corruption", f.region, err)
		}
	}
}

// TestHeaderPrefixAccessors checks, over the golden vectors, that the
// accessors a scan uses read the documented bytes and need no more of the
// batch than PrefixSize (LogOverhead for the length): a header prefix
// gives the same values as the whole batch and as the raw layout.
func TestHeaderPrefixAccessors(t *testing.T) {
	be := binary.BigEndian
	for _, name := range []string{
		"kgo_none.bin", "kgo_zstd_large.bin", "kgo_idempotent.bin", "kgo_transactional.bin",
		"java_none.bin", "java_lz4_large.bin", "java_control_commit.bin", "java_control_abort.bin",
	} {
		t.Run(name, func(t *testing.T) {
			b := readGolden(t, name)
			whole := Header(b)
			prefix := Header(b[:PrefixSize:PrefixSize])
			lenOnly := Header(b[:LogOverhead:LogOverhead])
			cases := []struct {
				field         string
				prefix, whole any
				raw           any
			}{
				{"BaseOffset", prefix.BaseOffset(), whole.BaseOffset(), int64(be.Uint64(b[0:]))},
				{"BatchLength", lenOnly.BatchLength(), whole.BatchLength(), int32(be.Uint32(b[8:]))},
				{"Size", lenOnly.Size(), whole.Size(), len(b)},
				{"Magic", prefix.Magic(), whole.Magic(), int8(b[16])},
				{"LastOffsetDelta", prefix.LastOffsetDelta(), whole.LastOffsetDelta(), int32(be.Uint32(b[23:]))},
				{"LastOffset", prefix.LastOffset(), whole.LastOffset(),
					int64(be.Uint64(b[0:])) + int64(int32(be.Uint32(b[23:])))},
			}
			for _, c := range cases {
				if c.prefix != c.whole || c.whole != c.raw {
					t.Errorf("%s: prefix %v, whole %v, raw layout %v", c.field, c.prefix, c.whole, c.raw)
				}
			}
		})
	}
}
