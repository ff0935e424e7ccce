package kcompatd

import (
	"time"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// shareStateConfig is the share coordinator's configuration from the
// broker's share.coordinator.* properties. The broker builds the share
// coordinator with sharestate.New(shareStateConfig(cfg), store, clk, log)
// after the group coordinator and closes it before the store.
func shareStateConfig(cfg Config) sharestate.Config {
	return sharestate.Config{
		StateTopicPartitions:             cfg.ShareCoordinatorStateTopicNumPartitions,
		StateTopicSegmentBytes:           cfg.ShareCoordinatorStateTopicSegmentBytes,
		SnapshotUpdateRecordsPerSnapshot: int(cfg.ShareCoordinatorSnapshotUpdateRecordsPerSnapshot),
		Codec:                            recordbatch.Codec(cfg.ShareCoordinatorStateTopicCompressionCodec),
		LoadBufferSize:                   int(cfg.ShareCoordinatorLoadBufferSize),
		PruneInterval:                    time.Duration(cfg.ShareCoordinatorStateTopicPruneIntervalMs) * time.Millisecond,
		ColdPartitionSnapshotInterval:    time.Duration(cfg.ShareCoordinatorColdPartitionSnapshotIntervalMs) * time.Millisecond,
	}
}
