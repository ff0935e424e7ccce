package recordbatch

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

var compressedCodecs = []Codec{Gzip, Snappy, LZ4, Zstd}

// codecBlock is the largest block the codecs write in (zstd's 128 KiB):
// records of 1.5 codecBlock are split between writes to the sink.
const codecBlock = 128 << 10

// sentinel names the package error err wraps ("" for nil), so two paths'
// errors can be compared by kind.
func sentinel(err error) string {
	if err == nil {
		return ""
	}
	for _, e := range []error{ErrTooLarge, ErrCorruptCompressed, ErrCorruptRecords, ErrInvalidBatch,
		ErrUnknownCodec, ErrTruncated, ErrBadLength, ErrBadMagic, ErrCRC} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "unclassified: " + err.Error()
}

// validateBoth validates b as a stream (no Keep) and inflated whole (with
// Keep), the pre-stream way; the two must agree on the error's kind and
// the summary.
func validateBoth(t testing.TB, b []byte, opts ValidateOptions) (Summary, error) {
	t.Helper()
	streamed, serr := Validate(b, opts)
	var kept []byte
	opts.Keep = &kept
	whole, werr := Validate(b, opts)
	if sentinel(serr) != sentinel(werr) {
		t.Fatalf("streamed: %v; inflated whole: %v", serr, werr)
	}
	if serr == nil && streamed != whole {
		t.Fatalf("summaries differ: streamed %+v, whole %+v", streamed, whole)
	}
	return streamed, serr
}

// TestValidateCompressedSameErrors: for every codec, a batch's records are
// validated with the errors of the uncompressed batch with the same
// records, streamed or inflated whole, including records larger than the
// stream's window and damage to the compressed bytes themselves.
func TestValidateCompressedSameErrors(t *testing.T) {
	okRecord := [][]byte{{0}, vi(0), vi(0), vi(1), []byte("k"), vi(1), []byte("v"), vi(0)}
	big := func(n int, deltas ...int32) []byte {
		var b []byte
		for _, d := range deltas {
			b = appendRecord(b, &Record{OffsetDelta: d, Key: []byte("key"), Value: bytes.Repeat([]byte{byte(d)}, n)})
		}
		return b
	}
	cases := []struct {
		name        string
		last, count int32
		records     []byte
	}{
		{"valid", 1, 2, recs(0, 1)},
		{"valid many", 299, 300, recs(func() []int32 {
			d := make([]int32, 300)
			for i := range d {
				d[i] = int32(i)
			}
			return d
		}()...)},
		{"records past the window", 2, 3, big(3*codecBlock/2, 0, 1, 2)},
		{"bad delta before the window's end", 2, 3, big(3*codecBlock/2, 1, 1, 2)},
		{"fewer records than count", 2, 3, recs(0, 1)},
		{"more records than count", 0, 1, recs(0, 1)},
		{"trailing byte", 1, 2, append(recs(0, 1), 0)},
		{"deltas not from 0", 1, 2, recs(1, 1)},
		{"gap in deltas", 1, 2, recs(0, 2)},
		{"record length past end", 0, 1, rawRecord(20, okRecord...)},
		{"big record length past end", 0, 1, rawRecord(codecBlock*3, okRecord...)},
		{"record length past the bound", 0, 1, rawRecord(1<<30, okRecord...)},
		{"record length negative", 0, 1, append(vi(-3), make([]byte, 8)...)},
		{"record length varint 6 bytes", 0, 1, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0, 0, 0}},
		{"varint cut at the end", 1, 2, append(recs(0), 0x80)},
		{"empty records", 0, 1, []byte{}},
		{"corrupt second record", 1, 2, append(recs(0), rawRecord(6, okRecord...)...)},
		{"count huge", 1<<30 - 1, 1 << 30, recs(0, 1)},
	}
	const limit = 1 << 20
	for _, c := range cases {
		plain := rawBatch(0, 0, c.last, c.count, -1, -1, c.records)
		_, want := Validate(plain, ValidateOptions{MaxDecompressed: limit})
		for _, codec := range compressedCodecs {
			z, err := Compress(codec, nil, c.records)
			if err != nil {
				t.Fatal(err)
			}
			b := rawBatch(0, uint16(codec), c.last, c.count, -1, -1, z)
			for _, origin := range []Origin{OriginClient, OriginInternal} {
				_, got := validateBoth(t, b, ValidateOptions{MaxDecompressed: limit, Origin: origin})
				if origin == OriginClient && sentinel(got) != sentinel(want) {
					t.Errorf("%s %v: %v; uncompressed: %v", c.name, codec, got, want)
				}
			}
			// The bound: exactly the inflated size passes the size check,
			// one byte less fails it, streamed or whole.
			if len(c.records) > 0 {
				_, err := validateBoth(t, b, ValidateOptions{MaxDecompressed: len(c.records) - 1})
				if !errors.Is(err, ErrTooLarge) {
					t.Errorf("%s %v: bound one byte short: %v", c.name, codec, err)
				}
				if _, err := validateBoth(t, b, ValidateOptions{MaxDecompressed: len(c.records)}); errors.Is(err, ErrTooLarge) {
					t.Errorf("%s %v: bound of the inflated size: %v", c.name, codec, err)
				}
			}
			// Damage the compressed bytes: cut them short, or flip a byte
			// near the end (a checksum, a trailer, the last block).
			for _, bad := range [][]byte{z[:len(z)/2], z[:len(z)-1], flipped(z, len(z)-2)} {
				validateBoth(t, rawBatch(0, uint16(codec), c.last, c.count, -1, -1, bad), ValidateOptions{MaxDecompressed: limit})
			}
		}
	}
}

func flipped(b []byte, i int) []byte {
	out := bytes.Clone(b)
	if i >= 0 && i < len(out) {
		out[i] ^= 0x55
	}
	return out
}

// TestValidateCompressedNoPerRecordAlloc: validating a compressed batch
// allocates the same with 10 records as with 1,000 (nothing per record),
// and a streamed batch's inflated records are never held whole.
func TestValidateCompressedNoPerRecordAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random, so pooled buffers are reallocated")
	}
	batch := func(c Codec, n int) []byte {
		rs := make([]Record, n)
		for i := range rs {
			rs[i] = Record{OffsetDelta: int32(i), Key: []byte("user-0001"), Value: largeValue(i),
				Headers: []RecordHeader{{Key: "trace", Value: []byte("abc")}}}
		}
		b, err := Build(BatchSpec{Codec: c, ProducerID: -1, BaseSequence: -1}, rs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range compressedCodecs {
		allocs := func(b []byte) float64 {
			return testing.AllocsPerRun(20, func() {
				if _, err := Validate(b, ValidateOptions{MaxDecompressed: 4 << 20}); err != nil {
					t.Fatal(err)
				}
			})
		}
		small, large := allocs(batch(c, 10)), allocs(batch(c, 1000))
		if large > small {
			t.Errorf("%v: %v allocations for 10 records, %v for 1000", c, small, large)
		}
	}
}

// TestRecompressFromKept: recompressing from the records Validate kept
// gives the batch that decoding and rebuilding it would.
func TestRecompressFromKept(t *testing.T) {
	for _, from := range append([]Codec{None}, compressedCodecs...) {
		rs := []Record{{Key: []byte("a"), Value: largeValue(1)}, {OffsetDelta: 1, Value: []byte("b"),
			Headers: []RecordHeader{{Key: "h", Value: nil}}}}
		b, err := Build(BatchSpec{Codec: from, BaseTimestamp: 5, ProducerID: 3, ProducerEpoch: 1, BaseSequence: 7}, rs)
		if err != nil {
			t.Fatal(err)
		}
		var kept []byte
		if _, err := Validate(b, ValidateOptions{MaxDecompressed: 1 << 20, Keep: &kept}); err != nil {
			t.Fatal(err)
		}
		for _, to := range append([]Codec{None}, compressedCodecs...) {
			got, err := Recompress(b, kept, to)
			if err != nil {
				t.Fatalf("%v to %v: %v", from, to, err)
			}
			if Header(got).Codec() != to {
				t.Fatalf("%v to %v: codec %v", from, to, Header(got).Codec())
			}
			want, _ := Records(b, 1<<20)
			back, err := Records(got, 1<<20)
			if err != nil || !reflect.DeepEqual(back, want) {
				t.Fatalf("%v to %v: records %v, %v", from, to, back, err)
			}
			gs, ws := Header(got).Spec(), Header(b).Spec()
			gs.Codec = from
			if gs != ws {
				t.Fatalf("%v to %v: header %+v, want %+v", from, to, gs, ws)
			}
		}
	}
}

// FuzzValidateStream checks the streaming validation of compressed
// batches against inflating them whole. The input is a codec, a record
// count, and either records to compress (mode even) or the compressed
// bytes themselves (mode odd, so damaged codec data is explored too).
// Invariants: no panic; the streamed and the whole validation agree on
// the error's kind and on the summary; only the package's errors; a
// batch accepted streamed is accepted by Records with the same count.
func FuzzValidateStream(f *testing.F) {
	for _, c := range compressedCodecs {
		f.Add(uint8(c), int32(2), uint8(0), recs(0, 1))
		z, _ := Compress(c, nil, recs(0, 1, 2))
		f.Add(uint8(c), int32(3), uint8(1), z)
	}
	for name, b := range goldenFiles(f) {
		if h, err := ParseHeader(b); err == nil && h.Codec() != None && len(b) < 64<<10 {
			f.Add(uint8(h.Codec()), h.RecordCount(), uint8(1), b[HeaderSize:])
			_ = name
		}
	}
	f.Fuzz(func(t *testing.T, codec uint8, count int32, mode uint8, data []byte) {
		c := Codec(codec%4 + 1)
		if count < 1 {
			count = 1
		}
		z := data
		if mode%2 == 0 {
			var err error
			if z, err = Compress(c, nil, data); err != nil {
				t.Fatal(err)
			}
		}
		b := rawBatch(0, uint16(c), count-1, count, -1, -1, z)
		for _, origin := range []Origin{OriginClient, OriginInternal} {
			s, err := validateBoth(t, b, ValidateOptions{MaxDecompressed: fuzzMax, Origin: origin})
			if err != nil && !knownError(err) {
				t.Fatalf("unclassified error: %v", err)
			}
			if err == nil {
				rs, rerr := Records(b, fuzzMax)
				if rerr != nil || len(rs) != s.Records {
					t.Fatalf("Validate: %d records; Records: %d, %v", s.Records, len(rs), rerr)
				}
			}
		}
	})
}
