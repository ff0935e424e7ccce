package partition

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/panics"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// A Log's locks (mu, fmu, dirMu, the segments' closeMu) and their order
// with everything else are in LOCKING.md at the repository root.

// leaderEpoch is the partition leader epoch of a single broker that never
// changes leadership.
const leaderEpoch int32 = 0

// Log is one partition's log: an ordered list of segments, the last one
// active. Appends serialize on mu; Read and Offsets work from an immutable
// snapshot of the segment list and atomics, so fetches do not contend with
// appends.
type Log struct {
	store     *Store
	topic     string
	partition int32
	dir       string
	logger    zerolog.Logger
	cfg       atomic.Pointer[LogConfig]

	mu           sync.Mutex // appends, rolls, close
	active       *segment   // last segment; guarded by mu
	epochWritten bool       // leader-epoch-checkpoint has an entry; guarded by mu
	dirDirty     bool       // a segment was created since the last dir fsync; guarded by mu
	failed       error      // a write failed: the log is offline; guarded by mu
	marks        markSlab   // the marks appends publish; guarded by mu
	closed       bool       // guarded by mu
	// lastMark is the mark of the latest append: a flush that covers the
	// log end it was taken at may publish it (flushOnce), so that the
	// high watermark never waits on an append whose own waiter is gone.
	// Guarded by mu.
	lastMark *hwMark
	// syncWanted is the log end after the latest append that asked for
	// an fsync. While the recovery point is below it, every append waits
	// for an fsync too: the high watermark must not pass an append whose
	// fsync is still pending. Guarded by mu.
	syncWanted int64
	// activeIdle: the idle sweep unpinned the active segment, so the
	// cache may close its files; the next append pins it again
	// (segment_files.go). activeUsed: appended to since the last sweep.
	// Both guarded by mu.
	activeIdle, activeUsed bool

	segs     atomic.Pointer[[]*segment] // immutable snapshot, sorted by base offset
	hw       atomic.Pointer[hwMark]     // high watermark and where it is in the files
	leo      atomic.Int64               // log end offset (next offset to assign)
	logStart atomic.Int64               // log start offset
	flushed  atomic.Int64               // recovery point: offsets below it are fsynced
	gone     atomic.Bool                // closed or deleted: reads fail
	deleted  atomic.Bool                // the topic was deleted
	waitCh   atomic.Pointer[waiters]

	// Group commit (flush.go): one flush loop at a time runs the log's
	// fsyncs, back to back while anyone waits for one; an appender that
	// arrives while an fsync runs is covered by the next, which starts as
	// soon as that one returns.
	fmu     sync.Mutex
	fcond   *sync.Cond
	syncing bool  // a flush loop runs; guarded by fmu
	syncErr error // sticky: after a failed fsync the log is offline; guarded by fmu
	// syncWant is the highest offset a waiter wants fsynced: the flush
	// loop runs until the recovery point reaches it. Guarded by fmu.
	syncWant int64
	// flushStarts and flushDone count the loop's flushes begun and
	// finished; softFail is the last flush that failed without taking
	// the log offline (out of descriptors), softErr its error: the
	// waiters that flush was for get it. All guarded by fmu.
	flushStarts, flushDone, softFail uint64
	softErr                          error
	// syncFailed is set with syncErr, so that Append learns of a failed
	// fsync without taking fmu (the group-commit lock) on every append.
	syncFailed atomic.Bool

	lastFlushMs atomic.Int64   // clock time of the last fsync, for flush.ms
	rollWG      sync.WaitGroup // background work on segments (flushes, delayed removals); Add under mu
	closing     chan struct{}  // closed when the log closes: delayed removals run at once
	retired     []*segment     // renamed .deleted, awaiting removal; guarded by mu

	// dirMu is held by a roll from creating the new segment's files to
	// publishing it, and across a directory fsync (dirsync.go), so that
	// no segment appears unseen during one. Its order: LOCKING.md.
	dirMu sync.Mutex

	// Producer state (producer_state.go): guarded by mu; txnView is its
	// transactions that hold the LSO back, for readers without the lock.
	pstate  *producerState
	txnView atomic.Pointer[[]txnSpan]
	// replayCache holds, while the log is opened, the producer batches
	// recovery read at or after the newest snapshot, so the
	// producer-state replay does not read them again; bounded by
	// Config.ReplayCacheBudget.
	replayCache *replayCache
}

// hwMark is the high watermark with its place in the files: the batch that
// ends at the high watermark ends at byte pos of the segment with base
// offset segBase. Readers use it to stop at the high watermark without
// reading batch headers.
type hwMark struct {
	offset  int64
	segBase int64
	pos     int64
}

// markChunk is how many high-watermark marks markSlab allocates at once.
const markChunk = 64

// markSlab hands out the marks appends publish, markChunk per
// allocation instead of one per append. A mark is never reused: a
// reader holding one keeps its chunk (1.5 KiB) alive, nothing more.
type markSlab struct{ free []hwMark }

// next returns a new zero mark. REQUIRES: Log.mu held.
func (s *markSlab) next() *hwMark {
	if len(s.free) == 0 {
		s.free = make([]hwMark, markChunk)
	}
	m := &s.free[0]
	s.free = s.free[1:]
	return m
}

func (l *Log) Topic() string    { return l.topic }
func (l *Log) Partition() int32 { return l.partition }

// LeaderEpoch is the partition's leader epoch (0 on a single broker).
func (l *Log) LeaderEpoch() int32 { return leaderEpoch }

// Config is the log's current effective configuration.
func (l *Log) Config() LogConfig { return *l.cfg.Load() }

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// Offsets returns the partition's offsets. With no transactions, the last
// stable offset is the high watermark.
func (l *Log) Offsets() Offsets {
	hw := l.hw.Load().offset
	start := l.logStart.Load()
	return Offsets{
		LogStartOffset:   start,
		HighWatermark:    hw,
		LastStableOffset: l.lastStable(hw, start),
		LogEndOffset:     l.leo.Load(),
	}
}

// RecoveryPoint is the offset below which every record is fsynced.
func (l *Log) RecoveryPoint() int64 { return l.flushed.Load() }

// Wait returns a channel closed by the next append that moves the high
// watermark (or by the log's close or deletion), for long-polling fetches.
// Callers check Offsets after taking the channel, so no append is missed.
func (l *Log) Wait() <-chan struct{} {
	w := l.waitCh.Load()
	w.taken.Store(true)
	return w.ch
}

// waiters is one generation of Wait's channel. taken records that Wait
// handed it out, so that an append nobody waits for allocates nothing.
// final marks the last generation, installed closed by closeWaiters and
// never replaced.
type waiters struct {
	ch    chan struct{}
	taken atomic.Bool
	final bool // set before the generation is published
}

func newWaiters() *waiters { return &waiters{ch: make(chan struct{})} }

// notify wakes every waiter. A generation not taken is left in place: a
// Wait that takes it afterwards reads Offsets after this append's high
// watermark, which was published before notify ran. Only the caller whose
// swap removes a generation closes its channel, and the final generation
// is never removed, so notify is safe against a concurrent or earlier
// close (an Append whose notify runs after DeleteTopics closed the log).
func (l *Log) notify() {
	if w := l.waitCh.Load(); !w.final && w.taken.Load() {
		if l.waitCh.CompareAndSwap(w, newWaiters()) {
			close(w.ch)
		}
	}
}

// closeWaiters wakes every waiter for good: later Wait calls return a
// closed channel.
func (l *Log) closeWaiters() {
	done := &waiters{ch: make(chan struct{}), final: true}
	close(done.ch)
	done.taken.Store(true)
	if old := l.waitCh.Swap(done); !old.final {
		close(old.ch)
	}
}

// advanceHW moves the high watermark forward to m (never back).
func (l *Log) advanceHW(m *hwMark) bool {
	for {
		cur := l.hw.Load()
		if cur.offset >= m.offset {
			return false
		}
		if l.hw.CompareAndSwap(cur, m) {
			return true
		}
	}
}

func (l *Log) goneErr() error {
	if l.deleted.Load() {
		return ErrUnknownTopic
	}
	return ErrClosed
}

// Append appends one validated v2 batch, rewriting its base offset, leader
// epoch and (for LogAppendTime topics) timestamps in place, and returns
// once the batch is durable per the flush policy. The batch bytes are
// written as given, in one write.
func (l *Log) Append(batch []byte) (AppendResult, error) {
	return l.appendOrigin(batch, recordbatch.OriginClient, nil, nil, nil)
}

// ConfigSnapshot is the log's configuration in effect, shared and
// immutable: a caller that validates a batch by it (Produce) hands the
// same snapshot to AppendWithConfig, so that the checks and the append
// see one configuration even if an alter lands between them.
func (l *Log) ConfigSnapshot() *LogConfig { return l.cfg.Load() }

// AppendWithConfig is Append (AppendVerified when guard is not nil) under
// cfg, a snapshot the caller validated the batch by (ConfigSnapshot).
func (l *Log) AppendWithConfig(cfg *LogConfig, batch []byte, guard *TxnVerificationGuard) (AppendResult, error) {
	return l.appendOrigin(batch, recordbatch.OriginClient, nil, guard, cfg)
}

// appendOrigin is Append for a batch from origin; marker is the batch's
// transaction marker when the caller built it (WriteTxnMarker); guard,
// if not nil, is the verification a batch starting a transaction must
// present (AppendVerified); cfg, if not nil, the configuration to append
// under (else the log's current one).
func (l *Log) appendOrigin(batch []byte, origin recordbatch.Origin, marker *recordbatch.EndTxnMarker, guard *TxnVerificationGuard, cfg *LogConfig) (AppendResult, error) {
	return l.appendPending(batch, origin, marker, guard, cfg, nil)
}

// appendPending is appendOrigin; with pending not nil it returns once the
// batch is written and leaves the flush policy's wait (and the answer) to
// pending.Wait (pending.go).
func (l *Log) appendPending(batch []byte, origin recordbatch.Origin, marker *recordbatch.EndTxnMarker, guard *TxnVerificationGuard, cfg *LogConfig, pending *PendingAppend) (AppendResult, error) {
	deferSync := pending != nil
	res := AppendResult{BaseOffset: -1, LogAppendTime: -1}
	h, err := recordbatch.ParseHeader(batch)
	if err != nil || h.Size() != len(batch) || h.LastOffsetDelta() < 0 {
		return res, ErrCorruptBatch
	}
	if cfg == nil {
		cfg = l.cfg.Load()
	}
	if len(batch) > int(cfg.MaxMessageBytes) {
		return res, withDetail(ErrRecordTooLarge, fmt.Sprintf("The request included a message larger than the max message size the server will accept: %d > %d", len(batch), cfg.MaxMessageBytes))
	}
	if h.Control() && marker == nil && h.ProducerID() >= 0 {
		marker = controlMarker(batch)
	}

	w, err := l.appendUnderLock(batch, h, cfg, origin, marker, guard, &res)
	if err != nil {
		return res, err
	}
	p := PendingAppend{l: l, w: w, res: res, size: len(batch), records: int(h.RecordCount())}
	if !deferSync {
		return p.Wait()
	}
	*pending = p
	return res, nil
}

// appended is what appendUnderLock leaves for Append to finish outside
// the lock: the batch's base offset and its high-watermark mark, whether
// the flush policy wants an fsync first, or the answer to a duplicate.
type appended struct {
	base     int64
	mark     *hwMark
	needSync bool
	dup      *AppendResult
}

// appendUnderLock is the part of an append done under mu: the checks,
// offset assignment, the write and the index entries. It unlocks by
// defer, so a panic on any of these paths cannot leave mu held.
func (l *Log) appendUnderLock(batch []byte, h recordbatch.Header, cfg *LogConfig, origin recordbatch.Origin, marker *recordbatch.EndTxnMarker, guard *TxnVerificationGuard, res *AppendResult) (appended, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return appended{}, l.goneErr()
	}
	// After a failed write or fsync, here or in any log of the data dir,
	// write nothing more (offline.go).
	if err := l.offlineLocked(); err != nil {
		return appended{}, err
	}
	if l.activeIdle {
		if err := l.wakeActiveLocked(); err != nil {
			return appended{}, err
		}
	}
	l.activeUsed = true
	base := l.leo.Load()
	if cfg.LogAppendTime() {
		// Before the producer check: producer state records the append
		// time (a duplicate's answer, producer expiry), not CreateTime.
		res.LogAppendTime = l.store.clock.Now().UnixMilli()
		h.SetLogAppendTime(res.LogAppendTime)
	}
	var pinfo appendInfo // entry nil: no producer id
	if h.ProducerID() >= 0 {
		dup, info, err := l.producerCheckLocked(h, base, origin, marker, guard)
		if err != nil {
			return appended{}, err
		}
		if dup != nil {
			return appended{base: base, dup: dup}, nil
		}
		pinfo = info
	}
	h.SetBaseOffset(base)
	h.SetLeaderEpoch(leaderEpoch)
	size := int64(len(batch))

	// failLocked takes the log offline after a failed write, as Kafka
	// takes the data dir offline.
	failLocked := func(err error, what string) (appended, error) {
		l.fail(err)
		l.logger.Error().Err(err).Int64("offset", base).Msg(what)
		return appended{}, storageError(err)
	}
	if l.shouldRollLocked(h, size, cfg) {
		if err := l.rollLocked(base, cfg); err != nil {
			return failLocked(err, "cannot roll segment")
		}
	}
	if !l.epochWritten {
		// Kafka records the epoch's start offset when the epoch's first
		// batch is appended.
		if err := l.writeLeaderEpochLocked(base); err != nil {
			return failLocked(err, "cannot write leader epoch checkpoint")
		}
	}
	seg := l.active
	if pinfo.completed != nil && pinfo.completed.aborted {
		// Every file the append touches is open before the batch is
		// written: an abort marker without its .txnindex entry would
		// show the aborted records to read_committed consumers.
		if err := seg.prepareAbortLocked(l.store.fs); err != nil {
			return failLocked(err, "cannot open aborted-transaction index")
		}
	}
	pos := seg.size.Load()
	if _, err := seg.log.WriteAt(batch, pos); err != nil {
		// The part of the batch that landed is past seg.size, unread,
		// and recovery truncates it.
		return failLocked(err, "cannot append to segment")
	}
	if err := seg.noteBatchLocked(h, pos, size, cfg.IndexIntervalBytes); err != nil {
		return failLocked(err, "cannot append to index")
	}
	seg.size.Store(pos + size)
	end := h.LastOffset() + 1
	l.leo.Store(end)
	mark := l.marks.next()
	*mark = hwMark{offset: end, segBase: seg.base, pos: pos + size}
	if pinfo.entry != nil {
		if err := l.applyProducerLocked(&pinfo, seg); err != nil {
			// The batch is written: whatever the cause, the log cannot
			// go on without the entry (not a retriable resource limit).
			return failLocked(fmt.Errorf("after the batch was written: %v", err), "cannot append to aborted-transaction index")
		}
	}
	l.lastMark = mark
	flushed := l.flushed.Load()
	needSync := cfg.FlushMessages != math.MaxInt64 && end-flushed >= cfg.FlushMessages || l.syncWanted > flushed
	if needSync {
		l.syncWanted = end
	} else {
		l.advanceHW(mark)
	}
	return appended{base: base, mark: mark, needSync: needSync}, nil
}

// shouldRollLocked applies Kafka's roll rules: the batch would take the
// segment past segment.bytes, MaxSegmentMs less the segment's jitter has
// passed since the first batch's timestamp, an index is full, or the batch's offsets do not fit
// a relative offset. An empty segment is never rolled. REQUIRES: mu held.
func (l *Log) shouldRollLocked(h recordbatch.Header, size int64, cfg *LogConfig) bool {
	seg := l.active
	cur := seg.size.Load()
	if cur == 0 {
		return false
	}
	if cur > int64(cfg.SegmentBytes)-size {
		return true
	}
	if seg.offIdx.full() || seg.timeIdx.full() {
		return true
	}
	if h.LastOffset()-seg.base > math.MaxInt32 {
		return true
	}
	seg.loadRollTsLocked()
	var waited int64
	if seg.rollTs >= 0 {
		waited = h.MaxTimestamp() - seg.rollTs
	} else {
		waited = l.store.clock.Now().UnixMilli() - seg.createdMs
	}
	if !seg.rollJitterSet {
		// Kafka draws it when the segment is opened, from the config
		// of that moment; the first roll check is as good a moment.
		seg.rollJitterMs, seg.rollJitterSet = l.store.rollJitter(cfg), true
	}
	return waited > cfg.MaxSegmentMs()-seg.rollJitterMs
}

// rollJitter draws a segment's roll jitter as Kafka's
// LogConfig.randomSegmentJitter: below segment.jitter.ms and segment.ms.
func (s *Store) rollJitter(cfg *LogConfig) int64 {
	n := min(cfg.SegmentJitterMs, cfg.SegmentMs)
	if n <= 0 {
		return 0
	}
	if s.cfg.Jitter != nil {
		return s.cfg.Jitter(n)
	}
	return rand.Int64N(n)
}

// rollLocked starts a new active segment at base. The old one gets its
// final time index entry and is fsynced in the background, which moves the
// recovery point past it, as Kafka does. REQUIRES: mu held.
func (l *Log) rollLocked(base int64, cfg *LogConfig) error {
	if err := l.wakeActiveLocked(); err != nil {
		return err
	}
	old := l.active
	l.dirMu.Lock()
	seg, err := openSegment(l.store.fs, l.dir, base, cfg, true, l.store.clock.Now().UnixMilli())
	if err != nil {
		l.dirMu.Unlock()
		return err
	}
	seg.adopt(l)
	if err := old.finalizeLocked(); err != nil {
		l.dirMu.Unlock()
		seg.close()
		return err
	}
	l.active = seg
	l.dirDirty = true
	segs := append(append([]*segment(nil), *l.segs.Load()...), seg)
	l.segs.Store(&segs)
	l.dirMu.Unlock()
	// Kafka takes a producer-state snapshot at every roll, named after
	// the new segment; it is written once the data below it is durable.
	snap := l.snapshotLocked()
	l.rollWG.Add(1)
	l.store.work.submit(func() { l.flushRolled(old, base, snap) })
	return nil
}

// rollRetryDelay is how long a rolled segment's flush waits before it
// tries again after running out of file descriptors.
const rollRetryDelay = time.Second

// flushRolled is the background work after a roll to base: fsync the data
// below it and old's indexes, write the producer snapshot, and let the
// cache close old's files. Out of descriptors, it tries again after
// rollRetryDelay (old stays pinned meanwhile), until it succeeds or the
// log closes (close flushes and closes everything itself). Counted in
// rollWG by its submitter; done once it neither succeeds nor retries.
func (l *Log) flushRolled(old *segment, base int64, snap []byte) {
	retry := false
	defer func() {
		if !retry {
			l.rollWG.Done()
		}
	}()
	// A panic abandons this flush: the next flush covers the data,
	// recovery the rest.
	defer panics.Log(l.logger, "background flush after a roll panicked")
	err := l.syncTo(base)
	if err == nil {
		// The recovery point may already have passed the old segment
		// (flush.messages=1 fsyncs its .log on every append), but its
		// indexes and final time index entry were never synced.
		err = old.syncIndexes()
	}
	if err == nil {
		// No directory fsync here: it would make durable the entry of
		// a segment rolled since syncTo, ahead of its predecessor's
		// data (a hole after a power cut). The log's next flush makes
		// the rename durable, after that data.
		err = vfs.WriteFileReplace(l.store.fs, filepath.Join(l.dir, snapshotName(base)), snap)
		if err == nil {
			l.mu.Lock()
			l.dirDirty = true
			l.mu.Unlock()
			// Durable now: the cache may close its files when idle.
			old.unpin()
			return
		}
	}
	if l.gone.Load() {
		return
	}
	if isResourceLimit(err) {
		// Queued under mu, so that close (which sets closed under mu,
		// then expedites) runs it at once rather than after the delay.
		l.mu.Lock()
		retry = !l.closed
		if retry {
			l.store.work.after(rollRetryDelay, l, func() { l.flushRolled(old, base, snap) })
		}
		l.mu.Unlock()
		if retry {
			l.logger.Warn().Err(err).Int64("offset", base).Dur("retry_in", rollRetryDelay).
				Msg("cannot flush rolled segment: out of file descriptors; retrying")
			return
		}
	}
	l.store.markOffline(err)
	l.logger.Error().Err(err).Int64("offset", base).Msg("cannot flush rolled segment")
}

func (l *Log) writeLeaderEpochLocked(start int64) error {
	data := encodeLeaderEpochCheckpoint([]epochEntry{{leaderEpoch, start}})
	if err := writeFileAtomic(l.store.fs, filepath.Join(l.dir, leaderEpochFile), data); err != nil {
		return err
	}
	l.epochWritten = true
	return nil
}

// flushOnce fsyncs every segment that may hold unsynced data (those from
// the recovery point on), the indexes of the inactive ones, and the
// directory if segments were created, returning the log end offset it
// covers.
func (l *Log) flushOnce() (int64, error) {
	l.mu.Lock()
	end := l.leo.Load()
	mark := l.lastMark // nil, or the mark at end
	segs := *l.segs.Load()
	active := l.active
	dirty := l.dirDirty
	l.dirDirty = false
	l.mu.Unlock()

	rp := l.flushed.Load()
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > rp }) - 1
	if i < 0 {
		i = 0
	}
	var err error
	for _, s := range segs[i:] {
		if err = s.syncData(s != active); err != nil {
			break
		}
	}
	if err == nil && dirty {
		err = l.syncDirAfter(segs[i:])
	}
	if err != nil {
		if dirty {
			l.mu.Lock()
			l.dirDirty = true
			l.mu.Unlock()
		}
		return 0, err
	}
	l.lastFlushMs.Store(l.store.clock.Now().UnixMilli())
	// Everything up to mark is durable now: publish it, whether or not
	// the appends it covers still have waiters (one whose connection
	// broke before its Wait, a duplicate answered on another).
	if mark != nil && l.advanceHW(mark) {
		l.notify()
	}
	return end, nil
}

// Flush fsyncs everything appended so far.
func (l *Log) Flush() error { return l.syncTo(l.leo.Load()) }

// close flushes and closes the log; with deleted, the topic is going away
// and nothing is flushed.
func (l *Log) close(deleted bool) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	var err error
	if ferr := l.offlineLocked(); !deleted && ferr != nil {
		err = ferr // an offline dir is not written to, not even flushed
	} else if !deleted {
		if err = l.wakeActiveLocked(); err == nil {
			err = l.active.finalizeLocked()
		}
	}
	if !l.activeIdle {
		// No longer counted among the pinned (segment_files.go); close
		// closes its files itself.
		l.store.openSegs.pinnedActive.Add(-1)
		l.activeIdle = true
	}
	var snap []byte
	if !deleted && err == nil {
		snap = l.snapshotLocked() // Kafka snapshots producer state at a clean close
	}
	l.mu.Unlock()
	// No roll can start now that closed is set: wait for the flushes of
	// earlier rolls, which use the files about to be closed, and remove
	// retired segments now rather than after file.delete.delay.ms.
	close(l.closing)
	l.store.work.expedite(l)
	l.rollWG.Wait()
	if deleted {
		l.deleted.Store(true)
	} else if err == nil {
		if err = l.syncTo(l.leo.Load()); err == nil {
			err = l.active.syncIndexes()
		}
		if err == nil {
			err = l.writeSnapshot(l.leo.Load(), snap)
		}
	}
	// Wait for the flush loop before closing the files under it: with
	// no appends any more, it stops once its waiters are covered.
	l.fmu.Lock()
	for l.syncing {
		l.fcond.Wait()
	}
	l.gone.Store(true)
	l.fmu.Unlock()
	for _, s := range *l.segs.Load() {
		if e := s.close(); e != nil && err == nil && !deleted {
			err = e
		}
	}
	l.closeWaiters()
	return err
}

// cleanlyClosed reports whether close flushed everything: the recovery
// point is the log end offset.
func (l *Log) cleanlyClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed == nil && l.flushed.Load() == l.leo.Load()
}

// readErr maps a read failure: a log closed under the reader is gone, not
// broken.
func (l *Log) readErr(err error) error {
	if l.gone.Load() {
		return l.goneErr()
	}
	if errors.Is(err, ErrOffsetOutOfRange) {
		return err
	}
	return storageError(err)
}

// AdvanceLogStartOffset moves the log start offset forward to offset, as
// DeleteRecords does (records below it become unreadable; whole segments
// below it are for retention to delete). It never moves it back, and
// refuses to pass the high watermark (Kafka: OFFSET_OUT_OF_RANGE). It
// returns the new log start offset; the log-start-offset checkpoint
// records it at the next checkpoint.
func (l *Log) AdvanceLogStartOffset(offset int64) (int64, error) {
	if l.gone.Load() {
		return 0, l.goneErr()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.offlineLocked(); err != nil {
		return l.logStart.Load(), err
	}
	if offset > l.hw.Load().offset || offset < 0 {
		return l.logStart.Load(), ErrOffsetOutOfRange
	}
	if offset > l.logStart.Load() {
		l.logStart.Store(offset)
	}
	return l.logStart.Load(), nil
}
