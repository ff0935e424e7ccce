// Package recordbatch is the codec for Kafka's v2 RecordBatch (magic 2), the
// unit that clients produce, that partitions store byte for byte, and that
// fetches return. It is pure: functions over []byte, no files, clock or
// logger.
//
// A batch on the wire and on disk (big-endian):
//
//	offset  size  field
//	     0     8  baseOffset            assigned by the broker on append
//	     8     4  batchLength           bytes after this field (total - 12)
//	    12     4  partitionLeaderEpoch  stamped by the broker
//	    16     1  magic                 must be 2
//	    17     4  crc                   CRC-32C of bytes [21, end)
//	    21     2  attributes            bits 0-2 codec, 3 timestamp type,
//	                                    4 transactional, 5 control,
//	                                    6 delete horizon set
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp         (firstTimestamp)
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61     -  records               compressed as one block if codec != 0
//
// The CRC covers attributes to the end, so the broker may rewrite baseOffset
// and partitionLeaderEpoch without recomputing it; rewriting timestamps (for
// LogAppendTime topics) requires a new CRC.
//
// These offsets are part of Kafka's wire and disk format and must not change.
// Every other package reads header fields only through Header's accessors,
// never by these offsets. Each accessor reads only its own field's bytes, so
// a Header over a prefix of a batch serves every field the prefix covers:
// LogOverhead bytes give BatchLength and Size, PrefixSize bytes add
// BaseOffset, Magic, LastOffsetDelta and LastOffset (all a scan over stored
// batches needs).
//
// The package keeps two views of a batch: the wire bytes, which partitions
// store and fetches return untouched (Header, a zero-copy view with
// setters for what the broker rewrites), and the records after
// decompression (Records, ForEachRecord, Build). Validate checks a whole
// batch from a producer the way Kafka's produce path does, walking the
// records of an uncompressed batch in place and those of a compressed one
// in one streaming pass over the codec's output (inflate.go), without
// allocating per record; Recompress rebuilds a batch for another codec
// from the records Validate kept. Decompress and Compress implement the
// codecs with decompression bounded in memory.
//
// Errors are sentinels matched with errors.Is; errors.go says which Kafka
// error code each one becomes. Golden vectors from real clients (franz-go
// and Apache Kafka's Java client) live in testdata/.
package recordbatch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Wire-format constants.
const (
	// HeaderSize is the size of the fixed batch header, up to the records.
	HeaderSize = 61
	// LogOverhead is the size of baseOffset and batchLength, the part of
	// the header not counted by batchLength.
	LogOverhead = 12
	// Magic is the only batch format kcompatd accepts or stores.
	Magic = 2
	// PrefixSize is the size of the header prefix up to and including
	// lastOffsetDelta: what BaseOffset, BatchLength, Size, Magic,
	// LastOffsetDelta and LastOffset read.
	PrefixSize = offLastOffsetDelta + 4

	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// CRCStart is the first byte covered by the CRC.
	CRCStart = offAttributes
)

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrTimestampType = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// Codec is a batch compression codec, as in attributes bits 0-2.
type Codec int8

const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return "unknown"
}

// Sentinel errors. Callers match them with errors.Is.
var (
	// ErrTruncated means the bytes end before the batch does.
	ErrTruncated = errors.New("recordbatch: truncated batch")
	// ErrBadLength means batchLength is below the header size or above
	// what the caller allows.
	ErrBadLength = errors.New("recordbatch: invalid batch length")
	// ErrBadMagic means the magic byte is not 2.
	ErrBadMagic = errors.New("recordbatch: unsupported magic")
	// ErrCRC means the stored CRC does not match the bytes.
	ErrCRC = errors.New("recordbatch: crc mismatch")
)

// crcTable is Kafka's CRC-32C (Castagnoli).
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Header is a zero-copy view over the first HeaderSize bytes of a batch
// (it may be longer: the whole batch). Setters write through to the bytes.
// Accessors assume the bytes cover their field (HeaderSize covers all; see
// PrefixSize for scans): get a Header from ParseHeader when the bytes are
// untrusted.
type Header []byte

// ParseHeader checks that b starts with a plausible v2 batch header: at
// least HeaderSize bytes, magic 2, and a batchLength that covers the header.
// It does not check that the whole batch is present (see Size) nor the CRC.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < LogOverhead+5 {
		return nil, ErrTruncated
	}
	n := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if b[offMagic] != Magic {
		return nil, ErrBadMagic
	}
	if n < HeaderSize-LogOverhead {
		return nil, ErrBadLength
	}
	if len(b) < HeaderSize {
		return nil, ErrTruncated
	}
	return Header(b), nil
}

// Size is the whole batch's size in bytes: batchLength + LogOverhead.
func (h Header) Size() int { return int(h.BatchLength()) + LogOverhead }

func (h Header) BaseOffset() int64  { return int64(binary.BigEndian.Uint64(h[offBaseOffset:])) }
func (h Header) BatchLength() int32 { return int32(binary.BigEndian.Uint32(h[offBatchLength:])) }
func (h Header) LeaderEpoch() int32 { return int32(binary.BigEndian.Uint32(h[offLeaderEpoch:])) }
func (h Header) Magic() int8        { return int8(h[offMagic]) }
func (h Header) CRC() uint32        { return binary.BigEndian.Uint32(h[offCRC:]) }
func (h Header) Attributes() int16  { return int16(binary.BigEndian.Uint16(h[offAttributes:])) }
func (h Header) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(h[offLastOffsetDelta:]))
}
func (h Header) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(h[offBaseTimestamp:])) }
func (h Header) MaxTimestamp() int64  { return int64(binary.BigEndian.Uint64(h[offMaxTimestamp:])) }
func (h Header) ProducerID() int64    { return int64(binary.BigEndian.Uint64(h[offProducerID:])) }
func (h Header) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(h[offProducerEpoch:])) }
func (h Header) BaseSequence() int32  { return int32(binary.BigEndian.Uint32(h[offBaseSequence:])) }
func (h Header) RecordCount() int32   { return int32(binary.BigEndian.Uint32(h[offRecordCount:])) }

// LastOffset is the offset of the batch's last record (as assigned).
func (h Header) LastOffset() int64 { return h.BaseOffset() + int64(h.LastOffsetDelta()) }

// Codec is the compression codec in the attributes.
func (h Header) Codec() Codec { return Codec(h.Attributes() & attrCodecMask) }

// LogAppendTime reports whether the timestamp type bit says LogAppendTime.
func (h Header) LogAppendTime() bool { return h.Attributes()&attrTimestampType != 0 }

// Transactional reports the transactional bit.
func (h Header) Transactional() bool { return h.Attributes()&attrTransactional != 0 }

// Control reports the control-batch bit (transaction markers).
func (h Header) Control() bool { return h.Attributes()&attrControl != 0 }

// HasDeleteHorizon reports whether baseTimestamp holds the cleaner's delete
// horizon (KIP-534) rather than the first record's timestamp.
func (h Header) HasDeleteHorizon() bool { return h.Attributes()&attrDeleteHorizon != 0 }

// SetBaseOffset rewrites baseOffset (not covered by the CRC).
func (h Header) SetBaseOffset(o int64) { binary.BigEndian.PutUint64(h[offBaseOffset:], uint64(o)) }

// SetLeaderEpoch rewrites partitionLeaderEpoch (not covered by the CRC).
func (h Header) SetLeaderEpoch(e int32) { binary.BigEndian.PutUint32(h[offLeaderEpoch:], uint32(e)) }

// SetLogAppendTime sets the timestamp-type bit and stamps t as the max
// timestamp, then recomputes the CRC, as Kafka does in place for
// message.timestamp.type=LogAppendTime (DefaultRecordBatch.setMaxTimestamp).
// baseTimestamp keeps the first record's timestamp, as in Kafka's log;
// readers take every record's timestamp from maxTimestamp for such batches.
// REQUIRES: h is the whole batch.
func (h Header) SetLogAppendTime(t int64) {
	attrs := uint16(h.Attributes()) | attrTimestampType
	binary.BigEndian.PutUint16(h[offAttributes:], attrs)
	binary.BigEndian.PutUint64(h[offMaxTimestamp:], uint64(t))
	h.UpdateCRC()
}

// SetMaxTimestamp rewrites maxTimestamp and, if it changed, the CRC, as
// Kafka does for CreateTime batches whose header disagrees with the largest
// record timestamp (Summary.MaxTimestamp). REQUIRES: h is the whole batch.
func (h Header) SetMaxTimestamp(t int64) {
	if h.MaxTimestamp() == t {
		return
	}
	binary.BigEndian.PutUint64(h[offMaxTimestamp:], uint64(t))
	h.UpdateCRC()
}

// ComputeCRC returns the CRC-32C of the batch bytes the CRC covers.
// REQUIRES: h is the whole batch.
func (h Header) ComputeCRC() uint32 { return crc32.Checksum(h[CRCStart:h.Size()], crcTable) }

// CheckCRC returns ErrTruncated if h is shorter than Size, ErrCRC if the
// stored CRC is wrong, else nil.
func (h Header) CheckCRC() error {
	if h.Size() < HeaderSize {
		return ErrBadLength // an unparsed header: no CRC range to check
	}
	if len(h) < h.Size() {
		return ErrTruncated
	}
	if h.ComputeCRC() != h.CRC() {
		return ErrCRC
	}
	return nil
}

// UpdateCRC recomputes and stores the CRC. REQUIRES: h is the whole batch.
func (h Header) UpdateCRC() { binary.BigEndian.PutUint32(h[offCRC:], h.ComputeCRC()) }
