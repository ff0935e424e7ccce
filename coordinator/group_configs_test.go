package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestValidateGroupConfig(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"share.auto.offset.reset", "earliest", true},
		{"share.auto.offset.reset", "LATEST", true},
		{"share.auto.offset.reset", "by_duration:PT1H", true},
		{"share.auto.offset.reset", "by_duration:-PT1H", false},
		{"share.auto.offset.reset", "none", false},
		{"share.isolation.level", "read_committed", true},
		{"share.isolation.level", "committed", false},
		{"share.record.lock.duration.ms", "15000", true},
		{"share.record.lock.duration.ms", "999", false},
		{"share.record.lock.duration.ms", "x", false},
		{"share.delivery.count.limit", "1", false},
		{"share.renew.acknowledge.enable", "false", true},
		{"share.renew.acknowledge.enable", "no", false},
		{"streams.num.standby.replicas", "0", true},
		{"consumer.session.timeout.ms", "0", false},
		{"no.such.config", "1", false},
	} {
		if got := ValidateGroupConfig(tc.name, tc.value) == ""; got != tc.ok {
			t.Errorf("%s=%s: valid %v, want %v (%s)", tc.name, tc.value, got, tc.ok, ValidateGroupConfig(tc.name, tc.value))
		}
	}
}

// TestGroupConfigsApplied: share.* and consumer.* overrides reach the
// groups, clamped to the broker's bounds, and persist across a restart.
func TestGroupConfigsApplied(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.GroupConfigDir = "" })
	e.cfg.GroupConfigDir = e.dir
	e.restart()
	if _, err := e.store.CreateTopic("t", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	set := func(group string, kv map[string]string) {
		t.Helper()
		msg, err := e.c.GroupConfigs().Alter(group, func(cur map[string]string) (map[string]string, string) {
			for k, v := range kv {
				cur[k] = v
			}
			return cur, ""
		}, false)
		if msg != "" || err != nil {
			t.Fatalf("alter: %s %v", msg, err)
		}
	}
	set("sg", map[string]string{"share.heartbeat.interval.ms": "7000", "share.record.lock.duration.ms": "20000", "share.isolation.level": "read_committed"})
	set("cg", map[string]string{"consumer.heartbeat.interval.ms": "6000"})
	for k, v := range map[string]string{"share.delivery.count.limit": "1", "share.record.lock.duration.ms": "90000"} {
		if msg, _ := e.c.GroupConfigs().Alter("sg", func(cur map[string]string) (map[string]string, string) {
			cur[k] = v
			return cur, ""
		}, false); msg == "" {
			t.Fatalf("%s=%s accepted", k, v)
		}
	}
	// Outside the broker's bounds: Kafka 4.3's message.
	if msg, _ := e.c.GroupConfigs().Alter("sg", func(cur map[string]string) (map[string]string, string) {
		cur["share.record.lock.duration.ms"] = "90000"
		return cur, ""
	}, false); msg != "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms" {
		t.Fatalf("message %q", msg)
	}
	e.restart()
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.SetVersion(1)
	r.GroupID, r.MemberID, r.SubscribedTopicNames = "sg", "m", []string{"t"}
	if resp := e.c.ShareGroupHeartbeat(context.Background(), r, ClientInfo{}); resp.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("share heartbeat interval %d", resp.HeartbeatIntervalMillis)
	}
	s := e.c.shareSettings("sg")
	if s.LockDuration.Milliseconds() != 20000 || s.Isolation != 1 || s.DeliveryLimit != 5 {
		t.Fatalf("share settings %+v", s)
	}
	if v := e.c.DescribeGroupConfigs("sg"); len(v) != len(GroupConfigDefs) {
		t.Fatalf("%d configs described", len(v))
	}
	c := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	c.SetVersion(1)
	c.Group, c.MemberID, c.RebalanceTimeoutMillis, c.SubscribedTopicNames, c.Topics = "cg", "m", 1000, []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp := e.c.ConsumerGroupHeartbeat(context.Background(), c, ClientInfo{})
	if resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("consumer heartbeat: %d interval %d", resp.ErrorCode, resp.HeartbeatIntervalMillis)
	}
}
