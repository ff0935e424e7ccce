package protocol

// OffsetFetch: v0-10
//
// Behavior: a group's committed offsets: of the partitions asked for
// (offset -1, leader epoch -1 and empty metadata for one without a commit,
// or for a group we do not have), or, with null topics (v2+), every
// committed offset of the group. v8+ ask for several groups at once and
// answer per group. RequireStable (v7+; consumers reading read_committed
// set it) answers UNSTABLE_OFFSET_COMMIT (offset -1) for a partition an
// open transaction holds an offset for (TxnOffsetCommit), which the
// consumer retries; without it the committed offset is returned.
//
// Version notes:
//   - v1: no schema change (offsets from __consumer_offsets, as all are)
//   - v2: null Topics for all; top-level ErrorCode
//   - v3: throttle
//   - v4: no schema change
//   - v5: LeaderEpoch
//   - v6: flexible
//   - v7: RequireStable (KIP-447)
//   - v8: batched Groups (KIP-709)
//   - v9: MemberID and MemberEpoch (KIP-848): for a consumer group the
//     member must exist (UNKNOWN_MEMBER_ID) at its epoch
//     (STALE_MEMBER_EPOCH) unless no member id and a negative epoch are
//     given (an admin client); not checked for classic groups, as Kafka
//     does not
//   - v10: topics by TopicID, in the request and the answer (KIP-848); an
//     id we do not have is UNKNOWN_TOPIC_ID for each of its partitions

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.OffsetFetch.Int16(), 0, 10, handleOffsetFetch) }

// fetchTopic is one topic asked for; from v10 by id (unknownID: an id we
// do not have).
type fetchTopic struct {
	topic      string
	partitions []int32
	id         [16]byte
	unknownID  bool
}

func handleOffsetFetch(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version < 8 {
		var topics []fetchTopic
		if req.Topics != nil || r.Version < 2 {
			topics = make([]fetchTopic, 0, len(req.Topics))
			for _, t := range req.Topics {
				topics = append(topics, fetchTopic{topic: t.Topic, partitions: t.Partitions})
			}
		}
		res, code := s.noOffsets(topics), s.groupAuthCode(r, authz.OpDescribe, req.Group)
		if code == 0 {
			res, code = s.fetchOffsets(r, req.Group, topics, r.Version >= 7 && req.RequireStable)
		}
		if code != 0 && r.Version < 2 {
			// v0-1 have no top-level code: every partition carries it.
			for i := range res {
				for j := range res[i].Partitions {
					res[i].Partitions[j].ErrorCode = code
				}
			}
		}
		for _, t := range res {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{
					Partition:   p.Partition,
					Offset:      p.Offset,
					LeaderEpoch: p.LeaderEpoch,
					Metadata:    p.Metadata,
					ErrorCode:   p.ErrorCode,
				})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		resp.ErrorCode = code
		return resp, nil
	}
	for _, g := range req.Groups {
		var topics []fetchTopic
		if g.Topics != nil {
			topics = make([]fetchTopic, 0, len(g.Topics))
			for _, t := range g.Topics {
				ft := fetchTopic{topic: t.Topic, partitions: t.Partitions, id: t.TopicID}
				if r.Version >= 10 {
					ft.topic = ""
					if tp := s.store.TopicByID(partition.TopicID(t.TopicID)); tp != nil {
						ft.topic = tp.Name
					} else {
						ft.unknownID = true
					}
				}
				topics = append(topics, ft)
			}
		}
		code := s.groupAuthCode(r, authz.OpDescribe, g.Group)
		if code != 0 {
			resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: g.Group, ErrorCode: code})
			continue
		}
		if r.Version >= 9 && s.groups != nil {
			code = s.groups.CheckFetchMember(r.Ctx, g.Group, g.MemberID, g.MemberEpoch)
		}
		var res []kmsg.OffsetFetchResponseGroupTopic
		if code == 0 {
			res, code = s.fetchOffsets(r, g.Group, topics, req.RequireStable)
		} else {
			res = s.noOffsets(topics)
		}
		resp.Groups = append(resp.Groups, kmsg.OffsetFetchResponseGroup{Group: g.Group, Topics: res, ErrorCode: code})
	}
	return resp, nil
}

// fetchOffsets answers one group in the v8 shape, topics and partitions in
// request order (sorted when all were asked for with nil topics).
func (s *Server) fetchOffsets(r *Request, group string, topics []fetchTopic, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, int16) {
	var ask map[string][]int32
	if topics != nil {
		ask = make(map[string][]int32, len(topics))
		for _, t := range topics {
			if !t.unknownID {
				ask[t.topic] = append(ask[t.topic], t.partitions...)
			}
		}
	}
	offsets, code := s.groups.FetchOffsetsStable(r.Ctx, group, ask, requireStable)
	if code != 0 {
		return s.noOffsets(topics), code
	}
	if topics == nil {
		var out []kmsg.OffsetFetchResponseGroupTopic
		for _, o := range offsets {
			if !s.authorizeTopic(r, authz.OpDescribe, o.Topic) {
				continue // offsets of topics r may not describe are hidden
			}
			if len(out) == 0 || out[len(out)-1].Topic != o.Topic {
				out = append(out, kmsg.OffsetFetchResponseGroupTopic{Topic: o.Topic})
			}
			t := &out[len(out)-1]
			t.Partitions = append(t.Partitions, offsetPartition(o))
		}
		if r.Version >= 10 {
			for i := range out {
				if tp := s.store.Topic(out[i].Topic); tp != nil {
					out[i].TopicID = tp.ID
				}
				out[i].Topic = ""
			}
		}
		return out, 0
	}
	byTP := make(map[coordinator.TopicPartition]coordinator.Offset, len(offsets))
	for _, o := range offsets {
		byTP[coordinator.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o
	}
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.topic, TopicID: t.id}
		if r.Version >= 10 {
			rt.Topic = ""
		}
		for _, p := range t.partitions {
			o, ok := byTP[coordinator.TopicPartition{Topic: t.topic, Partition: p}]
			if !ok || t.unknownID {
				o = coordinator.Offset{Topic: t.topic, Partition: p, Offset: -1, LeaderEpoch: -1}
			}
			if t.unknownID {
				o.ErrorCode = kerr.UnknownTopicID.Code
			} else if code := s.topicAuthCode(r, authz.OpDescribe, t.topic); code != 0 {
				o = coordinator.Offset{Topic: t.topic, Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: code}
			}
			rt.Partitions = append(rt.Partitions, offsetPartition(o))
		}
		out = append(out, rt)
	}
	return out, 0
}

func offsetPartition(o coordinator.Offset) kmsg.OffsetFetchResponseGroupTopicPartition {
	meta := o.Metadata
	return kmsg.OffsetFetchResponseGroupTopicPartition{
		Partition:   o.Partition,
		Offset:      o.Offset,
		LeaderEpoch: o.LeaderEpoch,
		Metadata:    &meta,
		ErrorCode:   o.ErrorCode,
	}
}

// noOffsets answers every partition asked for with offset -1.
func (s *Server) noOffsets(topics []fetchTopic) []kmsg.OffsetFetchResponseGroupTopic {
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.topic, TopicID: t.id}
		for _, p := range t.partitions {
			rt.Partitions = append(rt.Partitions, offsetPartition(coordinator.Offset{Partition: p, Offset: -1, LeaderEpoch: -1}))
		}
		out = append(out, rt)
	}
	return out
}
