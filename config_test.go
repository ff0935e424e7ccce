package kcompatd

import (
	"errors"
	"flag"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	"math"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// configErrors unpacks ParseConfig's joined error into its parts.
func configErrors(t *testing.T, err error) []*ConfigError {
	t.Helper()
	if err == nil {
		return nil
	}
	var parts []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	} else {
		parts = []error{err}
	}
	var out []*ConfigError
	for _, p := range parts {
		var ce *ConfigError
		if !errors.As(p, &ce) {
			t.Fatalf("error %v is not a *ConfigError", p)
		}
		out = append(out, ce)
	}
	return out
}

func TestParseConfigDefaults(t *testing.T) {
	c, warnings, err := ParseConfig(nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("ParseConfig(nil) = %v, %v", warnings, err)
	}
	if !reflect.DeepEqual(c, DefaultConfig()) {
		t.Errorf("ParseConfig(nil) differs from DefaultConfig()")
	}
	want := map[string]string{
		"log.dirs":                         "/tmp/kcompatd-logs",
		"listeners":                        "PLAINTEXT://localhost:9092",
		"node.id":                          "1",
		"num.partitions":                   "1",
		"auto.create.topics.enable":        "true",
		"message.max.bytes":                "1048588",
		"socket.request.max.bytes":         "104857600",
		"log.segment.bytes":                "1073741824",
		"log.retention.ms":                 "604800000",
		"log.roll.ms":                      "604800000",
		"log.retention.bytes":              "-1",
		"log.cleanup.policy":               "delete",
		"compression.type":                 "producer",
		"log.message.timestamp.type":       "CreateTime",
		"log.cleaner.min.cleanable.ratio":  "0.5",
		"log.flush.interval.messages":      "9223372036854775807",
		"offsets.topic.num.partitions":     "50",
		"group.initial.rebalance.delay.ms": "3000",
	}
	got := map[string]string{}
	for _, kv := range c.Properties() {
		got[kv[0]] = kv[1]
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("default %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestParseConfigValues(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		check func(c Config) bool
	}{
		{"log.dirs", map[string]string{"log.dirs": " /data/k "}, func(c Config) bool { return c.LogDirs == "/data/k" }},
		{"log.dir alone", map[string]string{"log.dir": "/a"}, func(c Config) bool { return c.LogDirs == "/a" }},
		{"log.dirs wins over log.dir", map[string]string{"log.dir": "/a", "log.dirs": "/b"}, func(c Config) bool { return c.LogDirs == "/b" }},
		{"node.id", map[string]string{"node.id": "7"}, func(c Config) bool { return c.NodeID == 7 }},
		{"broker.id synonym", map[string]string{"broker.id": "3"}, func(c Config) bool { return c.NodeID == 3 }},
		{"node.id wins over broker.id", map[string]string{"broker.id": "3", "node.id": "4"}, func(c Config) bool { return c.NodeID == 4 }},
		{"broker.rack", map[string]string{"broker.rack": "r1"}, func(c Config) bool { return c.BrokerRack == "r1" }},
		{"delete.topic.enable", map[string]string{"delete.topic.enable": "false"}, func(c Config) bool { return !c.DeleteTopicEnable }},
		{"num.partitions", map[string]string{"num.partitions": "+8"}, func(c Config) bool { return c.NumPartitions == 8 }},
		{"boolean any case", map[string]string{"auto.create.topics.enable": " FALSE "}, func(c Config) bool { return !c.AutoCreateTopicsEnable }},
		{"offsets.topic.num.partitions", map[string]string{"offsets.topic.num.partitions": "1"}, func(c Config) bool { return c.OffsetsTopicNumPartitions == 1 }},
		{"group.initial.rebalance.delay.ms", map[string]string{"group.initial.rebalance.delay.ms": "0"}, func(c Config) bool { return c.GroupInitialRebalanceDelayMs == 0 }},
		{"socket.request.max.bytes", map[string]string{"socket.request.max.bytes": "1024"}, func(c Config) bool { return c.SocketRequestMaxBytes == 1024 }},
		{"message.max.bytes", map[string]string{"message.max.bytes": "2000000"}, func(c Config) bool {
			return c.TopicDefaults().MaxMessageBytes == 2000000
		}},
		{"log.segment.bytes", map[string]string{"log.segment.bytes": "1048576"}, func(c Config) bool { return c.TopicDefaults().SegmentBytes == 1048576 }},
		{"kcompatd.log.internal.segment.bytes", map[string]string{"kcompatd.log.internal.segment.bytes": "65536"}, func(c Config) bool { return c.LogInternalSegmentBytes == 65536 }},
		{"log.roll.hours", map[string]string{"log.roll.hours": "2"}, func(c Config) bool { return c.TopicDefaults().SegmentMs == 2*3600000 }},
		{"log.roll.ms wins over hours", map[string]string{"log.roll.hours": "2", "log.roll.ms": "5"}, func(c Config) bool { return c.TopicDefaults().SegmentMs == 5 }},
		{"log.index.size.max.bytes", map[string]string{"log.index.size.max.bytes": "4096"}, func(c Config) bool { return c.TopicDefaults().SegmentIndexBytes == 4096 }},
		{"log.index.interval.bytes", map[string]string{"log.index.interval.bytes": "0"}, func(c Config) bool { return c.TopicDefaults().IndexIntervalBytes == 0 }},
		{"log.flush.interval.messages", map[string]string{"log.flush.interval.messages": "1"}, func(c Config) bool { return c.TopicDefaults().FlushMessages == 1 }},
		{"log.flush.interval.ms", map[string]string{"log.flush.interval.ms": "1000"}, func(c Config) bool { return c.TopicDefaults().FlushMs == 1000 }},
		{"log.flush.offset.checkpoint.interval.ms", map[string]string{"log.flush.offset.checkpoint.interval.ms": "500"}, func(c Config) bool { return c.LogFlushOffsetCheckpointIntervalMs == 500 }},
		{"log.message.timestamp.type", map[string]string{"log.message.timestamp.type": "LogAppendTime"}, func(c Config) bool {
			return c.TopicDefaults().MessageTimestampType == "LogAppendTime"
		}},
		{"log.retention.hours", map[string]string{"log.retention.hours": "1"}, func(c Config) bool { return c.TopicDefaults().RetentionMs == 3600000 }},
		{"log.retention.minutes wins over hours", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2"}, func(c Config) bool {
			return c.TopicDefaults().RetentionMs == 120000
		}},
		{"log.retention.ms wins over all", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "2", "log.retention.ms": "3"}, func(c Config) bool {
			return c.TopicDefaults().RetentionMs == 3
		}},
		{"negative retention means -1", map[string]string{"log.retention.ms": "-5", "log.retention.bytes": "-9"}, func(c Config) bool {
			return c.TopicDefaults().RetentionMs == -1 && c.TopicDefaults().RetentionBytes == -1
		}},
		{"negative retention hours means -1", map[string]string{"log.retention.hours": "-1"}, func(c Config) bool { return c.TopicDefaults().RetentionMs == -1 }},
		{"log.retention.bytes", map[string]string{"log.retention.bytes": "1073741824"}, func(c Config) bool { return c.TopicDefaults().RetentionBytes == 1<<30 }},
		{"log.cleanup.policy compact", map[string]string{"log.cleanup.policy": "compact"}, func(c Config) bool { return c.TopicDefaults().CleanupPolicy == "compact" }},
		{"log.cleanup.policy both, in the order given (as Kafka's LIST)", map[string]string{"log.cleanup.policy": "delete, compact"}, func(c Config) bool {
			d := c.TopicDefaults()
			return d.CleanupPolicy == "delete,compact" && d.Compact() && d.Delete()
		}},
		{"log.cleaner.delete.retention.ms", map[string]string{"log.cleaner.delete.retention.ms": "0"}, func(c Config) bool { return c.TopicDefaults().DeleteRetentionMs == 0 }},
		{"log.cleaner.min.compaction.lag.ms", map[string]string{"log.cleaner.min.compaction.lag.ms": "100"}, func(c Config) bool {
			return c.TopicDefaults().MinCompactionLagMs == 100
		}},
		{"log.cleaner.max.compaction.lag.ms", map[string]string{"log.cleaner.max.compaction.lag.ms": "1000"}, func(c Config) bool {
			return c.TopicDefaults().MaxCompactionLagMs == 1000
		}},
		{"log.cleaner.min.cleanable.ratio", map[string]string{"log.cleaner.min.cleanable.ratio": "0.01"}, func(c Config) bool {
			return c.TopicDefaults().MinCleanableRatio == 0.01
		}},
		{"log.segment.delete.delay.ms", map[string]string{"log.segment.delete.delay.ms": "0"}, func(c Config) bool { return c.TopicDefaults().FileDeleteDelayMs == 0 }},
		{"compression.type", map[string]string{"compression.type": "zstd"}, func(c Config) bool { return c.TopicDefaults().CompressionType == "zstd" }},
		{"kcompatd.kafka.version", map[string]string{"kcompatd.kafka.version": "3.5"}, func(c Config) bool { return c.KafkaVersion == "3.5" }},
		// KIP-937's bounds were listed by DescribeConfigs but warned about
		// as unknown in the properties file.
		{"log.message.timestamp.after.max.ms", map[string]string{"log.message.timestamp.after.max.ms": "3600000", "log.message.timestamp.before.max.ms": "60000"}, func(c Config) bool {
			before, after := c.TopicDefaults().TimestampBounds()
			return before == 60000 && after == 3600000
		}},
		{"log.message.timestamp.after.max.ms defaults to an hour (Kafka 4)", map[string]string{}, func(c Config) bool {
			before, after := c.TopicDefaults().TimestampBounds()
			return before == math.MaxInt64 && after == 3600000
		}},
		{"kcompatd.kafka.version old", map[string]string{"kcompatd.kafka.version": "0.11.0"}, func(c Config) bool { return c.KafkaVersion == "0.11.0" }},
		{"kcompatd.kafka.version 4.2", map[string]string{"kcompatd.kafka.version": "4.2"}, func(c Config) bool { return c.KafkaVersion == "4.2" }},
		{"kcompatd.kafka.version 4.3.1", map[string]string{"kcompatd.kafka.version": "4.3.1"}, func(c Config) bool { return c.KafkaVersion == "4.3.1" }},
		{"advertised.listeners", map[string]string{"advertised.listeners": "PLAINTEXT://kafka.example:9092"}, func(c Config) bool {
			return c.AdvertisedListeners == "PLAINTEXT://kafka.example:9092"
		}},
		{"controller listener skipped", map[string]string{
			"listeners":                 "PLAINTEXT://:9092,CONTROLLER://:9093",
			"controller.listener.names": "CONTROLLER",
		}, func(c Config) bool { return c.Listeners == "PLAINTEXT://:9092,CONTROLLER://:9093" }},
		{"custom listener name", map[string]string{
			"listeners":                      "CLIENT://127.0.0.1:0",
			"listener.security.protocol.map": "CLIENT:PLAINTEXT",
		}, func(c Config) bool { return c.ListenerSecurityProtocolMap == "CLIENT:PLAINTEXT" }},
		{"IPv6 listener", map[string]string{"listeners": "PLAINTEXT://[::1]:0"}, func(c Config) bool { return c.Listeners == "PLAINTEXT://[::1]:0" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := ParseConfig(tt.props)
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if len(warnings) != 0 {
				t.Fatalf("unexpected warnings %v", warnings)
			}
			if !tt.check(c) {
				t.Errorf("unexpected config %+v", c)
			}
		})
	}
}

// Every typed property rejects a malformed value and an out-of-range one,
// naming the property.
func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		key, value string
	}{
		{"log.dirs", "/a,/b"},
		{"log.dirs", " , "},
		{"listeners", "localhost:9092"},
		{"listeners", "PLAINTEXT://localhost"},
		{"listeners", "PLAINTEXT://localhost:99999"},
		{"listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2"},
		{"listeners", "PLAINTEXT://a:1,OTHER://b:2"},
		{"listeners", "SSL://localhost:9093"},
		{"listeners", "UNMAPPED://localhost:9093"},
		{"listeners", ""},
		{"listener.security.protocol.map", "PLAINTEXT"},
		{"advertised.listeners", "OTHER://host:1"},
		{"advertised.listeners", "PLAINTEXT://0.0.0.0:9092"},
		{"advertised.listeners", "nonsense"},
		{"node.id", "one"},
		{"node.id", "-1"},
		{"node.id", "2147483648"},
		{"broker.id", "x"},
		{"num.partitions", "0"},
		{"num.partitions", "1.5"},
		{"auto.create.topics.enable", "yes"},
		{"delete.topic.enable", "1"},
		{"default.replication.factor", "3"},
		{"default.replication.factor", "x"},
		{"offsets.topic.num.partitions", "0"},
		{"group.initial.rebalance.delay.ms", "-1"},
		{"socket.request.max.bytes", "0"},
		{"message.max.bytes", "-1"},
		{"log.segment.bytes", "1048575"},
		{"kcompatd.log.internal.segment.bytes", "13"},
		{"log.segment.bytes", "1_000"},
		{"log.roll.ms", "0"},
		{"log.roll.hours", "0"},
		{"log.roll.hours", "9999999999"},
		{"log.index.size.max.bytes", "3"},
		{"log.index.interval.bytes", "-1"},
		{"log.flush.interval.messages", "0"},
		{"log.flush.interval.ms", "-1"},
		{"log.flush.offset.checkpoint.interval.ms", "0"},
		{"log.message.timestamp.type", "createtime"},
		{"log.retention.ms", "forever"},
		{"log.retention.minutes", "1m"},
		{"log.retention.hours", "1h"},
		{"log.retention.bytes", "1GB"},
		{"log.cleanup.policy", "compact,remove"},
		{"log.cleanup.policy", ""},
		{"log.cleaner.delete.retention.ms", "-1"},
		{"log.cleaner.min.compaction.lag.ms", "-1"},
		{"log.cleaner.max.compaction.lag.ms", "0"},
		{"log.cleaner.min.cleanable.ratio", "1.5"},
		{"log.cleaner.min.cleanable.ratio", "NaN"},
		{"log.segment.delete.delay.ms", "-1"},
		{"compression.type", "brotli"},
		{"kcompatd.kafka.version", "3.99"},
		{"kcompatd.kafka.verison", "3.5"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			_, _, err := ParseConfig(map[string]string{tt.key: tt.value})
			errs := configErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), err)
			}
			// listeners problems may be reported against the
			// advertised listener they leave without a match, or
			// against the listener's settings (an SSL listener
			// without a key store).
			if prop := errs[0].Property; prop != tt.key && !strings.HasSuffix(prop, "listeners") && !strings.HasPrefix(prop, "listener.name.") {
				t.Errorf("error names %s, want %s", prop, tt.key)
			}
			if errs[0].Value == "" && tt.key == errs[0].Property && tt.value != "" {
				t.Errorf("error %v does not carry the value", errs[0])
			}
		})
	}
}

// All problems come back together, sorted by property, with unknown
// properties as warnings only.
func TestParseConfigAllErrorsAtOnce(t *testing.T) {
	_, warnings, err := ParseConfig(map[string]string{
		"num.partitions":                   "0",
		"log.segment.bytes":                "big",
		"compression.type":                 "brotli",
		"auto.create.topics.enable":        "maybe",
		"log.cleaner.min.cleanable.ratio":  "2",
		"no.such.property":                 "1",
		"num.network.threads":              "3",
		"offsets.topic.replication.factor": "1",
	})
	var got []string
	for _, e := range configErrors(t, err) {
		got = append(got, e.Property)
	}
	want := []string{"auto.create.topics.enable", "compression.type", "log.cleaner.min.cleanable.ratio", "log.segment.bytes", "num.partitions"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors for %v, want %v (err: %v)", got, want, err)
	}
	wantWarn := []ConfigWarning{
		{"no.such.property", WarnUnknown},
		{"num.network.threads", WarnSingleNode},
		{"offsets.topic.replication.factor", WarnSingleNode},
	}
	if !reflect.DeepEqual(warnings, wantWarn) {
		t.Errorf("warnings %v, want %v", warnings, wantWarn)
	}
}

func TestConfigValidateStruct(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	var zero Config
	errs := configErrors(t, zero.Validate())
	if len(errs) < 10 {
		t.Errorf("zero Config: only %d errors: %v", len(errs), errs)
	}
	c.LogDefaults = map[string]string{"log.flush.interval.messages": "-9223372036854775808", "log.segment.bytes": "2"}
	if errs := configErrors(t, c.Validate()); len(errs) != 2 {
		t.Errorf("got %v, want two errors", errs)
	}
}

func TestResolveListeners(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	host, _ := os.Hostname()
	port := ln.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name       string
		listeners  string
		advertised string
		listener   net.Listener
		want       string
	}{
		{"bound port replaces 0", "PLAINTEXT://127.0.0.1:0", "", nil, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
		{"configured host name kept", "PLAINTEXT://localhost:0", "", nil, net.JoinHostPort("localhost", strconv.Itoa(port))},
		{"empty host advertises the host name", "PLAINTEXT://:0", "", nil, net.JoinHostPort(host, strconv.Itoa(port))},
		{"advertised wins", "PLAINTEXT://127.0.0.1:0", "PLAINTEXT://kafka.example:19092", nil, "kafka.example:19092"},
		{"advertised port 0 is the bound port", "PLAINTEXT://127.0.0.1:0", "PLAINTEXT://kafka.example:0", nil, net.JoinHostPort("kafka.example", strconv.Itoa(port))},
		{"open listener", "", "", ln, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
		{"open listener, advertised", "", "PLAINTEXT://x:1", ln, "x:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Listeners = tt.listeners
			c.AdvertisedListeners = tt.advertised
			c.Listener = tt.listener
			plan, cerr := c.resolveListeners()
			if cerr != nil {
				t.Fatal(cerr)
			}
			h, p, err := advertisedAddr(plan.listeners[0], ln.Addr())
			if err != nil {
				t.Fatal(err)
			}
			if got := net.JoinHostPort(h, strconv.Itoa(p)); got != tt.want {
				t.Errorf("advertised %s, want %s", got, tt.want)
			}
		})
	}
}

var updateREADME = flag.Bool("update", false, "rewrite README.md's generated configuration tables")

// README's configuration tables are generated from the catalogs: a change
// of the catalog that is not in README fails here (go generate rewrites
// them).
func TestREADMEConfigTables(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := spliceREADME(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if *updateREADME {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != string(readme) {
		t.Errorf("README.md's configuration tables differ from the catalog: run go generate (go test -run TestREADMEConfigTables -update .)")
	}
}

// Kafka's own sample server.properties (KRaft, combined mode) loads: the
// controller listener is skipped, the cluster-only settings are warnings.
func TestParseConfigKafkaSampleFile(t *testing.T) {
	f, err := os.Open("testdata/kraft-combined.properties")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props, err := ReadProperties(f)
	if err != nil {
		t.Fatal(err)
	}
	c, warnings, err := ParseConfig(props)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	for _, w := range warnings {
		if w.Reason != WarnSingleNode && w.Property != "log.retention.check.interval.ms" {
			t.Errorf("unexpected warning %+v", w)
		}
	}
	plan, cerr := c.resolveListeners()
	if cerr != nil {
		t.Fatal(cerr)
	}
	if len(plan.listeners) != 1 ||
		*plan.listeners[0].bind != (endpoint{name: "PLAINTEXT", host: "", port: 9092}) ||
		*plan.listeners[0].advertised != (endpoint{name: "PLAINTEXT", host: "localhost", port: 9092}) ||
		!reflect.DeepEqual(plan.skipped, []string{"CONTROLLER"}) {
		t.Errorf("listener plan %+v", plan)
	}
	if c.LogDirs != "/tmp/kraft-combined-logs" || c.TopicDefaults().RetentionMs != 168*3600000 {
		t.Errorf("config %+v", c)
	}
}

// TopicDefaults resolves c's broker defaults of topic configs.
func (c Config) TopicDefaults() partition.LogConfig {
	d, err := partition.BrokerDefaults(c.LogDefaults)
	if err != nil {
		panic(err)
	}
	return d
}

// Doubles print as Kafka (Java) prints them, in --check-config and in
// DescribeConfigs.
func TestPropertiesPrintDoublesAsKafka(t *testing.T) {
	c, _, err := ParseConfig(map[string]string{"log.cleaner.io.max.bytes.per.second": "1048576"})
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	for _, tc := range []struct {
		c    *Config
		want string
	}{{&c, "1048576.0"}, {&d, "1.7976931348623157E308"}} {
		for _, kv := range tc.c.Properties() {
			if kv[0] == "log.cleaner.io.max.bytes.per.second" && kv[1] != tc.want {
				t.Errorf("%s=%s, want %s", kv[0], kv[1], tc.want)
			}
		}
	}
}

// LogDefaults set by hand under a synonym's name are reported under the
// name the setting goes by, as ParseConfig would leave them.
func TestLogDefaultsSetInGo(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogDirs = t.TempDir()
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	cfg.LogDefaults = map[string]string{"log.retention.hours": "2"}
	b, err := New(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, adm := newAdmin(t, b)
	rcs, err := adm.DescribeBrokerConfigs(testContext(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == "log.retention.ms" && (c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceStaticBrokerConfig) {
			t.Fatalf("log.retention.ms = %q from %v", c.MaybeValue(), c.Source)
		}
	}
}
