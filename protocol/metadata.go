package protocol

// Metadata: v0-13
//
// Behavior:
//   - One broker (ourselves) leads every partition, with replicas and ISR
//     [node.id], no offline replicas, and the log's leader epoch; the
//     controller id is our node id.
//   - Topics null (v1+) or empty (v0) means every topic; an empty list at
//     v1+ means none. Requested names are answered once each (Kafka's set).
//   - A missing topic is created when auto.create.topics.enable and the
//     request allows it (AllowAutoTopicCreation, a v4 field; below v4 the
//     schema default, true, applies, as Kafka reads it), with num.partitions
//     partitions; __consumer_offsets, __transaction_state and (with the
//     share coordinator as persister) __share_group_state are created
//     by their coordinators, with their own settings. As Kafka 4.3.1 in
//     KRaft mode (AutoTopicCreationManager, observed at v0-v13 for both
//     kinds), the request that triggers the creation is answered
//     UNKNOWN_TOPIC_OR_PARTITION with no partitions and a zero topic id,
//     and clients retry; the next request finds the topic (ours is created
//     before the answer, Kafka's a moment later).
//   - Names Kafka cannot create get INVALID_TOPIC_EXCEPTION, missing topics
//     otherwise UNKNOWN_TOPIC_OR_PARTITION.
//   - v12+: topics may be named by id; unknown ids get UNKNOWN_TOPIC_ID with a
//     null name. Below v12 a null name or a non-zero id makes every topic
//     INVALID_REQUEST (Kafka's error response for InvalidRequestException).
//   - v12+ naming no topic by id and some topic by neither name nor id (a
//     null name, a zero id) fails the whole request as Kafka 4.3.1 does:
//     every requested topic gets UNKNOWN_SERVER_ERROR, a null name as "",
//     and v13 sets the top-level error code too. (Kafka's
//     KafkaApis.handleTopicMetadataRequest drops zero ids, so such a
//     request is by name, and the null name fails in the metadata cache;
//     the failure is answered by MetadataRequest.getErrorResponse.
//     Observed on a 4.3.1 broker.)
//   - Authorized operations (v8+), when asked for, are every operation of
//     the resource, as Kafka answers without an authorizer.
//
// Version notes:
//   - v1: rack, controller id, is_internal; null topics = all
//   - v2: cluster id
//   - v3: throttle
//   - v4: AllowAutoTopicCreation
//   - v5: offline replicas
//   - v7: leader epoch
//   - v8: authorized operations (cluster ones only through v10)
//   - v9: flexible
//   - v10: topic ids in the response
//   - v12: topics by id in the request, nullable topic name
//   - v13: top-level error code

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.Metadata.Int16(), 0, 13, handleMetadata) }

// Kafka's AclOperation codes, for the authorized-operations bit fields.
const (
	aclRead            = 3
	aclWrite           = 4
	aclCreate          = 5
	aclDelete          = 6
	aclAlter           = 7
	aclDescribe        = 8
	aclClusterAction   = 9
	aclDescribeConfigs = 10
	aclAlterConfigs    = 11
	aclIdempotentWrite = 12
)

// topicAuthorizedOperations is every operation AclEntry supports on a topic;
// clusterAuthorizedOperations likewise on the cluster.
var (
	topicAuthorizedOperations = bits(aclRead, aclWrite, aclCreate, aclDelete, aclAlter,
		aclDescribe, aclDescribeConfigs, aclAlterConfigs)
	clusterAuthorizedOperations = bits(aclCreate, aclClusterAction, aclDescribeConfigs,
		aclAlterConfigs, aclIdempotentWrite, aclAlter, aclDescribe)
)

func bits(ops ...int) int32 {
	var b int32
	for _, o := range ops {
		b |= 1 << o
	}
	return b
}

// authorizedOperationsUnset is the schema default, sent when not asked.
const authorizedOperationsUnset = -2147483648

func handleMetadata(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)

	allTopics := req.Topics == nil || (r.Version == 0 && len(req.Topics) == 0)
	var byID, nullName bool
	if !allTopics {
		for _, t := range req.Topics {
			if r.Version < 12 && (t.Topic == nil || t.TopicID != ([16]byte{})) {
				// Kafka throws InvalidRequestException, answered by
				// MetadataRequest.getErrorResponse.
				return metadataErrorResponse(req, resp, kerr.InvalidRequest.Code), nil
			}
			if t.TopicID != ([16]byte{}) {
				byID = true
			} else if t.Topic == nil {
				nullName = true
			}
		}
	}
	if nullName && !byID {
		// By name, with a name missing: Kafka fails the request (see
		// the file comment).
		s.log.Debug().Int16("api_version", r.Version).Msg("metadata request names a topic by neither name nor id")
		resp = metadataErrorResponse(req, resp, kerr.UnknownServerError.Code)
		if r.Version >= 13 {
			resp.ErrorCode = kerr.UnknownServerError.Code
		}
		return resp, nil
	}

	host, port := s.advertisedFor(r)
	resp.Brokers = []kmsg.MetadataResponseBroker{{
		NodeID: s.cfg.NodeID,
		Host:   host,
		Port:   port,
		Rack:   s.cfg.Rack,
	}}
	clusterID := s.store.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = s.cfg.NodeID

	switch {
	case allTopics:
		for _, t := range s.store.Topics() {
			if s.authorizeTopic(r, authz.OpDescribe, t.Name) { // others are hidden
				resp.Topics = append(resp.Topics, s.metadataTopic(t))
			}
		}
	case byID:
		// Kafka uses the ids when any is set, answering unknown ids first.
		seen := make(map[[16]byte]bool)
		var known []*partition.Topic
		for _, rt := range req.Topics {
			if rt.TopicID == ([16]byte{}) || seen[rt.TopicID] {
				continue
			}
			seen[rt.TopicID] = true
			if t := s.store.TopicByID(partition.TopicID(rt.TopicID)); t != nil {
				known = append(known, t)
			} else {
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
					ErrorCode:            kerr.UnknownTopicID.Code,
					TopicID:              rt.TopicID,
					AuthorizedOperations: authorizedOperationsUnset,
				})
			}
		}
		for _, t := range known {
			if !s.authorizeTopic(r, authz.OpDescribe, t.Name) {
				// Topic ids are not secret: Kafka answers with the id.
				resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{ErrorCode: kerr.TopicAuthorizationFailed.Code, TopicID: t.ID, AuthorizedOperations: authorizedOperationsUnset})
				continue
			}
			resp.Topics = append(resp.Topics, s.metadataTopic(t))
		}
	default:
		autoCreate := s.cfg.AutoCreateTopics && (r.Version < 4 || req.AllowAutoTopicCreation)
		seen := make(map[string]bool)
		for _, rt := range req.Topics {
			name := *rt.Topic
			if seen[name] {
				continue
			}
			seen[name] = true
			if mt, denied := s.metadataDenied(r, name, autoCreate); denied {
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, s.metadataNamedTopic(name, autoCreate))
		}
	}

	if r.Version >= 8 {
		for i := range resp.Topics {
			t := &resp.Topics[i]
			// Kafka sets them on every named topic, missing ones too,
			// but not on unknown topic ids.
			if req.IncludeTopicAuthorizedOperations && t.Topic != nil && t.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.AuthorizedOperations = s.authorizedOps(r, authz.ResourceTopic, *t.Topic)
			}
		}
		if r.Version <= 10 && req.IncludeClusterAuthorizedOperations {
			resp.AuthorizedOperations = 0 // without DESCRIBE on the cluster
			if s.authorizeCluster(r, authz.OpDescribe) {
				resp.AuthorizedOperations = s.authorizedOps(r, authz.ResourceCluster, authz.ClusterName)
			}
		}
	}
	return resp, nil
}

// metadataDenied answers a topic requested by name that r may not
// describe, or that does not exist and r may not create while the request
// would create it: TOPIC_AUTHORIZATION_FAILED, whether it exists or not.
func (s *Server) metadataDenied(r *Request, name string, autoCreate bool) (kmsg.MetadataResponseTopic, bool) {
	n := name
	denied := kmsg.MetadataResponseTopic{ErrorCode: kerr.TopicAuthorizationFailed.Code, Topic: &n, AuthorizedOperations: authorizedOperationsUnset}
	if !s.authorizeTopic(r, authz.OpDescribe, name) {
		return denied, true
	}
	if autoCreate && s.store.Topic(name) == nil && !s.authorizeCreateTopic(r, name) {
		denied.IsInternal = partition.IsInternalTopic(name)
		return denied, true
	}
	return kmsg.MetadataResponseTopic{}, false
}

// metadataErrorResponse is Kafka's MetadataRequest.getErrorResponse: every
// requested topic with code, a null name as "".
func metadataErrorResponse(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse, code int16) *kmsg.MetadataResponse {
	for _, t := range req.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		resp.Topics = append(resp.Topics, kmsg.MetadataResponseTopic{
			ErrorCode:            code,
			Topic:                &name,
			TopicID:              t.TopicID,
			AuthorizedOperations: authorizedOperationsUnset,
		})
	}
	return resp
}

// metadataNamedTopic answers one requested name, creating the topic if
// allowed.
func (s *Server) metadataNamedTopic(name string, autoCreate bool) kmsg.MetadataResponseTopic {
	if t := s.store.Topic(name); t != nil {
		return s.metadataTopic(t)
	}
	missing := func(code int16) kmsg.MetadataResponseTopic {
		n := name
		return kmsg.MetadataResponseTopic{
			ErrorCode:            code,
			Topic:                &n,
			IsInternal:           partition.IsInternalTopic(name),
			AuthorizedOperations: authorizedOperationsUnset,
		}
	}
	if err := partition.ValidateTopicName(name); err != nil {
		return missing(kerr.InvalidTopicException.Code)
	}
	if !autoCreate {
		return missing(kerr.UnknownTopicOrPartition.Code)
	}
	if partition.IsInternalTopic(name) {
		// As Kafka's AutoTopicCreationManager: an internal topic is
		// created by its coordinator, with its partitions and configs.
		var t *partition.Topic
		var err error
		switch {
		case name == coordinator.OffsetsTopic && s.groups != nil:
			t, err = s.groups.EnsureOffsetsTopic()
		case name == coordinator.TxnTopic && s.txns != nil:
			t, err = s.txns.EnsureTxnTopic()
		case name == sharestate.StateTopic && s.groups != nil:
			t, err = s.groups.EnsureShareStateTopic()
			if t == nil && err == nil {
				return missing(kerr.UnknownTopicOrPartition.Code)
			}
		default:
			return missing(kerr.UnknownTopicOrPartition.Code)
		}
		if err != nil {
			return missing(s.errorCode(err))
		}
		s.log.Debug().Str("topic", t.Name).Msg("created internal topic for Metadata")
		return missing(kerr.UnknownTopicOrPartition.Code)
	}
	if _, err := s.store.CreateTopic(name, s.cfg.NumPartitions, nil, false); err != nil {
		if t := s.store.Topic(name); t != nil { // created concurrently
			return s.metadataTopic(t)
		}
		return missing(s.errorCode(err))
	}
	s.log.Debug().Str("topic", name).Int32("partitions", s.cfg.NumPartitions).Msg("auto-created topic")
	return missing(kerr.UnknownTopicOrPartition.Code)
}

// metadataTopic describes an existing topic.
func (s *Server) metadataTopic(t *partition.Topic) kmsg.MetadataResponseTopic {
	name := t.Name
	mt := kmsg.MetadataResponseTopic{
		Topic:                &name,
		TopicID:              t.ID,
		IsInternal:           t.Internal,
		AuthorizedOperations: authorizedOperationsUnset,
		Partitions:           make([]kmsg.MetadataResponseTopicPartition, 0, len(t.Partitions)),
	}
	replicas := []int32{s.cfg.NodeID}
	for i, l := range t.Partitions {
		mt.Partitions = append(mt.Partitions, kmsg.MetadataResponseTopicPartition{
			Partition:       int32(i),
			Leader:          s.cfg.NodeID,
			LeaderEpoch:     l.LeaderEpoch(),
			Replicas:        replicas,
			ISR:             replicas,
			OfflineReplicas: []int32{},
		})
	}
	return mt
}
