package protocol

// DescribeAcls: v1-3, CreateAcls: v1-3, DeleteAcls: v1-3 (Kafka 4.3.1's
// ranges; v2 is flexible, v3 changes nothing on the wire).
//
// Behavior, as Kafka's AclApis with its StandardAuthorizer:
//   - DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls
//     ALTER; without it the whole request is CLUSTER_AUTHORIZATION_FAILED.
//   - With no authorizer configured (authorizer.class.name unset) they
//     answer SECURITY_DISABLED.
//   - A request whose filter or creation holds an UNKNOWN (0) code fails to
//     parse in Kafka, which closes the connection; so do we.
//   - CreateAcls validates each ACL (INVALID_REQUEST with Kafka's message:
//     the CLUSTER resource named other than kafka-cluster, an empty name, a
//     pattern other than LITERAL/PREFIXED, ANY operation or permission);
//     creating an ACL that exists succeeds and adds nothing.
//   - DeleteAcls answers, per filter, the ACLs it matched before the
//     request, so an ACL matched by two filters is listed under both.
//   - ACLs are persisted (partition.Store.WriteACLs) before they are seen;
//     a change past the metadata file bound is POLICY_VIOLATION.

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() {
	register(kmsg.DescribeACLs.Int16(), 1, 3, handleDescribeAcls)
	register(kmsg.CreateACLs.Int16(), 1, 3, handleCreateAcls)
	register(kmsg.DeleteACLs.Int16(), 1, 3, handleDeleteAcls)
}

var errUnknownACLElement = errors.New("protocol: ACL request holds UNKNOWN elements")

func strPtr(s string) *string { return &s }

// aclFilter converts a wire filter, refusing UNKNOWN codes as Kafka's
// request parsing does.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (authz.Filter, error) {
	if rt == 0 || pt == 0 || op == 0 || perm == 0 {
		return authz.Filter{}, errUnknownACLElement
	}
	return authz.Filter{ResourceType: int8(rt), ResourceName: name, PatternType: int8(pt), Principal: principal, Host: host, Operation: int8(op), Permission: int8(perm)}, nil
}

func handleDescribeAcls(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	f, err := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if err != nil {
		return nil, err
	}
	switch {
	case !s.authorizeCluster(r, authz.OpDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = strPtr("Request is not authorized.")
		return resp, nil
	case s.cfg.Authorizer == nil:
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = strPtr("No Authorizer is configured on the broker")
		return resp, nil
	}
	type pattern struct {
		rt   int8
		name string
		pt   int8
	}
	index := map[pattern]int{}
	for _, acl := range s.cfg.Authorizer.ACLs(f) {
		p := pattern{acl.ResourceType, acl.ResourceName, acl.PatternType}
		i, ok := index[p]
		if !ok {
			i = len(resp.Resources)
			index[p] = i
			resp.Resources = append(resp.Resources, kmsg.DescribeACLsResponseResource{
				ResourceType:        kmsg.ACLResourceType(p.rt),
				ResourceName:        p.name,
				ResourcePatternType: kmsg.ACLResourcePatternType(p.pt),
			})
		}
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, kmsg.DescribeACLsResponseResourceACL{
			Principal:      acl.Principal,
			Host:           acl.Host,
			Operation:      kmsg.ACLOperation(acl.Operation),
			PermissionType: kmsg.ACLPermissionType(acl.Permission),
		})
	}
	return resp, nil
}

func handleCreateAcls(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	acls := make([]partition.ACL, len(req.Creations))
	for i, c := range req.Creations {
		if c.ResourceType == 0 || c.ResourcePatternType == 0 || c.Operation == 0 || c.PermissionType == 0 {
			return nil, errUnknownACLElement
		}
		acls[i] = partition.ACL{
			ResourceType: int8(c.ResourceType), ResourceName: c.ResourceName, PatternType: int8(c.ResourcePatternType),
			Principal: c.Principal, Host: c.Host, Operation: int8(c.Operation), Permission: int8(c.PermissionType),
		}
	}
	if code, msg := s.aclChangeRefused(r); code != 0 {
		for range req.Creations {
			resp.Results = append(resp.Results, kmsg.CreateACLsResponseResult{ErrorCode: code, ErrorMessage: msg})
		}
		return resp, nil
	}
	for _, err := range s.cfg.Authorizer.Create(acls) {
		res := kmsg.CreateACLsResponseResult{}
		switch {
		case err == nil:
		case errors.Is(err, authz.ErrInvalid):
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = strPtr(strings.TrimPrefix(err.Error(), authz.ErrInvalid.Error()+": "))
		default:
			res.ErrorCode = s.errorCode(err)
			res.ErrorMessage = errorMessage(err)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

// aclChangeRefused is why CreateAcls and DeleteAcls are refused as a
// whole (without ALTER on the cluster, or without an authorizer), code 0
// when they are not.
func (s *Server) aclChangeRefused(r *Request) (int16, *string) {
	switch {
	case !s.authorizeCluster(r, authz.OpAlter):
		return kerr.ClusterAuthorizationFailed.Code, strPtr("Request is not authorized.")
	case s.cfg.Authorizer == nil:
		return kerr.SecurityDisabled.Code, strPtr("No Authorizer is configured.")
	}
	return 0, nil
}

func handleDeleteAcls(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	filters := make([]authz.Filter, len(req.Filters))
	for i, f := range req.Filters {
		var err error
		if filters[i], err = aclFilter(f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal, f.Host, f.Operation, f.PermissionType); err != nil {
			return nil, err
		}
	}
	code, msg := s.aclChangeRefused(r)
	var matched [][]partition.ACL
	if code == 0 {
		var err error
		if matched, err = s.cfg.Authorizer.Delete(filters); err != nil {
			code, msg = s.errorCode(err), errorMessage(err)
		}
	}
	if code != 0 {
		for range req.Filters {
			resp.Results = append(resp.Results, kmsg.DeleteACLsResponseResult{ErrorCode: code, ErrorMessage: msg})
		}
		return resp, nil
	}
	for _, acls := range matched {
		res := kmsg.DeleteACLsResponseResult{}
		for _, acl := range acls {
			res.MatchingACLs = append(res.MatchingACLs, kmsg.DeleteACLsResponseResultMatchingACL{
				ResourceType: kmsg.ACLResourceType(acl.ResourceType), ResourceName: acl.ResourceName,
				ResourcePatternType: kmsg.ACLResourcePatternType(acl.PatternType),
				Principal:           acl.Principal, Host: acl.Host,
				Operation: kmsg.ACLOperation(acl.Operation), PermissionType: kmsg.ACLPermissionType(acl.Permission),
			})
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
