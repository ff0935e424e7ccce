package partition

// Dynamic broker configs: the broker-level topic config defaults
// (log.segment.bytes, log.retention.ms, ...) changed at run time through
// AlterConfigs / IncrementalAlterConfigs on the BROKER resource, either for
// this broker ("1", Kafka's DYNAMIC_BROKER_CONFIG) or for the cluster
// default ("", DYNAMIC_DEFAULT_BROKER_CONFIG). Kafka keeps them in the
// metadata log; kcompatd keeps them in one small JSON file in the data dir,
// written atomically, and applies Kafka's precedence when computing each
// topic's effective LogConfig: topic override > dynamic per-broker >
// dynamic cluster default > static (server.properties) > Kafka's default.
//
// A change reaches every Log at once (its LogConfig pointer is swapped), so
// segment.bytes, segment.ms, retention, cleanup.policy and the compaction
// lags apply to the next append or cleaner pass; segment.index.bytes
// applies to segments rolled afterwards, as in Kafka.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// dynamicBrokerConfigFile holds the dynamic broker configs.
const dynamicBrokerConfigFile = "kcompatd-dynamic-broker-configs.json"

// brokerTopicSynonyms maps each topic config to the broker configs that
// give its default, highest priority first, with the unit factor of each
// (Kafka's ServerTopicConfigSynonyms). The first name is the one Kafka lets
// be changed dynamically.
var brokerTopicSynonyms = map[string][]string{
	"segment.bytes":                       {"log.segment.bytes"},
	"segment.ms":                          {"log.roll.ms", "log.roll.hours"},
	"segment.jitter.ms":                   {"log.roll.jitter.ms", "log.roll.jitter.hours"},
	"segment.index.bytes":                 {"log.index.size.max.bytes"},
	"flush.messages":                      {"log.flush.interval.messages"},
	"flush.ms":                            {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
	"retention.bytes":                     {"log.retention.bytes"},
	"retention.ms":                        {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	"max.message.bytes":                   {"message.max.bytes"},
	"index.interval.bytes":                {"log.index.interval.bytes"},
	"delete.retention.ms":                 {"log.cleaner.delete.retention.ms"},
	"min.compaction.lag.ms":               {"log.cleaner.min.compaction.lag.ms"},
	"max.compaction.lag.ms":               {"log.cleaner.max.compaction.lag.ms"},
	"file.delete.delay.ms":                {"log.segment.delete.delay.ms"},
	"min.cleanable.dirty.ratio":           {"log.cleaner.min.cleanable.ratio"},
	"cleanup.policy":                      {"log.cleanup.policy"},
	"unclean.leader.election.enable":      {"unclean.leader.election.enable"},
	"min.insync.replicas":                 {"min.insync.replicas"},
	"compression.type":                    {"compression.type"},
	"compression.gzip.level":              {"compression.gzip.level"},
	"compression.lz4.level":               {"compression.lz4.level"},
	"compression.zstd.level":              {"compression.zstd.level"},
	"preallocate":                         {"log.preallocate"},
	"message.format.version":              {"log.message.format.version"},
	"message.timestamp.type":              {"log.message.timestamp.type"},
	"message.timestamp.difference.max.ms": {"log.message.timestamp.difference.max.ms"},
	"message.timestamp.before.max.ms":     {"log.message.timestamp.before.max.ms"},
	"message.timestamp.after.max.ms":      {"log.message.timestamp.after.max.ms"},
	"message.downconversion.enable":       {"log.message.downconversion.enable"},
	"local.retention.ms":                  {"log.local.retention.ms"},
	"local.retention.bytes":               {"log.local.retention.bytes"},
}

// brokerToTopic maps each dynamically changeable broker config to the
// topic config it is the default of (Kafka's DynamicLogConfig: the first
// synonym of each, except log.message.format.version).
var brokerToTopic = func() map[string]string {
	m := make(map[string]string, len(brokerTopicSynonyms))
	for topic, syn := range brokerTopicSynonyms {
		if topic != "message.format.version" {
			m[syn[0]] = topic
		}
	}
	return m
}()

// BrokerSynonyms returns the broker configs that give topic config name
// its default, highest priority first (log.retention.ms,
// log.retention.minutes, log.retention.hours for retention.ms); nil for a
// topic config no broker config defaults (remote.storage.enable).
func BrokerSynonyms(topicConfig string) []string {
	return append([]string(nil), brokerTopicSynonyms[topicConfig]...)
}

// TopicConfigOf returns the topic config whose default the broker config
// name sets, for the broker configs Kafka lets be changed dynamically
// (log.segment.bytes: segment.bytes).
func TopicConfigOf(brokerConfig string) (string, bool) {
	t, ok := brokerToTopic[brokerConfig]
	return t, ok
}

// dynamicBroker is the Store's dynamic broker config state.
type dynamicBroker struct {
	mu             sync.RWMutex
	clusterDefault map[string]string // DYNAMIC_DEFAULT_BROKER_CONFIG, by broker config name
	broker         map[string]string // DYNAMIC_BROKER_CONFIG, for this broker
	static         LogConfig         // Config.Defaults as opened
	// defaults is static with the dynamic log configs applied.
	defaults atomic.Pointer[LogConfig]
}

type dynamicBrokerJSON struct {
	Version        int               `json:"version"`
	ClusterDefault map[string]string `json:"cluster_default"`
	Broker         map[string]string `json:"broker"`
}

// dynamicDefaults returns the effective broker-level topic defaults.
func (s *Store) dynamicDefaults() LogConfig {
	if p := s.dyn.defaults.Load(); p != nil {
		return *p
	}
	return s.cfg.Defaults
}

// loadDynamicBrokerConfigs reads the dynamic broker configs at Open and
// computes the effective defaults. An entry that no longer validates is
// dropped with a warning, as Kafka ignores invalid dynamic configs.
func (s *Store) loadDynamicBrokerConfigs() error {
	s.dyn.static = s.cfg.Defaults
	s.dyn.clusterDefault = map[string]string{}
	s.dyn.broker = map[string]string{}
	data, err := readFile(s.fs, filepath.Join(s.cfg.Dir, dynamicBrokerConfigFile), maxCheckpointFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("partition: reading %s: %w", dynamicBrokerConfigFile, err)
	default:
		var f dynamicBrokerJSON
		if err := json.Unmarshal(data, &f); err != nil {
			return fmt.Errorf("partition: decoding %s: %w", dynamicBrokerConfigFile, err)
		}
		for name, v := range f.ClusterDefault {
			if err := validateBrokerLogConfig(s.cfg.Defaults, name, v); err != nil {
				s.logger.Warn().Err(err).Str("config", name).Msg("ignoring invalid dynamic cluster default broker config")
				continue
			}
			s.dyn.clusterDefault[name] = v
		}
		for name, v := range f.Broker {
			if err := validateBrokerLogConfig(s.cfg.Defaults, name, v); err != nil {
				s.logger.Warn().Err(err).Str("config", name).Msg("ignoring invalid dynamic broker config")
				continue
			}
			s.dyn.broker[name] = v
		}
	}
	d, err := resolveBrokerDefaults(s.dyn.static, s.dyn.clusterDefault, s.dyn.broker)
	if err != nil {
		s.logger.Warn().Err(err).Msg("ignoring dynamic broker configs that conflict")
		d = s.dyn.static
	}
	s.dyn.defaults.Store(&d)
	return nil
}

// validateBrokerLogConfig checks one broker config value if it is the
// default of a topic config, worded with the broker config's name as
// Kafka's KafkaConfig would.
func validateBrokerLogConfig(base LogConfig, name, value string) error {
	topic, ok := brokerToTopic[name]
	if !ok {
		return nil
	}
	var c LogConfig = base
	if err := parseTopicConfig(&c, topic, value); err != nil {
		msg := strings.Replace(err.Error(), "for configuration "+topic+":", "for configuration "+name+":", 1)
		return withDetail(ErrInvalidConfig, msg)
	}
	return nil
}

// resolveBrokerDefaults applies the dynamic cluster default, then the
// dynamic per-broker configs, to the static defaults.
func resolveBrokerDefaults(static LogConfig, clusterDefault, broker map[string]string) (LogConfig, error) {
	topicLevel := map[string]string{}
	for _, m := range []map[string]string{clusterDefault, broker} {
		for name, v := range m {
			if t, ok := brokerToTopic[name]; ok {
				topicLevel[t] = v
			}
		}
	}
	return ResolveLogConfig(static, topicLevel)
}

// DynamicBrokerConfigs returns copies of the dynamic broker configs: the
// cluster default ones and this broker's, by broker config name.
func (s *Store) DynamicBrokerConfigs() (clusterDefault, broker map[string]string) {
	s.dyn.mu.RLock()
	defer s.dyn.mu.RUnlock()
	return copyMap(s.dyn.clusterDefault), copyMap(s.dyn.broker)
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// AlterDynamicBrokerConfigs replaces the whole set of dynamic broker
// configs of this broker (perBroker) or of the cluster default, after
// validating the values of the broker configs that default a topic config
// (errors wrap ErrInvalidConfig with Kafka's wording). Which names may be
// changed dynamically is the caller's decision; other names are stored and
// reported as given. The new defaults reach every topic without an
// override at once, and survive a restart. With validateOnly nothing
// changes.
func (s *Store) AlterDynamicBrokerConfigs(perBroker bool, configs map[string]string, validateOnly bool) error {
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := validateBrokerLogConfig(s.dyn.static, n, configs[n]); err != nil {
			return err
		}
	}
	s.catalogMu.Lock()
	defer s.catalogMu.Unlock()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	s.dyn.mu.RLock()
	def, broker := copyMap(s.dyn.clusterDefault), copyMap(s.dyn.broker)
	s.dyn.mu.RUnlock()
	if perBroker {
		broker = copyMap(configs)
	} else {
		def = copyMap(configs)
	}
	defaults, err := resolveBrokerDefaults(s.dyn.static, def, broker)
	if err != nil {
		return err
	}
	// Every topic must still resolve over the new defaults (a topic's
	// min.compaction.lag.ms above a new default max.compaction.lag.ms would
	// not), or it could not be opened after a restart. Deliberate
	// difference: Kafka does not check existing topics when a broker
	// default changes (as far as we know; not verified against its
	// source), so this refusal is ours. Topics change only under
	// catalogMu, which is held.
	resolved := map[string]LogConfig{}
	for _, t := range s.Topics() {
		conf, err := ResolveLogConfig(defaults, t.Overrides)
		if err != nil {
			return withDetail(ErrInvalidConfig, fmt.Sprintf("topic %s: %v", t.Name, err))
		}
		resolved[t.Name] = conf
	}
	if validateOnly {
		return nil
	}
	data, err := json.MarshalIndent(dynamicBrokerJSON{Version: 1, ClusterDefault: def, Broker: broker}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, dynamicBrokerConfigFile), append(data, '\n')); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrStorage, dynamicBrokerConfigFile, err)
	}
	s.dyn.mu.Lock()
	s.dyn.clusterDefault, s.dyn.broker = def, broker
	s.dyn.defaults.Store(&defaults)
	s.dyn.mu.Unlock()

	// Hand every topic and each of its Logs the new configuration.
	s.mu.Lock()
	for name, t := range s.topics {
		conf, ok := resolved[name]
		if !ok {
			continue
		}
		nt := *t
		nt.Config = conf
		s.topics[name] = &nt
		s.byID[t.ID] = &nt
		for _, l := range t.Partitions {
			c := conf
			l.cfg.Store(&c)
		}
	}
	s.mu.Unlock()
	s.logger.Info().Bool("per_broker", perBroker).Int("configs", len(configs)).Msg("dynamic broker configs altered")
	return nil
}

// DynamicBrokerConfig returns the dynamic value of one broker config in
// effect: this broker's, else the cluster default's. It does not allocate,
// so hot paths (Produce) may call it.
func (s *Store) DynamicBrokerConfig(name string) (string, bool) {
	s.dyn.mu.RLock()
	defer s.dyn.mu.RUnlock()
	if v, ok := s.dyn.broker[name]; ok {
		return v, true
	}
	v, ok := s.dyn.clusterDefault[name]
	return v, ok
}
