package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

// probeID is a topic id in Kafka's base64 form.
const probeID = "TV45GUCMRRKjTp4eSy4Ecg"

// TestSharePartitionKeyParse: the keys as Kafka 4.3.1's FindCoordinator
// v6 answered them for key type 2 (asked of the real broker): valid is
// its leader, invalid INVALID_REQUEST.
func TestSharePartitionKeyParse(t *testing.T) {
	for _, tc := range []struct {
		key   string
		valid bool
	}{
		{"sg:" + probeID + ":0", true},
		{"g:" + probeID + ":-1", true}, // the value is not checked
		{"g:AAAAAAAAAAAAAAAAAAAAAA:0", true},
		{"g:" + probeID + ":+1", true},
		{"g:" + probeID + ":01", true},
		{"g:" + probeID + ":٣", true},  // Arabic-Indic digit three
		{"g:" + probeID + ":１", true},  // fullwidth digit one
		{"g:" + probeID + ":𝟎", false}, // outside the BMP: two UTF-16 chars
		{"g:" + probeID + ":2147483647", true},
		{"g:" + probeID + ":-2147483648", true},
		{"g:" + probeID + ":2147483648", false},
		{"g:" + probeID + ":-", false},
		{"g:" + probeID + ":", false},
		{"g:" + probeID + ":x", false},
		{"g:" + probeID + ":0:", true},  // Java's split drops trailing empties
		{"g:" + probeID + ":0::", true}, // likewise
		{"g:" + probeID + ":0:extra", false},
		{"a:b:" + probeID + ":0", true}, // group "a:b"
		{"::g:" + probeID + ":0", true},
		{":: :" + probeID + ":0", true}, // group ":: " is not blank
		{" :" + probeID + ":0", false},  // blank group
		{"\t:" + probeID + ":1", false},
		{"g:" + probeID + "==:0", true}, // padded base64
		{"g:" + probeID + "=:0", false},
		{"g:TV45GUCMRRKjTp4eSy4Ech:0", true}, // non-zero trailing bits
		{"g:TV45GUCMRRKjTp4eSy4Ec+:0", false},
		{"g:TV45GUCMRRKjTp4eSy4Ec/:0", false},
		{"g:TV45GUCMRRKjTp4e\nSy4Ecg:0", false},
		{"g:notauuid:0", false},
		{"a:b:c", false},
		{"foo", false},
		{"", false},
	} {
		if got := validSharePartitionKey(tc.key); got != tc.valid {
			t.Errorf("%q: valid %v, want %v", tc.key, got, tc.valid)
		}
	}
}

// TestFindCoordinatorKeyTypes: key type 2 from v6 answers this node for
// a share-partition key after creating __share_group_state; below v6 and
// for a malformed key INVALID_REQUEST; an unknown key type fails every
// key; the messages are Kafka's (asked of Kafka 4.3.1).
func TestFindCoordinatorKeyTypes(t *testing.T) {
	b, w, _ := shareStateBroker(t)
	good, bad := "sg:"+probeID+":0", "g:notauuid:0"
	invalid := kerr.InvalidRequest.Description
	type want struct {
		code int16
		msg  string
	}
	ok, perKeyInvalid, wholeInvalid := want{0, ""}, want{kerr.InvalidRequest.Code, ""}, want{kerr.InvalidRequest.Code, invalid}
	for _, tc := range []struct {
		name    string
		version int16
		keyType int8
		keys    []string
		want    []want
	}{
		{"share v6", 6, coordinatorShare, []string{good, bad, "g:" + probeID + ":-1"}, []want{ok, perKeyInvalid, ok}},
		{"share v5", 5, coordinatorShare, []string{good}, []want{perKeyInvalid}},
		{"share v4", 4, coordinatorShare, []string{good, bad}, []want{perKeyInvalid, perKeyInvalid}},
		{"share v3", 3, coordinatorShare, []string{good}, []want{{kerr.InvalidRequest.Code, invalid}}},
		{"share v1", 1, coordinatorShare, []string{good}, []want{{kerr.InvalidRequest.Code, invalid}}},
		{"v0 is a group key", 0, coordinatorShare, []string{good}, []want{ok}},
		{"unknown v6", 6, 3, []string{good, "g"}, []want{wholeInvalid, wholeInvalid}},
		{"unknown v4", 4, 3, []string{"g"}, []want{wholeInvalid}},
		{"unknown v2", 2, 3, []string{"g"}, []want{{kerr.InvalidRequest.Code, invalid}}},
		{"unknown, no keys", 6, 3, nil, nil},
		{"group v3", 3, coordinatorGroup, []string{"g"}, []want{{0, "NONE"}}},
		{"group v6", 6, coordinatorGroup, []string{good, bad}, []want{ok, ok}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := findCoordinatorAt(t, w, tc.version, tc.keyType, tc.keys)
			if len(got) != len(tc.want) {
				t.Fatalf("%d answers, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, c := range got {
				if c.Key != tc.keys[i] || c.ErrorCode != tc.want[i].code || c.ErrorMessage == nil && tc.version >= 1 || c.ErrorMessage != nil && *c.ErrorMessage != tc.want[i].msg {
					t.Errorf("key %q: %+v (message %v), want %+v", tc.keys[i], c, deref(c.ErrorMessage), tc.want[i])
				}
				wantNode := int32(-1)
				if c.ErrorCode == 0 {
					wantNode = b.s.cfg.NodeID
				}
				if c.NodeID != wantNode || (c.ErrorCode == 0) != (c.Port == b.s.cfg.AdvertisedPort) {
					t.Errorf("key %q: node %d port %d", tc.keys[i], c.NodeID, c.Port)
				}
			}
		})
		if tc.name == "share v6" {
			if tp := b.store.Topic(sharestate.StateTopic); tp == nil || len(tp.Partitions) != 3 {
				t.Fatalf("__share_group_state after a share lookup: %+v, want 3 partitions", tp)
			}
		}
	}
}

// TestFindCoordinatorShareClusterAction: key type 2 needs CLUSTER_ACTION
// on the cluster (only brokers send it); without it Kafka throws and
// every key, malformed or not, fails CLUSTER_AUTHORIZATION_FAILED.
func TestFindCoordinatorShareClusterAction(t *testing.T) {
	for _, granted := range []bool{false, true} {
		var acls []partition.ACL
		if granted {
			acls = append(acls, allow(authz.ResourceCluster, "kafka-cluster", authz.PatternLiteral, authz.OpClusterAction))
		}
		_, w := aclGroupBroker(t, acls...)
		keys := []string{"sg:" + probeID + ":0", "bad"}
		got := findCoordinatorAt(t, w, 6, coordinatorShare, keys)
		want := []int16{kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code}
		msg := kerr.ClusterAuthorizationFailed.Description
		if granted {
			want, msg = []int16{0, kerr.InvalidRequest.Code}, ""
		}
		if len(got) != len(keys) {
			t.Fatalf("granted %v: %d answers, want %d", granted, len(got), len(keys))
		}
		for i, c := range got {
			if c.ErrorCode != want[i] || deref(c.ErrorMessage) != msg {
				t.Errorf("granted %v, key %q: code %d message %q, want %d %q", granted, c.Key, c.ErrorCode, deref(c.ErrorMessage), want[i], msg)
			}
		}
	}
}

// findCoordinatorAt sends FindCoordinator at version v (one request per
// key below v4) and returns the answers per key.
func findCoordinatorAt(t *testing.T, w *wire, v int16, keyType int8, keys []string) []kmsg.FindCoordinatorResponseCoordinator {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(v)
	req.CoordinatorType = keyType
	if v >= 4 {
		req.CoordinatorKeys = keys
		return w.roundTrip(req).(*kmsg.FindCoordinatorResponse).Coordinators
	}
	var out []kmsg.FindCoordinatorResponseCoordinator
	for _, k := range keys {
		req.CoordinatorKey = k
		r := w.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		out = append(out, kmsg.FindCoordinatorResponseCoordinator{Key: k, NodeID: r.NodeID, Host: r.Host, Port: r.Port, ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage})
	}
	return out
}
