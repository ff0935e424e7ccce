package partition

// What the log cleaner needs beyond maintenance.go: a place to write its
// output (the "<base>.log.cleaned" file, through the store's FS so crash
// tests see it) and the data dir's cleaner-offset-checkpoint, Kafka's record
// of how far each compacted log has been cleaned.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

// cleanerCheckpointFile is Kafka's cleaner-offset-checkpoint: per
// partition, the first dirty offset (the end of the last finished pass).
const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// CreateCleanedSegment creates (truncating any leftover) the cleaner's
// output file "<base>.log.cleaned" in the log's directory. The caller
// writes whole batches to it, fsyncs and closes it, then calls
// ReplaceSegments, or RemoveCleanedSegment to give up.
func (l *Log) CreateCleanedSegment(base int64) (vfs.File, error) {
	if l.gone.Load() {
		return nil, l.goneErr()
	}
	if err := l.store.Offline(); err != nil {
		return nil, err
	}
	name := filepath.Join(l.dir, segmentFileName(base, logSuffix)) + cleanedSuffix
	f, err := l.store.fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		if !l.gone.Load() { // not a directory renamed by a deletion
			l.store.markOffline(err)
		}
		return nil, l.readErr(err)
	}
	return offlineOnError{f, l.store}, nil
}

// RemoveCleanedSegment removes the cleaner's unfinished output for base.
func (l *Log) RemoveCleanedSegment(base int64) {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		name := filepath.Join(l.dir, segmentFileName(base, suf)) + cleanedSuffix
		if err := l.store.fs.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.logger.Warn().Err(err).Str("file", name).Msg("cannot remove cleaner output")
		}
	}
}

// Deleted reports whether the log's topic was deleted (or the log closed):
// the cleaner abandons its work on it.
func (l *Log) Deleted() bool { return l.gone.Load() }

// ReadCleanerCheckpoint reads the data dir's cleaner-offset-checkpoint; a
// missing or malformed file reads as empty (every log then starts dirty
// from its log start offset, which is safe).
func (s *Store) ReadCleanerCheckpoint() map[TopicPartition]int64 {
	m := s.readOffsetCheckpoint(cleanerCheckpointFile)
	out := make(map[TopicPartition]int64, len(m))
	for k, v := range m {
		out[TopicPartition(k)] = v
	}
	return out
}

// WriteCleanerCheckpoint replaces the data dir's cleaner-offset-checkpoint
// atomically with m.
func (s *Store) WriteCleanerCheckpoint(m map[TopicPartition]int64) error {
	in := make(map[topicPartition]int64, len(m))
	for k, v := range m {
		in[topicPartition(k)] = v
	}
	if err := s.Offline(); err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, cleanerCheckpointFile), encodeOffsetCheckpoint(in)); err != nil {
		s.markOffline(err) // as Kafka's LogCleanerManager.updateCheckpoints
		return storageError(err)
	}
	return nil
}
