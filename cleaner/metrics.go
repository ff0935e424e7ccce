package cleaner

import (
	"time"

	"github.com/kcompatd/kcompatd/partition"
)

// Metrics are the cleaner's totals at one instant, for the broker's
// metrics (Kafka's LogCleaner and LogCleanerManager MBeans).
type Metrics struct {
	// Passes counts the passes that cleaned a log; BytesRead (the
	// segments read to copy them and to build the offset map),
	// BytesWritten and CleanTime sum over them.
	Passes                  int64
	BytesRead, BytesWritten int64
	CleanTime               time.Duration
	// RetentionDeletedSegments counts the segments retention deleted.
	RetentionDeletedSegments int64
	// DeadThreads and UncleanablePartitions as DeadThreads and
	// UncleanablePartitions say.
	DeadThreads           int
	UncleanablePartitions int
}

// Metrics returns the cleaner's totals now.
func (c *Cleaner) Metrics() Metrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Metrics{
		Passes:                   c.passes,
		BytesRead:                c.total.BytesRead + c.total.MapBytesRead,
		BytesWritten:             c.total.BytesWritten,
		CleanTime:                c.cleanTime,
		RetentionDeletedSegments: c.retentionDeleted.Load(),
		DeadThreads:              int(c.deadThreads.Load()),
		UncleanablePartitions:    len(c.uncleanable),
	}
}

// DirtyRatios returns the dirty ratio of each compacted log now (Kafka's
// cleanableRatio: the bytes of its cleanable range over those of its
// clean and cleanable ranges; the cleaner cleans a log whose ratio passes
// min.cleanable.dirty.ratio), computed from the logs' segment lists, as
// the cleaner does when it picks a log.
func (c *Cleaner) DirtyRatios() map[partition.TopicPartition]float64 {
	all := c.logs()
	c.mu.Lock()
	cps := make(map[partition.TopicPartition]int64, len(all))
	for _, cand := range all {
		cp, ok := c.checkpoints[cand.tp]
		// A log deleted and created again under its name is not the one
		// the checkpoint is of (noteLogLocked).
		if k, seen := c.known[cand.tp]; ok && (!seen || k == cand.log) {
			cps[cand.tp] = cp
		}
	}
	c.mu.Unlock()
	now := c.clock.Now().UnixMilli()
	out := make(map[partition.TopicPartition]float64)
	for _, cand := range all {
		cfg := cand.log.Config()
		if !cfg.Compact() {
			continue
		}
		cp, ok := cps[cand.tp]
		if !ok {
			cp = -1
		}
		offs := cand.log.Offsets()
		rng := computeRange(cand.log.Segments(), offs, offs.LastStableOffset, cp, cfg, now, func(s partition.SegmentInfo) int64 {
			return firstBatchTs(cand.log, s)
		})
		out[cand.tp] = rng.ratio()
	}
	return out
}
