package coordinator

import (
	"context"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
)

// ShareTopicsDeleted is what Kafka's group coordinator does for share
// groups when topics are deleted (onPartitionsDeleted, and the share
// coordinator's cleanup of deleted topics' state): every share group
// forgets the deleted topics' initialized share-partitions (its
// ShareGroupStatePartitionMetadata is written again) and their share state
// is deleted; then any state of the deleted topics still held (of groups
// that no longer have records, say) is deleted too. The share fetcher
// drops the topics' in-memory share-partitions first.
func (c *Coordinator) ShareTopicsDeleted(ctx context.Context, ids [][16]byte) {
	if len(ids) == 0 {
		return
	}
	c.share.TopicsDeleted(ids)
	deleted := make(map[[16]byte]bool, len(ids))
	for _, id := range ids {
		deleted[id] = true
	}
	for _, g := range c.allGroups() {
		if s := g.sum.Load(); s == nil || s.share == "" {
			continue // not a share group: nothing to wake it for
		}
		done := make(chan struct{})
		if g.do(ctx, func() { g.dropShareTopics(deleted); close(done) }) {
			select {
			case <-done:
			case <-g.done:
			}
		}
	}
	if cl, ok := c.persister.(interface{ CleanupDeletedTopics() }); ok {
		cl.CleanupDeletedTopics()
	}
}

// dropShareTopics forgets the initialized share-partitions of the deleted
// topics and deletes their share state. Owner only.
func (g *group) dropShareTopics(deleted map[[16]byte]bool) {
	if g.sg == nil || g.state == stateDead {
		return
	}
	changed := false
	for tp := range g.sg.initialized {
		if !deleted[tp.id] {
			continue
		}
		if err := g.c.persister.Delete(sharestate.Key{GroupID: g.id, TopicID: tp.id, Partition: tp.partition}); err != nil {
			g.log.Warn().Err(err).Int32("partition", tp.partition).Msg("deleting a deleted topic's share state failed")
			continue
		}
		delete(g.sg.initialized, tp)
		changed = true
	}
	if !changed {
		return
	}
	if err := g.writeShare(g.shareRecords()); err != nil {
		g.log.Error().Err(err).Msg("writing the share group's partition metadata after a topic deletion failed")
	}
	g.publish()
}

// EnsureShareStateTopic creates __share_group_state if the share state
// persister is the share coordinator and the topic does not exist yet, as
// Kafka's AutoTopicCreationManager does for it; nil, nil with another
// persister.
func (c *Coordinator) EnsureShareStateTopic() (*partition.Topic, error) {
	if e, ok := c.persister.(interface {
		EnsureStateTopic() (*partition.Topic, error)
	}); ok {
		return e.EnsureStateTopic()
	}
	return nil, nil
}
