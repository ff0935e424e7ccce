package partition

import (
	"syscall"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

// What DescribeLogDirs and OffsetForLeaderEpoch read from the store: the
// data dir, its volume, each log's size, and the leader-epoch cache.

// undefinedEpoch and undefinedEpochOffset are Kafka's UNDEFINED_EPOCH and
// UNDEFINED_EPOCH_OFFSET.
const (
	undefinedEpoch       int32 = -1
	undefinedEpochOffset int64 = -1
)

// Dir is the data directory (log.dirs).
func (s *Store) Dir() string { return s.cfg.Dir }

// VolumeBytes returns the total and usable bytes of the volume holding the
// data dir (statfs: usable is what an unprivileged writer may still use, as
// Java's FileStore.getUsableSpace), or -1, -1 when it cannot tell (a
// file system other than the OS one, or statfs failing).
func (s *Store) VolumeBytes() (total, usable int64) {
	if _, ok := s.fs.(vfs.OS); !ok {
		return -1, -1
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.cfg.Dir, &st); err != nil {
		s.logger.Warn().Err(err).Str("dir", s.cfg.Dir).Msg("statfs of data dir failed")
		return -1, -1
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks) * bs, int64(st.Bavail) * bs
}

// Size is the bytes of the log's segments (.log files only, as Kafka's
// UnifiedLog.size), from the current snapshot, without locking.
func (l *Log) Size() int64 {
	var n int64
	for _, seg := range *l.segs.Load() {
		n += seg.size.Load()
	}
	return n
}

// EndOffsetForEpoch is Kafka's LeaderEpochFileCache.endOffsetFor over this
// log's epoch cache, which on a single broker is one entry: epoch 0,
// starting at the log start offset (Kafka assigns it when the broker
// becomes leader and moves it forward with the log start offset). It
// returns the epoch and the end offset of the requested epoch, or
// (-1, -1) when the epoch is undefined or later than every known epoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	switch {
	case epoch == undefinedEpoch:
		return undefinedEpoch, undefinedEpochOffset
	case epoch == leaderEpoch:
		// The latest epoch ends at the log end offset: a consumer checking
		// its position for truncation compares against it.
		return epoch, l.leo.Load()
	case epoch > leaderEpoch:
		return undefinedEpoch, undefinedEpochOffset
	default:
		// Below the first known epoch: the start of the first epoch
		// above it, with the requested epoch echoed back.
		return epoch, l.logStart.Load()
	}
}
