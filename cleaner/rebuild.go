package cleaner

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// appendRebuilt appends the batch of spec and records to out, with
// maxTimestamp maxTs: the bytes recordbatch.Build writes followed by
// SetMaxTimestamp(maxTs), which is what a rebuilt batch always was, but
// encoded straight into out (a compressed batch's records through *raw,
// reused), so a pass does not allocate, and then copy, each batch it
// rebuilds. REQUIRES: records come from a batch that passed recordbatch's
// checks (offset deltas increasing, sizes within int32).
func appendRebuilt(out []byte, raw *[]byte, spec recordbatch.BatchSpec, records []recordbatch.Record, maxTs int64) ([]byte, error) {
	start := len(out)
	if spec.Codec == recordbatch.None {
		size := recordbatch.HeaderSize
		for i := range records {
			size += recordbatch.RecordSize(&records[i])
		}
		out = grow(out, size)[:start+recordbatch.HeaderSize]
		for i := range records {
			out = recordbatch.AppendRecord(out, &records[i])
		}
	} else {
		r := (*raw)[:0]
		for i := range records {
			r = recordbatch.AppendRecord(r, &records[i])
		}
		*raw = r
		var err error
		out, err = recordbatch.Compress(spec.Codec, grow(out, recordbatch.HeaderSize)[:start+recordbatch.HeaderSize], r)
		if err != nil {
			return nil, err
		}
	}
	b := out[start:]
	attrs := uint16(spec.Codec) // Build's attributes: the codec and the spec's flags
	if spec.LogAppendTime {
		attrs |= 0x08
	}
	if spec.Transactional {
		attrs |= 0x10
	}
	if spec.Control {
		attrs |= 0x20
	}
	if spec.DeleteHorizon {
		attrs |= 0x40
	}
	last := spec.LastOffsetDelta
	if len(records) > 0 {
		last = max(last, records[len(records)-1].OffsetDelta)
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(spec.BaseOffset))
	be.PutUint32(b[8:], uint32(len(b)-recordbatch.LogOverhead))
	be.PutUint32(b[12:], uint32(spec.LeaderEpoch))
	b[16] = recordbatch.Magic
	be.PutUint16(b[21:], attrs)
	be.PutUint32(b[23:], uint32(last))
	be.PutUint64(b[27:], uint64(spec.BaseTimestamp))
	be.PutUint64(b[35:], uint64(maxTs))
	be.PutUint64(b[43:], uint64(spec.ProducerID))
	be.PutUint16(b[51:], uint16(spec.ProducerEpoch))
	be.PutUint32(b[53:], uint32(spec.BaseSequence))
	be.PutUint32(b[57:], uint32(len(records)))
	be.PutUint32(b[17:], crc32.Checksum(b[recordbatch.CRCStart:], castagnoli))
	return out, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// grow makes room for n more bytes in b.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
	copy(nb, b)
	return nb
}
