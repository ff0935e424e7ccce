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
	"sync"
	"sync/atomic"
)

// dynamicBrokerConfigFile holds the dynamic broker configs.
const dynamicBrokerConfigFile = "kcompatd-dynamic-broker-configs.json"

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
	data, err := readFile(s.fs, filepath.Join(s.cfg.Dir, dynamicBrokerConfigFile), int64(s.maxMetadataBytes()))
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
			if err := validateBrokerLogConfig(name, v); err != nil {
				s.logger.Warn().Err(err).Str("config", name).Msg("ignoring invalid dynamic cluster default broker config")
				continue
			}
			s.dyn.clusterDefault[name] = v
		}
		for name, v := range f.Broker {
			if err := validateBrokerLogConfig(name, v); err != nil {
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

// AlterDynamicBrokerConfigs changes the dynamic broker configs of this
// broker (perBroker) or of the cluster default: update gets a copy of the
// current set, by broker property name, and returns the new whole set (or
// an error, returned as it is). It runs under the catalog lock, so
// concurrent alters cannot lose each other's change. The values of the
// broker properties that give topic configs their defaults are validated
// (errors wrap ErrInvalidConfig with Kafka's wording); which names may be
// changed dynamically is update's decision, and other names are stored and
// reported as given. The new defaults reach every topic without an
// override at once, and survive a restart. With validateOnly nothing
// changes.
func (s *Store) AlterDynamicBrokerConfigs(perBroker bool, update func(cur map[string]string) (map[string]string, error), validateOnly bool) error {
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
	cur := def
	if perBroker {
		cur = broker
	}
	configs, err := update(copyMap(cur))
	if err != nil {
		return err
	}
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := validateBrokerLogConfig(n, configs[n]); err != nil {
			return err
		}
	}
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
	if data, err = s.boundedMetadata("dynamic broker configs", append(data, '\n')); err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, dynamicBrokerConfigFile), data); err != nil {
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

// ReplaceConfigs is an update for AlterTopicConfig and
// AlterDynamicBrokerConfigs that replaces the whole set with m (legacy
// AlterConfigs).
func ReplaceConfigs(m map[string]string) func(map[string]string) (map[string]string, error) {
	return func(map[string]string) (map[string]string, error) { return m, nil }
}
