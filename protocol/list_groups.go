package protocol

// ListGroups: v0-5
//
// Behavior: every group this coordinator has (all of them: one broker),
// including groups that only hold committed offsets (protocol type "").
// Filters match case-insensitively, as Kafka's do. A KIP-848 group is of
// type "consumer", with protocol type "consumer" and its KIP-848 state
// (Empty, Assigning, Reconciling, Stable); the others are "classic".
//
// Version notes:
//   - v1: throttle
//   - v2: no schema change
//   - v3: flexible
//   - v4: StatesFilter and GroupState (KIP-518)
//   - v5: TypesFilter and GroupType (KIP-848)

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.ListGroups.Int16(), 0, 5, handleListGroups) }

func handleListGroups(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if s.groups == nil {
		resp.ErrorCode = coordinatorNotAvailable
		return resp, nil
	}
	states, types := req.StatesFilter, req.TypesFilter
	if r.Version < 4 {
		states = nil
	}
	if r.Version < 5 {
		types = nil
	}
	all := s.authorizeCluster(r, authz.OpDescribe)
	for _, g := range s.groups.ListGroups(states, types) {
		if !all && !s.authorizeGroup(r, authz.OpDescribe, g.Group) {
			continue
		}
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
			Group:        g.Group,
			ProtocolType: g.ProtocolType,
			GroupState:   g.State,
			GroupType:    g.Type,
		})
	}
	return resp, nil
}
