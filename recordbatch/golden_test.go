package recordbatch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Golden vectors: batches written by real clients (see golden_gen_test.go
// and testdata/java/GenGolden.java). Each is checked field by field against
// what that client was asked to write, not merely round-tripped.

const goldenBase = 1700000000000

// wantSmallRecords are the records of kgo_<codec>.bin and java_<codec>.bin.
func wantSmallRecords() []Record {
	return []Record{
		{TimestampDelta: 0, OffsetDelta: 0, Key: []byte("k0"), Value: bytes.Repeat([]byte("v0"), 100)},
		{TimestampDelta: 1, OffsetDelta: 1, Key: []byte("k1"), Value: []byte("hello"),
			Headers: []RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}},
		{TimestampDelta: 2, OffsetDelta: 2, Key: nil, Value: []byte("no key")},
		{TimestampDelta: 3, OffsetDelta: 3, Key: []byte("k3"), Value: nil},
		{TimestampDelta: -5, OffsetDelta: 4, Key: []byte{}, Value: []byte{}},
	}
}

func wantLargeRecords() []Record {
	recs := make([]Record, 100)
	for i := range recs {
		recs[i] = Record{TimestampDelta: int64(i), OffsetDelta: int32(i),
			Key: fmt.Appendf(nil, "key-%03d", i), Value: largeValue(i)}
	}
	return recs
}

// goldenHeader is the expected header of a vector.
type goldenHeader struct {
	baseOffset     int64
	leaderEpoch    int32
	attributes     int16
	lastDelta      int32
	baseTS, maxTS  int64
	producerID     int64
	producerEpoch  int16
	baseSequence   int32
	count          int32
	control, txn   bool
	codec          Codec
	minTS, nullKey int64 // Summary fields checked for the small set
}

func small(codec Codec, attrs int16, pid int64, epoch int16, seq int32) goldenHeader {
	return goldenHeader{leaderEpoch: -1, attributes: attrs, lastDelta: 4, baseTS: goldenBase,
		maxTS: goldenBase + 3, producerID: pid, producerEpoch: epoch, baseSequence: seq, count: 5,
		codec: codec, txn: attrs&attrTransactional != 0}
}

func large(codec Codec, pid int64, epoch int16, seq int32) goldenHeader {
	return goldenHeader{leaderEpoch: -1, attributes: int16(codec), lastDelta: 99, baseTS: goldenBase,
		maxTS: goldenBase + 99, producerID: pid, producerEpoch: epoch, baseSequence: seq, count: 100, codec: codec}
}

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGolden(t *testing.T) {
	const maxDecomp = 1 << 20
	controlRecord := func(typ byte) []Record {
		return []Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 5}}}
	}
	cases := []struct {
		file   string
		hdr    goldenHeader
		recs   []Record
		origin Origin
	}{
		// kgo writes base sequence 0 when not idempotent (Java writes -1).
		{"kgo_none.bin", small(None, 0, -1, -1, 0), wantSmallRecords(), OriginClient},
		{"kgo_gzip.bin", small(Gzip, 1, -1, -1, 0), wantSmallRecords(), OriginClient},
		{"kgo_snappy.bin", small(Snappy, 2, -1, -1, 0), wantSmallRecords(), OriginClient},
		{"kgo_lz4.bin", small(LZ4, 3, -1, -1, 0), wantSmallRecords(), OriginClient},
		{"kgo_zstd.bin", small(Zstd, 4, -1, -1, 0), wantSmallRecords(), OriginClient},
		{"kgo_none_large.bin", large(None, -1, -1, 0), wantLargeRecords(), OriginClient},
		{"kgo_gzip_large.bin", large(Gzip, -1, -1, 0), wantLargeRecords(), OriginClient},
		{"kgo_snappy_large.bin", large(Snappy, -1, -1, 0), wantLargeRecords(), OriginClient},
		{"kgo_lz4_large.bin", large(LZ4, -1, -1, 0), wantLargeRecords(), OriginClient},
		{"kgo_zstd_large.bin", large(Zstd, -1, -1, 0), wantLargeRecords(), OriginClient},
		// The second flush of an idempotent producer: sequence continues at 5.
		{"kgo_idempotent.bin", small(None, 0, 4242, 7, 5), wantSmallRecords(), OriginClient},
		{"kgo_transactional.bin", small(None, attrTransactional, 4242, 7, 0), wantSmallRecords(), OriginClient},

		{"java_none.bin", small(None, 0, 4242, 7, 0), wantSmallRecords(), OriginClient},
		{"java_gzip.bin", small(Gzip, 1, 4242, 7, 0), wantSmallRecords(), OriginClient},
		// xerial-framed snappy, as the Java producer sends it.
		{"java_snappy.bin", small(Snappy, 2, 4242, 7, 0), wantSmallRecords(), OriginClient},
		{"java_lz4.bin", small(LZ4, 3, 4242, 7, 0), wantSmallRecords(), OriginClient},
		// zstd-jni streaming: the frame does not declare its size.
		{"java_zstd.bin", small(Zstd, 4, 4242, 7, 0), wantSmallRecords(), OriginClient},
		{"java_none_large.bin", large(None, 4242, 7, 0), wantLargeRecords(), OriginClient},
		{"java_gzip_large.bin", large(Gzip, 4242, 7, 0), wantLargeRecords(), OriginClient},
		// Four xerial chunks of at most 32 KiB.
		{"java_snappy_large.bin", large(Snappy, 4242, 7, 0), wantLargeRecords(), OriginClient},
		{"java_lz4_large.bin", large(LZ4, 4242, 7, 0), wantLargeRecords(), OriginClient},
		{"java_zstd_large.bin", large(Zstd, 4242, 7, 0), wantLargeRecords(), OriginClient},
		// Transaction markers as Kafka writes them: key = version 0, type
		// (0 abort, 1 commit); value = version 0, coordinator epoch 5.
		{"java_control_commit.bin", goldenHeader{baseOffset: 100, leaderEpoch: 3, attributes: attrTransactional | attrControl,
			baseTS: goldenBase, maxTS: goldenBase, producerID: 4242, producerEpoch: 7, baseSequence: -1, count: 1,
			control: true, txn: true}, controlRecord(1), OriginInternal},
		{"java_control_abort.bin", goldenHeader{baseOffset: 200, leaderEpoch: 3, attributes: attrTransactional | attrControl,
			baseTS: goldenBase, maxTS: goldenBase, producerID: 4242, producerEpoch: 7, baseSequence: -1, count: 1,
			control: true, txn: true}, controlRecord(0), OriginInternal},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			b := readGolden(t, tc.file)
			h, err := ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.hdr
			got := goldenHeader{h.BaseOffset(), h.LeaderEpoch(), h.Attributes(), h.LastOffsetDelta(),
				h.BaseTimestamp(), h.MaxTimestamp(), h.ProducerID(), h.ProducerEpoch(), h.BaseSequence(),
				h.RecordCount(), h.Control(), h.Transactional(), h.Codec(), 0, 0}
			if got != w {
				t.Fatalf("header\n got %+v\nwant %+v", got, w)
			}
			if h.Size() != len(b) || h.Magic() != 2 || h.LogAppendTime() || h.HasDeleteHorizon() {
				t.Fatalf("size %d (len %d), magic %d, lat %v, dh %v", h.Size(), len(b), h.Magic(), h.LogAppendTime(), h.HasDeleteHorizon())
			}
			if err := h.CheckCRC(); err != nil {
				t.Fatal(err)
			}

			s, err := Validate(b, ValidateOptions{MaxDecompressed: maxDecomp, Origin: tc.origin})
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if s.Records != len(tc.recs) || s.Codec != w.codec || s.MaxTimestamp != w.maxTS {
				t.Fatalf("summary %+v", s)
			}
			if len(tc.recs) == 5 {
				want := Summary{Records: 5, Codec: w.codec, MaxTimestamp: goldenBase + 3, MinTimestamp: goldenBase - 5,
					OffsetDeltaOfMaxTimestamp: 3, NullKeyIndex: 2, RecordBytes: s.RecordBytes}
				if s != want {
					t.Fatalf("summary\n got %+v\nwant %+v", s, want)
				}
			}

			recs, err := Records(b, maxDecomp)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			if !reflect.DeepEqual(recs, tc.recs) {
				t.Fatalf("records differ:\n got %+v\nwant %+v", recs[:min(3, len(recs))], tc.recs[:min(3, len(tc.recs))])
			}

			// Our encoder must write the client's record bytes exactly.
			spec := h.Spec()
			spec.Codec = None
			rebuilt, err := Build(spec, recs)
			if err != nil {
				t.Fatal(err)
			}
			raw := b[HeaderSize:]
			if w.codec != None {
				if raw, err = Decompress(w.codec, raw, maxDecomp); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(rebuilt[HeaderSize:], raw) {
				t.Fatalf("re-encoded records differ from the client's")
			}
			if w.codec == None && !bytes.Equal(rebuilt, b) {
				t.Fatalf("rebuilt batch differs from the client's:\n got %x\nwant %x", rebuilt, b)
			}
			// Build with the codec and read back.
			spec.Codec = w.codec
			if rebuilt, err = Build(spec, recs); err != nil {
				t.Fatal(err)
			}
			back, err := Records(rebuilt, maxDecomp)
			if err != nil || !reflect.DeepEqual(back, tc.recs) {
				t.Fatalf("rebuilt with %v: %v", w.codec, err)
			}
		})
	}
}

// TestGoldenXerialFraming checks the Java vectors really are xerial framed
// (so the test above covers that path), with the chunking expected.
func TestGoldenXerialFraming(t *testing.T) {
	for _, tc := range []struct {
		file   string
		chunks int
	}{{"java_snappy.bin", 1}, {"java_snappy_large.bin", 4}} {
		b := readGolden(t, tc.file)[HeaderSize:]
		if !bytes.HasPrefix(b, xerialMagic) {
			t.Fatalf("%s: not xerial framed", tc.file)
		}
		n := 0
		for rest := b[xerialHeaderSize:]; len(rest) > 0; n++ {
			l := int(rest[0])<<24 | int(rest[1])<<16 | int(rest[2])<<8 | int(rest[3])
			rest = rest[4+l:]
		}
		if n != tc.chunks {
			t.Fatalf("%s: %d chunks, want %d", tc.file, n, tc.chunks)
		}
	}
}
