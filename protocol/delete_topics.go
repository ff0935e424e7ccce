package protocol

// DeleteTopics: v0-6
//
// Behavior (Kafka's ControllerApis.deleteTopics, in its order):
//   - delete.topic.enable=false: every topic gets TOPIC_DELETION_DISABLED
//     (INVALID_REQUEST below v3).
//   - v6 names each topic by name or by id: neither, or both, is
//     INVALID_REQUEST; a name or id given twice gets one INVALID_REQUEST
//     entry ("Duplicate topic name." / "Duplicate topic id.").
//   - An unknown id is UNKNOWN_TOPIC_ID, an unknown name
//     UNKNOWN_TOPIC_OR_PARTITION; the rest are deleted and reported with
//     both name and id. Entries come in that order, as Kafka builds them.
//   - __consumer_offsets and __transaction_state are deleted like any
//     topic, as Kafka 4.3.1 deletes them (ControllerApis.deleteTopics and
//     ReplicationControlManager.deleteTopic have no internal-topic check;
//     a 4.3.1 broker answers NONE): their coordinator unloads its state,
//     as Kafka's resigns the deleted partitions, and the topic comes back
//     empty on its next use.
//
// Version notes:
//   - v1: throttle
//   - v2, v3: no schema change (v3: TOPIC_DELETION_DISABLED)
//   - v4: flexible
//   - v5: ErrorMessage
//   - v6: topics by name or id (KIP-516)

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DeleteTopics.Int16(), 0, 6, handleDeleteTopics) }

func handleDeleteTopics(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	topics := req.Topics
	if r.Version < 6 {
		topics = make([]kmsg.DeleteTopicsRequestTopic, 0, len(req.TopicNames))
		for _, n := range req.TopicNames {
			topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	add := func(name *string, id [16]byte, code *kerr.Error, msg string) {
		t := kmsg.NewDeleteTopicsResponseTopic()
		t.Topic, t.TopicID = name, id
		if code != nil {
			t.ErrorCode = code.Code
		}
		if msg != "" {
			t.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, t)
	}

	if !s.cfg.DeleteTopicEnable {
		code := kerr.TopicDeletionDisabled
		if r.Version < 3 {
			code = kerr.InvalidRequest
		}
		for _, t := range topics {
			add(t.Topic, t.TopicID, code, "")
		}
		return resp, nil
	}

	var (
		names, dupNames []string // in request order
		ids, dupIDs     [][16]byte
		nameCount       = make(map[string]int)
		idCount         = make(map[[16]byte]int)
		zero            [16]byte
	)
	for _, t := range topics {
		switch {
		case t.Topic == nil && t.TopicID == zero:
			add(nil, zero, kerr.InvalidRequest, "Neither topic name nor id were specified.")
		case t.Topic != nil && t.TopicID != zero:
			add(t.Topic, t.TopicID, kerr.InvalidRequest, "You may not specify both topic name and topic id.")
		case t.Topic != nil:
			if nameCount[*t.Topic]++; nameCount[*t.Topic] == 1 {
				names = append(names, *t.Topic)
			} else if nameCount[*t.Topic] == 2 {
				dupNames = append(dupNames, *t.Topic)
			}
		default:
			if idCount[t.TopicID]++; idCount[t.TopicID] == 1 {
				ids = append(ids, t.TopicID)
			} else if idCount[t.TopicID] == 2 {
				dupIDs = append(dupIDs, t.TopicID)
			}
		}
	}
	for _, name := range dupNames {
		add(&name, zero, kerr.InvalidRequest, "Duplicate topic name.")
	}
	for _, id := range dupIDs {
		add(nil, id, kerr.InvalidRequest, "Duplicate topic id.")
	}

	type target struct {
		name string
		id   [16]byte
	}
	var toDelete []target
	deleting := make(map[string]bool)
	for _, id := range ids {
		if idCount[id] > 1 {
			continue
		}
		t := s.store.TopicByID(partition.TopicID(id))
		if t == nil {
			add(nil, id, kerr.UnknownTopicID, "")
			continue
		}
		if !s.authorizeTopic(r, authz.OpDescribe, t.Name) || !s.authorizeTopic(r, authz.OpDelete, t.Name) {
			add(nil, id, kerr.TopicAuthorizationFailed, "")
			continue
		}
		if !deleting[t.Name] {
			deleting[t.Name] = true
			toDelete = append(toDelete, target{t.Name, id})
		}
	}
	for _, name := range names {
		if nameCount[name] > 1 {
			continue
		}
		if !s.authorizeTopic(r, authz.OpDelete, name) {
			add(&name, zero, kerr.TopicAuthorizationFailed, "")
			continue
		}
		t := s.store.Topic(name)
		if t == nil {
			add(&name, zero, kerr.UnknownTopicOrPartition, "")
			continue
		}
		if !deleting[name] {
			deleting[name] = true
			toDelete = append(toDelete, target{name, t.ID})
		}
	}
	var deletedIDs [][16]byte
	for _, d := range toDelete {
		name := d.name
		if err := s.store.DeleteTopic(name); err != nil {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic, t.TopicID = &name, d.id
			t.ErrorCode, t.ErrorMessage = s.errorAnswer(r, err, name, -1)
			resp.Topics = append(resp.Topics, t)
			continue
		}
		s.log.Debug().Str("topic", name).Msg("deleted topic")
		if s.groups != nil {
			// As Kafka's onPartitionsDeleted: committed offsets of the
			// topic go too, so a topic created again starts afresh.
			s.groups.TopicDeleted(r.Ctx, name)
		}
		if s.txns != nil {
			s.txns.TopicDeleted(name)
		}
		deletedIDs = append(deletedIDs, d.id)
		add(&name, d.id, nil, "")
	}
	if s.groups != nil {
		// Share groups forget the deleted topics' share-partitions and
		// their share state goes, as Kafka's onPartitionsDeleted.
		s.groups.ShareTopicsDeleted(r.Ctx, deletedIDs)
	}
	return resp, nil
}
