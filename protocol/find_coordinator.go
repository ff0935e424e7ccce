package protocol

// FindCoordinator: v0-6
//
// Behavior:
//   - Key type 0 (group): this node, for every group. The first lookup
//     creates __consumer_offsets (offsets.topic.num.partitions partitions,
//     cleanup.policy=compact), as Kafka does; if that fails the key gets
//     COORDINATOR_NOT_AVAILABLE.
//   - Key type 1 (transaction): this node, for every transactional id.
//     The first lookup creates __transaction_state
//     (transaction.state.log.num.partitions partitions,
//     cleanup.policy=compact), as Kafka does; if that fails the key gets
//     COORDINATOR_NOT_AVAILABLE.
//   - Key type 2 (share, v6+; "groupId:topicId:partition", which Kafka's
//     brokers send to find the share coordinator): CLUSTER_ACTION on the
//     cluster or the whole request fails CLUSTER_AUTHORIZATION_FAILED;
//     a key SharePartitionKey does not parse gets INVALID_REQUEST; else
//     this node, the leader of every __share_group_state partition, after
//     creating that topic as Kafka's first lookup does. Below v6 the key
//     type gets INVALID_REQUEST.
//   - An unknown key type fails the whole request with INVALID_REQUEST
//     (Kafka throws from CoordinatorType.forId).
//   - Messages as Kafka sends them: below v4 Errors.message() ("NONE" on
//     success, else the error's default message); from v4 the empty
//     string per key, the default message when the whole request failed.
//   - Deliberate difference: a first lookup answers this node at once
//     where Kafka answers COORDINATOR_NOT_AVAILABLE while it creates the
//     internal topic.
//
// Version notes:
//   - v1: KeyType, ErrorMessage, throttle
//   - v2: no schema change
//   - v3: flexible
//   - v4: batched CoordinatorKeys, answered per key in Coordinators
//     (KIP-699)
//   - v5: no schema change (TRANSACTION_ABORTABLE for transactions)
//   - v6: share coordinator key type (KIP-932)

import (
	"encoding/base64"
	"strings"
	"unicode"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.FindCoordinator.Int16(), 0, 6, handleFindCoordinator) }

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

func handleFindCoordinator(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keyType := req.CoordinatorType
	if r.Version == 0 {
		keyType = coordinatorGroup
	}
	if r.Version < 4 {
		e, _ := s.findCoordinator(r, keyType, req.CoordinatorKey)
		c := s.coordinatorAnswer(r, req.CoordinatorKey, e)
		msg := "NONE" // Kafka's Errors.NONE.message()
		if e != nil {
			msg = e.Description
		}
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, &msg
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		return resp, nil
	}
	for _, k := range req.CoordinatorKeys {
		e, whole := s.findCoordinator(r, keyType, k)
		if whole {
			// Kafka's getErrorResponse: every key failed, with the
			// error's default message.
			resp.Coordinators = resp.Coordinators[:0]
			for _, k := range req.CoordinatorKeys {
				c := s.coordinatorAnswer(r, k, e)
				msg := e.Description
				c.ErrorMessage = &msg
				resp.Coordinators = append(resp.Coordinators, c)
			}
			return resp, nil
		}
		resp.Coordinators = append(resp.Coordinators, s.coordinatorAnswer(r, k, e))
	}
	return resp, nil
}

// coordinatorAnswer is key's entry: this node, or e with no node. Its
// message is Kafka's default for the field from v4, the empty string.
func (s *Server) coordinatorAnswer(r *Request, key string, e *kerr.Error) kmsg.FindCoordinatorResponseCoordinator {
	msg := ""
	c := kmsg.FindCoordinatorResponseCoordinator{Key: key, NodeID: -1, Port: -1, ErrorMessage: &msg}
	if e != nil {
		c.ErrorCode = e.Code
		return c
	}
	c.NodeID = s.cfg.NodeID
	c.Host, c.Port = s.advertisedFor(r)
	return c
}

// findCoordinator is Kafka's getCoordinator for one key: nil when this
// node coordinates it, else the error; whole is an error Kafka throws,
// which fails every key of the request.
func (s *Server) findCoordinator(r *Request, keyType int8, key string) (e *kerr.Error, whole bool) {
	if e := s.findCoordinatorAuthError(r, keyType, key); e != nil {
		return e, false
	}
	switch keyType {
	case coordinatorGroup:
		if _, err := s.groups.EnsureOffsetsTopic(); err != nil {
			return kerr.CoordinatorNotAvailable, false
		}
	case coordinatorTransaction:
		if _, err := s.txns.EnsureTxnTopic(); err != nil {
			return kerr.CoordinatorNotAvailable, false
		}
	case coordinatorShare:
		switch {
		case r.Version < 6:
			return kerr.InvalidRequest, false
		case !s.authorizeCluster(r, authz.OpClusterAction):
			return kerr.ClusterAuthorizationFailed, true
		case !validSharePartitionKey(key):
			return kerr.InvalidRequest, false
		case s.groups == nil:
			return kerr.CoordinatorNotAvailable, false
		}
		// Nil, nil: the state is kept in memory (tests), on this node.
		if _, err := s.groups.EnsureShareStateTopic(); err != nil {
			return kerr.CoordinatorNotAvailable, false
		}
	default:
		return kerr.InvalidRequest, true
	}
	return nil, false
}

// validSharePartitionKey reports whether Kafka 4.3.1's
// SharePartitionKey.getInstance(String) parses key: split on ':' with
// Java's trailing empty parts dropped, at least three parts; the group id
// is all before the last two (so it may hold ':') and not blank after
// Java's trim; then a topic id as Uuid.fromString reads it and a
// partition as Integer.parseInt reads it. The partition's value is not
// checked (-1 passes, as in Kafka).
func validSharePartitionKey(key string) bool {
	parts := strings.Split(key, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	n := len(parts)
	if n < 3 {
		return false
	}
	group := strings.Join(parts[:n-2], ":")
	if strings.TrimFunc(group, func(r rune) bool { return r <= ' ' }) == "" {
		return false
	}
	return validUUIDString(parts[n-2]) && validJavaInt(parts[n-1])
}

// validUUIDString is Kafka's Uuid.fromString: at most 24 characters of
// URL-safe base64 (Java's URL decoder: padding optional but exact, no
// line breaks, unlike Go's decoders) decoding to 16 bytes.
func validUUIDString(s string) bool {
	if len(s) > 24 || strings.ContainsAny(s, "\r\n") {
		return false
	}
	enc := base64.RawURLEncoding
	if strings.HasSuffix(s, "=") {
		enc = base64.URLEncoding
	}
	b, err := enc.DecodeString(s)
	return err == nil && len(b) == 16
}

// validJavaInt is Integer.parseInt in base 10: an optional sign, then
// digits, in int32's range. Java reads any Unicode decimal digit of the
// Basic Multilingual Plane (a UTF-16 char), as "٣" or "１".
func validJavaInt(s string) bool {
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	var v int64
	for _, r := range s {
		d := bmpDigit(r)
		if d < 0 {
			return false
		}
		if v = v*10 + int64(d); v > 1<<31 {
			return false
		}
	}
	return v < 1<<31 || neg
}

// bmpDigit is Java's Character.digit(char, 10): the value of a decimal
// digit (Unicode Nd) in the Basic Multilingual Plane, else -1. Nd comes
// in runs of ten from a zero.
func bmpDigit(r rune) int {
	if r > 0xFFFF {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) >= rg.Lo && uint16(r) <= rg.Hi {
			return int(uint16(r)-rg.Lo) % 10
		}
	}
	return -1
}
