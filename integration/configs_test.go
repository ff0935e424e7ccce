package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func strPtr(s string) *string { return &s }

// describedConfig returns one config of one described resource.
func describedConfig(t *testing.T, rcs kadm.ResourceConfigs, key string) kadm.Config {
	t.Helper()
	if len(rcs) != 1 {
		t.Fatalf("want one resource, got %d", len(rcs))
	}
	if rcs[0].Err != nil {
		t.Fatalf("describe %s: %v (%s)", rcs[0].Name, rcs[0].Err, rcs[0].ErrMessage)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("%s: no config %s", rcs[0].Name, key)
	return kadm.Config{}
}

func segmentFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

// TestTopicAndBrokerConfigs drives the config APIs through kadm: a
// segment.bytes change rolls segments at once, invalid values and unknown
// topics get Kafka's errors, dynamic broker defaults apply, and all of it
// survives a restart.
func TestTopicAndBrokerConfigs(t *testing.T) {
	b := startBroker(t, "")
	const topic = "configs"
	b.createTopic(t, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := b.newClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	adm := kadm.NewClient(cl)

	// Fresh topic: Kafka's default, from log.segment.bytes.
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if c := describedConfig(t, rcs, "segment.bytes"); c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.bytes before: %s source %v", c.MaybeValue(), c.Source)
	}

	// Produce one record per batch; with internal.segment.bytes=1024
	// (Kafka 4's test-only override of segment.bytes, which must be 1 MiB
	// at least) the log rolls every few batches from the next append on.
	produce := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strings.Repeat("v", 300))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(3)
	partDir := filepath.Join(b.dataDir, topic+"-0")
	if n := segmentFiles(t, partDir); n != 1 {
		t.Fatalf("%d segments before the change", n)
	}
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "internal.segment.bytes", Value: strPtr("1024")}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter internal.segment.bytes: %v %v", err, resps)
	}
	produce(12)
	if n := segmentFiles(t, partDir); n < 3 {
		t.Fatalf("%d segments after internal.segment.bytes=1024 and 12 batches of ~370 bytes, want at least 3", n)
	}

	// Invalid values: INVALID_CONFIG with Kafka's message; nothing changes.
	for _, bad := range []struct{ name, value, msg string }{
		{"segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number of type INT"},
		{"segment.bytes", "1024", "Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576"},
		{"message.format.version", "3.0", "Unknown topic config name: message.format.version"},
		{"cleanup.policy", "forever", "Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete"},
		{"no.such.config", "1", "Unknown topic config name: no.such.config"},
	} {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: bad.name, Value: strPtr(bad.value)}}, topic)
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(resps[0].Err, kerr.InvalidConfig) || resps[0].ErrMessage != bad.msg {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG %q", bad.name, bad.value, resps[0].Err, resps[0].ErrMessage, bad.msg)
		}
	}

	// Unknown topic.
	rcs, err = adm.DescribeTopicConfigs(ctx, "no-such-topic")
	if err != nil {
		t.Fatal(err)
	}
	if len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("describe unknown topic: %+v", rcs)
	}
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: strPtr("1000")}}, "no-such-topic")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resps[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("alter unknown topic: %v", resps[0].Err)
	}

	// A dynamic cluster-wide default.
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: strPtr("3600000")}})
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter broker default: %v %+v", err, resps)
	}
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.dirs", Value: strPtr("/elsewhere")}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resps[0].Err, kerr.InvalidRequest) || resps[0].ErrMessage != "Cannot update these configs dynamically: Set(log.dirs)" {
		t.Errorf("alter read-only broker config: %v %q", resps[0].Err, resps[0].ErrMessage)
	}

	check := func(b *broker) {
		t.Helper()
		cl := b.newClient(t)
		adm := kadm.NewClient(cl)
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		// As Kafka, the internal override is not described.
		if c := describedConfig(t, rcs, "segment.bytes"); c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("segment.bytes: %s source %v", c.MaybeValue(), c.Source)
		}
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == "internal.segment.bytes" {
					t.Errorf("DescribeConfigs lists internal.segment.bytes")
				}
			}
		}
		if c := describedConfig(t, rcs, "retention.ms"); c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Errorf("retention.ms: %s source %v", c.MaybeValue(), c.Source)
		}
		rcs, err = adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if c := describedConfig(t, rcs, "log.retention.ms"); c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Errorf("broker log.retention.ms: %s source %v", c.MaybeValue(), c.Source)
		}
		rcs, err = adm.DescribeBrokerConfigs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c := describedConfig(t, rcs, "log.retention.ms"); c.MaybeValue() != "3600000" {
			t.Errorf("cluster default log.retention.ms: %s", c.MaybeValue())
		}
	}
	check(b)
	b = b.restart(t)
	check(b)
}

// TestConfigsLowestVersions sends the config requests at the lowest
// versions Kafka 4.3.1 serves (DescribeConfigs v1, the others v0), and
// DescribeConfigs v0 to a broker serving as Kafka 3.9
// (kcompatd.kafka.version=3.9).
func TestConfigsLowestVersions(t *testing.T) {
	for _, tc := range []struct {
		release  string
		describe int16
	}{{"", 1}, {"3.9", 0}} {
		t.Run("kafka"+tc.release, func(t *testing.T) { testConfigsLowestVersions(t, tc.release, tc.describe) })
	}
}

func testConfigsLowestVersions(t *testing.T, release string, describeVersion int16) {
	var configs []string
	if release != "" {
		configs = append(configs, "kcompatd.kafka.version="+release)
	}
	b := startBroker(t, "", configs...)
	b.createTopic(t, "low", 1, nil)
	vs := kversion.V3_9_0()
	for _, k := range []int16{33, 44} {
		vs.SetMaxKeyVersion(k, 0)
	}
	vs.SetMaxKeyVersion(32, describeVersion)
	cl := b.newClient(t, kgo.MaxVersions(vs))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	alter := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "low"
	arc := kmsg.NewAlterConfigsRequestResourceConfig()
	arc.Name, arc.Value = "retention.ms", strPtr("5000")
	ar.Configs = append(ar.Configs, arc)
	alter.Resources = append(alter.Resources, ar)
	aresp, err := alter.RequestWith(ctx, cl)
	if err != nil || aresp.Version != 0 || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs v0: %v %+v", err, aresp)
	}

	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "low"
	irc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	irc.Name, irc.Op, irc.Value = "cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, strPtr("compact")
	ir.Configs = append(ir.Configs, irc)
	inc.Resources = append(inc.Resources, ir)
	iresp, err := inc.RequestWith(ctx, cl)
	if err != nil || iresp.Version != 0 || iresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs v0: %v %+v", err, iresp)
	}

	desc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "low"
	desc.Resources = append(desc.Resources, dr)
	dresp, err := desc.RequestWith(ctx, cl)
	if err != nil || dresp.Version != describeVersion || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs v%d: %v %+v", describeVersion, err, dresp)
	}
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		// v0 tells defaults by IsDefault, v1 on by Source.
		set := !c.IsDefault
		if describeVersion >= 1 {
			set = c.Source == kmsg.ConfigSourceDynamicTopicConfig
		}
		if set && c.Value != nil {
			got[c.Name] = *c.Value
		}
	}
	if got["retention.ms"] != "5000" || got["cleanup.policy"] != "delete,compact" || len(got) != 2 {
		t.Errorf("non-default configs at v%d: %v", describeVersion, got)
	}

	// Legacy AlterConfigs at its highest version (kadm's State functions)
	// replaces the whole set.
	adm := kadm.NewClient(b.newClient(t))
	resps, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strPtr("7000")}}, "low")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("AlterConfigs v2: %v %+v", err, resps)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "low")
	if err != nil {
		t.Fatal(err)
	}
	if c := describedConfig(t, rcs, "retention.ms"); c.MaybeValue() != "7000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms %s source %v", c.MaybeValue(), c.Source)
	}
	if c := describedConfig(t, rcs, "cleanup.policy"); c.MaybeValue() != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("cleanup.policy %s source %v after a replacing alter", c.MaybeValue(), c.Source)
	}
}
