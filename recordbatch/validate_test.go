package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// rawBatch writes a batch header around raw record bytes (already
// compressed if codec != None), with the CRC right, so tests can present
// records the builder would refuse to write.
func rawBatch(baseOffset int64, attrs uint16, lastDelta, count int32, pid int64, seq int32, records []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(records))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(baseOffset))
	be.PutUint32(b[offBatchLength:], uint32(HeaderSize-LogOverhead+len(records)))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	be.PutUint64(b[offBaseTimestamp:], 1000)
	be.PutUint64(b[offMaxTimestamp:], 1000)
	be.PutUint64(b[offProducerID:], uint64(pid))
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], uint32(seq))
	be.PutUint32(b[offRecordCount:], uint32(count))
	b = append(b, records...)
	Header(b).UpdateCRC()
	return b
}

// recs encodes records with the given offset deltas.
func recs(deltas ...int32) []byte {
	var b []byte
	for _, d := range deltas {
		b = appendRecord(b, &Record{OffsetDelta: d, TimestampDelta: int64(d), Key: []byte("k"), Value: []byte("v")})
	}
	return b
}

// rawRecord encodes one record body from raw field bytes, with a correct
// length prefix unless length >= 0 overrides it.
func rawRecord(length int32, fields ...[]byte) []byte {
	body := bytes.Join(fields, nil)
	if length < 0 {
		length = int32(len(body))
	}
	return append(appendVarint(nil, length), body...)
}

func vi(v int32) []byte { return appendVarint(nil, v) }

func TestValidateCases(t *testing.T) {
	zstdRecs := func(b []byte) []byte { out, _ := Compress(Zstd, nil, b); return out }
	okRecord := [][]byte{{0}, vi(0), vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(0)}
	withField := func(i int, f []byte) []byte {
		fs := append([][]byte{}, okRecord...)
		fs[i] = f
		return rawRecord(-1, fs...)
	}
	cases := []struct {
		name     string
		b        []byte
		client   error // want from OriginClient
		internal error // want from OriginInternal
	}{
		{"valid", rawBatch(0, 0, 1, 2, -1, -1, recs(0, 1)), nil, nil},
		{"valid idempotent", rawBatch(0, 0, 1, 2, 7, 0, recs(0, 1)), nil, nil},
		{"valid zstd", rawBatch(0, 4, 1, 2, -1, -1, zstdRecs(recs(0, 1))), nil, nil},
		{"fewer records than count", rawBatch(0, 0, 2, 3, -1, -1, recs(0, 1)), ErrCorruptRecords, ErrCorruptRecords},
		{"more records than count", rawBatch(0, 0, 0, 1, -1, -1, recs(0, 1)), ErrCorruptRecords, ErrCorruptRecords},
		{"more records than count zstd", rawBatch(0, 4, 0, 1, -1, -1, zstdRecs(recs(0, 1))), ErrCorruptRecords, ErrCorruptRecords},
		{"count 0 (cleaner's empty batch)", rawBatch(0, 0, 5, 0, 7, 3, nil), ErrInvalidBatch, nil},
		{"count 0 delta -1", rawBatch(0, 0, -1, 0, -1, -1, nil), ErrInvalidBatch, nil},
		{"count negative", rawBatch(0, 0, 0, -1, -1, -1, recs(0)), ErrInvalidBatch, ErrCorruptRecords},
		{"count huge", rawBatch(0, 0, math.MaxInt32-1, math.MaxInt32, -1, -1, recs(0)), ErrCorruptRecords, ErrCorruptRecords},
		{"lastOffsetDelta max", rawBatch(0, 0, math.MaxInt32, 1, -1, -1, recs(0)), ErrInvalidBatch, nil}, // internal: a compacted batch keeps its lastOffsetDelta
		{"lastOffsetDelta vs count", rawBatch(0, 0, 2, 2, -1, -1, recs(0, 1)), ErrInvalidBatch, nil},     // internal: a compacted batch keeps its lastOffsetDelta
		{"gap in deltas", rawBatch(0, 0, 2, 2, -1, -1, recs(0, 2)), ErrInvalidBatch, nil},
		{"gap in deltas, count-consistent", rawBatch(0, 0, 1, 2, -1, -1, recs(0, 2)), ErrCorruptRecords, ErrCorruptRecords},
		{"deltas not from 0", rawBatch(0, 0, 1, 2, -1, -1, recs(1, 1)), ErrCorruptRecords, ErrCorruptRecords},
		{"deltas decreasing", rawBatch(0, 0, 1, 2, -1, -1, recs(1, 0)), ErrCorruptRecords, ErrCorruptRecords},
		{"last delta short of header", rawBatch(0, 0, 3, 2, -1, -1, recs(0, 2)), ErrInvalidBatch, nil}, // internal: a compacted batch keeps its lastOffsetDelta
		{"base offset from producer", rawBatch(5, 0, 1, 2, -1, -1, recs(0, 1)), ErrInvalidBatch, nil},
		{"control from producer", rawBatch(0, attrControl|attrTransactional, 0, 1, 7, -1, recs(0)), ErrInvalidBatch, nil},
		{"producer id without sequence", rawBatch(0, 0, 1, 2, 7, -1, recs(0, 1)), ErrInvalidBatch, nil},
		{"unknown codec 5", rawBatch(0, 5, 1, 2, -1, -1, recs(0, 1)), ErrUnknownCodec, ErrUnknownCodec},
		{"unknown codec 7", rawBatch(0, 7, 1, 2, -1, -1, recs(0, 1)), ErrUnknownCodec, ErrUnknownCodec},
		{"gzip garbage", rawBatch(0, 1, 0, 1, -1, -1, []byte("not gzip at all")), ErrCorruptCompressed, ErrCorruptCompressed},
		{"zstd empty", rawBatch(0, 4, 0, 1, -1, -1, nil), ErrCorruptCompressed, ErrCorruptCompressed},
		{"zstd over bound", rawBatch(0, 4, 0, 1, -1, -1, zstdRecs(make([]byte, 2<<20))), ErrTooLarge, ErrTooLarge},
		{"record length past end", rawBatch(0, 0, 0, 1, -1, -1, rawRecord(20, okRecord...)), ErrCorruptRecords, ErrCorruptRecords},
		{"record length short of fields", rawBatch(0, 0, 0, 1, -1, -1, append(rawRecord(6, okRecord...), 0, 0)), ErrCorruptRecords, ErrCorruptRecords},
		{"record length long of fields", rawBatch(0, 0, 0, 1, -1, -1, rawRecord(9, append(okRecord, []byte{0})...)), ErrCorruptRecords, ErrCorruptRecords},
		{"record length negative", rawBatch(0, 0, 0, 1, -1, -1, append(vi(-3), make([]byte, 8)...)), ErrCorruptRecords, ErrCorruptRecords},
		{"record length varint 6 bytes", rawBatch(0, 0, 0, 1, -1, -1, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0, 0, 0}), ErrCorruptRecords, ErrCorruptRecords},
		{"timestamp varlong unterminated", rawBatch(0, 0, 0, 1, -1, -1, rawRecord(-1, []byte{0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80})), ErrCorruptRecords, ErrCorruptRecords},
		{"key length -2", rawBatch(0, 0, 0, 1, -1, -1, withField(3, vi(-2))), ErrCorruptRecords, ErrCorruptRecords},
		{"key length past record", rawBatch(0, 0, 0, 1, -1, -1, withField(3, vi(50))), ErrCorruptRecords, ErrCorruptRecords},
		{"value length past record", rawBatch(0, 0, 0, 1, -1, -1, withField(5, vi(9))), ErrCorruptRecords, ErrCorruptRecords},
		{"header count negative", rawBatch(0, 0, 0, 1, -1, -1, withField(7, vi(-1))), ErrCorruptRecords, ErrCorruptRecords},
		{"header count past record", rawBatch(0, 0, 0, 1, -1, -1, withField(7, vi(1000))), ErrCorruptRecords, ErrCorruptRecords},
		{"header key null", rawBatch(0, 0, 0, 1, -1, -1, withField(7, append(vi(1), append(vi(-1), vi(-1)...)...))), ErrCorruptRecords, ErrCorruptRecords},
		{"header value null", rawBatch(0, 0, 0, 1, -1, -1, withField(7, append(vi(1), append(vi(1), append([]byte("h"), vi(-1)...)...)...))), nil, nil},
		{"trailing bytes", append(rawBatch(0, 0, 1, 2, -1, -1, recs(0, 1)), 0), ErrBadLength, ErrBadLength},
		{"truncated", rawBatch(0, 0, 1, 2, -1, -1, recs(0, 1))[:70], ErrTruncated, ErrTruncated},
	}
	for _, c := range cases {
		for _, o := range []struct {
			origin Origin
			want   error
		}{{OriginClient, c.client}, {OriginInternal, c.internal}} {
			s, err := Validate(c.b, ValidateOptions{MaxDecompressed: 1 << 20, Origin: o.origin})
			if o.want == nil && err != nil || o.want != nil && !errors.Is(err, o.want) {
				t.Errorf("%s (origin %d): %v, want %v", c.name, o.origin, err, o.want)
				continue
			}
			if err != nil {
				continue
			}
			// Records agrees with Validate.
			rs, rerr := Records(c.b, 1<<20)
			if rerr != nil || len(rs) != s.Records {
				t.Errorf("%s: Records: %d records, %v; Validate said %d", c.name, len(rs), rerr, s.Records)
			}
		}
	}
}

func TestValidateNeedsBound(t *testing.T) {
	b, err := Build(BatchSpec{Codec: Gzip, ProducerID: -1, BaseSequence: -1}, []Record{{Value: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(b, ValidateOptions{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("compressed batch with no bound: %v", err)
	}
}

func TestSummary(t *testing.T) {
	b, err := Build(BatchSpec{BaseTimestamp: 1000, ProducerID: -1, BaseSequence: -1}, []Record{
		{OffsetDelta: 0, TimestampDelta: 5, Key: []byte("a")},
		{OffsetDelta: 1, TimestampDelta: -3, Key: []byte("b")},
		{OffsetDelta: 2, TimestampDelta: 9, Key: nil},
		{OffsetDelta: 3, TimestampDelta: 9, Key: nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	if h := Header(b); h.MaxTimestamp() != 1009 || h.LastOffsetDelta() != 3 || h.RecordCount() != 4 {
		t.Fatalf("Build header: max %d last %d count %d", h.MaxTimestamp(), h.LastOffsetDelta(), h.RecordCount())
	}
	s, err := Validate(b, ValidateOptions{MaxDecompressed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Records: 4, Codec: None, MaxTimestamp: 1009, MinTimestamp: 997,
		OffsetDeltaOfMaxTimestamp: 2, NullKeyIndex: 2, RecordBytes: len(b) - HeaderSize}
	if s != want {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
}

func TestBuild(t *testing.T) {
	// Gaps in offset deltas (a cleaned batch) are kept.
	b, err := Build(BatchSpec{BaseOffset: 100, Codec: LZ4, ProducerID: 3, ProducerEpoch: 1, BaseSequence: 10},
		[]Record{{OffsetDelta: 2, Value: []byte("a")}, {OffsetDelta: 7, Value: []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	h := Header(b)
	if h.LastOffsetDelta() != 7 || h.RecordCount() != 2 || h.LastOffset() != 107 || h.Codec() != LZ4 {
		t.Fatalf("header: last %d count %d codec %v", h.LastOffsetDelta(), h.RecordCount(), h.Codec())
	}
	if _, err := Validate(b, ValidateOptions{MaxDecompressed: 1 << 10, Origin: OriginInternal}); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(b, ValidateOptions{MaxDecompressed: 1 << 10}); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("client origin: %v", err)
	}
	// An empty batch keeps the given last offset delta.
	b, err = Build(BatchSpec{BaseOffset: 50, LastOffsetDelta: 4, BaseTimestamp: 77, ProducerID: 9, BaseSequence: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h = Header(b)
	if h.LastOffset() != 54 || h.RecordCount() != 0 || h.MaxTimestamp() != 77 || len(b) != HeaderSize {
		t.Fatalf("empty: last %d count %d max %d len %d", h.LastOffset(), h.RecordCount(), h.MaxTimestamp(), len(b))
	}
	if rs, err := Records(b, 0); err != nil || len(rs) != 0 {
		t.Fatalf("empty Records: %v %v", rs, err)
	}
	// Attribute bits.
	b, err = Build(BatchSpec{Codec: Zstd, LogAppendTime: true, Transactional: true, Control: true, DeleteHorizon: true},
		[]Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if a := Header(b).Attributes(); a != 4|attrTimestampType|attrTransactional|attrControl|attrDeleteHorizon {
		t.Fatalf("attributes %#x", a)
	}
	for _, bad := range [][]Record{
		{{OffsetDelta: 1}, {OffsetDelta: 1}},
		{{OffsetDelta: 2}, {OffsetDelta: 1}},
		{{OffsetDelta: -1}},
	} {
		if _, err := Build(BatchSpec{}, bad); !errors.Is(err, ErrCorruptRecords) {
			t.Errorf("deltas %v: %v", bad, err)
		}
	}
	if _, err := Build(BatchSpec{Codec: 6}, nil); !errors.Is(err, ErrUnknownCodec) {
		t.Errorf("codec 6: %v", err)
	}
}

func TestForEachRecord(t *testing.T) {
	b := readGolden(t, "java_snappy_large.bin")
	n := 0
	stop := errors.New("stop")
	err := ForEachRecord(b, 1<<20, func(r Record) error {
		if r.OffsetDelta != int32(n) || !bytes.Equal(r.Value, largeValue(n)) {
			t.Fatalf("record %d: delta %d", n, r.OffsetDelta)
		}
		n++
		if n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Fatalf("err %v after %d records", err, n)
	}
}

// TestValidateUncompressedNoAlloc: the produce hot path walks an
// uncompressed batch without allocating.
func TestValidateUncompressedNoAlloc(t *testing.T) {
	b := readGolden(t, "kgo_none_large.bin")
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := Validate(b, ValidateOptions{MaxDecompressed: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Validate allocated %v times per uncompressed batch", allocs)
	}
}
