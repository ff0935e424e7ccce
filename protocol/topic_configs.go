package protocol

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kcompatd/kcompatd/partition"
)

// Kafka's DescribeConfigs config sources (ConfigSource ids in the protocol).
const (
	configSourceDynamicTopic = 1 // DYNAMIC_TOPIC_CONFIG
	configSourceStaticBroker = 4 // STATIC_BROKER_CONFIG
	configSourceDefault      = 5 // DEFAULT_CONFIG
)

// kafkaTopicConfigDefaults are Kafka 3.9's topic config defaults as Kafka
// prints them, for every topic config name, including those LogConfig does
// not model.
var kafkaTopicConfigDefaults = map[string]string{
	"cleanup.policy":                          "delete",
	"compression.gzip.level":                  "-1",
	"compression.lz4.level":                   "9",
	"compression.type":                        "producer",
	"compression.zstd.level":                  "3",
	"delete.retention.ms":                     "86400000",
	"file.delete.delay.ms":                    "60000",
	"flush.messages":                          "9223372036854775807",
	"flush.ms":                                "9223372036854775807",
	"follower.replication.throttled.replicas": "",
	"index.interval.bytes":                    "4096",
	"leader.replication.throttled.replicas":   "",
	"local.retention.bytes":                   "-2",
	"local.retention.ms":                      "-2",
	"max.compaction.lag.ms":                   "9223372036854775807",
	"max.message.bytes":                       "1048588",
	"message.downconversion.enable":           "true",
	"message.format.version":                  "3.0-IV1",
	"message.timestamp.after.max.ms":          "9223372036854775807",
	"message.timestamp.before.max.ms":         "9223372036854775807",
	"message.timestamp.difference.max.ms":     "9223372036854775807",
	"message.timestamp.type":                  "CreateTime",
	"min.cleanable.dirty.ratio":               "0.5",
	"min.compaction.lag.ms":                   "0",
	"min.insync.replicas":                     "1",
	"preallocate":                             "false",
	"remote.log.copy.disable":                 "false",
	"remote.log.delete.on.disable":            "false",
	"remote.storage.enable":                   "false",
	"retention.bytes":                         "-1",
	"retention.ms":                            "604800000",
	"segment.bytes":                           "1073741824",
	"segment.index.bytes":                     "10485760",
	"segment.jitter.ms":                       "0",
	"segment.ms":                              "604800000",
	"unclean.leader.election.enable":          "false",
}

// topicConfigEntry is one effective topic config, as CreateTopics v5+
// (and DescribeConfigs) report it.
type topicConfigEntry struct {
	name   string
	value  string
	source int8
}

// effectiveTopicConfigs lists every topic config of c (a topic's effective
// LogConfig, with its overrides), sorted by name: the override where the
// topic has one, else the broker's value (LogConfig) where it differs from
// Kafka's default, else Kafka's default.
func effectiveTopicConfigs(c partition.LogConfig, overrides map[string]string) []topicConfigEntry {
	modeled := modeledTopicConfigs(c)
	names := partition.TopicConfigNames()
	out := make([]topicConfigEntry, 0, len(names))
	for _, n := range names {
		e := topicConfigEntry{name: n, value: kafkaTopicConfigDefaults[n], source: configSourceDefault}
		if v, ok := overrides[n]; ok {
			e.value, e.source = v, configSourceDynamicTopic
		} else if v, ok := modeled[n]; ok && v != e.value {
			e.value, e.source = v, configSourceStaticBroker
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// modeledTopicConfigs prints the configs LogConfig carries as Kafka would.
func modeledTopicConfigs(c partition.LogConfig) map[string]string {
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	return map[string]string{
		"segment.bytes":             i64(int64(c.SegmentBytes)),
		"segment.ms":                i64(c.SegmentMs),
		"segment.index.bytes":       i64(int64(c.SegmentIndexBytes)),
		"index.interval.bytes":      i64(int64(c.IndexIntervalBytes)),
		"flush.messages":            i64(c.FlushMessages),
		"flush.ms":                  i64(c.FlushMs),
		"max.message.bytes":         i64(int64(c.MaxMessageBytes)),
		"message.timestamp.type":    c.MessageTimestampType,
		"compression.type":          c.CompressionType,
		"cleanup.policy":            c.CleanupPolicy,
		"retention.ms":              i64(c.RetentionMs),
		"retention.bytes":           i64(c.RetentionBytes),
		"delete.retention.ms":       i64(c.DeleteRetentionMs),
		"min.compaction.lag.ms":     i64(c.MinCompactionLagMs),
		"max.compaction.lag.ms":     i64(c.MaxCompactionLagMs),
		"min.cleanable.dirty.ratio": javaDouble(c.MinCleanableRatio),
		"file.delete.delay.ms":      i64(c.FileDeleteDelayMs),
	}
}

// javaDouble formats f as Java's Double.toString does for ordinary values
// (1 -> "1.0").
func javaDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// timestampBounds returns message.timestamp.before.max.ms and
// after.max.ms in effect for a topic: each one if the topic sets it, else
// message.timestamp.difference.max.ms if the topic sets that (the
// deprecated setting both replaced in KIP-937, as Kafka's LogConfig falls
// back to it), else the broker's defaults.
func timestampBounds(overrides map[string]string, brokerBefore, brokerAfter int64) (before, after int64) {
	get := func(name string) (int64, bool) {
		v, ok := overrides[name]
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n == math.MaxInt64 {
			return 0, false
		}
		return n, true
	}
	before, after = brokerBefore, brokerAfter
	if diff, ok := get("message.timestamp.difference.max.ms"); ok {
		before, after = diff, diff
	}
	if v, ok := get("message.timestamp.before.max.ms"); ok {
		before = v
	}
	if v, ok := get("message.timestamp.after.max.ms"); ok {
		after = v
	}
	return before, after
}
