// Package partition is kcompatd's storage engine: the topic catalog and one
// Log per partition, in Apache Kafka's on-disk format.
//
// # Data dir
//
//	meta.properties                    KRaft: cluster.id, directory.id, node.id, version=1
//	.lock                              flock held while the broker runs
//	.kafka_cleanshutdown               written by a clean Close, removed at Open
//	kcompatd-catalog.json              topics, ids, partition counts, overrides
//	kcompatd-client-quotas.json        client quotas (AlterClientQuotas), client_quotas.go
//	kcompatd-dynamic-broker-configs.json  dynamic broker configs (topic_config.go)
//	recovery-point-offset-checkpoint   "0", count, "topic partition offset" lines
//	log-start-offset-checkpoint        same format
//	cleaner-offset-checkpoint          same format: each compacted log's first dirty offset
//	<topic>-<p>/                       one partition
//	    00000000000000000000.log       v2 batches as produced, offsets assigned
//	    00000000000000000000.index     sparse offset index (8-byte entries)
//	    00000000000000000000.timeindex sparse time index (12-byte entries)
//	    leader-epoch-checkpoint        "0", count, "epoch startOffset" lines
//	    partition.metadata             "version: 0\ntopic_id: <base64url>"
//	<topic>-<p>.<hex uuid>-delete      a deleted partition being removed
//	<topic>-<p>.<hex uuid>-stray       a partition the catalog does not know
//
// Small files are replaced atomically (vfs.WriteFileAtomic). The .log files
// are the truth; indexes are rebuilt from them whenever they are missing or
// inconsistent.
//
// # Write path
//
// Append takes the partition's mutex, assigns the offset by rewriting the
// batch's base offset (and leader epoch, outside the CRC), rolls the
// segment if Kafka would (segment.bytes, segment.ms, an index full, a
// relative offset overflow), writes the batch bytes as given in one write,
// adds index entries every index.interval.bytes, and releases the mutex.
// Under Kafka's default flush policy the batch is then acknowledged and the
// high watermark moves: the OS writes the page cache back. When
// flush.messages is due (flush.messages=1: every append) the appender
// waits for an fsync first; one fsync runs at a time and covers every
// append written before it started, so appenders that arrive while it runs
// share the next one (group commit). A rolled segment is fsynced in the
// background, which moves the recovery point past it.
//
// # Read path
//
// Read, Offsets and Wait take no lock: they load an immutable snapshot of
// the segment list and the high watermark (with its byte position) from
// atomics. Read finds the segment by binary search, the position through
// the offset index, scans batch headers to the batch holding the offset,
// and returns whole batches from one ReadAt, never past the high watermark.
//
// # Recovery
//
// See recovery.go. After a clean shutdown no segment data is read. A crash
// in the middle of a cleaner's segment swap is completed or undone as
// Kafka's LogLoader does.
//
// # Cleaner and retention
//
// See maintenance.go: Segments, ReadSegment, ReplaceSegments (the swap of
// cleaned output through .cleaned, .swap and .deleted files),
// DeleteSegmentsBefore (retention), and AdvanceLogStartOffset
// (DeleteRecords); cleaner_support.go: the cleaner's output file and the
// cleaner-offset-checkpoint.
//
// # Locks
//
// Store.catalogMu, then Store.mu, then Log.mu, then Log.fmu. No lock spans
// partitions, and no lock is held across an fsync except fmu's owner flag.
package partition
