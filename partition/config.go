package partition

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
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
	FS                                vfs.FS      // nil means vfs.OS{}
	Clock                             clock.Clock // nil means clock.Real{}
	Logger                            zerolog.Logger
}

// LogConfig is one topic's effective log configuration: the broker defaults
// with the topic's overrides applied. Kafka's topic config names are in the
// comments.
type LogConfig struct {
	SegmentBytes         int32   // segment.bytes, default 1 GiB, min 14
	SegmentMs            int64   // segment.ms, default 7 days
	SegmentIndexBytes    int32   // segment.index.bytes, default 10 MiB
	IndexIntervalBytes   int32   // index.interval.bytes, default 4096
	FlushMessages        int64   // flush.messages, default MaxInt64 (no fsync per append)
	FlushMs              int64   // flush.ms, default MaxInt64
	MaxMessageBytes      int32   // max.message.bytes, default 1048588
	MessageTimestampType string  // message.timestamp.type: CreateTime (default) or LogAppendTime
	CompressionType      string  // compression.type: producer (default), uncompressed, gzip, snappy, lz4, zstd
	CleanupPolicy        string  // cleanup.policy: delete (default), compact, or "compact,delete"
	RetentionMs          int64   // retention.ms, default 7 days, -1 = forever
	RetentionBytes       int64   // retention.bytes, default -1
	DeleteRetentionMs    int64   // delete.retention.ms, default 1 day
	MinCompactionLagMs   int64   // min.compaction.lag.ms, default 0
	MaxCompactionLagMs   int64   // max.compaction.lag.ms, default MaxInt64
	MinCleanableRatio    float64 // min.cleanable.dirty.ratio, default 0.5
	FileDeleteDelayMs    int64   // file.delete.delay.ms, default 60000
}

// DefaultLogConfig is Kafka 3.9's topic config defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:         1 << 30,
		SegmentMs:            7 * 24 * 60 * 60 * 1000,
		SegmentIndexBytes:    10 << 20,
		IndexIntervalBytes:   4096,
		FlushMessages:        math.MaxInt64,
		FlushMs:              math.MaxInt64,
		MaxMessageBytes:      1048588,
		MessageTimestampType: "CreateTime",
		CompressionType:      "producer",
		CleanupPolicy:        "delete",
		RetentionMs:          7 * 24 * 60 * 60 * 1000,
		RetentionBytes:       -1,
		DeleteRetentionMs:    24 * 60 * 60 * 1000,
		MinCompactionLagMs:   0,
		MaxCompactionLagMs:   math.MaxInt64,
		MinCleanableRatio:    0.5,
		FileDeleteDelayMs:    60000,
	}
}

// Compact reports whether cleanup.policy includes compact.
func (c LogConfig) Compact() bool { return strings.Contains(c.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete.
func (c LogConfig) Delete() bool { return strings.Contains(c.CleanupPolicy, "delete") }

// LogAppendTime reports message.timestamp.type=LogAppendTime.
func (c LogConfig) LogAppendTime() bool { return c.MessageTimestampType == "LogAppendTime" }

// configKind is a Kafka ConfigDef type; its name appears in error messages.
type configKind string

const (
	kindInt     configKind = "INT"
	kindLong    configKind = "LONG"
	kindDouble  configKind = "DOUBLE"
	kindBoolean configKind = "BOOLEAN"
	kindString  configKind = "STRING"
	kindList    configKind = "LIST"
)

// topicConfigDef describes one topic config as Kafka 3.9's LogConfig does:
// its type, its validator, and where it lands in LogConfig (nil: stored in
// the overrides and reported, not acted upon).
type topicConfigDef struct {
	kind  configKind
	min   float64 // range, inclusive; NaN = unbounded
	max   float64
	one   []string // ValidString / ValidList choices
	apply func(c *LogConfig, v string, i int64, f float64)
}

var unbounded = math.NaN()

func atLeast(k configKind, min float64, apply func(*LogConfig, string, int64, float64)) topicConfigDef {
	return topicConfigDef{kind: k, min: min, max: unbounded, apply: apply}
}

func between(k configKind, min, max float64, apply func(*LogConfig, string, int64, float64)) topicConfigDef {
	return topicConfigDef{kind: k, min: min, max: max, apply: apply}
}

func anyOf(k configKind, one []string, apply func(*LogConfig, string, int64, float64)) topicConfigDef {
	return topicConfigDef{kind: k, min: unbounded, max: unbounded, one: one, apply: apply}
}

func plain(k configKind) topicConfigDef {
	return topicConfigDef{kind: k, min: unbounded, max: unbounded}
}

// topicConfigs is every topic config name Kafka 3.9 accepts.
var topicConfigs = map[string]topicConfigDef{
	"cleanup.policy": anyOf(kindList, []string{"compact", "delete"}, func(c *LogConfig, v string, _ int64, _ float64) {
		c.CleanupPolicy = normalizeList(v)
	}),
	"compression.type": anyOf(kindString, []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}, func(c *LogConfig, v string, _ int64, _ float64) {
		c.CompressionType = strings.ToLower(strings.TrimSpace(v))
	}),
	"compression.gzip.level":                  anyOf(kindInt, nil, nil), // special-cased: 1..9 or -1
	"compression.lz4.level":                   between(kindInt, 1, 17, nil),
	"compression.zstd.level":                  between(kindInt, -131072, 22, nil),
	"delete.retention.ms":                     atLeast(kindLong, 0, func(c *LogConfig, _ string, i int64, _ float64) { c.DeleteRetentionMs = i }),
	"file.delete.delay.ms":                    atLeast(kindLong, 0, func(c *LogConfig, _ string, i int64, _ float64) { c.FileDeleteDelayMs = i }),
	"flush.messages":                          atLeast(kindLong, 1, func(c *LogConfig, _ string, i int64, _ float64) { c.FlushMessages = i }),
	"flush.ms":                                atLeast(kindLong, 0, func(c *LogConfig, _ string, i int64, _ float64) { c.FlushMs = i }),
	"follower.replication.throttled.replicas": plain(kindList),
	"index.interval.bytes":                    atLeast(kindInt, 0, func(c *LogConfig, _ string, i int64, _ float64) { c.IndexIntervalBytes = int32(i) }),
	"leader.replication.throttled.replicas":   plain(kindList),
	"local.retention.bytes":                   atLeast(kindLong, -2, nil),
	"local.retention.ms":                      atLeast(kindLong, -2, nil),
	"max.compaction.lag.ms":                   atLeast(kindLong, 1, func(c *LogConfig, _ string, i int64, _ float64) { c.MaxCompactionLagMs = i }),
	"max.message.bytes":                       atLeast(kindInt, 0, func(c *LogConfig, _ string, i int64, _ float64) { c.MaxMessageBytes = int32(i) }),
	"message.downconversion.enable":           plain(kindBoolean),
	"message.format.version":                  plain(kindString),
	"message.timestamp.after.max.ms":          atLeast(kindLong, 0, nil),
	"message.timestamp.before.max.ms":         atLeast(kindLong, 0, nil),
	"message.timestamp.difference.max.ms":     atLeast(kindLong, 0, nil),
	"message.timestamp.type": anyOf(kindString, []string{"CreateTime", "LogAppendTime"}, func(c *LogConfig, v string, _ int64, _ float64) {
		c.MessageTimestampType = strings.TrimSpace(v)
	}),
	"min.cleanable.dirty.ratio":      between(kindDouble, 0, 1, func(c *LogConfig, _ string, _ int64, f float64) { c.MinCleanableRatio = f }),
	"min.compaction.lag.ms":          atLeast(kindLong, 0, func(c *LogConfig, _ string, i int64, _ float64) { c.MinCompactionLagMs = i }),
	"min.insync.replicas":            atLeast(kindInt, 1, nil),
	"preallocate":                    plain(kindBoolean),
	"remote.log.copy.disable":        plain(kindBoolean),
	"remote.log.delete.on.disable":   plain(kindBoolean),
	"remote.storage.enable":          plain(kindBoolean),
	"retention.bytes":                plain2(kindLong, func(c *LogConfig, _ string, i int64, _ float64) { c.RetentionBytes = i }),
	"retention.ms":                   atLeast(kindLong, -1, func(c *LogConfig, _ string, i int64, _ float64) { c.RetentionMs = i }),
	"segment.bytes":                  atLeast(kindInt, 14, func(c *LogConfig, _ string, i int64, _ float64) { c.SegmentBytes = int32(i) }),
	"segment.index.bytes":            atLeast(kindInt, 4, func(c *LogConfig, _ string, i int64, _ float64) { c.SegmentIndexBytes = int32(i) }),
	"segment.jitter.ms":              atLeast(kindLong, 0, nil),
	"segment.ms":                     atLeast(kindLong, 1, func(c *LogConfig, _ string, i int64, _ float64) { c.SegmentMs = i }),
	"unclean.leader.election.enable": plain(kindBoolean),
}

func plain2(k configKind, apply func(*LogConfig, string, int64, float64)) topicConfigDef {
	d := plain(k)
	d.apply = apply
	return d
}

// TopicConfigNames returns every topic config name Kafka accepts, sorted.
func TopicConfigNames() []string {
	names := make([]string, 0, len(topicConfigs))
	for n := range topicConfigs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func normalizeList(v string) string {
	parts := strings.Split(v, ",")
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ",")
}

// invalidValue words a bad value as Kafka's ConfigException does.
func invalidValue(name, value, why string) error {
	return withDetail(ErrInvalidConfig, fmt.Sprintf("Invalid value %s for configuration %s: %s", value, name, why))
}

// parseTopicConfig validates one topic config and applies it to c.
func parseTopicConfig(c *LogConfig, name, value string) error {
	def, ok := topicConfigs[name]
	if !ok {
		return withDetail(ErrInvalidConfig, "Unknown topic config name: "+name)
	}
	trimmed := strings.TrimSpace(value)
	var (
		i int64
		f float64
	)
	switch def.kind {
	case kindInt:
		n, err := strconv.ParseInt(trimmed, 10, 32)
		if err != nil {
			return invalidValue(name, value, "Not a number of type INT")
		}
		i, f = n, float64(n)
	case kindLong:
		n, err := strconv.ParseInt(trimmed, 10, 64)
		if err != nil {
			return invalidValue(name, value, "Not a number of type LONG")
		}
		i, f = n, float64(n)
	case kindDouble:
		n, err := strconv.ParseFloat(trimmed, 64)
		if err != nil || math.IsNaN(n) {
			return invalidValue(name, value, "Not a number of type DOUBLE")
		}
		f = n
	case kindBoolean:
		if !strings.EqualFold(trimmed, "true") && !strings.EqualFold(trimmed, "false") {
			return invalidValue(name, value, "Expected value to be either true or false")
		}
	}
	if name == "compression.gzip.level" {
		if i != -1 && (i < 1 || i > 9) {
			return invalidValue(name, value, "Value must be between 1 and 9 or equal to -1")
		}
	}
	// ConfigDef.Range's wording.
	switch {
	case !math.IsNaN(def.min) && f < def.min:
		return invalidValue(name, value, "Value must be at least "+fmtNum(def.min))
	case !math.IsNaN(def.max) && f > def.max:
		return invalidValue(name, value, "Value must be no more than "+fmtNum(def.max))
	}
	if def.one != nil {
		choices := []string{trimmed}
		if def.kind == kindList {
			choices = strings.Split(trimmed, ",")
		}
		for _, ch := range choices {
			ch = strings.TrimSpace(ch)
			if def.kind == kindList && ch == "" {
				continue
			}
			if !containsFold(def.one, ch, name == "compression.type") {
				return invalidValue(name, value, "String must be one of: "+strings.Join(def.one, ", "))
			}
		}
	}
	if def.apply != nil {
		def.apply(c, value, i, f)
	}
	return nil
}

func containsFold(set []string, s string, fold bool) bool {
	for _, x := range set {
		if x == s || (fold && strings.EqualFold(x, s)) {
			return true
		}
	}
	return false
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// ResolveLogConfig applies topic-level overrides to base, validating every
// name and value as Kafka does. The first problem found is returned,
// wrapping ErrInvalidConfig with Kafka's message; names are checked in
// sorted order so the answer is deterministic.
func ResolveLogConfig(base LogConfig, overrides map[string]string) (LogConfig, error) {
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	sort.Strings(names)
	c := base
	for _, n := range names {
		if err := parseTopicConfig(&c, n, overrides[n]); err != nil {
			return base, err
		}
	}
	// Kafka's cross-field check (LogConfig.validateValues).
	if c.MinCompactionLagMs > c.MaxCompactionLagMs {
		return base, withDetail(ErrInvalidConfig, fmt.Sprintf("conflict topic config setting %s (%d) > %s (%d)",
			"min.compaction.lag.ms", c.MinCompactionLagMs, "max.compaction.lag.ms", c.MaxCompactionLagMs))
	}
	// kcompatd has no tiered storage, as a Kafka broker with
	// remote.log.storage.system.enable=false (LogConfig.validate).
	if v, ok := overrides["remote.storage.enable"]; ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return base, withDetail(ErrInvalidConfig, "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	return c, nil
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
	return name == "__consumer_offsets" || name == "__transaction_state"
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
