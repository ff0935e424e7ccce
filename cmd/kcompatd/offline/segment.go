package offline

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// Batch framing as Kafka's FileLogInputStream reads a .log file: the
// offset, length and magic (17 bytes) first; a length below Kafka's
// smallest record overhead is corruption; a batch that runs past the end
// of the file ends the iteration, its bytes left over as trailing bytes.
const (
	headerUpToMagic   = recordbatch.LogOverhead + 5
	minRecordOverhead = 14 // LegacyRecord.RECORD_OVERHEAD_V0
)

// segReader walks the batches of one .log file, opened read-only, one
// batch in memory at a time.
type segReader struct {
	f    io.ReaderAt
	path string
	size int64
	pos  int64 // position of the batch next returns
	buf  []byte
	// maxDecompressed bounds one batch's records after decompression.
	maxDecompressed int
}

func openSegment(path string) (*segReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return &segReader{f: f, path: path, size: st.Size(), maxDecompressed: defaultMaxDecompressed}, nil
}

// memSegment is a segReader over bytes (tests and fuzzing).
func memSegment(path string, b []byte) *segReader {
	return &segReader{f: bytes.NewReader(b), path: path, size: int64(len(b)), maxDecompressed: defaultMaxDecompressed}
}

func (s *segReader) close() {
	if c, ok := s.f.(io.Closer); ok {
		c.Close()
	}
}

// next returns the batch at s.pos, valid until the next call. io.EOF
// means no whole batch starts there: the end of the file, or trailing
// bytes (s.size - s.pos of them).
func (s *segReader) next() ([]byte, error) { return s.batchAt(s.pos, s.size) }

func (s *segReader) advance(n int) { s.pos += int64(n) }

// batchAt reads the batch at pos if it ends by end.
func (s *segReader) batchAt(pos, end int64) ([]byte, error) {
	if pos < 0 || pos+headerUpToMagic >= end {
		return nil, io.EOF
	}
	var hdr [headerUpToMagic]byte
	if _, err := s.f.ReadAt(hdr[:], pos); err != nil {
		return nil, fmt.Errorf("%s: reading the batch at position %d: %w", s.path, pos, err)
	}
	length := int64(int32(binary.BigEndian.Uint32(hdr[8:])))
	if length < minRecordOverhead {
		return nil, fmt.Errorf("Found record size %d smaller than minimum record overhead (%d) in file %s at position %d.", length, minRecordOverhead, s.path, pos)
	}
	size := length + recordbatch.LogOverhead
	if pos+size > end {
		return nil, io.EOF
	}
	if m := hdr[16]; m != recordbatch.Magic {
		return nil, fmt.Errorf("%s: batch at position %d has magic %d; only magic 2 (Kafka 0.11 and later) is supported", s.path, pos, int8(m))
	}
	if size < recordbatch.HeaderSize {
		return nil, fmt.Errorf("%s: batch at position %d is %d bytes, shorter than a v2 batch header (%d)", s.path, pos, size, recordbatch.HeaderSize)
	}
	if size > maxBatchBytes {
		return nil, fmt.Errorf("%s: batch at position %d is %d bytes, more than the %d this tool reads", s.path, pos, size, maxBatchBytes)
	}
	if int64(cap(s.buf)) < size {
		s.buf = make([]byte, size)
	}
	b := s.buf[:size]
	if _, err := s.f.ReadAt(b, pos); err != nil {
		return nil, fmt.Errorf("%s: reading the batch at position %d: %w", s.path, pos, err)
	}
	return b, nil
}

// lastOffsetAt is the last offset of the batch at pos, which must end
// within maxSize bytes of it (kafka-dump-log's --max-message-size).
func (s *segReader) lastOffsetAt(pos int64, maxSize int) (int64, error) {
	end := min(s.size, pos+int64(maxSize))
	b, err := s.batchAt(pos, end)
	if err == io.EOF {
		return 0, fmt.Errorf("no whole batch within %d bytes of position %d of %s (%d bytes)", maxSize, pos, s.path, s.size)
	}
	if err != nil {
		return 0, err
	}
	return recordbatch.Header(b).LastOffset(), nil
}

// batchContaining scans from pos for the first batch whose last offset
// is at least offset, and returns its header (nil if none) and the
// largest timestamp of its records.
func (s *segReader) batchContaining(pos, offset int64) (recordbatch.Header, int64, error) {
	for {
		b, err := s.batchAt(pos, s.size)
		if err != nil {
			return nil, 0, err
		}
		h := recordbatch.Header(b)
		if h.LastOffset() < offset {
			pos += int64(len(b))
			continue
		}
		maxTs, err := maxRecordTimestamp(b, nil, s.maxDecompressed)
		if err != nil {
			return nil, 0, fmt.Errorf("batch at position %d: %w", pos, err)
		}
		return append(recordbatch.Header(nil), h[:recordbatch.HeaderSize]...), maxTs, nil
	}
}

// maxRecordTimestamp checks the records of a whole batch and returns the
// largest of their timestamps (-1 if none), as Kafka's tool computes it
// to check a time index entry; scratch as in ForEachRecordScratch.
func maxRecordTimestamp(b []byte, scratch *[]byte, maxDecompressed int) (int64, error) {
	h := recordbatch.Header(b)
	maxTs := int64(-1)
	err := recordbatch.ForEachRecordScratch(b, scratch, maxDecompressed, func(r recordbatch.Record) error {
		ts := h.BaseTimestamp() + r.TimestampDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp()
		}
		maxTs = max(maxTs, ts)
		return nil
	})
	return maxTs, err
}
