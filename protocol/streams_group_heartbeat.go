package protocol

// StreamsGroupHeartbeat: v0
//
// Behavior (KIP-1071, Kafka 4.3's GroupMetadataManager.streamsGroupHeartbeat):
// a Kafka Streams member joins (epoch 0, with its topology), heartbeats
// with its member epoch and the tasks it owns, or leaves (epoch -1). The
// first member's topology becomes the group's; it is configured against
// the topics: source topics must exist (status MISSING_SOURCE_TOPICS),
// repartition and changelog topics get their partition counts, and the
// missing ones are created here, after the coordinator answered, as
// Kafka's KafkaApis does (the answer that asks for them carries
// MISSING_INTERNAL_TOPICS; the next heartbeat finds them). Tasks are
// assigned only once the topology is ready, by a sticky task assignor
// with group.streams.num.standby.replicas standbys, and handed out only
// once their previous owner revoked them: an active task is never owned
// twice. STALE_TOPOLOGY, INCORRECTLY_PARTITIONED_TOPICS and
// SHUTDOWN_APPLICATION statuses as Kafka; a new group's first assignment
// waits group.streams.initial.rebalance.delay.ms (ASSIGNMENT_DELAYED).
// Heartbeat interval and session
// timeout are group.streams.heartbeat.interval.ms and
// group.streams.session.timeout.ms. Authorization: READ on the group
// (GROUP_AUTHORIZATION_FAILED), DESCRIBE on every topic of the topology
// (TOPIC_AUTHORIZATION_FAILED); internal topics are created only with
// CREATE on the cluster or on each of them, else none is and the
// MISSING_INTERNAL_TOPICS status says "Unauthorized to CREATE on topics".
//
// Deliberate differences: static members are refused as Kafka 4.3 does
// (UNKNOWN_SERVER_ERROR "Static members are not supported yet."); the
// assignment is our own sticky, balanced one (which member gets which task
// can differ from Kafka's); warm-up tasks are not assigned (no task lag
// is tracked); internal topics that ask
// for a replication factor above 1 cannot be created on one broker and
// stay missing.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
)

func init() { register(kmsg.StreamsGroupHeartbeat.Int16(), 0, 0, handleStreamsGroupHeartbeat) }

func handleStreamsGroupHeartbeat(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	if !s.streamsGroupsEnabled() {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = unsupportedVersion
		return resp, nil
	}
	if s.groups == nil {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = coordinatorNotAvailable
		return resp, nil
	}
	if code := s.groupHeartbeatAuthCode(r, req.Group, streamsTopologyTopics(req.Topology)); code != 0 {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	resp, toCreate := s.groups.StreamsGroupHeartbeat(r.Ctx, req, clientInfo(r))
	for _, t := range s.uncreatableStreamsTopics(r, resp, toCreate) {
		s.createStreamsInternalTopic(t)
	}
	return resp, nil
}

// createStreamsInternalTopic creates a missing internal topic of a
// streams topology (Kafka's AutoTopicCreationManager.createStreamsInternalTopics);
// a failure is logged and the topic stays missing.
func (s *Server) createStreamsInternalTopic(t coordinator.InternalTopic) {
	if s.store.Topic(t.Name) != nil {
		return
	}
	if t.ReplicationFactor > 1 {
		s.log.Warn().Str("topic", t.Name).Int16("replication_factor", t.ReplicationFactor).Msg("cannot create streams internal topic: only 1 broker")
		return
	}
	if _, err := s.store.CreateTopic(t.Name, t.Partitions, t.Configs, false); err != nil {
		if s.store.Topic(t.Name) == nil {
			s.log.Warn().Err(err).Str("topic", t.Name).Msg("creating streams internal topic failed")
		}
		return
	}
	s.log.Info().Str("topic", t.Name).Int32("partitions", t.Partitions).Msg("created streams internal topic")
}
