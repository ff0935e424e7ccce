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
	"sort"
	"strconv"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeConfigs.Int16(), 0, 4, handleDescribeConfigs) }

// Config resource types (ConfigResource.Type ids).
const (
	resourceTopic         = kmsg.ConfigResourceType(2)
	resourceBroker        = kmsg.ConfigResourceType(4)
	resourceBrokerLogger  = kmsg.ConfigResourceType(8)
	resourceGroup         = kmsg.ConfigResourceType(32)
	resourceClientMetrics = kmsg.ConfigResourceType(16)
)

// Kafka's DescribeConfigs config sources (ConfigSource ids in the protocol).
const (
	configSourceDynamicTopic         = 1 // DYNAMIC_TOPIC_CONFIG
	configSourceDynamicBroker        = 2 // DYNAMIC_BROKER_CONFIG
	configSourceDynamicDefaultBroker = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	configSourceStaticBroker         = 4 // STATIC_BROKER_CONFIG
	configSourceDefault              = 5 // DEFAULT_CONFIG
	configSourceDynamicBrokerLogger  = 6 // DYNAMIC_BROKER_LOGGER_CONFIG
)

// BrokerConfig is one broker property as the broker was started with,
// for DescribeConfigs and for the precedence of dynamic broker configs.
type BrokerConfig struct {
	// Def is the property's definition in the broker's catalog: name,
	// type, default (none where NullDefault) and Kafka's documentation.
	configdef.Def
	Value string // effective static value
	// Set reports that the value was configured (server.properties, -c)
	// rather than left at its default: Kafka's STATIC_BROKER_CONFIG.
	Set bool
	// OverrideOf is, for a listener.name.<l>.[<m>.]<property> override,
	// the property it overrides: its synonym after itself, as Kafka's
	// DynamicBrokerConfig.brokerConfigSynonyms with listener overrides.
	OverrideOf string
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
	// The broker defaults of topic configs, and their other names, that
	// the static list leaves out stand at their defaults.
	atDefault := func(d configdef.Def, value string) {
		if _, ok := v.static[d.Name]; !ok {
			v.static[d.Name] = BrokerConfig{Def: d, Value: value}
		}
	}
	for _, b := range partition.BrokerLogConfigs() {
		value := b.Default
		if b.NullDefault {
			value = b.TopicDefault
		}
		atDefault(b.Def, value)
		for _, syn := range b.Synonyms {
			atDefault(syn, syn.Default)
		}
	}
	return v
}

// defaultOf is the DEFAULT_CONFIG value of a broker config, nil if none.
func (v configView) defaultOf(name string) *string {
	c, ok := v.static[name]
	if !ok || c.NullDefault {
		return nil
	}
	d := c.Default
	return &d
}

// synonyms is Kafka's ConfigHelper.configSynonyms for the broker config
// name: every layer that sets one of its synonyms, in precedence order,
// from the first entry naming name itself.
func (v configView) synonyms(name string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	names := partition.BrokerConfigSynonyms(name)
	if base := v.static[name].OverrideOf; base != "" {
		names = []string{name, base}
	}
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
		if code := s.configAuthCode(r, authz.OpDescribeConfigs, res.ResourceType, res.ResourceName); code != 0 {
			out.ErrorCode = code
		} else if err != nil {
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
		for _, name := range partition.TopicConfigNames() {
			if want(name) {
				out = append(out, view.topicEntry(t, name, synonyms, docs))
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
	case resourceGroup:
		return s.describeGroupConfigs(res.ResourceName, want, synonyms, docs)
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
	c.ConfigType = kmsg.ConfigType(configdef.String)
	if st, ok := v.static[name]; ok {
		c.ConfigType = kmsg.ConfigType(st.Type)
		if st.Type == configdef.Password {
			// Kafka's ConfigHelper: a sensitive value is never sent.
			c.IsSensitive, c.Value = true, nil
			for i := range c.ConfigSynonyms {
				c.ConfigSynonyms[i].Value = nil
			}
		}
	}
	if docs && v.static[name].OverrideOf == "" { // Kafka documents no override
		doc := v.static[name].Doc
		c.Documentation = &doc
	}
	return c
}

// topicEntry is Kafka's ConfigHelper.createTopicConfigEntry: the topic's
// override, else the first broker config of the synonym chain that is set
// (dynamic per-broker, dynamic cluster default, static), else the topic
// config's default.
func (v configView) topicEntry(t *partition.Topic, name string, withSynonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	def, _ := partition.TopicConfigDef(name)
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	c.ConfigType = kmsg.ConfigType(def.Type)
	var syn []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if bs := partition.BrokerSynonyms(name); len(bs) > 0 {
		syn = v.synonyms(bs[0])
	}
	value := def.Default
	if override, ok := t.Overrides[name]; ok {
		value = def.Canonical(override)
		sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		x := value
		sy.Name, sy.Value, sy.Source = name, &x, configSourceDynamicTopic
		syn = append([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{sy}, syn...)
	} else if len(syn) > 0 {
		value = def.Canonical(*syn[0].Value)
	}
	c.Value = &value
	c.Source = configSourceDefault
	if len(syn) > 0 {
		c.Source = syn[0].Source
	}
	if withSynonyms {
		c.ConfigSynonyms = syn
	}
	if docs {
		doc := def.Doc
		c.Documentation = &doc
	}
	return c
}
