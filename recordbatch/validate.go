package recordbatch

import (
	"fmt"
	"hash/crc32"
	"math"
	"sync"
)

// Origin says who wrote a batch, as Kafka's AppendOrigin does: batches from
// producers get extra checks that the broker's own batches would fail.
type Origin int8

const (
	// OriginClient is a batch from a Produce request (AppendOrigin.CLIENT):
	// base offset 0, no control batches, at least one record, offset deltas
	// exactly 0..n-1, and a base sequence when there is a producer id.
	OriginClient Origin = iota
	// OriginInternal is a batch the broker wrote itself or read back from
	// its log: transaction markers (control batches), cleaned batches whose
	// offset deltas have gaps, and the empty batches the cleaner keeps to
	// preserve producer state.
	OriginInternal
)

// Kafka's "none" values for the producer fields of a batch.
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
	NoSequence      int32 = -1
)

// ValidateOptions bound what Validate accepts.
type ValidateOptions struct {
	// MaxDecompressed bounds the records of a compressed batch after
	// decompression, in bytes; > 0. Kafka has no such bound (it inflates
	// as a stream); choose it well above max.message.bytes times a
	// typical compression ratio.
	MaxDecompressed int
	// Origin selects the rules; the zero value is OriginClient.
	Origin Origin
	// Keep, if not nil, makes Validate inflate a compressed batch whole
	// into (*Keep)[:0], reusing its capacity, and leave the records
	// section there (the caller recompresses from it, see Recompress);
	// an uncompressed batch leaves *Keep untouched. Without it gzip, lz4
	// and zstd batches are validated as a stream and never held whole.
	Keep *[]byte
	// OnInflate, if not nil, is called each time Validate inflates the
	// batch (a seam for tests that count inflations).
	OnInflate func()
}

// Summary is what Validate learned on the way, for the caller.
type Summary struct {
	// Records is the number of records (equal to the header's count).
	Records int
	// Codec is the batch's compression codec.
	Codec Codec
	// MaxTimestamp is the largest record timestamp (baseTimestamp +
	// timestampDelta), or the header's maxTimestamp for a LogAppendTime
	// batch; Kafka rewrites the header to this value for CreateTime.
	// MinTimestamp is the smallest. Both are -1 when there are no records.
	MaxTimestamp, MinTimestamp int64
	// OffsetDeltaOfMaxTimestamp is the offset delta of the first record
	// with MaxTimestamp (-1 when there are no records).
	OffsetDeltaOfMaxTimestamp int32
	// NullKeyIndex is the index of the first record with a null key, -1 if
	// every record has a key (compacted topics require keys).
	NullKeyIndex int
	// RecordBytes is the size of the records section after decompression.
	RecordBytes int
}

// bufPool holds decompression buffers for Validate, which only looks at
// the records and can give the buffer back.
var bufPool sync.Pool // *[]byte

// maxPooledBuf keeps rare huge buffers out of the pool.
const maxPooledBuf = 16 << 20

// Validate fully checks one whole batch from an untrusted client, as Kafka's
// produce path does for magic 2 (ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords, LogValidator, DefaultRecordBatch):
// exact size (len(b) == Size()), magic, CRC, known codec, records that
// decompress within the bound and parse with every length in bounds, a
// record count equal to the records present with no bytes left over, and
// offset deltas 0..n-1 in order with lastOffsetDelta n-1 (OriginClient) or
// strictly increasing within lastOffsetDelta (OriginInternal).
//
// It does not check topic policy (max.message.bytes, keys on compacted
// topics, timestamp bounds): Summary carries what those need.
//
// Deliberate differences from Kafka, all about input no client sends: Kafka
// ignores bytes after the last whole batch and accepts negative key/value
// lengths other than -1 as null, and for uncompressed batches it does not
// check record offset deltas; we reject all of these.
//
// An uncompressed batch is walked in place, in the pass of its CRC
// (validatePlain), a compressed one in one pass over its inflated bytes
// (see inflate.go); neither allocates per record.
func Validate(b []byte, opts ValidateOptions) (Summary, error) {
	h, err := checkFraming(b, opts.Origin)
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Codec: h.Codec(), MaxTimestamp: -1, MinTimestamp: -1,
		OffsetDeltaOfMaxTimestamp: -1, NullKeyIndex: -1}
	if s.Codec == None {
		return validatePlain(h, opts.Origin, s)
	}
	if err := checkSealed(h, opts.Origin); err != nil {
		return Summary{}, err
	}
	data := b[HeaderSize:]
	if opts.MaxDecompressed <= 0 {
		return Summary{}, fmt.Errorf("%w: MaxDecompressed must be > 0", ErrTooLarge)
	}
	if opts.OnInflate != nil {
		opts.OnInflate()
	}
	switch {
	case opts.Keep != nil:
		if data, err = decompress(s.Codec, *opts.Keep, data, opts.MaxDecompressed); err != nil {
			return Summary{}, err
		}
		*opts.Keep = data
	case s.Codec == Snappy:
		// A raw snappy block has no stream form: inflate it whole
		// into a pooled buffer (its size is checked before).
		pooled, _ := bufPool.Get().(*[]byte)
		if pooled == nil {
			pooled = new([]byte)
		}
		data, err = decompress(s.Codec, *pooled, data, opts.MaxDecompressed)
		if err != nil {
			bufPool.Put(pooled)
			return Summary{}, err
		}
		if cap(data) <= maxPooledBuf {
			*pooled = data[:0]
		}
		defer bufPool.Put(pooled)
	default:
		return validateStream(h, data, opts, s)
	}
	return summarize(h, data, opts.Origin, s)
}

// summarize walks the records of h in data (whole, inflated if need be)
// and returns s completed.
func summarize(h Header, data []byte, origin Origin, s Summary) (Summary, error) {
	w, err := newRecordWalker(h, data, origin, false)
	if err != nil {
		return Summary{}, err
	}
	acc := newSummarizer(h, &s)
	var r Record
	for {
		ok, err := w.next(&r)
		if err != nil {
			return Summary{}, err
		}
		if !ok {
			break
		}
		acc.add(&r)
	}
	s.RecordBytes = len(data)
	s.Records = int(h.RecordCount())
	return s, nil
}

// summarizer accumulates a Summary from the records, in order.
type summarizer struct {
	s          *Summary
	i          int
	base       int64 // the batch's base timestamp
	logAppend  bool  // LogAppendTime: every record's timestamp is appendTime
	appendTime int64
}

func newSummarizer(h Header, s *Summary) summarizer {
	return summarizer{s: s, base: h.BaseTimestamp(), logAppend: h.LogAppendTime(), appendTime: h.MaxTimestamp()}
}

func (a *summarizer) add(r *Record) {
	s := a.s
	if r.Key == nil && s.NullKeyIndex < 0 {
		s.NullKeyIndex = a.i
	}
	ts := a.base + r.TimestampDelta
	if a.logAppend {
		ts = a.appendTime
	}
	if a.i == 0 || ts > s.MaxTimestamp {
		s.MaxTimestamp, s.OffsetDeltaOfMaxTimestamp = ts, r.OffsetDelta
	}
	if a.i == 0 || ts < s.MinTimestamp {
		s.MinTimestamp = ts
	}
	a.i++
}

// crcAhead is how far the CRC of validatePlain runs ahead of the record
// walk: beyond the end of a common record, so the walk reads lines the CRC
// has just brought into cache; crcChunk is how much it takes at a time.
const (
	crcAhead = 4 << 10
	crcChunk = 16 << 10
)

// validatePlain is Validate for an uncompressed batch that passed
// checkFraming. It computes the CRC and walks the records in one pass, the
// CRC a little ahead: a batch in a large Produce frame is out of the
// caches, and a walk after a CRC over the whole batch (1 MiB from a
// producer) would miss again on every record. Errors keep Kafka's order:
// any error after the CRC is returned only once the CRC matches, else the
// CRC error is.
func validatePlain(h Header, origin Origin, s Summary) (Summary, error) {
	if err := checkRules(h, origin); err != nil {
		return Summary{}, crcFirst(h, err)
	}
	data := h[HeaderSize:h.Size()]
	w, err := newRecordWalker(h, data, origin, false)
	if err != nil {
		return Summary{}, crcFirst(h, err)
	}
	acc := newSummarizer(h, &s)
	crc := crc32.Update(0, crcTable, h[CRCStart:HeaderSize])
	done := 0 // data[:done] is in crc
	var r Record
	for {
		for done < len(data) && w.p+crcAhead > done {
			end := min(len(data), done+crcChunk)
			crc = crc32.Update(crc, crcTable, data[done:end])
			done = end
		}
		ok, err := w.next(&r)
		if err != nil || !ok {
			if crc32.Update(crc, crcTable, data[done:]) != h.CRC() {
				return Summary{}, ErrCRC
			}
			if err != nil {
				return Summary{}, err
			}
			break
		}
		acc.add(&r)
	}
	s.RecordBytes = len(data)
	s.Records = int(h.RecordCount())
	return s, nil
}

// crcFirst returns the CRC's error if h's CRC is wrong, else err: the
// error of a check Kafka makes after the CRC.
func crcFirst(h Header, err error) error {
	if cerr := h.CheckCRC(); cerr != nil {
		return cerr
	}
	return err
}

// checkBatch checks everything about b that needs no decompression, in
// Kafka's order: framing and magic, base offset (clients), CRC, codec, the
// batch-level rules for the origin.
func checkBatch(b []byte, origin Origin) (Header, error) {
	h, err := checkFraming(b, origin)
	if err != nil {
		return nil, err
	}
	if err := checkSealed(h, origin); err != nil {
		return nil, err
	}
	return h, nil
}

// checkSealed is the part of checkBatch from the CRC on: the CRC, then
// checkRules.
func checkSealed(h Header, origin Origin) error {
	if err := h.CheckCRC(); err != nil {
		return err
	}
	return checkRules(h, origin)
}

// checkFraming is the part of checkBatch before the CRC: framing and
// magic, exact size, and a client's base offset.
func checkFraming(b []byte, origin Origin) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		if err == ErrBadMagic {
			return nil, fmt.Errorf("%w: %d", ErrBadMagic, int8(b[offMagic]))
		}
		return nil, err
	}
	if n := h.Size(); len(b) != n {
		if len(b) < n {
			return nil, fmt.Errorf("%w: batch of %d bytes, have %d", ErrTruncated, n, len(b))
		}
		return nil, fmt.Errorf("%w: batch of %d bytes followed by %d more", ErrBadLength, n, len(b)-n)
	}
	if origin == OriginClient && h.BaseOffset() != 0 {
		return nil, fmt.Errorf("%w: base offset %d from a producer, want 0", ErrInvalidBatch, h.BaseOffset())
	}
	return h, nil
}

// checkRules is the part of checkBatch after the CRC: the codec and the
// batch-level rules for the origin.
func checkRules(h Header, origin Origin) error {
	if c := h.Codec(); c > Zstd {
		return fmt.Errorf("%w: %d", ErrUnknownCodec, c)
	}
	count, last := h.RecordCount(), h.LastOffsetDelta()
	if origin == OriginClient {
		switch {
		case last < 0 || last == math.MaxInt32:
			return fmt.Errorf("%w: offset range of %d records", ErrInvalidBatch, int64(last)+1)
		case count <= 0:
			return fmt.Errorf("%w: record count %d", ErrInvalidBatch, count)
		case int64(last)+1 != int64(count):
			return fmt.Errorf("%w: offset range of %d records but count %d", ErrInvalidBatch, int64(last)+1, count)
		case h.Control():
			return fmt.Errorf("%w: control batch from a producer", ErrInvalidBatch)
		case h.ProducerID() >= 0 && h.BaseSequence() < 0:
			return fmt.Errorf("%w: producer id %d with base sequence %d", ErrInvalidBatch, h.ProducerID(), h.BaseSequence())
		}
	} else if count < 0 {
		return fmt.Errorf("%w: record count %d", ErrCorruptRecords, count)
	}
	return nil
}

// recordWalker parses the h.RecordCount() records of data one by one,
// checking the offset deltas against the origin's rules, and at the end
// that nothing is left over. It is a struct with a next method, not a
// callback, so the record can live on the caller's stack.
type recordWalker struct {
	data        []byte
	p, i, count int
	origin      Origin
	last        int32
	prev        int64
	keepHeaders bool
}

func newRecordWalker(h Header, data []byte, origin Origin, keepHeaders bool) (recordWalker, error) {
	count := int(h.RecordCount())
	if count < 0 || count > len(data)/minRecordSize {
		return recordWalker{}, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorruptRecords, count, len(data))
	}
	w := walkerFor(h, origin, keepHeaders)
	w.data = data
	return w, nil
}

// walkerFor is a walker of h's records with no data, for a stream. A
// count the data cannot hold shows as a truncated record at its end.
// REQUIRES: h passed checkBatch (the count is >= 0).
func walkerFor(h Header, origin Origin, keepHeaders bool) recordWalker {
	return recordWalker{count: int(h.RecordCount()), origin: origin, last: h.LastOffsetDelta(),
		prev: -1, keepHeaders: keepHeaders}
}

// next parses the next record into r; false with a nil error at the end.
func (w *recordWalker) next(r *Record) (bool, error) {
	if w.i == w.count {
		return w.finish(len(w.data) - w.p)
	}
	n, err := parseRecord(w.data[w.p:], r, w.keepHeaders)
	if err != nil {
		return false, fmt.Errorf("record %d: %w", w.i, err)
	}
	w.p += n
	if err := w.accept(r); err != nil {
		return false, err
	}
	return true, nil
}

// accept checks the offset delta of the parsed record r against the
// origin's rules and counts it.
func (w *recordWalker) accept(r *Record) error {
	d := int64(r.OffsetDelta)
	if w.origin == OriginClient {
		if d != int64(w.i) {
			return fmt.Errorf("%w: record %d has offset delta %d", ErrCorruptRecords, w.i, d)
		}
	} else if d <= w.prev || d > int64(w.last) {
		return fmt.Errorf("%w: record %d has offset delta %d after %d, last %d", ErrCorruptRecords, w.i, d, w.prev, w.last)
	}
	w.prev = d
	w.i++
	return nil
}

// finish checks the end of the records: no bytes left over after the
// last one, and for a client the last offset delta the header claims.
func (w *recordWalker) finish(leftover int) (bool, error) {
	if leftover != 0 {
		return false, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorruptRecords, leftover, w.count)
	}
	// A client's last record carries lastOffsetDelta; a compacted
	// batch may end before it (its last records were cleaned away).
	if w.count > 0 && w.origin == OriginClient && w.prev != int64(w.last) {
		return false, fmt.Errorf("%w: last offset delta %d, header says %d", ErrCorruptRecords, w.prev, w.last)
	}
	return false, nil
}

// Records decodes the records of one whole batch, decompressing within
// maxDecompressed bytes. It checks the framing, CRC and record structure
// (with OriginInternal's offset rules, so cleaned batches decode) but not
// the producer rules. Key, Value and header values alias b, or for a
// compressed batch a buffer Records allocated.
func Records(b []byte, maxDecompressed int) ([]Record, error) {
	var recs []Record
	err := ForEachRecord(b, maxDecompressed, func(r Record) error {
		if recs == nil {
			// The count is the header's claim; cap the up-front
			// allocation so a lying header costs nothing before the
			// records themselves disprove it.
			recs = make([]Record, 0, max(1, min(int(Header(b).RecordCount()), 4096)))
		}
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// ForEachRecord calls fn for each record of one whole batch, in order, with
// Records' checks; fn's error stops the walk and is returned. The record's
// slices alias the batch or the decompressed buffer and stay valid after
// fn returns. Unlike Records it does not hold every record at once; the
// structure of all records is checked before fn sees the first.
func ForEachRecord(b []byte, maxDecompressed int, fn func(Record) error) error {
	return ForEachRecordScratch(b, nil, maxDecompressed, fn)
}

// ForEachRecordScratch is ForEachRecord decompressing a compressed batch
// into *scratch, reusing its capacity and leaving the (possibly grown)
// buffer there for the next call; nil scratch allocates as ForEachRecord
// does. For a compressed batch the records' slices alias *scratch, so they
// are valid only until the buffer is used again.
func ForEachRecordScratch(b []byte, scratch *[]byte, maxDecompressed int, fn func(Record) error) error {
	h, err := checkBatch(b, OriginInternal)
	if err != nil {
		return err
	}
	data := b[HeaderSize:]
	if c := h.Codec(); c != None {
		var dst []byte
		if scratch != nil {
			dst = *scratch
		}
		if data, err = decompress(c, dst, data, maxDecompressed); err != nil {
			return err
		}
		if scratch != nil {
			*scratch = data
		}
	}
	// A first pass checks every record without allocating, so fn never
	// sees part of a batch that turns out to be corrupt.
	var r Record
	for pass := 0; pass < 2; pass++ {
		w, err := newRecordWalker(h, data, OriginInternal, pass == 1)
		if err != nil {
			return err
		}
		for {
			ok, err := w.next(&r)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if pass == 1 {
				if err := fn(r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
