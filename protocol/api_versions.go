package protocol

// ApiVersions: v0-4
//
// Behavior:
//   - Lists every API in the routing table with the versions served, capped
//     by Config.Versions; what is listed is exactly what is served, except
//     Produce, listed from v0 although v0-v2 close the connection, as Kafka
//     4 does (KAFKA-18659: librdkafka stops compressing when Produce's
//     advertised min is above 0).
//   - A request above our max is answered by conn.go with a v0 body holding
//     UNSUPPORTED_VERSION and our ApiVersions range (KIP-511), and the
//     response header never carries the flexible tag byte.
//   - v3+: ClientSoftwareName and ClientSoftwareVersion must match Kafka's
//     pattern, else INVALID_REQUEST with no API keys (ApiVersionsRequest.isValid).
//   - No features are advertised (SupportedFeatures/FinalizedFeatures stay
//     empty, FinalizedFeaturesEpoch -1): finalizing transaction.version or
//     group.version would make Java clients use protocols we do not serve.
//     Nor is metadata.version, which Kafka brokers report: it versions
//     the KRaft metadata log and inter-broker protocols, which kcompatd
//     does not have, and no client changes behaviour on it (it is shown by
//     Admin.describeFeatures and kafka-features.sh only). UpdateFeatures
//     (update_features.go) answers accordingly: nothing can be raised.
//
// Version notes:
//   - v1: ThrottleMillis
//   - v3: flexible; client software name/version; features (tagged)
//   - v4: no schema change (KIP-1022: a client at v4 accepts features with
//     min version 0; we list none)

import (
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(apiVersionsKey, 0, 4, handleApiVersions) }

// softwareNameRe is ApiVersionsRequest's SOFTWARE_NAME_VERSION_PATTERN.
var softwareNameRe = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.Version >= 3 && (!softwareNameRe.MatchString(req.ClientSoftwareName) || !softwareNameRe.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	resp.ApiKeys = s.advertised()
	return resp, nil
}

// advertised is the ApiKeys list: the routing table, sorted by key.
func (s *Server) advertised() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(s.table))
	for _, a := range s.table {
		keys = append(keys, kmsg.ApiVersionsResponseApiKey{ApiKey: a.key, MinVersion: a.advertisedMin, MaxVersion: a.max})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ApiKey < keys[j].ApiKey })
	return keys
}
