package cleaner

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/panics"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Config is the broker-level cleaner configuration, with Kafka's names and
// defaults (DefaultConfig).
type Config struct {
	// Enable is log.cleaner.enable (default true). Without the cleaner,
	// compacted logs get neither compaction nor retention, as in Kafka.
	Enable bool
	// Threads is log.cleaner.threads (default 1).
	Threads int
	// BackoffMs is log.cleaner.backoff.ms (default 15000): a thread's wait
	// when no log needed cleaning.
	BackoffMs int64
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size in bytes (default
	// 128 MiB), split evenly between the threads' offset maps.
	DedupeBufferSize int64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second (default
	// unlimited): the threads' combined read rate.
	IOMaxBytesPerSecond float64
	// RetentionCheckIntervalMs is log.retention.check.interval.ms (default
	// 300000): how often retention runs over logs that are not compacted.
	RetentionCheckIntervalMs int64
	// MaxDecompressedBytes bounds one batch's records after decompression
	// (default 256 MiB).
	MaxDecompressedBytes int
	// UncleanableRetryMs is how long a log whose cleaning failed is left
	// alone (default 10 minutes). Kafka keeps the mark until a restart
	// (KAFKA-19895: __consumer_offsets then grows unnoticed); the
	// cleaner spec (section 18) logs loudly and retries instead.
	UncleanableRetryMs int64

	Clock  clock.Clock // nil means clock.Real{}
	Logger zerolog.Logger
}

// DefaultConfig is Kafka 3.9's defaults.
func DefaultConfig() Config {
	return Config{
		Enable:                   true,
		Threads:                  1,
		BackoffMs:                15000,
		DedupeBufferSize:         128 << 20,
		IOMaxBytesPerSecond:      math.MaxFloat64,
		RetentionCheckIntervalMs: 300000,
		MaxDecompressedBytes:     256 << 20,
		UncleanableRetryMs:       600000,
	}
}

// Source is where the cleaner finds logs and keeps its checkpoint;
// *partition.Store is one.
type Source interface {
	Topics() []*partition.Topic
	ReadCleanerCheckpoint() map[partition.TopicPartition]int64
	WriteCleanerCheckpoint(map[partition.TopicPartition]int64) error
}

var _ Source = (*partition.Store)(nil)

// Cleaner runs compaction and retention over a Source's logs.
type Cleaner struct {
	cfg    Config
	src    Source
	clock  clock.Clock
	logger zerolog.Logger

	mu          sync.Mutex
	cond        *sync.Cond                         // signalled when a pass ends
	checkpoints map[partition.TopicPartition]int64 // first dirty offsets; guarded by mu
	inProgress  map[partition.TopicPartition]bool  // guarded by mu
	paused      map[partition.TopicPartition]int   // pause count; guarded by mu
	// uncleanable holds the logs whose cleaning (or retention by a
	// cleaner thread) failed: Kafka's markPartitionUncleanable. They are
	// neither cleaned nor given retention by the cleaner threads until
	// UncleanableRetryMs has passed, the cleaner restarts or the
	// partition is deleted. Guarded by mu.
	uncleanable map[partition.TopicPartition]uncleanableMark
	last        map[partition.TopicPartition]Stats // last pass per log; guarded by mu
	// idle holds the log end offset of logs whose last pass found nothing
	// to clean although they looked eligible (an open transaction the
	// log's offsets did not show yet): they are skipped until they grow,
	// so they cannot starve the other logs. Guarded by mu.
	idle map[partition.TopicPartition]int64
	// known is the log last seen under each name: a partition deleted and
	// created again between two looks loses the old one's checkpoint, as
	// Kafka removes it when it deletes the log. Guarded by mu.
	known   map[partition.TopicPartition]Log
	total   Stats // sums over all passes; guarded by mu
	passes  int64 // guarded by mu
	started bool  // guarded by mu

	// cleanTime sums the passes' durations; retentionDeleted counts the
	// segments retention deleted (metrics.go).
	cleanTime        time.Duration // guarded by mu
	retentionDeleted atomic.Int64

	// deadThreads counts cleaner threads stopped by a panic outside a
	// pass (Kafka's DeadThreadCount metric).
	deadThreads atomic.Int32

	maps  chan *offsetMap // one per thread, reused
	stop  chan struct{}
	wg    sync.WaitGroup
	close sync.Once
}

// New makes a cleaner; Start starts its goroutines.
func New(src Source, cfg Config) *Cleaner {
	def := DefaultConfig()
	if cfg.Threads <= 0 {
		cfg.Threads = def.Threads
	}
	if cfg.BackoffMs <= 0 {
		cfg.BackoffMs = def.BackoffMs
	}
	if cfg.DedupeBufferSize <= 0 {
		cfg.DedupeBufferSize = def.DedupeBufferSize
	}
	if cfg.RetentionCheckIntervalMs <= 0 {
		cfg.RetentionCheckIntervalMs = def.RetentionCheckIntervalMs
	}
	if cfg.MaxDecompressedBytes <= 0 {
		cfg.MaxDecompressedBytes = def.MaxDecompressedBytes
	}
	if cfg.UncleanableRetryMs <= 0 {
		cfg.UncleanableRetryMs = def.UncleanableRetryMs
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	c := &Cleaner{
		cfg: cfg, src: src, clock: cfg.Clock, logger: cfg.Logger,
		checkpoints: src.ReadCleanerCheckpoint(),
		inProgress:  map[partition.TopicPartition]bool{},
		paused:      map[partition.TopicPartition]int{},
		uncleanable: map[partition.TopicPartition]uncleanableMark{},
		last:        map[partition.TopicPartition]Stats{},
		idle:        map[partition.TopicPartition]int64{},
		known:       map[partition.TopicPartition]Log{},
		maps:        make(chan *offsetMap, cfg.Threads),
		stop:        make(chan struct{}),
	}
	c.cond = sync.NewCond(&c.mu)
	// Kafka: log.cleaner.dedupe.buffer.size / threads, capped at 2 GiB each.
	per := min(cfg.DedupeBufferSize/int64(cfg.Threads), math.MaxInt32)
	for range cfg.Threads {
		c.maps <- newOffsetMap(per)
	}
	return c
}

// Start starts the retention task and, with Enable, the cleaner threads.
func (c *Cleaner) Start() {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return
	}
	c.started = true
	c.mu.Unlock()
	c.wg.Add(1)
	go c.retentionLoop()
	if !c.cfg.Enable {
		return
	}
	for range c.cfg.Threads {
		c.wg.Add(1)
		go c.threadLoop()
	}
}

// Close stops the goroutines, aborting passes in flight (their output is
// removed and their checkpoint stays), and waits for them.
func (c *Cleaner) Close() {
	c.close.Do(func() { close(c.stop) })
	c.wg.Wait()
}

func (c *Cleaner) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// sleep waits d on the clock; false when the cleaner stops meanwhile.
func (c *Cleaner) sleep(d time.Duration) bool {
	t := c.clock.NewTimer(d)
	select {
	case <-t.C():
		return true
	case <-c.stop:
		t.Stop()
		return false
	}
}

// threadLoop is one cleaner thread (Kafka's CleanerThread.doWork): clean
// the filthiest log, run retention for compacted logs, and back off when
// there was nothing to clean.
//
// Panics: one inside the work on a log (a pass, a log's retention) fails
// that log like an error, marking it uncleanable (runPass). One outside
// it stops this thread, logged at Error with its stack and counted in
// DeadThreads, as Kafka's CleanerThread, a ShutdownableThread, stops on
// an error doWork does not handle; the other threads, the retention task
// and the broker go on, and the partitions' logs stay served.
func (c *Cleaner) threadLoop() {
	defer c.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			c.logger.Error().Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).
				Msg("log cleaner thread stopped by a panic; compaction continues on the other threads, if any")
			// Counted after the log line, so that whoever sees the count
			// also finds the stack logged.
			c.deadThreads.Add(1)
		}
	}()
	for !c.stopped() {
		cleaned, _ := c.CleanOnce()
		c.RetainCompacted()
		if !cleaned && !c.sleep(time.Duration(c.cfg.BackoffMs)*time.Millisecond) {
			return
		}
	}
}

// DeadThreads is how many cleaner threads a panic stopped (Kafka's
// LogCleaner DeadThreadCount).
func (c *Cleaner) DeadThreads() int { return int(c.deadThreads.Load()) }

// retentionLoop runs retention over logs that are not compacted every
// log.retention.check.interval.ms (Kafka's kafka-log-retention task). A
// panic in one run is logged at Error and the task runs again at its next
// interval, as KafkaScheduler logs an uncaught exception of a scheduled
// task and keeps the schedule.
func (c *Cleaner) retentionLoop() {
	defer c.wg.Done()
	for c.sleep(time.Duration(c.cfg.RetentionCheckIntervalMs) * time.Millisecond) {
		panics.Run(c.logger, "retention run panicked; it runs again at the next check interval", c.RetainDeleteOnly)
	}
}

// errPanicked marks the error a panic in the work on one log became.
var errPanicked = errors.New("cleaner: panic")

// recoverInto turns a panic of the caller into *err, wrapping errPanicked
// with the panic value and stack. Deferred by the work on one log, so that
// a bug met on that log fails the log, as an error would.
func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %v\n%s", errPanicked, r, debug.Stack())
	}
}

// runPass is p.run with a panic turned into an error: Kafka's
// LogCleaner.cleanLog wraps any exception of a pass in a
// LogCleaningException and the thread marks the partition uncleanable
// (CleanerThread.cleanFilthiestLog) and goes on.
func runPass(p *pass, cp int64) (next int64, cleaned bool, err error) {
	defer recoverInto(&err)
	return p.run(cp)
}

type candidate struct {
	tp  partition.TopicPartition
	log Log
	rng cleanRange
}

func (c *Cleaner) logs() []candidate {
	var out []candidate
	for _, t := range c.src.Topics() {
		for i, l := range t.Partitions {
			if l == nil || l.Deleted() {
				continue
			}
			out = append(out, candidate{tp: partition.TopicPartition{Topic: t.Name, Partition: int32(i)}, log: l})
		}
	}
	return out
}

// firstBatchTs reads a segment's first batch's max timestamp (-1 if the
// segment is empty or unreadable).
func firstBatchTs(l Log, s partition.SegmentInfo) int64 {
	if s.Size < recordbatch.HeaderSize {
		return -1
	}
	var b [recordbatch.HeaderSize]byte
	if n, err := l.ReadSegment(s.BaseOffset, b[:], 0); err != nil || n < len(b) {
		return -1
	}
	return recordbatch.Header(b[:]).MaxTimestamp()
}

// grabFilthiest picks the log to clean (Kafka's
// grabFilthiestCompactedLog) and marks it in progress.
func (c *Cleaner) grabFilthiest(now int64) (candidate, bool) {
	all := c.logs()
	c.mu.Lock()
	defer c.mu.Unlock()
	var best candidate
	found := false
	live := map[partition.TopicPartition]bool{}
	resets := false
	for _, cand := range all {
		live[cand.tp] = true
		if c.noteLogLocked(cand) {
			resets = true
		}
		cfg := cand.log.Config()
		if !cfg.Compact() || c.inProgress[cand.tp] || c.paused[cand.tp] > 0 {
			continue
		}
		if c.isUncleanableLocked(cand) {
			continue
		}
		cp, ok := c.checkpoints[cand.tp]
		if !ok {
			cp = -1
		}
		offs := cand.log.Offsets()
		if leo, ok := c.idle[cand.tp]; ok {
			if leo == offs.LogEndOffset {
				continue
			}
			delete(c.idle, cand.tp)
		}
		segs := cand.log.Segments()
		rng := computeRange(segs, offs, offs.LastStableOffset, cp, cfg, now, func(s partition.SegmentInfo) int64 {
			return firstBatchTs(cand.log, s)
		})
		if rng.resetCheckpoint {
			c.checkpoints[cand.tp] = rng.firstDirty
			resets = true
		}
		if rng.cleanBytes+rng.cleanableBytes == 0 {
			continue
		}
		eligible := (rng.forced && rng.cleanableBytes > 0) || rng.ratio() > cfg.MinCleanableRatio
		if eligible && (!found || rng.ratio() > best.rng.ratio()) {
			cand.rng = rng
			best, found = cand, true
		}
	}
	for tp := range c.checkpoints {
		if !live[tp] {
			delete(c.checkpoints, tp) // the partition is gone
		}
	}
	for tp := range c.idle {
		if !live[tp] {
			delete(c.idle, tp)
		}
	}
	for tp := range c.known {
		if !live[tp] {
			delete(c.known, tp)
		}
	}
	c.maintainUncleanableLocked(all)
	if resets {
		c.writeCheckpointLocked()
	}
	if found {
		c.inProgress[best.tp] = true
	}
	return best, found
}

// noteLogLocked records cand's log as the one under its name; if another
// was there before (the partition was deleted and created again), the old
// one's checkpoint and idle mark are dropped and it reports true.
// REQUIRES: mu held.
func (c *Cleaner) noteLogLocked(cand candidate) bool {
	old, ok := c.known[cand.tp]
	c.known[cand.tp] = cand.log
	if !ok || old == cand.log {
		return false
	}
	delete(c.idle, cand.tp)
	if _, had := c.checkpoints[cand.tp]; had {
		delete(c.checkpoints, cand.tp)
		return true
	}
	return false
}

// isUncleanableLocked reports whether cand's log is marked uncleanable.
// The mark names the log, so a topic deleted and created again under the
// same name starts clean. REQUIRES: mu held.
func (c *Cleaner) isUncleanableLocked(cand candidate) bool {
	m, ok := c.uncleanable[cand.tp]
	return ok && m.log == cand.log && c.clock.Now().UnixMilli() < m.retryAt
}

// uncleanableMark is one log's failure mark.
type uncleanableMark struct {
	log     Log
	retryAt int64 // clock ms from which the log is tried again
}

// markLocked marks cand's log uncleanable and logs it at Error, so a
// person sees the partition that stopped being compacted. REQUIRES: mu.
func (c *Cleaner) markLocked(cand candidate, what string, err error) {
	c.uncleanable[cand.tp] = uncleanableMark{log: cand.log, retryAt: c.clock.Now().UnixMilli() + c.cfg.UncleanableRetryMs}
	c.logger.Error().Err(err).Str("topic", cand.tp.Topic).Int32("partition", cand.tp.Partition).Str("during", what).
		Int64("retry_after_ms", c.cfg.UncleanableRetryMs).Msg("log cleaning failed, partition marked uncleanable")
}

// markUncleanable is Kafka's markPartitionUncleanable, with a retry.
func (c *Cleaner) markUncleanable(cand candidate, what string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markLocked(cand, what, err)
}

// maintainUncleanableLocked forgets the marks of deleted partitions
// (Kafka's maintainUncleanablePartitions). REQUIRES: mu held.
func (c *Cleaner) maintainUncleanableLocked(all []candidate) {
	if len(c.uncleanable) == 0 {
		return
	}
	live := make(map[partition.TopicPartition]Log, len(all))
	for _, cand := range all {
		live[cand.tp] = cand.log
	}
	for tp, m := range c.uncleanable {
		if live[tp] != m.log {
			delete(c.uncleanable, tp)
		}
	}
}

// UncleanablePartitions lists the partitions marked uncleanable (Kafka's
// uncleanable-partitions-count metric counts them).
func (c *Cleaner) UncleanablePartitions() []partition.TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]partition.TopicPartition, 0, len(c.uncleanable))
	for tp := range c.uncleanable {
		out = append(out, tp)
	}
	return out
}

func (c *Cleaner) writeCheckpointLocked() {
	if err := c.src.WriteCleanerCheckpoint(c.checkpoints); err != nil {
		c.logger.Error().Err(err).Msg("cannot write cleaner-offset-checkpoint")
	}
}

// CleanOnce cleans the filthiest log, if any is eligible, with one pass.
// It reports whether a log was cleaned.
func (c *Cleaner) CleanOnce() (bool, error) {
	now := c.clock.Now().UnixMilli()
	cand, ok := c.grabFilthiest(now)
	if !ok {
		return false, nil
	}
	return c.clean(cand, now)
}

// CleanLog runs one pass over the named log now, whatever its dirty ratio
// (for tests and tools); it reports whether anything was cleaned.
func (c *Cleaner) CleanLog(tp partition.TopicPartition) (bool, error) {
	now := c.clock.Now().UnixMilli()
	for _, cand := range c.logs() {
		if cand.tp != tp {
			continue
		}
		c.mu.Lock()
		if c.inProgress[tp] || c.paused[tp] > 0 {
			c.mu.Unlock()
			return false, errAborted
		}
		c.inProgress[tp] = true
		if c.noteLogLocked(cand) {
			c.writeCheckpointLocked()
		}
		c.mu.Unlock()
		return c.clean(cand, now)
	}
	return false, partition.ErrUnknownTopic
}

func (c *Cleaner) clean(cand candidate, now int64) (bool, error) {
	m := <-c.maps
	defer func() { c.maps <- m }()
	c.mu.Lock()
	cp, ok := c.checkpoints[cand.tp]
	c.mu.Unlock()
	if !ok {
		cp = -1
	}
	start := c.clock.Now()
	p := &pass{
		log: cand.log, cfg: cand.log.Config(), now: now, opts: &c.cfg, offsetMap: m,
		throttle: &throttler{clock: c.clock, rate: c.cfg.IOMaxBytesPerSecond / float64(c.cfg.Threads), stop: c.stop, period: 300 * time.Millisecond},
	}
	p.abort = func() bool {
		// A policy changed away from compact aborts the pass, as Kafka's
		// updateTopicConfig does with abortCleaning.
		if c.stopped() || cand.log.Deleted() || !cand.log.Config().Compact() {
			return true
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.paused[cand.tp] > 0
	}
	leo := cand.log.Offsets().LogEndOffset
	next, cleaned, err := runPass(p, cp)

	c.mu.Lock()
	defer func() {
		delete(c.inProgress, cand.tp)
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	l := c.logger.With().Str("topic", cand.tp.Topic).Int32("partition", cand.tp.Partition).Logger()
	switch {
	case errors.Is(err, errAborted) || errors.Is(err, partition.ErrSegmentsChanged) || (err != nil && cand.log.Deleted()):
		// Deleted, truncated, paused, no longer compacted, or segments
		// removed by retention meanwhile: the next pass starts over.
		l.Debug().Err(err).Msg("cleaning aborted")
		return false, nil
	case err != nil:
		c.markLocked(cand, "cleaning", err)
		return false, err
	}
	if c.uncleanable[cand.tp].log == cand.log {
		delete(c.uncleanable, cand.tp) // CleanLog of a marked log worked
	}
	if next != cp && next >= 0 {
		c.checkpoints[cand.tp] = next
		c.writeCheckpointLocked()
	}
	if !cleaned {
		c.idle[cand.tp] = leo
		return false, nil
	}
	st := p.stats
	c.last[cand.tp] = st
	c.passes++
	c.total.BytesRead += st.BytesRead
	c.total.MapBytesRead += st.MapBytesRead
	c.total.BytesWritten += st.BytesWritten
	c.total.MessagesRead += st.MessagesRead
	c.total.MessagesKept += st.MessagesKept
	c.total.InvalidMessages += st.InvalidMessages
	c.cleanTime += c.clock.Now().Sub(start)
	l.Info().Int64("first_dirty_offset", st.FirstDirtyOffset).Int64("end_offset", st.EndOffset).
		Int64("bytes_read", st.BytesRead+st.MapBytesRead).Int64("bytes_written", st.BytesWritten).
		Int64("records_read", st.MessagesRead).Int64("records_removed", st.MessagesRead-st.MessagesKept).
		Float64("buffer_utilization", st.BufferUtilization).Dur("duration", c.clock.Now().Sub(start)).
		Msg("cleaned log")
	return true, nil
}

// Pause stops cleaning of a log, waiting for a pass in flight to abort
// (Kafka's abortAndPauseCleaning); pauses nest.
func (c *Cleaner) Pause(tp partition.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused[tp]++
	for c.inProgress[tp] {
		c.cond.Wait()
	}
}

// AbortCleaning aborts a pass in flight over the log, waiting until it has
// stopped, without pausing later ones (Kafka's abortCleaning: it is what
// Kafka does when cleanup.policy stops containing compact, so that the
// change returns only once no compaction runs on the log). A pass also
// checks the policy itself, between segments.
func (c *Cleaner) AbortCleaning(tp partition.TopicPartition) {
	c.Pause(tp)
	c.Resume(tp)
}

// Resume undoes one Pause.
func (c *Cleaner) Resume(tp partition.TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused[tp] > 0 {
		c.paused[tp]--
	}
	if c.paused[tp] == 0 {
		delete(c.paused, tp)
	}
}

// Checkpoint returns a log's first dirty offset as checkpointed, -1 if none.
func (c *Cleaner) Checkpoint(tp partition.TopicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp, ok := c.checkpoints[tp]; ok {
		return cp
	}
	return -1
}

// LastStats returns the statistics of a log's last pass.
func (c *Cleaner) LastStats(tp partition.TopicPartition) (Stats, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.last[tp]
	return s, ok
}

// TotalStats returns the sums over every pass and the number of passes.
func (c *Cleaner) TotalStats() (Stats, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.passes
}
