package kcompatd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/internal/httpguard"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol"
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
	// ControllerListenerNames are ignored; each other one is served with
	// its security protocol from ListenerSecurityProtocolMap. Unused when
	// Listener is set.
	Listeners string
	// AdvertisedListeners is what Metadata tells clients to connect to
	// (advertised.listeners, default: each listener's host and actual
	// port), per listener: a request is answered with the entry of the
	// listener it came in on; a port of 0 means the bound port.
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

	// The TLS settings of SSL and SASL_SSL listeners (Kafka's ssl.*
	// properties, each also read per listener as
	// listener.name.<listener>.ssl.*; tls.go). The store types are PEM
	// or PKCS12 (ssl.keystore.type, ssl.truststore.type, default JKS,
	// which is refused); locations are file paths; the inline PEM
	// values and the passwords are secret (PASSWORD properties).
	SSLKeystoreType             string
	SSLKeystoreLocation         string
	SSLKeystorePassword         string
	SSLKeyPassword              string
	SSLKeystoreKey              string
	SSLKeystoreCertificateChain string
	SSLTruststoreType           string
	SSLTruststoreLocation       string
	SSLTruststorePassword       string
	SSLTruststoreCertificates   string
	// SSLClientAuth is ssl.client.auth: required, requested or none
	// (default).
	SSLClientAuth string
	// SSLEnabledProtocols is ssl.enabled.protocols (default
	// TLSv1.2,TLSv1.3), SSLCipherSuites ssl.cipher.suites (default
	// empty: Go's defaults), SSLProtocol ssl.protocol (unused).
	SSLEnabledProtocols string
	SSLCipherSuites     string
	SSLProtocol         string
	// SSLPrincipalMappingRules is ssl.principal.mapping.rules (default
	// DEFAULT: the client certificate's DN).
	SSLPrincipalMappingRules string

	// The SASL settings of SASL_PLAINTEXT and SASL_SSL listeners:
	// SASLEnabledMechanisms is sasl.enabled.mechanisms (default GSSAPI,
	// which kcompatd does not serve; per listener), SASLJAASConfig
	// sasl.jaas.config (per listener and mechanism: PLAIN's users),
	// SASLServerMaxReceiveSize sasl.server.max.receive.size in bytes
	// (default 524288).
	SASLEnabledMechanisms    string
	SASLJAASConfig           string
	SASLServerMaxReceiveSize int32
	// ConnectionsMaxReauthMs is connections.max.reauth.ms (per listener
	// and mechanism): the longest a SASL session lasts before the client
	// must re-authenticate, in milliseconds (default 0: no limit).
	ConnectionsMaxReauthMs int64
	// SCRAMUsers are SCRAM credentials to create at start-up
	// (kcompatd.scram.users, kcompatd's own; default none), in
	// kafka-storage format --add-scram's syntax.
	SCRAMUsers string

	// The authorizer: AuthorizerClassName is authorizer.class.name (empty:
	// none; Kafka's StandardAuthorizer is the one accepted), SuperUsers
	// super.users (principals separated by ";"), AllowEveryoneIfNoACLFound
	// allow.everyone.if.no.acl.found (default false).
	AuthorizerClassName       string
	SuperUsers                string
	AllowEveryoneIfNoACLFound bool

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
	// ConsumerGroupSessionTimeoutMs is a KIP-848 member's session
	// timeout, in milliseconds (group.consumer.session.timeout.ms,
	// default 45000), within
	// group.consumer.min/max.session.timeout.ms (default 45000, 60000).
	ConsumerGroupSessionTimeoutMs    int32
	ConsumerGroupMinSessionTimeoutMs int32
	ConsumerGroupMaxSessionTimeoutMs int32
	// ConsumerGroupHeartbeatIntervalMs is the heartbeat interval given to
	// KIP-848 members, in milliseconds
	// (group.consumer.heartbeat.interval.ms, default 5000), within
	// group.consumer.min/max.heartbeat.interval.ms (default 5000, 15000).
	ConsumerGroupHeartbeatIntervalMs    int32
	ConsumerGroupMinHeartbeatIntervalMs int32
	ConsumerGroupMaxHeartbeatIntervalMs int32
	// ConsumerGroupMaxSize is the most members a KIP-848 group may have
	// (group.consumer.max.size, default 2147483647).
	ConsumerGroupMaxSize int32
	// StreamsGroupSessionTimeoutMs is a KIP-1071 member's session
	// timeout, in milliseconds (group.streams.session.timeout.ms, default
	// 45000), within group.streams.min/max.session.timeout.ms (45000,
	// 60000); StreamsGroupHeartbeatIntervalMs the heartbeat interval
	// given to them (group.streams.heartbeat.interval.ms, 5000), within
	// group.streams.min/max.heartbeat.interval.ms (5000, 15000).
	StreamsGroupSessionTimeoutMs       int32
	StreamsGroupMinSessionTimeoutMs    int32
	StreamsGroupMaxSessionTimeoutMs    int32
	StreamsGroupHeartbeatIntervalMs    int32
	StreamsGroupMinHeartbeatIntervalMs int32
	StreamsGroupMaxHeartbeatIntervalMs int32
	// StreamsGroupNumStandbyReplicas is the standby replicas per task
	// (group.streams.num.standby.replicas, default 0), at most
	// group.streams.max.standby.replicas (2).
	StreamsGroupNumStandbyReplicas int32
	StreamsGroupMaxStandbyReplicas int32
	// StreamsGroupMaxSize is the most members a streams group may have
	// (group.streams.max.size, default 2147483647).
	StreamsGroupMaxSize int32
	// StreamsGroupInitialRebalanceDelayMs delays a new streams group's
	// first assignment (group.streams.initial.rebalance.delay.ms,
	// default 3000).
	StreamsGroupInitialRebalanceDelayMs int32
	// ConsumerGroupAssignors are the server-side assignors, the first the
	// default (group.consumer.assignors, a list; default uniform,range).
	ConsumerGroupAssignors string
	// ConsumerGroupMigrationPolicy is which online conversions between
	// classic and consumer groups with members are allowed
	// (group.consumer.migration.policy: bidirectional, the default,
	// upgrade, downgrade or disabled).
	ConsumerGroupMigrationPolicy string
	// Share groups (KIP-932), group.share.*: see shareProperties.
	ShareGroupSessionTimeoutMs, ShareGroupMinSessionTimeoutMs, ShareGroupMaxSessionTimeoutMs                      int32
	ShareGroupHeartbeatIntervalMs, ShareGroupMinHeartbeatIntervalMs, ShareGroupMaxHeartbeatIntervalMs             int32
	ShareGroupMaxSize                                                                                             int32
	ShareGroupRecordLockDurationMs, ShareGroupMinRecordLockDurationMs, ShareGroupMaxRecordLockDurationMs          int32
	ShareGroupDeliveryCountLimit, ShareGroupMinDeliveryCountLimit, ShareGroupMaxDeliveryCountLimit                int32
	ShareGroupPartitionMaxRecordLocks, ShareGroupMinPartitionMaxRecordLocks, ShareGroupMaxPartitionMaxRecordLocks int32
	ShareGroupMaxShareSessions                                                                                    int32
	// GroupCoordinatorRebalanceProtocols are the group protocols served
	// (group.coordinator.rebalance.protocols, a list; default
	// classic,consumer,streams as Kafka 4.3; classic is required).
	// Without consumer, KIP-848's ConsumerGroupHeartbeat and
	// ConsumerGroupDescribe answer UNSUPPORTED_VERSION; without streams,
	// streams groups are refused the same way. Share groups follow
	// share.version, as in Kafka.
	GroupCoordinatorRebalanceProtocols string
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
	// ShareCoordinatorStateTopicNumPartitions and
	// ShareCoordinatorStateTopicSegmentBytes are the partition count and
	// segment.bytes of __share_group_state
	// (share.coordinator.state.topic.num.partitions, default 50;
	// share.coordinator.state.topic.segment.bytes, default 104857600).
	ShareCoordinatorStateTopicNumPartitions int32
	ShareCoordinatorStateTopicSegmentBytes  int32
	// ShareCoordinatorStateTopicCompressionCodec is the codec id of the
	// share coordinator's batches
	// (share.coordinator.state.topic.compression.codec, default 0: none).
	ShareCoordinatorStateTopicCompressionCodec int32
	// ShareCoordinatorSnapshotUpdateRecordsPerSnapshot is how many
	// ShareUpdate records a share-partition gets between two
	// ShareSnapshots
	// (share.coordinator.snapshot.update.records.per.snapshot, default
	// 500, 0 to 500).
	ShareCoordinatorSnapshotUpdateRecordsPerSnapshot int32
	// ShareCoordinatorLoadBufferSize is the bytes of one read when
	// loading __share_group_state (share.coordinator.load.buffer.size,
	// default 5242880).
	ShareCoordinatorLoadBufferSize int32
	// ShareCoordinatorStateTopicPruneIntervalMs and
	// ShareCoordinatorColdPartitionSnapshotIntervalMs, in milliseconds,
	// space the share coordinator's pruning and cold-partition snapshots
	// (share.coordinator.state.topic.prune.interval.ms,
	// share.coordinator.cold.partition.snapshot.interval.ms, default
	// 300000 each).
	ShareCoordinatorStateTopicPruneIntervalMs       int32
	ShareCoordinatorColdPartitionSnapshotIntervalMs int32
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
	// LogDefaults are the broker properties that give topic configs
	// their defaults (log.segment.bytes, log.retention.ms,
	// message.max.bytes, compression.type, ...: partition's topic config
	// catalog lists them), by property name, as a properties file gives
	// them; nil or missing entries: Kafka's defaults. ParseConfig leaves
	// each under the name its setting goes by, in the topic config's unit
	// (log.retention.hours=2 becomes log.retention.ms=7200000).
	LogDefaults map[string]string
	// LogFlushOffsetCheckpointIntervalMs is how often the recovery-point
	// and log-start-offset checkpoints are written, in milliseconds
	// (log.flush.offset.checkpoint.interval.ms, default 60000; at least
	// 1, where Kafka takes 0 to mean once).
	LogFlushOffsetCheckpointIntervalMs int32
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

	// ListenerProperties are the listener.name.<listener>.<property>
	// overrides of per-listener properties, by their full names, as a
	// properties file gives them (listenerConfig applies them).
	ListenerProperties map[string]string

	// KafkaVersion caps the API versions the broker advertises and
	// serves at those of a Kafka release, such as "3.5" or "2.8.1"
	// (kcompatd.kafka.version, kcompatd's own; default empty: every
	// version kcompatd implements). It lets a client be tested against
	// the protocol an older Kafka spoke.
	KafkaVersion string
	// LogOpenSegmentsMax bounds the idle inactive segments whose files
	// (.log, .index, .timeindex: three descriptors each) stay open
	// (kcompatd.log.open.segments.max, kcompatd's own; default 128).
	// Kafka keeps every segment's .log open; kcompatd opens inactive
	// segments on demand and closes the least recently used past this.
	LogOpenSegmentsMax int32
	// LogInternalSegmentBytes is, where not 0, the segment size every
	// topic without its own internal.segment.bytes rolls at, in place of
	// segment.bytes (kcompatd.log.internal.segment.bytes, kcompatd's own,
	// for tests; default 0). Kafka 4 bounds log.segment.bytes below by
	// 1 MiB and has no broker-wide form of its test-only
	// internal.segment.bytes; make compat rolls small segments with this.
	LogInternalSegmentBytes int32

	// CreateTopics lists topics to create at start-up, before the broker
	// serves, if they are missing (kcompatd.create.topics, kcompatd's own;
	// default empty): name:partitions[:key=value;key=value...] entries,
	// comma-separated. The --create-topic flag adds one entry.
	CreateTopics string

	// AdminListener is the loopback host:port of the admin HTTP listener:
	// /healthz, /readyz and the fault-injection rules at /faults
	// (kcompatd.metrics.listener, kcompatd's own; default empty: off).
	AdminListener string

	// Clock is the time source (nil: the wall clock). Not a property.
	Clock clock.Clock
}

// DefaultConfig returns the defaults of the property catalog: Kafka's,
// with kcompatd's data dir and listener defaults.
func DefaultConfig() Config {
	var c Config
	for _, p := range properties {
		if err := p.set(&c, p.Default); err != nil {
			panic("kcompatd: default of " + p.Name + ": " + err.Error())
		}
	}
	return c
}

// ConfigError is one invalid setting.
type ConfigError struct {
	Property string // Kafka's name for the setting
	Value    string // as given; empty for a struct field set in Go
	Reason   string
}

func (e *ConfigError) Error() string {
	if e.Property == "" {
		return "kcompatd: " + e.Reason
	}
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
	// WarnNoSuchListener: a listener.name.<l>.* override whose <l> names
	// no configured listener (Kafka ignores it silently; a typo there
	// would leave, say, client authentication off without a word).
	WarnNoSuchListener = "ignoring override for a listener that listeners does not name"
)

// property is one broker property of the root Config: its definition
// (name, type, default, range, Kafka's documentation) and the field it
// sets. The broker properties that give topic configs their defaults are
// partition's (partition.BrokerLogConfigs) and land in Config.LogDefaults.
type property struct {
	configdef.Def
	// field returns a pointer to the field: *string for STRING, *bool
	// for BOOLEAN, *int32 for INT, *int64 for LONG, *float64 for DOUBLE.
	field func(c *Config) any
	// synonyms are older names of the property (log.dir for log.dirs),
	// which set it when the property itself is not given.
	synonyms []string
	// check is a rule beyond the range, usually across fields: the reason
	// the value is invalid, or "".
	check func(c *Config) string
	// perListener: Kafka reads it per listener, so that
	// listener.name.<listener>.<name> overrides it for that listener
	// (listenerConfig); perMechanism: also per SASL mechanism,
	// listener.name.<listener>.<mechanism>.<name>.
	perListener, perMechanism bool
	// note is kcompatd's one-line description, and defaultNote the
	// default as README words it where the value alone does not say it.
	note, defaultNote string
}

// properties is the broker's property catalog, in README's order.
var properties = []property{
	{
		Def: configdef.Def{Name: "log.dirs", Type: configdef.String, Default: "/tmp/kcompatd-logs", NullDefault: true,
			Doc: "A comma-separated list of the directories where the log data is stored. If not set, the value in log.dir is used."},
		field:       func(c *Config) any { return &c.LogDirs },
		synonyms:    []string{"log.dir"},
		check:       checkLogDirs,
		defaultNote: "`/tmp/kcompatd-logs` (Kafka: `/tmp/kafka-logs`)",
		note:        "the data directory; exactly one",
	},
	{
		Def: configdef.Def{Name: nameListeners, Type: configdef.String, Default: "PLAINTEXT://localhost:9092",
			Doc: "Listener List - Comma-separated list of URIs we will listen on and the listener names."},
		field:       func(c *Config) any { return &c.Listeners },
		defaultNote: "`PLAINTEXT://localhost:9092` (Kafka: `PLAINTEXT://:9092`)",
		note:        "`NAME://host:port,...`; an empty host binds every interface, a host name each address it resolves to (`localhost`: 127.0.0.1 and ::1, so clients that try ::1 first connect too), port 0 a free port. Each listener's security protocol comes from `listener.security.protocol.map`; `listener.name.<name>.<property>` overrides a per-listener property for that listener",
	},
	{
		Def: configdef.Def{Name: nameAdvertisedListeners, Type: configdef.String, NullDefault: true,
			Doc: "Listeners to publish to ZooKeeper for clients to use, if different than the listeners config property."},
		field:       func(c *Config) any { return &c.AdvertisedListeners },
		defaultNote: "the bound listener",
		note:        "what Metadata, DescribeCluster and FindCoordinator tell a client, for the listener its request came in on; port 0 means the bound port; a listener without an entry advertises its bound address (an empty host: the machine's host name); `0.0.0.0` is refused, as in Kafka",
	},
	{
		Def: configdef.Def{Name: nameProtocolMap, Type: configdef.String, Default: "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
			Doc: "Map between listener names and security protocols."},
		field: func(c *Config) any { return &c.ListenerSecurityProtocolMap },
		note:  "listener name to PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
	},
	{
		Def: configdef.Def{Name: "controller.listener.names", Type: configdef.String, NullDefault: true,
			Doc: "A comma-separated list of the names of the listeners used by the controller."},
		field: func(c *Config) any { return &c.ControllerListenerNames },
		note:  "KRaft controller listeners: skipped (logged), so a combined-mode `server.properties` works",
	},
	{
		Def: configdef.Def{Name: "ssl.keystore.type", Type: configdef.String, Default: "JKS",
			Doc: "The file format of the key store file. This is optional for client. The values currently supported by the default `ssl.engine.factory.class` are [JKS, PKCS12, PEM]."},
		field:       func(c *Config) any { return &c.SSLKeystoreType },
		perListener: true,
		note:        "PEM or PKCS12 (JKS is refused: convert it with `keytool -importkeystore -deststoretype PKCS12`)",
	},
	{
		Def: configdef.Def{Name: "ssl.keystore.location", Type: configdef.String, NullDefault: true,
			Doc: "The location of the key store file. This is optional for client and can be used for two-way authentication for client."},
		field:       func(c *Config) any { return &c.SSLKeystoreLocation },
		perListener: true,
		note:        "PEM: the private key and the certificate chain in one file; PKCS12: the store",
	},
	{
		Def: configdef.Def{Name: "ssl.keystore.password", Type: configdef.Password, NullDefault: true,
			Doc: "The store password for the key store file. This is optional for client and only needed if 'ssl.keystore.location' is configured. Key store password is not supported for PEM format."},
		field:       func(c *Config) any { return &c.SSLKeystorePassword },
		perListener: true,
		note:        "PKCS12 only",
	},
	{
		Def: configdef.Def{Name: "ssl.key.password", Type: configdef.Password, NullDefault: true,
			Doc: "The password of the private key in the key store file or the PEM key specified in 'ssl.keystore.key'."},
		field:       func(c *Config) any { return &c.SSLKeyPassword },
		perListener: true,
		note:        "decrypts an encrypted PKCS#8 PEM key (PBES2: PBKDF2 with AES or 3DES, what OpenSSL writes); a PKCS12 key is decrypted with the store password",
	},
	{
		Def: configdef.Def{Name: "ssl.keystore.key", Type: configdef.Password, NullDefault: true,
			Doc: "Private key in the format specified by 'ssl.keystore.type'. Default SSL engine factory supports only PEM format with PKCS#8 keys. If the key is encrypted, key password must be specified using 'ssl.key.password'"},
		field:       func(c *Config) any { return &c.SSLKeystoreKey },
		perListener: true,
		note:        "inline PEM private key, with `ssl.keystore.certificate.chain`",
	},
	{
		Def: configdef.Def{Name: "ssl.keystore.certificate.chain", Type: configdef.Password, NullDefault: true,
			Doc: "Certificate chain in the format specified by 'ssl.keystore.type'. Default SSL engine factory supports only PEM format with a list of X.509 certificates"},
		field:       func(c *Config) any { return &c.SSLKeystoreCertificateChain },
		perListener: true,
		note:        "inline PEM certificates, leaf first",
	},
	{
		Def: configdef.Def{Name: "ssl.truststore.type", Type: configdef.String, Default: "JKS",
			Doc: "The file format of the trust store file. The values currently supported by the default `ssl.engine.factory.class` are [JKS, PKCS12, PEM]."},
		field:       func(c *Config) any { return &c.SSLTruststoreType },
		perListener: true,
		note:        "PEM or PKCS12 (JKS is refused)",
	},
	{
		Def: configdef.Def{Name: "ssl.truststore.location", Type: configdef.String, NullDefault: true,
			Doc: "The location of the trust store file."},
		field:       func(c *Config) any { return &c.SSLTruststoreLocation },
		perListener: true,
		note:        "the CA certificates that verify client certificates",
	},
	{
		Def: configdef.Def{Name: "ssl.truststore.password", Type: configdef.Password, NullDefault: true,
			Doc: "The password for the trust store file. If a password is not set, trust store file configured will still be used, but integrity checking is disabled. Trust store password is not supported for PEM format."},
		field:       func(c *Config) any { return &c.SSLTruststorePassword },
		perListener: true,
		note:        "PKCS12 only",
	},
	{
		Def: configdef.Def{Name: "ssl.truststore.certificates", Type: configdef.Password, NullDefault: true,
			Doc: "Trusted certificates in the format specified by 'ssl.truststore.type'. Default SSL engine factory supports only PEM format with X.509 certificates."},
		field:       func(c *Config) any { return &c.SSLTruststoreCertificates },
		perListener: true,
		note:        "inline PEM CA certificates",
	},
	{
		Def: configdef.Def{Name: "ssl.client.auth", Type: configdef.String, Default: "none", OneOf: []string{"required", "requested", "none"},
			Doc: "Configures kafka broker to request client authentication. The following settings are common:  <ul> <li><code>ssl.client.auth=required</code> If set to required client authentication is required. <li><code>ssl.client.auth=requested</code> This means client authentication is optional. unlike required, if this option is set client can choose not to provide authentication information about itself <li><code>ssl.client.auth=none</code> This means client authentication is not needed.</ul>"},
		field:       func(c *Config) any { return &c.SSLClientAuth },
		perListener: true,
		note:        "`required`, `requested` or `none`; a verified client certificate makes the principal `User:<DN>`, none `User:ANONYMOUS`; on SASL_SSL only `listener.name.<l>.ssl.client.auth` applies (KIP-684)",
	},
	{
		Def: configdef.Def{Name: "ssl.enabled.protocols", Type: configdef.List, Default: "TLSv1.2,TLSv1.3",
			Doc: "The list of protocols enabled for SSL connections. The default is 'TLSv1.2,TLSv1.3' when running with Java 11 or newer, 'TLSv1.2' otherwise. With the default value for Java 11, clients and servers will prefer TLSv1.3 if both support it and fallback to TLSv1.2 otherwise (assuming both support at least TLSv1.2). This default should be fine for most cases. Also see the config documentation for `ssl.protocol`."},
		field:       func(c *Config) any { return &c.SSLEnabledProtocols },
		perListener: true,
		note:        "TLSv1 to TLSv1.3; Go serves a contiguous range, so a list that skips a version is refused",
	},
	{
		Def: configdef.Def{Name: "ssl.cipher.suites", Type: configdef.List, Default: "",
			Doc: "A list of cipher suites. This is a named combination of authentication, encryption, MAC and key exchange algorithm used to negotiate the security settings for a network connection using TLS or SSL network protocol. By default all the available cipher suites are supported."},
		field:       func(c *Config) any { return &c.SSLCipherSuites },
		perListener: true,
		note:        "IANA names; limits TLS 1.2 and older (Go does not let TLS 1.3 suites be chosen: they are accepted, and a list without one turns TLS 1.3 off)",
	},
	{
		Def: configdef.Def{Name: "ssl.protocol", Type: configdef.String, Default: "TLSv1.3",
			Doc: "The SSL protocol used to generate the SSLContext. The default is 'TLSv1.3' when running with Java 11 or newer, 'TLSv1.2' otherwise. This value should be fine for most use cases. Allowed values in recent JVMs are 'TLSv1.2' and 'TLSv1.3'. 'TLS', 'TLSv1.1', 'SSL', 'SSLv2' and 'SSLv3' may be supported in older JVMs, but their usage is discouraged due to known security vulnerabilities. With the default value for this config and 'ssl.enabled.protocols', clients will downgrade to 'TLSv1.2' if the server does not support 'TLSv1.3'. If this config is set to 'TLSv1.2', clients will not use 'TLSv1.3' even if it is one of the values in ssl.enabled.protocols and the server only supports 'TLSv1.3'."},
		field:       func(c *Config) any { return &c.SSLProtocol },
		perListener: true,
		note:        "accepted and unused: a Go server negotiates within `ssl.enabled.protocols`",
	},
	{
		Def: configdef.Def{Name: "ssl.principal.mapping.rules", Type: configdef.String, Default: "DEFAULT", Check: checkPrincipalRules,
			Doc: "A list of rules for mapping from distinguished name from the client certificate to short name. The rules are evaluated in order and the first rule that matches a principal name is used to map it to a short name. Any later rules in the list are ignored. By default, distinguished name of the X.500 certificate will be the principal. For more details on the format please see <a href=\"#security_authz\"> security authorization and acls</a>. Note that this configuration is ignored if an extension of KafkaPrincipalBuilder is provided by the <code>principal.builder.class</code> configuration."},
		field:       func(c *Config) any { return &c.SSLPrincipalMappingRules },
		perListener: true,
		note:        "`RULE:pattern/replacement/` (then `L` or `U` to change the case) and `DEFAULT`, comma-separated, as Kafka's; patterns are Go (RE2) regular expressions",
	},
	{
		Def: configdef.Def{Name: "sasl.enabled.mechanisms", Type: configdef.List, Default: "GSSAPI",
			Doc: "The list of SASL mechanisms enabled in the Kafka server. The list may contain any mechanism for which a security provider is available. Only GSSAPI is enabled by default."},
		field:       func(c *Config) any { return &c.SASLEnabledMechanisms },
		perListener: true,
		note:        "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (with Kafka's unsecured JWS validator; GSSAPI, the default, is refused on a SASL listener)",
	},
	{
		Def: configdef.Def{Name: "sasl.jaas.config", Type: configdef.Password, NullDefault: true,
			Doc: "JAAS login context parameters for SASL connections in the format used by JAAS configuration files. JAAS configuration file format is described <a href=\"https://docs.oracle.com/javase/8/docs/technotes/guides/security/jgss/tutorials/LoginConfigFile.html\">here</a>. The format for the value is: <code>loginModuleClass controlFlag (optionName=optionValue)*;</code>. For brokers, the config must be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=com.example.ScramLoginModule required;"},
		field:        func(c *Config) any { return &c.SASLJAASConfig },
		perListener:  true,
		perMechanism: true,
		note:         "`listener.name.<l>.plain.sasl.jaas.config=...PlainLoginModule required user_alice=\"alice-secret\";` names PLAIN's users; `listener.name.<l>.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;` enables OAUTHBEARER, with the unsecured validator's options `unsecuredValidatorPrincipalClaimName`, `unsecuredValidatorScopeClaimName`, `unsecuredValidatorRequiredScope`, `unsecuredValidatorAllowableClockSkewMs` (Kafka's broker also logs in with a token of its own and so needs `unsecuredLoginStringClaim_sub=\"admin\"` there; kcompatd ignores it); kcompatd also reads it unprefixed or with only the listener prefix (Kafka ignores those on a broker)",
	},
	{
		Def: configdef.Def{Name: "connections.max.reauth.ms", Type: configdef.Long, Default: "0",
			Doc: "When explicitly set to a positive number (the default is 0, not a positive number), a session lifetime that will not exceed the configured value will be communicated to v2.2.0 or later clients when they authenticate. The broker will disconnect any such connection that is not re-authenticated within the session lifetime and that is then subsequently used for any purpose other than re-authentication. Configuration names can optionally be prefixed with listener prefix and SASL mechanism name in lower-case. For example, listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms=3600000"},
		field:        func(c *Config) any { return &c.ConnectionsMaxReauthMs },
		perListener:  true,
		perMechanism: true,
		note:         "a SASL session's longest lifetime, ms (an OAUTHBEARER token's `exp` may end it sooner), told in SaslAuthenticate's SessionLifetimeMs; a client re-authenticates on the connection within it (KIP-368), and one that does not is closed at its next request; 0 or less: no limit",
	},
	{
		Def: configdef.Def{Name: "sasl.server.max.receive.size", Type: configdef.Int, Default: "524288", Range: configdef.AtLeast(1),
			Doc: "The maximum receive size allowed before and during initial SASL authentication. Default receive size is 512KB. GSSAPI limits requests to 64K, but we allow upto 512KB by default for custom SASL mechanisms. In practice, PLAIN, SCRAM and OAUTH mechanisms can use much smaller limits."},
		field: func(c *Config) any { return &c.SASLServerMaxReceiveSize },
		note:  "a larger frame before authentication closes the connection",
	},
	{
		Def: configdef.Def{Name: "kcompatd.scram.users", Type: configdef.Password, NullDefault: true, Check: checkScramUsers,
			Doc: "kcompatd's own: SCRAM credentials to create at start-up, as kafka-storage format --add-scram takes them: MECHANISM=[name=NAME,password=PASSWORD[,iterations=N]],..."},
		field: func(c *Config) any { return &c.SCRAMUsers },
		note:  "e.g. `SCRAM-SHA-256=[name=alice,password=alice-secret],SCRAM-SHA-512=[name=bob,password=bob-secret,iterations=8192]`: stored salted in the data dir at start-up (kept as they are when the password still matches); the users then authenticate on SASL listeners with SCRAM",
	},
	{
		Def: configdef.Def{Name: "authorizer.class.name", Type: configdef.String, Default: "", Check: checkAuthorizerClass,
			Doc: "The fully qualified name of a class that implements <code>org.apache.kafka.server.authorizer.Authorizer</code> interface, which is used by the broker for authorization."},
		field: func(c *Config) any { return &c.AuthorizerClassName },
		note:  "`" + standardAuthorizer + "` turns ACLs on (StandardAuthorizer's rules, ACLs kept in the data dir); empty: no authorizer, everything allowed",
	},
	{
		Def: configdef.Def{Name: "super.users", Type: configdef.String, Default: "",
			Doc: "A list of principals, separated by semicolons, that are allowed every operation whatever the ACLs say (StandardAuthorizer)."},
		field: func(c *Config) any { return &c.SuperUsers },
		note:  "e.g. `User:admin;User:ANONYMOUS`",
	},
	{
		Def: configdef.Def{Name: "allow.everyone.if.no.acl.found", Type: configdef.Boolean, Default: "false",
			Doc: "Whether a resource that no ACL applies to is open to every principal (StandardAuthorizer); by default it is open to none but super users."},
		field: func(c *Config) any { return &c.AllowEveryoneIfNoACLFound },
		note:  "with ACLs that apply to a resource but none matching, the answer is still DENIED",
	},
	{
		Def: configdef.Def{Name: "node.id", Type: configdef.Int, Default: "1", Range: configdef.AtLeast(0),
			Doc: "The node ID associated with the roles this process is playing when process.roles is non-empty."},
		field:       func(c *Config) any { return &c.NodeID },
		synonyms:    []string{"broker.id"},
		defaultNote: "`1` (Kafka requires one)",
		note:        "the broker id in Metadata; at least 0",
	},
	{
		Def: configdef.Def{Name: "broker.rack", Type: configdef.String, NullDefault: true,
			Doc: "Rack of the broker. This will be used in rack aware replication assignment for fault tolerance."},
		field: func(c *Config) any { return &c.BrokerRack },
		note:  "the rack Metadata reports",
	},
	{
		Def: configdef.Def{Name: "num.partitions", Type: configdef.Int, Default: "1", Range: configdef.AtLeast(1),
			Doc: "The default number of log partitions per topic"},
		field: func(c *Config) any { return &c.NumPartitions },
		note:  "partitions of auto-created topics and of CreateTopics with -1",
	},
	{
		Def: configdef.Def{Name: "auto.create.topics.enable", Type: configdef.Boolean, Default: "true",
			Doc: "Enable auto creation of topic on the server."},
		field: func(c *Config) any { return &c.AutoCreateTopicsEnable },
		note:  "create unknown topics that a Metadata request names (as Kafka, Produce alone does not create them)",
	},
	{
		Def: configdef.Def{Name: "delete.topic.enable", Type: configdef.Boolean, Default: "true",
			Doc: "Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off"},
		field: func(c *Config) any { return &c.DeleteTopicEnable },
		note:  "allow DeleteTopics",
	},
	{
		Def: configdef.Def{Name: "default.replication.factor", Type: configdef.Int, Default: "1",
			Doc: "The replication factor for automatically created topics, and for topics created with -1 as the replication factor"},
		field: func(c *Config) any { return &c.DefaultReplicationFactor },
		check: checkReplicationFactor,
		note:  "one broker holds one replica: 1 is the only valid value",
	},
	{
		Def: configdef.Def{Name: "offsets.topic.num.partitions", Type: configdef.Int, Default: "50", Range: configdef.AtLeast(1),
			Doc: "The number of partitions for the offset commit topic (should not change after deployment)."},
		field: func(c *Config) any { return &c.OffsetsTopicNumPartitions },
		note:  "partitions of `__consumer_offsets`, created (compacted) on the first FindCoordinator for a group",
	},
	{
		Def: configdef.Def{Name: "group.initial.rebalance.delay.ms", Type: configdef.Int, Default: "3000", Range: configdef.AtLeast(0),
			Doc: "The amount of time the group coordinator will wait for more consumers to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances, but increases the time until processing begins."},
		field: func(c *Config) any { return &c.GroupInitialRebalanceDelayMs },
		note:  "ms a new group waits for members before its first rebalance",
	},
	{
		Def: configdef.Def{Name: "group.min.session.timeout.ms", Type: configdef.Int, Default: "6000", Range: configdef.AtLeast(0),
			Doc: "The minimum allowed session timeout for registered consumers. Shorter timeouts result in quicker failure detection at the cost of more frequent consumer heartbeating, which can overwhelm broker resources."},
		field: func(c *Config) any { return &c.GroupMinSessionTimeoutMs },
		note:  "shortest member session timeout accepted, ms",
	},
	{
		Def: configdef.Def{Name: "group.max.session.timeout.ms", Type: configdef.Int, Default: "1800000",
			Doc: "The maximum allowed session timeout for registered consumers. Longer timeouts give consumers more time to process messages in between heartbeats at the cost of a longer time to detect failures."},
		field: func(c *Config) any { return &c.GroupMaxSessionTimeoutMs },
		check: checkMaxSessionTimeout,
		note:  "longest member session timeout accepted, ms",
	},
	{
		Def: configdef.Def{Name: "group.max.size", Type: configdef.Int, Default: "2147483647", Range: configdef.AtLeast(1),
			Doc: "The maximum number of consumers that a single consumer group can accommodate."},
		field: func(c *Config) any { return &c.GroupMaxSize },
		note:  "most members in one group",
	},
	{
		Def: configdef.Def{Name: "group.consumer.session.timeout.ms", Type: configdef.Int, Default: "45000", Range: configdef.AtLeast(1),
			Doc: "The timeout to detect client failures when using the consumer group protocol."},
		field: func(c *Config) any { return &c.ConsumerGroupSessionTimeoutMs },
		check: checkConsumerSessionTimeout,
		note:  "session timeout of KIP-848 members, ms",
	},
	{
		Def: configdef.Def{Name: "group.consumer.min.session.timeout.ms", Type: configdef.Int, Default: "45000", Range: configdef.AtLeast(1),
			Doc: "The minimum allowed session timeout for registered consumers."},
		field: func(c *Config) any { return &c.ConsumerGroupMinSessionTimeoutMs },
		note:  "lower bound of group.consumer.session.timeout.ms",
	},
	{
		Def: configdef.Def{Name: "group.consumer.max.session.timeout.ms", Type: configdef.Int, Default: "60000", Range: configdef.AtLeast(1),
			Doc: "The maximum allowed session timeout for registered consumers."},
		field: func(c *Config) any { return &c.ConsumerGroupMaxSessionTimeoutMs },
		check: checkConsumerMaxSessionTimeout,
		note:  "upper bound of group.consumer.session.timeout.ms",
	},
	{
		Def: configdef.Def{Name: "group.consumer.heartbeat.interval.ms", Type: configdef.Int, Default: "5000", Range: configdef.AtLeast(1),
			Doc: "The heartbeat interval given to the members of a consumer group."},
		field: func(c *Config) any { return &c.ConsumerGroupHeartbeatIntervalMs },
		check: checkConsumerHeartbeatInterval,
		note:  "heartbeat interval told to KIP-848 members, ms",
	},
	{
		Def: configdef.Def{Name: "group.consumer.min.heartbeat.interval.ms", Type: configdef.Int, Default: "5000", Range: configdef.AtLeast(1),
			Doc: "The minimum heartbeat interval for registered consumers."},
		field: func(c *Config) any { return &c.ConsumerGroupMinHeartbeatIntervalMs },
		note:  "lower bound of group.consumer.heartbeat.interval.ms",
	},
	{
		Def: configdef.Def{Name: "group.consumer.max.heartbeat.interval.ms", Type: configdef.Int, Default: "15000", Range: configdef.AtLeast(1),
			Doc: "The maximum heartbeat interval for registered consumers."},
		field: func(c *Config) any { return &c.ConsumerGroupMaxHeartbeatIntervalMs },
		check: checkConsumerMaxHeartbeatInterval,
		note:  "upper bound of group.consumer.heartbeat.interval.ms",
	},
	{
		Def: configdef.Def{Name: "group.consumer.max.size", Type: configdef.Int, Default: "2147483647", Range: configdef.AtLeast(1),
			Doc: "The maximum number of consumers that a single consumer group can accommodate. This value will only impact groups under the CONSUMER group protocol. To configure the max group size when using the CLASSIC group protocol use group.max.size instead."},
		field: func(c *Config) any { return &c.ConsumerGroupMaxSize },
		note:  "most members in one KIP-848 group",
	},
	{
		Def: configdef.Def{Name: "group.streams.session.timeout.ms", Type: configdef.Int, Default: "45000", Range: configdef.AtLeast(1),
			Doc: "The timeout to detect client failures when using the streams group protocol."},
		field: func(c *Config) any { return &c.StreamsGroupSessionTimeoutMs },
		check: checkStreamsSessionTimeout,
		note:  "session timeout of KIP-1071 streams members, ms",
	},
	{
		Def: configdef.Def{Name: "group.streams.min.session.timeout.ms", Type: configdef.Int, Default: "45000", Range: configdef.AtLeast(1),
			Doc: "The minimum allowed value for the group-level configuration of streams.session.timeout.ms"},
		field: func(c *Config) any { return &c.StreamsGroupMinSessionTimeoutMs },
		note:  "lower bound of group.streams.session.timeout.ms",
	},
	{
		Def: configdef.Def{Name: "group.streams.max.session.timeout.ms", Type: configdef.Int, Default: "60000", Range: configdef.AtLeast(1),
			Doc: "The maximum allowed value for the group-level configuration of streams.session.timeout.ms"},
		field: func(c *Config) any { return &c.StreamsGroupMaxSessionTimeoutMs },
		note:  "upper bound of group.streams.session.timeout.ms",
	},
	{
		Def: configdef.Def{Name: "group.streams.heartbeat.interval.ms", Type: configdef.Int, Default: "5000", Range: configdef.AtLeast(1),
			Doc: "The heartbeat interval given to the members."},
		field: func(c *Config) any { return &c.StreamsGroupHeartbeatIntervalMs },
		check: checkStreamsHeartbeatInterval,
		note:  "heartbeat interval told to KIP-1071 streams members, ms",
	},
	{
		Def: configdef.Def{Name: "group.streams.min.heartbeat.interval.ms", Type: configdef.Int, Default: "5000", Range: configdef.AtLeast(1),
			Doc: "The minimum allowed value for the group-level configuration of streams.heartbeat.interval.ms"},
		field: func(c *Config) any { return &c.StreamsGroupMinHeartbeatIntervalMs },
		note:  "lower bound of group.streams.heartbeat.interval.ms",
	},
	{
		Def: configdef.Def{Name: "group.streams.max.heartbeat.interval.ms", Type: configdef.Int, Default: "15000", Range: configdef.AtLeast(1),
			Doc: "The maximum allowed value for the group-level configuration of streams.heartbeat.interval.ms"},
		field: func(c *Config) any { return &c.StreamsGroupMaxHeartbeatIntervalMs },
		note:  "upper bound of group.streams.heartbeat.interval.ms",
	},
	{
		Def: configdef.Def{Name: "group.streams.num.standby.replicas", Type: configdef.Int, Default: "0", Range: configdef.AtLeast(0),
			Doc: "The number of standby replicas for each task."},
		field: func(c *Config) any { return &c.StreamsGroupNumStandbyReplicas },
		check: checkStreamsStandbys,
		note:  "standby replicas per task of streams groups",
	},
	{
		Def: configdef.Def{Name: "group.streams.max.standby.replicas", Type: configdef.Int, Default: "2", Range: configdef.AtLeast(0),
			Doc: "The maximum allowed value for the group-level configuration of streams.num.standby.replicas"},
		field: func(c *Config) any { return &c.StreamsGroupMaxStandbyReplicas },
		note:  "upper bound of group.streams.num.standby.replicas",
	},
	{
		Def: configdef.Def{Name: "group.streams.max.size", Type: configdef.Int, Default: "2147483647", Range: configdef.AtLeast(1),
			Doc: "The maximum number of streams clients that a single streams group can accommodate."},
		field: func(c *Config) any { return &c.StreamsGroupMaxSize },
		note:  "most members in one streams group",
	},
	{
		Def: configdef.Def{Name: "group.streams.initial.rebalance.delay.ms", Type: configdef.Int, Default: "3000", Range: configdef.AtLeast(0),
			Doc: "The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances."},
		field: func(c *Config) any { return &c.StreamsGroupInitialRebalanceDelayMs },
		note:  "wait before a new streams group's first assignment (ASSIGNMENT_DELAYED meanwhile), ms",
	},
	{
		Def: configdef.Def{Name: "group.consumer.assignors", Type: configdef.List, Default: "uniform,range",
			OneOf: []string{coordinator.UniformAssignor, coordinator.RangeAssignor},
			Doc:   "The server side assignors as a list of either names for builtin assignors or full class names for customer assignors. The first one in the list is considered as the default assignor to be used in the case where the consumer does not specify an assignor. The supported builtin assignors are: uniform, range."},
		field: func(c *Config) any { return &c.ConsumerGroupAssignors },
		check: checkConsumerAssignors,
		note:  "server-side assignors of KIP-848 groups, the first the default; only the builtin uniform and range (no class names)",
	},
	{
		Def: configdef.Def{Name: "group.consumer.migration.policy", Type: configdef.String, Default: coordinator.MigrationBidirectional,
			OneOf: []string{coordinator.MigrationBidirectional, coordinator.MigrationUpgrade, coordinator.MigrationDowngrade, coordinator.MigrationDisabled},
			Doc:   "The config that enables converting the non-empty classic group using the consumer embedded protocol to the non-empty consumer group using the consumer group protocol and vice versa; conversions of empty groups in both directions are always enabled regardless of this policy. bidirectional: both upgrade from classic group to consumer group and downgrade from consumer group to classic group are enabled, upgrade: only upgrade from classic group to consumer group is enabled, downgrade: only downgrade from consumer group to classic group is enabled, disabled: neither upgrade nor downgrade is enabled."},
		field: func(c *Config) any { return &c.ConsumerGroupMigrationPolicy },
		note:  "KIP-848 online upgrade (classic group to consumer group) and downgrade allowed",
	},
	{
		Def: configdef.Def{Name: "group.coordinator.rebalance.protocols", Type: configdef.List, Default: "classic,consumer,streams",
			OneOf: []string{"classic", "consumer", "share", "streams"},
			Doc:   "This configuration is deprecated and will be removed in Kafka 5.0. The list of enabled rebalance protocols. In Kafka 5.0, all protocols will always be enabled and cannot be disabled via this configuration. Use feature versions (group.version, streams.version, share.version) managed by kafka-features.sh instead."},
		field: func(c *Config) any { return &c.GroupCoordinatorRebalanceProtocols },
		check: checkRebalanceProtocols,
		note:  "without consumer, KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe answer UNSUPPORTED_VERSION, without streams StreamsGroupHeartbeat and StreamsGroupDescribe do; classic is required; share groups follow share.version",
	},
	{
		Def: configdef.Def{Name: "group.share.session.timeout.ms", Type: configdef.Int, Default: "45000", Range: configdef.AtLeast(1),
			Doc: "The timeout to detect client failures when using the share group protocol."},
		field: func(c *Config) any { return &c.ShareGroupSessionTimeoutMs },
		note:  "session timeout of share group members, ms (share.session.timeout.ms overrides it per group)",
	},
	{
		Def: configdef.Def{Name: "group.share.min.session.timeout.ms", Type: configdef.Int, Default: "45000", Range: configdef.AtLeast(1),
			Doc: "The minimum allowed session timeout for share group members."},
		field: func(c *Config) any { return &c.ShareGroupMinSessionTimeoutMs },
		note:  "lower bound of share.session.timeout.ms",
	},
	{
		Def: configdef.Def{Name: "group.share.max.session.timeout.ms", Type: configdef.Int, Default: "60000", Range: configdef.AtLeast(1),
			Doc: "The maximum allowed session timeout for share group members."},
		field: func(c *Config) any { return &c.ShareGroupMaxSessionTimeoutMs },
		note:  "upper bound of share.session.timeout.ms",
	},
	{
		Def: configdef.Def{Name: "group.share.heartbeat.interval.ms", Type: configdef.Int, Default: "5000", Range: configdef.AtLeast(1),
			Doc: "The heartbeat interval given to the members of a share group."},
		field: func(c *Config) any { return &c.ShareGroupHeartbeatIntervalMs },
		note:  "heartbeat interval of share group members, ms",
	},
	{
		Def: configdef.Def{Name: "group.share.min.heartbeat.interval.ms", Type: configdef.Int, Default: "5000", Range: configdef.AtLeast(1),
			Doc: "The minimum heartbeat interval for share group members."},
		field: func(c *Config) any { return &c.ShareGroupMinHeartbeatIntervalMs },
		note:  "lower bound of share.heartbeat.interval.ms",
	},
	{
		Def: configdef.Def{Name: "group.share.max.heartbeat.interval.ms", Type: configdef.Int, Default: "15000", Range: configdef.AtLeast(1),
			Doc: "The maximum heartbeat interval for share group members."},
		field: func(c *Config) any { return &c.ShareGroupMaxHeartbeatIntervalMs },
		note:  "upper bound of share.heartbeat.interval.ms",
	},
	{
		Def: configdef.Def{Name: "group.share.max.size", Type: configdef.Int, Default: "200", Range: configdef.AtLeast(1),
			Doc: "The maximum number of members that a single share group can accommodate."},
		field: func(c *Config) any { return &c.ShareGroupMaxSize },
		note:  "most members in one share group",
	},
	{
		Def: configdef.Def{Name: "group.share.record.lock.duration.ms", Type: configdef.Int, Default: "30000", Range: configdef.AtLeast(1000),
			Doc: "The record acquisition lock duration in milliseconds for share groups."},
		field: func(c *Config) any { return &c.ShareGroupRecordLockDurationMs },
		note:  "how long an acquired record stays locked to its member, ms",
	},
	{
		Def: configdef.Def{Name: "group.share.min.record.lock.duration.ms", Type: configdef.Int, Default: "15000", Range: configdef.AtLeast(1000),
			Doc: "The record acquisition lock minimum duration in milliseconds for share groups."},
		field: func(c *Config) any { return &c.ShareGroupMinRecordLockDurationMs },
		note:  "lower bound of share.record.lock.duration.ms",
	},
	{
		Def: configdef.Def{Name: "group.share.max.record.lock.duration.ms", Type: configdef.Int, Default: "60000", Range: configdef.AtLeast(1000),
			Doc: "The record acquisition lock maximum duration in milliseconds for share groups."},
		field: func(c *Config) any { return &c.ShareGroupMaxRecordLockDurationMs },
		note:  "upper bound of share.record.lock.duration.ms",
	},
	{
		Def: configdef.Def{Name: "group.share.delivery.count.limit", Type: configdef.Int, Default: "5", Range: configdef.AtLeast(2),
			Doc: "The maximum number of delivery attempts for a record delivered to a share group."},
		field: func(c *Config) any { return &c.ShareGroupDeliveryCountLimit },
		note:  "deliveries after which a record is archived",
	},
	{
		Def: configdef.Def{Name: "group.share.min.delivery.count.limit", Type: configdef.Int, Default: "2", Range: configdef.AtLeast(2),
			Doc: "The minimum value of the delivery count limit."},
		field: func(c *Config) any { return &c.ShareGroupMinDeliveryCountLimit },
		note:  "lower bound of share.delivery.count.limit",
	},
	{
		Def: configdef.Def{Name: "group.share.max.delivery.count.limit", Type: configdef.Int, Default: "10", Range: configdef.AtLeast(2),
			Doc: "The maximum value of the delivery count limit."},
		field: func(c *Config) any { return &c.ShareGroupMaxDeliveryCountLimit },
		note:  "upper bound of share.delivery.count.limit",
	},
	{
		Def: configdef.Def{Name: "group.share.partition.max.record.locks", Type: configdef.Int, Default: "2000", Range: configdef.AtLeast(100),
			Doc: "Share-group record lock limit per share-partition."},
		field: func(c *Config) any { return &c.ShareGroupPartitionMaxRecordLocks },
		note:  "records in flight per share-partition",
	},
	{
		Def: configdef.Def{Name: "group.share.min.partition.max.record.locks", Type: configdef.Int, Default: "100", Range: configdef.AtLeast(100),
			Doc: "The minimum value of the per share-partition record lock limit."},
		field: func(c *Config) any { return &c.ShareGroupMinPartitionMaxRecordLocks },
		note:  "lower bound of share.partition.max.record.locks",
	},
	{
		Def: configdef.Def{Name: "group.share.max.partition.max.record.locks", Type: configdef.Int, Default: "4000", Range: configdef.AtLeast(100),
			Doc: "The maximum value of the per share-partition record lock limit."},
		field: func(c *Config) any { return &c.ShareGroupMaxPartitionMaxRecordLocks },
		note:  "upper bound of share.partition.max.record.locks",
	},
	{
		Def: configdef.Def{Name: "group.share.max.share.sessions", Type: configdef.Int, Default: "2000", Range: configdef.AtLeast(1),
			Doc: "The maximum number of share sessions per broker."},
		field: func(c *Config) any { return &c.ShareGroupMaxShareSessions },
		note:  "share sessions (ShareFetch) kept at once",
	},
	{
		Def: configdef.Def{Name: "offsets.retention.minutes", Type: configdef.Int, Default: "10080", Range: configdef.AtLeast(1),
			Doc: "For subscribed consumers, committed offset of a specific partition will be expired and discarded when 1) this retention period has elapsed after the consumer group loses all its consumers (i.e. becomes empty); 2) this retention period has elapsed since the last time an offset is committed for the partition and the group is no longer subscribed to the corresponding topic. For standalone consumers (using manual assignment), offsets will be expired after this retention period has elapsed since the time of last commit. Note that when a group is deleted via the delete-group request, its committed offsets will also be deleted without extra retention period; also when a topic is deleted via the delete-topic request, upon propagated metadata update any group's committed offsets for that topic will also be deleted without extra retention period."},
		field: func(c *Config) any { return &c.OffsetsRetentionMinutes },
		note:  "minutes committed offsets are kept after their group became empty (for groups that only commit: after the commit), KIP-211",
	},
	{
		Def: configdef.Def{Name: "offsets.retention.check.interval.ms", Type: configdef.Long, Default: "600000", Range: configdef.AtLeast(1),
			Doc: "Frequency at which to check for stale offsets"},
		field: func(c *Config) any { return &c.OffsetsRetentionCheckIntervalMs },
		note:  "ms between offset expiry checks",
	},
	{
		Def: configdef.Def{Name: "offset.metadata.max.bytes", Type: configdef.Int, Default: "4096", Range: configdef.AtLeast(0),
			Doc: "The maximum size for a metadata entry associated with an offset commit."},
		field: func(c *Config) any { return &c.OffsetMetadataMaxBytes },
		note:  "longest metadata of a committed offset, bytes",
	},
	{
		Def: configdef.Def{Name: "transaction.max.timeout.ms", Type: configdef.Int, Default: "900000", Range: configdef.AtLeast(1),
			Doc: "The maximum allowed timeout for transactions. If a client’s requested transaction time exceed this, then the broker will return an error in InitProducerIdRequest. This prevents a client from too large of a timeout, which can stall consumers reading from topics included in the transaction."},
		field: func(c *Config) any { return &c.TransactionMaxTimeoutMs },
		note:  "largest `transaction.timeout.ms` a producer may ask for (INVALID_TRANSACTION_TIMEOUT above)",
	},
	{
		Def: configdef.Def{Name: "transaction.state.log.num.partitions", Type: configdef.Int, Default: "50", Range: configdef.AtLeast(1),
			Doc: "The number of partitions for the transaction topic (should not change after deployment)."},
		field: func(c *Config) any { return &c.TransactionStateLogNumPartitions },
		note:  "partitions of `__transaction_state` when it is created",
	},
	{
		Def: configdef.Def{Name: "transaction.state.log.segment.bytes", Type: configdef.Int, Default: "104857600", Range: configdef.AtLeast(1),
			Doc: "The transaction topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads"},
		field: func(c *Config) any { return &c.TransactionStateLogSegmentBytes },
		note:  "`segment.bytes` of `__transaction_state`",
	},
	{
		Def: configdef.Def{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: configdef.Int, Default: "10000", Range: configdef.AtLeast(1),
			Doc: "The interval at which to rollback transactions that have timed out"},
		field: func(c *Config) any { return &c.TransactionAbortTimedOutCleanupIntervalMs },
		note:  "ms between aborts of transactions past their timeout (their producers are fenced)",
	},
	{
		Def: configdef.Def{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: configdef.Int, Default: "3600000", Range: configdef.AtLeast(1),
			Doc: "The interval at which to remove transactions that have expired due to <code>transactional.id.expiration.ms</code> passing"},
		field: func(c *Config) any { return &c.TransactionRemoveExpiredCleanupIntervalMs },
		note:  "ms between removals of expired transactional ids",
	},
	{
		Def: configdef.Def{Name: "transactional.id.expiration.ms", Type: configdef.Int, Default: "604800000", Range: configdef.AtLeast(1),
			Doc: "The time in ms that the transaction coordinator will wait without receiving any transaction status updates for the current transaction before expiring its transactional id. Transactional IDs will not expire while a the transaction is still ongoing."},
		field: func(c *Config) any { return &c.TransactionalIDExpirationMs },
		note:  "ms a transactional id with no transaction in progress is kept after its last use",
	},
	{
		Def: configdef.Def{Name: "share.coordinator.state.topic.num.partitions", Type: configdef.Int, Default: "50", Range: configdef.AtLeast(1),
			Doc: "The number of partitions for the share-group state topic (should not change after deployment)."},
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicNumPartitions },
		note:  "partitions of `__share_group_state` when it is created (on the first share-group state write)",
	},
	{
		Def: configdef.Def{Name: "share.coordinator.state.topic.segment.bytes", Type: configdef.Int, Default: "104857600", Range: configdef.AtLeast(1),
			Doc: "The log segment size for the share-group state topic."},
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicSegmentBytes },
		note:  "`segment.bytes` of `__share_group_state` (created, as Kafka does, with `cleanup.policy=delete`, `retention.ms=-1`: the share coordinator prunes it)",
	},
	{
		Def: configdef.Def{Name: "share.coordinator.state.topic.compression.codec", Type: configdef.Int, Default: "0", Range: configdef.Between(0, 4),
			Doc: "Compression codec for the share-group state topic."},
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicCompressionCodec },
		note:  "codec id of the share coordinator's batches: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd",
	},
	{
		Def: configdef.Def{Name: "share.coordinator.snapshot.update.records.per.snapshot", Type: configdef.Int, Default: "500", Range: configdef.Between(0, 500),
			Doc: "The number of update records the share coordinator writes between snapshot records."},
		field: func(c *Config) any { return &c.ShareCoordinatorSnapshotUpdateRecordsPerSnapshot },
		note:  "ShareUpdate records of a share-partition between two ShareSnapshots",
	},
	{
		Def: configdef.Def{Name: "share.coordinator.load.buffer.size", Type: configdef.Int, Default: "5242880", Range: configdef.AtLeast(1),
			Doc: "Batch size for reading from the share-group state topic when loading state information into the cache (soft-limit, overridden if records are too large)."},
		field: func(c *Config) any { return &c.ShareCoordinatorLoadBufferSize },
		note:  "bytes per read of `__share_group_state` at start-up",
	},
	{
		Def: configdef.Def{Name: "share.coordinator.state.topic.prune.interval.ms", Type: configdef.Int, Default: "300000", Range: configdef.AtLeast(1),
			Doc: "The duration in milliseconds that the share coordinator will wait between pruning eligible records in share-group state topic."},
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicPruneIntervalMs },
		note:  "ms between moves of each `__share_group_state` partition's log start offset past the records no state needs (Kafka: internal)",
	},
	{
		Def: configdef.Def{Name: "share.coordinator.cold.partition.snapshot.interval.ms", Type: configdef.Int, Default: "300000", Range: configdef.AtLeast(1),
			Doc: "The duration in milliseconds that the share coordinator will wait between force snapshotting share partitions which are not being updated."},
		field: func(c *Config) any { return &c.ShareCoordinatorColdPartitionSnapshotIntervalMs },
		note:  "ms between fresh snapshots of share-partitions whose last one is older, so pruning can pass their old records (Kafka: internal)",
	},
	{
		Def: configdef.Def{Name: "producer.id.expiration.ms", Type: configdef.Int, Default: "86400000", Range: configdef.AtLeast(1),
			Doc: "The time in ms that a topic partition leader will wait before expiring producer IDs. Producer IDs will not expire while a transaction associated to them is still ongoing. Note that producer IDs may expire sooner if the last write from the producer ID is deleted due to the topic's retention settings. Setting this value the same or higher than <code>delivery.timeout.ms</code> can help prevent expiration during retries and protect against message duplication, but the default should be reasonable for most use cases."},
		field: func(c *Config) any { return &c.ProducerIDExpirationMs },
		note:  "ms a partition keeps an idempotent producer's state (sequence numbers, for duplicate detection) after its last batch's timestamp; never while its transaction is open",
	},
	{
		Def: configdef.Def{Name: "producer.id.expiration.check.interval.ms", Type: configdef.Int, Default: "600000", Range: configdef.AtLeast(1),
			Doc: "The interval at which to remove producer IDs that have expired due to <code>producer.id.expiration.ms</code> passing."},
		field: func(c *Config) any { return &c.ProducerIDExpirationCheckIntervalMs },
		note:  "ms between removals of expired producer state",
	},
	{
		Def: configdef.Def{Name: "socket.request.max.bytes", Type: configdef.Int, Default: "104857600", Range: configdef.AtLeast(1),
			Doc: "The maximum number of bytes in a socket request"},
		field: func(c *Config) any { return &c.SocketRequestMaxBytes },
		note:  "largest request frame, bytes",
	},
	{
		Def: configdef.Def{Name: "queued.max.request.bytes", Type: configdef.Long, Default: "-1",
			Doc: "The number of queued bytes allowed before no more requests are read"},
		field: func(c *Config) any { return &c.QueuedMaxRequestBytes },
		check: checkQueuedMaxRequestBytes,
		note:  "bytes of request frames read and not yet handled, across all connections; beyond it reading waits until a request is handled (a frame is admitted while any room is left, so one frame may overshoot); zero or negative: unbounded; otherwise at least `socket.request.max.bytes`. Unlike Kafka, a connection reads one frame ahead of the request it serves, and that frame stays counted while the request waits (a Fetch long poll): set it well above `socket.request.max.bytes` times the connections that pipeline behind long polls",
	},
	{
		Def: configdef.Def{Name: "connections.max.idle.ms", Type: configdef.Long, Default: "600000",
			Doc: "Idle connections timeout: the server socket processor threads close the connections that idle more than this"},
		field: func(c *Config) any { return &c.ConnectionsMaxIdleMs },
		check: checkConnectionsMaxIdle,
		note:  "close a connection with no request in flight and no bytes received or taken by its socket from a response for this long, ms (a long-polling Fetch is not idle; see Limits); negative: never; otherwise above 100 (Kafka's `failed.authentication.delay.ms`)",
	},
	{
		Def: configdef.Def{Name: "max.connections", Type: configdef.Int, Default: "2147483647", Range: configdef.AtLeast(0),
			Doc: "The maximum number of connections we allow in the broker at any time. This limit is applied in addition to any per-ip limits configured using max.connections.per.ip. New connections are blocked if the broker limit is reached."},
		field: func(c *Config) any { return &c.MaxConnections },
		note:  "most connections at once; at the limit the next one is accepted but not served until another closes, as Kafka's acceptor blocks; at least 0",
	},
	{
		Def: configdef.Def{Name: "max.connections.per.ip", Type: configdef.Int, Default: "2147483647", Range: configdef.AtLeast(0),
			Doc: "The maximum number of connections we allow from each ip address. This can be set to 0 if there are overrides configured using max.connections.per.ip.overrides property. New connections from the ip address are dropped if the limit is reached."},
		field: func(c *Config) any { return &c.MaxConnectionsPerIP },
		check: checkMaxConnectionsPerIP,
		note:  "most connections from one address; a new one over it is closed at once, the address's others keep working; at least 0, and 0 only with overrides",
	},
	{
		Def: configdef.Def{Name: "max.connections.per.ip.overrides", Type: configdef.String,
			Doc: "A comma-separated list of per-ip or hostname overrides to the default maximum number of connections. An example value is \"hostName:100,127.0.0.1:200\""},
		field: func(c *Config) any { return &c.MaxConnectionsPerIPOverrides },
		check: checkConnectionOverrides,
		note:  "`host:count,...` overriding `max.connections.per.ip` per IP address or host name (every address it resolves to at start-up)",
	},
	{
		Def: configdef.Def{Name: "log.flush.offset.checkpoint.interval.ms", Type: configdef.Int, Default: "60000", Range: configdef.AtLeast(1),
			Doc: "The frequency with which we update the persistent record of the last flush which acts as the log recovery point."},
		field: func(c *Config) any { return &c.LogFlushOffsetCheckpointIntervalMs },
		note:  "how often the recovery-point and log-start-offset checkpoints are written, ms",
	},
	{
		Def: configdef.Def{Name: "log.cleaner.enable", Type: configdef.Boolean, Default: "true",
			Doc: "Enable the log cleaner process to run on the server. Should be enabled if using any topics with a cleanup.policy=compact including the internal offsets topic. If disabled those topics will not be compacted and continually grow in size."},
		field: func(c *Config) any { return &c.LogCleanerEnable },
		note:  "run the log cleaner; without it compacted topics get neither compaction nor retention",
	},
	{
		Def: configdef.Def{Name: "log.cleaner.threads", Type: configdef.Int, Default: "1", Range: configdef.AtLeast(1),
			Doc: "The number of background threads to use for log cleaning"},
		field: func(c *Config) any { return &c.LogCleanerThreads },
		note:  "cleaner threads",
	},
	{
		Def: configdef.Def{Name: "log.cleaner.backoff.ms", Type: configdef.Long, Default: "15000", Range: configdef.AtLeast(0),
			Doc: "The amount of time to sleep when there are no logs to clean"},
		field: func(c *Config) any { return &c.LogCleanerBackoffMs },
		note:  "a cleaner thread's sleep when nothing needs cleaning, ms",
	},
	{
		Def: configdef.Def{Name: "log.cleaner.dedupe.buffer.size", Type: configdef.Long, Default: "134217728",
			Doc: "The total memory used for log deduplication across all cleaner threads"},
		field: func(c *Config) any { return &c.LogCleanerDedupeBufferSize },
		check: checkDedupeBufferSize,
		note:  "memory of the cleaners' offset maps (24 bytes a key), bytes",
	},
	{
		Def: configdef.Def{Name: "log.cleaner.io.max.bytes.per.second", Type: configdef.Double, Default: "1.7976931348623157E308",
			Doc: "The log cleaner will be throttled so that the sum of its read and write i/o will be less than this value on average"},
		field:       func(c *Config) any { return &c.LogCleanerIoMaxBytesPerSecond },
		check:       checkPositive,
		defaultNote: "unlimited",
		note:        "cap on the cleaners' reads",
	},
	{
		Def: configdef.Def{Name: "log.retention.check.interval.ms", Type: configdef.Long, Default: "300000", Range: configdef.AtLeast(1),
			Doc: "The frequency in milliseconds that the log cleaner checks whether any log is eligible for deletion"},
		field: func(c *Config) any { return &c.LogRetentionCheckIntervalMs },
		note:  "how often retention runs over non-compacted topics, ms",
	},
	{
		Def: configdef.Def{Name: "kcompatd.kafka.version", Type: configdef.String, NullDefault: true,
			Doc: "kcompatd's own: caps the advertised and served API versions at those of this Kafka release (empty: every version kcompatd implements)."},
		field:       func(c *Config) any { return &c.KafkaVersion },
		check:       checkKafkaVersion,
		defaultNote: "empty: everything implemented",
		note:        "caps the advertised and served API versions at a Kafka release, e.g. `4.2`, `3.5`, `2.8.1`, `0.11.0` (franz-go's `kversion` tables, 0.8 to 4.4), to test a client against an older Kafka; an API the release lacks is neither advertised nor served (before 0.11 there is no Produce v3, so nothing can be produced); from 4.0 the versions Kafka 4 removed (KIP-896) are not served either, and the features are the release's (`transaction.version` 2 and `group.version` 1 finalized from 4.0, none before 3.3)",
	},
	{
		Def: configdef.Def{Name: "kcompatd.create.topics", Type: configdef.String, NullDefault: true,
			Doc: "kcompatd's own: topics to create at start-up, before the broker serves, if they are missing: name:partitions[:key=value;key=value...] entries, comma-separated."},
		field: func(c *Config) any { return &c.CreateTopics },
		check: checkStartupTopics,
		note:  "topics created at start-up, before the broker serves, where missing: `name:partitions[:key=value;...]`, comma-separated (`orders:3:cleanup.policy=compact;retention.ms=-1,events:1`); a comma inside a config value is kept (`cleanup.policy=compact,delete`); the throttled replica lists, whose items look like `name:count`, cannot be given here. An existing topic is left as it is; a different partition count is logged. The `--create-topic` flag adds one entry",
	},
	{
		Def: configdef.Def{Name: "kcompatd.metrics.listener", Type: configdef.String, NullDefault: true,
			Doc: "kcompatd's own: the loopback host:port of the admin HTTP listener (/metrics, /healthz, /readyz, /faults); empty: off."},
		field: func(c *Config) any { return &c.AdminListener },
		check: checkAdminListener,
		note:  "loopback `host:port` of the admin HTTP listener: `GET /metrics` (Prometheus, see Metrics; metrics are on only with this listener), `GET /healthz`, `GET /readyz` (storage loaded, listeners serving, data dir online), and fault injection: `POST /faults` with a JSON rule, `GET /faults`, `DELETE /faults/ID`; only loopback Host headers are answered",
	},
	{
		Def: configdef.Def{Name: "kcompatd.log.open.segments.max", Type: configdef.Int, Default: "128", Range: configdef.AtLeast(1),
			Doc: "kcompatd's own: the idle inactive segments whose files stay open, least recently used closed first; active segments and segments in use stay open besides."},
		field: func(c *Config) any { return &c.LogOpenSegmentsMax },
		note:  "idle inactive segments whose three files stay open; the least recently used past it, and any idle for a minute, are closed and reopened on demand (Kafka keeps every .log open)",
	},
	{
		Def: configdef.Def{Name: "kcompatd.log.internal.segment.bytes", Type: configdef.Int, Default: "0", Range: configdef.AtLeast(0), Check: checkInternalSegmentBytes,
			Doc: "kcompatd's own, for tests: where not 0, the size at which the segments of every topic without its own internal.segment.bytes roll, in place of segment.bytes (DescribeConfigs still shows segment.bytes as configured)."},
		field: func(c *Config) any { return &c.LogInternalSegmentBytes },
		note:  "tests only: where not 0 (at least 14), every topic rolls segments at this size unless it sets `internal.segment.bytes` (Kafka 4 wants `log.segment.bytes` >= 1 MiB and has no broker-wide test override); DescribeConfigs shows `segment.bytes` as configured",
	},
}

// propertyByName indexes properties by name and synonym.
var propertyByName = func() map[string]*property {
	m := map[string]*property{}
	for i := range properties {
		p := &properties[i]
		m[p.Name] = p
		for _, s := range p.synonyms {
			m[s] = p
		}
	}
	return m
}()

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
	"share.coordinator.state.topic.replication.factor": true,
	"share.coordinator.state.topic.min.isr":            true,
	"share.coordinator.threads":                        true,
	"share.coordinator.write.timeout.ms":               true,
	"share.coordinator.append.linger.ms":               true,
	"share.coordinator.cached.buffer.max.bytes":        true,
}

// ParseConfig builds a Config from Kafka properties over DefaultConfig,
// as a properties file and -c overrides give them. It reports every bad
// value at once, joined in the error (each a *ConfigError), and returns
// the properties it ignored as warnings, sorted by name.
func ParseConfig(props map[string]string) (Config, []ConfigWarning, error) {
	c := DefaultConfig()
	var errs []*ConfigError
	given := map[string]string{} // property name -> the name it was given by
	for i := range properties {
		p := &properties[i]
		// The property itself wins over its synonyms, a synonym listed
		// first over one listed later.
		names := append([]string{p.Name}, p.synonyms...)
		for _, n := range names {
			v, ok := props[n]
			if !ok {
				continue
			}
			given[p.Name] = n
			if err := p.set(&c, v); err != nil {
				errs = append(errs, &ConfigError{Property: n, Value: v, Reason: err.Error()})
			}
			break
		}
	}
	logDefaults, logErrs := partition.ParseBrokerLogConfigs(props)
	for _, err := range logErrs {
		errs = append(errs, asConfigError(err))
	}
	if len(logDefaults) > 0 {
		c.LogDefaults = logDefaults
	}
	var warnings []ConfigWarning
	for name, v := range props {
		if p := listenerProperty(name); p != nil {
			if err := p.set(&Config{}, v); err != nil {
				errs = append(errs, &ConfigError{Property: name, Value: v, Reason: err.Error()})
				continue
			}
			if c.ListenerProperties == nil {
				c.ListenerProperties = map[string]string{}
			}
			c.ListenerProperties[name] = v
			continue
		}
		switch {
		case propertyByName[name] != nil, partition.IsBrokerLogConfig(name):
		case singleNodeProperties[name]:
			warnings = append(warnings, ConfigWarning{Property: name, Reason: WarnSingleNode})
		case strings.HasPrefix(name, "kcompatd."):
			// Our own namespace: a typo here is surely a mistake.
			errs = append(errs, &ConfigError{Property: name, Value: props[name], Reason: "unknown kcompatd property"})
		default:
			warnings = append(warnings, ConfigWarning{Property: name, Reason: WarnUnknown})
		}
	}
	warnings = append(warnings, c.unmatchedListenerOverrides()...)
	sort.Slice(warnings, func(i, j int) bool { return warnings[i].Property < warnings[j].Property })

	// Check ranges only for what parsed: a value that did not parse has
	// already been reported, and its field still holds the default.
	reported := map[string]bool{}
	for _, e := range errs {
		reported[e.Property] = true
	}
	for _, e := range c.validate() {
		name := e.Property
		if n, ok := given[name]; ok {
			name = n
		}
		if !reported[name] {
			e.Property, e.Value = name, props[name]
			errs = append(errs, e)
		}
	}
	return c, warnings, joinConfigErrors(errs)
}

// unmatchedListenerOverrides warns of the listener overrides whose
// listener name (lower case, as Kafka's prefix has it) is not one of
// listeners'.
func (c *Config) unmatchedListenerOverrides() []ConfigWarning {
	eps, err := parseEndpoints(c.Listeners)
	if err != nil {
		return nil // reported against listeners
	}
	var out []ConfigWarning
	for name := range c.ListenerProperties {
		matched := false
		for _, ep := range eps {
			matched = matched || strings.HasPrefix(name, listenerPrefix(ep.name))
		}
		if !matched {
			out = append(out, ConfigWarning{Property: name, Reason: WarnNoSuchListener})
		}
	}
	return out
}

// asConfigError words a configdef error (or another) as a ConfigError.
func asConfigError(err error) *ConfigError {
	if e, ok := configdef.AsError(err); ok {
		return &ConfigError{Property: e.Name, Value: e.Value, Reason: e.Reason}
	}
	return &ConfigError{Reason: err.Error()}
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

// set parses v by the property's definition into its field.
func (p *property) set(c *Config, v string) error {
	val, err := p.Parse(v)
	if err != nil {
		if e, ok := configdef.AsError(err); ok {
			return errors.New(e.Reason)
		}
		return err
	}
	switch f := p.field(c).(type) {
	case *string:
		*f = val.Text
	case *bool:
		*f = val.Bool
	case *int32:
		*f = int32(val.Int)
	case *int64:
		*f = val.Int
	case *float64:
		*f = val.Float
	default:
		panic("kcompatd: property " + p.Name + " has an unsupported field type")
	}
	return nil
}

// get prints the property's field as Kafka prints the value.
func (p *property) get(c *Config) string {
	var v configdef.Value
	switch f := p.field(c).(type) {
	case *string:
		v.Text = *f
		if p.Type == configdef.List {
			v.List = configdef.SplitList(*f)
		}
	case *bool:
		v.Bool = *f
	case *int32:
		v.Int = int64(*f)
	case *int64:
		v.Int = *f
	case *float64:
		v.Float = *f
	}
	if p.Type == configdef.List {
		v.List = configdef.SplitList(v.Text)
	}
	if p.Type == configdef.Password && v.Text != "" {
		return hiddenPassword
	}
	return p.Print(v)
}

// hiddenPassword is how a PASSWORD property's value is printed, as
// Kafka's Password.toString prints it.
const hiddenPassword = "[hidden]"

// Properties returns the effective configuration by Kafka's property
// names (synonyms left out), sorted by name: what --check-config prints.
func (c *Config) Properties() [][2]string {
	var out [][2]string
	for i := range properties {
		out = append(out, [2]string{properties[i].Name, properties[i].get(c)})
	}
	for _, b := range partition.BrokerLogConfigs() {
		out = append(out, [2]string{b.Name, c.logDefault(b)})
	}
	for name, v := range c.ListenerProperties {
		if p := listenerProperty(name); p != nil && p.Type == configdef.Password && v != "" {
			v = hiddenPassword
		}
		out = append(out, [2]string{name, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// logDefault is a broker default of a topic config in effect: as set in
// LogDefaults, else its default (the topic config's, where Kafka's is
// null and comes from a synonym).
func (c *Config) logDefault(b partition.BrokerLogConfig) string {
	if v, ok := c.LogDefaults[b.Name]; ok {
		return v
	}
	if b.NullDefault {
		return b.TopicDefault
	}
	return b.Default
}

// Validate reports every invalid setting at once, joined (each a
// *ConfigError). New calls it.
func (c *Config) Validate() error { return joinConfigErrors(c.validate()) }

func (c *Config) validate() []*ConfigError {
	var errs []*ConfigError
	for i := range properties {
		p := &properties[i]
		reason := ""
		if n, ok := number(p.field(c)); ok {
			reason = p.Range.Check(n)
		}
		if reason == "" && p.check != nil {
			reason = p.check(c)
		}
		if reason != "" {
			errs = append(errs, &ConfigError{Property: p.Name, Reason: reason})
		}
	}
	errs = append(errs, c.validateListeners()...)
	logDefaults, logErrs := partition.ParseBrokerLogConfigs(c.LogDefaults)
	for _, err := range logErrs {
		errs = append(errs, asConfigError(err))
	}
	if len(logErrs) == 0 {
		if _, err := partition.BrokerDefaults(logDefaults); err != nil {
			// A conflict between two of them (min.compaction.lag.ms
			// above max.compaction.lag.ms): every topic would fail.
			errs = append(errs, &ConfigError{Reason: err.Error()})
		}
	}
	return errs
}

// number returns a numeric field's value, for its range.
func number(field any) (float64, bool) {
	switch f := field.(type) {
	case *int32:
		return float64(*f), true
	case *int64:
		return float64(*f), true
	case *float64:
		return *f, true
	}
	return 0, false
}

// The rules beyond a property's range.

func checkLogDirs(c *Config) string {
	if len(configdef.SplitList(c.LogDirs)) != 1 {
		return "kcompatd keeps exactly one data directory"
	}
	return ""
}

func checkReplicationFactor(c *Config) string {
	if c.DefaultReplicationFactor != 1 {
		return "must be 1: a single broker holds one replica"
	}
	return ""
}

func checkMaxSessionTimeout(c *Config) string {
	if c.GroupMaxSessionTimeoutMs < c.GroupMinSessionTimeoutMs {
		return "must be at least group.min.session.timeout.ms"
	}
	return ""
}

func checkConsumerSessionTimeout(c *Config) string {
	if c.ConsumerGroupSessionTimeoutMs < c.ConsumerGroupMinSessionTimeoutMs || c.ConsumerGroupSessionTimeoutMs > c.ConsumerGroupMaxSessionTimeoutMs {
		return "must be within group.consumer.min.session.timeout.ms and group.consumer.max.session.timeout.ms"
	}
	return ""
}

func checkConsumerMaxSessionTimeout(c *Config) string {
	if c.ConsumerGroupMaxSessionTimeoutMs < c.ConsumerGroupMinSessionTimeoutMs {
		return "must be at least group.consumer.min.session.timeout.ms"
	}
	return ""
}

func checkConsumerHeartbeatInterval(c *Config) string {
	switch {
	case c.ConsumerGroupHeartbeatIntervalMs < c.ConsumerGroupMinHeartbeatIntervalMs || c.ConsumerGroupHeartbeatIntervalMs > c.ConsumerGroupMaxHeartbeatIntervalMs:
		return "must be within group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms"
	case c.ConsumerGroupHeartbeatIntervalMs >= c.ConsumerGroupSessionTimeoutMs:
		return "must be less than group.consumer.session.timeout.ms"
	}
	return ""
}

func checkStreamsSessionTimeout(c *Config) string {
	if c.StreamsGroupSessionTimeoutMs < c.StreamsGroupMinSessionTimeoutMs || c.StreamsGroupSessionTimeoutMs > c.StreamsGroupMaxSessionTimeoutMs {
		return "must be within group.streams.min.session.timeout.ms and group.streams.max.session.timeout.ms"
	}
	return ""
}

func checkStreamsHeartbeatInterval(c *Config) string {
	switch {
	case c.StreamsGroupHeartbeatIntervalMs < c.StreamsGroupMinHeartbeatIntervalMs || c.StreamsGroupHeartbeatIntervalMs > c.StreamsGroupMaxHeartbeatIntervalMs:
		return "must be within group.streams.min.heartbeat.interval.ms and group.streams.max.heartbeat.interval.ms"
	case c.StreamsGroupHeartbeatIntervalMs >= c.StreamsGroupSessionTimeoutMs:
		return "must be less than group.streams.session.timeout.ms"
	}
	return ""
}

func checkStreamsStandbys(c *Config) string {
	if c.StreamsGroupNumStandbyReplicas > c.StreamsGroupMaxStandbyReplicas {
		return "must be at most group.streams.max.standby.replicas"
	}
	return ""
}

func checkConsumerMaxHeartbeatInterval(c *Config) string {
	if c.ConsumerGroupMaxHeartbeatIntervalMs < c.ConsumerGroupMinHeartbeatIntervalMs {
		return "must be at least group.consumer.min.heartbeat.interval.ms"
	}
	return ""
}

func checkRebalanceProtocols(c *Config) string {
	if !slices.Contains(configdef.SplitList(c.GroupCoordinatorRebalanceProtocols), "classic") {
		return "Disabling the 'classic' protocol is not supported."
	}
	return ""
}

func checkConsumerAssignors(c *Config) string {
	if len(configdef.SplitList(c.ConsumerGroupAssignors)) == 0 {
		return "must name at least one assignor"
	}
	return ""
}

func checkQueuedMaxRequestBytes(c *Config) string {
	if c.QueuedMaxRequestBytes > 0 && c.QueuedMaxRequestBytes < int64(c.SocketRequestMaxBytes) {
		return "must be at least socket.request.max.bytes, or -1 for unbounded"
	}
	return ""
}

// Kafka requires failed.authentication.delay.ms (100, fixed here) below a
// non-negative idle timeout.
func checkConnectionsMaxIdle(c *Config) string {
	if c.ConnectionsMaxIdleMs >= 0 && c.ConnectionsMaxIdleMs <= failedAuthenticationDelayMs {
		return fmt.Sprintf("must be negative or greater than failed.authentication.delay.ms (%d)", failedAuthenticationDelayMs)
	}
	return ""
}

func checkMaxConnectionsPerIP(c *Config) string {
	overrides, err := parseConnectionOverrides(c.MaxConnectionsPerIPOverrides)
	if c.MaxConnectionsPerIP == 0 && len(overrides) == 0 && err == nil {
		return "can be set to zero only if max.connections.per.ip.overrides is set"
	}
	return ""
}

func checkConnectionOverrides(c *Config) string {
	if _, err := parseConnectionOverrides(c.MaxConnectionsPerIPOverrides); err != nil {
		return err.Error()
	}
	return ""
}

// Kafka needs 1 MiB per thread in its own code path; we need room for two
// offset-map entries per thread.
func checkDedupeBufferSize(c *Config) string {
	if c.LogCleanerDedupeBufferSize < 48*int64(max(c.LogCleanerThreads, 1)) {
		return "must leave at least 48 bytes per cleaner thread"
	}
	return ""
}

func checkPositive(c *Config) string {
	if !(c.LogCleanerIoMaxBytesPerSecond > 0) {
		return "must be greater than 0"
	}
	return ""
}

func checkAdminListener(c *Config) string {
	if c.AdminListener == "" {
		return ""
	}
	if err := httpguard.CheckLoopbackAddr(c.AdminListener); err != nil {
		return err.Error()
	}
	return ""
}

func checkPrincipalRules(_ string, v configdef.Value) string {
	if _, err := protocol.ParsePrincipalMappingRules(v.Text); err != nil {
		return err.Error()
	}
	return ""
}

func checkScramUsers(_ string, v configdef.Value) string {
	if _, err := parseScramUsers(v.Text); err != nil {
		return err.Error()
	}
	return ""
}

// standardAuthorizer is Kafka's KRaft authorizer, the one kcompatd serves;
// aclAuthorizer is the ZooKeeper-era one Kafka 4 removed.
const (
	standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	aclAuthorizer      = "kafka.security.authorizer.AclAuthorizer"
)

func checkAuthorizerClass(_ string, v configdef.Value) string {
	switch strings.TrimSpace(v.Text) {
	case "", standardAuthorizer:
		return ""
	case aclAuthorizer:
		return "Kafka 4 removed " + aclAuthorizer + " (it kept ACLs in ZooKeeper); use " + standardAuthorizer
	}
	return "kcompatd serves only " + standardAuthorizer + " (or none)"
}

func checkKafkaVersion(c *Config) string {
	if c.KafkaVersion != "" && kversion.FromString(c.KafkaVersion) == nil {
		return `must be a Kafka release such as "3.5", "2.8.1" or "0.11.0"`
	}
	return ""
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
	for _, item := range configdef.SplitList(s) {
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

// listenerSpec is one client listener as New opens and advertises it.
type listenerSpec struct {
	name     string
	protocol protocol.SecurityProtocol
	bind     *endpoint // nil when Config.Listener is set
	// advertised is its advertised.listeners entry; nil: advertise the
	// bound address.
	advertised *endpoint
}

// listenerPlan is what New needs to open and advertise the listeners.
type listenerPlan struct {
	listeners []listenerSpec // in listeners order; one with Config.Listener
	skipped   []string       // controller listeners left out
}

// Names of the listener properties, which the rules below name in their
// errors.
const (
	nameListeners           = "listeners"
	nameAdvertisedListeners = "advertised.listeners"
	nameProtocolMap         = "listener.security.protocol.map"
)

// resolveListeners checks listeners, listener.security.protocol.map and
// advertised.listeners together, as KafkaConfig does: listener names
// unique, each mapped to a security protocol, ports distinct, advertised
// names a subset of the listeners' and no advertised 0.0.0.0.
func (c *Config) resolveListeners() (listenerPlan, *ConfigError) {
	var plan listenerPlan
	fail := func(prop, reason string) (listenerPlan, *ConfigError) {
		return listenerPlan{}, &ConfigError{Property: prop, Reason: reason}
	}
	controllers := map[string]bool{}
	for _, n := range configdef.SplitList(c.ControllerListenerNames) {
		controllers[strings.ToUpper(n)] = true
	}
	protocols := map[string]protocol.SecurityProtocol{}
	for _, item := range configdef.SplitList(c.ListenerSecurityProtocolMap) {
		name, proto, ok := strings.Cut(item, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fail(nameProtocolMap, fmt.Sprintf("%q is not of the form NAME:PROTOCOL", item))
		}
		sp, err := protocol.ParseSecurityProtocol(strings.TrimSpace(proto))
		if err != nil {
			return fail(nameProtocolMap, err.Error())
		}
		protocols[strings.ToUpper(strings.TrimSpace(name))] = sp
	}

	if c.Listener == nil {
		eps, err := parseEndpoints(c.Listeners)
		if err != nil {
			return fail(nameListeners, err.Error())
		}
		ports := map[int]string{}
		for _, ep := range eps {
			if controllers[ep.name] {
				plan.skipped = append(plan.skipped, ep.name)
				continue
			}
			proto, ok := protocols[ep.name]
			if !ok {
				return fail(nameListeners, fmt.Sprintf("no security protocol for listener %s in %s", ep.name, nameProtocolMap))
			}
			if other, dup := ports[ep.port]; dup && ep.port != 0 {
				return fail(nameListeners, fmt.Sprintf("each listener must have a different port: %s and %s both use %d", other, ep.name, ep.port))
			}
			ports[ep.port] = ep.name
			plan.listeners = append(plan.listeners, listenerSpec{name: ep.name, protocol: proto, bind: &ep})
		}
		if len(plan.listeners) == 0 {
			return fail(nameListeners, "no client listener (every listener is a controller listener)")
		}
	}

	var advertised []endpoint
	if strings.TrimSpace(c.AdvertisedListeners) != "" {
		eps, err := parseEndpoints(c.AdvertisedListeners)
		if err != nil {
			return fail(nameAdvertisedListeners, err.Error())
		}
		for _, ep := range eps {
			if controllers[ep.name] {
				continue
			}
			if ip := net.ParseIP(ep.host); ip != nil && ip.IsUnspecified() {
				return fail(nameAdvertisedListeners, "cannot advertise the non-routable address "+ep.host)
			}
			advertised = append(advertised, ep)
		}
	}
	if c.Listener != nil {
		// A listener handed in by a Go test: PLAINTEXT, named by its one
		// advertised entry if there is one.
		spec := listenerSpec{name: string(protocol.Plaintext), protocol: protocol.Plaintext}
		switch len(advertised) {
		case 0:
		case 1:
			spec.name, spec.advertised = advertised[0].name, &advertised[0]
		default:
			return fail(nameAdvertisedListeners, "with an open Listener it must hold exactly one client listener")
		}
		plan.listeners = []listenerSpec{spec}
		return plan, nil
	}
	for i := range advertised {
		ep := &advertised[i]
		j := slices.IndexFunc(plan.listeners, func(l listenerSpec) bool { return l.name == ep.name })
		if j < 0 {
			return fail(nameAdvertisedListeners, fmt.Sprintf("listener %s is not in %s: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners", ep.name, nameListeners))
		}
		plan.listeners[j].advertised = ep
	}
	for _, l := range plan.listeners {
		if ip := net.ParseIP(l.bind.host); l.advertised == nil && ip != nil && ip.IsUnspecified() {
			// Kafka refuses the same: clients cannot connect to 0.0.0.0.
			return fail(nameAdvertisedListeners, fmt.Sprintf("must be set for listener %s, which binds the non-routable address %s", l.name, l.bind.host))
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
	for _, item := range configdef.SplitList(s) {
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

// connectionLimits is the connection settings as the protocol server takes
// them, with the override hosts resolved as Kafka's InetAddress.getByName
// does at start-up (a host name's every address gets its count; the
// last entry for an address wins).
func (c *Config) connectionLimits() (protocol.ConnectionLimits, error) {
	l := protocol.ConnectionLimits{
		MaxIdleMs:           c.ConnectionsMaxIdleMs,
		MaxConnections:      c.MaxConnections,
		MaxConnectionsPerIP: c.MaxConnectionsPerIP,
	}
	overrides, err := parseConnectionOverrides(c.MaxConnectionsPerIPOverrides)
	if err != nil { // Validate already checked; kept for safety
		return l, &ConfigError{Property: "max.connections.per.ip.overrides", Reason: err.Error()}
	}
	if len(overrides) == 0 {
		return l, nil
	}
	l.MaxConnectionsPerIPOverrides = make(map[netip.Addr]int32, len(overrides))
	for _, o := range overrides {
		if a, err := netip.ParseAddr(o.host); err == nil {
			l.MaxConnectionsPerIPOverrides[a.WithZone("").Unmap()] = o.count
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", o.host)
		cancel()
		if err != nil || len(addrs) == 0 {
			return l, &ConfigError{Property: "max.connections.per.ip.overrides", Value: c.MaxConnectionsPerIPOverrides,
				Reason: fmt.Sprintf("cannot resolve host %q: %v", o.host, err)}
		}
		for _, a := range addrs {
			l.MaxConnectionsPerIPOverrides[a.WithZone("").Unmap()] = o.count
		}
	}
	return l, nil
}

// checkInternalSegmentBytes: 0 (off) or a size a segment can hold a batch
// header's first fields in, as internal.segment.bytes.
func checkInternalSegmentBytes(_ string, v configdef.Value) string {
	if v.Int != 0 && v.Int < 14 {
		return "Value must be 0 or at least 14"
	}
	return ""
}
