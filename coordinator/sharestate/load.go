package sharestate

import (
	"fmt"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// maxDecompressed bounds one batch's inflated records when loading.
const maxDecompressed = 64 << 20

// load replays every partition of __share_group_state from its log start
// offset, as Kafka's coordinator loads a shard: records in offset order,
// snapshots replacing, updates merging, tombstones deleting. A record
// that does not decode is skipped with an error logged.
func (c *Coordinator) load() error {
	t := c.store.Topic(StateTopic)
	if t == nil {
		return nil
	}
	states := 0
	for p, log := range t.Partitions {
		if p >= len(c.shards) {
			break
		}
		s := c.shards[p]
		s.mu.Lock()
		err := c.loadPartition(s, log.Offsets().LogStartOffset, func(off int64, max int) ([]byte, error) {
			res, err := log.Read(off, int32(max), true)
			return res.Records, err
		})
		states += len(s.states)
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	if states > 0 {
		c.log.Info().Int("share_partitions", states).Msg("loaded share-partition state from " + StateTopic)
	}
	return nil
}

// loadPartition replays s's partition from offset start through read.
// REQUIRES: s.mu held.
func (c *Coordinator) loadPartition(s *shard, start int64, read func(off int64, max int) ([]byte, error)) error {
	off := start
	for {
		recs, err := read(off, c.cfg.LoadBufferSize)
		if err != nil {
			return fmt.Errorf("sharestate: loading %s-%d at offset %d: %w", StateTopic, s.partition, off, err)
		}
		if len(recs) == 0 {
			return nil
		}
		next := off
		for b := recs; len(b) > 0; {
			h, err := recordbatch.ParseHeader(b)
			if err != nil || h.Size() > len(b) {
				return fmt.Errorf("sharestate: loading %s-%d at offset %d: %w", StateTopic, s.partition, off, recordbatch.ErrTruncated)
			}
			batch := b[:h.Size()]
			b = b[h.Size():]
			next = h.LastOffset() + 1
			if h.Control() {
				continue
			}
			base := h.BaseOffset()
			err = recordbatch.ForEachRecord(batch, maxDecompressed, func(r recordbatch.Record) error {
				if err := s.replay(r.Key, r.Value, base+int64(r.OffsetDelta), c.cfg.SnapshotUpdateRecordsPerSnapshot); err != nil {
					c.log.Error().Err(err).Int32("partition", s.partition).Int64("offset", base+int64(r.OffsetDelta)).Msg("skipping undecodable " + StateTopic + " record")
				}
				return nil
			})
			if err != nil {
				c.log.Error().Err(err).Int32("partition", s.partition).Int64("offset", base).Msg("skipping undecodable " + StateTopic + " batch")
			}
		}
		if next <= off {
			return nil
		}
		off = next
	}
}
