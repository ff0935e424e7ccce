// Package cleaner does the background work over partition logs:
// compaction (cleanup.policy containing compact) and retention (delete),
// with Kafka's rules as written down in shared/design/cleaner-spec.md. It
// reaches logs only through partition's API (the Log interface).
//
// # Threads
//
// log.cleaner.threads goroutines each loop as Kafka's CleanerThread does:
// pick the filthiest compacted log (dirty ratio above
// min.cleanable.dirty.ratio, or forced by max.compaction.lag.ms), clean it
// with one pass, run retention over compacted logs, and sleep
// log.cleaner.backoff.ms when nothing was cleaned. A separate goroutine runs
// retention over the other logs every log.retention.check.interval.ms.
// Passes in flight are aborted (their output removed, the checkpoint kept)
// when the log is deleted, its segments change under them, it is paused,
// its cleanup.policy no longer contains compact, or the cleaner closes.
//
// Retention and min.compaction.lag.ms measure a segment's age from its
// largest record timestamp, or for a segment without timestamps from its
// file's modification time, which a cleaned segment inherits from the
// last segment it replaced (Kafka's largestTimestamp and
// setLastModified).
//
// # A pass (pass.go)
//
//  1. Scan every batch header of the log (txn.go; headers only, and a
//     control batch's record): aborted transactions
//     and open ones, from the log itself, so a pass sees exactly the
//     batches it rewrites; each segment's first batch timestamp; the
//     record counts that size the offset map.
//  2. The cleanable range [first dirty offset, first uncleanable offset):
//     from the cleaner-offset-checkpoint (reset to the log start offset
//     when out of range) to the smallest of the LSO, the high watermark,
//     the active segment's base and the first segment inside
//     min.compaction.lag.ms, rounded down to a segment's base offset.
//  3. The offset map (offsetmap.go): key MD5 -> last offset, 24 bytes a
//     slot, bounded by the thread's share of log.cleaner.dedupe.buffer.size
//     (plus two bits per dirty offset, at most 1/48 of it, saying which
//     records the map holds and which a later one replaced, so the rewrite
//     does not look every key up again); when full the pass ends where it
//     got to (a partial pass).
//  4. Rewrite every segment from the log's start up to the map's latest
//     offset + 1, in Kafka's groups (groupSegmentsBySize: consecutive
//     segments while their log bytes stay within segment.bytes, their
//     offset and time index bytes each within segment.index.bytes, and
//     their offsets within an int32 of the group's base). Each group
//     becomes one segment: "<base>.log.cleaned" and, through
//     partition's WriteCleanedTxnIndex, "<base>.txnindex.cleaned",
//     which partition's ReplaceSegments swaps in through .swap and
//     .deleted files (indexes rebuilt from the new .log). A batch that
//     keeps every record and needs no horizon is copied unchanged; others
//     are re-encoded (rebuild.go) with the bytes recordbatch.Build would
//     write (TestPassOutputGolden pins them). Batches keep
//     their offsets, timestamps, producer fields and codec; tombstones
//     and transaction markers get a delete horizon (KIP-534) and go at
//     the first pass past it.
//  5. The end of the pass becomes the log's checkpoint.
//
// Producers: for each group the pass reads the partition's producer
// state (LastRecordsOfActiveProducers, Kafka's
// lastRecordsOfActiveProducers) and keeps, even emptied, the last data
// batch of every producer it holds, or when the producer's epoch has no
// data batch (a transaction.version 2 marker bumps the epoch) its control
// batches of that epoch. A producer stays active until the partition's
// producer expiry (producer.id.expiration.ms) forgets it.
//
// Transactions: the new .txnindex holds an aborted transaction exactly
// while its ABORT marker cannot be discarded, that is while the pass
// still met a batch of it (Kafka's CleanedTransactionMetadata and its
// cleanedIndex); the marker itself stays one pass longer to be stamped
// and until its horizon, without an entry.
//
// # Not like Kafka (yet)
//
//   - The aborted transactions of a pass come from the scan of the log,
//     not from the segments' .txnindex files as in Kafka: the same
//     wherever the index is correct. A cleaned .txnindex entry keeps the
//     LSO the partition's index stored for it, or, if that has none, the
//     transaction's first offset (a lower bound, so a read_committed
//     fetch's search never stops early).
//   - A cleanup.policy change away from compact aborts a pass in flight
//     at its next segment boundary, but the config change does not wait
//     for it (Kafka's updateTopicConfig blocks in abortCleaning;
//     AbortCleaning is that call, for whoever applies config changes).
//
// # Failures
//
// A log whose cleaning fails, or whose retention by a cleaner thread
// fails, is marked uncleanable and logged at Error, as Kafka's
// markPartitionUncleanable: neither cleaned nor given retention by the
// cleaner threads for UncleanableRetryMs (10 minutes), or until the
// cleaner restarts or the partition is deleted (UncleanablePartitions
// lists them). Kafka keeps the mark until a restart (KAFKA-19895); the
// cleaner spec (section 18) retries, so a partition that stopped
// compacting is not forgotten. A topic created again under the same name
// is a new partition.
package cleaner
