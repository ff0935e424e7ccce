package protocol

// StreamsGroupDescribe: v0
//
// Behavior (KIP-1071): each streams group's state (Empty, NotReady,
// Assigning, Reconciling, Stable), group and assignment epochs, topology
// (subtopologies with their source, repartition and changelog topics),
// and per member its epoch, client, process id, user endpoint, client
// tags, and current and target tasks. A group we do not have, or one of
// another type, is GROUP_ID_NOT_FOUND with Kafka's message. Authorization:
// DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED); a group whose
// topology names a topic the client may not DESCRIBE is
// TOPIC_AUTHORIZATION_FAILED without members or topology. Authorized
// operations (KIP-430) when asked for; otherwise INT32_MIN.
//
// Deliberate differences: task offsets and end offsets are not tracked
// (empty lists).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.StreamsGroupDescribe.Int16(), 0, 0, handleStreamsGroupDescribe) }

func handleStreamsGroupDescribe(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, id := range req.Groups {
		g := kmsg.NewStreamsGroupDescribeResponseGroup()
		g.Group, g.AuthorizedOperations = id, -2147483648
		switch {
		case !s.streamsGroupsEnabled():
			g.ErrorCode = unsupportedVersion
		case s.groups == nil:
			g.ErrorCode = coordinatorNotAvailable
		case id == "":
			g.ErrorCode = kerr.InvalidGroupID.Code
		case s.groupAuthCode(r, authz.OpDescribe, id) != 0:
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			g = s.groups.StreamsGroupDescribe(r.Ctx, id)
			if g.ErrorCode == 0 && req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = s.authorizedOps(r, authz.ResourceGroup, id)
			}
			s.hideUndescribableTopology(r, &g)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
