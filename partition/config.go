package partition

import (
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
)

// Config is the broker-level storage configuration.
type Config struct {
	// Dir is the data directory (log.dirs; one directory).
	Dir string
	// NodeID is written to meta.properties (node.id).
	NodeID int32
	// Defaults are the broker-level topic config defaults (log.segment.bytes
	// and friends), from which each topic's LogConfig starts. The zero value
	// means DefaultLogConfig().
	Defaults LogConfig
	// RecoveryCheckpointInterval is how often the recovery-point and
	// log-start-offset checkpoints are written
	// (log.flush.offset.checkpoint.interval.ms, default 60 s).
	RecoveryCheckpointInterval time.Duration
	// ProducerIDExpirationMs is producer.id.expiration.ms: a producer
	// without an open transaction whose last batch timestamp is this old
	// is forgotten (0 means Kafka's default, 1 day).
	ProducerIDExpirationMs int64
	// ProducerIDExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms (0: Kafka's 10 minutes).
	ProducerIDExpirationCheckInterval time.Duration
	// ReplayCacheBudget bounds, in bytes, the batch headers recovery
	// keeps per log while it is opened, so that the producer-state replay
	// that follows does not read them again (past the budget the replay
	// reads the segments). 0 (or less): DefaultReplayCacheBudget.
	ReplayCacheBudget int64
	// FileWorkers bounds the goroutines doing background file work
	// (flushes after rolls, removals of retired segments and deleted
	// topics' directories). 0 (or less): DefaultFileWorkers.
	FileWorkers int
	// OpenSegments bounds the idle inactive segments whose files (three
	// descriptors each) stay open, per store; 0 (or less):
	// DefaultOpenSegments. Segments in use, active or not yet fsynced
	// stay open besides (segment_files.go).
	OpenSegments int
	// MaxOpenFiles is the descriptor limit the partition count is
	// bounded by (partition_limits.go); 0: the process's RLIMIT_NOFILE.
	// Not a property: tests set it.
	MaxOpenFiles int64
	// MaxMetadataFileBytes bounds the topic catalog, dynamic broker
	// config and client quota files, in bytes, on write and on start-up
	// alike (0: 64 MiB). A change that would exceed it is refused
	// (ErrMetadataTooLarge).
	MaxMetadataFileBytes int
	// Jitter draws a segment's roll jitter, in [0, n) ms, for
	// segment.jitter.ms (nil: math/rand/v2's Int64N); tests make it
	// deterministic.
	Jitter func(n int64) int64
	FS     vfs.FS      // nil means vfs.OS{}
	Clock  clock.Clock // nil means clock.Real{}
	Logger zerolog.Logger

	// Observer is told of appends, fetch reads and fsyncs, for metrics
	// (observer.go); nil: none.
	Observer Observer
}

// ValidateTopicName applies Kafka's rules for topic names.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return withDetail(ErrInvalidTopic, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return withDetail(ErrInvalidTopic, `Topic name cannot be "." or ".."`)
	case len(name) > 249:
		return withDetail(ErrInvalidTopic, fmt.Sprintf("Topic name is illegal, it can't be longer than 249 characters, topic name: %s", name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return withDetail(ErrInvalidTopic, fmt.Sprintf("Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name))
		}
	}
	return nil
}

// IsInternalTopic reports Kafka's internal topics.
func IsInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

// withDefaults returns DefaultLogConfig for a zero c, and otherwise fills
// the fields whose zero value Kafka would reject, so a partly filled
// Config.Defaults still works.
func (c LogConfig) withDefaults() LogConfig {
	d := DefaultLogConfig()
	if c == (LogConfig{}) {
		return d
	}
	if c.SegmentBytes < 14 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs < 1 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentIndexBytes < 4 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.FlushMessages < 1 {
		c.FlushMessages = d.FlushMessages
	}
	if c.MaxCompactionLagMs < 1 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if c.MessageTimestampType == "" {
		c.MessageTimestampType = d.MessageTimestampType
	}
	if c.CompressionType == "" {
		c.CompressionType = d.CompressionType
	}
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = d.CleanupPolicy
	}
	return c
}
