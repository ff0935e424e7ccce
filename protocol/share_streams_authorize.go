package protocol

// Authorization of the share group (KIP-932) and streams group (KIP-1071)
// APIs, as Kafka 4.3's KafkaApis checks them: READ on the group for what
// a member does (heartbeats, fetches, acknowledgements, altering share
// offsets), DESCRIBE on the group for the describes, DELETE for deleting
// share offsets; READ on the topics a member consumes or whose offsets
// change, DESCRIBE on those it only names or describes.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/coordinator/sharefetch"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

// streamsMissingInternalTopics is StreamsGroupHeartbeatResponse's
// MISSING_INTERNAL_TOPICS status.
const streamsMissingInternalTopics int8 = 3

// undescribableTopicsMessage is the message of a share or consumer group
// describe refused for its topics; streams groups get
// undescribableStreamsTopicsMessage (Kafka words them differently).
const (
	undescribableTopicsMessage        = "The group has described topic(s) that the client is not authorized to describe."
	undescribableStreamsTopicsMessage = "The described group uses topics that the client is not authorized to describe."
)

// groupHeartbeatAuthCode is the heartbeats' check: READ on the group, then
// DESCRIBE on every topic named.
func (s *Server) groupHeartbeatAuthCode(r *Request, group string, topics []string) int16 {
	if code := s.groupAuthCode(r, authz.OpRead, group); code != 0 {
		return code
	}
	for _, t := range topics {
		if code := s.topicAuthCode(r, authz.OpDescribe, t); code != 0 {
			return code
		}
	}
	return 0
}

// streamsTopologyTopics is every topic a streams topology names (source,
// repartition sink and source, changelog), once each.
func streamsTopologyTopics(topo *kmsg.StreamsGroupHeartbeatRequestTopology) []string {
	if topo == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, st := range topo.Subtopologies {
		for _, n := range st.SourceTopics {
			add(n)
		}
		for _, n := range st.RepartitionSinkTopics {
			add(n)
		}
		for _, ti := range st.RepartitionSourceTopics {
			add(ti.Topic)
		}
		for _, ti := range st.StateChangelogTopics {
			add(ti.Topic)
		}
	}
	return out
}

// uncreatableStreamsTopics drops from toCreate the internal topics r may
// not create (CREATE on the cluster, else on each topic), noting them in
// resp's MISSING_INTERNAL_TOPICS status as Kafka does; when any is
// refused, none is created.
func (s *Server) uncreatableStreamsTopics(r *Request, resp *kmsg.StreamsGroupHeartbeatResponse, toCreate []coordinator.InternalTopic) []coordinator.InternalTopic {
	if len(toCreate) == 0 || s.cfg.Authorizer == nil || s.authorizeCluster(r, authz.OpCreate) {
		return toCreate
	}
	var refused []string
	for _, t := range toCreate {
		if !s.authorizeTopic(r, authz.OpCreate, t.Name) {
			refused = append(refused, t.Name)
		}
	}
	if len(refused) == 0 {
		return toCreate
	}
	detail := "Unauthorized to CREATE on topics " + strings.Join(refused, ", ") + "."
	for i := range resp.Status {
		if resp.Status[i].StatusCode == streamsMissingInternalTopics {
			resp.Status[i].StatusDetail += "; " + detail
			return nil
		}
	}
	st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	st.StatusCode, st.StatusDetail = streamsMissingInternalTopics, detail
	resp.Status = append(resp.Status, st)
	return nil
}

// hideUndescribableShareAssignments fails a described share group whose
// members' assignments name a topic r may not describe.
func (s *Server) hideUndescribableShareAssignments(r *Request, d *kmsg.ShareGroupDescribeResponseGroup) {
	if s.cfg.Authorizer == nil || d.ErrorCode != 0 {
		return
	}
	for _, m := range d.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			if !s.authorizeTopic(r, authz.OpDescribe, tp.Topic) {
				d.ErrorCode, d.ErrorMessage = kerr.TopicAuthorizationFailed.Code, strPtr(undescribableTopicsMessage)
				d.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
				return
			}
		}
	}
}

// hideUndescribableTopology fails a described streams group whose
// topology names a topic r may not describe.
func (s *Server) hideUndescribableTopology(r *Request, d *kmsg.StreamsGroupDescribeResponseGroup) {
	if s.cfg.Authorizer == nil || d.ErrorCode != 0 || d.Topology == nil {
		return
	}
	var names []string
	for _, st := range d.Topology.Subtopologies {
		names = append(names, st.SourceTopics...)
		names = append(names, st.RepartitionSinkTopics...)
		for _, ti := range st.RepartitionSourceTopics {
			names = append(names, ti.Topic)
		}
		for _, ti := range st.StateChangelogTopics {
			names = append(names, ti.Topic)
		}
	}
	for _, n := range names {
		if !s.authorizeTopic(r, authz.OpDescribe, n) {
			d.ErrorCode, d.ErrorMessage = kerr.TopicAuthorizationFailed.Code, strPtr(undescribableStreamsTopicsMessage)
			d.Members, d.Topology = []kmsg.StreamsGroupDescribeResponseGroupMember{}, nil
			return
		}
	}
}

// shareTopicReadable reports whether r may READ the topic of id; an
// unknown id is left to the share fetcher (UNKNOWN_TOPIC_ID).
func (s *Server) shareTopicReadable(r *Request, id [16]byte) bool {
	t := s.store.TopicByID(partition.TopicID(id))
	return t == nil || s.authorizeTopic(r, authz.OpRead, t.Name)
}

// splitAuthorized keeps in place the topics ok allows and returns the
// others' answers, made by refuse.
func splitAuthorized[T, R any](topics []T, ok func(T) bool, refuse func(T) R) ([]T, []R) {
	var refused []R
	kept := topics[:0]
	for _, t := range topics {
		if ok(t) {
			kept = append(kept, t)
		} else {
			refused = append(refused, refuse(t))
		}
	}
	return kept, refused
}

// shareTopicsReadable is the share fetcher's READ check for r, asked on
// every request for every partition; nil without an authorizer.
func (s *Server) shareTopicsReadable(r *Request) sharefetch.Authorized {
	if s.cfg.Authorizer == nil {
		return nil
	}
	return func(id [16]byte) bool { return s.shareTopicReadable(r, id) }
}

// shareGroupCheck is Kafka's first check of a ShareFetch or
// ShareAcknowledge: a null group id is INVALID_REQUEST, then READ on the
// group, an empty id included, before the member id is looked at.
func (s *Server) shareGroupCheck(r *Request, id *string) (int16, *string) {
	if id == nil {
		return kerr.InvalidRequest.Code, strPtr(invalidShareGroupIDMessage)
	}
	return s.groupAuthCode(r, authz.OpRead, *id), nil
}

// invalidShareGroupIDMessage is Kafka's message for a null group id.
const invalidShareGroupIDMessage = "Invalid group id in the request."

// authErrMessages are Kafka's Errors.message() of the authorization
// errors the share offsets APIs answer with a message.
var authErrMessages = map[int16]string{
	kerr.GroupAuthorizationFailed.Code: "Group authorization failed.",
	kerr.TopicAuthorizationFailed.Code: "Topic authorization failed.",
}

func authErrMessage(code int16) *string { return strPtr(authErrMessages[code]) }
