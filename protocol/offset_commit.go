package protocol

// OffsetCommit: v0-10
//
// Behavior (Kafka's KafkaApis.handleOffsetCommitRequest,
// GroupCoordinator.doCommitOffsets and GroupMetadataManager.storeOffsets):
//   - A partition of a topic that does not exist:
//     UNKNOWN_TOPIC_OR_PARTITION, decided here; the other partitions go to
//     the coordinator. There a group error (below) answers every one of
//     them; only a commit that passes the group checks answers metadata
//     longer than offset.metadata.max.bytes (in UTF-16 code units, as
//     Java's String.length) with OFFSET_METADATA_TOO_LARGE and commits the
//     other partitions.
//   - Generation -1 with no member id commits for a group that is Empty or
//     does not exist (a simple consumer or an admin client; the group is
//     created). Otherwise the member must be in the group
//     (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) at the group's generation
//     (ILLEGAL_GENERATION; for a group we do not have ILLEGAL_GENERATION,
//     and GROUP_ID_NOT_FOUND from v9 as Kafka 3.9+), and not while the group waits for the leader's assignment
//     (REBALANCE_IN_PROGRESS). Commits are allowed during the join phase, so
//     members can commit before they rejoin.
//   - A commit is one batch in the group's partition of __consumer_offsets,
//     written before the answer; a commit from a member counts as its
//     heartbeat.
//
// Version notes:
//   - v1: Generation, MemberID, per-partition commit Timestamp (-1: now)
//   - v2: RetentionTimeMillis (-1: the broker's KIP-211 expiry; else the
//     offset expires that long after the commit)
//   - v3: throttle
//   - v4: no schema change
//   - v5: RetentionTimeMillis removed
//   - v6: LeaderEpoch
//   - v7: InstanceID (KIP-345)
//   - v8: flexible
//   - v9: no schema change (KIP-848 member epochs; for classic groups the
//     generation); GROUP_ID_NOT_FOUND for a member of an unknown group.
//     A member of a KIP-848 group must commit with v9+ (UNSUPPORTED_VERSION
//     before) and its member epoch (STALE_MEMBER_EPOCH; an older epoch is
//     accepted for partitions it has held since, as Kafka 4.3 relaxes it);
//     epoch -1 only while the group has no members
//   - v10: topics by TopicID, in the request and the answer (KIP-848); an
//     id we do not have is UNKNOWN_TOPIC_ID

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.OffsetCommit.Int16(), 0, 10, handleOffsetCommit) }

func handleOffsetCommit(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	// codes[i][j] is the answer for req.Topics[i].Partitions[j]; -1 marks
	// partitions handed to the coordinator.
	codes := make([][]int16, len(req.Topics))
	var parts []coordinator.CommitPartition
	var now int64
	if s.groups != nil {
		now = s.groups.Now()
	}
	groupCode := s.groupAuthCode(r, authz.OpRead, req.Group)
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
		name := t.Topic
		var topic *partition.Topic
		if r.Version >= 10 {
			if topic = s.store.TopicByID(partition.TopicID(t.TopicID)); topic != nil {
				name = topic.Name
			}
		} else {
			topic = s.store.Topic(t.Topic)
		}
		for j, p := range t.Partitions {
			if c := s.groupTopicAuthCode(r, groupCode, authz.OpRead, topic, name, r.Version >= 10); c != 0 {
				codes[i][j] = c
				continue
			}
			if r.Version >= 10 && topic == nil {
				codes[i][j] = kerr.UnknownTopicID.Code
				continue
			}
			cp, code := s.commitPartition(topic, name, p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, now)
			if codes[i][j] = code; code == -1 {
				if r.Version < 6 {
					cp.LeaderEpoch = -1
				}
				if r.Version == 1 && p.Timestamp != -1 {
					cp.CommitTimestamp = p.Timestamp
				}
				if r.Version >= 2 && r.Version <= 4 && req.RetentionTimeMillis != -1 {
					cp.ExpireTimestamp = now + req.RetentionTimeMillis
				}
				parts = append(parts, cp)
			}
		}
	}
	var partCodes []int16 // in parts' order
	if len(parts) > 0 {
		instance := req.InstanceID
		if r.Version < 7 {
			instance = nil
		}
		partCodes = s.groups.CommitOffsets(r.Ctx, r.Version, req.Group, req.Generation, req.MemberID, instance, parts)
	}
	next := 0
	for i, t := range req.Topics {
		rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic, TopicID: t.TopicID}
		for j, p := range t.Partitions {
			c := codes[i][j]
			if c == -1 {
				c = partCodes[next]
				next++
			}
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: c})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// commitPartition checks one partition of an offset commit, plain or
// transactional: a code other than -1 answers it at once; -1 hands cp to
// the group coordinator.
func (s *Server) commitPartition(topic *partition.Topic, name string, part int32, offset int64, leaderEpoch int32, metadata *string, now int64) (coordinator.CommitPartition, int16) {
	switch {
	case topic == nil || part < 0 || int(part) >= len(topic.Partitions):
		return coordinator.CommitPartition{}, kerr.UnknownTopicOrPartition.Code
	}
	cp := coordinator.CommitPartition{
		Topic:           name,
		Partition:       part,
		Offset:          offset,
		LeaderEpoch:     leaderEpoch,
		CommitTimestamp: now,
		ExpireTimestamp: -1,
	}
	if metadata != nil {
		cp.Metadata = *metadata
	}
	return cp, -1
}
