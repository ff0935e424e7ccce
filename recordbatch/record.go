package recordbatch

import (
	"fmt"
	"math"
)

// A record inside a batch (DefaultRecord.java), after decompression:
//
//	length          varint   bytes after this field
//	attributes      int8     unused by Kafka, kept as sent
//	timestampDelta  varlong  from the batch's baseTimestamp
//	offsetDelta     varint   from the batch's baseOffset
//	keyLength       varint   -1 = null key
//	key             bytes
//	valueLength     varint   -1 = null value (a tombstone)
//	value           bytes
//	headerCount     varint
//	headers         per header: keyLength varint (>= 0), key (UTF-8),
//	                valueLength varint (-1 = null), value

// minRecordBody is the smallest record body: attributes and five one-byte
// varints. With its length varint a record takes at least 7 bytes, which
// bounds how many records a buffer can hold before anything is allocated.
const (
	minRecordBody = 6
	minRecordSize = minRecordBody + 1
)

// RecordHeader is one record header. Value nil means a null value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record of a batch, with its deltas as stored.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	// Key and Value: nil is null (length -1); empty non-nil is length 0.
	Key, Value []byte
	Headers    []RecordHeader
}

// recordReader walks the fields of one record body. A failed read sets
// err and every later read returns zero values, so callers check once.
type recordReader struct {
	b   []byte
	p   int
	err string
}

func (r *recordReader) varint(what string) int32 {
	if r.err != "" {
		return 0
	}
	v, n := readVarint(r.b[r.p:])
	if n <= 0 {
		r.err = what
		return 0
	}
	r.p += n
	return v
}

func (r *recordReader) varlong(what string) int64 {
	if r.err != "" {
		return 0
	}
	v, n := readVarlong(r.b[r.p:])
	if n <= 0 {
		r.err = what
		return 0
	}
	r.p += n
	return v
}

// bytes reads a length-prefixed field; nil for length -1 when nullable.
// Kafka treats any negative length as null; we accept only -1, as no
// client writes anything else.
func (r *recordReader) bytes(what string, nullable bool) []byte {
	n := r.varint(what)
	if r.err != "" {
		return nil
	}
	if n < 0 {
		if n != -1 || !nullable {
			r.err = what
		}
		return nil
	}
	if int(n) > len(r.b)-r.p {
		r.err = what
		return nil
	}
	v := r.b[r.p : r.p+int(n) : r.p+int(n)]
	r.p += int(n)
	return v
}

// parseRecord parses the record at the start of b into r and returns its
// size. Key, Value and header values alias b. With keepHeaders false the
// headers are checked but not stored, so parsing allocates nothing.
func parseRecord(b []byte, r *Record, keepHeaders bool) (int, error) {
	if n := parseRecordFast(b, r); n > 0 {
		return n, nil
	}
	return parseRecordChecked(b, r, keepHeaders)
}

// varint2 decodes a varint of one or two bytes at b[p:] and returns it
// with the position after it; p -1 for anything longer or cut short.
// Two bytes hold every length and delta of a record up to 8 KiB.
func varint2(b []byte, p int) (int32, int) {
	if p >= len(b) {
		return 0, -1
	}
	u := uint32(b[p])
	if u >= 0x80 {
		if p+1 >= len(b) || b[p+1] >= 0x80 {
			return 0, -1
		}
		u = u&0x7f | uint32(b[p+1])<<7
		p++
	}
	return int32(u>>1) ^ -int32(u&1), p + 1
}

// parseRecordFast parses the shape producers send, as parseRecord would:
// every varint one or two bytes, key and value lengths >= -1 and in
// bounds, no headers, nothing left over. For anything else it returns 0
// and leaves r alone, and the caller parses with parseRecordChecked,
// which also gives the error. The checked walk was most of the per-record
// cost in a produce profile (issue 15).
func parseRecordFast(b []byte, r *Record) int {
	size, n := varint2(b, 0)
	if n < 0 || size < minRecordBody || int(size) > len(b)-n {
		return 0
	}
	body := b[n : n+int(size)]
	ts, p := varint2(body, 1)
	if p < 0 {
		return 0
	}
	od, p := varint2(body, p)
	if p < 0 {
		return 0
	}
	key, p := bytes2(body, p)
	if p < 0 {
		return 0
	}
	value, p := bytes2(body, p)
	// The header count: zero, the last byte of the body.
	if p < 0 || p != len(body)-1 || body[p] != 0 {
		return 0
	}
	r.Attributes = int8(body[0])
	r.TimestampDelta = int64(ts)
	r.OffsetDelta = od
	r.Key, r.Value, r.Headers = key, value, nil
	return n + int(size)
}

// bytes2 reads a nullable length-prefixed field whose length varint has
// one or two bytes, as recordReader.bytes does; p -1 where it would fail
// or the varint is longer.
func bytes2(b []byte, p int) ([]byte, int) {
	l, p := varint2(b, p)
	switch {
	case p < 0 || l < -1:
		return nil, -1
	case l == -1:
		return nil, p
	case int(l) > len(b)-p:
		return nil, -1
	}
	return b[p : p+int(l) : p+int(l)], p + int(l)
}

// parseRecordChecked is parseRecord for any record, every field checked
// with the full varint readers.
func parseRecordChecked(b []byte, r *Record, keepHeaders bool) (int, error) {
	size, n := readVarint(b)
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad record length varint", ErrCorruptRecords)
	}
	if size < minRecordBody || int(size) > len(b)-n {
		return 0, recordLengthError(size, len(b)-n)
	}
	body := b[n : n+int(size)]
	rd := recordReader{b: body, p: 1}
	r.Attributes = int8(body[0])
	r.TimestampDelta = rd.varlong("timestamp delta")
	r.OffsetDelta = rd.varint("offset delta")
	r.Key = rd.bytes("key", true)
	r.Value = rd.bytes("value", true)
	count := rd.varint("header count")
	r.Headers = nil
	if rd.err == "" && (count < 0 || int(count) > (len(body)-rd.p)/2) {
		// Each header takes at least two bytes: this bounds the allocation.
		rd.err = "header count"
	}
	if keepHeaders && count > 0 && rd.err == "" {
		r.Headers = make([]RecordHeader, 0, count)
	}
	for i := int32(0); i < count && rd.err == ""; i++ {
		k := rd.bytes("header key", false)
		v := rd.bytes("header value", true)
		if keepHeaders && rd.err == "" {
			r.Headers = append(r.Headers, RecordHeader{Key: string(k), Value: v})
		}
	}
	if rd.err != "" {
		return 0, fmt.Errorf("%w: bad %s", ErrCorruptRecords, rd.err)
	}
	if rd.p != len(body) {
		return 0, fmt.Errorf("%w: record length %d but fields take %d", ErrCorruptRecords, size, rd.p)
	}
	return n + int(size), nil
}

// recordLengthError says a record's length is impossible: below the
// smallest record, or past the left bytes that follow its length varint.
func recordLengthError(size int32, left int) error {
	return fmt.Errorf("%w: record length %d with %d bytes left", ErrCorruptRecords, size, left)
}

func sizeBytesField(b []byte) int {
	if b == nil {
		return 1 // varint -1
	}
	return sizeVarint(int32(len(b))) + len(b)
}

// recordBodySize is the size of r after its length varint.
func recordBodySize(r *Record) int {
	n := 1 + sizeVarlong(r.TimestampDelta) + sizeVarint(r.OffsetDelta) +
		sizeBytesField(r.Key) + sizeBytesField(r.Value) + sizeVarint(int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += sizeVarint(int32(len(h.Key))) + len(h.Key) + sizeBytesField(h.Value)
	}
	return n
}

func appendBytesField(b, v []byte) []byte {
	if v == nil {
		return appendVarint(b, -1)
	}
	return append(appendVarint(b, int32(len(v))), v...)
}

// appendRecord appends r in wire form. REQUIRES: every length fits an
// int32 (checkRecordSizes).
func appendRecord(b []byte, r *Record) []byte {
	b = appendVarint(b, int32(recordBodySize(r)))
	b = append(b, byte(r.Attributes))
	b = appendVarlong(b, r.TimestampDelta)
	b = appendVarint(b, r.OffsetDelta)
	b = appendBytesField(b, r.Key)
	b = appendBytesField(b, r.Value)
	b = appendVarint(b, int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		b = appendVarint(b, int32(len(h.Key)))
		b = append(b, h.Key...)
		b = appendBytesField(b, h.Value)
	}
	return b
}

// checkRecordSizes rejects a record whose encoding would not fit Kafka's
// int32 lengths.
func checkRecordSizes(r *Record) error {
	const max = math.MaxInt32 - 64
	total := len(r.Key) + len(r.Value) + len(r.Headers)
	for i := range r.Headers {
		total += len(r.Headers[i].Key) + len(r.Headers[i].Value)
		if total > max {
			break
		}
	}
	if total > max {
		return fmt.Errorf("%w: record of %d bytes does not fit a batch", ErrBadLength, total)
	}
	return nil
}

// AppendRecord appends r in wire form (its length varint first), as
// Build writes each record. REQUIRES: r comes from a batch that passed
// this package's checks, so every length fits an int32.
func AppendRecord(b []byte, r *Record) []byte { return appendRecord(b, r) }

// RecordSize is the size AppendRecord writes for r.
func RecordSize(r *Record) int {
	body := recordBodySize(r)
	return sizeVarint(int32(body)) + body
}
