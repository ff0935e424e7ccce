package protocol

// The GROUP config resource (KIP-848, KIP-932) of DescribeConfigs and
// IncrementalAlterConfigs: Kafka 4.3's GroupConfig names (consumer.*,
// share.*, streams.*), each described with the group's override
// (DYNAMIC_GROUP_CONFIG) or the broker's value it falls back to, and set
// or deleted per group. A value is checked against its type and lower
// bound as Kafka's ConfigDef does; one outside the broker's bounds is
// accepted and clamped where it is used, as GroupConfig.evaluate.
// Deliberate difference: the group need not exist (Kafka does not require
// it either), and a set value is visible at once (no metadata publisher).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
)

// configSourceDynamicGroup is DYNAMIC_GROUP_CONFIG.
const configSourceDynamicGroup = 8

func (s *Server) describeGroupConfigs(name string, want func(string) bool, synonyms, docs bool) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if name == "" {
		// Kafka 4.3.1's words and code (ConfigHelper).
		return nil, &configError{kerr.InvalidRequest, "Group name must not be empty"}
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, v := range s.groups.DescribeGroupConfigs(name) {
		if !want(v.Def.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = v.Def.Name
		value := v.Value
		c.Value = &value
		c.ConfigType = kmsg.ConfigType(v.Def.Type)
		c.Source = configSourceDefault
		if v.Set {
			c.Source = configSourceDynamicGroup
		}
		if synonyms {
			// As Kafka 4.3: the group's value, then the default it falls
			// back to, under its broker synonym's name if it has one.
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{}
			if v.Set {
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				x := v.Value
				sy.Name, sy.Value, sy.Source = v.Def.Name, &x, configSourceDynamicGroup
				c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
			}
			sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			x := v.Default
			sy.Name, sy.Value, sy.Source = v.Def.Name, &x, configSourceDefault
			if v.Def.Broker {
				sy.Name = "group." + v.Def.Name
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
		}
		if docs {
			doc := v.Def.Doc
			c.Documentation = &doc
		}
		out = append(out, c)
	}
	return out, nil
}

// alterGroupConfigs changes a group's config overrides: incrementally, or
// (legacy AlterConfigs) replacing the whole set with the configs sent.
func (s *Server) alterGroupConfigs(name string, ops []configOp, incremental, validateOnly bool) error {
	if name == "" {
		// Kafka 4.3.1's words and code (ControllerConfigurationValidator).
		return &configError{kerr.InvalidRequest, "Default group resources are not allowed."}
	}
	var failure error
	msg, err := s.groups.GroupConfigs().Alter(name, func(cur map[string]string) (map[string]string, string) {
		for _, o := range ops {
			if coordinator.GroupConfigDefFor(o.name) == nil {
				failure = &configError{kerr.InvalidConfig, "Unknown group config name: " + o.name}
				return nil, "invalid"
			}
		}
		next, err := applyConfigOps(cur, ops, incremental, func(o configOp) (string, error) {
			return "", invalidRequest("Unsupported operation %s for group config %s", opName(o.op), o.name)
		})
		if err != nil {
			failure = err
			return nil, "invalid"
		}
		return next, ""
	}, validateOnly)
	if failure != nil {
		return failure
	}
	if msg != "" {
		return &configError{kerr.InvalidConfig, msg}
	}
	return err
}
