// Package cleaner does the background work over partition logs: compaction
// (cleanup.policy=compact) and retention (delete), with Kafka's rules as in
// shared/design/cleaner-spec.md. It reaches logs only through partition's
// API. Not yet built: see the cleaner issue.
package cleaner
