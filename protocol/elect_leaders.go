package protocol

// ElectLeaders: v0-2
//
// Behavior (Kafka's ControllerApis.handleElectLeaders and
// ReplicationControlManager.electLeaders):
//   - We are every partition's only replica and its leader, which is also
//     its preferred leader, so no election is ever needed: each named
//     partition gets ELECTION_NOT_NEEDED, for preferred and unclean
//     elections alike, as Kafka answers for a partition whose preferred
//     leader leads.
//   - Unknown topics or partitions get UNKNOWN_TOPIC_OR_PARTITION with
//     Kafka's messages.
//   - Topics null means every partition; Kafka then leaves out the
//     partitions that need no election, so every topic is listed with no
//     partitions (in name order here).
//   - An ElectionType other than 0 (preferred) or 1 (unclean) fails the
//     whole request: top-level INVALID_REQUEST and the same on every named
//     partition, with "Unknown election type N".
//
// Version notes:
//   - v1: ElectionType (KIP-460), top-level ErrorCode
//   - v2: flexible

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.ElectLeaders.Int16(), 0, 2, handleElectLeaders) }

func handleElectLeaders(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)

	denied := s.clusterAuthCode(r, authz.OpAlter)
	if denied != 0 || (r.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1) {
		code, msg := kerr.InvalidRequest.Code, msgPtr(fmt.Sprintf("Unknown election type %d", req.ElectionType))
		if denied != 0 {
			code, msg = denied, nil
		}
		resp.ErrorCode = code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, electLeadersPartition(p, code, msg))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}

	if req.Topics == nil {
		for _, t := range s.store.Topics() {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Name
			rt.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		topic := s.store.Topic(t.Topic)
		for _, p := range t.Partitions {
			switch {
			case topic == nil:
				rt.Partitions = append(rt.Partitions, electLeadersPartition(p, kerr.UnknownTopicOrPartition.Code, msgPtr("No such topic as "+t.Topic)))
			case p < 0 || int(p) >= len(topic.Partitions):
				rt.Partitions = append(rt.Partitions, electLeadersPartition(p, kerr.UnknownTopicOrPartition.Code, msgPtr(fmt.Sprintf("No such partition as %s-%d", t.Topic, p))))
			default:
				rt.Partitions = append(rt.Partitions, electLeadersPartition(p, kerr.ElectionNotNeeded.Code, nil))
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func electLeadersPartition(p int32, code int16, msg *string) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition = p
	rp.ErrorCode = code
	rp.ErrorMessage = msg
	return rp
}
