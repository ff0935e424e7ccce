package protocol

// DescribeConfigs: v0-4
//
// Behavior (Kafka's ConfigHelper.describeConfigs):
//   - TOPIC: every topic config, with its effective value and where it
//     comes from: the topic's override (TOPIC_CONFIG), else the broker
//     config that defaults it, dynamic per-broker, dynamic cluster default,
//     static (server.properties) or Kafka's default, with Kafka's synonym
//     rules (ConfigHelper.configSynonyms: the chain starts at the broker
//     config Kafka lets be set dynamically, so retention.ms reports no
//     synonym unless log.retention.ms is set somewhere). An invalid name
//     is INVALID_TOPIC_EXCEPTION, an unknown topic
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER "<node.id>": the broker configs kcompatd serves (the static
//     properties and the broker defaults of every topic config), read-only
//     unless kcompatd applies a change at once. BROKER "": the dynamic
//     cluster defaults only. Another id or a non-number is INVALID_REQUEST,
//     worded as Kafka does.
//   - BROKER_LOGGER "<node.id>": the root logger's level (kcompatd has one
//     logger); "" or another id is INVALID_REQUEST.
//   - Null or empty ConfigurationKeys means every config; names that do
//     not exist are left out, as in Kafka.
//
// Deliberate differences: the broker resource lists the configs kcompatd
// has, not Kafka's several hundred; GROUP and CLIENT_METRICS resources are
// INVALID_REQUEST (kcompatd has no group or client metrics configs);
// broker configs Kafka reports as null (log.retention.ms when unset) show
// the effective value.
//
// Version notes:
//   - v1: IncludeSynonyms; ConfigSource replaces IsDefault; synonyms
//   - v2: no change
//   - v3: IncludeDocumentation; ConfigType and Documentation
//   - v4: flexible
//   Kafka 4.0 dropped v0 (KIP-896); 3.9 serves it, so do we.

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
)

func init() { register(32, 0, 4, handleDescribeConfigs) }

// Config resource types (ConfigResource.Type ids).
const (
	resourceTopic         = kmsg.ConfigResourceType(2)
	resourceBroker        = kmsg.ConfigResourceType(4)
	resourceBrokerLogger  = kmsg.ConfigResourceType(8)
	resourceGroup         = kmsg.ConfigResourceType(32)
	resourceClientMetrics = kmsg.ConfigResourceType(16)
)

// Config sources (DescribeConfigsResponse.ConfigSource ids) beyond those
// in topic_configs.go.
const (
	configSourceDynamicBroker        = 2 // DYNAMIC_BROKER_CONFIG
	configSourceDynamicDefaultBroker = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	configSourceDynamicBrokerLogger  = 6 // DYNAMIC_BROKER_LOGGER_CONFIG
)

// Config types (DescribeConfigsResponse.ConfigType ids).
const (
	configTypeBoolean = kmsg.ConfigType(1)
	configTypeString  = kmsg.ConfigType(2)
	configTypeInt     = kmsg.ConfigType(3)
	configTypeLong    = kmsg.ConfigType(5)
	configTypeDouble  = kmsg.ConfigType(6)
	configTypeList    = kmsg.ConfigType(7)
)

// BrokerConfig is one broker property as the broker was started with,
// for DescribeConfigs and for the precedence of dynamic broker configs.
type BrokerConfig struct {
	Name    string // Kafka's property name (log.segment.bytes)
	Value   string // effective static value
	Default string // kcompatd's default for it
	// Set reports that the value was configured (server.properties, -c)
	// rather than left at its default: Kafka's STATIC_BROKER_CONFIG.
	Set bool
	// Type is the ConfigDef type (BOOLEAN, STRING, INT, LONG, DOUBLE,
	// LIST), used for a property the table here does not know.
	Type string
}

// topicConfigTypes are the ConfigDef types of Kafka's topic configs.
var topicConfigTypes = map[string]kmsg.ConfigType{
	"cleanup.policy":                          configTypeList,
	"compression.gzip.level":                  configTypeInt,
	"compression.lz4.level":                   configTypeInt,
	"compression.type":                        configTypeString,
	"compression.zstd.level":                  configTypeInt,
	"delete.retention.ms":                     configTypeLong,
	"file.delete.delay.ms":                    configTypeLong,
	"flush.messages":                          configTypeLong,
	"flush.ms":                                configTypeLong,
	"follower.replication.throttled.replicas": configTypeList,
	"index.interval.bytes":                    configTypeInt,
	"leader.replication.throttled.replicas":   configTypeList,
	"local.retention.bytes":                   configTypeLong,
	"local.retention.ms":                      configTypeLong,
	"max.compaction.lag.ms":                   configTypeLong,
	"max.message.bytes":                       configTypeInt,
	"message.downconversion.enable":           configTypeBoolean,
	"message.format.version":                  configTypeString,
	"message.timestamp.after.max.ms":          configTypeLong,
	"message.timestamp.before.max.ms":         configTypeLong,
	"message.timestamp.difference.max.ms":     configTypeLong,
	"message.timestamp.type":                  configTypeString,
	"min.cleanable.dirty.ratio":               configTypeDouble,
	"min.compaction.lag.ms":                   configTypeLong,
	"min.insync.replicas":                     configTypeInt,
	"preallocate":                             configTypeBoolean,
	"remote.log.copy.disable":                 configTypeBoolean,
	"remote.log.delete.on.disable":            configTypeBoolean,
	"remote.storage.enable":                   configTypeBoolean,
	"retention.bytes":                         configTypeLong,
	"retention.ms":                            configTypeLong,
	"segment.bytes":                           configTypeInt,
	"segment.index.bytes":                     configTypeInt,
	"segment.jitter.ms":                       configTypeLong,
	"segment.ms":                              configTypeLong,
	"unclean.leader.election.enable":          configTypeBoolean,
}

var configTypeByName = map[string]kmsg.ConfigType{
	"BOOLEAN": configTypeBoolean,
	"STRING":  configTypeString,
	"INT":     configTypeInt,
	"LONG":    configTypeLong,
	"DOUBLE":  configTypeDouble,
	"LIST":    configTypeList,
}

// brokerConfigDef is what Kafka's KafkaConfig says of a broker config.
type brokerConfigDef struct {
	typ kmsg.ConfigType
	// def is Kafka's default; nil where Kafka's is null (log.retention.ms,
	// whose default comes from log.retention.hours).
	def *string
	doc string // empty: kafkaBrokerLogConfigDocs has it
}

func bdef(typ kmsg.ConfigType, def, doc string) brokerConfigDef {
	return brokerConfigDef{typ: typ, def: &def, doc: doc}
}

func bnull(typ kmsg.ConfigType, doc string) brokerConfigDef {
	return brokerConfigDef{typ: typ, doc: doc}
}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)

// brokerConfigDefs are the broker configs kcompatd knows: its static
// properties and the broker defaults of every topic config.
var brokerConfigDefs = map[string]brokerConfigDef{
	"log.dirs":                                bnull(configTypeString, ""),
	"listeners":                               bdef(configTypeString, "PLAINTEXT://:9092", "Listener List - Comma-separated list of URIs we will listen on and the listener names."),
	"advertised.listeners":                    bnull(configTypeString, "Listeners to publish to ZooKeeper for clients to use, if different than the listeners config property."),
	"listener.security.protocol.map":          bdef(configTypeString, "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", "Map between listener names and security protocols."),
	"controller.listener.names":               bnull(configTypeString, "A comma-separated list of the names of the listeners used by the controller."),
	"node.id":                                 bdef(configTypeInt, "-1", "The node ID associated with the roles this process is playing when process.roles is non-empty."),
	"broker.rack":                             bnull(configTypeString, "Rack of the broker. This will be used in rack aware replication assignment for fault tolerance."),
	"num.partitions":                          bdef(configTypeInt, "1", ""),
	"auto.create.topics.enable":               bdef(configTypeBoolean, "true", ""),
	"delete.topic.enable":                     bdef(configTypeBoolean, "true", "Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off"),
	"default.replication.factor":              bdef(configTypeInt, "1", "The replication factor for automatically created topics, and for topics created with -1 as the replication factor"),
	"offsets.topic.num.partitions":            bdef(configTypeInt, "50", "The number of partitions for the offset commit topic (should not change after deployment)."),
	"group.initial.rebalance.delay.ms":        bdef(configTypeInt, "3000", "The amount of time the group coordinator will wait for more consumers to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances, but increases the time until processing begins."),
	"socket.request.max.bytes":                bdef(configTypeInt, "104857600", "The maximum number of bytes in a socket request"),
	"connections.max.idle.ms":                 bdef(configTypeLong, "600000", "Idle connections timeout: the server socket processor threads close the connections that idle more than this"),
	"max.connections":                         bdef(configTypeInt, "2147483647", "The maximum number of connections we allow in the broker at any time. This limit is applied in addition to any per-ip limits configured using max.connections.per.ip. New connections are blocked if the broker limit is reached."),
	"max.connections.per.ip":                  bdef(configTypeInt, "2147483647", "The maximum number of connections we allow from each ip address. This can be set to 0 if there are overrides configured using max.connections.per.ip.overrides property. New connections from the ip address are dropped if the limit is reached."),
	"max.connections.per.ip.overrides":        bdef(configTypeString, "", "A comma-separated list of per-ip or hostname overrides to the default maximum number of connections. An example value is \"hostName:100,127.0.0.1:200\""),
	"message.max.bytes":                       bdef(configTypeInt, "1048588", "The largest record batch size allowed by Kafka (after compression if compression is enabled)."),
	"log.segment.bytes":                       bdef(configTypeInt, "1073741824", ""),
	"log.roll.ms":                             bnull(configTypeLong, ""),
	"log.roll.hours":                          bdef(configTypeInt, "168", ""),
	"log.roll.jitter.ms":                      bnull(configTypeLong, ""),
	"log.roll.jitter.hours":                   bdef(configTypeInt, "0", ""),
	"log.index.size.max.bytes":                bdef(configTypeInt, "10485760", ""),
	"log.index.interval.bytes":                bdef(configTypeInt, "4096", ""),
	"log.flush.interval.messages":             bdef(configTypeLong, maxLong, ""),
	"log.flush.interval.ms":                   bnull(configTypeLong, ""),
	"log.flush.scheduler.interval.ms":         bdef(configTypeLong, maxLong, ""),
	"log.flush.offset.checkpoint.interval.ms": bdef(configTypeInt, "60000", ""),
	"log.message.timestamp.type":              bdef(configTypeString, "CreateTime", ""),
	"log.retention.ms":                        bnull(configTypeLong, ""),
	"log.retention.minutes":                   bnull(configTypeInt, ""),
	"log.retention.hours":                     bdef(configTypeInt, "168", ""),
	"log.retention.bytes":                     bdef(configTypeLong, "-1", ""),
	"log.cleanup.policy":                      bdef(configTypeList, "delete", ""),
	"log.cleaner.delete.retention.ms":         bdef(configTypeLong, "86400000", "The amount of time to retain tombstone message markers for log compacted topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage (otherwise  tombstones messages may be collected before a consumer completes their scan)."),
	"log.cleaner.min.compaction.lag.ms":       bdef(configTypeLong, "0", "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted."),
	"log.cleaner.max.compaction.lag.ms":       bdef(configTypeLong, maxLong, "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted."),
	"log.cleaner.min.cleanable.ratio":         bdef(configTypeDouble, "0.5", "The minimum ratio of dirty log to total log for a log to eligible for cleaning. If the log.cleaner.max.compaction.lag.ms or the log.cleaner.min.compaction.lag.ms configurations are also specified, then the log compactor considers the log eligible for compaction as soon as either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the log.cleaner.min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for at most the log.cleaner.max.compaction.lag.ms period."),
	"log.cleaner.enable":                      bdef(configTypeBoolean, "true", "Enable the log cleaner process to run on the server. Should be enabled if using any topics with a cleanup.policy=compact including the internal offsets topic. If disabled those topics will not be compacted and continually grow in size."),
	"log.cleaner.threads":                     bdef(configTypeInt, "1", "The number of background threads to use for log cleaning"),
	"log.cleaner.backoff.ms":                  bdef(configTypeLong, "15000", "The amount of time to sleep when there are no logs to clean"),
	"log.cleaner.dedupe.buffer.size":          bdef(configTypeLong, "134217728", "The total memory used for log deduplication across all cleaner threads"),
	"log.cleaner.io.max.bytes.per.second":     bdef(configTypeDouble, "1.7976931348623157E308", "The log cleaner will be throttled so that the sum of its read and write i/o will be less than this value on average"),
	"log.retention.check.interval.ms":         bdef(configTypeLong, "300000", ""),
	"group.min.session.timeout.ms":            bdef(configTypeInt, "6000", "The minimum allowed session timeout for registered consumers. Shorter timeouts result in quicker failure detection at the cost of more frequent consumer heartbeating, which can overwhelm broker resources."),
	"group.max.session.timeout.ms":            bdef(configTypeInt, "1800000", "The maximum allowed session timeout for registered consumers. Longer timeouts give consumers more time to process messages in between heartbeats at the cost of a longer time to detect failures."),
	"group.max.size":                          bdef(configTypeInt, "2147483647", "The maximum number of consumers that a single consumer group can accommodate."),
	"offsets.retention.minutes":               bdef(configTypeInt, "10080", "For subscribed consumers, committed offset of a specific partition will be expired and discarded when 1) this retention period has elapsed after the consumer group loses all its consumers (i.e. becomes empty); 2) this retention period has elapsed since the last time an offset is committed for the partition and the group is no longer subscribed to the corresponding topic. For standalone consumers (using manual assignment), offsets will be expired after this retention period has elapsed since the time of last commit. Note that when a group is deleted via the delete-group request, its committed offsets will also be deleted without extra retention period; also when a topic is deleted via the delete-topic request, upon propagated metadata update any group's committed offsets for that topic will also be deleted without extra retention period."),
	"offsets.retention.check.interval.ms":     bdef(configTypeLong, "600000", "Frequency at which to check for stale offsets"),
	"offset.metadata.max.bytes":               bdef(configTypeInt, "4096", "The maximum size for a metadata entry associated with an offset commit."),
	"log.segment.delete.delay.ms":             bdef(configTypeLong, "60000", ""),
	"compression.type":                        bdef(configTypeString, "producer", "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer."),
	"compression.gzip.level":                  bdef(configTypeInt, "-1", "The compression level to use if compression.type is set to 'gzip'."),
	"compression.lz4.level":                   bdef(configTypeInt, "9", "The compression level to use if compression.type is set to 'lz4'."),
	"compression.zstd.level":                  bdef(configTypeInt, "3", "The compression level to use if compression.type is set to 'zstd'."),
	"log.preallocate":                         bdef(configTypeBoolean, "false", ""),
	"log.message.format.version":              bdef(configTypeString, "3.0-IV1", ""),
	"log.message.timestamp.difference.max.ms": bdef(configTypeLong, maxLong, ""),
	"log.message.timestamp.before.max.ms":     bdef(configTypeLong, maxLong, ""),
	"log.message.timestamp.after.max.ms":      bdef(configTypeLong, maxLong, ""),
	"log.message.downconversion.enable":       bdef(configTypeBoolean, "true", ""),
	"log.local.retention.ms":                  bdef(configTypeLong, "-2", "The number of milliseconds to keep the local log segments before it gets eligible for deletion. Default value is -2, it represents `log.retention.ms` value is to be used."),
	"log.local.retention.bytes":               bdef(configTypeLong, "-2", "The maximum size of local log segments that can grow for a partition before it gets eligible for deletion. Default value is -2, it represents `log.retention.bytes` value to be used."),
	"min.insync.replicas":                     bdef(configTypeInt, "1", ""),
	"unclean.leader.election.enable":          bdef(configTypeBoolean, "false", "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss."),
	"kcompatd.kafka.version":                  bnull(configTypeString, "kcompatd's own: caps the advertised and served API versions at those of this Kafka release (empty: every version kcompatd implements)."),
}

// brokerConfigDoc is Kafka's documentation of a broker config.
func brokerConfigDoc(name string) string {
	if d := brokerConfigDefs[name].doc; d != "" {
		return d
	}
	return kafkaBrokerLogConfigDocs[name]
}

// brokerConfigSynonyms is Kafka's DynamicBrokerConfig.brokerConfigSynonyms:
// the names that set the same broker config, highest priority first.
func brokerConfigSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

// brokerDynamic reports whether kcompatd applies a change of the broker
// config at once, which is what it lets AlterConfigs change: the broker
// defaults of topic configs, as Kafka's DynamicLogConfig.
func brokerDynamic(name string) bool {
	_, ok := partition.TopicConfigOf(name)
	return ok
}

// configView is the broker's configuration at one instant: static,
// dynamic and default layers, for sources and synonyms.
type configView struct {
	static         map[string]BrokerConfig
	clusterDefault map[string]string
	broker         map[string]string
}

func (s *Server) configView() configView {
	def, br := s.store.DynamicBrokerConfigs()
	v := configView{static: make(map[string]BrokerConfig, len(s.cfg.BrokerConfigs)), clusterDefault: def, broker: br}
	for _, c := range s.cfg.BrokerConfigs {
		v.static[c.Name] = c
	}
	return v
}

// defaultOf is the DEFAULT_CONFIG value of a broker config, nil if none.
func (v configView) defaultOf(name string) *string {
	d, known := brokerConfigDefs[name]
	if known && d.def == nil {
		return nil
	}
	if c, ok := v.static[name]; ok {
		return &c.Default
	}
	if known {
		return d.def
	}
	return nil
}

// synonyms is Kafka's ConfigHelper.configSynonyms for the broker config
// name: every layer that sets one of its synonyms, in precedence order,
// from the first entry naming name itself.
func (v configView) synonyms(name string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	names := brokerConfigSynonyms(name)
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	add := func(n string, val *string, src kmsg.ConfigSource) {
		sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		sy.Name, sy.Value, sy.Source = n, val, src
		out = append(out, sy)
	}
	for _, n := range names {
		if x, ok := v.broker[n]; ok {
			add(n, &x, configSourceDynamicBroker)
		}
	}
	for _, n := range names {
		if x, ok := v.clusterDefault[n]; ok {
			add(n, &x, configSourceDynamicDefaultBroker)
		}
	}
	for _, n := range names {
		if c, ok := v.static[n]; ok && c.Set {
			x := c.Value
			add(n, &x, configSourceStaticBroker)
		}
	}
	for _, n := range names {
		if d := v.defaultOf(n); d != nil {
			x := *d
			add(n, &x, configSourceDefault)
		}
	}
	for len(out) > 0 && out[0].Name != name {
		out = out[1:]
	}
	return out
}

// brokerValue is a broker config's effective value: dynamic per-broker,
// dynamic cluster default, static, Kafka's default.
func (v configView) brokerValue(name string) *string {
	if x, ok := v.broker[name]; ok {
		return &x
	}
	if x, ok := v.clusterDefault[name]; ok {
		return &x
	}
	if c, ok := v.static[name]; ok {
		x := c.Value
		return &x
	}
	return v.defaultOf(name)
}

func handleDescribeConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	view := s.configView()
	for _, res := range req.Resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		configs, err := s.describeResource(view, res, req.IncludeSynonyms && r.Version >= 1, req.IncludeDocumentation && r.Version >= 3)
		if err != nil {
			out.ErrorCode = s.configErrorCode(err)
			out.ErrorMessage = errorMessage(err)
		} else {
			out.Configs = configs
		}
		for i := range out.Configs {
			c := &out.Configs[i]
			c.IsDefault = c.Source == configSourceDefault
			if r.Version < 3 {
				c.Documentation = nil
			}
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}

// configError is an error answered with a given code and Kafka's message.
type configError struct {
	code *kerr.Error
	msg  string
}

func (e *configError) Error() string { return e.msg }

func invalidRequest(format string, args ...any) error {
	return &configError{kerr.InvalidRequest, fmt.Sprintf(format, args...)}
}

func (s *Server) configErrorCode(err error) int16 {
	if ce, ok := err.(*configError); ok {
		return ce.code.Code
	}
	return s.errorCode(err)
}

func (s *Server) describeResource(view configView, res kmsg.DescribeConfigsRequestResource, synonyms, docs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	keys := make(map[string]bool, len(res.ConfigNames))
	for _, n := range res.ConfigNames {
		keys[n] = true
	}
	want := func(name string) bool { return len(keys) == 0 || keys[name] }
	var out []kmsg.DescribeConfigsResponseResourceConfig
	switch res.ResourceType {
	case resourceTopic:
		if err := partition.ValidateTopicName(res.ResourceName); err != nil {
			return nil, err
		}
		t := s.store.Topic(res.ResourceName)
		if t == nil {
			return nil, partition.ErrUnknownTopic // Kafka sends no message
		}
		modeled := modeledTopicConfigs(t.Config)
		for _, name := range partition.TopicConfigNames() {
			if want(name) {
				out = append(out, view.topicEntry(t, modeled, name, synonyms, docs))
			}
		}
	case resourceBroker:
		perBroker := res.ResourceName != ""
		if perBroker {
			if err := s.checkBrokerID(res.ResourceName, "Broker id must be an integer, but it is: %s", "Unexpected broker id, expected %d or empty string, but received %s"); err != nil {
				return nil, err
			}
		}
		for _, name := range view.brokerNames(perBroker) {
			if want(name) {
				out = append(out, view.brokerEntry(name, perBroker, synonyms, docs))
			}
		}
	case resourceBrokerLogger:
		if res.ResourceName == "" {
			return nil, invalidRequest("Broker id must not be empty")
		}
		if err := s.checkBrokerID(res.ResourceName, "Broker id must be an integer, but it is: %s", "Unexpected broker id, expected %d but received %s"); err != nil {
			return nil, err
		}
		if want("root") {
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			level := log4jLevel(s.log.GetLevel())
			c.Name, c.Value, c.Source = "root", &level, configSourceDynamicBrokerLogger
			c.ReadOnly = true // IncrementalAlterConfigs cannot change it here
			out = append(out, c)
		}
	default:
		return nil, invalidRequest("Unsupported resource type: %s", resourceTypeName(res.ResourceType))
	}
	return out, nil
}

// checkBrokerID checks a BROKER resource name against node.id.
func (s *Server) checkBrokerID(name, notInt, wrong string) error {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return invalidRequest(notInt, name)
	}
	if int32(id) != s.cfg.NodeID {
		return invalidRequest(wrong, s.cfg.NodeID, name)
	}
	return nil
}

func resourceTypeName(t kmsg.ConfigResourceType) string {
	switch t {
	case resourceTopic:
		return "TOPIC"
	case resourceBroker:
		return "BROKER"
	case resourceBrokerLogger:
		return "BROKER_LOGGER"
	case resourceGroup:
		return "GROUP"
	case resourceClientMetrics:
		return "CLIENT_METRICS"
	}
	return "UNKNOWN"
}

// log4jLevel names a zerolog level as log4j does.
func log4jLevel(l zerolog.Level) string {
	if g := zerolog.GlobalLevel(); g > l {
		l = g
	}
	switch l {
	case zerolog.TraceLevel:
		return "TRACE"
	case zerolog.DebugLevel:
		return "DEBUG"
	case zerolog.InfoLevel:
		return "INFO"
	case zerolog.WarnLevel:
		return "WARN"
	case zerolog.ErrorLevel:
		return "ERROR"
	case zerolog.FatalLevel, zerolog.PanicLevel:
		return "FATAL"
	}
	return "OFF"
}

// brokerNames lists the broker configs a BROKER resource describes: every
// config kcompatd knows for this broker, only the dynamic cluster
// defaults for "".
func (v configView) brokerNames(perBroker bool) []string {
	set := map[string]bool{}
	if perBroker {
		for n := range brokerConfigDefs {
			set[n] = true
		}
		for n := range v.static {
			set[n] = true
		}
		for n := range v.broker {
			set[n] = true
		}
	}
	for n := range v.clusterDefault {
		set[n] = true
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// brokerEntry is Kafka's ConfigHelper.createBrokerConfigEntry.
func (v configView) brokerEntry(name string, perBroker, withSynonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	syn := v.synonyms(name)
	if !perBroker {
		kept := syn[:0]
		for _, sy := range syn {
			if sy.Source == configSourceDynamicDefaultBroker {
				kept = append(kept, sy)
			}
		}
		syn = kept
		if x, ok := v.clusterDefault[name]; ok {
			c.Value = &x
		}
	} else {
		c.Value = v.brokerValue(name)
	}
	c.Source = configSourceDefault
	if len(syn) > 0 {
		c.Source = syn[0].Source
	}
	if withSynonyms {
		c.ConfigSynonyms = syn
	}
	c.ReadOnly = !brokerDynamic(name)
	c.ConfigType = configTypeString
	if d, ok := brokerConfigDefs[name]; ok {
		c.ConfigType = d.typ
	} else if t, ok := configTypeByName[v.static[name].Type]; ok {
		c.ConfigType = t
	}
	if docs {
		doc := brokerConfigDoc(name)
		c.Documentation = &doc
	}
	return c
}

// topicEntry is Kafka's ConfigHelper.createTopicConfigEntry.
func (v configView) topicEntry(t *partition.Topic, modeled map[string]string, name string, withSynonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	typ := topicConfigTypes[name]
	c.ConfigType = typ
	var syn []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if bs := partition.BrokerSynonyms(name); len(bs) > 0 {
		syn = v.synonyms(bs[0])
	}
	override, overridden := t.Overrides[name]
	var value *string
	switch m, ok := modeled[name]; {
	case ok:
		value = &m
	case overridden:
		x := printTopicValue(typ, override)
		value = &x
	default:
		if len(syn) > 0 {
			x := printTopicValue(typ, *syn[0].Value)
			value = &x
		} else {
			x := kafkaTopicConfigDefaults[name]
			value = &x
		}
	}
	if overridden {
		sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		x := *value
		sy.Name, sy.Value, sy.Source = name, &x, configSourceDynamicTopic
		syn = append([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{sy}, syn...)
	}
	c.Value = value
	c.Source = configSourceDefault
	if len(syn) > 0 {
		c.Source = syn[0].Source
	}
	if withSynonyms {
		c.ConfigSynonyms = syn
	}
	if docs {
		doc := kafkaTopicConfigDocs[name]
		c.Documentation = &doc
	}
	return c
}

// printTopicValue prints a validated value as Kafka's
// ConfigDef.convertToString would: trimmed, booleans in lower case, lists
// without blanks.
func printTopicValue(typ kmsg.ConfigType, v string) string {
	v = strings.TrimSpace(v)
	switch typ {
	case configTypeBoolean:
		return strings.ToLower(v)
	case configTypeList:
		var parts []string
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		return strings.Join(parts, ",")
	case configTypeInt, configTypeLong:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case configTypeDouble:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return javaDouble(f)
		}
	}
	return v
}

// brokerTimestampBounds returns the broker defaults of
// message.timestamp.before.max.ms and after.max.ms in effect: the dynamic
// broker configs (falling back on the deprecated
// log.message.timestamp.difference.max.ms, as Kafka's LogConfig does),
// else the static Config values.
func (s *Server) brokerTimestampBounds() (before, after int64) {
	before, after = s.cfg.MessageTimestampBeforeMaxMs, s.cfg.MessageTimestampAfterMaxMs
	get := func(name string) (int64, bool) {
		if v, ok := s.store.DynamicBrokerConfig(name); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n, true
			}
		}
		return 0, false
	}
	if d, ok := get("log.message.timestamp.difference.max.ms"); ok && d != math.MaxInt64 {
		before, after = d, d
	}
	if n, ok := get("log.message.timestamp.before.max.ms"); ok {
		before = n
	}
	if n, ok := get("log.message.timestamp.after.max.ms"); ok {
		after = n
	}
	return before, after
}
