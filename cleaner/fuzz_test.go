package cleaner

import (
	"errors"
	"testing"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// bytesLog is a Log whose only segment holds the given bytes.
type bytesLog struct{ b []byte }

func (l bytesLog) Topic() string                     { return "f" }
func (l bytesLog) Partition() int32                  { return 0 }
func (l bytesLog) Config() partition.LogConfig       { return partition.DefaultLogConfig() }
func (l bytesLog) Offsets() partition.Offsets        { return partition.Offsets{} }
func (l bytesLog) Segments() []partition.SegmentInfo { return nil }
func (l bytesLog) ReadSegment(base int64, p []byte, off int64) (int, error) {
	if off >= int64(len(l.b)) {
		return 0, errors.New("past the end")
	}
	return copy(p, l.b[off:]), nil
}
func (l bytesLog) CreateCleanedSegment(int64) (vfs.File, error) { return nil, errors.New("no") }
func (l bytesLog) RemoveCleanedSegment(int64)                   {}
func (l bytesLog) ReplaceSegments([]int64, int64) error         { return errors.New("no") }
func (l bytesLog) WriteCleanedTxnIndex(int64, []partition.AbortedTxnEntry) error {
	return errors.New("no")
}
func (l bytesLog) DeleteSegmentsBefore(int64) (int, error) { return 0, errors.New("no") }
func (l bytesLog) Deleted() bool                           { return false }

// LastRecordsOfActiveProducers makes the seeds' producer 3 active, its
// last data batch ending at offset 2.
func (l bytesLog) LastRecordsOfActiveProducers() map[int64]partition.ProducerLastRecord {
	return map[int64]partition.ProducerLastRecord{3: {LastDataOffset: 2, Epoch: 0}}
}

// FuzzFilterSegment feeds arbitrary segment bytes through the reader, the
// header scan, the offset map and the batch filter. Invariants: never a
// panic or a hang; every batch the filter writes parses, has a valid CRC
// and keeps its base offset.
func FuzzFilterSegment(f *testing.F) {
	for _, c := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		b, _ := recordbatch.Build(recordbatch.BatchSpec{Codec: c, BaseTimestamp: 1, ProducerID: 3, ProducerEpoch: 0, BaseSequence: 0},
			[]recordbatch.Record{{Key: []byte("a"), Value: []byte("1")}, {OffsetDelta: 1, Key: []byte("a")}, {OffsetDelta: 2, Value: []byte("x")}})
		f.Add(b)
	}
	m, _ := recordbatch.BuildEndTxnMarker(5, 0, 1, 3, 0, recordbatch.EndTxnMarker{})
	f.Add(m)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Fix up the CRCs so the fuzzer explores past the reader's check.
		for rest := data; len(rest) >= recordbatch.HeaderSize; {
			h, err := recordbatch.ParseHeader(rest)
			if err != nil || h.Size() > len(rest) {
				break
			}
			recordbatch.Header(rest[:h.Size()]).UpdateCRC()
			rest = rest[h.Size():]
		}
		l := bytesLog{data}
		cfg := DefaultConfig()
		p := &pass{log: l, cfg: l.Config(), now: 1000, opts: &cfg, offsetMap: newOffsetMap(1 << 12), abort: func() bool { return false }}
		p.segs = []partition.SegmentInfo{{BaseOffset: 0, NextOffset: 1 << 40, Size: int64(len(data))}, {BaseOffset: 1 << 40, Active: true}}
		if err := p.scanLog(); err != nil {
			return
		}
		p.rng = cleanRange{firstDirty: 0, firstUncleanable: 1 << 40}
		if err := p.buildMap(); err != nil {
			return
		}
		p.active = l.LastRecordsOfActiveProducers()
		txn := newTxnMetadata(p.scan.aborted)
		r := newSegmentReader(l, 0, int64(len(data)), nil, &throttler{clock: clock.Real{}}, nil)
		for {
			b, _, err := r.next()
			if err != nil || b == nil {
				return
			}
			out, err := p.filterBatch(b, txn, nil)
			if err != nil {
				return
			}
			for len(out) > 0 {
				h, err := recordbatch.ParseHeader(out)
				if err != nil {
					t.Fatalf("output does not parse: %v", err)
				}
				if err := h.CheckCRC(); err != nil {
					t.Fatalf("output CRC: %v", err)
				}
				if h.BaseOffset() != recordbatch.Header(b).BaseOffset() {
					t.Fatalf("base offset %d became %d", recordbatch.Header(b).BaseOffset(), h.BaseOffset())
				}
				if _, err := recordbatch.Records(out[:h.Size()], 1<<26); err != nil {
					t.Fatalf("output records: %v", err)
				}
				out = out[h.Size():]
			}
		}
	})
}
