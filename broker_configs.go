package kcompatd

import "github.com/kcompatd/kcompatd/protocol"

// brokerConfigs lists the static properties for DescribeConfigs. A
// property counts as set (Kafka's STATIC_BROKER_CONFIG) when its value
// differs from kcompatd's default; ParseConfig does not keep which
// properties were named, and one set to its default value reads the same.
func (c *Config) brokerConfigs() []protocol.BrokerConfig {
	d := DefaultConfig()
	defaults := map[string]string{}
	for _, p := range d.Properties() {
		defaults[p[0]] = p[1]
	}
	types := map[string]string{}
	for _, p := range properties {
		switch p.field(c).(type) {
		case *bool:
			types[p.name] = "BOOLEAN"
		case *int32:
			types[p.name] = "INT"
		case *int64:
			types[p.name] = "LONG"
		case *float64:
			types[p.name] = "DOUBLE"
		default:
			types[p.name] = "STRING"
		}
	}
	props := c.Properties()
	out := make([]protocol.BrokerConfig, 0, len(props))
	for _, p := range props {
		out = append(out, protocol.BrokerConfig{Name: p[0], Value: p[1], Default: defaults[p[0]], Set: p[1] != defaults[p[0]], Type: types[p[0]]})
	}
	return out
}
