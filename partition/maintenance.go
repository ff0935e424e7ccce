package partition

// The cleaner's and retention's way into a log: a snapshot of the
// segments, reads of a segment's bytes, the atomic swap of cleaned output
// for old segments, and the deletion of the oldest segments. The active
// segment is never replaced; it is deleted only by retention, after a roll.
//
// Replaced and deleted segments are renamed "<name>.deleted" at once and
// removed file.delete.delay.ms later (Kafka's delay, so fetches that
// already hold the old segment finish reading it).

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"
)

// ErrSegmentsChanged means the segments named in a replacement are no
// longer the log's (the log was truncated, cleaned or deleted meanwhile).
var ErrSegmentsChanged = errors.New("partition: segments changed")

// SegmentInfo is a snapshot of one segment.
type SegmentInfo struct {
	BaseOffset int64
	// NextOffset is the offset after the segment: the next segment's base
	// offset, or the log end offset for the active segment.
	NextOffset int64
	Size       int64 // bytes in the .log
	// MaxTimestamp is the largest batch max timestamp in the segment, -1
	// if none.
	MaxTimestamp int64
	// LargestTimestamp is Kafka's LogSegment.largestTimestamp, which
	// retention.ms and min.compaction.lag.ms measure from: MaxTimestamp,
	// or for a segment without timestamps (an empty one, one the cleaner
	// emptied, or records with timestamp -1) its .log file's modification
	// time in ms. The cleaner gives its output the modification time of
	// the last segment it replaced, as Kafka does, so an emptied segment
	// is as old as what it replaced.
	LargestTimestamp int64
	// OffsetIndexBytes and TimeIndexBytes are the sizes of the segment's
	// .index and .timeindex entries (Kafka's sizeInBytes of an inactive
	// segment's trimmed indexes), which bound the cleaner's groups.
	OffsetIndexBytes, TimeIndexBytes int64
	Active                           bool
	LogPath                          string // the .log file, for naming the cleaner's output
	unloaded                         bool   // listed at start-up, its indexes not loaded yet
}

// Segments returns the log's segments, oldest first. Segments start-up
// only listed load their indexes here (their largest timestamp is the
// time index's last entry), as Kafka's largestTimestamp loads a LazyIndex.
func (l *Log) Segments() []SegmentInfo {
	l.loadListed()
	out := l.segmentsSnapshot()
	for i := range out {
		// Outside the mutex: a file-system call per segment without
		// timestamps, which is rare (Kafka's largestTimestamp).
		if out[i].unloaded {
			// Its time index could not be read now (out of
			// descriptors): its age is unknown, so it counts as new,
			// and neither retention nor the cleaner's lag takes it.
			out[i].LargestTimestamp = l.store.clock.Now().UnixMilli()
		} else if out[i].LargestTimestamp < 0 {
			out[i].LargestTimestamp = l.lastModified(out[i].LogPath)
		}
	}
	return out
}

// lastModified returns a .log file's modification time in ms. A file that
// cannot be read counts as modified now, so nothing expires by it.
func (l *Log) lastModified(path string) int64 {
	fi, err := l.store.fs.Stat(path)
	if err != nil {
		return l.store.clock.Now().UnixMilli()
	}
	return fi.ModTime().UnixMilli()
}

func (l *Log) segmentsSnapshot() []SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := *l.segs.Load()
	out := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		next := l.leo.Load()
		if i+1 < len(segs) {
			next = segs[i+1].base
		}
		maxTs, _ := s.times.get()
		out[i] = SegmentInfo{
			BaseOffset:       s.base,
			NextOffset:       next,
			Size:             s.size.Load(),
			MaxTimestamp:     maxTs,
			LargestTimestamp: maxTs,
			Active:           s == l.active,
			LogPath:          s.path(logSuffix),
			unloaded:         s.listed.Load(),
		}
		out[i].OffsetIndexBytes, out[i].TimeIndexBytes = s.indexBytes()
	}
	return out
}

// ReadSegment reads the .log bytes of the segment with base offset base at
// off, like io.ReaderAt, never past the bytes appended so far.
func (l *Log) ReadSegment(base int64, p []byte, off int64) (int, error) {
	if l.gone.Load() {
		return 0, l.goneErr()
	}
	segs := *l.segs.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base >= base })
	if i == len(segs) || segs[i].base != base {
		return 0, fmt.Errorf("%w: no segment at %d", ErrSegmentsChanged, base)
	}
	seg := segs[i]
	size := seg.size.Load()
	if off >= size {
		return 0, fmt.Errorf("partition: read at %d past the end (%d) of segment %d", off, size, base)
	}
	var n int
	err := seg.withFiles(func() (err error) {
		n, err = seg.log.ReadAt(p[:min(int64(len(p)), size-off)], off)
		return err
	})
	if err != nil {
		return n, l.readErr(err)
	}
	return n, nil
}

// ReplaceSegments swaps the cleaner's output in for the segments with base
// offsets oldBases (consecutive, oldest first, none active). The output is
// one segment with base offset newBase (normally oldBases[0]) already
// written and fsynced as "<newBase>.log.cleaned", with optional
// ".index.cleaned" and ".timeindex.cleaned" files (rebuilt when missing
// or inconsistent) and an optional ".txnindex.cleaned"
// (WriteCleanedTxnIndex; without one the new segment indexes the old
// segments' aborted transactions whose markers it holds). As in Kafka's replaceSegments the steps are: rename
// .cleaned to .swap, install the new segment, rename the old segments'
// files to .deleted, rename .swap to the final names, fsync the directory;
// a crash at any step leaves the old set or the new set (see
// completeSwaps). If the segments changed meanwhile (ErrSegmentsChanged)
// or a step before the swap fails, the .cleaned files are removed and the
// old segments stay.
func (l *Log) ReplaceSegments(oldBases []int64, newBase int64) error {
	if len(oldBases) == 0 {
		return errors.New("partition: ReplaceSegments without segments")
	}
	fsys := l.store.fs
	cfg := l.cfg.Load()
	final := func(suf string) string { return filepath.Join(l.dir, segmentFileName(newBase, suf)) }
	suffixes := []string{logSuffix, indexSuffix, timeIndexSuffix}
	seg, err := openSegmentNamed(fsys, l.dir, newBase, cfg, false, l.store.clock.Now().UnixMilli(), cleanedSuffix)
	if err != nil {
		if !l.gone.Load() {
			l.store.markOffline(err)
		}
		return storageError(err)
	}
	seg.adopt(l)
	// abort drops the cleaner's output, as Kafka does when a cleaning
	// cannot complete; the old segments stay. An I/O error takes the data
	// dir offline, as one in Kafka's cleaner does.
	abort := func(err error) error {
		if errors.Is(err, ErrStorage) && !l.gone.Load() {
			l.store.markOffline(err)
		}
		seg.close()
		for _, suf := range append(suffixes, txnIndexSuffix) {
			fsys.Remove(final(suf) + cleanedSuffix)
		}
		return err
	}
	st, err := seg.log.Stat()
	if err != nil {
		return abort(storageError(err))
	}
	seg.size.Store(st.Size())

	// Check the segments and load or rebuild the new indexes without the
	// log's mutex, then check again under it: only appends and rolls can
	// have happened meanwhile, unless someone else replaced or deleted.
	check := func(segs []*segment) (first int, next int64, ok bool) {
		first = sort.Search(len(segs), func(i int) bool { return segs[i].base >= oldBases[0] })
		if first+len(oldBases) >= len(segs) { // the active segment stays
			return 0, 0, false
		}
		for i, b := range oldBases {
			if segs[first+i].base != b {
				return 0, 0, false
			}
		}
		next = segs[first+len(oldBases)].base
		return first, next, newBase >= oldBases[0] && newBase < next
	}
	_, next, ok := check(*l.segs.Load())
	if !ok {
		return abort(fmt.Errorf("%w: %v", ErrSegmentsChanged, oldBases))
	}
	if !l.loadIndexes(seg, next, false) || (seg.size.Load() > 0 && seg.timeIdx.n.Load() == 0) {
		if _, _, err := l.recoverSegment(seg, false); err != nil {
			return abort(storageError(err))
		}
		if err := seg.syncIndexes(); err != nil {
			return abort(storageError(err))
		}
	}
	// The aborted transactions whose markers the output keeps.
	oldSegs := *l.segs.Load()
	firstOld, _, _ := check(oldSegs)
	hasTxn, err := l.swapAbortedEntries(seg, oldSegs[firstOld:firstOld+len(oldBases)], final(txnIndexSuffix)+cleanedSuffix)
	if err != nil {
		return abort(storageError(err))
	}
	if hasTxn {
		suffixes = append(suffixes, txnIndexSuffix)
	}
	// Kafka's cleaned.setLastModified(segments.last.lastModified): the new
	// files keep the last replaced segment's modification time, which is
	// the age retention.ms and min.compaction.lag.ms see when the segment
	// has no timestamps (one the cleaner emptied). Should the old file be
	// gone already, the check below fails anyway; another Stat error only
	// leaves the pass's time, which delays expiry, never hastens it.
	if fi, err := fsys.Stat(filepath.Join(l.dir, segmentFileName(oldBases[len(oldBases)-1], logSuffix))); err == nil {
		mtime := fi.ModTime()
		for _, suf := range suffixes {
			if err := fsys.Chtimes(final(suf)+cleanedSuffix, mtime, mtime); err != nil {
				return abort(storageError(err))
			}
		}
		// Make the time durable with the data (an fsync writes the inode).
		if err := seg.log.Sync(); err != nil {
			return abort(storageError(err))
		}
	}

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return abort(l.goneErr())
	}
	if err := l.offlineLocked(); err != nil {
		l.mu.Unlock()
		return abort(err)
	}
	segs := *l.segs.Load()
	first, next2, ok := check(segs)
	if !ok || next2 != next {
		l.mu.Unlock()
		return abort(fmt.Errorf("%w: %v", ErrSegmentsChanged, oldBases))
	}
	for _, suf := range suffixes {
		if err := fsys.Rename(final(suf)+cleanedSuffix, final(suf)+swapSuffix); err != nil {
			for _, suf := range suffixes {
				fsys.Remove(final(suf) + swapSuffix)
			}
			l.mu.Unlock()
			return abort(storageError(err))
		}
	}
	old := append([]*segment(nil), segs[first:first+len(oldBases)]...)
	updated := make([]*segment, 0, len(segs)-len(old)+1)
	updated = append(updated, segs[:first]...)
	updated = append(updated, seg)
	updated = append(updated, segs[first+len(old):]...)
	l.segs.Store(&updated)
	l.mu.Unlock()

	// Past the point of no return: a failure leaves the swap for the next
	// start to finish (completeSwaps), and the dir offline until then.
	if err := l.retire(old); err != nil {
		l.store.markOffline(err)
		return err
	}
	for _, suf := range suffixes {
		if err := fsys.Rename(final(suf)+swapSuffix, final(suf)); err != nil {
			l.store.markOffline(err)
			return storageError(err)
		}
	}
	if err := l.syncDirSafely(); err != nil {
		return err
	}
	seg.unpin() // fsynced, under its final names
	return nil
}

// DeleteSegmentsBefore deletes every segment whose next offset is <=
// offset, which must be a segment's base offset or the log end offset, and
// not past the high watermark; with the log end offset, the active segment
// goes too, after a roll to a new empty one. The log start offset moves to
// the first remaining segment's base offset (never back). It returns the
// number of segments deleted.
func (l *Log) DeleteSegmentsBefore(offset int64) (int, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, l.goneErr()
	}
	if err := l.offlineLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	if offset > l.hw.Load().offset {
		l.mu.Unlock()
		return 0, ErrOffsetOutOfRange
	}
	cfg := l.cfg.Load()
	if offset == l.leo.Load() && l.active.size.Load() > 0 {
		if err := l.rollLocked(offset, cfg); err != nil {
			l.fail(err)
			l.mu.Unlock()
			return 0, storageError(err)
		}
		// The high watermark now sits at the start of the new segment.
		l.hw.Store(&hwMark{offset: offset, segBase: offset, pos: 0})
	}
	segs := *l.segs.Load()
	n := 0
	for n < len(segs)-1 && segs[n+1].base <= offset {
		n++
	}
	if n == 0 {
		l.mu.Unlock()
		return 0, nil
	}
	old := segs[:n:n]
	rest := append([]*segment(nil), segs[n:]...)
	l.segs.Store(&rest)
	if rest[0].base > l.logStart.Load() {
		l.logStart.Store(rest[0].base)
	}
	l.mu.Unlock()
	if err := l.retire(old); err != nil {
		l.store.markOffline(err)
		return n, err
	}
	// The deleted segments' producer-state snapshots go with them.
	l.deleteSnapshotsBelow(rest[0].base)
	return n, l.syncDirSafely()
}

// retire renames segments' files to .deleted and schedules their removal
// after file.delete.delay.ms.
func (l *Log) retire(old []*segment) error {
	for _, s := range old {
		if err := s.retire(l.store.fs, deletedSuffix); err != nil {
			return err
		}
	}
	delay := time.Duration(l.cfg.Load().FileDeleteDelayMs) * time.Millisecond
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.removeRetired(old)
		return nil
	}
	l.retired = append(l.retired, old...)
	l.rollWG.Add(1)
	defer l.mu.Unlock() // queued under mu: see flushRolled
	l.store.work.after(delay, l, func() {
		defer l.rollWG.Done()
		l.mu.Lock()
		keep := l.retired[:0]
		for _, s := range l.retired {
			if !containsSeg(old, s) {
				keep = append(keep, s)
			}
		}
		l.retired = keep
		l.mu.Unlock()
		// A panic leaves the .deleted files, which the next start removes.
		l.removeRetired(old)
	})
	return nil
}

func containsSeg(set []*segment, s *segment) bool {
	for _, x := range set {
		if x == s {
			return true
		}
	}
	return false
}

// removeRetired closes retired segments and removes their .deleted files.
func (l *Log) removeRetired(old []*segment) {
	// An fsync that started before the segments were retired may still be
	// syncing them (flushOnce works from a snapshot of the segment list):
	// wait for it, or it fails on a closed file and takes the log offline.
	// Later fsyncs no longer see these segments.
	l.waitRunningFlush()
	for _, s := range old {
		s.close()
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if err := l.store.fs.Remove(s.path(suf) + deletedSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.logger.Warn().Err(err).Int64("segment", s.base).Msg("cannot remove deleted segment file")
			}
		}
	}
}
