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

// indexBytes returns the bytes of the segment's offset and time index
// entries: what Kafka's cleaner sums when it groups segments.
func (s *segment) indexBytes() (offset, time int64) {
	return s.offIdx.n.Load() * offsetIndexEntrySize, s.timeIdx.n.Load() * timeIndexEntrySize
}

// WriteCleanedTxnIndex writes the cleaner's "<base>.txnindex.cleaned" for
// the output segment at base (Kafka's cleaned transaction index): kept are
// the aborted transactions whose ABORT markers the output keeps and must
// index, in the order of their markers. An entry the log's .txnindex
// holds for the same producer and marker is written as stored (with its
// LSO at the abort); another as given. With none, the file is empty and
// ReplaceSegments installs no .txnindex, as Kafka's cleaner creates none.
// The file is fsynced; RemoveCleanedSegment removes it.
func (l *Log) WriteCleanedTxnIndex(base int64, kept []AbortedTxnEntry) error {
	if l.gone.Load() {
		return l.goneErr()
	}
	if err := l.store.Offline(); err != nil {
		return err
	}
	type key struct{ producerID, marker int64 }
	stored := map[key]abortedEntry{}
	if len(kept) > 0 {
		for _, s := range *l.segs.Load() {
			for _, e := range s.abortedEntries() {
				stored[key{e.producerID, e.lastOffset}] = e
			}
		}
	}
	entries := make([]abortedEntry, 0, len(kept))
	for _, k := range kept {
		e, ok := stored[key{k.ProducerID, k.LastOffset}]
		if !ok {
			e = abortedEntry{producerID: k.ProducerID, firstOffset: k.FirstOffset, lastOffset: k.LastOffset, lastStableOffset: k.LastStableOffset}
		}
		entries = append(entries, e)
	}
	name := filepath.Join(l.dir, segmentFileName(base, txnIndexSuffix)) + cleanedSuffix
	if err := writeTxnIndexFile(l.store.fs, name, entries); err != nil {
		if !l.gone.Load() {
			l.store.markOffline(err)
		}
		return storageError(err)
	}
	return nil
}

// RemoveCleanedSegment removes the cleaner's unfinished output for base.
func (l *Log) RemoveCleanedSegment(base int64) {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
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

// ProducerLastRecord is what the cleaner must keep of an active producer
// (Kafka's LastRecord): the last offset of its last data batch in its
// current epoch, or -1 when the epoch has none (a transaction marker of
// transaction.version 2 bumps the epoch), and that epoch.
type ProducerLastRecord struct {
	LastDataOffset int64
	Epoch          int16
}

// LastRecordsOfActiveProducers returns, by producer id, every producer the
// partition's producer state holds (Kafka's
// UnifiedLog.lastRecordsOfActiveProducers): until producer expiry forgets
// a producer, the cleaner keeps its last batch so that its sequence and
// epoch survive cleaning and reloads.
func (l *Log) LastRecordsOfActiveProducers() map[int64]ProducerLastRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]ProducerLastRecord, len(l.pstate.producers))
	for id, e := range l.pstate.producers {
		out[id] = ProducerLastRecord{LastDataOffset: e.lastDataOffset(), Epoch: e.epoch}
	}
	return out
}
