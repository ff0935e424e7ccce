package protocol

// DescribeGroups: v0-6
//
// Behavior: state, protocol type and members of each group. The selected
// protocol and the members' metadata and assignments are shown only when
// the group is Stable, as Kafka does. A KIP-848 group is shown as Kafka's
// ConsumerGroup.asDescribedGroup: its KIP-848 state, protocol type
// "consumer", its assignor as the protocol, and each member's resolved
// subscription and current assignment in the consumer protocol's encoding. A group we do not have is "Dead"
// with no error before v6, and GROUP_ID_NOT_FOUND from v6 (KIP-1043).
// Authorized operations (v3+, when asked for): everything Kafka's ACLs
// allow on a group, since there is no authorizer; otherwise Kafka's
// "omitted" marker, INT32_MIN.
//
// Version notes:
//   - v1: throttle
//   - v2: no schema change
//   - v3: AuthorizedOperations
//   - v4: member InstanceID
//   - v5: flexible
//   - v6: ErrorMessage; unknown groups are GROUP_ID_NOT_FOUND

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeGroups.Int16(), 0, 6, handleDescribeGroups) }

// groupAuthorizedOperations is every operation AclEntry supports on a group.
var groupAuthorizedOperations = bits(aclRead, aclDescribe, aclDelete, aclDescribeConfigs, aclAlterConfigs)

func handleDescribeGroups(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		if s.groups == nil {
			resp.Groups = append(resp.Groups, kmsg.DescribeGroupsResponseGroup{Group: id, ErrorCode: coordinatorNotAvailable})
			continue
		}
		d, found := s.groups.DescribeGroup(r.Ctx, id, r.Version)
		d.AuthorizedOperations = authorizedOperationsUnset
		if found && req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = groupAuthorizedOperations
		}
		if !found && r.Version >= 6 {
			msg := "Group " + id + " not found."
			if d.ErrorMessage != nil {
				msg = *d.ErrorMessage
			}
			d.ErrorCode, d.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		} else if !found {
			d.ErrorMessage = nil
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
