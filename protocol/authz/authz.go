// Package authz is kcompatd's authorizer: the ACLs and the rules of Kafka's
// StandardAuthorizer (org.apache.kafka.metadata.authorizer), which decide
// whether a principal from a host may do an operation on a resource.
//
// The rules, as StandardAuthorizerData applies them:
//   - a super user (super.users) may do everything;
//   - the ACLs that apply to a resource are the LITERAL ones naming it, the
//     LITERAL ones naming "*", and the PREFIXED ones whose name starts it;
//   - an ACL matches a request when its principal is the request's or
//     User:*, its host is the client's IP address or "*", and its operation
//     is the one asked for or ALL; an ALLOW ACL for READ, WRITE, DELETE or
//     ALTER also grants DESCRIBE, and one for ALTER_CONFIGS grants
//     DESCRIBE_CONFIGS (a DENY ACL implies nothing);
//   - a matching DENY wins over any ALLOW; else a matching ALLOW allows;
//   - with no ACL applying to the resource at all, the answer is
//     allow.everyone.if.no.acl.found (false by default); with ACLs that
//     apply but none matching, it is DENIED.
//
// Codes are Kafka's (kmsg.ACLResourceType and friends). The ACLs are kept
// by partition.Store (kcompatd-acls); an Authorizer holds the current set
// as an immutable snapshot, so checks take no lock.
package authz

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kcompatd/kcompatd/partition"
)

// Kafka's codes, as kmsg numbers them.
const (
	ResourceAny             int8 = 1
	ResourceTopic           int8 = 2
	ResourceGroup           int8 = 3
	ResourceCluster         int8 = 4
	ResourceTransactionalID int8 = 5
	ResourceDelegationToken int8 = 6
	ResourceUser            int8 = 7

	PatternAny      int8 = 1
	PatternMatch    int8 = 2
	PatternLiteral  int8 = 3
	PatternPrefixed int8 = 4

	OpAny             int8 = 1
	OpAll             int8 = 2
	OpRead            int8 = 3
	OpWrite           int8 = 4
	OpCreate          int8 = 5
	OpDelete          int8 = 6
	OpAlter           int8 = 7
	OpDescribe        int8 = 8
	OpClusterAction   int8 = 9
	OpDescribeConfigs int8 = 10
	OpAlterConfigs    int8 = 11
	OpIdempotentWrite int8 = 12
	OpCreateTokens    int8 = 13
	OpDescribeTokens  int8 = 14

	PermissionAny   int8 = 1
	PermissionDeny  int8 = 2
	PermissionAllow int8 = 3
)

// ClusterName is the one name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal name and host that match all.
const (
	Wildcard          = "*"
	WildcardPrincipal = "User:*"
)

// Config is the authorizer's configuration.
type Config struct {
	// SuperUsers are principals ("User:alice") allowed everything
	// (super.users, separated by semicolons there).
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
}

// Authorizer decides requests by the ACLs it holds and changes them,
// persisting each change before it is seen.
type Authorizer struct {
	super   map[string]bool
	noACL   bool
	persist func([]partition.ACL) error

	mu   sync.Mutex // serializes changes (Create, Delete) and their persisting
	acls atomic.Pointer[[]partition.ACL]
}

// New returns an authorizer holding acls; persist stores a whole new set
// (partition.Store.WriteACLs) and is called under the change lock.
func New(cfg Config, acls []partition.ACL, persist func([]partition.ACL) error) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, noACL: cfg.AllowEveryoneIfNoACLFound, persist: persist}
	for _, u := range cfg.SuperUsers {
		if u = strings.TrimSpace(u); u != "" {
			a.super[u] = true
		}
	}
	cp := append([]partition.ACL(nil), acls...)
	a.acls.Store(&cp)
	return a
}

// ParseSuperUsers splits super.users as Kafka does: by ";", each entry
// trimmed, empty entries dropped.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Authorize reports whether principal, connected from host (an IP
// address), may do op on the resource of type rt named name.
func (a *Authorizer) Authorize(principal, host string, op, rt int8, name string) bool {
	if a.super[principal] {
		return true
	}
	applies, allowed := false, false
	for _, acl := range *a.acls.Load() {
		if acl.ResourceType != rt || !patternApplies(acl, name) {
			continue
		}
		applies = true
		switch matchResult(acl, principal, host, op) {
		case PermissionDeny:
			return false
		case PermissionAllow:
			allowed = true
		}
	}
	if allowed {
		return true
	}
	return !applies && a.noACL
}

// patternApplies reports whether acl's pattern covers the resource name.
func patternApplies(acl partition.ACL, name string) bool {
	switch acl.PatternType {
	case PatternLiteral:
		return acl.ResourceName == name || acl.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, acl.ResourceName)
	}
	return false
}

// impliesDescribe and impliesDescribeConfigs are the operations that an
// ALLOW ACL grants DESCRIBE and DESCRIBE_CONFIGS with.
var (
	impliesDescribe        = map[int8]bool{OpDescribe: true, OpRead: true, OpWrite: true, OpDelete: true, OpAlter: true}
	impliesDescribeConfigs = map[int8]bool{OpDescribeConfigs: true, OpAlterConfigs: true}
)

// matchResult is acl's verdict on the request (its Permission), or 0 when
// it does not match the principal, host or operation.
func matchResult(acl partition.ACL, principal, host string, op int8) int8 {
	if acl.Principal != principal && acl.Principal != WildcardPrincipal {
		return 0
	}
	if acl.Host != Wildcard && acl.Host != host {
		return 0
	}
	if acl.Operation != OpAll {
		switch {
		case acl.Permission == PermissionAllow && op == OpDescribe:
			if !impliesDescribe[acl.Operation] {
				return 0
			}
		case acl.Permission == PermissionAllow && op == OpDescribeConfigs:
			if !impliesDescribeConfigs[acl.Operation] {
				return 0
			}
		case acl.Operation != op:
			return 0
		}
	}
	return acl.Permission
}

// AuthorizeByResourceType reports whether principal may do op on at least
// one resource of type rt, as Kafka's Authorizer.authorizeByResourceType
// decides it (used for idempotent producers: WRITE on any topic): an ALLOW
// for the operation (or ALL) on some pattern that no DENY dominates (a
// literal DENY of the same name, a prefixed DENY of a prefix of it, a
// wildcard DENY); implied operations do not count here.
func (a *Authorizer) AuthorizeByResourceType(principal, host string, op, rt int8) bool {
	// A made-up name, so that super users and allow-if-no-ACL pass
	// whatever the ACLs deny.
	if a.Authorize(principal, host, op, rt, "hardcode") {
		return true
	}
	denyLiteral, denyPrefix := map[string]bool{}, map[string]bool{}
	var allowLiteral, allowPrefix []string
	for _, acl := range *a.acls.Load() {
		if acl.ResourceType != rt ||
			(acl.Host != host && acl.Host != Wildcard) ||
			(acl.Principal != principal && acl.Principal != WildcardPrincipal) ||
			(acl.Operation != op && acl.Operation != OpAll) {
			continue
		}
		switch {
		case acl.Permission == PermissionDeny && acl.PatternType == PatternLiteral:
			if acl.ResourceName == Wildcard {
				return false
			}
			denyLiteral[acl.ResourceName] = true
		case acl.Permission == PermissionDeny:
			denyPrefix[acl.ResourceName] = true
		case acl.PatternType == PatternLiteral:
			if acl.ResourceName == Wildcard {
				return true
			}
			allowLiteral = append(allowLiteral, acl.ResourceName)
		default:
			allowPrefix = append(allowPrefix, acl.ResourceName)
		}
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefix[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, n := range allowLiteral {
		if !denyLiteral[n] && !dominated(n) {
			return true
		}
	}
	for _, n := range allowPrefix {
		if !dominated(n) {
			return true
		}
	}
	return false
}

// supportedOps are the operations Kafka reports authorized operations for
// (AclEntry.supportedOperations), per resource type.
var supportedOps = map[int8][]int8{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
	ResourceDelegationToken: {OpDescribe},
	ResourceUser:            {OpCreateTokens, OpDescribeTokens},
}

// AuthorizedOperations is KIP-430's bit field of the operations principal
// may do on the resource (bit n set: operation code n); with a nil
// Authorizer (no authorizer configured), every supported operation.
func (a *Authorizer) AuthorizedOperations(principal, host string, rt int8, name string) int32 {
	var bits int32
	for _, op := range supportedOps[rt] {
		if a == nil || a.Authorize(principal, host, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}
