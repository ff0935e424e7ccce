package kcompatd

import (
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// Config is the broker's configuration. Each field carries the Kafka
// property it comes from, its unit and its default, which is Kafka's unless
// noted. Start from DefaultConfig: zero values are not defaults (zero is a
// meaningful value for several settings), and New rejects invalid ones.
type Config struct {
	// LogDirs is the data directory (log.dirs, else log.dir; default
	// /tmp/kcompatd-logs, where Kafka's is /tmp/kafka-logs). Kafka takes a
	// comma-separated list; kcompatd keeps exactly one directory.
	LogDirs string

	// Listeners is where clients connect (listeners, default
	// PLAINTEXT://localhost:9092, where Kafka binds every interface): a
	// comma-separated list of NAME://host:port. An empty host binds every
	// interface, a host name every address it resolves to (localhost:
	// 127.0.0.1 and ::1, on one port); port 0 picks a free port.
	// Listeners named in
	// ControllerListenerNames are ignored, which leaves exactly one, whose
	// security protocol must be PLAINTEXT. Unused when Listener is set.
	Listeners string
	// AdvertisedListeners is what Metadata tells clients to connect to
	// (advertised.listeners, default: the bound listener's host and
	// actual port). Its entry for the listener's name is used; a port of
	// 0 means the bound port.
	AdvertisedListeners string
	// ListenerSecurityProtocolMap maps listener names to security
	// protocols (listener.security.protocol.map, default
	// PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL).
	ListenerSecurityProtocolMap string
	// ControllerListenerNames names KRaft controller listeners
	// (controller.listener.names, default empty), which a single
	// kcompatd process has no use for: they are skipped, so that a stock
	// combined-mode server.properties works unchanged.
	ControllerListenerNames string

	// Listener, when not nil, is an already-open listener to serve
	// instead of opening Listeners (not a Kafka property: it lets Go tests
	// start a broker on a listener they own). The broker closes it on
	// Close, and New closes it when it fails.
	Listener net.Listener

	// NodeID is this broker's id (node.id, else broker.id; default 1,
	// where Kafka requires one to be set).
	NodeID int32
	// BrokerRack is the rack Metadata reports for this broker
	// (broker.rack, default empty: none).
	BrokerRack string
	// NumPartitions is the partition count of auto-created topics and of
	// CreateTopics with -1 (num.partitions, default 1, at least 1).
	NumPartitions int32
	// AutoCreateTopicsEnable creates unknown topics that a Metadata
	// request names (auto.create.topics.enable, default true).
	AutoCreateTopicsEnable bool
	// DeleteTopicEnable allows DeleteTopics (delete.topic.enable,
	// default true).
	DeleteTopicEnable bool
	// DefaultReplicationFactor is the replication factor of
	// auto-created topics (default.replication.factor, default 1). A
	// single broker can hold one replica, so 1 is the only valid value.
	DefaultReplicationFactor int32
	// OffsetsTopicNumPartitions is the partition count of
	// __consumer_offsets (offsets.topic.num.partitions, default 50).
	OffsetsTopicNumPartitions int32
	// GroupInitialRebalanceDelayMs is how long, in milliseconds, a new
	// group waits for more members before its first rebalance
	// (group.initial.rebalance.delay.ms, default 3000).
	GroupInitialRebalanceDelayMs int32
	// GroupMinSessionTimeoutMs and GroupMaxSessionTimeoutMs bound a
	// group member's session timeout, in milliseconds
	// (group.min.session.timeout.ms, default 6000;
	// group.max.session.timeout.ms, default 1800000).
	GroupMinSessionTimeoutMs int32
	GroupMaxSessionTimeoutMs int32
	// GroupMaxSize is the most members a group may have (group.max.size,
	// default 2147483647).
	GroupMaxSize int32
	// OffsetsRetentionMinutes is how long committed offsets are kept
	// after their group became empty (or, for groups that only commit,
	// after the commit), in minutes (offsets.retention.minutes, default
	// 10080).
	OffsetsRetentionMinutes int32
	// OffsetsRetentionCheckIntervalMs is how often offsets are checked
	// for expiry, in milliseconds (offsets.retention.check.interval.ms,
	// default 600000).
	OffsetsRetentionCheckIntervalMs int64
	// OffsetMetadataMaxBytes bounds the metadata of a committed offset,
	// in bytes (offset.metadata.max.bytes, default 4096).
	OffsetMetadataMaxBytes int32
	// TransactionMaxTimeoutMs bounds a producer's transaction timeout,
	// in milliseconds (transaction.max.timeout.ms, default 900000).
	TransactionMaxTimeoutMs int32
	// TransactionStateLogNumPartitions is the partition count of
	// __transaction_state (transaction.state.log.num.partitions, default
	// 50).
	TransactionStateLogNumPartitions int32
	// TransactionStateLogSegmentBytes is the segment size of
	// __transaction_state, in bytes (transaction.state.log.segment.bytes,
	// default 104857600).
	TransactionStateLogSegmentBytes int32
	// TransactionAbortTimedOutCleanupIntervalMs is how often timed-out
	// transactions are aborted, in milliseconds
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms,
	// default 10000).
	TransactionAbortTimedOutCleanupIntervalMs int32
	// TransactionRemoveExpiredCleanupIntervalMs is how often expired
	// transactional ids are removed, in milliseconds
	// (transaction.remove.expired.transaction.cleanup.interval.ms,
	// default 3600000).
	TransactionRemoveExpiredCleanupIntervalMs int32
	// TransactionalIDExpirationMs is how long a transactional id with no
	// transaction in progress is kept after its last update, in
	// milliseconds (transactional.id.expiration.ms, default 604800000).
	TransactionalIDExpirationMs int32
	// ProducerIDExpirationMs is how long a partition keeps the state of
	// a producer with no open transaction after its last batch's
	// timestamp, in milliseconds (producer.id.expiration.ms, default
	// 86400000).
	ProducerIDExpirationMs int32
	// ProducerIDExpirationCheckIntervalMs is how often expired producer
	// state is removed, in milliseconds
	// (producer.id.expiration.check.interval.ms, default 600000).
	ProducerIDExpirationCheckIntervalMs int32
	// SocketRequestMaxBytes bounds a request frame, in bytes
	// (socket.request.max.bytes, default 104857600).
	SocketRequestMaxBytes int32
	// QueuedMaxRequestBytes bounds the bytes of request frames read and
	// not yet handled, across all connections; beyond it reading waits
	// (queued.max.request.bytes; -1, unbounded, by default as in Kafka:
	// zero or negative: unbounded; otherwise at least
	// socket.request.max.bytes). Not bounded by default because a frame
	// read ahead behind a long-waiting request (a Fetch long poll, a
	// JoinGroup) stays counted while it waits, so a few such connections
	// could stall every reader.
	QueuedMaxRequestBytes int64
	// ConnectionsMaxIdleMs closes a connection that has had no request
	// in flight and no bytes received for this long, in milliseconds
	// (connections.max.idle.ms, default 600000; negative: never).
	ConnectionsMaxIdleMs int64
	// MaxConnections is the most connections the broker holds; at the
	// limit it accepts the next one only when another closes
	// (max.connections, default 2147483647, at least 0).
	MaxConnections int32
	// MaxConnectionsPerIP is the most connections from one address;
	// more are closed at once (max.connections.per.ip, default
	// 2147483647, at least 0; 0 only with overrides).
	MaxConnectionsPerIP int32
	// MaxConnectionsPerIPOverrides is host:count,... overriding
	// MaxConnectionsPerIP for those hosts (IP addresses or host names,
	// resolved at start-up) (max.connections.per.ip.overrides, default
	// empty).
	MaxConnectionsPerIPOverrides string
	// MessageMaxBytes bounds a produced batch, in bytes; it is the
	// broker default of the topic config max.message.bytes
	// (message.max.bytes, default 1048588).
	MessageMaxBytes int32

	// Broker defaults of topic configs; each topic's own setting (the
	// name after "log.") overrides them.

	// LogSegmentBytes is the size at which a segment is rolled, in bytes
	// (log.segment.bytes, default 1073741824, at least 14).
	LogSegmentBytes int32
	// LogRollMs is the age at which a segment is rolled, in milliseconds
	// (log.roll.ms, else log.roll.hours; default 168 hours).
	LogRollMs int64
	// LogIndexSizeMaxBytes bounds a segment's offset index, in bytes
	// (log.index.size.max.bytes, default 10485760, at least 4).
	LogIndexSizeMaxBytes int32
	// LogIndexIntervalBytes is the bytes of batches between offset
	// index entries (log.index.interval.bytes, default 4096).
	LogIndexIntervalBytes int32
	// LogFlushIntervalMessages fsyncs a log after this many messages
	// (log.flush.interval.messages, default 9223372036854775807: never,
	// leaving it to the OS; 1 fsyncs every append).
	LogFlushIntervalMessages int64
	// LogFlushIntervalMs fsyncs a log whose oldest unflushed message is
	// this old, in milliseconds (log.flush.interval.ms, default
	// 9223372036854775807: never).
	LogFlushIntervalMs int64
	// LogFlushOffsetCheckpointIntervalMs is how often the recovery-point
	// and log-start-offset checkpoints are written, in milliseconds
	// (log.flush.offset.checkpoint.interval.ms, default 60000; at least
	// 1, where Kafka takes 0 to mean once).
	LogFlushOffsetCheckpointIntervalMs int32
	// LogMessageTimestampType is CreateTime or LogAppendTime
	// (log.message.timestamp.type, default CreateTime).
	LogMessageTimestampType string
	// LogRetentionMs is how long a log keeps data, in milliseconds, -1
	// for ever (log.retention.ms, else log.retention.minutes, else
	// log.retention.hours; default 168 hours). Kafka reads any negative
	// value as -1.
	LogRetentionMs int64
	// LogRetentionBytes bounds a partition's size, in bytes, -1 for no
	// bound (log.retention.bytes, default -1).
	LogRetentionBytes int64
	// LogCleanupPolicy is delete, compact or compact,delete
	// (log.cleanup.policy, default delete).
	LogCleanupPolicy string
	// LogCleanerDeleteRetentionMs is how long tombstones survive
	// compaction, in milliseconds (log.cleaner.delete.retention.ms,
	// default 86400000).
	LogCleanerDeleteRetentionMs int64
	// LogCleanerMinCompactionLagMs is the minimum age of a record before
	// it may be compacted, in milliseconds
	// (log.cleaner.min.compaction.lag.ms, default 0).
	LogCleanerMinCompactionLagMs int64
	// LogCleanerMaxCompactionLagMs is the maximum time a record stays
	// uncompacted, in milliseconds (log.cleaner.max.compaction.lag.ms,
	// default 9223372036854775807).
	LogCleanerMaxCompactionLagMs int64
	// LogCleanerMinCleanableRatio is the dirty ratio above which a log
	// is compacted (log.cleaner.min.cleanable.ratio, default 0.5).
	LogCleanerMinCleanableRatio float64
	// LogCleanerEnable runs the log cleaner (log.cleaner.enable, default
	// true). Without it compacted logs get neither compaction nor
	// retention, as in Kafka.
	LogCleanerEnable bool
	// LogCleanerThreads is the number of cleaner threads
	// (log.cleaner.threads, default 1, at least 1).
	LogCleanerThreads int32
	// LogCleanerBackoffMs is a cleaner thread's sleep when no log needs
	// cleaning, in milliseconds (log.cleaner.backoff.ms, default 15000).
	LogCleanerBackoffMs int64
	// LogCleanerDedupeBufferSize is the memory of the cleaners' offset
	// maps, in bytes, split between the threads
	// (log.cleaner.dedupe.buffer.size, default 134217728).
	LogCleanerDedupeBufferSize int64
	// LogCleanerIoMaxBytesPerSecond caps the cleaners' reads, in bytes per
	// second (log.cleaner.io.max.bytes.per.second, default unlimited).
	LogCleanerIoMaxBytesPerSecond float64
	// LogRetentionCheckIntervalMs is how often retention runs over logs
	// that are not compacted, in milliseconds
	// (log.retention.check.interval.ms, default 300000).
	LogRetentionCheckIntervalMs int64
	// LogSegmentDeleteDelayMs is how long a deleted segment's files are
	// kept (renamed .deleted), in milliseconds
	// (log.segment.delete.delay.ms, default 60000).
	LogSegmentDeleteDelayMs int64
	// CompressionType is the codec batches are stored with: producer
	// (as produced), uncompressed, gzip, snappy, lz4 or zstd
	// (compression.type, default producer).
	CompressionType string

	// KafkaVersion caps the API versions the broker advertises and
	// serves at those of a Kafka release, such as "3.5" or "2.8.1"
	// (kcompatd.kafka.version, kcompatd's own; default empty: every
	// version kcompatd implements). It lets a client be tested against
	// the protocol an older Kafka spoke.
	KafkaVersion string

	// Clock is the time source (nil: the wall clock). Not a property.
	Clock clock.Clock
}

// DefaultConfig returns Kafka's defaults, with kcompatd's data dir and
// listener defaults.
func DefaultConfig() Config {
	return Config{
		LogDirs:                            "/tmp/kcompatd-logs",
		Listeners:                          "PLAINTEXT://localhost:9092",
		ListenerSecurityProtocolMap:        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		NodeID:                             1,
		NumPartitions:                      1,
		AutoCreateTopicsEnable:             true,
		DeleteTopicEnable:                  true,
		DefaultReplicationFactor:           1,
		OffsetsTopicNumPartitions:          50,
		GroupInitialRebalanceDelayMs:       3000,
		GroupMinSessionTimeoutMs:           6000,
		GroupMaxSessionTimeoutMs:           1800000,
		GroupMaxSize:                       math.MaxInt32,
		OffsetsRetentionMinutes:            10080,
		OffsetsRetentionCheckIntervalMs:    600000,
		OffsetMetadataMaxBytes:             4096,
		SocketRequestMaxBytes:              104857600,
		QueuedMaxRequestBytes:              -1,
		ConnectionsMaxIdleMs:               600000,
		MaxConnections:                     math.MaxInt32,
		MaxConnectionsPerIP:                math.MaxInt32,
		MessageMaxBytes:                    1048588,
		LogSegmentBytes:                    1 << 30,
		LogRollMs:                          168 * 3600000,
		LogIndexSizeMaxBytes:               10 << 20,
		LogIndexIntervalBytes:              4096,
		LogFlushIntervalMessages:           math.MaxInt64,
		LogFlushIntervalMs:                 math.MaxInt64,
		LogFlushOffsetCheckpointIntervalMs: 60000,
		LogMessageTimestampType:            "CreateTime",
		LogRetentionMs:                     168 * 3600000,
		LogRetentionBytes:                  -1,
		LogCleanupPolicy:                   "delete",
		LogCleanerDeleteRetentionMs:        86400000,
		LogCleanerMinCompactionLagMs:       0,
		LogCleanerMaxCompactionLagMs:       math.MaxInt64,
		LogCleanerMinCleanableRatio:        0.5,
		LogCleanerEnable:                   true,
		LogCleanerThreads:                  1,
		LogCleanerBackoffMs:                15000,
		LogCleanerDedupeBufferSize:         128 << 20,
		LogCleanerIoMaxBytesPerSecond:      math.MaxFloat64,
		LogRetentionCheckIntervalMs:        300000,
		LogSegmentDeleteDelayMs:            60000,
		CompressionType:                    "producer",

		// The transaction coordinator (TransactionStateManagerConfig,
		// TransactionLogConfig).
		TransactionMaxTimeoutMs:                   900000,
		TransactionStateLogNumPartitions:          50,
		TransactionStateLogSegmentBytes:           104857600,
		TransactionAbortTimedOutCleanupIntervalMs: 10000,
		TransactionRemoveExpiredCleanupIntervalMs: 3600000,
		TransactionalIDExpirationMs:               604800000,
		ProducerIDExpirationMs:                    86400000,
		ProducerIDExpirationCheckIntervalMs:       600000,
	}
}

// TopicDefaults returns the broker-level topic config defaults as the
// storage engine takes them.
func (c *Config) TopicDefaults() partition.LogConfig {
	return partition.LogConfig{
		SegmentBytes:         c.LogSegmentBytes,
		SegmentMs:            c.LogRollMs,
		SegmentIndexBytes:    c.LogIndexSizeMaxBytes,
		IndexIntervalBytes:   c.LogIndexIntervalBytes,
		FlushMessages:        c.LogFlushIntervalMessages,
		FlushMs:              c.LogFlushIntervalMs,
		MaxMessageBytes:      c.MessageMaxBytes,
		MessageTimestampType: c.LogMessageTimestampType,
		CompressionType:      c.CompressionType,
		CleanupPolicy:        c.LogCleanupPolicy,
		RetentionMs:          c.LogRetentionMs,
		RetentionBytes:       c.LogRetentionBytes,
		DeleteRetentionMs:    c.LogCleanerDeleteRetentionMs,
		MinCompactionLagMs:   c.LogCleanerMinCompactionLagMs,
		MaxCompactionLagMs:   c.LogCleanerMaxCompactionLagMs,
		MinCleanableRatio:    c.LogCleanerMinCleanableRatio,
		FileDeleteDelayMs:    c.LogSegmentDeleteDelayMs,
	}
}

// ConfigError is one invalid setting.
type ConfigError struct {
	Property string // Kafka's name for the setting
	Value    string // as given; empty for a struct field set in Go
	Reason   string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("kcompatd: %s: %s", e.Property, e.Reason)
	}
	return fmt.Sprintf("kcompatd: %s=%q: %s", e.Property, e.Value, e.Reason)
}

// ConfigWarning is a property that was given but has no effect.
type ConfigWarning struct {
	Property string
	// Reason is a constant sentence, suitable as a log message.
	Reason string
}

// Warning reasons. Kafka logs unknown properties and starts anyway; so
// does kcompatd.
const (
	WarnUnknown    = "ignoring unknown or unsupported property"
	WarnSingleNode = "ignoring property that has no effect on a single-node broker"
)

// property is one supported Kafka property: its name, a pointer to the
// Config field it sets and how.
type property struct {
	name string
	// field returns a pointer to the field: *string, *int32, *int64,
	// *bool or *float64.
	field func(c *Config) any
	// scale multiplies an integer given in a coarser unit into the
	// field's milliseconds (log.retention.hours: 3600000); 0 means 1.
	scale int64
	// synonym marks a secondary name, overridden by the primary one
	// when both are set; Properties does not list it.
	synonym bool
}

// properties lists every supported property. ParseConfig applies the
// given ones in this order, so a synonym comes before the name that wins
// over it (log.retention.hours < log.retention.minutes < log.retention.ms).
var properties = []property{
	{name: "log.dir", field: func(c *Config) any { return &c.LogDirs }, synonym: true},
	{name: "log.dirs", field: func(c *Config) any { return &c.LogDirs }},
	{name: "listeners", field: func(c *Config) any { return &c.Listeners }},
	{name: "advertised.listeners", field: func(c *Config) any { return &c.AdvertisedListeners }},
	{name: "listener.security.protocol.map", field: func(c *Config) any { return &c.ListenerSecurityProtocolMap }},
	{name: "controller.listener.names", field: func(c *Config) any { return &c.ControllerListenerNames }},
	{name: "broker.id", field: func(c *Config) any { return &c.NodeID }, synonym: true},
	{name: "node.id", field: func(c *Config) any { return &c.NodeID }},
	{name: "broker.rack", field: func(c *Config) any { return &c.BrokerRack }},
	{name: "num.partitions", field: func(c *Config) any { return &c.NumPartitions }},
	{name: "auto.create.topics.enable", field: func(c *Config) any { return &c.AutoCreateTopicsEnable }},
	{name: "delete.topic.enable", field: func(c *Config) any { return &c.DeleteTopicEnable }},
	{name: "default.replication.factor", field: func(c *Config) any { return &c.DefaultReplicationFactor }},
	{name: "offsets.topic.num.partitions", field: func(c *Config) any { return &c.OffsetsTopicNumPartitions }},
	{name: "group.initial.rebalance.delay.ms", field: func(c *Config) any { return &c.GroupInitialRebalanceDelayMs }},
	{name: "group.min.session.timeout.ms", field: func(c *Config) any { return &c.GroupMinSessionTimeoutMs }},
	{name: "group.max.session.timeout.ms", field: func(c *Config) any { return &c.GroupMaxSessionTimeoutMs }},
	{name: "group.max.size", field: func(c *Config) any { return &c.GroupMaxSize }},
	{name: "offsets.retention.minutes", field: func(c *Config) any { return &c.OffsetsRetentionMinutes }},
	{name: "offsets.retention.check.interval.ms", field: func(c *Config) any { return &c.OffsetsRetentionCheckIntervalMs }},
	{name: "offset.metadata.max.bytes", field: func(c *Config) any { return &c.OffsetMetadataMaxBytes }},
	{name: "transaction.max.timeout.ms", field: func(c *Config) any { return &c.TransactionMaxTimeoutMs }},
	{name: "transaction.state.log.num.partitions", field: func(c *Config) any { return &c.TransactionStateLogNumPartitions }},
	{name: "transaction.state.log.segment.bytes", field: func(c *Config) any { return &c.TransactionStateLogSegmentBytes }},
	{name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", field: func(c *Config) any { return &c.TransactionAbortTimedOutCleanupIntervalMs }},
	{name: "transaction.remove.expired.transaction.cleanup.interval.ms", field: func(c *Config) any { return &c.TransactionRemoveExpiredCleanupIntervalMs }},
	{name: "transactional.id.expiration.ms", field: func(c *Config) any { return &c.TransactionalIDExpirationMs }},
	{name: "producer.id.expiration.ms", field: func(c *Config) any { return &c.ProducerIDExpirationMs }},
	{name: "producer.id.expiration.check.interval.ms", field: func(c *Config) any { return &c.ProducerIDExpirationCheckIntervalMs }},
	{name: "socket.request.max.bytes", field: func(c *Config) any { return &c.SocketRequestMaxBytes }},
	{name: "queued.max.request.bytes", field: func(c *Config) any { return &c.QueuedMaxRequestBytes }},
	{name: "connections.max.idle.ms", field: func(c *Config) any { return &c.ConnectionsMaxIdleMs }},
	{name: "max.connections", field: func(c *Config) any { return &c.MaxConnections }},
	{name: "max.connections.per.ip", field: func(c *Config) any { return &c.MaxConnectionsPerIP }},
	{name: "max.connections.per.ip.overrides", field: func(c *Config) any { return &c.MaxConnectionsPerIPOverrides }},
	{name: "message.max.bytes", field: func(c *Config) any { return &c.MessageMaxBytes }},
	{name: "log.segment.bytes", field: func(c *Config) any { return &c.LogSegmentBytes }},
	{name: "log.roll.hours", field: func(c *Config) any { return &c.LogRollMs }, scale: 3600000, synonym: true},
	{name: "log.roll.ms", field: func(c *Config) any { return &c.LogRollMs }},
	{name: "log.index.size.max.bytes", field: func(c *Config) any { return &c.LogIndexSizeMaxBytes }},
	{name: "log.index.interval.bytes", field: func(c *Config) any { return &c.LogIndexIntervalBytes }},
	{name: "log.flush.interval.messages", field: func(c *Config) any { return &c.LogFlushIntervalMessages }},
	{name: "log.flush.interval.ms", field: func(c *Config) any { return &c.LogFlushIntervalMs }},
	{name: "log.flush.offset.checkpoint.interval.ms", field: func(c *Config) any { return &c.LogFlushOffsetCheckpointIntervalMs }},
	{name: "log.message.timestamp.type", field: func(c *Config) any { return &c.LogMessageTimestampType }},
	{name: "log.retention.hours", field: func(c *Config) any { return &c.LogRetentionMs }, scale: 3600000, synonym: true},
	{name: "log.retention.minutes", field: func(c *Config) any { return &c.LogRetentionMs }, scale: 60000, synonym: true},
	{name: "log.retention.ms", field: func(c *Config) any { return &c.LogRetentionMs }},
	{name: "log.retention.bytes", field: func(c *Config) any { return &c.LogRetentionBytes }},
	{name: "log.cleanup.policy", field: func(c *Config) any { return &c.LogCleanupPolicy }},
	{name: "log.cleaner.delete.retention.ms", field: func(c *Config) any { return &c.LogCleanerDeleteRetentionMs }},
	{name: "log.cleaner.min.compaction.lag.ms", field: func(c *Config) any { return &c.LogCleanerMinCompactionLagMs }},
	{name: "log.cleaner.max.compaction.lag.ms", field: func(c *Config) any { return &c.LogCleanerMaxCompactionLagMs }},
	{name: "log.cleaner.min.cleanable.ratio", field: func(c *Config) any { return &c.LogCleanerMinCleanableRatio }},
	{name: "log.cleaner.enable", field: func(c *Config) any { return &c.LogCleanerEnable }},
	{name: "log.cleaner.threads", field: func(c *Config) any { return &c.LogCleanerThreads }},
	{name: "log.cleaner.backoff.ms", field: func(c *Config) any { return &c.LogCleanerBackoffMs }},
	{name: "log.cleaner.dedupe.buffer.size", field: func(c *Config) any { return &c.LogCleanerDedupeBufferSize }},
	{name: "log.cleaner.io.max.bytes.per.second", field: func(c *Config) any { return &c.LogCleanerIoMaxBytesPerSecond }},
	{name: "log.retention.check.interval.ms", field: func(c *Config) any { return &c.LogRetentionCheckIntervalMs }},
	{name: "log.segment.delete.delay.ms", field: func(c *Config) any { return &c.LogSegmentDeleteDelayMs }},
	{name: "compression.type", field: func(c *Config) any { return &c.CompressionType }},
	{name: "kcompatd.kafka.version", field: func(c *Config) any { return &c.KafkaVersion }},
}

// singleNodeProperties are Kafka properties that mean something only in
// a cluster (or to the JVM broker's thread pools): accepted with a
// warning, so a stock server.properties loads.
var singleNodeProperties = map[string]bool{
	"process.roles":                                    true,
	"controller.quorum.voters":                         true,
	"controller.quorum.bootstrap.servers":              true,
	"inter.broker.listener.name":                       true,
	"num.network.threads":                              true,
	"num.io.threads":                                   true,
	"num.recovery.threads.per.data.dir":                true,
	"socket.send.buffer.bytes":                         true,
	"socket.receive.buffer.bytes":                      true,
	"offsets.topic.replication.factor":                 true,
	"transaction.state.log.replication.factor":         true,
	"transaction.state.log.min.isr":                    true,
	"min.insync.replicas":                              true,
	"share.coordinator.state.topic.replication.factor": true,
	"share.coordinator.state.topic.min.isr":            true,
}

// ParseConfig builds a Config from Kafka properties over DefaultConfig,
// as a properties file and -c overrides give them. It reports every bad
// value at once, joined in the error (each a *ConfigError), and returns
// the properties it ignored as warnings, sorted by name.
func ParseConfig(props map[string]string) (Config, []ConfigWarning, error) {
	c := DefaultConfig()
	var errs []*ConfigError
	known := map[string]bool{}
	for _, p := range properties {
		known[p.name] = true
		v, ok := props[p.name]
		if !ok {
			continue
		}
		if err := p.set(&c, v); err != nil {
			errs = append(errs, &ConfigError{Property: p.name, Value: v, Reason: err.Error()})
		}
	}
	var warnings []ConfigWarning
	for name := range props {
		switch {
		case known[name]:
		case singleNodeProperties[name]:
			warnings = append(warnings, ConfigWarning{Property: name, Reason: WarnSingleNode})
		case strings.HasPrefix(name, "kcompatd."):
			// Our own namespace: a typo here is surely a mistake.
			errs = append(errs, &ConfigError{Property: name, Value: props[name], Reason: "unknown kcompatd property"})
		default:
			warnings = append(warnings, ConfigWarning{Property: name, Reason: WarnUnknown})
		}
	}
	sort.Slice(warnings, func(i, j int) bool { return warnings[i].Property < warnings[j].Property })

	// Kafka reads any negative retention as "no limit".
	if c.LogRetentionMs < 0 {
		c.LogRetentionMs = -1
	}
	if c.LogRetentionBytes < 0 {
		c.LogRetentionBytes = -1
	}

	// Check ranges only for what parsed: a value that did not parse has
	// already been reported, and its field still holds the default.
	for _, e := range c.validate() {
		dup := false
		for _, prev := range errs {
			dup = dup || prev.Property == e.Property
		}
		if !dup {
			e.Property = givenName(&c, props, e.Property)
			e.Value = props[e.Property]
			errs = append(errs, e)
		}
	}
	return c, warnings, joinConfigErrors(errs)
}

// givenName returns the name under which the setting of primary was
// given: primary itself, or the synonym (log.retention.hours) the user
// wrote instead.
func givenName(c *Config, props map[string]string, primary string) string {
	if _, ok := props[primary]; ok {
		return primary
	}
	var field any
	for _, p := range properties {
		if p.name == primary {
			field = p.field(c)
		}
	}
	for i := len(properties) - 1; i >= 0; i-- { // the last applied synonym won
		p := properties[i]
		if _, ok := props[p.name]; ok && field != nil && p.synonym && p.field(c) == field {
			return p.name
		}
	}
	return primary
}

func joinConfigErrors(errs []*ConfigError) error {
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Property < errs[j].Property })
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// set parses v into the property's field. Kafka trims values and parses
// booleans case-insensitively.
func (p property) set(c *Config, v string) error {
	v = strings.TrimSpace(v)
	switch f := p.field(c).(type) {
	case *string:
		*f = v
	case *bool:
		switch {
		case strings.EqualFold(v, "true"):
			*f = true
		case strings.EqualFold(v, "false"):
			*f = false
		default:
			return errors.New("expected true or false")
		}
	case *int32:
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return errors.New("expected a 32-bit integer")
		}
		*f = int32(n)
	case *int64:
		if p.scale != 0 {
			// Kafka takes hours and minutes as 32-bit ints; times the
			// scale they cannot overflow 64 bits.
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return errors.New("expected a 32-bit integer")
			}
			*f = n * p.scale
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("expected a 64-bit integer")
		}
		*f = n
	case *float64:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errors.New("expected a number")
		}
		*f = n
	default:
		panic("kcompatd: property " + p.name + " has an unsupported field type")
	}
	return nil
}

// Properties returns the effective configuration by Kafka's property
// names (synonyms left out), sorted by name: what --check-config prints.
func (c *Config) Properties() [][2]string {
	var out [][2]string
	for _, p := range properties {
		if p.synonym {
			continue
		}
		var v string
		switch f := p.field(c).(type) {
		case *string:
			v = *f
		case *bool:
			v = strconv.FormatBool(*f)
		case *int32:
			v = strconv.FormatInt(int64(*f), 10)
		case *int64:
			v = strconv.FormatInt(*f, 10)
		case *float64:
			v = strconv.FormatFloat(*f, 'g', -1, 64)
		}
		out = append(out, [2]string{p.name, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Validate reports every invalid setting at once, joined (each a
// *ConfigError). New calls it.
func (c *Config) Validate() error { return joinConfigErrors(c.validate()) }

func (c *Config) validate() []*ConfigError {
	var errs []*ConfigError
	check := func(ok bool, prop, reason string) {
		if !ok {
			errs = append(errs, &ConfigError{Property: prop, Reason: reason})
		}
	}
	dirs := splitList(c.LogDirs)
	check(len(dirs) == 1, "log.dirs", "kcompatd keeps exactly one data directory")
	if _, err := c.resolveListeners(); err != nil {
		errs = append(errs, err)
	}
	check(c.NodeID >= 0, "node.id", "must be at least 0")
	check(c.NumPartitions >= 1, "num.partitions", "must be at least 1")
	check(c.DefaultReplicationFactor == 1, "default.replication.factor", "must be 1: a single broker holds one replica")
	check(c.OffsetsTopicNumPartitions >= 1, "offsets.topic.num.partitions", "must be at least 1")
	check(c.GroupInitialRebalanceDelayMs >= 0, "group.initial.rebalance.delay.ms", "must be at least 0")
	check(c.GroupMinSessionTimeoutMs >= 0, "group.min.session.timeout.ms", "must be at least 0")
	check(c.GroupMaxSessionTimeoutMs >= c.GroupMinSessionTimeoutMs, "group.max.session.timeout.ms", "must be at least group.min.session.timeout.ms")
	check(c.GroupMaxSize >= 1, "group.max.size", "must be at least 1")
	check(c.OffsetsRetentionMinutes >= 1, "offsets.retention.minutes", "must be at least 1")
	check(c.OffsetsRetentionCheckIntervalMs >= 1, "offsets.retention.check.interval.ms", "must be at least 1")
	// Kafka's TransactionStateManagerConfig / TransactionLogConfig bounds.
	check(c.TransactionMaxTimeoutMs >= 1, "transaction.max.timeout.ms", "must be at least 1")
	check(c.TransactionStateLogNumPartitions >= 1, "transaction.state.log.num.partitions", "must be at least 1")
	check(c.TransactionStateLogSegmentBytes >= 1, "transaction.state.log.segment.bytes", "must be at least 1")
	check(c.TransactionAbortTimedOutCleanupIntervalMs >= 1, "transaction.abort.timed.out.transaction.cleanup.interval.ms", "must be at least 1")
	check(c.TransactionRemoveExpiredCleanupIntervalMs >= 1, "transaction.remove.expired.transaction.cleanup.interval.ms", "must be at least 1")
	check(c.TransactionalIDExpirationMs >= 1, "transactional.id.expiration.ms", "must be at least 1")
	check(c.ProducerIDExpirationMs >= 1, "producer.id.expiration.ms", "must be at least 1")
	check(c.ProducerIDExpirationCheckIntervalMs >= 1, "producer.id.expiration.check.interval.ms", "must be at least 1")
	check(c.OffsetMetadataMaxBytes >= 0, "offset.metadata.max.bytes", "must be at least 0")
	check(c.SocketRequestMaxBytes >= 1, "socket.request.max.bytes", "must be at least 1")
	check(c.QueuedMaxRequestBytes <= 0 || c.QueuedMaxRequestBytes >= int64(c.SocketRequestMaxBytes), "queued.max.request.bytes",
		"must be at least socket.request.max.bytes, or -1 for unbounded")
	// Kafka requires failed.authentication.delay.ms (100, fixed here)
	// below a non-negative idle timeout.
	check(c.ConnectionsMaxIdleMs < 0 || c.ConnectionsMaxIdleMs > failedAuthenticationDelayMs, "connections.max.idle.ms",
		fmt.Sprintf("must be negative or greater than failed.authentication.delay.ms (%d)", failedAuthenticationDelayMs))
	check(c.MaxConnections >= 0, "max.connections", "must be at least 0")
	check(c.MaxConnectionsPerIP >= 0, "max.connections.per.ip", "must be at least 0")
	overrides, err := parseConnectionOverrides(c.MaxConnectionsPerIPOverrides)
	if err != nil {
		check(false, "max.connections.per.ip.overrides", err.Error())
	}
	check(c.MaxConnectionsPerIP != 0 || len(overrides) > 0 || err != nil, "max.connections.per.ip",
		"can be set to zero only if max.connections.per.ip.overrides is set")
	check(c.MessageMaxBytes >= 0, "message.max.bytes", "must be at least 0")
	check(c.LogSegmentBytes >= 14, "log.segment.bytes", "must be at least 14")
	check(c.LogRollMs >= 1, "log.roll.ms", "must be at least 1")
	check(c.LogIndexSizeMaxBytes >= 4, "log.index.size.max.bytes", "must be at least 4")
	check(c.LogIndexIntervalBytes >= 0, "log.index.interval.bytes", "must be at least 0")
	check(c.LogFlushIntervalMessages >= 1, "log.flush.interval.messages", "must be at least 1")
	check(c.LogFlushIntervalMs >= 0, "log.flush.interval.ms", "must be at least 0")
	// Kafka accepts 0 but then checkpoints only once; kcompatd wants a period.
	check(c.LogFlushOffsetCheckpointIntervalMs >= 1, "log.flush.offset.checkpoint.interval.ms", "must be at least 1")
	check(c.LogMessageTimestampType == "CreateTime" || c.LogMessageTimestampType == "LogAppendTime",
		"log.message.timestamp.type", "must be CreateTime or LogAppendTime")
	check(c.LogRetentionMs >= -1, "log.retention.ms", "must be at least -1")
	check(c.LogRetentionBytes >= -1, "log.retention.bytes", "must be at least -1")
	if policy, ok := normalizeCleanupPolicy(c.LogCleanupPolicy); ok {
		c.LogCleanupPolicy = policy
	} else {
		check(false, "log.cleanup.policy", "must be a comma-separated list of delete and compact")
	}
	check(c.LogCleanerDeleteRetentionMs >= 0, "log.cleaner.delete.retention.ms", "must be at least 0")
	check(c.LogCleanerMinCompactionLagMs >= 0, "log.cleaner.min.compaction.lag.ms", "must be at least 0")
	check(c.LogCleanerMaxCompactionLagMs >= 1, "log.cleaner.max.compaction.lag.ms", "must be at least 1")
	check(c.LogCleanerMinCleanableRatio >= 0 && c.LogCleanerMinCleanableRatio <= 1,
		"log.cleaner.min.cleanable.ratio", "must be between 0 and 1")
	check(c.LogSegmentDeleteDelayMs >= 0, "log.segment.delete.delay.ms", "must be at least 0")
	check(c.LogCleanerThreads >= 1, "log.cleaner.threads", "must be at least 1")
	check(c.LogCleanerBackoffMs >= 0, "log.cleaner.backoff.ms", "must be at least 0")
	// Kafka needs 1 MiB per thread in its own code path; we need room for
	// two offset-map entries per thread.
	check(c.LogCleanerDedupeBufferSize >= 48*int64(max(c.LogCleanerThreads, 1)), "log.cleaner.dedupe.buffer.size", "must leave at least 48 bytes per cleaner thread")
	check(c.LogCleanerIoMaxBytesPerSecond > 0, "log.cleaner.io.max.bytes.per.second", "must be greater than 0")
	check(c.LogRetentionCheckIntervalMs >= 1, "log.retention.check.interval.ms", "must be at least 1")
	switch c.CompressionType {
	case "producer", "uncompressed", "gzip", "snappy", "lz4", "zstd":
	default:
		check(false, "compression.type", "must be one of producer, uncompressed, gzip, snappy, lz4, zstd")
	}
	if c.KafkaVersion != "" {
		check(kversion.FromString(c.KafkaVersion) != nil, "kcompatd.kafka.version",
			`must be a Kafka release such as "3.5", "2.8.1" or "0.11.0"`)
	}
	return errs
}

// normalizeCleanupPolicy returns the policy list in the one spelling the
// storage engine takes: delete, compact or compact,delete.
func normalizeCleanupPolicy(s string) (string, bool) {
	var compact, del bool
	parts := splitList(s)
	if len(parts) == 0 {
		return "", false
	}
	for _, p := range parts {
		switch p {
		case "compact":
			compact = true
		case "delete":
			del = true
		default:
			return "", false
		}
	}
	switch {
	case compact && del:
		return "compact,delete", true
	case compact:
		return "compact", true
	default:
		return "delete", true
	}
}

// splitList splits a Kafka list value: comma-separated, blanks trimmed,
// empty items dropped.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// endpoint is one NAME://host:port of a listeners list.
type endpoint struct {
	name string
	host string // empty: every interface (bind) or the host name (advertise)
	port int
}

// parseEndpoints parses a listeners-style list, as Kafka's
// CoreUtils.listenerListToEndPoints does: NAME://host:port, IPv6 hosts in
// brackets, names unique.
func parseEndpoints(s string) ([]endpoint, error) {
	var out []endpoint
	seen := map[string]bool{}
	for _, item := range splitList(s) {
		name, hostport, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not of the form NAME://host:port", item)
		}
		host, portText, err := net.SplitHostPort(hostport)
		if err != nil {
			return nil, fmt.Errorf("%q is not of the form NAME://host:port", item)
		}
		port, err := strconv.Atoi(portText)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%q has an invalid port", item)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Errorf("listener name %s is used twice", name)
		}
		seen[name] = true
		out = append(out, endpoint{name: name, host: host, port: port})
	}
	return out, nil
}

// listenerPlan is what New needs to open and advertise the listener.
type listenerPlan struct {
	bind       *endpoint // nil when Config.Listener is set
	advertised *endpoint // nil: advertise the bound address
	skipped    []string  // controller listeners left out
}

func (c *Config) resolveListeners() (listenerPlan, *ConfigError) {
	var plan listenerPlan
	fail := func(prop, reason string) (listenerPlan, *ConfigError) {
		return listenerPlan{}, &ConfigError{Property: prop, Reason: reason}
	}
	controllers := map[string]bool{}
	for _, n := range splitList(c.ControllerListenerNames) {
		controllers[strings.ToUpper(n)] = true
	}
	protocols := map[string]string{}
	for _, item := range splitList(c.ListenerSecurityProtocolMap) {
		name, proto, ok := strings.Cut(item, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fail("listener.security.protocol.map", fmt.Sprintf("%q is not of the form NAME:PROTOCOL", item))
		}
		protocols[strings.ToUpper(strings.TrimSpace(name))] = strings.ToUpper(strings.TrimSpace(proto))
	}

	name := ""
	if c.Listener == nil {
		eps, err := parseEndpoints(c.Listeners)
		if err != nil {
			return fail("listeners", err.Error())
		}
		var client []endpoint
		for _, ep := range eps {
			if controllers[ep.name] {
				plan.skipped = append(plan.skipped, ep.name)
				continue
			}
			client = append(client, ep)
		}
		if len(client) != 1 {
			return fail("listeners", fmt.Sprintf("kcompatd serves exactly one client listener, got %d", len(client)))
		}
		ep := client[0]
		proto, ok := protocols[ep.name]
		if !ok {
			return fail("listeners", fmt.Sprintf("no security protocol for listener %s in listener.security.protocol.map", ep.name))
		}
		if proto != "PLAINTEXT" {
			return fail("listeners", fmt.Sprintf("listener %s uses %s; kcompatd supports only PLAINTEXT", ep.name, proto))
		}
		plan.bind = &ep
		name = ep.name
	}

	if strings.TrimSpace(c.AdvertisedListeners) != "" {
		eps, err := parseEndpoints(c.AdvertisedListeners)
		if err != nil {
			return fail("advertised.listeners", err.Error())
		}
		var match []endpoint
		for _, ep := range eps {
			if controllers[ep.name] {
				continue
			}
			if name == "" || ep.name == name {
				match = append(match, ep)
			}
		}
		if len(match) != 1 {
			if name == "" {
				return fail("advertised.listeners", "with an open Listener it must hold exactly one client listener")
			}
			return fail("advertised.listeners", fmt.Sprintf("no entry for listener %s", name))
		}
		ep := match[0]
		if ip := net.ParseIP(ep.host); ip != nil && ip.IsUnspecified() {
			return fail("advertised.listeners", "cannot advertise the non-routable address "+ep.host)
		}
		plan.advertised = &ep
	} else if plan.bind != nil {
		if ip := net.ParseIP(plan.bind.host); ip != nil && ip.IsUnspecified() {
			// Kafka refuses the same: clients cannot connect to 0.0.0.0.
			return fail("advertised.listeners", "must be set when listeners binds the non-routable address "+plan.bind.host)
		}
	}
	return plan, nil
}

// failedAuthenticationDelayMs is Kafka's default failed.authentication.delay.ms,
// which bounds connections.max.idle.ms from below.
const failedAuthenticationDelayMs = 100

// connectionOverride is one host:count of max.connections.per.ip.overrides.
type connectionOverride struct {
	host  string
	count int32
}

// parseConnectionOverrides parses max.connections.per.ip.overrides as
// Kafka does: comma-separated host:count, split at the last colon (so an
// IPv6 address needs no brackets), hosts of letters, digits and -%._:
// only. Kafka does not bound the count; a negative one admits nothing.
func parseConnectionOverrides(s string) ([]connectionOverride, error) {
	var out []connectionOverride
	for _, item := range splitList(s) {
		i := strings.LastIndex(item, ":")
		if i < 0 {
			return nil, fmt.Errorf("%q is not of the form host:count", item)
		}
		host, count := strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+1:])
		if host == "" || strings.Trim(host, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-%._:") != "" {
			return nil, fmt.Errorf("contains an invalid address: %q", host)
		}
		n, err := strconv.ParseInt(count, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q: the count must be a 32-bit integer", item)
		}
		out = append(out, connectionOverride{host: host, count: int32(n)})
	}
	return out, nil
}
