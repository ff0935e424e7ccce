package recordbatch

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// validateSeparate is Validate for an uncompressed batch done the plain
// way, the CRC over the whole batch before the walk: validatePlain must
// give the same summary and error.
func validateSeparate(b []byte, origin Origin) (Summary, error) {
	h, err := checkBatch(b, origin)
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Codec: h.Codec(), MaxTimestamp: -1, MinTimestamp: -1,
		OffsetDeltaOfMaxTimestamp: -1, NullKeyIndex: -1}
	return summarize(h, b[HeaderSize:], origin, s)
}

// checkPlainAgrees fails unless Validate and validateSeparate agree on b
// for both origins; b that is no uncompressed batch is not compared.
func checkPlainAgrees(t testing.TB, b []byte) {
	t.Helper()
	if len(b) < HeaderSize || Header(b).Codec() != None {
		return
	}
	for _, origin := range []Origin{OriginClient, OriginInternal} {
		got, gerr := Validate(b, ValidateOptions{MaxDecompressed: fuzzMax, Origin: origin})
		want, werr := validateSeparate(b, origin)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) || errors.Is(gerr, ErrCRC) != errors.Is(werr, ErrCRC) {
			t.Fatalf("origin %d: Validate %+v, %v; CRC first %+v, %v", origin, got, gerr, want, werr)
		}
	}
}

// TestValidatePlainErrorOrder: with the CRC and the walk in one pass, a
// bad CRC still wins over every later error, as in Kafka, and a good CRC
// lets the later error through; batches larger than crcChunk cover the
// CRC running ahead of the walk in pieces.
func TestValidatePlainErrorOrder(t *testing.T) {
	big := func(n int) []byte {
		var b []byte
		for i := 0; i < n; i++ {
			b = appendRecord(b, &Record{OffsetDelta: int32(i), TimestampDelta: int64(i),
				Key: []byte("key-0000"), Value: bytes.Repeat([]byte{byte(i)}, 1000)})
		}
		return b
	}
	// corrupt returns b with the byte at i changed, its CRC fixed or not.
	corrupt := func(b []byte, i int, fixCRC bool) []byte {
		b = append([]byte(nil), b...)
		b[i] ^= 0x40
		if fixCRC {
			Header(b).UpdateCRC()
		}
		return b
	}
	good := rawBatch(0, 0, 99, 100, -1, -1, big(100)) // ~100 KiB
	small := rawBatch(0, 0, 2, 3, -1, -1, recs(0, 1, 2))
	lastRecord := len(good) - RecordSize(&Record{OffsetDelta: 99, TimestampDelta: 99, Key: []byte("key-0000"), Value: make([]byte, 1000)})
	tests := []struct {
		name string
		b    []byte
		want error // nil: valid
	}{
		{"valid", good, nil},
		{"valid small", small, nil},
		{"bad CRC", corrupt(good, len(good)-1, false), ErrCRC},
		{"bad CRC in the header", corrupt(good, offMaxTimestamp, false), ErrCRC},
		{"first record's length corrupt, bad CRC", corrupt(good, HeaderSize, false), ErrCRC},
		{"first record's length corrupt", corrupt(good, HeaderSize, true), ErrCorruptRecords},
		{"last record corrupt, bad CRC", corrupt(good, lastRecord, false), ErrCRC},
		{"last record corrupt", corrupt(good, lastRecord, true), ErrCorruptRecords},
		{"count too large, bad CRC", corrupt(rawBatch(0, 0, 2, 1<<20, -1, -1, recs(0, 1, 2)), HeaderSize+1, false), ErrCRC},
		{"count too large", rawBatch(0, 0, 1<<20-1, 1<<20, -1, -1, recs(0, 1, 2)), ErrCorruptRecords},
		{"count and last delta differ, bad CRC", corrupt(rawBatch(0, 0, 5, 3, -1, -1, recs(0, 1, 2)), HeaderSize+1, false), ErrCRC},
		{"count and last delta differ", rawBatch(0, 0, 5, 3, -1, -1, recs(0, 1, 2)), ErrInvalidBatch},
		{"bytes after the records, bad CRC", corrupt(rawBatch(0, 0, 2, 3, -1, -1, append(recs(0, 1, 2), 0)), HeaderSize, false), ErrCRC},
		{"bytes after the records", rawBatch(0, 0, 2, 3, -1, -1, append(recs(0, 1, 2), 0)), ErrCorruptRecords},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate(tc.b, ValidateOptions{MaxDecompressed: fuzzMax})
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Validate: %v, want %v", err, tc.want)
			}
			checkPlainAgrees(t, tc.b)
		})
	}
}

// FuzzValidatePlain asserts Validate (CRC and walk in one pass) and
// validateSeparate agree exactly on arbitrary bytes. Most inputs fail
// the CRC; with fixCRC the target stores the right CRC first, so the
// walk's own checks are reached.
func FuzzValidatePlain(f *testing.F) {
	f.Add(rawBatch(0, 0, 2, 3, -1, -1, recs(0, 1, 2)), true)
	f.Add(rawBatch(0, 0, 0, 1, 7, 0, recs(0)), false)
	f.Add(rawBatch(5, 0, 2, 3, -1, -1, recs(0, 2, 3)), true)
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC && len(b) >= HeaderSize {
			if h := Header(b); h.Size() >= HeaderSize && h.Size() <= len(b) {
				h.UpdateCRC()
			}
		}
		checkPlainAgrees(t, b)
	})
}
