// Package offline holds the binary's offline subcommands, which read a
// data dir without a running broker and never write to it: dump-log,
// kcompatd's kafka-dump-log.sh, and verify, a consistency check of a data
// dir or one partition dir. Both work on Apache Kafka's files as well as
// on kcompatd's (the format is the same); the decoders are those of the
// recordbatch and partition packages, which the broker itself uses.
package offline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Exit statuses of the subcommands.
const (
	ExitOK       = 0
	ExitProblems = 1 // verify found problems; dump-log could not read a file
	ExitUsage    = 2
)

// Bounds on what the tools read into memory at once.
const (
	// maxBatchBytes is the largest batch dump-log and verify read (a
	// larger length prefix is reported, not allocated).
	maxBatchBytes = 1 << 30
	// defaultMaxDecompressed bounds the records of one batch after
	// decompression (the cleaner's default bound too).
	defaultMaxDecompressed = 256 << 20
	// maxSideFileBytes bounds an index, snapshot or checkpoint file read
	// whole (a preallocated Kafka index is 10 MiB).
	maxSideFileBytes = 256 << 20
	// defaultMaxMessageSize is kafka-dump-log's --max-message-size: how
	// far past an index entry's position the batch is looked for.
	defaultMaxMessageSize = 5 << 20
)

// DumpOptions are dump-log's flags.
type DumpOptions struct {
	PrintData      bool // --print-data-log: the records, with keys and values
	DeepIteration  bool // --deep-iteration: the records' metadata without their data
	OffsetsDecoder bool // --offsets-decoder: __consumer_offsets records decoded (implies PrintData)
	TxnLogDecoder  bool // --transaction-log-decoder: __transaction_state records decoded (implies PrintData)
	SkipMetadata   bool // --skip-record-metadata
	JSON           bool // --json: one JSON object per batch or entry
	VerifyIndex    bool // --verify-index-only: check index entries without printing them
	IndexSanity    bool // --index-sanity-check: only the check the broker makes when it loads an index
	MaxMessageSize int  // --max-message-size, bytes
}

// DumpLog runs `kcompatd dump-log [flags] FILE...` and returns its exit
// status: 0, 1 if a file could not be read or ended in a way Kafka's tool
// would fail on, 2 for a usage error.
func DumpLog(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kcompatd dump-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o DumpOptions
	fs.BoolVar(&o.PrintData, "print-data-log", false, "print the records' keys and values")
	fs.BoolVar(&o.DeepIteration, "deep-iteration", false, "print each record's metadata (implied by --print-data-log)")
	fs.BoolVar(&o.OffsetsDecoder, "offsets-decoder", false, "decode the records as __consumer_offsets records")
	fs.BoolVar(&o.TxnLogDecoder, "transaction-log-decoder", false, "decode the records as __transaction_state records")
	fs.BoolVar(&o.SkipMetadata, "skip-record-metadata", false, "do not print each record's metadata")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per batch or index entry")
	fs.BoolVar(&o.VerifyIndex, "verify-index-only", false, "check .index and .timeindex entries against the log without printing them")
	fs.BoolVar(&o.IndexSanity, "index-sanity-check", false, "only check that .index and .timeindex files pass the sanity check made when they are loaded")
	fs.IntVar(&o.MaxMessageSize, "max-message-size", defaultMaxMessageSize, "`bytes` past an index entry's position to look for its batch")
	files := fs.String("files", "", "comma-separated `FILES` (kafka-dump-log's flag), in addition to the arguments")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: kcompatd dump-log [--print-data-log] [--offsets-decoder] [--transaction-log-decoder] [--json] FILE...\n"+
			"Prints .log segments, .index, .timeindex, .txnindex and producer .snapshot files as Kafka's kafka-dump-log.sh does.\n")
		fs.PrintDefaults()
	}
	if err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	paths := fs.Args()
	if *files != "" {
		paths = append(strings.Split(*files, ","), paths...)
	}
	if len(paths) == 0 {
		fmt.Fprintln(stderr, "kcompatd dump-log: no files given")
		fs.Usage()
		return ExitUsage
	}
	d := &dumper{opts: o, out: stdout, errw: stderr}
	for _, p := range paths {
		d.file(p)
	}
	d.printErrors()
	if d.failed {
		return ExitProblems
	}
	return ExitOK
}

// parseInterspersed parses flags before, between and after the file
// arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, rest...))
}

type dumper struct {
	opts   DumpOptions
	out    io.Writer
	errw   io.Writer
	failed bool

	// Consistency problems, printed to stderr once every file is
	// dumped, as Kafka's tool does.
	indexMismatches filePairs // index offset -> log offset
	timeMismatch    []timeProblem
	timeOutOfOrder  []timeProblem
	timeNotFound    []timeProblem
	nonConsecutive  filePairs // offset -> the next one
}

// filePairs holds pairs of offsets per file, as Kafka's tool keeps them
// in a sorted map per file: a later pair with the same first offset
// replaces an earlier one.
type filePairs struct {
	order []string
	m     map[string]map[int64]int64
}

func (p *filePairs) add(file string, a, b int64) {
	if p.m == nil {
		p.m = map[string]map[int64]int64{}
	}
	if p.m[file] == nil {
		p.m[file] = map[int64]int64{}
		p.order = append(p.order, file)
	}
	p.m[file][a] = b
}

// print writes header (with the file name) then line for each pair of
// each file, by first offset (descending if desc).
func (p *filePairs) print(w io.Writer, header, line string, desc bool) {
	for _, f := range p.order {
		fmt.Fprintf(w, header, f)
		m := p.m[f]
		keys := make([]int64, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return (keys[i] < keys[j]) != desc })
		for _, k := range keys {
			fmt.Fprintf(w, line, k, m[k])
		}
	}
}

type timeProblem struct {
	file string
	a, b int64
}

func (d *dumper) fail(format string, args ...any) {
	d.failed = true
	fmt.Fprintf(d.errw, format+"\n", args...)
}

func (d *dumper) json(o obj) { fmt.Fprintln(d.out, o.String()) }

func (d *dumper) file(path string) {
	if !d.opts.JSON {
		fmt.Fprintf(d.out, "Dumping %s\n", path)
	}
	name := filepath.Base(path)
	suffix := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		suffix = name[i:]
	}
	switch suffix {
	case partition.LogSuffix:
		d.log(path)
	case partition.IndexSuffix:
		d.offsetIndex(path)
	case partition.TimeIndexSuffix:
		d.timeIndex(path)
	case partition.SnapshotSuffix:
		d.snapshot(path)
	case partition.TxnIndexSuffix:
		d.txnIndex(path)
	default:
		fmt.Fprintf(d.errw, "Ignoring unknown file %s\n", path)
	}
}

// baseOffsetOf is the segment base offset a file name starts with, as
// Kafka reads it (the digits before the first dot).
func baseOffsetOf(path string) (int64, error) {
	name := filepath.Base(path)
	stem, _, _ := strings.Cut(name, ".")
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: not a segment file name (want a 20-digit base offset)", name)
	}
	return n, nil
}

// siblingPath is the file of the same segment with another suffix.
func siblingPath(path, suffix string) string {
	dir, name := filepath.Split(path)
	stem, _, _ := strings.Cut(name, ".")
	return filepath.Join(dir, stem+suffix)
}

// readSmall reads a whole side file, refusing one larger than
// maxSideFileBytes.
func readSmall(path string) ([]byte, error) {
	return vfs.ReadFileLimit(vfs.OS{}, path, maxSideFileBytes)
}

func (d *dumper) log(path string) {
	base, err := baseOffsetOf(path)
	if err != nil {
		d.fail("%v", err)
		return
	}
	seg, err := openSegment(path)
	if err != nil {
		d.fail("%v", err)
		return
	}
	defer seg.close()
	d.segment(path, base, seg)
}

// segment dumps the batches of one .log read through seg.
func (d *dumper) segment(path string, base int64, seg *segReader) {
	if !d.opts.JSON {
		fmt.Fprintf(d.out, "Log starting offset: %d\n", base)
	}
	deep := d.opts.DeepIteration || d.printData()
	parser := d.parser()
	lastOffset := int64(-1)
	abs, _ := filepath.Abs(path)
	var scratch []byte
	for {
		b, err := seg.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				d.fail("%s", err)
			}
			break
		}
		h := recordbatch.Header(b)
		var recs arr
		if deep {
			err := recordbatch.ForEachRecordScratch(b, &scratch, seg.maxDecompressed, func(r recordbatch.Record) error {
				off := h.BaseOffset() + int64(r.OffsetDelta)
				if off != lastOffset+1 {
					d.nonConsecutive.add(abs, lastOffset, off)
				}
				lastOffset = off
				rec, err := d.record(h, r, parser)
				if err != nil {
					return err
				}
				recs = append(recs, rec)
				return nil
			})
			if mk := (errMissingKey{}); errors.As(err, &mk) {
				// Kafka's coordinator decoders stop the dump here.
				if mk.partial != "" {
					recs = append(recs, mk.partial)
				}
				d.batch(h, seg.pos, recs)
				d.fail("%v", err)
				return
			}
			if err != nil {
				d.batch(h, seg.pos, nil)
				d.fail("%s: cannot read the records of the batch at position %d: %v", path, seg.pos, err)
				seg.advance(len(b))
				continue
			}
		}
		d.batch(h, seg.pos, recs)
		seg.advance(len(b))
	}
	if t := seg.size - seg.pos; t > 0 {
		if d.opts.JSON {
			d.json(obj{}.add("file", path).add("invalidTrailingBytes", t).add("position", seg.pos))
		} else {
			fmt.Fprintf(d.out, "Found %d invalid bytes at the end of %s\n", t, filepath.Base(path))
		}
	}
}

func (d *dumper) printData() bool {
	return d.opts.PrintData || d.opts.OffsetsDecoder || d.opts.TxnLogDecoder
}

func (d *dumper) parser() recordParser {
	switch {
	case d.opts.OffsetsDecoder:
		return offsetsParser
	case d.opts.TxnLogDecoder:
		return txnLogParser
	}
	return plainParser
}

// batch prints one batch line and then its records' lines (recs holds
// strings in text mode, objects in JSON mode).
func (d *dumper) batch(h recordbatch.Header, pos int64, recs arr) {
	valid := len(h) >= recordbatch.HeaderSize && h.CheckCRC() == nil
	tsType := "CreateTime"
	if h.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	if d.opts.JSON {
		o := obj{}.add("baseOffset", h.BaseOffset()).add("lastOffset", h.LastOffset()).add("count", h.RecordCount()).
			add("baseSequence", h.BaseSequence()).add("lastSequence", lastSequence(h)).
			add("producerId", h.ProducerID()).add("producerEpoch", h.ProducerEpoch()).
			add("partitionLeaderEpoch", h.LeaderEpoch()).add("isTransactional", h.Transactional()).
			add("isControl", h.Control())
		if h.HasDeleteHorizon() {
			o = o.add("deleteHorizonMs", h.BaseTimestamp())
		} else {
			o = o.add("deleteHorizonMs", nil)
		}
		o = o.add("position", pos).add("timestampType", tsType).add("maxTimestamp", h.MaxTimestamp()).
			add("size", h.Size()).add("magic", h.Magic()).add("compresscodec", h.Codec().String()).
			add("crc", h.CRC()).add("isvalid", valid)
		if recs != nil {
			o = o.add("records", recs)
		}
		d.json(o)
		return
	}
	horizon := "OptionalLong.empty"
	if h.HasDeleteHorizon() {
		horizon = fmt.Sprintf("OptionalLong[%d]", h.BaseTimestamp())
	}
	fmt.Fprintf(d.out, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		h.BaseOffset(), h.LastOffset(), h.RecordCount(), h.BaseSequence(), lastSequence(h), h.ProducerID(), h.ProducerEpoch(),
		h.LeaderEpoch(), h.Transactional(), h.Control(), horizon, pos, tsType, h.MaxTimestamp(), h.Size(), h.Magic(),
		h.Codec().String(), h.CRC(), valid)
	for _, r := range recs {
		fmt.Fprintln(d.out, r)
	}
}

// incrementSequence adds delta to a sequence number, wrapping at
// MaxInt32 to 0 as producers do (DefaultRecordBatch.incrementSequence).
func incrementSequence(seq, delta int32) int32 {
	if seq > (1<<31-1)-delta {
		return delta - ((1<<31 - 1) - seq) - 1
	}
	return seq + delta
}

func lastSequence(h recordbatch.Header) int32 {
	if h.BaseSequence() == recordbatch.NoSequence {
		return recordbatch.NoSequence
	}
	return incrementSequence(h.BaseSequence(), h.LastOffsetDelta())
}

var controlTypeNames = map[int16]string{0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
	4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}

// record renders one record: a string line in text mode, an object in
// JSON mode.
func (d *dumper) record(h recordbatch.Header, r recordbatch.Record, parser recordParser) (any, error) {
	off := h.BaseOffset() + int64(r.OffsetDelta)
	ts := h.BaseTimestamp() + r.TimestampDelta
	tsType := "CreateTime"
	if h.LogAppendTime() {
		ts, tsType = h.MaxTimestamp(), "LogAppendTime"
	}
	seq := recordbatch.NoSequence
	if h.BaseSequence() >= 0 {
		seq = incrementSequence(h.BaseSequence(), r.OffsetDelta)
	}
	headerKeys := make([]string, len(r.Headers))
	for i, hd := range r.Headers {
		headerKeys[i] = javaString([]byte(hd.Key))
	}
	var control string // the control record's description, text mode
	var controlJSON obj
	if h.Control() {
		typ, err := recordbatch.ControlType(r)
		switch {
		case err != nil:
			control = fmt.Sprintf(" controlType: %v", err)
			controlJSON = obj{}.add("controlError", err.Error())
		case typ == recordbatch.ControlAbort || typ == recordbatch.ControlCommit:
			m, err := recordbatch.ParseEndTxnMarker(r)
			if err != nil {
				control = fmt.Sprintf(" endTxnMarker: %v", err)
				controlJSON = obj{}.add("controlError", err.Error())
				break
			}
			control = fmt.Sprintf(" endTxnMarker: %s coordinatorEpoch: %d", controlTypeNames[typ], m.CoordinatorEpoch)
			controlJSON = obj{}.add("endTxnMarker", controlTypeNames[typ]).add("coordinatorEpoch", m.CoordinatorEpoch)
		default:
			name, ok := controlTypeNames[typ]
			if !ok {
				name = "UNKNOWN"
			}
			control = fmt.Sprintf(" controlType: %s(%d)", name, typ)
			controlJSON = obj{}.add("controlType", name).add("controlTypeId", typ)
		}
	}
	var key, value *string
	missingKey := d.printData() && !h.Control() && (d.opts.OffsetsDecoder || d.opts.TxnLogDecoder) && r.Key == nil
	if d.printData() && !h.Control() && !missingKey {
		key, value = parser(off, r.Key, r.Value)
	}
	if d.opts.JSON {
		o := obj{}.add("offset", off).add("timestampType", tsType).add("timestamp", ts).
			add("keySize", sizeOf(r.Key)).add("valueSize", sizeOf(r.Value)).add("sequence", seq).
			add("headerKeys", headerKeys)
		o = append(o, controlJSON...)
		if missingKey {
			return nil, errMissingKey{offset: off}
		}
		decoded := d.opts.OffsetsDecoder || d.opts.TxnLogDecoder
		for _, kv := range []struct {
			name string
			s    *string
		}{{"key", key}, {"payload", value}} {
			if kv.s == nil {
				continue
			}
			if decoded && strings.HasPrefix(*kv.s, "{") {
				o = o.add(kv.name, raw(*kv.s))
			} else {
				o = o.add(kv.name, *kv.s)
			}
		}
		return o, nil
	}
	var sb strings.Builder
	prefix := "| "
	if !d.opts.SkipMetadata {
		fmt.Fprintf(&sb, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]%s",
			off, tsType, ts, sizeOf(r.Key), sizeOf(r.Value), seq, strings.Join(headerKeys, ","), control)
		prefix = " "
	}
	if missingKey {
		return nil, errMissingKey{off, sb.String()}
	}
	if key != nil {
		sb.WriteString(prefix + "key: " + *key)
		prefix = " "
	}
	if value != nil {
		sb.WriteString(prefix + "payload: " + *value)
	}
	return sb.String(), nil
}

func sizeOf(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// openIndex reads an index file and opens the .log of its segment; ok
// is false (the problem reported) if either cannot be read.
func (d *dumper) openIndex(path string) (base int64, b []byte, seg *segReader, ok bool) {
	base, err := baseOffsetOf(path)
	if err == nil {
		b, err = readSmall(path)
	}
	if err == nil {
		seg, err = openSegment(siblingPath(path, partition.LogSuffix))
	}
	if err != nil {
		d.fail("%v", err)
		return 0, nil, nil, false
	}
	return base, b, seg, true
}

func (d *dumper) offsetIndex(path string) {
	base, b, seg, ok := d.openIndex(path)
	if !ok {
		return
	}
	defer seg.close()
	entries, _ := partition.OffsetIndexEntries(b, base)
	if len(entries) == 0 {
		if d.opts.JSON {
			d.json(obj{}.add("file", path).add("entries", 0))
		} else {
			fmt.Fprintf(d.out, "%s is empty.\n", path)
		}
		return
	}
	abs, _ := filepath.Abs(path)
	if d.opts.IndexSanity {
		// Kafka's OffsetIndex.sanityCheck, in its words.
		switch last := entries[len(entries)-1].Offset; {
		case last < base:
			d.fail("Corrupt index found, index file %s has non-zero size but the last offset is %d which is less than the base offset %d", abs, last, base)
		case len(b)%offsetIndexEntry != 0:
			d.fail("Index file %s is corrupt, found %d bytes which is neither positive nor a multiple of %d", abs, len(b), offsetIndexEntry)
		default:
			d.sane(path)
		}
		return
	}
	for i, e := range entries {
		// Kafka preallocates indexes: after a crash the rest is zeros.
		if e.Offset == base && i > 0 {
			return
		}
		lastOffset, err := seg.lastOffsetAt(e.Position, d.opts.MaxMessageSize)
		if err != nil {
			d.fail("%s: entry %d (offset %d, position %d): %v", path, i, e.Offset, e.Position, err)
			return
		}
		if lastOffset != e.Offset {
			d.indexMismatches.add(abs, e.Offset, lastOffset)
		}
		switch {
		case d.opts.VerifyIndex:
		case d.opts.JSON:
			d.json(obj{}.add("file", path).add("offset", e.Offset).add("position", e.Position))
		default:
			fmt.Fprintf(d.out, "offset: %d position: %d\n", e.Offset, e.Position)
		}
	}
}

func (d *dumper) timeIndex(path string) {
	base, b, seg, ok := d.openIndex(path)
	if !ok {
		return
	}
	defer seg.close()
	// The offset index narrows where to look for each entry's batch, as
	// Kafka's lookup does; a missing one means a scan from the start.
	var oidx []partition.OffsetIndexEntry
	if ob, err := readSmall(siblingPath(path, partition.IndexSuffix)); err == nil {
		var valid int
		oidx, valid = partition.OffsetIndexEntries(ob, base)
		oidx = oidx[:valid]
	}
	entries, _ := partition.TimeIndexEntries(b, base)
	abs, _ := filepath.Abs(path)
	if d.opts.IndexSanity {
		// Kafka's TimeIndex.sanityCheck, in its words.
		n := len(entries)
		switch {
		case n > 0 && entries[n-1].Timestamp < entries[0].Timestamp:
			d.fail("Corrupt time index found, time index file (%s) has non-zero size but the last timestamp is %d which is less than the first timestamp %d", abs, entries[n-1].Timestamp, entries[0].Timestamp)
		case n > 0 && entries[n-1].Offset < base:
			d.fail("Corrupt time index found, time index file (%s) has non-zero size but the last offset is %d which is less than the first offset %d", abs, entries[n-1].Offset, base)
		case len(b)%timeIndexEntry != 0:
			d.fail("Time index file %s is corrupt, found %d bytes which is neither positive nor a multiple of %d", abs, len(b), timeIndexEntry)
		default:
			d.sane(path)
		}
		return
	}
	prev := int64(-1)
	for i, e := range entries {
		if e.Offset == base && i > 0 {
			return
		}
		pos := int64(0)
		if j := sort.Search(len(oidx), func(j int) bool { return oidx[j].Offset > e.Offset }); j > 0 {
			pos = oidx[j-1].Position
		}
		h, maxTs, err := seg.batchContaining(pos, e.Offset)
		switch {
		case err != nil && !errors.Is(err, io.EOF):
			d.fail("%s: entry %d (timestamp %d, offset %d): %v", path, i, e.Timestamp, e.Offset, err)
			return
		case h == nil:
			d.timeNotFound = append(d.timeNotFound, timeProblem{abs, e.Offset, -1})
		case h.LastOffset() != e.Offset:
			d.timeNotFound = append(d.timeNotFound, timeProblem{abs, e.Offset, h.LastOffset()})
		default:
			if maxTs != e.Timestamp {
				d.timeMismatch = append(d.timeMismatch, timeProblem{abs, e.Timestamp, maxTs})
			}
			if prev >= e.Timestamp {
				d.timeOutOfOrder = append(d.timeOutOfOrder, timeProblem{abs, e.Timestamp, prev})
			}
		}
		switch {
		case d.opts.VerifyIndex:
		case d.opts.JSON:
			d.json(obj{}.add("file", path).add("timestamp", e.Timestamp).add("offset", e.Offset))
		default:
			fmt.Fprintf(d.out, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
		}
		prev = e.Timestamp
	}
}

// Index entry sizes (partition/index.go has the format).
const (
	offsetIndexEntry = 8
	timeIndexEntry   = 12
)

func (d *dumper) sane(path string) {
	if d.opts.JSON {
		d.json(obj{}.add("file", path).add("sanityCheck", "passed"))
	} else {
		fmt.Fprintf(d.out, "%s passed sanity check.\n", path)
	}
}

func optionalLong(v int64) string {
	if v < 0 {
		return "OptionalLong.empty"
	}
	return fmt.Sprintf("OptionalLong[%d]", v)
}

func (d *dumper) snapshot(path string) {
	b, err := readSmall(path)
	if err != nil {
		d.fail("%v", err)
		return
	}
	entries, err := partition.ProducerSnapshot(b)
	if err != nil {
		// Kafka prints a corrupt snapshot's message and goes on.
		fmt.Fprintf(d.errw, "%s: %v\n", path, err)
		return
	}
	for _, e := range entries {
		if d.opts.JSON {
			o := obj{}.add("file", path).add("producerId", e.ProducerID).add("producerEpoch", e.ProducerEpoch).
				add("coordinatorEpoch", e.CoordinatorEpoch)
			if e.TxnFirstOffset >= 0 {
				o = o.add("currentTxnFirstOffset", e.TxnFirstOffset)
			} else {
				o = o.add("currentTxnFirstOffset", nil)
			}
			o = o.add("lastTimestamp", e.LastTimestamp)
			if e.HasBatch {
				o = o.add("firstSequence", e.FirstSequence).add("lastSequence", e.LastSequence).
					add("lastOffset", e.LastOffset).add("offsetDelta", e.OffsetDelta).add("timestamp", e.Timestamp)
			}
			d.json(o)
			continue
		}
		fmt.Fprintf(d.out, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %s lastTimestamp: %d",
			e.ProducerID, e.ProducerEpoch, e.CoordinatorEpoch, optionalLong(e.TxnFirstOffset), e.LastTimestamp)
		if e.HasBatch {
			fmt.Fprintf(d.out, " firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d",
				e.FirstSequence, e.LastSequence, e.LastOffset, e.OffsetDelta, e.Timestamp)
		}
		fmt.Fprintln(d.out)
	}
}

func (d *dumper) txnIndex(path string) {
	b, err := readSmall(path)
	if err != nil {
		d.fail("%v", err)
		return
	}
	entries, err := partition.TxnIndexEntries(b)
	for _, e := range entries {
		if d.opts.JSON {
			d.json(obj{}.add("file", path).add("version", 0).add("producerId", e.ProducerID).add("firstOffset", e.FirstOffset).
				add("lastOffset", e.LastOffset).add("lastStableOffset", e.LastStableOffset))
			continue
		}
		fmt.Fprintf(d.out, "version: 0 producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
			e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStableOffset)
	}
	if err != nil {
		d.fail("%s: %v", path, err)
	}
}

// printErrors prints the consistency problems collected over all files,
// in Kafka's words.
func (d *dumper) printErrors() {
	d.indexMismatches.print(d.errw, "Mismatches in :%s\n", "  Index offset: %d, log offset: %d\n", true)
	printTime := func(ps []timeProblem, header, line string) {
		var last string
		for _, p := range ps {
			if p.file != last && header != "" {
				fmt.Fprintf(d.errw, header, p.file)
			}
			last = p.file
			fmt.Fprintf(d.errw, line, p.a, p.b)
		}
	}
	printTime(d.timeMismatch, "Found timestamp mismatch in :%s\n", "  Index timestamp: %d, log timestamp: %d\n")
	printTime(d.timeOutOfOrder, "Found out of order timestamp in :%s\n", "  Index timestamp: %d, Previously indexed timestamp: %d\n")
	var last string
	for _, p := range d.timeNotFound {
		if p.file != last {
			fmt.Fprintln(d.errw, "The following indexed offsets are not found in the log.")
		}
		last = p.file
		fmt.Fprintf(d.errw, "Indexed offset: %d, found log offset: %d\n", p.a, p.b)
	}
	d.nonConsecutive.print(d.errw, "Non-consecutive offsets in %s\n", "  %d is followed by %d\n", false)
}
