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
//  1. Scan every batch header of the log: producers' last batches, aborted
//     transactions and open ones (txn.go: from the log itself, so a pass
//     sees exactly the batches it rewrites), and each segment's first batch
//     timestamp.
//  2. The cleanable range [first dirty offset, first uncleanable offset):
//     from the cleaner-offset-checkpoint (reset to the log start offset
//     when out of range) to the smallest of the LSO, the high watermark,
//     the active segment's base and the first segment inside
//     min.compaction.lag.ms, rounded down to a segment's base offset.
//  3. The offset map (offsetmap.go): key MD5 -> last offset, 24 bytes a
//     slot, bounded by the thread's share of log.cleaner.dedupe.buffer.size;
//     when full the pass ends where it got to (a partial pass).
//  4. Rewrite every segment from the log's start up to the map's latest
//     offset + 1, in groups of at most segment.bytes, each into one
//     "<base>.log.cleaned" that partition's ReplaceSegments swaps in through
//     .swap and .deleted files. Batches keep their offsets, timestamps,
//     producer fields and codec; tombstones and transaction markers get a
//     delete horizon (KIP-534) and go at the first pass past it.
//  5. The end of the pass becomes the log's checkpoint.
//
// # Not like Kafka (yet)
//
//   - No .txnindex.cleaned is written: partition's ReplaceSegments keeps
//     a replaced segment's aborted-transaction entries exactly while the
//     cleaned log still holds their ABORT marker, which is Kafka's rule.
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
