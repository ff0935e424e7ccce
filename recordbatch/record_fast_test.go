package recordbatch

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
	"unsafe"
)

// before is what a Record holds before a parse, so a test sees any field
// a parser writes, even on failure.
var before = Record{Attributes: 9, TimestampDelta: 99, OffsetDelta: 999,
	Key: []byte("old key"), Value: []byte("old value"), Headers: []RecordHeader{{Key: "old"}}}

// sameSlice says a and b are the same slice: both nil or the same
// pointer, length and capacity.
func sameSlice(a, b []byte) bool {
	return (a == nil) == (b == nil) && len(a) == len(b) && cap(a) == cap(b) &&
		unsafe.SliceData(a) == unsafe.SliceData(b)
}

// checkAgree parses b with parseRecord (fast path first) and with
// parseRecordChecked and fails unless size, record and error are the same;
// it returns whether the fast path took the record.
func checkAgree(t testing.TB, b []byte, keepHeaders bool) bool {
	t.Helper()
	got, want := before, before
	fast := before
	fn := parseRecordFast(b, &fast)
	gn, gerr := parseRecord(b, &got, keepHeaders)
	wn, werr := parseRecordChecked(b, &want, keepHeaders)
	if gn != wn || (gerr == nil) != (werr == nil) ||
		(gerr != nil && (gerr.Error() != werr.Error() ||
			errors.Is(gerr, ErrCorruptRecords) != errors.Is(werr, ErrCorruptRecords))) {
		t.Fatalf("% x: parseRecord %d, %v; checked %d, %v", b, gn, gerr, wn, werr)
	}
	if !reflect.DeepEqual(got, want) || !sameSlice(got.Key, want.Key) || !sameSlice(got.Value, want.Value) {
		t.Fatalf("% x: parseRecord %+v; checked %+v", b, got, want)
	}
	switch {
	case fn == 0 && !reflect.DeepEqual(fast, before):
		t.Fatalf("% x: fast path declined but wrote %+v", b, fast)
	case fn != 0 && (fn != wn || werr != nil):
		t.Fatalf("% x: fast path took %d bytes; checked %d, %v", b, fn, wn, werr)
	}
	return fn != 0
}

func varintBytes(v int32) []byte  { return appendVarint(nil, v) }
func varlongBytes(v int64) []byte { return appendVarlong(nil, v) }

// TestParseRecordFastAgrees runs a table of record shapes, and every
// prefix of each (truncated records), through both parsers.
func TestParseRecordFastAgrees(t *testing.T) {
	kv := func(k, v []byte, ts int64, od int32) []byte {
		return appendRecord(nil, &Record{TimestampDelta: ts, OffsetDelta: od, Key: k, Value: v})
	}
	big := bytes.Repeat([]byte("v"), 1024)
	z := []byte{0}
	tests := []struct {
		name string
		b    []byte
		fast bool // the fast path takes it
	}{
		{"common 1 KiB", kv([]byte("key-0000"), big, 700, 700), true},
		{"tiny", kv([]byte("k"), []byte("v"), 0, 0), true},
		{"empty key and value", kv([]byte{}, []byte{}, 1, 1), true},
		{"null key", kv(nil, big, 0, 0), true},
		{"null value (tombstone)", kv([]byte("k"), nil, 0, 0), true},
		{"null key and value", kv(nil, nil, 0, 0), true},
		{"attributes set", rawRecord(-1, []byte{0x7f}, z, z, varintBytes(1), []byte("k"), varintBytes(-1), z), true},
		{"negative deltas", kv([]byte("k"), []byte("v"), -1, -1), true},
		{"two-byte negative deltas", kv([]byte("k"), []byte("v"), -8192, -8192), true},
		{"three-byte negative deltas", kv([]byte("k"), []byte("v"), -8193, -8193), false},
		{"two-byte deltas", kv([]byte("k"), []byte("v"), 8191, 8191), true},
		{"three-byte deltas", kv([]byte("k"), []byte("v"), 8192, 8192), false},
		{"large timestamp delta", kv([]byte("k"), []byte("v"), 1<<40, 0), false},
		{"min timestamp delta", kv([]byte("k"), []byte("v"), math.MinInt64, 0), false},
		{"max offset delta", kv([]byte("k"), []byte("v"), 0, math.MaxInt32), false},
		{"min offset delta", kv([]byte("k"), []byte("v"), 0, math.MinInt32), false},
		{"value of 8 KiB (3-byte lengths)", kv([]byte("k"), bytes.Repeat([]byte("v"), 8<<10), 0, 0), false},
		{"value just under 2-byte record length", kv(nil, bytes.Repeat([]byte("v"), 8180), 0, 0), true},
		{"non-minimal 2-byte key length", rawRecord(-1, z, z, z, []byte{0x82, 0x00}, []byte("k"), z, z), true},
		{"non-minimal 2-byte header count", rawRecord(-1, z, z, z, z, z, []byte{0x80, 0x00}), false},
		{"max-length varint (5 bytes)", rawRecord(-1, z, z, []byte{0x80, 0x80, 0x80, 0x80, 0x00}, z, z, z), false},
		{"varint too long (6 bytes)", rawRecord(-1, z, z, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, z, z, z), false},
		{"max-length varlong (10 bytes)", rawRecord(-1, z, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, z, z, z, z), false},
		{"varlong too long (11 bytes)", rawRecord(-1, z, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, z, z, z, z), false},
		{"max-length record length", append([]byte{0x8e, 0x80, 0x80, 0x80, 0x00}, rawRecord(-1, z, z, z, z, z, z)[1:]...), false},
		{"record length too long (6 bytes)", []byte{0x8e, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 0, 0, 0, 0}, false},
		{"negative record length", append(varintBytes(-6), 0, 0, 0, 0, 0, 0), false},
		{"record length below minimum", append(varintBytes(5), 0, 0, 0, 0, 0), false},
		{"record length past the end", append(varintBytes(100), 0, 0, 0, 0, 0, 0), false},
		{"bytes left in the record", rawRecord(-1, z, z, z, z, z, z, z), false},
		{"key length -2", rawRecord(-1, z, z, z, varintBytes(-2), z, z), false},
		{"value length -2", rawRecord(-1, z, z, z, z, varintBytes(-2), z), false},
		{"key past the record", rawRecord(-1, z, z, z, varintBytes(50), z, z), false},
		{"value past the record", rawRecord(-1, z, z, z, z, varintBytes(50), z), false},
		{"negative header count", rawRecord(-1, z, z, z, z, z, varintBytes(-1)), false},
		{"header count too large", rawRecord(-1, z, z, z, z, z, varintBytes(1000)), false},
		{"one header", rawRecord(-1, z, z, z, z, z, varintBytes(1), varintBytes(1), []byte("h"), varintBytes(1), []byte("v")), false},
		{"header with null value", rawRecord(-1, z, z, z, z, z, varintBytes(1), varintBytes(1), []byte("h"), varintBytes(-1)), false},
		{"header with null key", rawRecord(-1, z, z, z, z, z, varintBytes(1), varintBytes(-1), varintBytes(-1)), false},
		{"two headers", rawRecord(-1, z, z, z, z, z, varintBytes(2), z, z, z, varintBytes(-1)), false},
		{"large varlong timestamp", rawRecord(-1, z, varlongBytes(math.MaxInt64), z, z, z, z), false},
		{"empty", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, keep := range []bool{false, true} {
				if got := checkAgree(t, tc.b, keep); got != tc.fast {
					t.Errorf("fast path took it: %v, want %v", got, tc.fast)
				}
				// A record followed by more bytes (the next record).
				checkAgree(t, append(append([]byte(nil), tc.b...), 0x0e, 0, 0, 0, 0, 0, 0), keep)
				for i := range tc.b {
					checkAgree(t, tc.b[:i], keep)
				}
			}
		})
	}
}

// FuzzParseRecordFast asserts that parseRecord, with its fast path, and
// parseRecordChecked agree exactly (size, record, error text and class)
// on arbitrary bytes, record after record.
func FuzzParseRecordFast(f *testing.F) {
	f.Add(recs(0, 1, 2), false)
	f.Add(appendRecord(nil, &Record{Key: []byte("key-0000"), Value: bytes.Repeat([]byte("v"), 300)}), false)
	f.Add(appendRecord(nil, &Record{Value: []byte("v"), Headers: []RecordHeader{{Key: "h", Value: []byte("x")}}}), false)
	f.Add(rawRecord(-1, []byte{0}, []byte{0}, []byte{0x80, 0x80, 0x80, 0x80, 0x00}, []byte{1}, []byte{1}, []byte{0}), false)
	f.Fuzz(func(t *testing.T, b []byte, keepHeaders bool) {
		for len(b) > 0 {
			checkAgree(t, b, keepHeaders)
			var r Record
			n, err := parseRecordChecked(b, &r, keepHeaders)
			if err != nil {
				return
			}
			b = b[n:]
		}
	})
}
