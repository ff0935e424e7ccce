package partition

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Recovery at start-up, as Kafka's LogLoader does it:
//
//   - After a clean shutdown (.kafka_cleanshutdown present and the
//     partition in the recovery-point checkpoint) no segment data is read:
//     the log end offset is the recovery point, and each segment's largest
//     timestamp is its time index's last entry.
//   - Otherwise the segments from the one holding the recovery point on
//     are re-validated batch by batch (length, magic, CRC, offsets). The
//     first bad batch and everything after it is truncated, later segments
//     are deleted, and a Warn event names what was dropped. Their indexes
//     are rebuilt from the .log.
//   - Segments below the recovery point are only listed (no file is
//     opened): at their first use they keep their indexes when those are
//     present and consistent with the .log's size and offsets, and
//     otherwise the indexes are rebuilt (segment_files.go). The active
//     segment is opened and checked at once.

// recoveryChunk is the read size of a recovery scan.
const recoveryChunk = 1 << 20

// errCorrupt marks a segment whose bytes do not parse as batches.
var errCorrupt = errors.New("partition: corrupt segment")

func errCorruptSegment(seg *segment, pos int64) error {
	return fmt.Errorf("%w: %s at position %d", errCorrupt, seg.path(logSuffix), pos)
}

// logParams is what opening a log needs to know.
type logParams struct {
	topic         string
	partition     int32
	id            TopicID
	cfg           LogConfig
	recoveryPoint int64 // from the checkpoint, -1 if absent
	logStart      int64 // from the checkpoint, -1 if absent
	clean         bool  // the data dir was shut down cleanly
	create        bool  // a new partition: the directory must not hold a log
	// replayBudget is this log's share of Config.ReplayCacheBudget:
	// start-up opens loadWorkers logs at once, each with a share, so
	// that together they hold at most the budget. 0: all of it.
	replayBudget int64
}

func partitionDirName(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }

// openLog opens or creates one partition's log, recovering it if needed.
func (s *Store) openLog(p logParams) (*Log, error) {
	dir := filepath.Join(s.cfg.Dir, partitionDirName(p.topic, p.partition))
	l := &Log{
		store:     s,
		topic:     p.topic,
		partition: p.partition,
		dir:       dir,
		logger:    s.logger.With().Str("topic", p.topic).Int32("partition", p.partition).Logger(),
	}
	l.fcond = sync.NewCond(&l.fmu)
	l.closing = make(chan struct{})
	l.waitCh.Store(newWaiters())
	cfg := p.cfg
	l.cfg.Store(&cfg)
	l.hw.Store(&hwMark{})
	l.pstate = newProducerState()

	var statErr error // whether a new partition's directory was there before
	if p.create {
		_, statErr = s.fs.Stat(dir)
	}
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if p.create {
		if err := l.createFiles(p.id); err != nil {
			if errors.Is(statErr, fs.ErrNotExist) {
				s.fs.RemoveAll(dir) // ours: a retry must find none
			}
			return nil, err
		}
		l.startIdle()
		return l, nil
	}
	if err := l.checkPartitionMetadata(p.id, p.create); err != nil {
		return nil, err
	}
	segs, err := l.loadSegments(p)
	if err != nil {
		for _, seg := range segs {
			seg.close()
		}
		return nil, err
	}
	l.startIdle()
	return l, nil
}

// startIdle hands a just opened log's active segment to the cache of
// open segments, as idleActive would: until its first append a partition
// keeps no descriptor of its own (segment_files.go). The log is not
// shared yet.
func (l *Log) startIdle() {
	l.activeIdle = true
	if l.active.unpinLocked() {
		l.active.pushIdle()
	}
}

// loadWorkers is how many logs start-up opens at once. Opening one is a
// few dozen small file system calls (the directory, partition.metadata,
// the leader-epoch checkpoint, the active segment's three files, the
// producer snapshot), each mostly waiting in the kernel, so with
// thousands of partitions the start-up time is their latency, not CPU:
// several in flight overlap it. Kafka opens logs with
// num.recovery.threads.per.data.dir threads (kcompatd accepts and ignores
// that property: opening is not its recovery, which is lazy).
const loadWorkers = 8

// openLogs opens the logs of ps with loadWorkers goroutines; logs[i] is
// ps[i]'s, nil where it failed; err is the first failure in ps's order.
func (s *Store) openLogs(ps []logParams) (logs []*Log, err error) {
	logs = make([]*Log, len(ps))
	errs := make([]error, len(ps))
	workers := min(loadWorkers, len(ps))
	for i := range ps {
		ps[i].replayBudget = max(1, s.cfg.ReplayCacheBudget/int64(max(workers, 1)))
	}
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// After a failure the rest are not opened: start-up fails.
			for i := int(next.Add(1) - 1); i < len(ps) && !failed.Load(); i = int(next.Add(1) - 1) {
				if logs[i], errs[i] = s.openLog(ps[i]); errs[i] != nil {
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if e != nil {
			return logs, fmt.Errorf("partition: opening %s-%d: %w", ps[i].topic, ps[i].partition, e)
		}
	}
	return logs, nil
}

// createFiles fills a new partition's directory: partition.metadata, an
// empty leader-epoch-checkpoint and the first segment, without a single
// fsync, so that creating thousands of partitions under the catalog lock
// costs no fsync per partition. That is safe because the catalog is the
// commit point and everything here can be rebuilt from it: the caller
// fsyncs the data dir once for all new directories before writing the
// catalog; a crash before the catalog is durable leaves directories the
// next start sets aside as stray; after it, a lost or torn file is made
// again at the next start (a missing segment is created, a missing or
// unreadable partition.metadata or leader-epoch-checkpoint rewritten),
// and the log's first flush fsyncs the directory (dirDirty).
func (l *Log) createFiles(id TopicID) error {
	fsys := l.store.fs
	entries, err := fsys.ReadDir(l.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := parseSegmentFileName(e.Name(), logSuffix); ok {
			return fmt.Errorf("partition: new partition directory %s already holds segments", l.dir)
		}
	}
	if err := writeNewFile(fsys, filepath.Join(l.dir, partitionMetadataFile), encodePartitionMetadata(id)); err != nil {
		return err
	}
	if err := writeNewFile(fsys, filepath.Join(l.dir, leaderEpochFile), encodeLeaderEpochCheckpoint(nil)); err != nil {
		return err
	}
	nowMs := l.store.clock.Now().UnixMilli()
	seg, err := openSegment(fsys, l.dir, 0, l.cfg.Load(), true, nowMs)
	if err != nil {
		return err
	}
	seg.adopt(l)
	segs := []*segment{seg}
	l.active = seg
	l.segs.Store(&segs)
	l.dirDirty = true
	l.lastFlushMs.Store(nowMs)
	l.publishTxnView()
	return nil
}

// writeNewFile writes a small file without fsyncing it (createFiles).
func writeNewFile(fsys vfs.FS, name string, data []byte) error {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if e := f.Close(); err == nil {
		err = e
	}
	return err
}

// checkPartitionMetadata writes partition.metadata, or checks the topic id
// in it (Kafka refuses a log whose topic id differs: InconsistentTopicId).
func (l *Log) checkPartitionMetadata(id TopicID, create bool) error {
	name := filepath.Join(l.dir, partitionMetadataFile)
	data, err := readFile(l.store.fs, name, 4096)
	if err == nil && !create {
		got, derr := decodePartitionMetadata(data)
		if derr == nil {
			if got != id {
				return fmt.Errorf("partition: %s has topic id %s, catalog says %s", name, got, id)
			}
			return nil
		}
		l.logger.Warn().Err(derr).Str("file", name).Msg("rewriting unreadable partition.metadata")
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return writeFileAtomic(l.store.fs, name, encodePartitionMetadata(id))
}

// loadSegments opens the partition's segments, recovers them, and sets the
// log's offsets. It returns the segments it opened, for cleanup on error.
func (l *Log) loadSegments(p logParams) ([]*segment, error) {
	fsys := l.store.fs
	nowMs := l.store.clock.Now().UnixMilli()
	cfg := l.cfg.Load()
	// One listing of the directory serves the swaps, the snapshots and
	// the segments, unless completing swaps changed it.
	entries, changed, err := l.completeSwaps()
	if err != nil {
		return nil, err
	}
	if changed {
		if entries, err = fsys.ReadDir(l.dir); err != nil {
			return nil, err
		}
	}
	snaps := snapshotOffsetsIn(entries)
	budget := l.store.cfg.ReplayCacheBudget
	if p.replayBudget > 0 {
		budget = p.replayBudget
	}
	l.replayCache = newReplayCache(snaps, p.clean, budget)
	defer func() { l.replayCache = nil }()
	var bases []int64
	have := map[string]bool{}
	for _, e := range entries {
		if b, ok := parseSegmentFileName(e.Name(), logSuffix); ok {
			bases = append(bases, b)
		}
		have[e.Name()] = true
	}
	for _, e := range entries {
		// An index without its .log is of no use (Kafka deletes it too).
		name := e.Name()
		for _, suf := range []string{indexSuffix, timeIndexSuffix, ".txnindex"} {
			if b, ok := parseSegmentFileName(name, suf); ok && !have[segmentFileName(b, logSuffix)] {
				if err := fsys.Remove(filepath.Join(l.dir, name)); err != nil {
					return nil, err
				}
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	if p.create && len(bases) > 0 {
		return nil, fmt.Errorf("partition: new partition directory %s already holds segments", l.dir)
	}

	var segs []*segment
	if len(bases) == 0 {
		start := max(p.logStart, 0)
		seg, err := openSegment(fsys, l.dir, start, cfg, true, nowMs)
		if err != nil {
			return nil, err
		}
		seg.adopt(l)
		segs = append(segs, seg)
		l.dirDirty = true
	}
	// Every segment is first only listed (a Stat, no file opened); the
	// ones recovery reads, and the active one, are opened below.
	for i, b := range bases {
		seg := newSegment(l.dir, b, cfg, nowMs)
		seg.adopt(l)
		seg.missingIdx = !have[segmentFileName(b, indexSuffix)] || !have[segmentFileName(b, timeIndexSuffix)]
		seg.listed.Store(true)
		if i+1 < len(bases) {
			seg.listedNext = bases[i+1]
		}
		st, err := fsys.Stat(seg.path(logSuffix))
		if err != nil {
			return segs, err
		}
		seg.size.Store(st.Size())
		segs = append(segs, seg)
	}
	// open opens a listed segment's files without loading its indexes
	// (recovery rebuilds or loads them itself).
	open := func(seg *segment) error {
		seg.closeMu.Lock()
		defer seg.closeMu.Unlock()
		seg.listed.Store(false)
		seg.pinned = true
		return seg.openFilesLocked()
	}

	last := len(segs) - 1
	recoverFrom := 0
	switch {
	case len(bases) == 0:
		recoverFrom = len(segs)
	case p.clean && p.recoveryPoint >= segs[last].base &&
		(segs[last].size.Load() == 0) == (p.recoveryPoint == segs[last].base):
		// Trusted without reading: the checkpoint is the log end offset.
		// (An empty active segment with a recovery point past its base,
		// or the reverse, is not what a clean shutdown leaves.)
		recoverFrom = len(segs)
	case p.recoveryPoint >= 0:
		recoverFrom = sort.Search(len(segs), func(i int) bool { return segs[i].base > p.recoveryPoint }) - 1
		recoverFrom = max(recoverFrom, 0)
	}

	leo := segs[last].base
	if recoverFrom == len(segs) && len(bases) > 0 {
		leo = p.recoveryPoint
	}
	if recoverFrom == len(segs) && len(bases) > 0 {
		// Below the recovery point only the active segment is opened
		// now; the others load their indexes at their first use.
		seg := segs[last]
		if err := open(seg); err != nil {
			return segs, err
		}
		if seg.missingIdx || !l.loadIndexes(seg, leo, true) {
			l.logger.Warn().Int64("segment", seg.base).Msg("rebuilding missing or inconsistent index")
			if _, _, err := l.recoverSegment(seg, true); err != nil {
				return segs, err
			}
		}
	}
	for i := recoverFrom; i < len(segs); i++ {
		if segs[i].listed.Load() {
			if err := open(segs[i]); err != nil {
				return segs, err
			}
		}
		next, truncated, err := l.recoverSegment(segs[i], i == last)
		if err != nil {
			return segs, err
		}
		if i == last {
			leo = next
		}
		if truncated && i < last {
			// Everything after a corrupt batch is gone, as in Kafka.
			for _, later := range segs[i+1:] {
				l.logger.Warn().Int64("segment", later.base).Int64("bytes", later.size.Load()).Msg("deleting segment after corrupt batch")
				later.close()
				for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
					if err := fsys.Remove(later.path(suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return segs[:i+1], err
					}
				}
			}
			segs = segs[:i+1]
			last = i
			leo = next
			l.dirDirty = true
			break
		}
	}
	if recoverFrom < len(segs) {
		// Make what recovery kept durable before trusting it as the
		// recovery point.
		for _, seg := range segs[recoverFrom:] {
			if err := seg.log.Sync(); err != nil {
				return segs, err
			}
			if err := seg.syncIndexes(); err != nil {
				return segs, err
			}
		}
	}
	if l.dirDirty {
		if err := fsys.SyncDir(l.dir); err != nil {
			return segs, err
		}
		l.dirDirty = false
	}

	active := segs[last]
	for _, seg := range segs[:last] {
		if seg.filesOpen {
			seg.unpin() // recovered and fsynced above
		}
	}
	l.active = active
	l.segs.Store(&segs)
	l.leo.Store(leo)
	l.flushed.Store(leo)
	l.lastFlushMs.Store(nowMs)
	l.logStart.Store(max(p.logStart, segs[0].base))
	if l.logStart.Load() > leo {
		l.logStart.Store(leo)
	}
	l.hw.Store(&hwMark{offset: leo, segBase: active.base, pos: active.size.Load()})
	for i, seg := range segs {
		next := leo
		if i < last {
			next = segs[i+1].base
		}
		if !have[segmentFileName(seg.base, txnIndexSuffix)] {
			continue // none: no need to try opening it
		}
		if err := l.loadTxnIndex(seg, next); err != nil {
			return segs, err
		}
		if i < last {
			// Its entries are in memory; the file is reopened only if
			// recovery's replay appends or truncates it.
			seg.closeMu.Lock()
			err := seg.closeTxn()
			seg.closeMu.Unlock()
			if err != nil {
				return segs, err
			}
		}
	}
	if err := l.loadProducerState(segs, leo, l.logStart.Load(), p.clean); err != nil {
		return segs, err
	}
	return segs, l.loadLeaderEpoch(leo)
}

// loadLeaderEpoch reads leader-epoch-checkpoint; a non-empty log without
// an entry gets one for epoch 0 from the log start offset.
func (l *Log) loadLeaderEpoch(leo int64) error {
	name := filepath.Join(l.dir, leaderEpochFile)
	data, err := readFile(l.store.fs, name, maxCheckpointFileBytes)
	if err == nil {
		entries, derr := decodeLeaderEpochCheckpoint(data)
		if derr == nil && len(entries) > 0 && entries[0].StartOffset <= leo {
			l.epochWritten = true
			return nil
		}
		if derr != nil {
			l.logger.Warn().Err(derr).Msg("rewriting unreadable leader-epoch-checkpoint")
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if leo > l.logStart.Load() {
		return l.writeLeaderEpochLocked(l.logStart.Load())
	}
	return writeFileAtomic(l.store.fs, name, encodeLeaderEpochCheckpoint(nil))
}

// Suffixes of the cleaner's temporary files (Kafka's LogFileUtils).
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
	deletedSuffix = ".deleted"
)

// completeSwaps finishes or undoes a segment replacement interrupted by a
// crash, as Kafka's LogLoader does: .deleted and .cleaned files go (the
// originals, or their .swap replacements, are complete); a .swap at or
// above the smallest .cleaned base belongs to an unfinished split and goes
// too (KAFKA-6264); the remaining .swap segments replace every ordinary
// segment whose base lies in the offsets they cover, and lose their suffix.
// It returns the directory's listing as it read it, and whether it then
// removed or renamed anything in it.
func (l *Log) completeSwaps() (entries []fs.DirEntry, changed bool, err error) {
	fsys := l.store.fs
	entries, err = fsys.ReadDir(l.dir)
	if err != nil {
		return nil, false, err
	}
	minCleaned := int64(math.MaxInt64)
	var swaps []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(l.dir, name)
		switch {
		case strings.HasSuffix(name, ".tmp"), strings.HasSuffix(name, deletedSuffix):
			// Leftovers of an interrupted atomic write or deletion.
			if err := fsys.Remove(path); err != nil {
				return nil, true, err
			}
			changed = true
		case strings.HasSuffix(name, cleanedSuffix):
			if b, ok := parseSegmentFileName(strings.TrimSuffix(name, cleanedSuffix), filepath.Ext(strings.TrimSuffix(name, cleanedSuffix))); ok {
				minCleaned = min(minCleaned, b)
			}
			if err := fsys.Remove(path); err != nil {
				return nil, true, err
			}
			changed = true
		case strings.HasSuffix(name, swapSuffix):
			swaps = append(swaps, name)
		}
	}
	if len(swaps) == 0 {
		return entries, changed, nil
	}
	lo, hi := int64(math.MaxInt64), int64(-1)
	var keep []string
	for _, name := range swaps {
		stem := strings.TrimSuffix(name, swapSuffix)
		b, ok := parseSegmentFileName(stem, filepath.Ext(stem))
		if !ok || b >= minCleaned {
			if err := fsys.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, true, err
			}
			continue
		}
		keep = append(keep, name)
		if filepath.Ext(stem) != logSuffix {
			continue
		}
		next, err := l.nextOffsetOfFile(filepath.Join(l.dir, name), b)
		if err != nil {
			return nil, true, err
		}
		lo, hi = min(lo, b), max(hi, next)
	}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		b, ok := parseSegmentFileName(name, ext)
		segFile := ext == logSuffix || ext == indexSuffix || ext == timeIndexSuffix || ext == ".txnindex"
		if ok && segFile && b >= lo && b < hi {
			l.logger.Warn().Str("file", name).Msg("deleting segment replaced by an interrupted swap")
			if err := fsys.Remove(filepath.Join(l.dir, name)); err != nil {
				return nil, true, err
			}
		}
	}
	for _, name := range keep {
		if err := fsys.Rename(filepath.Join(l.dir, name), filepath.Join(l.dir, strings.TrimSuffix(name, swapSuffix))); err != nil {
			return nil, true, err
		}
	}
	l.dirDirty = true
	return entries, true, nil
}

// nextOffsetOfFile is the offset after the last whole batch of a .log file
// (base if it has none), reading only batch headers.
func (l *Log) nextOffsetOfFile(path string, base int64) (int64, error) {
	f, err := l.store.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	next := base
	var hb [batchPrefix]byte
	for pos := int64(0); pos+batchPrefix <= st.Size(); {
		if _, err := f.ReadAt(hb[:], pos); err != nil {
			return 0, err
		}
		l.store.recoveryBytes.Add(batchPrefix)
		h := recordbatch.Header(hb[:])
		sz := int64(h.BatchLength()) + recordbatch.LogOverhead
		if sz < recordbatch.HeaderSize || pos+sz > st.Size() {
			break
		}
		next = h.BaseOffset() + int64(h.LastOffsetDelta()) + 1
		pos += sz
	}
	return next, nil
}

// loadIndexes adopts a segment's index files without reading the .log,
// reporting false if they are inconsistent with it. next is the offset
// after the segment.
func (l *Log) loadIndexes(seg *segment, next int64, isLast bool) bool {
	size := seg.size.Load()
	offs, err := seg.offIdx.readAll(seg.base)
	if err != nil {
		return false
	}
	times, err := seg.timeIdx.readAll(seg.base)
	if err != nil {
		return false
	}
	for _, e := range offs {
		if e.val >= size || e.key >= next {
			return false
		}
	}
	for _, e := range times {
		if e.val >= next {
			return false
		}
	}
	if size > 0 && next <= seg.base {
		return false
	}
	for _, x := range []struct {
		idx *index
		n   int
	}{{seg.offIdx, len(offs)}, {seg.timeIdx, len(times)}} {
		// Drop Kafka's zero-filled preallocation (or any junk after the
		// valid entries), so appends continue right after them.
		if st, err := x.idx.f.Stat(); err != nil {
			return false
		} else if want := int64(x.n * x.idx.entrySize); st.Size() != want {
			if err := x.idx.f.Truncate(want); err != nil {
				return false
			}
		}
	}
	seg.offIdx.setLoaded(offs)
	seg.timeIdx.setLoaded(times)
	if len(times) > 0 {
		t := times[len(times)-1]
		seg.times.set(t.key, t.val)
	}
	if isLast && len(offs) > 0 {
		seg.bytesSinceIndex = size - offs[len(offs)-1].val
	} else if isLast {
		seg.bytesSinceIndex = size
	}
	return true
}

// recoverSegment re-validates every batch of seg, truncates at the first
// bad one, and rebuilds both indexes. It returns the offset after the last
// good batch and whether anything was truncated.
func (l *Log) recoverSegment(seg *segment, isLast bool) (next int64, truncated bool, err error) {
	st, err := seg.log.Stat()
	if err != nil {
		return 0, false, err
	}
	size := st.Size()
	cfg := l.cfg.Load()
	r := chunkReader{f: seg.log, size: size, counter: &l.store.recoveryBytes}

	var offs, times []indexEntry
	var bytesSince int64
	maxTs, offMaxTs, rollTs := int64(-1), int64(-1), int64(-1)
	lastTimeKey := int64(math.MinInt64)
	next = seg.base
	pos := int64(0)
	var why error
	var collected [][]byte
	var collectedBytes int64
	overflow := false
	for pos < size {
		hb, err := r.get(pos, min(recordbatch.HeaderSize, size-pos))
		if err != nil {
			return 0, false, err
		}
		h, err := recordbatch.ParseHeader(hb)
		if err != nil {
			why = err
			break
		}
		bsz := int64(h.Size())
		if pos+bsz > size {
			why = recordbatch.ErrTruncated
			break
		}
		b, err := r.get(pos, bsz)
		if err != nil {
			return 0, false, err
		}
		h = recordbatch.Header(b)
		if err := h.CheckCRC(); err != nil {
			why = err
			break
		}
		if h.BaseOffset() < next || h.LastOffsetDelta() < 0 || h.LastOffset()-seg.base > math.MaxInt32 {
			why = fmt.Errorf("batch offsets [%d, %d] out of order", h.BaseOffset(), h.LastOffset())
			break
		}
		if ts := h.MaxTimestamp(); ts > maxTs {
			maxTs, offMaxTs = ts, h.LastOffset()
		}
		if pos == 0 {
			rollTs = h.MaxTimestamp()
		}
		if rc := l.replayCache; rc != nil && !overflow && h.ProducerID() >= 0 && h.LastOffset() >= rc.from {
			// Kept for the producer-state replay, which then need not
			// read this segment again: the header, or a control
			// batch whole (its marker). Past the budget the replay
			// reads the segment again instead.
			n := int64(recordbatch.HeaderSize)
			if h.Control() {
				n = bsz
			}
			if collectedBytes+n+replayEntryOverhead > rc.budget {
				overflow, collected = true, nil
			} else {
				collected = append(collected, append([]byte(nil), b[:n]...))
				collectedBytes += n + replayEntryOverhead
			}
		}
		if bytesSince > int64(cfg.IndexIntervalBytes) && int64(len(offs)) < seg.offIdx.max {
			offs = append(offs, indexEntry{h.LastOffset(), pos})
			if maxTs > lastTimeKey && int64(len(times)) < seg.timeIdx.max {
				times = append(times, indexEntry{maxTs, offMaxTs})
				lastTimeKey = maxTs
			}
			bytesSince = 0
		}
		bytesSince += bsz
		next = h.LastOffset() + 1
		pos += bsz
	}
	if pos < size {
		l.logger.Warn().Err(why).Int64("segment", seg.base).Int64("offset", next).Int64("position", pos).
			Int64("bytes", size-pos).Msg("truncating corrupt or torn tail of segment")
		if err := seg.log.Truncate(pos); err != nil {
			return 0, false, err
		}
		truncated = true
	}
	if !isLast && maxTs > lastTimeKey {
		// The final entry of an inactive segment: its largest timestamp.
		times = append(times, indexEntry{maxTs, offMaxTs})
	}
	if err := seg.offIdx.rewrite(offs, seg.base); err != nil {
		return 0, false, err
	}
	if err := seg.timeIdx.rewrite(times, seg.base); err != nil {
		return 0, false, err
	}
	seg.size.Store(pos)
	if rc := l.replayCache; rc != nil && !overflow {
		rc.segs[seg] = collected
		rc.budget -= collectedBytes
	}
	seg.times.set(maxTs, offMaxTs)
	seg.rollTs, seg.rollTsKnown = rollTs, true
	seg.bytesSinceIndex = bytesSince
	return next, truncated, nil
}

// replayEntryOverhead is what each kept header costs beyond its bytes (a
// slice header).
const replayEntryOverhead = 24

// replayCache is the producer batches recovery read, per segment, for the
// producer-state replay that follows (loadProducerState).
type replayCache struct {
	// from: only batches ending at or past it are kept (the newest
	// snapshot; the replay starts there unless that snapshot turns out
	// unusable, and then reads the segments again).
	from   int64
	budget int64 // bytes left
	segs   map[*segment][][]byte
}

// newReplayCache is the cache, holding up to budget bytes, for a log whose
// snapshots are at snaps (ascending), or nil when no replay will follow:
// after a clean shutdown without snapshots the producer state starts empty
// at the log end.
func newReplayCache(snaps []int64, clean bool, budget int64) *replayCache {
	from := int64(-1)
	switch {
	case len(snaps) > 0:
		from = snaps[len(snaps)-1]
	case clean:
		return nil
	}
	return &replayCache{from: from, budget: budget, segs: map[*segment][][]byte{}}
}

// batches returns seg's kept batches if they hold every producer batch
// ending at or past from.
func (rc *replayCache) batches(seg *segment, from int64) ([][]byte, bool) {
	if rc == nil || from < rc.from {
		return nil, false
	}
	b, ok := rc.segs[seg]
	return b, ok
}

// chunkReader reads a file in large chunks for a forward scan, counting
// the bytes it reads.
type chunkReader struct {
	f       io.ReaderAt
	size    int64
	buf     []byte
	start   int64 // file position of buf[0]
	counter interface{ Add(int64) int64 }
}

// get returns n bytes at pos. REQUIRES: pos+n <= size.
func (r *chunkReader) get(pos, n int64) ([]byte, error) {
	if pos >= r.start && pos+n <= r.start+int64(len(r.buf)) {
		return r.buf[pos-r.start : pos-r.start+n], nil
	}
	want := max(n, min(recoveryChunk, r.size-pos))
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
	}
	r.buf = r.buf[:want]
	m, err := r.f.ReadAt(r.buf, pos)
	r.counter.Add(int64(m))
	if err != nil && !(errors.Is(err, io.EOF) && int64(m) == want) {
		return nil, err
	}
	r.start = pos
	return r.buf[:n], nil
}
