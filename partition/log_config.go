package partition

// The topic config catalog: every topic config Kafka accepts, as Kafka's
// LogConfig defines it (type, default, validator, documentation), with the
// broker properties that give its default (Kafka's
// ServerTopicConfigSynonyms, with ServerLogConfigs' documentation) and how
// kcompatd applies it. Parsing and validation of topic configs, of the
// broker defaults of topic configs (static and dynamic), DescribeConfigs'
// types, defaults, synonyms and documentation, and README's table of
// broker defaults are all derived from this one table.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Names of the topic configs that kcompatd's own code names (Kafka's
// TopicConfig constants): those the coordinators set on the internal
// topics, and the compaction lags, which must not conflict.
const (
	CleanupPolicyConfig   = "cleanup.policy"
	CompressionTypeConfig = "compression.type"
	SegmentBytesConfig    = "segment.bytes"
	// InternalSegmentBytesConfig is the test-only segment size below
	// segment.bytes' 1 MiB bound (internalSegmentBytes).
	InternalSegmentBytesConfig = "internal.segment.bytes"
	RetentionMsConfig          = "retention.ms"
	RetentionBytesConfig       = "retention.bytes" // the bench's memory run sets it

	minCompactionLagConfig = "min.compaction.lag.ms"
	maxCompactionLagConfig = "max.compaction.lag.ms"
)

// LogConfig is one topic's effective log configuration: Kafka's defaults,
// then the broker's (static, dynamic cluster default, dynamic per-broker),
// then the topic's overrides. It is resolved whenever one of those layers
// changes and handed to the topic's logs as an immutable snapshot, so
// appends and reads parse no config. Kafka's topic config names are in the
// comments.
type LogConfig struct {
	SegmentBytes         int32   // segment.bytes, default 1 GiB, min 1 MiB; or internal.segment.bytes
	SegmentMs            int64   // segment.ms, default 7 days
	SegmentJitterMs      int64   // segment.jitter.ms, default 0
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
	// The CreateTime timestamp bounds of KIP-937, in ms
	// (message.timestamp.before.max.ms, default MaxInt64, and
	// after.max.ms, default 1 hour, as in Kafka 4).
	MessageTimestampBeforeMaxMs int64
	MessageTimestampAfterMaxMs  int64
	// StoreCodec is the codec compression.type stores batches with, where
	// Recompress is set (every value but producer, which keeps the
	// producer's codec).
	StoreCodec recordbatch.Codec
	Recompress bool

	// internalSegmentBytes is internal.segment.bytes while the
	// overrides are resolved (internalSegmentBytes below).
	internalSegmentBytes int32
}

// internalSegmentBytes is Kafka 4's internal.segment.bytes, a topic
// config for tests only (Kafka's LogConfig defines it internal: accepted
// by CreateTopics and AlterConfigs, never listed by DescribeConfigs or in
// README's table): where set it is the segment size in place of
// segment.bytes, which Kafka 4 bounds below by 1 MiB. kcompatd's own
// tests and integration/compat roll tiny segments with it. Kafka has no
// lower bound; kcompatd wants 14, a batch header's first fields.
var internalSegmentBytes = topicConfigDef{
	Def: configdef.Def{Name: InternalSegmentBytesConfig, Type: configdef.Int, Range: configdef.AtLeast(14),
		Doc: "The maximum size of a single log file. This should be used for testing only."},
	apply: func(c *LogConfig, v configdef.Value) { c.internalSegmentBytes = int32(v.Int) },
}

// storeCodec maps a compression.type to the codec it stores batches with.
func storeCodec(compressionType string) (recordbatch.Codec, bool) {
	if compressionType == "uncompressed" {
		return recordbatch.None, true
	}
	for _, c := range []recordbatch.Codec{recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		if c.String() == compressionType {
			return c, true
		}
	}
	return recordbatch.None, false // producer
}

// DefaultLogConfig is Kafka's topic config defaults.
func DefaultLogConfig() LogConfig { return defaultLogConfig }

// Compact reports whether cleanup.policy includes compact.
func (c LogConfig) Compact() bool { return strings.Contains(c.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete.
func (c LogConfig) Delete() bool { return strings.Contains(c.CleanupPolicy, "delete") }

// LogAppendTime reports message.timestamp.type=LogAppendTime.
func (c LogConfig) LogAppendTime() bool { return c.MessageTimestampType == "LogAppendTime" }

// MaxSegmentMs is the age at which the active segment rolls: segment.ms,
// or max.compaction.lag.ms where that is sooner on a compacted topic, so
// that a quiet compacted topic's records get compacted within the lag
// (Kafka's LogConfig.maxSegmentMs, KIP-354).
func (c LogConfig) MaxSegmentMs() int64 {
	if c.Compact() && c.MaxCompactionLagMs > 0 {
		return min(c.MaxCompactionLagMs, c.SegmentMs)
	}
	return c.SegmentMs
}

// TimestampBounds returns how far, in ms, a CreateTime record's timestamp
// may lie before and after the broker's clock (Kafka 4 removed the
// deprecated difference.max.ms these once fell back to).
func (c LogConfig) TimestampBounds() (before, after int64) {
	return c.MessageTimestampBeforeMaxMs, c.MessageTimestampAfterMaxMs
}

// topicConfigDef is one topic config.
type topicConfigDef struct {
	configdef.Def
	// apply sets the LogConfig field the config drives; nil: kcompatd
	// validates, stores and reports the config, and it has no effect.
	apply func(c *LogConfig, v configdef.Value)
	// broker lists the broker properties that give the config's
	// default, highest priority first (Kafka's ServerTopicConfigSynonyms).
	broker []brokerLogConfig
	// negativeIsUnlimited: a broker default below -1 means -1, as Kafka's
	// KafkaConfig reads log.retention.ms and log.retention.bytes.
	negativeIsUnlimited bool
}

// brokerLogConfig is a broker property that gives a topic config's
// default. Its Def holds its name, documentation and, where they differ
// from the topic config's, its type and default; the topic config's rules
// validate its value.
type brokerLogConfig struct {
	configdef.Def
	// scale converts its unit into the topic config's (log.retention.hours:
	// 3600000 ms); 0 means the same unit.
	scale int64
	// note is kcompatd's one-line description, for README.
	note string
	// own marks a setting of its own that only defaults the ones before
	// it (log.flush.scheduler.interval.ms), not another name for them
	// (log.retention.hours).
	own bool
	// static: Kafka does not let it change at run time, although it is
	// the first synonym.
	static bool
	topic  *topicConfigDef
}

// gzipLevel is Kafka's GzipCompression level validator.
func gzipLevel(_ string, v configdef.Value) string {
	if v.Int != -1 && (v.Int < 1 || v.Int > 9) {
		return "Value must be between 1 and 9 or equal to -1"
	}
	return ""
}

// throttledReplicas is Kafka's ThrottledReplicaListValidator: "*" or
// partitionId:brokerId items.
func throttledReplicas(name string, v configdef.Value) string {
	if len(v.List) == 1 && v.List[0] == "*" {
		return ""
	}
	for _, item := range v.List {
		p, b, ok := strings.Cut(item, ":")
		if !ok || !digits(p) || !digits(b) {
			return name + " must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
		}
	}
	return ""
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// nonEmptyList refuses an empty list: a broker needs a cleanup policy
// (kcompatd's rule; a topic may set cleanup.policy to "").
func nonEmptyList(_ string, v configdef.Value) string {
	if len(v.List) == 0 {
		return "Value must not be empty"
	}
	return ""
}

// topicConfigs is every topic config Kafka 3.9 accepts, sorted by name.
var topicConfigs = []*topicConfigDef{
	{
		Def: configdef.Def{Name: CleanupPolicyConfig, Type: configdef.List, Default: "delete", OneOf: []string{"compact", "delete"},
			Doc: "This config designates the retention policy to use on log segments. The \"delete\" policy (which is the default) will discard old segments when their retention time or size limit has been reached. The \"compact\" policy will enable <a href=\"#compaction\">log compaction</a>, which retains the latest value for each key. It is also possible to specify both policies in a comma-separated list (e.g. \"delete,compact\"). In this case, old segments will be discarded per the retention time and size configuration, while retained segments will be compacted."},
		apply: func(c *LogConfig, v configdef.Value) { c.CleanupPolicy = strings.Join(v.List, ",") },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.cleanup.policy", Check: nonEmptyList, Doc: "The default cleanup policy for segments beyond the retention window. A comma separated list of valid policies. Valid policies are: \"delete\" and \"compact\""},
				note: "`delete`, `compact` or both, comma-separated"},
		},
	},
	{
		Def: configdef.Def{Name: "compression.gzip.level", Type: configdef.Int, Default: "-1", Check: gzipLevel,
			Doc: "The compression level to use if compression.type is set to <code>gzip</code>."},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "compression.gzip.level", Doc: "The compression level to use if compression.type is set to 'gzip'."},
				note: "accepted and reported; batches are recompressed at the codec's default level"},
		},
	},
	{
		Def: configdef.Def{Name: "compression.lz4.level", Type: configdef.Int, Default: "9", Range: configdef.Between(1, 17),
			Doc: "The compression level to use if compression.type is set to <code>lz4</code>."},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "compression.lz4.level", Doc: "The compression level to use if compression.type is set to 'lz4'."},
				note: "accepted and reported; batches are recompressed at the codec's default level"},
		},
	},
	{
		Def: configdef.Def{Name: CompressionTypeConfig, Type: configdef.String, Default: "producer", OneOf: []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}, FoldCase: true,
			Doc: "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer."},
		apply: func(c *LogConfig, v configdef.Value) {
			c.CompressionType = strings.ToLower(v.Text)
			c.StoreCodec, c.Recompress = storeCodec(c.CompressionType)
		},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: CompressionTypeConfig, Doc: "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer."},
				note: "`producer`, `uncompressed`, `gzip`, `snappy`, `lz4` or `zstd`"},
		},
	},
	{
		Def: configdef.Def{Name: "compression.zstd.level", Type: configdef.Int, Default: "3", Range: configdef.Between(-131072, 22),
			Doc: "The compression level to use if compression.type is set to <code>zstd</code>."},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "compression.zstd.level", Doc: "The compression level to use if compression.type is set to 'zstd'."},
				note: "accepted and reported; batches are recompressed at the codec's default level"},
		},
	},
	{
		Def: configdef.Def{Name: "delete.retention.ms", Type: configdef.Long, Default: "86400000", Range: configdef.AtLeast(0),
			Doc: "The amount of time to retain delete tombstone markers for <a href=\"#compaction\">log compacted</a> topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage (otherwise delete tombstones may be collected before they complete their scan)."},
		apply: func(c *LogConfig, v configdef.Value) { c.DeleteRetentionMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.cleaner.delete.retention.ms", Doc: "The amount of time to retain tombstone message markers for log compacted topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage (otherwise  tombstones messages may be collected before a consumer completes their scan)."},
				note: "tombstone lifetime under compaction, ms"},
		},
	},
	{
		Def: configdef.Def{Name: "file.delete.delay.ms", Type: configdef.Long, Default: "60000", Range: configdef.AtLeast(0),
			Doc: "The time to wait before deleting a file from the filesystem"},
		apply: func(c *LogConfig, v configdef.Value) { c.FileDeleteDelayMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.segment.delete.delay.ms", Doc: "The amount of time to wait before deleting a file from the filesystem. If the value is 0 and there is no file to delete, the system will wait 1 millisecond. Low value will cause busy waiting"},
				note: "how long deleted segments linger as `.deleted`, ms"},
		},
	},
	{
		Def: configdef.Def{Name: "flush.messages", Type: configdef.Long, Default: "9223372036854775807", Range: configdef.AtLeast(1),
			Doc: "This setting allows specifying an interval at which we will force an fsync of data written to the log. For example if this was set to 1 we would fsync after every message; if it were 5 we would fsync after every five messages. In general we recommend you not set this and use replication for durability and allow the operating system's background flush capabilities as it is more efficient. This setting can be overridden on a per-topic basis (see <a href=\"#topicconfigs\">the per-topic configuration section</a>)."},
		apply: func(c *LogConfig, v configdef.Value) { c.FlushMessages = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.flush.interval.messages", Doc: "The number of messages accumulated on a log partition before messages are flushed to disk."},
				note: "fsync after this many messages; `1` fsyncs every append"},
		},
	},
	{
		Def: configdef.Def{Name: "flush.ms", Type: configdef.Long, Default: "9223372036854775807", Range: configdef.AtLeast(0),
			Doc: "This setting allows specifying a time interval at which we will force an fsync of data written to the log. For example if this was set to 1000 we would fsync after 1000 ms had passed. In general we recommend you not set this and use replication for durability and allow the operating system's background flush capabilities as it is more efficient."},
		apply: func(c *LogConfig, v configdef.Value) { c.FlushMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.flush.interval.ms", NullDefault: true, Doc: "The maximum time in ms that a message in any topic is kept in memory before flushed to disk. If not set, the value in log.flush.scheduler.interval.ms is used"},
				note: "fsync when unflushed data is this old, ms; checked every `log.flush.offset.checkpoint.interval.ms`"},
			{own: true, Def: configdef.Def{Name: "log.flush.scheduler.interval.ms", Doc: "The frequency in ms that the log flusher checks whether any log needs to be flushed to disk"},
				note: "the default of `log.flush.interval.ms`"},
		},
	},
	{
		Def: configdef.Def{Name: "follower.replication.throttled.replicas", Type: configdef.List, Default: "", Check: throttledReplicas,
			Doc: "A list of replicas for which log replication should be throttled on the follower side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic."},
	},
	{
		Def: configdef.Def{Name: "index.interval.bytes", Type: configdef.Int, Default: "4096", Range: configdef.AtLeast(0),
			Doc: "This setting controls how frequently Kafka adds an index entry to its offset index. The default setting ensures that we index a message roughly every 4096 bytes. More indexing allows reads to jump closer to the exact position in the log but makes the index larger. You probably don't need to change this."},
		apply: func(c *LogConfig, v configdef.Value) { c.IndexIntervalBytes = int32(v.Int) },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.index.interval.bytes", Doc: "The interval with which we add an entry to the offset index."},
				note: "bytes between offset index entries"},
		},
	},
	{
		Def: configdef.Def{Name: "leader.replication.throttled.replicas", Type: configdef.List, Default: "", Check: throttledReplicas,
			Doc: "A list of replicas for which log replication should be throttled on the leader side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic."},
	},
	{
		Def: configdef.Def{Name: "local.retention.bytes", Type: configdef.Long, Default: "-2", Range: configdef.AtLeast(-2),
			Doc: "The maximum size of local log segments that can grow for a partition before it deletes the old segments. Default value is -2, it represents `retention.bytes` value to be used. The effective value should always be less than or equal to `retention.bytes` value."},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.local.retention.bytes", Doc: "The maximum size of local log segments that can grow for a partition before it gets eligible for deletion. Default value is -2, it represents `log.retention.bytes` value to be used."},
				note: "accepted and reported; no tiered storage"},
		},
	},
	{
		Def: configdef.Def{Name: "local.retention.ms", Type: configdef.Long, Default: "-2", Range: configdef.AtLeast(-2),
			Doc: "The number of milliseconds to keep the local log segment before it gets deleted. Default value is -2, it represents `retention.ms` value is to be used. The effective value should always be less than or equal to `retention.ms` value."},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.local.retention.ms", Doc: "The number of milliseconds to keep the local log segments before it gets eligible for deletion. Default value is -2, it represents `log.retention.ms` value is to be used."},
				note: "accepted and reported; no tiered storage"},
		},
	},
	{
		Def: configdef.Def{Name: maxCompactionLagConfig, Type: configdef.Long, Default: "9223372036854775807", Range: configdef.AtLeast(1),
			Doc: "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted."},
		apply: func(c *LogConfig, v configdef.Value) { c.MaxCompactionLagMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.cleaner.max.compaction.lag.ms", Doc: "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted."},
				note: "longest a record stays uncompacted, ms"},
		},
	},
	{
		Def: configdef.Def{Name: "max.message.bytes", Type: configdef.Int, Default: "1048588", Range: configdef.AtLeast(0),
			Doc: "The largest record batch size allowed by Kafka (after compression if compression is enabled). If this is increased and there are consumers older than 0.10.2, the consumers' fetch size must also be increased so that they can fetch record batches this large. In the latest message format version, records are always grouped into batches for efficiency. In previous message format versions, uncompressed records are not grouped into batches and this limit only applies to a single record in that case."},
		apply: func(c *LogConfig, v configdef.Value) { c.MaxMessageBytes = int32(v.Int) },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "message.max.bytes", Doc: "The largest record batch size allowed by Kafka (after compression if compression is enabled)."},
				note: "largest batch, bytes"},
		},
	},
	{
		Def: configdef.Def{Name: "message.timestamp.after.max.ms", Type: configdef.Long, Default: "3600000", Range: configdef.AtLeast(0),
			Doc: "This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if message.timestamp.type=LogAppendTime."},
		apply: func(c *LogConfig, v configdef.Value) { c.MessageTimestampAfterMaxMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.message.timestamp.after.max.ms", Doc: "This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if log.message.timestamp.type=LogAppendTime."},
				note: "how far a CreateTime record's timestamp may lie after the broker's clock, ms (KIP-937)"},
		},
	},
	{
		Def: configdef.Def{Name: "message.timestamp.before.max.ms", Type: configdef.Long, Default: "9223372036854775807", Range: configdef.AtLeast(0),
			Doc: "This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if message.timestamp.type=LogAppendTime."},
		apply: func(c *LogConfig, v configdef.Value) { c.MessageTimestampBeforeMaxMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.message.timestamp.before.max.ms", Doc: "This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration. If log.message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold. This configuration is ignored if log.message.timestamp.type=LogAppendTime."},
				note: "how far a CreateTime record's timestamp may lie before the broker's clock, ms (KIP-937)"},
		},
	},
	{
		Def: configdef.Def{Name: "message.timestamp.type", Type: configdef.String, Default: "CreateTime", OneOf: []string{"CreateTime", "LogAppendTime"},
			Doc: "Define whether the timestamp in the message is message create time or log append time. The value should be either `CreateTime` or `LogAppendTime`"},
		apply: func(c *LogConfig, v configdef.Value) { c.MessageTimestampType = v.Text },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.message.timestamp.type", Doc: "Define whether the timestamp in the message is message create time or log append time. The value should be either <code>CreateTime</code> or <code>LogAppendTime</code>."},
				note: "or `LogAppendTime`"},
		},
	},
	{
		Def: configdef.Def{Name: "min.cleanable.dirty.ratio", Type: configdef.Double, Default: "0.5", Range: configdef.Between(0, 1),
			Doc: "This configuration controls how frequently the log compactor will attempt to clean the log (assuming <a href=\"#compaction\">log compaction</a> is enabled). By default we will avoid cleaning a log where more than 50% of the log has been compacted. This ratio bounds the maximum space wasted in the log by duplicates (at 50% at most 50% of the log could be duplicates). A higher ratio will mean fewer, more efficient cleanings but will mean more wasted space in the log. If the max.compaction.lag.ms or the min.compaction.lag.ms configurations are also specified, then the log compactor considers the log to be eligible for compaction as soon as either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for at most the max.compaction.lag.ms period."},
		apply: func(c *LogConfig, v configdef.Value) { c.MinCleanableRatio = v.Float },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.cleaner.min.cleanable.ratio", Doc: "The minimum ratio of dirty log to total log for a log to eligible for cleaning. If the log.cleaner.max.compaction.lag.ms or the log.cleaner.min.compaction.lag.ms configurations are also specified, then the log compactor considers the log eligible for compaction as soon as either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the log.cleaner.min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for at most the log.cleaner.max.compaction.lag.ms period."},
				note: "dirty ratio that triggers compaction, 0 to 1"},
		},
	},
	{
		Def: configdef.Def{Name: minCompactionLagConfig, Type: configdef.Long, Default: "0", Range: configdef.AtLeast(0),
			Doc: "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted."},
		apply: func(c *LogConfig, v configdef.Value) { c.MinCompactionLagMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.cleaner.min.compaction.lag.ms", Doc: "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted."},
				note: "youngest record compaction may touch, ms"},
		},
	},
	{
		Def: configdef.Def{Name: "min.insync.replicas", Type: configdef.Int, Default: "1", Range: configdef.AtLeast(1),
			Doc: "When a producer sets acks to \"all\" (or \"-1\"), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful. If this minimum cannot be met, then the producer will raise an exception (either NotEnoughReplicas or NotEnoughReplicasAfterAppend).<br>When used together, <code>min.insync.replicas</code> and <code>acks</code> allow you to enforce greater durability guarantees. A typical scenario would be to create a topic with a replication factor of 3, set <code>min.insync.replicas</code> to 2, and produce with <code>acks</code> of \"all\". This will ensure that the producer raises an exception if a majority of replicas do not receive a write."},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "min.insync.replicas", Doc: "When a producer sets acks to \"all\" (or \"-1\"), <code>min.insync.replicas</code> specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful. If this minimum cannot be met, then the producer will raise an exception (either <code>NotEnoughReplicas</code> or <code>NotEnoughReplicasAfterAppend</code>).<br>When used together, <code>min.insync.replicas</code> and acks allow you to enforce greater durability guarantees. A typical scenario would be to create a topic with a replication factor of 3, set <code>min.insync.replicas</code> to 2, and produce with acks of \"all\". This will ensure that the producer raises an exception if a majority of replicas do not receive a write."},
				note: "accepted and reported; one broker is every replica"},
		},
	},
	{
		Def: configdef.Def{Name: "preallocate", Type: configdef.Boolean, Default: "false",
			Doc: "True if we should preallocate the file on disk when creating a new log segment."},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.preallocate", Doc: "Should pre allocate file when create new segment? If you are using Kafka on Windows, you probably need to set it to true."},
				note: "accepted and reported; segments are not preallocated"},
		},
	},
	{
		Def: configdef.Def{Name: "remote.log.copy.disable", Type: configdef.Boolean, Default: "false",
			Doc: "Determines whether tiered data for a topic should become read only, and no more data uploading on a topic. Once this config is set to true, the local retention configuration (i.e. local.retention.ms/bytes) becomes irrelevant, and all data expiration follows the topic-wide retention configuration(i.e. retention.ms/bytes)."},
	},
	{
		Def: configdef.Def{Name: "remote.log.delete.on.disable", Type: configdef.Boolean, Default: "false",
			Doc: "Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a topic. This configuration should be enabled when trying to set `remote.storage.enable` from true to false"},
	},
	{
		Def: configdef.Def{Name: "remote.storage.enable", Type: configdef.Boolean, Default: "false",
			Doc: "To enable tiered storage for a topic, set this configuration as true. You can not disable this config once it is enabled. It will be provided in future versions."},
	},
	{
		Def: configdef.Def{Name: RetentionBytesConfig, Type: configdef.Long, Default: "-1",
			Doc: "This configuration controls the maximum size a partition (which consists of log segments) can grow to before we will discard old log segments to free up space if we are using the \"delete\" retention policy. By default there is no size limit only a time limit. Since this limit is enforced at the partition level, multiply it by the number of partitions to compute the topic retention in bytes. Additionally, retention.bytes configuration operates independently of \"segment.ms\" and \"segment.bytes\" configurations. Moreover, it triggers the rolling of new segment if the retention.bytes is configured to zero."},
		negativeIsUnlimited: true,
		apply:               func(c *LogConfig, v configdef.Value) { c.RetentionBytes = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.retention.bytes", Doc: "The maximum size of the log before deleting it"},
				note: "bound a partition's size, bytes; -1 (any negative) for none"},
		},
	},
	{
		Def: configdef.Def{Name: RetentionMsConfig, Type: configdef.Long, Default: "604800000", Range: configdef.AtLeast(-1),
			Doc: "This configuration controls the maximum time we will retain a log before we will discard old log segments to free up space if we are using the \"delete\" retention policy. This represents an SLA on how soon consumers must read their data. If set to -1, no time limit is applied. Additionally, retention.ms configuration operates independently of \"segment.ms\" and \"segment.bytes\" configurations. Moreover, it triggers the rolling of new segment if the retention.ms condition is satisfied."},
		negativeIsUnlimited: true,
		apply:               func(c *LogConfig, v configdef.Value) { c.RetentionMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.retention.ms", NullDefault: true, Doc: "The number of milliseconds to keep a log file before deleting it (in milliseconds), If not set, the value in log.retention.minutes is used. If set to -1, no time limit is applied."},
				note: "keep data this long; -1 (any negative) for ever"},
			{Def: configdef.Def{Name: "log.retention.minutes", Type: configdef.Int, NullDefault: true, Doc: "The number of minutes to keep a log file before deleting it (in minutes), secondary to log.retention.ms property. If not set, the value in log.retention.hours is used"}, scale: 60000},
			{Def: configdef.Def{Name: "log.retention.hours", Type: configdef.Int, Default: "168", Doc: "The number of hours to keep a log file before deleting it (in hours), tertiary to log.retention.ms property"}, scale: 3600000},
		},
	},
	{
		Def: configdef.Def{Name: SegmentBytesConfig, Type: configdef.Int, Default: "1073741824", Range: configdef.AtLeast(1048576),
			Doc: "This configuration controls the segment file size for the log. Retention and cleaning is always done a file at a time so a larger segment size means fewer files but less granular control over retention."},
		apply: func(c *LogConfig, v configdef.Value) { c.SegmentBytes = int32(v.Int) },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.segment.bytes", Doc: "The maximum size of a single log file"},
				note: "roll a segment at this size, bytes; at least 1048576 (tests: the topic config `internal.segment.bytes`)"},
		},
	},
	{
		Def: configdef.Def{Name: "segment.index.bytes", Type: configdef.Int, Default: "10485760", Range: configdef.AtLeast(4),
			Doc: "This configuration controls the size of the index that maps offsets to file positions. We preallocate this index file and shrink it only after log rolls. You generally should not need to change this setting."},
		apply: func(c *LogConfig, v configdef.Value) { c.SegmentIndexBytes = int32(v.Int) },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.index.size.max.bytes", Doc: "The maximum size in bytes of the offset index"},
				note: "offset index size per segment, bytes; at least 4"},
		},
	},
	{
		Def: configdef.Def{Name: "segment.jitter.ms", Type: configdef.Long, Default: "0", Range: configdef.AtLeast(0),
			Doc: "The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds of segment rolling"},
		apply: func(c *LogConfig, v configdef.Value) { c.SegmentJitterMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.roll.jitter.ms", NullDefault: true, Doc: "The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not set, the value in log.roll.jitter.hours is used"},
				note: "each segment rolls up to this much earlier than `log.roll.ms` says, by a random amount drawn when it opens, ms"},
			{Def: configdef.Def{Name: "log.roll.jitter.hours", Type: configdef.Int, Default: "0", Doc: "The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms property"}, scale: 3600000},
		},
	},
	{
		Def: configdef.Def{Name: "segment.ms", Type: configdef.Long, Default: "604800000", Range: configdef.AtLeast(1),
			Doc: "This configuration controls the period of time after which Kafka will force the log to roll even if the segment file isn't full to ensure that retention can delete or compact old data."},
		apply: func(c *LogConfig, v configdef.Value) { c.SegmentMs = v.Int },
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "log.roll.ms", NullDefault: true, Doc: "The maximum time before a new log segment is rolled out (in milliseconds). If not set, the value in log.roll.hours is used"},
				note: "roll a segment at this age, ms"},
			{Def: configdef.Def{Name: "log.roll.hours", Type: configdef.Int, Default: "168", Doc: "The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms property"}, scale: 3600000},
		},
	},
	{
		Def: configdef.Def{Name: "unclean.leader.election.enable", Type: configdef.Boolean, Default: "false",
			Doc: "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss.<p>Note: In KRaft mode, when enabling this config dynamically, it needs to wait for the unclean leader electionthread to trigger election periodically (default is 5 minutes). Please run `kafka-leader-election.sh` with `unclean` option to trigger the unclean leader election immediately if needed.</p>"},
		broker: []brokerLogConfig{
			{Def: configdef.Def{Name: "unclean.leader.election.enable", Doc: "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss."},
				note: "accepted and reported; one broker is every replica"},
		},
	},
}

var (
	// topicConfigByName indexes topicConfigs.
	topicConfigByName = map[string]*topicConfigDef{}
	// brokerLogConfigByName indexes every broker property of every
	// topicConfigDef.broker.
	brokerLogConfigByName = map[string]*brokerLogConfig{}
	defaultLogConfig      LogConfig
)

func init() {
	for _, t := range topicConfigs {
		topicConfigByName[t.Name] = t
		if t.apply != nil {
			v, err := t.Parse(t.Default)
			if err != nil {
				panic("partition: default of " + t.Name + ": " + err.Error())
			}
			t.apply(&defaultLogConfig, v)
		}
		for i := range t.broker {
			b := &t.broker[i]
			b.topic = t
			if b.Type == 0 {
				b.Type = t.Type
			}
			if b.Default == "" && !b.NullDefault && b.scale == 0 {
				b.Default = t.Default
			}
			brokerLogConfigByName[b.Name] = b
		}
	}
}

// dynamic reports whether Kafka lets the broker property be changed at
// run time (DynamicLogConfig: the first synonym of each topic config, but
// those marked static). kcompatd applies those changes at once.
func (b *brokerLogConfig) dynamic() bool { return b == &b.topic.broker[0] && !b.static }

// TopicConfigNames returns every topic config name Kafka accepts, sorted.
func TopicConfigNames() []string {
	names := make([]string, len(topicConfigs))
	for i, t := range topicConfigs {
		names[i] = t.Name
	}
	return names
}

// TopicConfigDef returns the definition of a topic config.
func TopicConfigDef(name string) (configdef.Def, bool) {
	t, ok := topicConfigByName[name]
	if !ok {
		return configdef.Def{}, false
	}
	return t.Def, true
}

// BrokerSynonyms returns the broker properties that give topic config
// name its default, highest priority first (log.retention.ms,
// log.retention.minutes, log.retention.hours for retention.ms); nil for a
// topic config no broker property defaults (remote.storage.enable).
func BrokerSynonyms(topicConfig string) []string {
	t, ok := topicConfigByName[topicConfig]
	if !ok {
		return nil
	}
	out := make([]string, len(t.broker))
	for i, b := range t.broker {
		out[i] = b.Name
	}
	return out
}

// BrokerConfigSynonyms is Kafka's DynamicBrokerConfig.brokerConfigSynonyms
// for a broker property: the names that set the same value, highest
// priority first (log.roll.ms and log.roll.hours), or just the name.
func BrokerConfigSynonyms(name string) []string {
	if b, ok := brokerLogConfigByName[name]; ok && len(b.topic.broker) > 1 {
		return BrokerSynonyms(b.topic.Name)
	}
	return []string{name}
}

// TopicConfigOf returns the topic config whose default the broker property
// name sets, for the broker properties Kafka lets be changed dynamically
// (log.segment.bytes: segment.bytes).
func TopicConfigOf(brokerConfig string) (string, bool) {
	b, ok := brokerLogConfigByName[brokerConfig]
	if !ok || !b.dynamic() {
		return "", false
	}
	return b.topic.Name, true
}

// BrokerLogConfig describes a broker property that gives a topic config's
// default, for the broker's own catalog (parsing, DescribeConfigs, README).
type BrokerLogConfig struct {
	configdef.Def
	// Synonyms are the lower-priority names of the same setting
	// (log.retention.minutes, log.retention.hours for log.retention.ms),
	// which set it when it is not given itself.
	Synonyms []configdef.Def
	// TopicDefault is the topic config's default, which the setting
	// defaults to where its own default is null (log.retention.ms).
	TopicDefault string
	// Dynamic: AlterConfigs may change it at run time.
	Dynamic bool
	// Effect is false for a setting kcompatd validates and reports but
	// does not act on (log.preallocate).
	Effect bool
	Note   string // kcompatd's one-line description
}

// BrokerLogConfigs lists the broker properties that give topic configs
// their defaults, one entry per setting (its first name; the others are
// its Synonyms), in the catalog's order.
func BrokerLogConfigs() []BrokerLogConfig {
	var out []BrokerLogConfig
	for _, t := range topicConfigs {
		if len(t.broker) == 0 {
			continue
		}
		b := &t.broker[0]
		e := BrokerLogConfig{Def: b.Def, Dynamic: b.dynamic(), Effect: t.apply != nil, Note: b.note, TopicDefault: t.Default}
		var own []BrokerLogConfig
		for _, s := range t.broker[1:] {
			if s.own {
				own = append(own, BrokerLogConfig{Def: s.Def, Effect: t.apply != nil, Note: s.note, TopicDefault: t.Default})
			} else {
				e.Synonyms = append(e.Synonyms, s.Def)
			}
		}
		out = append(append(out, e), own...)
	}
	return out
}

// IsBrokerLogConfig reports whether name is a broker property that gives a
// topic config its default.
func IsBrokerLogConfig(name string) bool {
	_, ok := brokerLogConfigByName[name]
	return ok
}

// invalidConfig wraps a configdef error as ErrInvalidConfig.
func invalidConfig(err error) error { return withDetail(ErrInvalidConfig, err.Error()) }

// parseTopicConfig validates one topic config and applies it to c.
func parseTopicConfig(c *LogConfig, name, value string) error {
	t, ok := topicConfigByName[name]
	if name == internalSegmentBytes.Name {
		t, ok = &internalSegmentBytes, true
	}
	if !ok {
		return withDetail(ErrInvalidConfig, "Unknown topic config name: "+name)
	}
	v, err := t.Parse(value)
	if err != nil {
		return invalidConfig(err)
	}
	if t.apply != nil {
		t.apply(c, v)
	}
	return nil
}

// parseBrokerValue parses a broker property's value into its topic
// config's unit and validates it by the topic config's rules, worded with
// the broker property's name as Kafka's KafkaConfig would. It returns the
// value as the topic config prints it.
func (b *brokerLogConfig) parseBrokerValue(raw string) (string, error) {
	text := raw
	if b.scale != 0 {
		v, err := b.Def.Parse(raw) // hours and minutes are INTs
		if err != nil {
			return "", err
		}
		text = strconv.FormatInt(v.Int*b.scale, 10)
	}
	if b.topic.negativeIsUnlimited {
		if n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64); err == nil && n < -1 {
			text = "-1"
		}
	}
	topic := b.topic.Def
	topic.Name = b.Name
	if b.Check != nil {
		topic.Check = b.Check
	}
	v, err := topic.Parse(text)
	if err != nil {
		if e, ok := configdef.AsError(err); ok {
			e.Value = raw
		}
		return "", err
	}
	return topic.Print(v), nil
}

// ParseBrokerLogConfigs validates the broker properties among given that
// give topic configs their defaults and returns them under the name each
// setting goes by in BrokerLogConfigs, in the topic config's unit:
// log.retention.hours=2 becomes log.retention.ms=7200000. A name wins over
// its lower-priority synonyms, as in Kafka. Other properties in given are
// ignored. Every bad value is reported, each a *configdef.Error.
func ParseBrokerLogConfigs(given map[string]string) (map[string]string, []error) {
	out := map[string]string{}
	var errs []error
	for _, t := range topicConfigs {
		for i := len(t.broker) - 1; i >= 0; i-- { // lowest priority first
			b := &t.broker[i]
			raw, ok := given[b.Name]
			if !ok {
				continue
			}
			v, err := b.parseBrokerValue(raw)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			key := b.Name
			if !b.own {
				key = t.broker[0].Name
			}
			out[key] = v
		}
	}
	return out, errs
}

// BrokerDefaults resolves the static broker defaults of topic configs,
// as ParseBrokerLogConfigs returns them, over Kafka's defaults.
func BrokerDefaults(static map[string]string) (LogConfig, error) {
	parsed, errs := ParseBrokerLogConfigs(static)
	if len(errs) > 0 {
		return LogConfig{}, invalidConfig(errs[0])
	}
	return resolveBrokerDefaults(DefaultLogConfig(), parsed)
}

// validateBrokerLogConfig checks one broker property's value if it gives a
// topic config its default.
func validateBrokerLogConfig(name, value string) error {
	b, ok := brokerLogConfigByName[name]
	if !ok {
		return nil
	}
	if _, err := b.parseBrokerValue(value); err != nil {
		return invalidConfig(err)
	}
	return nil
}

// resolveBrokerDefaults applies broker property layers, lowest precedence
// first (the dynamic cluster default, then this broker's), to base: in
// each layer a topic config takes the value of its highest-priority broker
// property the layer sets.
func resolveBrokerDefaults(base LogConfig, layers ...map[string]string) (LogConfig, error) {
	topicLevel := map[string]string{}
	for _, layer := range layers {
		for _, t := range topicConfigs {
			for i := len(t.broker) - 1; i >= 0; i-- {
				raw, ok := layer[t.broker[i].Name]
				if !ok {
					continue
				}
				v, err := t.broker[i].parseBrokerValue(raw)
				if err != nil {
					return base, invalidConfig(err)
				}
				topicLevel[t.Name] = v
			}
		}
	}
	return ResolveLogConfig(base, topicLevel)
}

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
	if c.internalSegmentBytes > 0 {
		c.SegmentBytes = c.internalSegmentBytes // Kafka's LogConfig.segmentSize
	}
	// Kafka's cross-field check (LogConfig.validateValues).
	if c.MinCompactionLagMs > c.MaxCompactionLagMs {
		return base, withDetail(ErrInvalidConfig, fmt.Sprintf("conflict topic config setting %s (%d) > %s (%d)",
			minCompactionLagConfig, c.MinCompactionLagMs, maxCompactionLagConfig, c.MaxCompactionLagMs))
	}
	// kcompatd has no tiered storage, as a Kafka broker with
	// remote.log.storage.system.enable=false (LogConfig.validate).
	if v, ok := overrides["remote.storage.enable"]; ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return base, withDetail(ErrInvalidConfig, "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	return c, nil
}
