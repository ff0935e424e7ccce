package protocol

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { versionChecks[kmsg.ListConfigResources.Int16()] = checkListConfigResourcesVersion }

func listConfigResources(t *testing.T, w *wire, v int16, types ...int8) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.SetVersion(v)
	req.ResourceTypes = types
	resp := w.roundTrip(req).(*kmsg.ListConfigResourcesResponse)
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, fmt.Sprintf("%d:%s", r.Type, r.Name))
	}
	return resp.ErrorCode, fmt.Sprint(out)
}

// v0 lists client metrics resources (none here); v1 every type.
func checkListConfigResourcesVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	code, got := listConfigResources(t, w, v)
	if code != 0 {
		t.Fatalf("v%d: error %d", v, code)
	}
	if v == 0 && got != "[]" {
		t.Errorf("v0: %s", got)
	}
	if v >= 1 {
		if code, got := listConfigResources(t, w, v, 4, 8); code != 0 || got != "[8:1 4:1]" {
			t.Errorf("v%d brokers: %d %s", v, code, got)
		}
	}
}

// TestListConfigResources: the lists and codes Kafka 4.3.1 answers to the
// same requests (its topics in a hash map's order, ours sorted).
func TestListConfigResources(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "zeta", 1, nil)
	b.createTopic(t, "alpha", 1, nil)
	b.s.groups.EnsureOffsetsTopic()
	gc := b.s.groups.GroupConfigs()
	set := func(group string, cfg map[string]string) {
		if msg, err := gc.Alter(group, func(map[string]string) (map[string]string, string) { return cfg, "" }, false); msg != "" || err != nil {
			t.Fatalf("alter %s: %q %v", group, msg, err)
		}
	}
	set("g2", map[string]string{"consumer.session.timeout.ms": "50000"})
	set("g1", map[string]string{"consumer.session.timeout.ms": "50000"})
	set("gone", map[string]string{"consumer.session.timeout.ms": "50000"})
	set("gone", map[string]string{}) // every override deleted: not listed
	w := dialWire(t, b.addr)

	all := "[32:g1 32:g2 8:1 4:1 2:__consumer_offsets 2:alpha 2:zeta]"
	cases := []struct {
		v     int16
		types []int8
		code  int16
		want  string
	}{
		{0, nil, 0, "[]"},
		{1, nil, 0, all},
		{1, []int8{2}, 0, "[2:__consumer_offsets 2:alpha 2:zeta]"},
		{1, []int8{2, 2}, 0, "[2:__consumer_offsets 2:alpha 2:zeta]"},
		{1, []int8{4, 32}, 0, "[32:g1 32:g2 4:1]"},
		{1, []int8{16}, 0, "[]"},
		{1, []int8{1}, kerr.UnsupportedVersion.Code, "[]"},
		{1, []int8{0}, kerr.UnsupportedVersion.Code, "[]"},
		{1, []int8{2, 64}, kerr.UnsupportedVersion.Code, "[]"},
		{1, []int8{-1}, kerr.UnsupportedVersion.Code, "[]"},
	}
	for _, c := range cases {
		code, got := listConfigResources(t, w, c.v, c.types...)
		if code != c.code || got != c.want {
			t.Errorf("v%d %v: %d %s, want %d %s", c.v, c.types, code, got, c.code, c.want)
		}
	}
}

// DESCRIBE_CONFIGS on the cluster is required (ALTER_CONFIGS implies it).
func TestListConfigResourcesAuthorization(t *testing.T) {
	cases := []struct {
		name string
		acls []partition.ACL
		code int16
		want string
	}{
		{"no ACL", nil, kerr.ClusterAuthorizationFailed.Code, "[]"},
		{"DESCRIBE is not enough", []partition.ACL{clusterACL(authz.OpDescribe)}, kerr.ClusterAuthorizationFailed.Code, "[]"},
		{"DESCRIBE_CONFIGS", []partition.ACL{clusterACL(authz.OpDescribeConfigs)}, 0, "[8:1 4:1 2:x]"},
		{"ALTER_CONFIGS", []partition.ACL{clusterACL(authz.OpAlterConfigs)}, 0, "[8:1 4:1 2:x]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := startACLBroker(t, false, c.acls...)
			b.createTopic(t, "x", 1, nil)
			w := dialWire(t, b.addr)
			if code, got := listConfigResources(t, w, 1); code != c.code || got != c.want {
				t.Errorf("%d %s, want %d %s", code, got, c.code, c.want)
			}
		})
	}
}
