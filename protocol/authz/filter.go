package authz

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kcompatd/kcompatd/partition"
)

// Filter selects ACLs, as Kafka's AclBindingFilter: ANY codes match all,
// a nil string matches any; a MATCH pattern type selects the ACLs that
// would apply to the named resource (its literal, the wildcard, and the
// prefixes of the name).
type Filter struct {
	ResourceType int8
	ResourceName *string
	PatternType  int8
	Principal    *string
	Host         *string
	Operation    int8
	Permission   int8
}

// Matches reports whether f selects acl (ResourcePatternFilter.matches and
// AccessControlEntryFilter.matches).
func (f Filter) Matches(acl partition.ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != acl.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != acl.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case f.PatternType == PatternAny || f.PatternType == acl.PatternType:
			if name != acl.ResourceName {
				return false
			}
		case acl.PatternType == PatternLiteral:
			if name != acl.ResourceName && acl.ResourceName != Wildcard {
				return false
			}
		case acl.PatternType == PatternPrefixed:
			if len(name) < len(acl.ResourceName) || name[:len(acl.ResourceName)] != acl.ResourceName {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != acl.Principal {
		return false
	}
	if f.Host != nil && *f.Host != acl.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != acl.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == acl.Permission
}

// ACLs returns the ACLs f selects, in the order they were created.
func (a *Authorizer) ACLs(f Filter) []partition.ACL {
	var out []partition.ACL
	for _, acl := range *a.acls.Load() {
		if f.Matches(acl) {
			out = append(out, acl)
		}
	}
	return out
}

// ErrInvalid is a creation Kafka refuses with INVALID_REQUEST.
var ErrInvalid = errors.New("invalid ACL")

// Validate checks a new ACL as Kafka does (AclApis.handleCreateAcls and
// AclControlManager.validateNewAcl), with Kafka's messages.
func Validate(acl partition.ACL) error {
	switch {
	case acl.ResourceType == ResourceCluster && acl.ResourceName != ClusterName:
		return fmt.Errorf("%w: The only valid name for the CLUSTER resource is %s", ErrInvalid, ClusterName)
	case acl.ResourceName == "":
		return fmt.Errorf("%w: Invalid empty resource name", ErrInvalid)
	case acl.ResourceType < ResourceTopic || acl.ResourceType > ResourceUser:
		return fmt.Errorf("%w: Invalid resourceType %s", ErrInvalid, resourceTypeName(acl.ResourceType))
	case acl.PatternType != PatternLiteral && acl.PatternType != PatternPrefixed:
		return fmt.Errorf("%w: Invalid patternType %s", ErrInvalid, patternTypeName(acl.PatternType))
	case acl.Operation < OpAll || acl.Operation > 15:
		return fmt.Errorf("%w: Invalid operation %s", ErrInvalid, opName(acl.Operation))
	case acl.Permission != PermissionAllow && acl.Permission != PermissionDeny:
		return fmt.Errorf("%w: Invalid permissionType %s", ErrInvalid, permName(acl.Permission))
	case !strings.Contains(acl.Principal, ":"):
		return fmt.Errorf("%w: Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", ErrInvalid, acl.Principal)
	}
	return acl.Check()
}

func resourceTypeName(c int8) string {
	if c == ResourceAny {
		return "ANY"
	}
	return "UNKNOWN"
}

func patternTypeName(c int8) string {
	switch c {
	case PatternAny:
		return "ANY"
	case PatternMatch:
		return "MATCH"
	}
	return "UNKNOWN"
}

func opName(c int8) string {
	if c == OpAny {
		return "ANY"
	}
	return "UNKNOWN"
}

func permName(c int8) string {
	if c == PermissionAny {
		return "ANY"
	}
	return "UNKNOWN"
}

// Create adds acls (one result per ACL, nil when created or already
// present), persisting the new set once. A failure to persist fails every
// valid ACL of the call with that error.
func (a *Authorizer) Create(acls []partition.ACL) []error {
	errs := make([]error, len(acls))
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := *a.acls.Load()
	next := append([]partition.ACL(nil), cur...)
	seen := make(map[partition.ACL]bool, len(next))
	for _, acl := range next {
		seen[acl] = true
	}
	var added []int
	for i, acl := range acls {
		if errs[i] = Validate(acl); errs[i] != nil {
			continue
		}
		added = append(added, i)
		if !seen[acl] {
			seen[acl] = true
			next = append(next, acl)
		}
	}
	if len(next) == len(cur) {
		return errs
	}
	if err := a.persist(next); err != nil {
		for _, i := range added {
			errs[i] = err
		}
		return errs
	}
	a.acls.Store(&next)
	return errs
}

// Delete removes every ACL that any of filters selects, persisting once,
// and returns per filter the ACLs it selected (an ACL two filters select
// is listed under both, as Kafka does).
func (a *Authorizer) Delete(filters []Filter) ([][]partition.ACL, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := *a.acls.Load()
	out := make([][]partition.ACL, len(filters))
	gone := map[int]bool{}
	for i, f := range filters {
		for j, acl := range cur {
			if f.Matches(acl) {
				out[i] = append(out[i], acl)
				gone[j] = true
			}
		}
	}
	if len(gone) == 0 {
		return out, nil
	}
	next := make([]partition.ACL, 0, len(cur)-len(gone))
	for j, acl := range cur {
		if !gone[j] {
			next = append(next, acl)
		}
	}
	if err := a.persist(next); err != nil {
		return nil, err
	}
	a.acls.Store(&next)
	return out, nil
}
