package protocol

// AlterClientQuotas: v0-1
//
// Behavior (Kafka's ControllerApis.handleAlterClientQuotas and
// ClientQuotaControlManager.alterClientQuotas):
//   - Each entry's entity is a map of type to name: a type given twice in
//     one entity keeps its last name, as Kafka's request parsing does. One
//     result per distinct entity, in request order.
//   - Checks per entity, in Kafka's order, all INVALID_REQUEST with
//     Kafka's messages: no parts; a type other than user, client-id, ip;
//     an empty name (a null name is the type's default); ip mixed with user
//     or client-id; an ip name that is neither an address nor a resolvable
//     host; then per op setting a value: a key not valid for the entity
//     (user/client-id: producer_byte_rate, consumer_byte_rate (longs),
//     request_percentage, controller_mutation_rate (doubles); ip:
//     connection_creation_rate (an int)), a value not above 0, an integral
//     key too large or fractional. Removing a key is never checked.
//   - A key twice in one entity's ops, or an entity given twice, gets
//     INVALID_REQUEST and that entry is not applied. (Kafka reports the
//     duplicate key as "Ignoring duplicate entity", overwriting its own
//     "Duplicate quota key" message; we send the message Kafka meant. For a
//     duplicate entity Kafka applies the first entry yet reports the error
//     for the entity, and so do we.)
//   - The valid entries are applied together and persisted in the data
//     dir before the answer; ValidateOnly applies nothing. Quotas are
//     stored and reported (DescribeClientQuotas), not enforced.
//   - Non-finite values are refused as INVALID_REQUEST: they cannot be a
//     rate, and the file format cannot hold them. So is a change that would
//     store more than 100,000 entities in all, a bound of ours on the file.
//
// Version notes:
//   - v1: flexible

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.AlterClientQuotas.Int16(), 0, 1, handleAlterClientQuotas) }

// quotaKeyType is a quota key's ConfigDef type in Kafka's QuotaConfig.
type quotaKeyType int

const (
	quotaDouble quotaKeyType = iota
	quotaLong
	quotaInt
)

var (
	userClientQuotaKeys = map[string]quotaKeyType{
		"producer_byte_rate":       quotaLong,
		"consumer_byte_rate":       quotaLong,
		"request_percentage":       quotaDouble,
		"controller_mutation_rate": quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyType{
		"connection_creation_rate": quotaInt,
	}
)

// quotaEntity is one request entry's entity after Kafka's map parsing.
type quotaEntity struct {
	parts []partition.QuotaEntityPart // request order of first appearance, last name wins
}

func (e quotaEntity) name(t string) (*string, bool) {
	for _, p := range e.parts {
		if p.Type == t {
			return p.Name, true
		}
	}
	return nil, false
}

// String is Java's ClientQuotaEntity.toString, for Kafka's messages.
func (e quotaEntity) String() string {
	var b strings.Builder
	b.WriteString("ClientQuotaEntity(entries={")
	for i, p := range e.parts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Type)
		b.WriteByte('=')
		if p.Name == nil {
			b.WriteString("null")
		} else {
			b.WriteString(*p.Name)
		}
	}
	b.WriteString("})")
	return b.String()
}

// key is the entity as a set, for finding duplicates.
func (e quotaEntity) key() string {
	var parts []string
	for _, p := range e.parts {
		n := "\x00"
		if p.Name != nil {
			n = "=" + *p.Name
		}
		parts = append(parts, p.Type+n)
	}
	// Order-insensitive: sort the few parts.
	for i := 1; i < len(parts); i++ {
		for j := i; j > 0 && parts[j] < parts[j-1]; j-- {
			parts[j], parts[j-1] = parts[j-1], parts[j]
		}
	}
	return strings.Join(parts, "\x01")
}

func handleAlterClientQuotas(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	if code := s.clusterAuthCode(r, authz.OpAlterConfigs); code != 0 {
		for _, entry := range req.Entries {
			e := kmsg.NewAlterClientQuotasResponseEntry()
			e.ErrorCode = code
			for _, p := range entry.Entity {
				e.Entity = append(e.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
			}
			resp.Entries = append(resp.Entries, e)
		}
		return resp, nil
	}

	type result struct {
		entity quotaEntity
		code   int16
		msg    *string
	}
	var results []*result
	byKey := map[string]*result{}
	var changes []partition.ClientQuotaChange
	for _, entry := range req.Entries {
		var ent quotaEntity
		for _, p := range entry.Entity {
			replaced := false
			for i := range ent.parts {
				if ent.parts[i].Type == p.Type {
					ent.parts[i].Name = p.Name
					replaced = true
				}
			}
			if !replaced {
				ent.parts = append(ent.parts, partition.QuotaEntityPart{Type: p.Type, Name: p.Name})
			}
		}
		k := ent.key()
		if prev, dup := byKey[k]; dup {
			prev.code = kerr.InvalidRequest.Code
			prev.msg = msgPtr("Ignoring duplicate entity " + ent.String())
			continue
		}
		res := &result{entity: ent}
		byKey[k] = res
		results = append(results, res)

		change, code, msg := s.checkQuotaEntry(r.Ctx, ent, entry.Ops)
		if code != 0 {
			res.code, res.msg = code, msgPtr(msg)
			continue
		}
		changes = append(changes, change)
	}
	if !req.ValidateOnly && len(changes) > 0 {
		if err := s.store.AlterClientQuotas(changes); err != nil {
			// Nothing was applied: every entity that would have been
			// fails alike.
			code, msg := s.errorAnswer(r, err, "", -1)
			if errors.Is(err, partition.ErrTooManyQuotaEntities) {
				// Our bound on the file, which Kafka does not have.
				code, msg = kerr.InvalidRequest.Code, msgPtr(err.Error())
			}
			for _, res := range results {
				if res.code == 0 {
					res.code, res.msg = code, msg
				}
			}
		}
	}
	for _, res := range results {
		e := kmsg.NewAlterClientQuotasResponseEntry()
		e.ErrorCode = res.code
		e.ErrorMessage = res.msg
		for _, p := range res.entity.parts {
			e.Entity = append(e.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

// checkQuotaEntry validates one entry as Kafka's alterClientQuotaEntity
// does and returns the change to apply, or an INVALID_REQUEST code and
// message.
func (s *Server) checkQuotaEntry(ctx context.Context, ent quotaEntity, ops []kmsg.AlterClientQuotasRequestEntryOp) (partition.ClientQuotaChange, int16, string) {
	bad := func(msg string) (partition.ClientQuotaChange, int16, string) {
		return partition.ClientQuotaChange{}, kerr.InvalidRequest.Code, msg
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Key] {
			return bad(fmt.Sprintf("Duplicate quota key %s not updating quota for this entity %s", op.Key, ent))
		}
		seen[op.Key] = true
	}
	if len(ent.parts) == 0 {
		return bad("Invalid empty client quota entity")
	}
	for _, p := range ent.parts {
		if p.Type != quotaEntityUser && p.Type != quotaEntityClientID && p.Type != quotaEntityIP {
			return bad("Unhandled client quota entity type: " + p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return bad("Empty " + p.Type + " not supported")
		}
	}
	_, hasUser := ent.name(quotaEntityUser)
	_, hasClient := ent.name(quotaEntityClientID)
	ip, hasIP := ent.name(quotaEntityIP)
	keys := userClientQuotaKeys
	if hasIP {
		if hasUser || hasClient {
			// Kafka's message, missing space included.
			return bad("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
		}
		if ip != nil && !s.validQuotaIP(ctx, *ip) {
			return bad(*ip + " is not a valid IP or resolvable host.")
		}
		keys = ipQuotaKeys
	}
	change := partition.ClientQuotaChange{Entity: ent.parts, Set: map[string]float64{}}
	for _, op := range ops {
		if op.Remove {
			change.Remove = append(change.Remove, op.Key)
			continue
		}
		if msg := checkQuotaValue(keys, op.Key, op.Value); msg != "" {
			return bad(msg)
		}
		change.Set[op.Key] = op.Value
	}
	return change, 0, ""
}

// checkQuotaValue is Kafka's validateQuotaKeyValue.
func checkQuotaValue(keys map[string]quotaKeyType, key string, v float64) string {
	typ, ok := keys[key]
	switch {
	case !ok:
		return "Invalid configuration key " + key
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprintf("Quota %s must be a finite number", key)
	case v <= 0:
		return "Quota " + key + " must be greater than 0"
	}
	switch typ {
	case quotaInt:
		if v > math.MaxInt32 {
			return "Proposed value for " + key + " is too large for an INT."
		}
	case quotaLong:
		if v > math.MaxInt64 {
			return "Proposed value for " + key + " is too large for a LONG."
		}
	default:
		return ""
	}
	if math.Abs(math.Mod(v, 1.0)) > 1e-6 {
		return key + " cannot be a fractional value."
	}
	return ""
}

// validQuotaIP is Java's InetAddress.getByName succeeding: an address
// literal, or a host name that resolves (within a bounded time, so a slow
// resolver cannot hold the connection).
// The resolver is Config.QuotaLookupHost.
func (s *Server) validQuotaIP(ctx context.Context, name string) bool {
	if net.ParseIP(name) != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, quotaHostLookupTimeout)
	defer cancel()
	addrs, err := s.cfg.QuotaLookupHost(ctx, name)
	return err == nil && len(addrs) > 0
}

const quotaHostLookupTimeout = 5 * time.Second
