package protocol

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

func describeConfigsReq(v int16, typ kmsg.ConfigResourceType, name string, keys ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(v)
	req.IncludeSynonyms = true
	req.IncludeDocumentation = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	res.ConfigNames = keys
	req.Resources = append(req.Resources, res)
	return req
}

func oneDescribed(t *testing.T, r kmsg.Response) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	resp := r.(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 {
		t.Fatalf("want one resource, got %+v", resp.Resources)
	}
	return resp.Resources[0]
}

func configNamed(t *testing.T, res kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range res.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("config %s not described; got %d configs", name, len(res.Configs))
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestDescribeConfigsEveryVersion checks the fields each version adds, over
// the wire.
func TestDescribeConfigsEveryVersion(t *testing.T) {
	// Kafka 4 serves v0 no more; 3.9 still does, and so does kcompatd
	// capped at it.
	b := startBroker(t, func(c *Config) { c.Versions = kversion.FromString("3.9") })
	b.createTopic(t, "t", 1, map[string]string{"segment.bytes": " 1049576 ", "cleanup.policy": "compact, delete"})
	for v := int16(0); v <= 4; v++ {
		w := dialWire(t, b.addr)
		res := oneDescribed(t, w.roundTrip(describeConfigsReq(v, resourceTopic, "t")))
		if res.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, res.ErrorCode)
		}
		if len(res.Configs) != len(partition.TopicConfigNames()) {
			t.Errorf("v%d: %d configs, want %d", v, len(res.Configs), len(partition.TopicConfigNames()))
		}
		seg := configNamed(t, res, "segment.bytes")
		ret := configNamed(t, res, "retention.ms")
		pol := configNamed(t, res, "cleanup.policy")
		if deref(seg.Value) != "1049576" || deref(pol.Value) != "compact,delete" || deref(ret.Value) != "604800000" {
			t.Errorf("v%d: values %s %s %s", v, deref(seg.Value), deref(pol.Value), deref(ret.Value))
		}
		if seg.ReadOnly || seg.IsSensitive {
			t.Errorf("v%d: topic configs are writable and not sensitive", v)
		}
		switch {
		case v == 0:
			if seg.IsDefault || !ret.IsDefault {
				t.Errorf("v0: IsDefault seg=%v ret=%v", seg.IsDefault, ret.IsDefault)
			}
			if len(seg.ConfigSynonyms) != 0 {
				t.Errorf("v0 has no synonyms")
			}
		default:
			if seg.Source != configSourceDynamicTopic || ret.Source != configSourceDefault {
				t.Errorf("v%d: sources %d %d", v, seg.Source, ret.Source)
			}
			// Kafka: the override, then log.segment.bytes' default.
			if len(seg.ConfigSynonyms) != 2 || seg.ConfigSynonyms[0].Source != configSourceDynamicTopic ||
				seg.ConfigSynonyms[1].Name != "log.segment.bytes" || deref(seg.ConfigSynonyms[1].Value) != "1073741824" ||
				seg.ConfigSynonyms[1].Source != configSourceDefault {
				t.Errorf("v%d: segment.bytes synonyms %+v", v, seg.ConfigSynonyms)
			}
			// Kafka's chain for retention.ms starts at log.retention.ms,
			// which has no default: no synonyms.
			if len(ret.ConfigSynonyms) != 0 {
				t.Errorf("v%d: retention.ms synonyms %+v", v, ret.ConfigSynonyms)
			}
		}
		if v >= 3 {
			if seg.ConfigType != kmsg.ConfigType(configdef.Int) || pol.ConfigType != kmsg.ConfigType(configdef.List) || ret.ConfigType != kmsg.ConfigType(configdef.Long) {
				t.Errorf("v%d: types %d %d %d", v, seg.ConfigType, pol.ConfigType, ret.ConfigType)
			}
			if !strings.Contains(deref(seg.Documentation), "segment file size") {
				t.Errorf("v%d: documentation %q", v, deref(seg.Documentation))
			}
		} else if seg.ConfigType != 0 || seg.Documentation != nil {
			t.Errorf("v%d: no type or documentation before v3", v)
		}
	}
}

func TestDescribeConfigsResources(t *testing.T) {
	b := startBroker(t, func(c *Config) {
		c.BrokerConfigs = []BrokerConfig{
			{Def: configdef.Def{Name: "log.segment.bytes", Type: configdef.Int, Default: "1073741824"}, Value: "1050576", Set: true},
			{Def: configdef.Def{Name: "num.partitions", Type: configdef.Int, Default: "1"}, Value: "1"},
		}
	})
	b.createTopic(t, "t", 1, nil)
	for _, tc := range []struct {
		name     string
		typ      kmsg.ConfigResourceType
		resource string
		keys     []string
		code     int16
		msg      string
		configs  int // -1: don't check
	}{
		{"unknown topic", resourceTopic, "nope", nil, kerr.UnknownTopicOrPartition.Code, "", 0},
		{"bad topic name", resourceTopic, "a/b", nil, kerr.InvalidTopicException.Code, "", 0},
		{"topic keys", resourceTopic, "t", []string{"segment.bytes", "no.such"}, 0, "", 1},
		{"broker", resourceBroker, "1", nil, 0, "", -1},
		{"broker keys", resourceBroker, "1", []string{"log.segment.bytes"}, 0, "", 1},
		{"other broker", resourceBroker, "2", nil, kerr.InvalidRequest.Code, "Unexpected broker id, expected 1 or empty string, but received 2", 0},
		{"broker not a number", resourceBroker, "x", nil, kerr.InvalidRequest.Code, "Broker id must be an integer, but it is: x", 0},
		{"cluster default, none set", resourceBroker, "", nil, 0, "", 0},
		{"logger", resourceBrokerLogger, "1", nil, 0, "", 1},
		{"logger no id", resourceBrokerLogger, "", nil, kerr.InvalidRequest.Code, "Broker id must not be empty", 0},
		{"group", resourceGroup, "g", nil, 0, "", 17},
		{"group keys", resourceGroup, "g", []string{"share.auto.offset.reset", "no.such"}, 0, "", 1},
		{"group no id", resourceGroup, "", nil, kerr.InvalidRequest.Code, "Group name must not be empty", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := oneDescribed(t, dialWire(t, b.addr).roundTrip(describeConfigsReq(4, tc.typ, tc.resource, tc.keys...)))
			if res.ErrorCode != tc.code {
				t.Fatalf("code %d, want %d (%s)", res.ErrorCode, tc.code, deref(res.ErrorMessage))
			}
			if tc.msg != "" && deref(res.ErrorMessage) != tc.msg {
				t.Errorf("message %q, want %q", deref(res.ErrorMessage), tc.msg)
			}
			if tc.configs >= 0 && len(res.Configs) != tc.configs {
				t.Errorf("%d configs, want %d", len(res.Configs), tc.configs)
			}
		})
	}

	// The static log.segment.bytes is the topic's source. (Its value comes
	// from the store's defaults, which the root package sets from the same
	// properties; this test's store keeps Kafka's.)
	res := oneDescribed(t, dialWire(t, b.addr).roundTrip(describeConfigsReq(4, resourceTopic, "t", "segment.bytes")))
	seg := configNamed(t, res, "segment.bytes")
	if seg.Source != configSourceStaticBroker || len(seg.ConfigSynonyms) != 2 || deref(seg.ConfigSynonyms[0].Value) != "1050576" {
		t.Errorf("segment.bytes = %s source %d synonyms %+v", deref(seg.Value), seg.Source, seg.ConfigSynonyms)
	}
	res = oneDescribed(t, dialWire(t, b.addr).roundTrip(describeConfigsReq(4, resourceBroker, "1")))
	lsb := configNamed(t, res, "log.segment.bytes")
	np := configNamed(t, res, "num.partitions")
	if lsb.ReadOnly || !np.ReadOnly || lsb.Source != configSourceStaticBroker || np.Source != configSourceDefault {
		t.Errorf("log.segment.bytes %+v num.partitions %+v", lsb, np)
	}
}

func alterReq(v int16, typ kmsg.ConfigResourceType, name string, kv ...string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.SetVersion(v)
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], strp(kv[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	return req
}

type incOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func incReq(v int16, typ kmsg.ConfigResourceType, name string, ops ...incOp) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(v)
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	for _, o := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = o.name, o.op, o.value
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	return req
}

func TestAlterConfigsEveryVersion(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "t", 2, map[string]string{"retention.ms": "1000"})
	for v := int16(0); v <= 2; v++ {
		resp := dialWire(t, b.addr).roundTrip(alterReq(v, resourceTopic, "t", "segment.bytes", "1053576")).(*kmsg.AlterConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Resources)
		}
		tp := b.store.Topic("t")
		if tp.Overrides["segment.bytes"] != "1053576" || len(tp.Overrides) != 1 {
			t.Fatalf("v%d: legacy alter replaces the set: %v", v, tp.Overrides)
		}
		for _, l := range tp.Partitions {
			if l.Config().SegmentBytes != 1053576 {
				t.Fatalf("v%d: log not updated", v)
			}
		}
		b.store.AlterTopicConfig("t", partition.ReplaceConfigs(map[string]string{"retention.ms": "1000"}), false)
	}
}

func TestIncrementalAlterConfigsEveryVersion(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "t", 1, map[string]string{"retention.ms": "1000"})
	for v := int16(0); v <= 1; v++ {
		resp := dialWire(t, b.addr).roundTrip(incReq(v, resourceTopic, "t",
			incOp{"segment.bytes", opSet, strp("1054576")},
			incOp{"retention.ms", opDelete, nil},
			incOp{"cleanup.policy", opAppend, strp("compact")},
		)).(*kmsg.IncrementalAlterConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("v%d: %+v", v, resp.Resources)
		}
		tp := b.store.Topic("t")
		if tp.Overrides["segment.bytes"] != "1054576" || tp.Overrides["cleanup.policy"] != "delete,compact" || len(tp.Overrides) != 2 {
			t.Fatalf("v%d: overrides %v", v, tp.Overrides)
		}
		c := tp.Partitions[0].Config()
		if c.SegmentBytes != 1054576 || !c.Compact() || !c.Delete() || c.RetentionMs != 604800000 {
			t.Fatalf("v%d: log config %+v", v, c)
		}
		b.store.AlterTopicConfig("t", partition.ReplaceConfigs(map[string]string{"retention.ms": "1000"}), false)
	}
}

func TestAlterConfigsErrors(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "t", 1, nil)
	for _, tc := range []struct {
		name     string
		typ      kmsg.ConfigResourceType
		resource string
		ops      []incOp
		code     int16
		msg      string
	}{
		{"bad value", resourceTopic, "t", []incOp{{"segment.bytes", opSet, strp("1048575")}}, kerr.InvalidConfig.Code,
			"Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"},
		{"not a number", resourceTopic, "t", []incOp{{"retention.ms", opSet, strp("soon")}}, kerr.InvalidConfig.Code,
			"Invalid value soon for configuration retention.ms: Not a number of type LONG"},
		{"unknown name", resourceTopic, "t", []incOp{{"no.such", opSet, strp("1")}}, kerr.InvalidConfig.Code,
			"Unknown topic config name: no.such"},
		{"tiered storage", resourceTopic, "t", []incOp{{"remote.storage.enable", opSet, strp("true")}}, kerr.InvalidConfig.Code,
			"Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."},
		{"append to non-list", resourceTopic, "t", []incOp{{"segment.bytes", opAppend, strp("1")}}, kerr.InvalidConfig.Code,
			"Can't APPEND to key segment.bytes because its type is not LIST."},
		{"unknown topic", resourceTopic, "nope", []incOp{{"segment.bytes", opSet, strp("1049576")}}, kerr.UnknownTopicOrPartition.Code,
			"The topic 'nope' does not exist."},
		{"default topic", resourceTopic, "", nil, kerr.InvalidRequest.Code, "Default topic resources are not allowed."},
		{"null value", resourceTopic, "t", []incOp{{"segment.bytes", opSet, nil}}, kerr.InvalidRequest.Code, "Null value not supported for : segment.bytes"},
		{"duplicate keys", resourceTopic, "t", []incOp{{"segment.bytes", opSet, strp("1049576")}, {"segment.bytes", opDelete, nil}}, kerr.InvalidRequest.Code,
			"Error due to duplicate config keys"},
		{"unknown op", resourceTopic, "t", []incOp{{"segment.bytes", 9, strp("1049576")}}, kerr.InvalidRequest.Code, "Unknown operations type 9"},
		{"read-only broker config", resourceBroker, "1", []incOp{{"num.partitions", opSet, strp("3")}}, kerr.InvalidRequest.Code,
			"Cannot update these configs dynamically: Set(num.partitions)"},
		{"bad broker value", resourceBroker, "", []incOp{{"log.segment.bytes", opSet, strp("x")}}, kerr.InvalidRequest.Code,
			"Invalid value x for configuration log.segment.bytes: Not a number of type INT"},
		{"other broker", resourceBroker, "7", []incOp{{"log.segment.bytes", opSet, strp("1049576")}}, kerr.InvalidRequest.Code,
			"Unexpected broker id, expected 1, but received 7"},
		{"logger", resourceBrokerLogger, "1", []incOp{{"root", opSet, strp("DEBUG")}}, kerr.InvalidRequest.Code, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := dialWire(t, b.addr).roundTrip(incReq(1, tc.typ, tc.resource, tc.ops...)).(*kmsg.IncrementalAlterConfigsResponse)
			got := resp.Resources[0]
			if got.ErrorCode != tc.code || (tc.msg != "" && deref(got.ErrorMessage) != tc.msg) {
				t.Errorf("got %d %q, want %d %q", got.ErrorCode, deref(got.ErrorMessage), tc.code, tc.msg)
			}
		})
	}
	if ov := b.store.Topic("t").Overrides; len(ov) != 0 {
		t.Errorf("failed alters changed the topic: %v", ov)
	}
	// Legacy AlterConfigs knows no loggers; a resource named twice fails both.
	req := alterReq(2, resourceBrokerLogger, "1", "root", "DEBUG")
	req.Resources = append(req.Resources, alterReq(2, resourceTopic, "t", "segment.bytes", "1049576").Resources[0], alterReq(2, resourceTopic, "t").Resources[0])
	resp := dialWire(t, b.addr).roundTrip(req).(*kmsg.AlterConfigsResponse)
	want := []struct {
		code int16
		msg  string
	}{{kerr.InvalidRequest.Code, "Unknown resource type 8"}, {kerr.InvalidRequest.Code, "Each resource must appear at most once."}, {kerr.InvalidRequest.Code, "Each resource must appear at most once."}}
	for i, w := range want {
		if r := resp.Resources[i]; r.ErrorCode != w.code || deref(r.ErrorMessage) != w.msg {
			t.Errorf("resource %d: %d %q, want %d %q", i, r.ErrorCode, deref(r.ErrorMessage), w.code, w.msg)
		}
	}
}

// TestDynamicBrokerConfigs checks Kafka's precedence: topic override >
// per-broker > cluster default > static > default, applied to the logs
// at once.
func TestDynamicBrokerConfigs(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "plain", 1, nil)
	b.createTopic(t, "over", 1, map[string]string{"segment.bytes": "1051576"})
	inc := func(broker string, ops ...incOp) {
		t.Helper()
		resp := dialWire(t, b.addr).roundTrip(incReq(1, resourceBroker, broker, ops...)).(*kmsg.IncrementalAlterConfigsResponse)
		if r := resp.Resources[0]; r.ErrorCode != 0 {
			t.Fatalf("alter broker %q: %d %s", broker, r.ErrorCode, deref(r.ErrorMessage))
		}
	}
	check := func(topic, want string, source kmsg.ConfigSource, nsyn int) {
		t.Helper()
		res := oneDescribed(t, dialWire(t, b.addr).roundTrip(describeConfigsReq(4, resourceTopic, topic, "segment.bytes")))
		c := configNamed(t, res, "segment.bytes")
		if deref(c.Value) != want || c.Source != source || len(c.ConfigSynonyms) != nsyn {
			t.Errorf("%s: segment.bytes=%s source %d synonyms %+v; want %s %d %d", topic, deref(c.Value), c.Source, c.ConfigSynonyms, want, source, nsyn)
		}
		if got := b.store.Topic(topic).Partitions[0].Config().SegmentBytes; want != "" && itoa(int64(got)) != want {
			t.Errorf("%s: log has segment.bytes %d, want %s", topic, got, want)
		}
	}
	inc("", incOp{"log.segment.bytes", opSet, strp("1053576")})
	check("plain", "1053576", configSourceDynamicDefaultBroker, 2)
	check("over", "1051576", configSourceDynamicTopic, 3)
	inc("1", incOp{"log.segment.bytes", opSet, strp("1052576")})
	check("plain", "1052576", configSourceDynamicBroker, 3)
	res := oneDescribed(t, dialWire(t, b.addr).roundTrip(describeConfigsReq(4, resourceBroker, "", "log.segment.bytes")))
	if c := configNamed(t, res, "log.segment.bytes"); deref(c.Value) != "1053576" || c.Source != configSourceDynamicDefaultBroker || len(c.ConfigSynonyms) != 1 {
		t.Errorf("cluster default %+v", c)
	}
	inc("1", incOp{"log.segment.bytes", opDelete, nil})
	check("plain", "1053576", configSourceDynamicDefaultBroker, 2)
	inc("", incOp{"log.segment.bytes", opDelete, nil})
	check("plain", "1073741824", configSourceDefault, 1)

	// Legacy AlterConfigs on the broker replaces its dynamic set.
	resp := dialWire(t, b.addr).roundTrip(alterReq(0, resourceBroker, "", "log.retention.ms", "1234")).(*kmsg.AlterConfigsResponse)
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("legacy broker alter: %+v", resp.Resources[0])
	}
	if got := b.store.Topic("plain").Partitions[0].Config().RetentionMs; got != 1234 {
		t.Errorf("retention.ms %d after broker alter", got)
	}
}

func itoa(n int64) string {
	return strconv.FormatInt(n, 10)
}

// checkConfigsVersion is TestEveryAdvertisedVersion's check of the config
// APIs: a topic described, altered and altered incrementally at v.
func checkConfigsVersion(t *testing.T, b *testBroker, w *wire, key, v int16) {
	name := fmt.Sprintf("cfg-%d-%d", key, v)
	b.createTopic(t, name, 1, nil)
	switch key {
	case 32:
		res := oneDescribed(t, w.roundTrip(describeConfigsReq(v, resourceTopic, name, "segment.bytes")))
		c := configNamed(t, res, "segment.bytes")
		if res.ErrorCode != 0 || deref(c.Value) != "1073741824" || (v >= 1 && c.Source != configSourceDefault) ||
			(v >= 3) != (c.Documentation != nil) || (v >= 1) != (len(c.ConfigSynonyms) == 1) {
			t.Fatalf("%+v", res)
		}
	case 33:
		resp := w.roundTrip(alterReq(v, resourceTopic, name, "segment.bytes", "1050576")).(*kmsg.AlterConfigsResponse)
		if resp.Resources[0].ErrorCode != 0 || b.store.Topic(name).Partitions[0].Config().SegmentBytes != 1050576 {
			t.Fatalf("%+v", resp)
		}
	case 44:
		resp := w.roundTrip(incReq(v, resourceTopic, name, incOp{"segment.bytes", opSet, strp("1051576")})).(*kmsg.IncrementalAlterConfigsResponse)
		if resp.Resources[0].ErrorCode != 0 || b.store.Topic(name).Partitions[0].Config().SegmentBytes != 1051576 {
			t.Fatalf("%+v", resp)
		}
	}
}

// TestDynamicTimestampBounds checks that a dynamic
// log.message.timestamp.before.max.ms applies to the next Produce.
func TestDynamicTimestampBounds(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "ts", 1, nil)
	old := b.nowMs() - 3600_000
	produce := func() int16 {
		resp := dialWire(t, b.addr).roundTrip(produceReq(9, "ts", tp.ID, 0, testBatch(t, recordbatch.None, old)))
		return onlyProducePartition(t, resp).ErrorCode
	}
	if code := produce(); code != 0 {
		t.Fatalf("before the change: %d", code)
	}
	resp := dialWire(t, b.addr).roundTrip(incReq(1, resourceBroker, "", incOp{"log.message.timestamp.before.max.ms", opSet, strp("60000")})).(*kmsg.IncrementalAlterConfigsResponse)
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", resp.Resources[0])
	}
	if code := produce(); code != kerr.InvalidTimestamp.Code {
		t.Fatalf("after the change: %d, want INVALID_TIMESTAMP", code)
	}
	res := oneDescribed(t, dialWire(t, b.addr).roundTrip(describeConfigsReq(4, resourceTopic, "ts", "message.timestamp.before.max.ms")))
	if c := configNamed(t, res, "message.timestamp.before.max.ms"); deref(c.Value) != "60000" || c.Source != configSourceDynamicDefaultBroker {
		t.Errorf("described %s source %d", deref(c.Value), c.Source)
	}
}

// TestEveryTopicConfigIsDocumented: DescribeConfigs v3+ with
// IncludeDocumentation answers Kafka's text for every topic config; an
// empty string is what the Java AdminClient compat run caught for the
// replication throttle configs.
func TestEveryTopicConfigIsDocumented(t *testing.T) {
	for _, name := range partition.TopicConfigNames() {
		if def, _ := partition.TopicConfigDef(name); def.Doc == "" {
			t.Errorf("topic config %q has no documentation string", name)
		}
	}
}

// APPEND on a broker config starts from the resource's own dynamic value,
// else Kafka's default, as Kafka's ConfigAdminManager does: not from the
// static value or another layer.
func TestIncrementalAppendBrokerBase(t *testing.T) {
	b := startBroker(t, func(c *Config) {
		c.BrokerConfigs = []BrokerConfig{{Def: configdef.Def{Name: "log.cleanup.policy", Type: configdef.List, Default: "delete"}, Value: "compact", Set: true}}
	})
	w := dialWire(t, b.addr)
	for _, broker := range []string{"1", ""} {
		resp := w.roundTrip(incReq(1, resourceBroker, broker, incOp{"log.cleanup.policy", opAppend, strp("compact")})).(*kmsg.IncrementalAlterConfigsResponse)
		if r := resp.Resources[0]; r.ErrorCode != 0 {
			t.Fatalf("APPEND on %q: %d %s", broker, r.ErrorCode, deref(r.ErrorMessage))
		}
	}
	def, br := b.store.DynamicBrokerConfigs()
	if br["log.cleanup.policy"] != "delete,compact" || def["log.cleanup.policy"] != "delete,compact" {
		t.Fatalf("per-broker %q, cluster default %q; want delete,compact for both", br["log.cleanup.policy"], def["log.cleanup.policy"])
	}
}

// TestAlterConfigsGroup: legacy AlterConfigs on a GROUP makes the configs
// sent the group's whole override set, as Kafka's controller does on its
// legacy path (the overrides not sent are deleted); names and values are
// checked as for IncrementalAlterConfigs, and a failure or ValidateOnly
// changes nothing.
func TestAlterConfigsGroup(t *testing.T) {
	b := startBroker(t, nil)
	gc := b.s.groups.GroupConfigs()
	before := map[string]string{"consumer.session.timeout.ms": "50000", "share.auto.offset.reset": "earliest"}
	for _, tc := range []struct {
		name         string
		v            int16
		kv           []string
		validateOnly bool
		code         int16
		msg          string
		want         map[string]string
	}{
		{"v0 replaces the set", 0, []string{"share.auto.offset.reset", "latest"}, false, 0, "", map[string]string{"share.auto.offset.reset": "latest"}},
		{"v1 replaces the set", 1, []string{"share.isolation.level", "read_committed"}, false, 0, "", map[string]string{"share.isolation.level": "read_committed"}},
		{"v2 replaces the set", 2, []string{"consumer.session.timeout.ms", "50000", "share.auto.offset.reset", "latest"}, false, 0, "",
			map[string]string{"consumer.session.timeout.ms": "50000", "share.auto.offset.reset": "latest"}},
		{"nothing sent deletes every override", 2, nil, false, 0, "", nil},
		{"validate only", 2, []string{"share.auto.offset.reset", "latest"}, true, 0, "", before},
		{"unknown name", 2, []string{"share.auto.offset.reset", "latest", "no.such", "1"}, false, kerr.InvalidConfig.Code, "Unknown group config name: no.such", before},
		{"bad value", 2, []string{"consumer.session.timeout.ms", "soon"}, false, kerr.InvalidConfig.Code,
			"Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT", before},
		{"over the broker's bound", 2, []string{"consumer.session.timeout.ms", "600001"}, false, kerr.InvalidConfig.Code,
			"consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms", before},
		{"no group name", 2, []string{"share.auto.offset.reset", "latest"}, false, kerr.InvalidRequest.Code, "Default group resources are not allowed.", before},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg, err := gc.Alter("g", func(map[string]string) (map[string]string, string) { return maps.Clone(before), "" }, false); msg != "" || err != nil {
				t.Fatalf("set-up: %q %v", msg, err)
			}
			group := "g"
			if tc.name == "no group name" {
				group = ""
			}
			req := alterReq(tc.v, resourceGroup, group, tc.kv...)
			req.ValidateOnly = tc.validateOnly
			got := dialWire(t, b.addr).roundTrip(req).(*kmsg.AlterConfigsResponse).Resources[0]
			if got.ErrorCode != tc.code || (tc.msg != "" && deref(got.ErrorMessage) != tc.msg) {
				t.Errorf("got %d %q, want %d %q", got.ErrorCode, deref(got.ErrorMessage), tc.code, tc.msg)
			}
			if cur := gc.Get("g"); !maps.Equal(cur, tc.want) {
				t.Errorf("overrides %v, want %v", cur, tc.want)
			}
		})
	}
}
