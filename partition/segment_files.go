package partition

// Open files of segments.
//
// A segment's .log, .index and .timeindex are open while it is pinned
// (the active segment while it is written, and a rolled or swapped-in
// segment until its data and indexes are fsynced) or in use (a read, the cleaner, retention, a
// flush holds a reference). An inactive segment nobody uses stays open in
// the store's cache of idle segments until it is the least recently used
// one past DefaultOpenSegments (Config.OpenSegments), or until it has been
// idle for segmentIdleMs (the checkpoint loop sweeps): then its files are
// closed, and the next use opens them again. Kafka keeps every segment's
// .log open and maps its indexes on demand (LazyIndex); with
// segment.bytes as small as 14 and no bound on topics, one descriptor per
// segment has no bound either.
//
// The active segment of a partition nobody appended to since the last
// sweep (the checkpoint loop, every log.flush.offset.checkpoint.interval.ms)
// is unpinned too (Log.activeIdle), and a freshly opened log's starts
// so: it joins the cache like an inactive segment, and the next append
// pins it again under Log.mu, reopening its files if the cache closed
// them. The writer's state (size, the indexes' entry counts and last
// entries, bytes since the last index entry, the largest timestamp) lives
// in the segment, not in the files, so it is the same after a reopen.
// Closing a descriptor drops no page-cache data: every fsync that data
// still needs goes through use() (syncData, syncIndexes) and reopens the
// file first. So descriptors are bounded by the partitions appended to
// in the last sweep interval and the cache, not by the partition count.
// A busy partition's append tests one flag under Log.mu and makes no
// extra system call.
//
// Segments below the recovery point are only listed at start-up (their
// size from a Stat): their indexes are read and checked, or rebuilt from
// the .log, at their first use (lazyLoadLocked), as Kafka loads a
// LazyIndex on first access and checks it at most then.
//
// The files and the reference count are guarded by segment.closeMu: a
// reference taken under it keeps the files open until it is released, so
// a lazily opened file is never closed under its reader. The cache has its
// own lock (openSegments.mu), never held together with a closeMu: the
// cache is a hint, and closing rechecks the count under closeMu.

import (
	"container/list"
	"errors"
	"io/fs"
	"math"
	"os"
	"sync"
	"sync/atomic"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

// DefaultOpenSegments is Config.OpenSegments' default: idle inactive
// segments whose files stay open, per store (three descriptors each).
const DefaultOpenSegments = 128

// segmentIdleMs is how long an idle inactive segment keeps its files open
// at most (closed by the checkpoint loop's sweep, so up to a checkpoint
// interval later).
const segmentIdleMs = 60_000

// errSegmentClosed is a use of a segment whose log was closed or which
// was retired and removed.
var errSegmentClosed = errors.New("partition: segment closed")

// openSegments is a store's cache of idle inactive segments with open
// files, least recently used first.
type openSegments struct {
	mu   sync.Mutex
	max  int
	idle list.List // of *idleSegment

	// pinnedActive counts the logs whose active segment is pinned
	// (!Log.activeIdle). Past maxPinnedActive, an append that pins one
	// asks activeSweepLoop for a sweep (kick), so that a burst of appends
	// over many partitions does not hold descriptors for all of them until
	// the next checkpoint.
	pinnedActive    atomic.Int64
	maxPinnedActive int64
	kick            chan struct{}
}

// maxPinnedActive is how many active segments may stay pinned before
// appends ask for a sweep: partitionBudget's busy partitions.
func maxPinnedActive(fdLimit int64, openSegments int) int64 {
	if fdLimit <= 0 || fdLimit == math.MaxInt64 {
		return math.MaxInt64
	}
	return max(1, (fdLimit/2-3*int64(openSegments))/descriptorsPerPartition)
}

// activeSweepLoop unpins the active segments not appended to since its
// previous sweep whenever an append finds too many pinned (second
// chance: a busy partition, appended to between two sweeps, stays
// pinned).
func (s *Store) activeSweepLoop() {
	defer s.loopWG.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.openSegs.kick:
		}
		s.idleActives()
	}
}

// idleActives runs idleActive on every log.
func (s *Store) idleActives() {
	for _, t := range s.Topics() {
		for _, l := range t.Partitions {
			l.idleActive()
		}
	}
}

type idleSegment struct {
	seg   *segment
	since int64 // clock ms when it became idle
}

// push makes seg the most recently used idle segment and returns the
// segments to close so that at most max stay in the cache.
func (c *openSegments) push(seg *segment, nowMs int64) []*segment {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seg.idleElem != nil {
		c.idle.Remove(seg.idleElem)
	}
	seg.idleElem = c.idle.PushBack(&idleSegment{seg, nowMs})
	var out []*segment
	for c.idle.Len() > c.max {
		out = append(out, c.popFrontLocked())
	}
	return out
}

// popFrontLocked removes the least recently used segment. REQUIRES: mu.
func (c *openSegments) popFrontLocked() *segment {
	e := c.idle.Front()
	c.idle.Remove(e)
	s := e.Value.(*idleSegment).seg
	s.idleElem = nil
	return s
}

// remove takes seg out of the cache (in use, or closed).
func (c *openSegments) remove(seg *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seg.idleElem != nil {
		c.idle.Remove(seg.idleElem)
		seg.idleElem = nil
	}
}

// expired removes and returns the segments idle since before cutoffMs.
func (c *openSegments) expired(cutoffMs int64) []*segment {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*segment
	for e := c.idle.Front(); e != nil && e.Value.(*idleSegment).since < cutoffMs; e = c.idle.Front() {
		out = append(out, c.popFrontLocked())
	}
	return out
}

// closeIdle closes the files of segments the cache let go, unless they
// were taken again meanwhile.
func closeIdle(segs []*segment) {
	for _, s := range segs {
		s.closeMu.Lock()
		if s.refs == 0 && !s.pinned && s.filesOpen {
			s.closeFilesLocked()
		}
		s.closeMu.Unlock()
	}
}

// closeIdleSegments unpins the active segments of logs not appended to
// since the last sweep and closes the files of segments idle for
// segmentIdleMs.
func (s *Store) closeIdleSegments() {
	s.idleActives()
	closeIdle(s.openSegs.expired(s.clock.Now().UnixMilli() - segmentIdleMs))
}

// idleActive unpins the active segment if nothing was appended since the
// last call, handing it to the cache. Unpinned under mu, so that no
// append writes to files the cache may close; pushed to the cache after
// mu is released (closing other logs' segments must not hold this log's
// lock). An append pinning it again in between leaves a pinned segment in
// the cache, which closeIdle skips.
//
// Only durable data is handed over: an active segment with bytes not yet
// fsynced is fsynced first, so that no descriptor is closed over dirty
// pages (a writeback error then seen by no descriptor would be lost,
// and a later fsync through a new one would report success).
func (l *Log) idleActive() {
	l.mu.Lock()
	if l.closed || l.activeIdle || l.activeUsed {
		l.activeUsed = false
		l.mu.Unlock()
		return
	}
	if end := l.leo.Load(); l.flushed.Load() < end {
		l.mu.Unlock()
		if err := l.syncTo(end); err != nil {
			return // logged, and the log offline, by syncTo; stays pinned
		}
		l.mu.Lock()
		if l.closed || l.activeIdle || l.activeUsed || l.flushed.Load() < l.leo.Load() {
			l.mu.Unlock() // appended to meanwhile: not idle after all
			return
		}
	}
	seg := l.active
	l.activeIdle = true
	l.store.openSegs.pinnedActive.Add(-1)
	idle := seg.unpinLocked()
	l.mu.Unlock()
	if idle {
		seg.pushIdle()
	}
}

// wakeActiveLocked pins the active segment again after idleActive,
// reopening its files if the cache closed them. REQUIRES: Log.mu held.
func (l *Log) wakeActiveLocked() error {
	if !l.activeIdle {
		return nil
	}
	if err := l.active.pin(); err != nil {
		return err
	}
	l.activeIdle = false
	if c := l.store.openSegs; c.pinnedActive.Add(1) > c.maxPinnedActive {
		select {
		case c.kick <- struct{}{}:
		default: // a sweep is asked for already
		}
	}
	return nil
}

// pin keeps the segment's files open, opening them if needed, until
// unpin. Only the writer of the active segment (under Log.mu) pins.
func (s *segment) pin() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return errSegmentClosed
	}
	if !s.filesOpen {
		if err := s.openFilesLocked(); err != nil {
			s.closeMu.Unlock()
			return err
		}
	}
	mayBeIdle := !s.pinned && s.refs == 0
	s.pinned = true
	s.closeMu.Unlock()
	if c := s.cache; c != nil && mayBeIdle {
		c.remove(s)
	}
	return nil
}

// use takes a reference on the segment's files, opening them (and loading
// a listed segment's indexes) if needed. The caller calls the returned
// release once done. A descriptor limit fails this use alone
// (ErrResourceLimit through storageError).
func (s *segment) use() (release func(), err error) {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil, errSegmentClosed
	}
	if !s.filesOpen {
		if err := s.openFilesLocked(); err != nil {
			s.closeMu.Unlock()
			return nil, err
		}
	}
	// Only an unpinned segment nobody used is looked for in the cache: the
	// hot path of reads of the active segment does not touch the
	// store-wide cache. (A wake racing the idle sweep may leave a pinned
	// segment in it; closeIdle skips that one, which only costs a slot.)
	mayBeIdle := !s.pinned && s.refs == 0
	s.refs++
	s.closeMu.Unlock()
	if c := s.cache; c != nil && mayBeIdle {
		c.remove(s)
	}
	return s.release, nil
}

// release gives back a reference taken by use.
func (s *segment) release() {
	s.closeMu.Lock()
	s.refs--
	idle := s.refs == 0 && !s.pinned && s.filesOpen && !s.closed
	s.closeMu.Unlock()
	if idle && s.cache != nil {
		closeIdle(s.cache.push(s, s.owner.store.clock.Now().UnixMilli()))
	}
}

// unpin lets the cache close the segment's files once it is idle: it is
// inactive and durable.
func (s *segment) unpin() {
	if s.unpinLocked() {
		s.pushIdle()
	}
}

// unpinLocked is unpin's first half: it reports whether the segment is
// idle now and must go to the cache (pushIdle). Despite its name it takes
// closeMu itself; the Locked refers to the owner's Log.mu, which callers
// hold or own.
func (s *segment) unpinLocked() bool {
	s.closeMu.Lock()
	s.pinned = false
	idle := s.refs == 0 && s.filesOpen && !s.closed
	s.closeMu.Unlock()
	return idle
}

// pushIdle puts an idle segment in the cache, closing what it lets go.
func (s *segment) pushIdle() {
	if s.cache != nil {
		closeIdle(s.cache.push(s, s.owner.store.clock.Now().UnixMilli()))
	}
}

// withFiles runs f with the segment's files open.
func (s *segment) withFiles(f func() error) error {
	release, err := s.use()
	if err != nil {
		return err
	}
	defer release()
	return f()
}

// syncData fsyncs the .log, and with indexes the index files. A segment
// closed for good has nothing left to make durable (see syncIndexes).
func (s *segment) syncData(indexes bool) error {
	err := s.withFiles(func() error {
		if err := s.log.Sync(); err != nil || !indexes {
			return err
		}
		return s.syncIndexes()
	})
	if errors.Is(err, errSegmentClosed) {
		return nil
	}
	return err
}

// retire renames the segment's files with suffix, and notes it so that a
// later use opens them under their new names. Under closeMu, so that a
// use opening the files sees them all under one name, before or after
// (renames do not disturb files already open); a rename that fails
// midway leaves the data dir offline.
func (s *segment) retire(fsys vfs.FS, suffix string) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := fsys.Rename(s.path(suf), s.path(suf)+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return storageError(err)
		}
	}
	s.fileExtra = suffix
	return nil
}

// openFilesLocked opens the three files (at their current names: a
// retired segment's carry ".deleted") and, for a segment only listed at
// start-up, checks or rebuilds its indexes. REQUIRES: closeMu held.
func (s *segment) openFilesLocked() error {
	fsys := s.owner.store.fs
	lf, err := fsys.OpenFile(s.path(logSuffix)+s.fileExtra, os.O_RDWR, 0o644)
	if err != nil {
		return storageError(err)
	}
	fi, err := fsys.OpenFile(s.path(indexSuffix)+s.fileExtra, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		lf.Close()
		return storageError(err)
	}
	ft, err := fsys.OpenFile(s.path(timeIndexSuffix)+s.fileExtra, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		lf.Close()
		fi.Close()
		return storageError(err)
	}
	s.log, s.offIdx.f, s.timeIdx.f = lf, fi, ft
	s.filesOpen = true
	if s.listed.Load() {
		if err := s.lazyLoadLocked(); err != nil {
			s.closeFilesLocked()
			return storageError(err)
		}
	}
	return nil
}

// lazyLoadLocked adopts the indexes of a segment listed at start-up
// below the recovery point, or rebuilds them from its .log when missing
// or inconsistent. REQUIRES: closeMu held, files open.
func (s *segment) lazyLoadLocked() error {
	l := s.owner
	if s.missingIdx || !l.loadIndexes(s, s.listedNext, false) {
		l.logger.Warn().Int64("segment", s.base).Msg("rebuilding missing or inconsistent index")
		if _, _, err := l.recoverSegment(s, false); err != nil {
			return err
		}
		if err := s.offIdx.f.Sync(); err != nil {
			return err
		}
		if err := s.timeIdx.f.Sync(); err != nil {
			return err
		}
	}
	s.listed.Store(false)
	return nil
}

// closeFilesLocked closes the three files, and the .txnindex (reopened
// by its next write or fsync: txn_index.go). REQUIRES: closeMu held.
func (s *segment) closeFilesLocked() error {
	if !s.filesOpen {
		return nil
	}
	s.filesOpen = false
	err := s.closeTxn()
	if e := s.log.Close(); err == nil {
		err = e
	}
	if e := s.offIdx.f.Close(); err == nil {
		err = e
	}
	if e := s.timeIdx.f.Close(); err == nil {
		err = e
	}
	return err
}

// loaded makes sure a listed segment's indexes, and with them its largest
// timestamp, are loaded (reported false if that failed).
func (s *segment) loaded() bool {
	return !s.listed.Load() || s.withFiles(func() error { return nil }) == nil
}

// loadListed loads the indexes of the log's segments start-up only
// listed, so their largest timestamps are known. One that cannot be
// loaded now (a descriptor limit) keeps -1, which expires nothing, and is
// tried again next time.
func (l *Log) loadListed() {
	for _, s := range *l.segs.Load() {
		s.loaded()
	}
}
