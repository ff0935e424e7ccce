package offline

// verify: an offline consistency check of a data dir or of one partition
// dir, written by kcompatd or by Apache Kafka. It reports, one line each:
//
//   - in each .log: a batch that fails its CRC or whose records do not
//     parse (the framing intact, the check goes on with the next batch),
//     a length that cannot be a batch (the rest of the segment is not
//     read), offsets that do not increase from batch to batch or from
//     segment to segment, a batch below its segment's base offset, and
//     bytes after the last whole batch (a torn write);
//   - in each .index and .timeindex: entries out of order (other than
//     Kafka's zero-filled preallocated tail), entries past the end of
//     the log or outside their segment, offset index entries that do
//     not point at the start of the batch ending at their offset, and
//     time index entries that do not name the last offset and largest
//     timestamp of a batch (Kafka's tool's checks);
//   - .txnindex and producer .snapshot files that do not decode,
//     aborted transactions outside their segment, and snapshots past the
//     log end offset;
//   - leader-epoch-checkpoint and the data dir's checkpoints
//     (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
//     cleaner-offset-checkpoint, replication-offset-checkpoint) that do
//     not parse or hold an offset past the partition's log end offset;
//   - leftover .cleaned and .swap files of an interrupted cleaner swap.
//
// Gaps between offsets are not problems: compaction and the removal of
// aborted records leave them. Many of these problems are repaired by the
// broker when it opens the log (a torn tail is truncated, indexes are
// rebuilt); verify reports them all the same, so that a test can tell a
// clean shutdown from a repaired crash.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Verify runs `kcompatd verify DIR`: problems on stdout, one a line, and
// a summary on stderr. It returns 0 if DIR is clean, 1 if it found
// problems (or could not read DIR), 2 for a usage error.
func Verify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kcompatd verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: kcompatd verify DIR\n"+
			"Checks a data dir or one partition dir offline: CRCs, offsets, indexes, checkpoints, leftover cleaner files.\n"+
			"Prints one line per problem; exit status 0 clean, 1 problems found, 2 usage error.\n")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return ExitUsage
	}
	r := VerifyDir(fs.Arg(0))
	for _, p := range r.Problems {
		fmt.Fprintln(stdout, p)
	}
	fmt.Fprintf(stderr, "kcompatd verify: %d partitions, %d segments, %d problems\n", r.Partitions, r.Segments, len(r.Problems))
	if len(r.Problems) > 0 {
		return ExitProblems
	}
	return ExitOK
}

// VerifyResult is what VerifyDir found.
type VerifyResult struct {
	Partitions int
	Segments   int
	// Problems are "PATH: what is wrong", in directory order.
	Problems []string
}

type verifier struct {
	res VerifyResult
}

func (v *verifier) problem(path, format string, args ...any) {
	v.res.Problems = append(v.res.Problems, path+": "+fmt.Sprintf(format, args...))
}

// partitionDirName is Kafka's <topic>-<partition>.
var partitionDirName = regexp.MustCompile(`^(.+)-([0-9]+)$`)

// VerifyDir checks dir, a data dir or one partition dir (one that holds
// segment files or is named <topic>-<partition>).
func VerifyDir(dir string) VerifyResult {
	v := &verifier{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		v.problem(dir, "%v", err)
		return v.res
	}
	if isPartitionDir(dir, entries) {
		v.partition(dir, entries)
		return v.res
	}
	leo := map[string]int64{} // partition dir name -> log end offset
	for _, e := range entries {
		if !e.IsDir() || !partitionDirName.MatchString(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		pe, err := os.ReadDir(p)
		if err != nil {
			v.problem(p, "%v", err)
			continue
		}
		if end, ok := v.partition(p, pe); ok {
			leo[e.Name()] = end
		}
	}
	for _, name := range []string{partition.RecoveryPointFile, partition.LogStartOffsetFile,
		partition.CleanerOffsetFile, "replication-offset-checkpoint"} {
		v.checkpoint(filepath.Join(dir, name), leo)
	}
	return v.res
}

func isPartitionDir(dir string, entries []os.DirEntry) bool {
	for _, e := range entries {
		if _, _, ok := partition.ParseSegmentFileName(e.Name()); ok && !e.IsDir() {
			return true
		}
	}
	return partitionDirName.MatchString(filepath.Base(filepath.Clean(dir)))
}

// segmentInfo is what the scan of one .log learned, for the checks of
// its indexes.
type segmentInfo struct {
	base       int64
	size       int64
	lastOffset int64 // -1 if no batch
	readable   int64 // bytes read as whole batches: the log's end for its indexes
	// The batches read, in file order: position, last offset and the
	// largest record timestamp (-1 if the records did not decode).
	pos, last, maxTs []int64
}

// batchAt is the index of the batch starting at position pos.
func (s *segmentInfo) batchAt(pos int64) (int, bool) {
	i := sort.Search(len(s.pos), func(i int) bool { return s.pos[i] >= pos })
	return i, i < len(s.pos) && s.pos[i] == pos
}

// batchEnding is the index of the first batch whose last offset is at
// least offset (len if none), as Kafka's tool looks up a time index
// entry's batch. Last offsets increase in a sound segment; in one that
// is not (reported already), the answer is some batch, or len.
func (s *segmentInfo) batchEnding(offset int64) int {
	return sort.Search(len(s.last), func(i int) bool { return s.last[i] >= offset })
}

// pastEnd collects the index entries past the end of the readable log,
// reported as the first one and a count, not one line each.
type pastEnd struct {
	first string
	more  int
}

func (p *pastEnd) add(format string, args ...any) {
	if p.first == "" {
		p.first = fmt.Sprintf(format, args...)
		return
	}
	p.more++
}

func (p *pastEnd) report(v *verifier, path string, seg *segmentInfo) {
	if p.first == "" {
		return
	}
	msg := fmt.Sprintf("%s is past the end of the log (%d bytes of whole batches, last offset %d)", p.first, seg.readable, seg.lastOffset)
	if p.more > 0 {
		msg += fmt.Sprintf(", and %d more entries after it", p.more)
	}
	v.problem(path, "%s", msg)
}

// partition checks one partition dir and returns its log end offset (ok
// false if there are no segments to tell).
func (v *verifier) partition(dir string, entries []os.DirEntry) (leo int64, ok bool) {
	v.res.Partitions++
	var bases []int64
	files := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		files[name] = true
		if strings.HasSuffix(name, ".cleaned") || strings.HasSuffix(name, ".swap") {
			v.problem(filepath.Join(dir, name), "leftover file of an interrupted cleaner swap")
			continue
		}
		if base, suffix, ok := partition.ParseSegmentFileName(name); ok && suffix == partition.LogSuffix {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	prevLast := int64(-1)
	leo = -1
	for _, base := range bases {
		v.res.Segments++
		logPath := filepath.Join(dir, fmt.Sprintf("%020d%s", base, partition.LogSuffix))
		seg := v.segment(logPath, base, prevLast)
		if seg == nil {
			continue
		}
		prevLast = max(prevLast, seg.lastOffset, base-1)
		leo = prevLast + 1
		stem := fmt.Sprintf("%020d", base)
		if files[stem+partition.IndexSuffix] {
			v.offsetIndex(filepath.Join(dir, stem+partition.IndexSuffix), seg)
		}
		if files[stem+partition.TimeIndexSuffix] {
			v.timeIndex(filepath.Join(dir, stem+partition.TimeIndexSuffix), seg)
		}
		if files[stem+partition.TxnIndexSuffix] {
			v.txnIndex(filepath.Join(dir, stem+partition.TxnIndexSuffix), seg)
		}
	}
	for _, e := range entries {
		if off, suffix, ok := partition.ParseSegmentFileName(e.Name()); ok && suffix == partition.SnapshotSuffix {
			p := filepath.Join(dir, e.Name())
			if b, err := readSmall(p); err != nil {
				v.problem(p, "%v", err)
			} else if _, err := partition.ProducerSnapshot(b); err != nil {
				v.problem(p, "%v", err)
			}
			// A snapshot holds the state below its offset: one past the
			// log end means the log lost batches it had seen.
			if len(bases) > 0 && off > leo {
				v.problem(p, "producer snapshot at offset %d is past the log end offset %d", off, leo)
			}
		}
	}
	if len(bases) == 0 {
		return 0, false
	}
	if files[partition.LeaderEpochFile] {
		p := filepath.Join(dir, partition.LeaderEpochFile)
		b, err := readSmall(p)
		var es []partition.LeaderEpochEntry
		if err == nil {
			es, err = partition.LeaderEpochCheckpoint(b)
		}
		if err != nil {
			v.problem(p, "%v", err)
		}
		for i, e := range es {
			if e.StartOffset > leo {
				v.problem(p, "epoch %d starts at offset %d, past the log end offset %d", e.Epoch, e.StartOffset, leo)
			}
			if i > 0 && (e.Epoch <= es[i-1].Epoch || e.StartOffset < es[i-1].StartOffset) {
				v.problem(p, "entry %d (epoch %d at %d) does not follow epoch %d at %d", i, e.Epoch, e.StartOffset, es[i-1].Epoch, es[i-1].StartOffset)
			}
		}
	}
	return leo, true
}

// segment scans one .log; prevLast is the last offset of the segments
// before it (-1 if none).
func (v *verifier) segment(path string, base, prevLast int64) *segmentInfo {
	s, err := openSegment(path)
	if err != nil {
		v.problem(path, "%v", err)
		return nil
	}
	defer s.close()
	return v.scan(path, base, prevLast, s)
}

// scan checks the batches of one .log read through s.
func (v *verifier) scan(path string, base, prevLast int64, s *segReader) *segmentInfo {
	if base <= prevLast {
		v.problem(path, "segment base offset %d is not above the previous segment's last offset %d", base, prevLast)
	}
	info := &segmentInfo{base: base, size: s.size, lastOffset: -1}
	var scratch []byte
	last := max(prevLast, base-1)
	for {
		b, err := s.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			v.problem(path, "at position %d: %v (the rest of the segment, %d bytes, is not read)", s.pos, trimPath(err, path), s.size-s.pos)
			info.readable = s.pos
			return info
		}
		h := recordbatch.Header(b)
		maxTs := int64(-1)
		if err := h.CheckCRC(); err != nil {
			v.problem(path, "batch at position %d (offsets %d-%d): %v", s.pos, h.BaseOffset(), h.LastOffset(), err)
		} else if maxTs, err = maxRecordTimestamp(b, &scratch, s.maxDecompressed); err != nil {
			v.problem(path, "batch at position %d (offsets %d-%d): %v", s.pos, h.BaseOffset(), h.LastOffset(), err)
		}
		switch {
		case h.LastOffsetDelta() < 0:
			v.problem(path, "batch at position %d: last offset delta %d is negative", s.pos, h.LastOffsetDelta())
		case h.BaseOffset() < base:
			v.problem(path, "batch at position %d: base offset %d is below the segment's base offset %d", s.pos, h.BaseOffset(), base)
		case h.BaseOffset() <= last:
			v.problem(path, "batch at position %d: base offset %d does not follow the previous last offset %d", s.pos, h.BaseOffset(), last)
		}
		last = max(last, h.LastOffset())
		info.pos = append(info.pos, s.pos)
		info.last = append(info.last, h.LastOffset())
		info.maxTs = append(info.maxTs, maxTs)
		info.lastOffset = max(info.lastOffset, h.LastOffset())
		s.advance(len(b))
	}
	if t := s.size - s.pos; t > 0 {
		v.problem(path, "%d bytes after the last whole batch at position %d (a torn write)", t, s.pos)
	}
	info.readable = s.pos
	return info
}

// trimPath drops the file name that segReader's errors start with.
func trimPath(err error, path string) string {
	return strings.TrimPrefix(err.Error(), path+": ")
}

// readIndex reads an index file of entrySize-byte entries and reports a
// size that is not a whole number of entries.
func (v *verifier) readIndex(path string, entrySize int) ([]byte, bool) {
	b, err := readSmall(path)
	if err != nil {
		v.problem(path, "%v", err)
		return nil, false
	}
	if len(b)%entrySize != 0 {
		v.problem(path, "size %d is not a whole number of %d-byte entries", len(b), entrySize)
	}
	return b, true
}

// badTail reports whether the entries after the valid prefix hold
// anything but the zeros of Kafka's preallocated tail.
func badTail(b []byte, valid, n, entrySize int) bool {
	for _, c := range b[valid*entrySize : n*entrySize] {
		if c != 0 {
			return true
		}
	}
	return false
}

func (v *verifier) offsetIndex(path string, seg *segmentInfo) {
	const entrySize = offsetIndexEntry
	b, ok := v.readIndex(path, entrySize)
	if !ok {
		return
	}
	entries, valid := partition.OffsetIndexEntries(b, seg.base)
	if badTail(b, valid, len(entries), entrySize) {
		e := entries[valid]
		v.problem(path, "entry %d (offset %d, position %d) does not increase", valid, e.Offset, e.Position)
	}
	var past pastEnd
	defer past.report(v, path, seg)
	for i, e := range entries[:valid] {
		switch {
		case e.Position >= seg.readable || e.Offset > seg.lastOffset:
			past.add("entry %d (offset %d, position %d)", i, e.Offset, e.Position)
		default:
			j, ok := seg.batchAt(e.Position)
			if !ok {
				v.problem(path, "entry %d (offset %d): position %d is not the start of a batch", i, e.Offset, e.Position)
			} else if seg.last[j] != e.Offset {
				v.problem(path, "entry %d (offset %d, position %d): the batch there ends at offset %d", i, e.Offset, e.Position, seg.last[j])
			}
		}
	}
}

func (v *verifier) timeIndex(path string, seg *segmentInfo) {
	const entrySize = timeIndexEntry
	b, ok := v.readIndex(path, entrySize)
	if !ok {
		return
	}
	entries, valid := partition.TimeIndexEntries(b, seg.base)
	if badTail(b, valid, len(entries), entrySize) {
		e := entries[valid]
		v.problem(path, "entry %d (timestamp %d, offset %d) is out of order", valid, e.Timestamp, e.Offset)
	}
	var past pastEnd
	defer past.report(v, path, seg)
	for i, e := range entries[:valid] {
		switch {
		case e.Offset > seg.lastOffset:
			past.add("entry %d (timestamp %d, offset %d)", i, e.Timestamp, e.Offset)
		case e.Offset < seg.base:
			v.problem(path, "entry %d (timestamp %d, offset %d) is below the segment's base offset %d", i, e.Timestamp, e.Offset, seg.base)
		default:
			// The checks of Kafka's tool: the entry names the last offset
			// of a batch whose largest timestamp it holds.
			j := seg.batchEnding(e.Offset)
			switch {
			case j == len(seg.last):
				v.problem(path, "entry %d (timestamp %d, offset %d): no batch ends at or after offset %d", i, e.Timestamp, e.Offset, e.Offset)
			case seg.last[j] != e.Offset:
				v.problem(path, "entry %d (timestamp %d, offset %d): no batch ends at offset %d (the next ends at %d)", i, e.Timestamp, e.Offset, e.Offset, seg.last[j])
			case seg.maxTs[j] >= 0 && seg.maxTs[j] != e.Timestamp:
				v.problem(path, "entry %d (timestamp %d, offset %d): the batch's largest timestamp is %d", i, e.Timestamp, e.Offset, seg.maxTs[j])
			}
		}
	}
}

func (v *verifier) txnIndex(path string, seg *segmentInfo) {
	b, err := readSmall(path)
	if err != nil {
		v.problem(path, "%v", err)
		return
	}
	entries, err := partition.TxnIndexEntries(b)
	if err != nil {
		v.problem(path, "%v", err)
	}
	for i, e := range entries {
		if e.LastOffset < seg.base || e.LastOffset > seg.lastOffset {
			v.problem(path, "entry %d: the abort marker of producer %d at offset %d is outside the segment [%d, %d]", i, e.ProducerID, e.LastOffset, seg.base, seg.lastOffset)
		}
	}
}

// checkpoint checks a data dir checkpoint file, if present, against the
// log end offsets of the partitions found.
func (v *verifier) checkpoint(path string, leo map[string]int64) {
	b, err := readSmall(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var es []partition.CheckpointEntry
	if err == nil {
		es, err = partition.OffsetCheckpoint(b)
	}
	if err != nil {
		v.problem(path, "%v", err)
		return
	}
	for _, e := range es {
		end, ok := leo[e.Topic+"-"+strconv.Itoa(int(e.Partition))]
		if ok && e.Offset > end {
			v.problem(path, "%s-%d: offset %d is past the log end offset %d", e.Topic, e.Partition, e.Offset, end)
		}
	}
}
