package kcompatd

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kcompatd/kcompatd/partition"
)

func TestParseStartupTopics(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []startupTopic
		err  string
	}{
		{"", nil, ""},
		{"a:1", []startupTopic{{"a", 1, map[string]string{}}}, ""},
		{" a:3:cleanup.policy=compact,delete;retention.ms=-1 , b.c-d_e:2 ", []startupTopic{
			{"a", 3, map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "-1"}},
			{"b.c-d_e", 2, map[string]string{}},
		}, ""},
		{"a", nil, "not of the form"},
		{"a:0", nil, "partition count"},
		{"a:x", nil, "partition count"},
		{"a/b:1", nil, "illegal"},
		{"a:1,a:2", nil, "named twice"},
		{"__consumer_offsets:1", nil, "created by its coordinator"},
		{"a:1:internal.segment.bytes=1", nil, "Value must be at least 14"},
		{"a:1:no.such=1", nil, "Unknown topic config name"},
		{"a:1:retention.ms", nil, "not key=value"},
		{"a:1:leader.replication.throttled.replicas=0:1,1:1", nil, "looks like one"},
		{"a:1:cleanup.policy=compact,b:2", []startupTopic{{"a", 1, map[string]string{"cleanup.policy": "compact"}}, {"b", 2, map[string]string{}}}, ""},
	} {
		got, err := parseStartupTopics(tc.in, partition.DefaultLogConfig())
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case !reflect.DeepEqual(got, tc.want):
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// kcompatd.create.topics creates the missing topics, with their configs,
// before the broker serves; a restart leaves existing topics as they are,
// even when the partition count asked for differs.
func TestStartupTopics(t *testing.T) {
	dir := t.TempDir()
	b := newTestBroker(t, dir, map[string]string{"kcompatd.create.topics": "orders:3:cleanup.policy=compact,delete;retention.ms=-1,events:1"})
	orders := b.store.Topic("orders")
	if orders == nil || len(orders.Partitions) != 3 || !orders.Config.Compact() || !orders.Config.Delete() || orders.Config.RetentionMs != -1 {
		t.Fatalf("orders: %+v", orders)
	}
	if e := b.store.Topic("events"); e == nil || len(e.Partitions) != 1 {
		t.Fatalf("events: %+v", e)
	}
	id := orders.ID
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = newTestBroker(t, dir, map[string]string{"kcompatd.create.topics": "orders:5,more:2"})
	if o := b.store.Topic("orders"); o == nil || o.ID != id || len(o.Partitions) != 3 || !o.Config.Compact() {
		t.Fatalf("orders after restart: %+v", o)
	}
	if m := b.store.Topic("more"); m == nil || len(m.Partitions) != 2 {
		t.Fatalf("more: %+v", m)
	}
}
