package protocol

import (
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() {
	versionChecks[kmsg.DescribeACLs.Int16()] = checkDescribeAclsVersion
	versionChecks[kmsg.CreateACLs.Int16()] = checkCreateAclsVersion
	versionChecks[kmsg.DeleteACLs.Int16()] = checkDeleteAclsVersion
}

// Without an authorizer, every version answers SECURITY_DISABLED as Kafka.
func checkDescribeAclsVersion(t *testing.T, _ *testBroker, w *wire, v int16) {
	req := anyACLFilter()
	req.SetVersion(v)
	resp := w.roundTrip(req).(*kmsg.DescribeACLsResponse)
	if resp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("v%d: error %d, want SECURITY_DISABLED", v, resp.ErrorCode)
	}
}

func checkCreateAclsVersion(t *testing.T, _ *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(v)
	req.Creations = []kmsg.CreateACLsRequestCreation{topicACL("t", kmsg.ACLResourcePatternTypeLiteral, "User:a", kmsg.ACLOperationRead)}
	resp := w.roundTrip(req).(*kmsg.CreateACLsResponse)
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("v%d: %+v, want SECURITY_DISABLED", v, resp.Results)
	}
}

func checkDeleteAclsVersion(t *testing.T, _ *testBroker, w *wire, v int16) {
	req := deleteACLsReq(anyDeleteFilter())
	req.SetVersion(v)
	resp := w.roundTrip(req).(*kmsg.DeleteACLsResponse)
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("v%d: %+v, want SECURITY_DISABLED", v, resp.Results)
	}
}

func anyACLFilter() *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	return req
}

func anyDeleteFilter() kmsg.DeleteACLsRequestFilter {
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType = kmsg.ACLResourceTypeAny
	f.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	f.Operation = kmsg.ACLOperationAny
	f.PermissionType = kmsg.ACLPermissionTypeAny
	return f
}

func deleteACLsReq(fs ...kmsg.DeleteACLsRequestFilter) *kmsg.DeleteACLsRequest {
	req := kmsg.NewPtrDeleteACLsRequest()
	req.SetVersion(3)
	req.Filters = fs
	return req
}

func topicACL(name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, pt
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
	return c
}

// startACLBroker starts a broker with an authorizer whose only super user
// is User:ANONYMOUS (the wire client's principal) when super is set.
func startACLBroker(t *testing.T, super bool, acls ...partition.ACL) *testBroker {
	return startBroker(t, func(c *Config) {
		cfg := authz.Config{}
		if super {
			cfg.SuperUsers = []string{AnonymousPrincipal}
		}
		c.Authorizer = authz.New(cfg, acls, func([]partition.ACL) error { return nil })
	})
}

func TestACLAPIs(t *testing.T) {
	b := startACLBroker(t, true)
	w := dialWire(t, b.addr)

	create := kmsg.NewPtrCreateACLsRequest()
	create.SetVersion(3)
	cluster := kmsg.NewCreateACLsRequestCreation()
	cluster.ResourceType, cluster.ResourceName, cluster.ResourcePatternType = kmsg.ACLResourceTypeCluster, "other", kmsg.ACLResourcePatternTypeLiteral
	cluster.Principal, cluster.Host, cluster.Operation, cluster.PermissionType = "User:a", "*", kmsg.ACLOperationAlter, kmsg.ACLPermissionTypeAllow
	match := topicACL("t", kmsg.ACLResourcePatternTypeMatch, "User:a", kmsg.ACLOperationRead)
	create.Creations = []kmsg.CreateACLsRequestCreation{
		topicACL("orders", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead),
		topicACL("orders.", kmsg.ACLResourcePatternTypePrefixed, "User:alice", kmsg.ACLOperationWrite),
		topicACL("*", kmsg.ACLResourcePatternTypeLiteral, "User:*", kmsg.ACLOperationDescribe),
		cluster,
		match,
	}
	cr := w.roundTrip(create).(*kmsg.CreateACLsResponse)
	wantCodes := []int16{0, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	if len(cr.Results) != len(wantCodes) {
		t.Fatalf("%d creation results, want %d", len(cr.Results), len(wantCodes))
	}
	for i, res := range cr.Results {
		if res.ErrorCode != wantCodes[i] {
			t.Errorf("creation %d: code %d, want %d", i, res.ErrorCode, wantCodes[i])
		}
	}
	if m := cr.Results[3].ErrorMessage; m == nil || *m != "The only valid name for the CLUSTER resource is kafka-cluster" {
		t.Errorf("CLUSTER message %v", m)
	}

	describe := func(mod func(*kmsg.DescribeACLsRequest)) int {
		req := anyACLFilter()
		req.SetVersion(3)
		mod(req)
		resp := w.roundTrip(req).(*kmsg.DescribeACLsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("describe: %d", resp.ErrorCode)
		}
		n := 0
		for _, r := range resp.Resources {
			n += len(r.ACLs)
		}
		return n
	}
	if n := describe(func(*kmsg.DescribeACLsRequest) {}); n != 3 {
		t.Errorf("all: %d ACLs, want 3", n)
	}
	name := "orders.eu"
	if n := describe(func(r *kmsg.DescribeACLsRequest) {
		r.ResourceName, r.ResourcePatternType = &name, kmsg.ACLResourcePatternTypeMatch
	}); n != 2 { // the prefix and the wildcard
		t.Errorf("MATCH orders.eu: %d ACLs, want 2", n)
	}
	if n := describe(func(r *kmsg.DescribeACLsRequest) { r.PermissionType = kmsg.ACLPermissionTypeDeny }); n != 0 {
		t.Errorf("DENY: %d ACLs, want 0", n)
	}

	f := anyDeleteFilter()
	f.ResourcePatternType = kmsg.ACLResourcePatternTypePrefixed
	dr := w.roundTrip(deleteACLsReq(f, anyDeleteFilter())).(*kmsg.DeleteACLsResponse)
	if len(dr.Results) != 2 || len(dr.Results[0].MatchingACLs) != 1 || len(dr.Results[1].MatchingACLs) != 3 {
		t.Fatalf("delete: %+v", dr.Results)
	}
	if got := dr.Results[0].MatchingACLs[0]; got.ResourceName != "orders." || got.Operation != kmsg.ACLOperationWrite {
		t.Errorf("deleted %+v", got)
	}
	if n := describe(func(*kmsg.DescribeACLsRequest) {}); n != 0 {
		t.Errorf("after delete: %d ACLs", n)
	}

	// An UNKNOWN code fails Kafka's request parsing: the connection closes.
	bad := anyACLFilter()
	bad.SetVersion(3)
	bad.Operation = 0
	w.send(bad)
	w.expectClosed()
}

// Without ALTER/DESCRIBE on the cluster, the ACL APIs are refused.
func TestACLAPIsNeedClusterAuthorization(t *testing.T) {
	b := startACLBroker(t, false)
	w := dialWire(t, b.addr)
	d := anyACLFilter()
	d.SetVersion(3)
	if resp := w.roundTrip(d).(*kmsg.DescribeACLsResponse); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("describe: %d", resp.ErrorCode)
	}
	c := kmsg.NewPtrCreateACLsRequest()
	c.SetVersion(3)
	c.Creations = []kmsg.CreateACLsRequestCreation{topicACL("t", kmsg.ACLResourcePatternTypeLiteral, "User:a", kmsg.ACLOperationRead)}
	if resp := w.roundTrip(c).(*kmsg.CreateACLsResponse); resp.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("create: %d", resp.Results[0].ErrorCode)
	}
	if resp := w.roundTrip(deleteACLsReq(anyDeleteFilter())).(*kmsg.DeleteACLsResponse); resp.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("delete: %d", resp.Results[0].ErrorCode)
	}
}

// Metadata hides what the principal may not describe, and reports the
// operations it may do (KIP-430).
func TestMetadataAuthorization(t *testing.T) {
	b := startACLBroker(t, false,
		partition.ACL{ResourceType: authz.ResourceTopic, ResourceName: "seen", PatternType: authz.PatternLiteral, Principal: authz.WildcardPrincipal, Host: "*", Operation: authz.OpRead, Permission: authz.PermissionAllow},
	)
	b.createTopic(t, "seen", 1, nil)
	b.createTopic(t, "hidden", 1, nil)
	w := dialWire(t, b.addr)

	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(10)
	all.IncludeTopicAuthorizedOperations = true
	all.IncludeClusterAuthorizedOperations = true
	resp := w.roundTrip(all).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "seen" {
		t.Fatalf("all topics: %+v", resp.Topics)
	}
	if got, want := resp.Topics[0].AuthorizedOperations, int32(1<<authz.OpRead|1<<authz.OpDescribe); got != want {
		t.Errorf("topic ops %b, want %b", got, want)
	}
	if resp.AuthorizedOperations != 0 {
		t.Errorf("cluster ops %b without DESCRIBE on the cluster", resp.AuthorizedOperations)
	}

	named := kmsg.NewPtrMetadataRequest()
	named.SetVersion(12)
	named.AllowAutoTopicCreation = true
	for _, n := range []string{"seen", "hidden", "missing"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		named.Topics = append(named.Topics, rt)
	}
	resp = w.roundTrip(named).(*kmsg.MetadataResponse)
	codes := map[string]int16{}
	for _, tp := range resp.Topics {
		codes[*tp.Topic] = tp.ErrorCode
		if tp.ErrorCode != 0 && tp.TopicID != ([16]byte{}) {
			t.Errorf("%s: a refused topic's id is given away", *tp.Topic)
		}
	}
	want := map[string]int16{"seen": 0, "hidden": kerr.TopicAuthorizationFailed.Code, "missing": kerr.TopicAuthorizationFailed.Code}
	if len(resp.Topics) != len(want) || len(codes) != len(want) {
		t.Fatalf("%d topics answered (%v), want %d", len(resp.Topics), codes, len(want))
	}
	for n, c := range want {
		if got, ok := codes[n]; !ok || got != c {
			t.Errorf("%s: code %d, want %d", n, codes[n], c)
		}
	}
	if b.store.Topic("missing") != nil {
		t.Error("auto-created a topic without CREATE")
	}
}

func TestHostOf(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:9092":        "127.0.0.1",
		"[::1]:9092":            "0:0:0:0:0:0:0:1",
		"[fe80::1:abcd]:1":      "fe80:0:0:0:0:0:1:abcd",
		"[::ffff:10.0.0.1]:123": "10.0.0.1",
	} {
		ta, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostOf(&Request{Remote: ta}); got != want {
			t.Errorf("hostOf(%s) = %q, want %q", addr, got, want)
		}
	}
}
