package recordbatch

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BatchSpec is the header of a batch to build. Kafka's "none" values for
// the producer fields are NoProducerID, NoProducerEpoch and NoSequence.
type BatchSpec struct {
	BaseOffset  int64
	LeaderEpoch int32
	Codec       Codec
	// LogAppendTime sets the timestamp type; Transactional and Control set
	// their attribute bits.
	LogAppendTime, Transactional, Control bool
	// BaseTimestamp is the batch's firstTimestamp (the delete horizon when
	// DeleteHorizon is set). MaxTimestamp 0 means compute it from the
	// records (BaseTimestamp for a batch without records).
	BaseTimestamp, MaxTimestamp int64
	ProducerID                  int64
	ProducerEpoch               int16
	BaseSequence                int32
	// LastOffsetDelta is the batch's last offset delta when it is larger
	// than the last record's (or there are no records): the cleaner keeps
	// a batch's original last offset, as Kafka does, so a producer's last
	// sequence survives compaction.
	LastOffsetDelta int32
	// DeleteHorizon sets the attribute bit saying BaseTimestamp is the
	// cleaner's delete horizon (KIP-534).
	DeleteHorizon bool
}

// Build encodes a batch of records, filling in the lengths, lastOffsetDelta,
// record count and CRC. Offset deltas must strictly increase from >= 0
// (they need not be contiguous: cleaned batches keep their offsets).
func Build(spec BatchSpec, records []Record) ([]byte, error) {
	if spec.Codec < None || spec.Codec > Zstd {
		return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, spec.Codec)
	}
	size := 0
	prev := int64(-1)
	maxTS := int64(math.MinInt64)
	for i := range records {
		r := &records[i]
		if int64(r.OffsetDelta) <= prev {
			return nil, fmt.Errorf("%w: record %d has offset delta %d after %d", ErrCorruptRecords, i, r.OffsetDelta, prev)
		}
		prev = int64(r.OffsetDelta)
		if err := checkRecordSizes(r); err != nil {
			return nil, err
		}
		body := recordBodySize(r)
		size += sizeVarint(int32(body)) + body
		if size > math.MaxInt32-HeaderSize {
			return nil, fmt.Errorf("%w: records of more than %d bytes", ErrBadLength, size)
		}
		maxTS = max(maxTS, spec.BaseTimestamp+r.TimestampDelta)
	}

	var attrs uint16 = uint16(spec.Codec)
	if spec.LogAppendTime {
		attrs |= attrTimestampType
	}
	if spec.Transactional {
		attrs |= attrTransactional
	}
	if spec.Control {
		attrs |= attrControl
	}
	if spec.DeleteHorizon {
		attrs |= attrDeleteHorizon
	}
	// A rebuilt batch keeps its original lastOffsetDelta even when its
	// last records are gone (the cleaner), as Kafka's overrideLastOffset
	// does, so the producer's last sequence survives compaction.
	last := spec.LastOffsetDelta
	if len(records) > 0 {
		last = max(last, records[len(records)-1].OffsetDelta)
	}
	if spec.MaxTimestamp == 0 {
		spec.MaxTimestamp = spec.BaseTimestamp
		if len(records) > 0 {
			spec.MaxTimestamp = maxTS
		}
	}

	var b []byte
	if spec.Codec == None {
		b = make([]byte, HeaderSize, HeaderSize+size)
		for i := range records {
			b = appendRecord(b, &records[i])
		}
	} else {
		raw := make([]byte, 0, size)
		for i := range records {
			raw = appendRecord(raw, &records[i])
		}
		var err error
		b, err = Compress(spec.Codec, make([]byte, HeaderSize, HeaderSize+size/2+64), raw)
		if err != nil {
			return nil, err
		}
	}
	if len(b) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: batch of %d bytes", ErrBadLength, len(b))
	}
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(spec.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(spec.LeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], uint32(last))
	be.PutUint64(b[offBaseTimestamp:], uint64(spec.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(spec.MaxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(spec.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(spec.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(spec.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(len(records)))
	Header(b).UpdateCRC()
	return b, nil
}

// Spec returns the header's fields as a BatchSpec, for rebuilding a batch
// (recompressing it, or writing a cleaned copy) with the same header.
// MaxTimestamp is kept as stored; set it to 0 to recompute.
func (h Header) Spec() BatchSpec {
	return BatchSpec{
		BaseOffset:      h.BaseOffset(),
		LeaderEpoch:     h.LeaderEpoch(),
		Codec:           h.Codec(),
		LogAppendTime:   h.LogAppendTime(),
		Transactional:   h.Transactional(),
		Control:         h.Control(),
		BaseTimestamp:   h.BaseTimestamp(),
		MaxTimestamp:    h.MaxTimestamp(),
		ProducerID:      h.ProducerID(),
		ProducerEpoch:   h.ProducerEpoch(),
		BaseSequence:    h.BaseSequence(),
		LastOffsetDelta: h.LastOffsetDelta(),
		DeleteHorizon:   h.HasDeleteHorizon(),
	}
}

// Recompress rebuilds a validated batch with codec c, keeping its header
// fields and re-encoding its records, as Kafka's LogValidator does when the
// topic's compression.type names another codec than the producer's.
// records is the batch's records section already inflated (what
// ValidateOptions.Keep left), so the batch is not inflated again; for an
// uncompressed batch it is ignored and the records are read in place.
func Recompress(batch, records []byte, c Codec) ([]byte, error) {
	h, err := ParseHeader(batch)
	if err != nil {
		return nil, err
	}
	if h.Codec() == None {
		records = batch[HeaderSize:]
	}
	w, err := newRecordWalker(h, records, OriginInternal, true)
	if err != nil {
		return nil, err
	}
	recs := make([]Record, 0, w.count)
	for {
		var r Record
		ok, err := w.next(&r)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		recs = append(recs, r)
	}
	// Kafka's LogValidator builds the new batch without a delete
	// horizon (a producer's batch has none to keep).
	spec := h.Spec()
	spec.Codec, spec.DeleteHorizon = c, false
	return Build(spec, recs)
}
