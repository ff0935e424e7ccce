package protocol

// IncrementalAlterConfigs: v0-1
//
// Behavior: as AlterConfigs (alter_configs.go), except that only the
// configs named change, each by its operation (KIP-339):
//   - SET sets the value, DELETE removes the override (the value falls
//     back to the next layer: broker default, static, Kafka's default).
//   - APPEND / SUBTRACT add or remove items of a LIST config
//     (cleanup.policy, the throttled replica lists); starting from Kafka's
//     default when the config is not set, as Kafka does. On a topic config
//     of another type: INVALID_CONFIG "Can't APPEND to key x because its
//     type is not LIST."; on a broker config: INVALID_REQUEST.
//   - An unknown operation is INVALID_REQUEST.
//   - BROKER_LOGGER: INVALID_REQUEST, as kcompatd cannot change logger
//     levels at run time (DescribeConfigs reports the root level).
//
// Version notes: v1 flexible.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dup := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, res := range req.Resources {
		ops := make([]configOp, len(res.Configs))
		for j, c := range res.Configs {
			ops[j] = configOp{name: c.Name, op: c.Op, value: c.Value}
		}
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		if out.ErrorCode = s.configAuthCode(r, authz.OpAlterConfigs, res.ResourceType, res.ResourceName); out.ErrorCode == 0 {
			out.ErrorCode, out.ErrorMessage = s.alterResult(dup[i], res.ResourceType, res.ResourceName, ops, true, req.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, out)
	}
	return resp, nil
}
