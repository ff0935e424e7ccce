package sharestate

import (
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Prune moves each state partition's log start offset up to its last
// redundant offset (Kafka's share coordinator prune job, which deletes
// records through the replica manager): below it every share-partition
// has a newer snapshot. Retention then deletes the segments below it.
func (c *Coordinator) Prune() {
	t := c.store.Topic(StateTopic)
	if t == nil {
		return
	}
	for _, s := range c.shards {
		s.mu.Lock()
		off, ok := s.redundantOffset()
		if !ok || off == s.lastPruned || int(s.partition) >= len(t.Partitions) {
			s.mu.Unlock()
			continue
		}
		if _, err := t.Partitions[s.partition].AdvanceLogStartOffset(off); err != nil {
			c.log.Warn().Err(err).Int32("partition", s.partition).Int64("offset", off).Msg("pruning " + StateTopic + " failed")
		} else {
			s.lastPruned = off
		}
		s.mu.Unlock()
	}
}

// SnapshotColdPartitions writes a fresh ShareSnapshot of every
// share-partition whose last snapshot is older than
// ColdPartitionSnapshotInterval, so that pruning can pass its old records
// (Kafka's snapshotColdPartitions); nothing when every one was already
// snapshotted that way.
func (c *Coordinator) SnapshotColdPartitions() {
	now := c.clock.Now().UnixMilli()
	limit := c.cfg.ColdPartitionSnapshotInterval.Milliseconds()
	for _, s := range c.shards {
		s.mu.Lock()
		var recs []recordbatch.Record
		cold := 0
		for _, e := range s.states {
			if e.state.CreateTimestamp != e.state.WriteTimestamp {
				cold++
			}
		}
		if cold < len(s.states) {
			for k, e := range s.states {
				if now-e.state.WriteTimestamp < limit {
					continue
				}
				v := e.state
				v.SnapshotEpoch++
				v.WriteTimestamp = now
				recs = append(recs, snapshotRecord(k, &v))
			}
		}
		if len(recs) > 0 {
			if err := c.commit(s, recs); err != nil {
				c.log.Warn().Err(err).Int32("partition", s.partition).Msg("snapshotting cold share-partitions failed")
			}
		}
		s.mu.Unlock()
	}
}

// CleanupDeletedTopics writes a tombstone for the state of every
// share-partition whose topic no longer exists (Kafka's
// maybeCleanupShareState on a metadata update deleting topics).
func (c *Coordinator) CleanupDeletedTopics() {
	for _, s := range c.shards {
		s.mu.Lock()
		var recs []recordbatch.Record
		for k := range s.states {
			if c.store.TopicByID(partition.TopicID(k.TopicID)) == nil {
				recs = append(recs, recordbatch.Record{Key: appendKey(nil, recShareSnapshot, k)})
			}
		}
		if len(recs) > 0 {
			if err := c.commit(s, recs); err != nil {
				c.log.Warn().Err(err).Int32("partition", s.partition).Msg("deleting the state of deleted topics failed")
			}
		}
		s.mu.Unlock()
	}
}
