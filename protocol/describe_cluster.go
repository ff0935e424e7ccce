package protocol

// DescribeCluster: v0-2
//
// Behavior (Kafka's KafkaApis.handleDescribeCluster and
// AuthHelper.computeDescribeClusterResponse, on a broker listener):
//   - We are the only broker; the controller id is our node id (a KRaft
//     broker answers with a live broker's id, and we are the controller).
//   - EndpointType (v1+) 1 (brokers) is answered; 2 (controllers) gets
//     MISMATCHED_ENDPOINT_TYPE, as a broker listener answers it (kcompatd
//     has no controller listener for --bootstrap-controller); any other
//     value UNSUPPORTED_ENDPOINT_TYPE.
//   - Cluster authorized operations, when asked for, are every cluster
//     operation, as Kafka answers without an authorizer.
//   - v2: no broker of ours is ever fenced, so IncludeFencedBrokers changes
//     nothing and IsFenced is false.
//
// Version notes:
//   - v0: flexible from the start
//   - v1: EndpointType (KIP-919)
//   - v2: IncludeFencedBrokers, IsFenced (KIP-1073)

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeCluster.Int16(), 0, 2, handleDescribeCluster) }

// Kafka's EndpointType ids.
const (
	endpointTypeBroker     = 1
	endpointTypeController = 2
)

func handleDescribeCluster(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBroker
	et := req.EndpointType
	if r.Version == 0 {
		et = endpointTypeBroker // not on the wire: the schema default
	}
	switch et {
	case endpointTypeBroker:
	case endpointTypeController:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		resp.ErrorMessage = msgPtr("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		return resp, nil
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = msgPtr(fmt.Sprintf("Unsupported endpoint type %d", et))
		return resp, nil
	}
	resp.ClusterID = s.store.ClusterID()
	resp.ControllerID = s.cfg.NodeID
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID = s.cfg.NodeID
	b.Host, b.Port = s.advertisedFor(r)
	b.Rack = s.cfg.Rack
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0 // without DESCRIBE on the cluster
		if s.authorizeCluster(r, authz.OpDescribe) {
			resp.ClusterAuthorizedOperations = s.authorizedOps(r, authz.ResourceCluster, authz.ClusterName)
		}
	}
	return resp, nil
}

// msgPtr returns a pointer to a copy of s, for nullable message fields.
func msgPtr(s string) *string { return &s }
