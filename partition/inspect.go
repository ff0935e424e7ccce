package partition

// Read-only views of a partition's files for offline tools (kcompatd's
// dump-log and verify subcommands), over the same decoders the broker
// uses when it opens a log. Each takes the bytes of one file, which may
// come from Apache Kafka as well as from kcompatd (the format is the
// same), and is safe on untrusted input: it never panics and allocates no
// more than the input's size justifies. Callers bound the size they read.

import (
	"encoding/binary"
	"sort"
)

// File-name suffixes of a partition directory, as Kafka names them.
const (
	LogSuffix       = logSuffix
	IndexSuffix     = indexSuffix
	TimeIndexSuffix = timeIndexSuffix
	TxnIndexSuffix  = txnIndexSuffix
	SnapshotSuffix  = snapshotSuffix
)

// Names of the checkpoint files Kafka keeps in a data dir and in each
// partition dir.
const (
	RecoveryPointFile  = recoveryPointFile
	LogStartOffsetFile = logStartOffsetFile
	LeaderEpochFile    = leaderEpochFile
	CleanerOffsetFile  = cleanerCheckpointFile
)

// ParseSegmentFileName splits a partition file name such as
// 00000000000000000042.timeindex into its base offset and suffix
// (".timeindex"). Names with a further suffix (".log.swap") give the whole
// tail as suffix; ok is false unless the name starts with 20 digits and a
// dot.
func ParseSegmentFileName(name string) (base int64, suffix string, ok bool) {
	if len(name) < 21 || name[20] != '.' {
		return 0, "", false
	}
	base, ok = parseSegmentFileName(name, name[20:])
	if !ok {
		return 0, "", false
	}
	return base, name[20:], true
}

// OffsetIndexEntry is one .index entry with its absolute offset: the last
// offset of the batch that starts at byte Position of the .log.
type OffsetIndexEntry struct {
	Offset   int64
	Position int64
}

// OffsetIndexEntries decodes every whole 8-byte entry of an .index file
// as stored (a preallocated Kafka index ends in zero entries), with
// offsets made absolute from base. valid is the length of the prefix the
// broker accepts when it loads the index: strictly increasing offsets and
// positions. Trailing bytes short of an entry are ignored.
func OffsetIndexEntries(b []byte, base int64) (entries []OffsetIndexEntry, valid int) {
	entries = make([]OffsetIndexEntry, 0, len(b)/offsetIndexEntrySize)
	for i := 0; i+offsetIndexEntrySize <= len(b); i += offsetIndexEntrySize {
		rel := int64(int32(binary.BigEndian.Uint32(b[i:])))
		pos := int64(int32(binary.BigEndian.Uint32(b[i+4:])))
		entries = append(entries, OffsetIndexEntry{base + rel, pos})
	}
	return entries, len(decodeOffsetIndex(b))
}

// TimeIndexEntry is one .timeindex entry with its absolute offset: the
// records up to Offset have timestamps up to Timestamp.
type TimeIndexEntry struct {
	Timestamp int64
	Offset    int64
}

// TimeIndexEntries is OffsetIndexEntries for a .timeindex file (12-byte
// entries); valid counts the leading entries with strictly increasing
// timestamps and non-decreasing offsets.
func TimeIndexEntries(b []byte, base int64) (entries []TimeIndexEntry, valid int) {
	entries = make([]TimeIndexEntry, 0, len(b)/timeIndexEntrySize)
	for i := 0; i+timeIndexEntrySize <= len(b); i += timeIndexEntrySize {
		ts := int64(binary.BigEndian.Uint64(b[i:]))
		rel := int64(int32(binary.BigEndian.Uint32(b[i+8:])))
		entries = append(entries, TimeIndexEntry{ts, base + rel})
	}
	return entries, len(decodeTimeIndex(b))
}

// AbortedTxnEntry is one .txnindex entry (entry version 0): an aborted
// transaction of ProducerID spanning [FirstOffset, LastOffset], the last
// being its ABORT marker, and the last stable offset when it aborted.
type AbortedTxnEntry struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// TxnIndexEntries decodes a .txnindex file: the valid entries, and an
// error naming the first bad one if any (a trailing partial entry, a torn
// write, is ignored as the broker ignores it).
func TxnIndexEntries(b []byte) ([]AbortedTxnEntry, error) {
	raw, err := decodeTxnEntries(b)
	out := make([]AbortedTxnEntry, len(raw))
	for i, e := range raw {
		out[i] = AbortedTxnEntry{e.producerID, e.firstOffset, e.lastOffset, e.lastStableOffset}
	}
	return out, err
}

// ProducerSnapshotEntry is one producer of a .snapshot file. HasBatch is
// false when the snapshot holds no batch for it (a producer known only by
// its epoch, after a marker); the batch fields are then zero.
type ProducerSnapshotEntry struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	LastTimestamp    int64
	// TxnFirstOffset is the first offset of its open transaction, -1 if
	// none.
	TxnFirstOffset int64

	HasBatch      bool
	FirstSequence int32
	LastSequence  int32
	LastOffset    int64
	OffsetDelta   int32
	Timestamp     int64
}

// ProducerSnapshot decodes a producer-state .snapshot file (version 1,
// with its CRC checked), producers in file order.
func ProducerSnapshot(b []byte) ([]ProducerSnapshotEntry, error) {
	entries, err := decodeSnapshot(b)
	if err != nil {
		return nil, err
	}
	out := make([]ProducerSnapshotEntry, len(entries))
	for i, e := range entries {
		o := ProducerSnapshotEntry{ProducerID: e.id, ProducerEpoch: e.epoch, CoordinatorEpoch: e.coordinatorEpoch,
			LastTimestamp: e.lastTimestamp, TxnFirstOffset: e.txnFirstOffset}
		if len(e.batches) > 0 {
			m := e.batches[0]
			o.HasBatch = true
			o.FirstSequence, o.LastSequence = m.firstSeq(), m.lastSeq
			o.LastOffset, o.OffsetDelta, o.Timestamp = m.lastOffset, m.offsetDelta, m.timestamp
		}
		out[i] = o
	}
	return out, nil
}

// CheckpointEntry is one line of an offset checkpoint file
// (recovery-point-offset-checkpoint and its kin).
type CheckpointEntry struct {
	Topic     string
	Partition int32
	Offset    int64
}

// OffsetCheckpoint decodes an offset checkpoint file, sorted by topic
// and partition.
func OffsetCheckpoint(b []byte) ([]CheckpointEntry, error) {
	m, err := decodeOffsetCheckpoint(b)
	if err != nil {
		return nil, err
	}
	out := make([]CheckpointEntry, 0, len(m))
	for tp, o := range m {
		out = append(out, CheckpointEntry{tp.Topic, tp.Partition, o})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// LeaderEpochEntry is one line of a leader-epoch-checkpoint file: the
// first offset written in Epoch.
type LeaderEpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// LeaderEpochCheckpoint decodes a leader-epoch-checkpoint file.
func LeaderEpochCheckpoint(b []byte) ([]LeaderEpochEntry, error) {
	es, err := decodeLeaderEpochCheckpoint(b)
	if err != nil {
		return nil, err
	}
	out := make([]LeaderEpochEntry, len(es))
	for i, e := range es {
		out[i] = LeaderEpochEntry(e)
	}
	return out, nil
}
