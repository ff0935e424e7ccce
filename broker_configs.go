package kcompatd

import (
	"maps"
	"slices"

	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol"
)

// brokerConfigs lists the static properties for DescribeConfigs: the
// catalog's, then the broker defaults of topic configs (their other names,
// log.retention.hours, protocol lists at their defaults: LogDefaults holds
// the setting under its first name). A property counts as set (Kafka's STATIC_BROKER_CONFIG) when
// its value differs from kcompatd's default; ParseConfig does not keep
// which properties were named, and one set to its default value reads the
// same.
func (c *Config) brokerConfigs() []protocol.BrokerConfig {
	d := DefaultConfig()
	var out []protocol.BrokerConfig
	add := func(def protocol.BrokerConfig) { out = append(out, def) }
	for i := range properties {
		p := &properties[i]
		v := p.get(c)
		add(protocol.BrokerConfig{Def: p.Def, Value: v, Set: v != p.get(&d)})
	}
	for _, b := range partition.BrokerLogConfigs() {
		v := c.logDefault(b)
		add(protocol.BrokerConfig{Def: b.Def, Value: v, Set: v != d.logDefault(b)})
	}
	// The listener.name.* overrides as Kafka lists the originals: set,
	// of the type of the property they override, undocumented.
	for _, name := range slices.Sorted(maps.Keys(c.ListenerProperties)) {
		p := listenerProperty(name)
		def := configdef.Def{Name: name, Type: p.Type, NullDefault: true}
		add(protocol.BrokerConfig{Def: def, Value: c.ListenerProperties[name], Set: true, OverrideOf: p.Name})
	}
	return out
}
