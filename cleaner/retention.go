package cleaner

import (
	"errors"

	"github.com/kcompatd/kcompatd/partition"
)

// Retention (spec section 13, Kafka's UnifiedLog.deleteOldSegments):
// delete the oldest segments while they are below the log start offset,
// beyond retention.bytes, or older than retention.ms. Compact-only logs
// get only the first rule.

// RetainDeleteOnly runs retention over every log whose policy does not
// contain compact (the retention task's share, Kafka's
// LogManager.cleanupLogs; uncleanable marks do not apply to it).
func (c *Cleaner) RetainDeleteOnly() {
	c.retain(false)
}

// RetainCompacted runs retention over compacted logs (the cleaner threads'
// share, Kafka's deletableLogs; with log.cleaner.enable=false nothing runs
// it, as in Kafka). Logs marked uncleanable are skipped, and a failure
// marks the log uncleanable.
func (c *Cleaner) RetainCompacted() {
	c.retain(true)
}

func (c *Cleaner) retain(compacted bool) {
	now := c.clock.Now().UnixMilli()
	for _, cand := range c.logs() {
		if c.stopped() {
			return
		}
		if cand.log.Config().Compact() != compacted {
			continue
		}
		c.mu.Lock()
		skip := c.inProgress[cand.tp] || c.paused[cand.tp] > 0 || (compacted && c.isUncleanableLocked(cand))
		c.mu.Unlock()
		if skip {
			continue
		}
		n, err := deleteOldSegmentsRecovered(cand.log, now)
		if err != nil && !errors.Is(err, partition.ErrUnknownTopic) && !errors.Is(err, partition.ErrClosed) && !cand.log.Deleted() {
			if compacted {
				c.markUncleanable(cand, "retention", err)
			} else {
				c.logger.Error().Err(err).Str("topic", cand.tp.Topic).Int32("partition", cand.tp.Partition).Msg("retention failed")
			}
			continue
		}
		if n > 0 {
			c.retentionDeleted.Add(int64(n))
			c.logger.Info().Str("topic", cand.tp.Topic).Int32("partition", cand.tp.Partition).Int("segments", n).
				Int64("log_start_offset", cand.log.Offsets().LogStartOffset).Msg("deleted old segments")
		}
	}
}

// deletablePrefix returns how many of the oldest segments may go under
// shouldDelete (Kafka's deletableSegments): walking oldest first, a
// segment goes while shouldDelete holds, its upper bound (next base, or
// the log end offset for the last) is within the high watermark, and it is
// not an empty last segment.
func deletablePrefix(segs []partition.SegmentInfo, hw int64, shouldDelete func(i int) bool) int {
	n := 0
	for i, s := range segs {
		last := i == len(segs)-1
		if !shouldDelete(i) || s.NextOffset > hw || (last && s.Size == 0) {
			break
		}
		n++
	}
	return n
}

// DeleteOldSegments applies the retention rules to one log at now (ms) and
// returns the number of segments deleted.
func DeleteOldSegments(l Log, now int64) (int, error) {
	total := 0
	cfg := l.Config()
	rules := []func(segs []partition.SegmentInfo, offs partition.Offsets) func(int) bool{
		func(segs []partition.SegmentInfo, offs partition.Offsets) func(int) bool {
			// Below the log start offset (DeleteRecords): always.
			return func(i int) bool { return i+1 < len(segs) && segs[i+1].BaseOffset <= offs.LogStartOffset }
		},
	}
	if cfg.Delete() {
		rules = append(rules,
			func(segs []partition.SegmentInfo, offs partition.Offsets) func(int) bool {
				if cfg.RetentionBytes < 0 {
					return func(int) bool { return false }
				}
				var size int64
				for _, s := range segs {
					size += s.Size
				}
				excess := size - cfg.RetentionBytes
				return func(i int) bool {
					if excess-segs[i].Size >= 0 {
						excess -= segs[i].Size
						return true
					}
					return false
				}
			},
			func(segs []partition.SegmentInfo, offs partition.Offsets) func(int) bool {
				if cfg.RetentionMs < 0 {
					return func(int) bool { return false }
				}
				// Kafka's segment.largestTimestamp: the largest record
				// timestamp, or for a segment without any (one the
				// cleaner emptied, or records stamped -1) its file's
				// modification time, which a cleaned segment inherits
				// from the last segment it replaced.
				return func(i int) bool { return now-segs[i].LargestTimestamp > cfg.RetentionMs }
			})
	}
	for _, rule := range rules {
		segs := l.Segments()
		offs := l.Offsets()
		n := deletablePrefix(segs, offs.HighWatermark, rule(segs, offs))
		if n == 0 {
			continue
		}
		upTo := segs[n-1].NextOffset
		deleted, err := l.DeleteSegmentsBefore(upTo)
		total += deleted
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// deleteOldSegmentsRecovered is DeleteOldSegments with a panic turned
// into an error, which fails that log alone (recoverInto).
func deleteOldSegmentsRecovered(l Log, now int64) (n int, err error) {
	defer recoverInto(&err)
	return DeleteOldSegments(l, now)
}
