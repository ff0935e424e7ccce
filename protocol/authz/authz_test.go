package authz

import (
	"errors"
	"testing"

	"github.com/kcompatd/kcompatd/partition"
)

func allow(rt int8, name string, pt int8, principal, host string, op int8) partition.ACL {
	return partition.ACL{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: PermissionAllow}
}

func deny(rt int8, name string, pt int8, principal, host string, op int8) partition.ACL {
	a := allow(rt, name, pt, principal, host, op)
	a.Permission = PermissionDeny
	return a
}

func TestAuthorize(t *testing.T) {
	const alice, bob = "User:alice", "User:bob"
	const h1, h2 = "10.0.0.1", "10.0.0.2"
	type check struct {
		principal, host string
		op, rt          int8
		name            string
		want            bool
	}
	tests := []struct {
		name   string
		cfg    Config
		acls   []partition.ACL
		checks []check
	}{
		{
			name: "no ACL: denied by default",
			checks: []check{
				{alice, h1, OpRead, ResourceTopic, "t", false},
				{alice, h1, OpDescribe, ResourceCluster, ClusterName, false},
			},
		},
		{
			name: "no ACL: allow.everyone.if.no.acl.found",
			cfg:  Config{AllowEveryoneIfNoACLFound: true},
			acls: []partition.ACL{allow(ResourceTopic, "other", PatternLiteral, bob, "*", OpRead)},
			checks: []check{
				{alice, h1, OpRead, ResourceTopic, "t", true},
				// An ACL applies to "other": no fallback, and it is not alice's.
				{alice, h1, OpRead, ResourceTopic, "other", false},
				{bob, h1, OpRead, ResourceTopic, "other", true},
			},
		},
		{
			name: "literal ACL: that name, principal, operation only",
			acls: []partition.ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)},
			checks: []check{
				{alice, h1, OpRead, ResourceTopic, "t", true},
				{alice, h1, OpRead, ResourceTopic, "t2", false},
				{alice, h1, OpWrite, ResourceTopic, "t", false},
				{bob, h1, OpRead, ResourceTopic, "t", false},
				{alice, h1, OpRead, ResourceGroup, "t", false},
			},
		},
		{
			name: "prefixed ACL",
			acls: []partition.ACL{allow(ResourceTopic, "orders.", PatternPrefixed, alice, "*", OpWrite)},
			checks: []check{
				{alice, h1, OpWrite, ResourceTopic, "orders.eu", true},
				{alice, h1, OpWrite, ResourceTopic, "orders.", true},
				{alice, h1, OpWrite, ResourceTopic, "orders", false},
				{alice, h1, OpWrite, ResourceTopic, "xorders.eu", false},
			},
		},
		{
			name: "wildcard resource, principal and host",
			acls: []partition.ACL{
				allow(ResourceGroup, Wildcard, PatternLiteral, WildcardPrincipal, "*", OpRead),
				allow(ResourceTopic, "t", PatternLiteral, alice, h1, OpRead),
			},
			checks: []check{
				{bob, h2, OpRead, ResourceGroup, "any-group", true},
				{alice, h1, OpRead, ResourceTopic, "t", true},
				{alice, h2, OpRead, ResourceTopic, "t", false},
			},
		},
		{
			name: "a literal * name is a wildcard only as LITERAL",
			acls: []partition.ACL{allow(ResourceTopic, "*", PatternPrefixed, alice, "*", OpRead)},
			checks: []check{
				{alice, h1, OpRead, ResourceTopic, "t", false},
				{alice, h1, OpRead, ResourceTopic, "*t", true},
			},
		},
		{
			name: "deny wins",
			acls: []partition.ACL{
				allow(ResourceTopic, Wildcard, PatternLiteral, alice, "*", OpAll),
				deny(ResourceTopic, "secret.", PatternPrefixed, alice, "*", OpRead),
				deny(ResourceTopic, "t", PatternLiteral, WildcardPrincipal, h2, OpAll),
			},
			checks: []check{
				{alice, h1, OpRead, ResourceTopic, "public", true},
				{alice, h1, OpRead, ResourceTopic, "secret.x", false},
				{alice, h1, OpWrite, ResourceTopic, "secret.x", true},
				{alice, h1, OpRead, ResourceTopic, "t", true},
				{alice, h2, OpRead, ResourceTopic, "t", false},
			},
		},
		{
			name: "implied operations (ALLOW only)",
			acls: []partition.ACL{
				allow(ResourceTopic, "r", PatternLiteral, alice, "*", OpRead),
				allow(ResourceTopic, "w", PatternLiteral, alice, "*", OpWrite),
				allow(ResourceTopic, "d", PatternLiteral, alice, "*", OpDelete),
				allow(ResourceTopic, "a", PatternLiteral, alice, "*", OpAlter),
				allow(ResourceTopic, "c", PatternLiteral, alice, "*", OpCreate),
				allow(ResourceTopic, "ac", PatternLiteral, alice, "*", OpAlterConfigs),
				allow(ResourceTopic, "x", PatternLiteral, alice, "*", OpDescribe),
				deny(ResourceTopic, "x", PatternLiteral, alice, "*", OpRead),
			},
			checks: []check{
				{alice, h1, OpDescribe, ResourceTopic, "r", true},
				{alice, h1, OpDescribe, ResourceTopic, "w", true},
				{alice, h1, OpDescribe, ResourceTopic, "d", true},
				{alice, h1, OpDescribe, ResourceTopic, "a", true},
				{alice, h1, OpDescribe, ResourceTopic, "c", false},
				{alice, h1, OpDescribeConfigs, ResourceTopic, "ac", true},
				{alice, h1, OpDescribeConfigs, ResourceTopic, "a", false},
				{alice, h1, OpRead, ResourceTopic, "w", false},
				// A DENY of READ does not deny DESCRIBE.
				{alice, h1, OpDescribe, ResourceTopic, "x", true},
				{alice, h1, OpRead, ResourceTopic, "x", false},
			},
		},
		{
			name: "super users pass whatever the ACLs say",
			cfg:  Config{SuperUsers: ParseSuperUsers(" User:admin ;User:ops;;")},
			acls: []partition.ACL{deny(ResourceTopic, Wildcard, PatternLiteral, WildcardPrincipal, "*", OpAll)},
			checks: []check{
				{"User:admin", h1, OpRead, ResourceTopic, "t", true},
				{"User:ops", h1, OpAlter, ResourceCluster, ClusterName, true},
				{alice, h1, OpRead, ResourceTopic, "t", false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(tt.cfg, tt.acls, func([]partition.ACL) error { return nil })
			for _, c := range tt.checks {
				if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("Authorize(%s, %s, op %d, type %d, %q) = %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	const alice = "User:alice"
	tests := []struct {
		name string
		acls []partition.ACL
		want bool
	}{
		{"none", nil, false},
		{"literal allow", []partition.ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, true},
		{"implied ops do not count", []partition.ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpRead)}, false},
		{"ALL counts", []partition.ACL{allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpAll)}, true},
		{"literal allow, same literal deny", []partition.ACL{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite)}, false},
		{"prefixed allow dominated by a shorter prefixed deny", []partition.ACL{
			allow(ResourceTopic, "abc", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "ab", PatternPrefixed, alice, "*", OpWrite)}, false},
		{"prefixed deny of a longer prefix does not dominate", []partition.ACL{
			allow(ResourceTopic, "ab", PatternPrefixed, alice, "*", OpWrite),
			deny(ResourceTopic, "abc", PatternPrefixed, alice, "*", OpWrite)}, true},
		{"wildcard deny", []partition.ACL{
			allow(ResourceTopic, "t", PatternLiteral, alice, "*", OpWrite),
			deny(ResourceTopic, Wildcard, PatternLiteral, WildcardPrincipal, "*", OpWrite)}, false},
		{"wildcard allow", []partition.ACL{allow(ResourceTopic, Wildcard, PatternLiteral, WildcardPrincipal, "*", OpWrite)}, true},
	}
	for _, tt := range tests {
		a := New(Config{}, tt.acls, nil)
		if got := a.AuthorizeByResourceType(alice, "10.0.0.1", OpWrite, ResourceTopic); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := New(Config{}, []partition.ACL{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, nil)
	if got, want := a.AuthorizedOperations("User:alice", "h", ResourceTopic, "t"), int32(1<<OpRead|1<<OpDescribe); got != want {
		t.Errorf("topic ops = %b, want %b", got, want)
	}
	var none *Authorizer
	if got, want := none.AuthorizedOperations("User:x", "h", ResourceGroup, "g"), int32(1<<OpRead|1<<OpDescribe|1<<OpDelete|1<<OpDescribeConfigs|1<<OpAlterConfigs); got != want {
		t.Errorf("no authorizer: group ops = %b, want %b", got, want)
	}
}

func ptr(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	lit := allow(ResourceTopic, "foo", PatternLiteral, "User:a", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:a", "*", OpRead)
	pre := deny(ResourceTopic, "fo", PatternPrefixed, "User:b", "1.2.3.4", OpWrite)
	grp := allow(ResourceGroup, "foo", PatternLiteral, "User:a", "*", OpRead)
	acls := []partition.ACL{lit, wild, pre, grp}
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	with := func(mod func(*Filter)) Filter { f := any; mod(&f); return f }
	tests := []struct {
		name string
		f    Filter
		want []partition.ACL
	}{
		{"any", any, acls},
		{"topic", with(func(f *Filter) { f.ResourceType = ResourceTopic }), []partition.ACL{lit, wild, pre}},
		{"any pattern, name exact", with(func(f *Filter) { f.ResourceName = ptr("foo") }), []partition.ACL{lit, grp}},
		{"literal foo", with(func(f *Filter) { f.ResourceName, f.PatternType = ptr("foo"), PatternLiteral }), []partition.ACL{lit, grp}},
		{"prefixed fo", with(func(f *Filter) { f.ResourceName, f.PatternType = ptr("fo"), PatternPrefixed }), []partition.ACL{pre}},
		{"match foo", with(func(f *Filter) { f.ResourceName, f.PatternType = ptr("foo"), PatternMatch }), acls},
		{"match f", with(func(f *Filter) { f.ResourceName, f.PatternType = ptr("f"), PatternMatch }), []partition.ACL{wild}},
		{"principal", with(func(f *Filter) { f.Principal = ptr("User:b") }), []partition.ACL{pre}},
		{"host", with(func(f *Filter) { f.Host = ptr("1.2.3.4") }), []partition.ACL{pre}},
		{"operation", with(func(f *Filter) { f.Operation = OpRead }), []partition.ACL{lit, wild, grp}},
		{"permission", with(func(f *Filter) { f.Permission = PermissionDeny }), []partition.ACL{pre}},
	}
	a := New(Config{}, acls, nil)
	for _, tt := range tests {
		got := a.ACLs(tt.f)
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

func TestCreateDelete(t *testing.T) {
	var persisted [][]partition.ACL
	fail := false
	a := New(Config{}, nil, func(acls []partition.ACL) error {
		if fail {
			return errors.New("disk full")
		}
		persisted = append(persisted, acls)
		return nil
	})
	x := allow(ResourceTopic, "t", PatternLiteral, "User:a", "*", OpRead)
	errs := a.Create([]partition.ACL{
		x, x,
		allow(ResourceCluster, "other", PatternLiteral, "User:a", "*", OpAlter),
		allow(ResourceTopic, "", PatternLiteral, "User:a", "*", OpAlter),
		allow(ResourceTopic, "t", PatternMatch, "User:a", "*", OpAlter),
		allow(ResourceTopic, "t", PatternLiteral, "User:a", "*", OpAny),
		{ResourceType: ResourceTopic, ResourceName: "t", PatternType: PatternLiteral, Principal: "User:a", Host: "*", Operation: OpRead, Permission: PermissionAny},
		allow(ResourceAny, "t", PatternLiteral, "User:a", "*", OpRead),
		allow(ResourceTopic, "t", PatternLiteral, "alice", "*", OpRead),
	})
	want := []string{"", "", "The only valid name for the CLUSTER resource is kafka-cluster", "Invalid empty resource name",
		"Invalid patternType MATCH", "Invalid operation ANY", "Invalid permissionType ANY", "Invalid resourceType ANY",
		"Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"}
	if len(errs) != len(want) {
		t.Fatalf("%d creation results, want %d", len(errs), len(want))
	}
	for i, err := range errs {
		got := ""
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("creation %d: %v is not ErrInvalid", i, err)
			}
			got = err.Error()[len(ErrInvalid.Error())+2:]
		}
		if got != want[i] {
			t.Errorf("creation %d: %q, want %q", i, got, want[i])
		}
	}
	if len(persisted) != 1 || len(persisted[0]) != 1 {
		t.Fatalf("persisted %v, want one write of one ACL", persisted)
	}
	// Creating it again writes nothing.
	if errs := a.Create([]partition.ACL{x}); errs[0] != nil || len(persisted) != 1 {
		t.Fatalf("re-create: %v, %d writes", errs, len(persisted))
	}
	fail = true
	y := allow(ResourceTopic, "u", PatternLiteral, "User:a", "*", OpRead)
	if errs := a.Create([]partition.ACL{y}); errs[0] == nil {
		t.Fatal("a failed write must fail the creation")
	}
	if len(a.ACLs(Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny})) != 1 {
		t.Fatal("a failed write must not be seen")
	}
	fail = false
	a.Create([]partition.ACL{y})
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	topicT := any
	topicT.ResourceName = ptr("t")
	got, err := a.Delete([]Filter{topicT, any})
	if err != nil || len(got[0]) != 1 || len(got[1]) != 2 {
		t.Fatalf("Delete = %v, %v; want [x] and [x y]", got, err)
	}
	if n := len(a.ACLs(any)); n != 0 {
		t.Fatalf("%d ACLs left", n)
	}
}
