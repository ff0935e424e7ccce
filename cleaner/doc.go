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
// or the cleaner closes.
//
// # A pass (pass.go)
//
//  1. Scan every batch header of the log: producers' last batches, aborted
//     transactions and open ones (txn.go; partition/ keeps no producer
//     state or .txnindex yet, so they come from the log itself), and each
//     segment's first batch timestamp.
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
//   - No .txnindex is written; aborted transactions are found from the
//     log (the same set, as long as partition writes none either).
//   - Cleaned segments get the current mtime, not the last source
//     segment's; retention judges an empty segment as expired.
//   - A log whose cleaning failed is retried after UncleanableRetryMs
//     (Kafka waits for a restart).
package cleaner
