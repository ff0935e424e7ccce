package protocol

// Authorization of requests, as Kafka's AuthHelper: every handler asks
// through these helpers, which allow everything when no authorizer is
// configured (Config.Authorizer nil), as Kafka does without
// authorizer.class.name.

import (
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/partition"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

// principalOf is r's principal, User:ANONYMOUS when none was set.
func principalOf(r *Request) string {
	if r.principal == "" {
		return AnonymousPrincipal
	}
	return r.principal
}

// hostOf is the client's IP address as the authorizer compares ACL hosts
// with it, in the form Java's InetAddress.getHostAddress gives (IPv6 as
// eight uncompressed groups: 0:0:0:0:0:0:0:1), "" when there is none.
func hostOf(r *Request) string {
	ip := remoteIP(r.Remote)
	switch {
	case !ip.IsValid():
		return ""
	case ip.Is4():
		return ip.String()
	}
	b := ip.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	return sb.String()
}

// authorize reports whether r may do op on the resource rt/name.
func (s *Server) authorize(r *Request, op, rt int8, name string) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	return s.cfg.Authorizer.Authorize(principalOf(r), hostOf(r), op, rt, name)
}

// authorizeCluster reports whether r may do op on the cluster.
func (s *Server) authorizeCluster(r *Request, op int8) bool {
	return s.authorize(r, op, authz.ResourceCluster, authz.ClusterName)
}

// authorizeTopic, authorizeGroup and authorizeTxnID are authorize for one
// resource type.
func (s *Server) authorizeTopic(r *Request, op int8, topic string) bool {
	return s.authorize(r, op, authz.ResourceTopic, topic)
}

func (s *Server) authorizeGroup(r *Request, op int8, group string) bool {
	return s.authorize(r, op, authz.ResourceGroup, group)
}

func (s *Server) authorizeTxnID(r *Request, op int8, id string) bool {
	return s.authorize(r, op, authz.ResourceTransactionalID, id)
}

// authCode is 0 when allowed, else refused's code.
func authCode(allowed bool, refused *kerr.Error) int16 {
	if allowed {
		return 0
	}
	return refused.Code
}

// topicAuthCode, groupAuthCode, clusterAuthCode and txnIDAuthCode are 0
// when r may do op on the resource, else its type's
// *_AUTHORIZATION_FAILED code.
func (s *Server) topicAuthCode(r *Request, op int8, topic string) int16 {
	return authCode(s.authorizeTopic(r, op, topic), kerr.TopicAuthorizationFailed)
}

func (s *Server) groupAuthCode(r *Request, op int8, group string) int16 {
	return authCode(s.authorizeGroup(r, op, group), kerr.GroupAuthorizationFailed)
}

func (s *Server) clusterAuthCode(r *Request, op int8) int16 {
	return authCode(s.authorizeCluster(r, op), kerr.ClusterAuthorizationFailed)
}

func (s *Server) txnIDAuthCode(r *Request, op int8, id string) int16 {
	return authCode(s.authorizeTxnID(r, op, id), kerr.TransactionalIDAuthorizationFailed)
}

// authorizeCreateTopic is Kafka's rule for creating a topic (CreateTopics,
// auto-creation): CREATE on the cluster, or else CREATE on the topic.
func (s *Server) authorizeCreateTopic(r *Request, topic string) bool {
	return s.authorizeCluster(r, authz.OpCreate) || s.authorizeTopic(r, authz.OpCreate, topic)
}

// authorizedOps is KIP-430's bit field of what r may do on rt/name.
func (s *Server) authorizedOps(r *Request, rt int8, name string) int32 {
	return s.cfg.Authorizer.AuthorizedOperations(principalOf(r), hostOf(r), rt, name)
}

// authorizeIdempotent is InitProducerId's rule without a transactional id
// (KIP-679): IDEMPOTENT_WRITE on the cluster, or WRITE on any topic.
func (s *Server) authorizeIdempotent(r *Request) bool {
	if s.cfg.Authorizer == nil || s.authorizeCluster(r, authz.OpIdempotentWrite) {
		return true
	}
	return s.cfg.Authorizer.AuthorizeByResourceType(principalOf(r), hostOf(r), authz.OpWrite, authz.ResourceTopic)
}

// topicAuthCodeOf is topicAuthCode for a topic a request names by name or
// (byID) by id: an unknown id is left to the handler (UNKNOWN_TOPIC_ID
// comes first), an unknown name is checked by name, so that a client not
// allowed to describe it cannot learn whether it exists.
func (s *Server) topicAuthCodeOf(r *Request, op int8, t *partition.Topic, name string, byID bool) int16 {
	switch {
	case t != nil:
		name = t.Name
	case byID:
		return 0
	}
	return s.topicAuthCode(r, op, name)
}

// authorizeFetchTarget fails a fetched partition with
// TOPIC_AUTHORIZATION_FAILED as Kafka's handleFetchRequest does: a
// follower (replicaID >= 0) needs CLUSTER_ACTION, a consumer READ on the
// topic (an unknown topic id stays UNKNOWN_TOPIC_ID).
func (s *Server) authorizeFetchTarget(r *Request, replicaID int32, t *fetchTarget) {
	if s.cfg.Authorizer == nil || t.errCode == kerr.UnknownTopicID.Code {
		return
	}
	ok := false
	if replicaID >= 0 {
		ok = s.authorizeCluster(r, authz.OpClusterAction)
	} else {
		ok = s.authorizeTopic(r, authz.OpRead, t.topic)
	}
	if !ok {
		t.errCode, t.log = kerr.TopicAuthorizationFailed.Code, nil
	}
}

// groupTopicAuthCode is groupCode when the group was refused, else
// topicAuthCodeOf: Kafka answers every partition of a request whose group
// is refused with the group's error.
func (s *Server) groupTopicAuthCode(r *Request, groupCode int16, op int8, t *partition.Topic, name string, byID bool) int16 {
	if groupCode != 0 {
		return groupCode
	}
	return s.topicAuthCodeOf(r, op, t, name, byID)
}

// findCoordinatorAuthError is FindCoordinator's check: DESCRIBE on the
// group or the transactional id the key names.
func (s *Server) findCoordinatorAuthError(r *Request, keyType int8, key string) *kerr.Error {
	switch {
	case keyType == coordinatorGroup && !s.authorizeGroup(r, authz.OpDescribe, key):
		return kerr.GroupAuthorizationFailed
	case keyType == coordinatorTransaction && !s.authorizeTxnID(r, authz.OpDescribe, key):
		return kerr.TransactionalIDAuthorizationFailed
	}
	return nil
}

// addPartitionsToTxnAuth is AddPartitionsToTxn v0-3's check, nil when
// the request may go on: without WRITE on the transactional id every
// partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; without WRITE on a
// topic its partitions are TOPIC_AUTHORIZATION_FAILED, the unknown ones
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED.
// Internal topics are left to the handler, as Kafka leaves them.
func (s *Server) addPartitionsToTxnAuth(r *Request, txnID string, parts []coordinator.TopicPartition) []int16 {
	if s.cfg.Authorizer == nil {
		return nil
	}
	codes := make([]int16, len(parts))
	if code := s.txnIDAuthCode(r, authz.OpWrite, txnID); code != 0 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	denied := false
	for i, tp := range parts {
		if !partition.IsInternalTopic(tp.Topic) && !s.authorizeTopic(r, authz.OpWrite, tp.Topic) {
			codes[i], denied = kerr.TopicAuthorizationFailed.Code, true
		}
	}
	if !denied {
		return nil
	}
	for i, tp := range parts {
		if codes[i] != 0 {
			continue
		}
		codes[i] = kerr.OperationNotAttempted.Code
		if t := s.store.Topic(tp.Topic); t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			codes[i] = kerr.UnknownTopicOrPartition.Code
		}
	}
	return codes
}

// configAuthCode is the configs APIs' check (Kafka's ConfigHelper and
// handleIncrementalAlterConfigsRequest): op (DESCRIBE_CONFIGS or
// ALTER_CONFIGS) on the topic or group, or on the cluster for brokers,
// broker loggers and client metrics; other types are left to the handler.
func (s *Server) configAuthCode(r *Request, op int8, rt kmsg.ConfigResourceType, name string) int16 {
	switch rt {
	case resourceTopic:
		return s.topicAuthCode(r, op, name)
	case resourceGroup:
		return s.groupAuthCode(r, op, name)
	case resourceBroker, resourceBrokerLogger, resourceClientMetrics:
		return s.clusterAuthCode(r, op)
	}
	return 0
}

// filterDescribableTxnTopics drops from a described transaction the
// topics r may not describe, as Kafka's handleDescribeTransactionsRequest.
func (s *Server) filterDescribableTxnTopics(r *Request, st *kmsg.DescribeTransactionsResponseTransactionState) {
	if s.cfg.Authorizer == nil {
		return
	}
	kept := st.Topics[:0]
	for _, t := range st.Topics {
		if s.authorizeTopic(r, authz.OpDescribe, t.Topic) {
			kept = append(kept, t)
		}
	}
	st.Topics = kept
}

// consumerGroupHeartbeatAuthCode is ConsumerGroupHeartbeat's check: READ
// on the group, then DESCRIBE on every topic it subscribes to by name.
func (s *Server) consumerGroupHeartbeatAuthCode(r *Request, req *kmsg.ConsumerGroupHeartbeatRequest) int16 {
	return s.groupHeartbeatAuthCode(r, req.Group, req.SubscribedTopicNames)
}

// hideUndescribableAssignments fails a described consumer group whose
// members' assignments name a topic r may not describe, as Kafka's
// handleConsumerGroupDescribe does: TOPIC_AUTHORIZATION_FAILED, no members.
func (s *Server) hideUndescribableAssignments(r *Request, d *kmsg.ConsumerGroupDescribeResponseGroup) {
	if s.cfg.Authorizer == nil || d.ErrorCode != 0 {
		return
	}
	for _, m := range d.Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if !s.authorizeTopic(r, authz.OpDescribe, tp.Topic) {
					d.ErrorCode = kerr.TopicAuthorizationFailed.Code
					d.ErrorMessage = strPtr(undescribableTopicsMessage)
					d.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
					return
				}
			}
		}
	}
}
