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
//	    00000000000000000000.txnindex  aborted transactions whose ABORT marker is in the segment (34-byte entries; txn_index.go)
//	    00000000000000000000.snapshot  producer state below that offset (producer_snapshot.go)
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
// # I/O errors
//
// See offline.go. As Kafka's LogDirFailureChannel does, a failed write,
// fsync, roll, checkpoint or cleaner swap takes the whole data dir (Kafka's
// one log dir) offline, unless it is a descriptor limit (EMFILE, ENFILE:
// that request alone fails with ErrResourceLimit): every partition answers ErrStorage
// (KAFKA_STORAGE_ERROR) to appends, reads and offset lookups, nothing more
// is written or acknowledged, and a restart recovers from what is durable.
// A directory fsync never runs ahead of the data of the segments before
// the newest one (dirsync.go), so a power cut leaves no hole in the
// offsets below it. internal/vfs/memfs injects the faults the tests sweep.
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
// # Producer state and transactions
//
// See producer_state.go: per producer id the epoch, the last five batches
// (duplicates are answered with the original's offset and not written),
// sequence and epoch checks as Kafka's ProducerAppendInfo, and open
// transactions, which hold the last stable offset (LSO) at their first
// offset until the high watermark passes their marker. WriteTxnMarker
// ends a transaction; an abort goes into the marker segment's .txnindex.
// Snapshots are written at each roll and at a clean close; recovery loads
// the newest one at or below the recovered log end offset and replays the
// batches after it (the .txnindex entries the replay writes are fsynced
// before the snapshot at the log end that covers them). Transactional
// batches from verified callers go through AppendVerified with the guard
// StartTxnVerification gave before the transaction coordinator was asked
// (Kafka's VerificationGuard): the producer's marker clears it, so a
// batch verified just before its transaction ended cannot open a new one.
//
// # Open files
//
// See segment_files.go: the active segment's files stay open while it is
// appended to; inactive segments, and active ones not appended to since
// the last sweep, are opened when used and closed when idle (a bounded
// cache per store, Config.OpenSegments), so an idle partition holds no
// descriptor. Running out of descriptors fails the
// request that hit it and never takes the data dir offline (offline.go).
//
// # Cleaner and retention
//
// See maintenance.go: Segments, ReadSegment, ReplaceSegments (the swap of
// cleaned output through .cleaned, .swap and .deleted files),
// DeleteSegmentsBefore (retention), and AdvanceLogStartOffset
// (DeleteRecords); cleaner_support.go: the cleaner's output files (the
// .log.cleaned and its .txnindex.cleaned), the active producers' last
// records from the producer state, and the cleaner-offset-checkpoint.
//
// # Locks
//
// Every lock of the package, what it guards and the order they are taken
// in are listed in LOCKING.md at the repository root, the one list for
// the whole broker.
package partition
