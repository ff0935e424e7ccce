package protocol

// CreateTopics: v0-7
//
// Behavior (Kafka's ControllerApis.createTopics and
// ReplicationControlManager.createTopic, in their order of checks):
//   - A name given twice gets one INVALID_REQUEST "Duplicate topic name."
//     entry, after the others.
//   - Then per topic: __cluster_metadata (INVALID_REQUEST), an invalid name (INVALID_TOPIC_EXCEPTION), an
//     existing topic (TOPIC_ALREADY_EXISTS), a null config value or a bad
//     config (INVALID_CONFIG), a manual assignment with numPartitions or
//     replicationFactor not -1 (INVALID_REQUEST) or naming any broker but
//     us (INVALID_REPLICA_ASSIGNMENT), replicationFactor 0 or below -1 or
//     above 1 (INVALID_REPLICATION_FACTOR: one broker), numPartitions 0 or
//     below -1 (INVALID_PARTITIONS). -1 means num.partitions and
//     default.replication.factor.
//   - First of all, a request whose topics (duplicates aside) add up to
//     more than partition.MaxPartitionsPerRequest (10000) partitions is
//     refused whole: every entry POLICY_VIOLATION "Excessively large
//     number of partitions per request." (validateTotalNumberOfPartitions;
//     -1 counts num.partitions, a manual assignment its length).
//   - ValidateOnly runs every check and creates nothing.
//   - Creation is synchronous, so TimeoutMillis is not needed.
//   - A failed topic reports NumPartitions and ReplicationFactor -1 and no
//     configs, as Kafka resets them.
//
// Version notes:
//   - v1: ValidateOnly, ErrorMessage
//   - v2: throttle
//   - v3, v4: no schema change (v4: -1 defaults, KIP-464)
//   - v5: flexible; NumPartitions, ReplicationFactor, Configs and
//     ConfigErrorCode (tagged) in the response (KIP-525)
//   - v6: no schema change (quota errors)
//   - v7: TopicID in the response

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.CreateTopics.Int16(), 0, 7, handleCreateTopics) }

// clusterMetadataTopic is KRaft's metadata log, which clients may not create.
const clusterMetadataTopic = "__cluster_metadata"

func handleCreateTopics(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	count := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	if s.requestedPartitions(req.Topics, count) > partition.MaxPartitionsPerRequest {
		for _, t := range req.Topics {
			resp.Topics = append(resp.Topics, failedCreatableTopic(t.Topic, kerr.PolicyViolation, partition.TooManyPartitionsCreateTopics))
		}
		return resp, nil
	}
	var dups []string
	reported := make(map[string]bool)
	for _, t := range req.Topics {
		if count[t.Topic] > 1 {
			if !reported[t.Topic] {
				reported[t.Topic] = true
				dups = append(dups, t.Topic)
			}
			continue
		}
		resp.Topics = append(resp.Topics, s.createTopic(r, &t, req.ValidateOnly))
	}
	for _, name := range dups {
		resp.Topics = append(resp.Topics, failedCreatableTopic(name, kerr.InvalidRequest, "Duplicate topic name."))
	}
	return resp, nil
}

// requestedPartitions is the partition count the topics named once ask
// for, as Kafka's validateTotalNumberOfPartitions counts it.
func (s *Server) requestedPartitions(topics []kmsg.CreateTopicsRequestTopic, count map[string]int) int64 {
	var total int64
	for _, t := range topics {
		switch {
		case count[t.Topic] > 1:
		case len(t.ReplicaAssignment) > 0:
			total += int64(len(t.ReplicaAssignment))
		case t.NumPartitions == -1:
			total += int64(s.cfg.NumPartitions)
		case t.NumPartitions > 0:
			total += int64(t.NumPartitions)
		}
	}
	return total
}

func failedCreatableTopic(name string, code *kerr.Error, msg string) kmsg.CreateTopicsResponseTopic {
	var m *string
	if msg != "" {
		m = &msg
	}
	return failedCreatableTopicCode(name, code.Code, m)
}

func failedCreatableTopicCode(name string, code int16, msg *string) kmsg.CreateTopicsResponseTopic {
	t := kmsg.NewCreateTopicsResponseTopic()
	t.Topic = name
	t.ErrorCode = code
	t.ErrorMessage = msg
	t.NumPartitions = -1
	t.ReplicationFactor = -1
	return t
}

// createTopic checks and creates one topic.
func (s *Server) createTopic(r *Request, t *kmsg.CreateTopicsRequestTopic, validateOnly bool) kmsg.CreateTopicsResponseTopic {
	version := r.Version
	fail := func(code *kerr.Error, msg string) kmsg.CreateTopicsResponseTopic {
		return failedCreatableTopic(t.Topic, code, msg)
	}
	if !s.authorizeCreateTopic(r, t.Topic) {
		return fail(kerr.TopicAuthorizationFailed, "Authorization failed.")
	}
	if t.Topic == clusterMetadataTopic {
		return fail(kerr.InvalidRequest, "Creation of internal topic "+clusterMetadataTopic+" is prohibited.")
	}
	if err := partition.ValidateTopicName(t.Topic); err != nil {
		return fail(kerr.InvalidTopicException, err.Error())
	}
	if s.store.Topic(t.Topic) != nil {
		return fail(kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", t.Topic))
	}

	overrides := make(map[string]string, len(t.Configs))
	var nulls []string
	for _, c := range t.Configs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		overrides[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return fail(kerr.InvalidConfig, "Null value not supported for topic configs: "+strings.Join(nulls, ","))
	}
	if _, err := partition.ResolveLogConfig(s.store.Defaults(), overrides); err != nil {
		return fail(kerr.InvalidConfig, err.Error())
	}

	var numPartitions int32
	switch {
	case len(t.ReplicaAssignment) > 0:
		if t.ReplicationFactor != -1 {
			return fail(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if t.NumPartitions != -1 {
			return fail(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		n, code, msg := s.checkAssignment(t.ReplicaAssignment)
		if code != nil {
			return fail(code, msg)
		}
		numPartitions = n
	case t.ReplicationFactor < -1 || t.ReplicationFactor == 0:
		return fail(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	case t.NumPartitions < -1 || t.NumPartitions == 0:
		return fail(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	default:
		numPartitions = t.NumPartitions
		if numPartitions == -1 {
			numPartitions = s.cfg.NumPartitions
		}
		rf := t.ReplicationFactor
		if rf == -1 {
			rf = s.cfg.DefaultReplicationFactor
		}
		if rf > 1 {
			return fail(kerr.InvalidReplicationFactor, fmt.Sprintf(
				"Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.", rf, rf))
		}
	}

	created, err := s.store.CreateTopic(t.Topic, numPartitions, overrides, validateOnly)
	if err != nil {
		code, msg := s.errorAnswer(r, err, t.Topic, -1)
		return failedCreatableTopicCode(t.Topic, code, msg)
	}
	if !validateOnly {
		s.log.Debug().Str("topic", t.Topic).Int32("partitions", numPartitions).Msg("created topic")
	}

	out := kmsg.NewCreateTopicsResponseTopic()
	out.Topic = t.Topic
	out.TopicID = created.ID
	out.NumPartitions = numPartitions
	out.ReplicationFactor = 1
	if !s.authorizeTopic(r, authz.OpDescribeConfigs, t.Topic) {
		// Kafka leaves out what needs DESCRIBE_CONFIGS to see.
		out.NumPartitions, out.ReplicationFactor = -1, -1
		out.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		return out
	}
	if version >= 5 {
		view := s.configView()
		for _, name := range partition.TopicConfigNames() {
			e := view.topicEntry(created, name, false, false)
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.Source = e.Name, e.Value, int8(e.Source)
			out.Configs = append(out.Configs, c)
		}
	}
	return out
}

// checkAssignment checks a manual replica assignment against a one-broker
// cluster, with Kafka's messages, and returns the partition count.
func (s *Server) checkAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) (int32, *kerr.Error, string) {
	seen := make(map[int32]bool, len(as))
	rf := -1
	for _, a := range as {
		if seen[a.Partition] {
			return 0, kerr.InvalidReplicaAssignment, fmt.Sprintf("Found multiple manual partition assignments for partition %d", a.Partition)
		}
		seen[a.Partition] = true
		if len(a.Replicas) == 0 {
			return 0, kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."
		}
		brokers := make(map[int32]bool, len(a.Replicas))
		for _, b := range a.Replicas {
			if b != s.cfg.NodeID {
				return 0, kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", b)
			}
			if brokers[b] {
				return 0, kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", b)
			}
			brokers[b] = true
		}
		if rf != -1 && rf != len(a.Replicas) {
			return 0, kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(a.Replicas), rf)
		}
		rf = len(a.Replicas)
	}
	parts := make([]int32, 0, len(seen))
	for p := range seen {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for i, p := range parts {
		if p != int32(i) {
			return 0, kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"
		}
	}
	return int32(len(parts)), nil, ""
}
