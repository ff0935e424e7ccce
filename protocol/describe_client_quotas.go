package protocol

// DescribeClientQuotas: v0-1
//
// Behavior (Kafka's KafkaApis.handleDescribeClientQuotasRequest and
// ClientQuotasImage.describe, KIP-546):
//   - Filter components, checked in order: an empty entity type, a type
//     given twice, or a match type's match string present when it must
//     not be (DEFAULT, SPECIFIED) or absent when it must be (EXACT) fail
//     the request with INVALID_REQUEST; a type other than user, client-id
//     and ip with UNSUPPORTED_VERSION; an unknown match type and ip mixed
//     with user or client-id with INVALID_REQUEST. A failed request has
//     null entries and Kafka's message.
//   - EXACT (0) matches that name, DEFAULT (1) the type's default entity
//     (a null name), SPECIFIED (2) any entity with that type. Strict
//     returns only entities with no types beyond the filter's.
//   - Entries are the stored quotas (see alter_client_quotas.go), sorted by
//     entity, each entity's parts by type and values by key.
//
// Version notes:
//   - v1: flexible

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeClientQuotas.Int16(), 0, 1, handleDescribeClientQuotas) }

// Kafka's ClientQuotaEntity types.
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// DescribeClientQuotas match types.
const (
	quotaMatchExact     = 0
	quotaMatchDefault   = 1
	quotaMatchSpecified = 2
)

func handleDescribeClientQuotas(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code *kerr.Error, msg string) (kmsg.Response, error) {
		resp.ErrorCode = code.Code
		resp.ErrorMessage = msgPtr(msg)
		resp.Entries = nil
		return resp, nil
	}

	if code := s.clusterAuthCode(r, authz.OpDescribeConfigs); code != 0 {
		return fail(kerr.ClusterAuthorizationFailed, "Request is not authorized.")
	}
	exact := map[string]*string{}
	typed := map[string]bool{}
	for _, c := range req.Components {
		_, inExact := exact[c.EntityType]
		switch {
		case c.EntityType == "":
			return fail(kerr.InvalidRequest, "Invalid empty entity type.")
		case inExact || typed[c.EntityType]:
			return fail(kerr.InvalidRequest, fmt.Sprintf("Entity type %s cannot appear more than once in the filter.", c.EntityType))
		case c.EntityType != quotaEntityIP && c.EntityType != quotaEntityUser && c.EntityType != quotaEntityClientID:
			return fail(kerr.UnsupportedVersion, "Unsupported entity type "+c.EntityType)
		}
		switch c.MatchType {
		case quotaMatchExact:
			if c.Match == nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[c.EntityType] = c.Match
		case quotaMatchDefault:
			if c.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[c.EntityType] = nil
		case quotaMatchSpecified:
			if c.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			typed[c.EntityType] = true
		default:
			return fail(kerr.InvalidRequest, fmt.Sprintf("Unknown match type %d", c.MatchType))
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || typed[t] }
	if has(quotaEntityIP) && (has(quotaEntityUser) || has(quotaEntityClientID)) {
		return fail(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}

	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, q := range s.store.ClientQuotas() {
		if !quotaEntityMatches(q.Entity, exact, typed, req.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range q.Entity {
			e.Entity = append(e.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			e.Values = append(e.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: q.Values[k]})
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// quotaEntityMatches is Kafka's ClientQuotasImage.matches.
func quotaEntityMatches(entity []partition.QuotaEntityPart, exact map[string]*string, typed map[string]bool, strict bool) bool {
	if strict && len(entity) != len(exact)+len(typed) {
		return false
	}
	find := func(t string) (*string, bool) {
		for _, p := range entity {
			if p.Type == t {
				return p.Name, true
			}
		}
		return nil, false
	}
	for t, want := range exact {
		got, ok := find(t)
		if !ok || (got == nil) != (want == nil) || (got != nil && *got != *want) {
			return false
		}
	}
	for t := range typed {
		if _, ok := find(t); !ok {
			return false
		}
	}
	return true
}
