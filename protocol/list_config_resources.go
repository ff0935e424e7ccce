package protocol

// ListConfigResources: v0-1 (ListClientMetricsResources before Kafka 4.1)
//
// Behavior (Kafka's KafkaApis.handleListConfigResources and
// ListConfigResourcesRequest.supportedResourceTypes, KIP-1142):
//   - Lists the config resources of the requested types, an empty list
//     meaning every type the version supports: v0 CLIENT_METRICS only; v1
//     TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS and GROUP. A type the
//     version does not support (any other id, duplicates allowed) fails
//     the whole request with UNSUPPORTED_VERSION and nothing listed.
//   - In Kafka's order: GROUP (the groups with config overrides),
//     CLIENT_METRICS (none: kcompatd has no client metrics
//     subscriptions, DescribeConfigs and IncrementalAlterConfigs refuse
//     them), BROKER_LOGGER and BROKER (this node's id), TOPIC (every
//     topic, internal ones included; sorted, Kafka's order is a hash
//     map's).
//   - DESCRIBE_CONFIGS on the cluster is required, else
//     CLUSTER_AUTHORIZATION_FAILED and nothing listed.
//
// Version notes:
//   - v0: flexible; no ResourceTypes (client metrics resources only)
//   - v1: ResourceTypes, and each resource's Type

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.ListConfigResources.Int16(), 0, 1, handleListConfigResources) }

// listableConfigTypes are the types ListConfigResources lists at v1, in
// the order Kafka lists them; v0 lists client metrics only.
var listableConfigTypes = []kmsg.ConfigResourceType{resourceGroup, resourceClientMetrics, resourceBrokerLogger, resourceBroker, resourceTopic}

func handleListConfigResources(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if resp.ErrorCode = s.clusterAuthCode(r, authz.OpDescribeConfigs); resp.ErrorCode != 0 {
		return resp, nil
	}
	supported := []kmsg.ConfigResourceType{resourceClientMetrics}
	if r.Version >= 1 {
		supported = listableConfigTypes
	}
	wanted := map[kmsg.ConfigResourceType]bool{}
	for _, t := range req.ResourceTypes {
		wanted[kmsg.ConfigResourceType(t)] = true
	}
	if len(wanted) == 0 {
		for _, t := range supported {
			wanted[t] = true
		}
	}
	for t := range wanted {
		if !slices.Contains(supported, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	add := func(t kmsg.ConfigResourceType, name string) {
		cr := kmsg.NewListConfigResourcesResponseConfigResource()
		cr.Name, cr.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, cr)
	}
	node := strconv.Itoa(int(s.cfg.NodeID))
	for _, t := range listableConfigTypes {
		if !wanted[t] {
			continue
		}
		switch t {
		case resourceGroup:
			for _, id := range s.groups.GroupConfigs().GroupIDs() {
				add(t, id)
			}
		case resourceBrokerLogger, resourceBroker:
			add(t, node)
		case resourceTopic:
			for _, topic := range s.store.Topics() {
				add(t, topic.Name)
			}
		}
	}
	return resp, nil
}
