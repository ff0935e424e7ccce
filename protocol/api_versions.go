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
//   - Features (v3+): exactly what is implemented, brokerFeatures below:
//     transaction.version supported 1-1 and finalized at 1 (the classic
//     transaction protocol, __transaction_state records in their flexible
//     version). Level 2 (KIP-890 part 2: partitions added by Produce,
//     epoch bumped by every EndTxn) is not finalized, so clients keep to
//     AddPartitionsToTxn and EndTxn v4. group.version is not advertised
//     (KIP-848 groups are not served), nor is metadata.version, which
//     Kafka brokers report: it versions the KRaft metadata log and
//     inter-broker protocols, which kcompatd does not have, and no client
//     changes behaviour on it (it is shown by Admin.describeFeatures and
//     kafka-features.sh only). Below v4 a supported feature whose min
//     level is 0 is left out, as Kafka does (KAFKA-17492); a finalized
//     level 0 is never listed. FinalizedFeaturesEpoch is 0: the levels
//     never change. UpdateFeatures (update_features.go) agrees: only the
//     finalized levels can be asked for.
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

func init() { register(kmsg.ApiVersions.Int16(), 0, 4, handleApiVersions) }

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
	if r.Version >= 3 {
		for _, name := range sortedFeatureNames() {
			f := brokerFeatures[name]
			if r.Version >= 4 || f.min != 0 {
				resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: name, MinVersion: f.min, MaxVersion: f.max})
			}
			if f.finalized != 0 {
				resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{Name: name, MinVersionLevel: f.finalized, MaxVersionLevel: f.finalized})
			}
		}
		resp.FinalizedFeaturesEpoch = 0
	}
	return resp, nil
}

// featureLevels is one feature's supported levels and finalized level.
type featureLevels struct{ min, max, finalized int16 }

// brokerFeatures are the features advertised, with the levels implemented:
// transaction.version 1 is the classic transaction protocol (KIP-890 part
// 2 is level 2). A feature absent here is supported and finalized at 0
// only.
var brokerFeatures = map[string]featureLevels{
	"transaction.version": {min: 1, max: 1, finalized: 1},
	// share.version 1: share groups (KIP-932), finalized by default as in
	// Kafka 4.3.1.
	"share.version": {min: 0, max: 1, finalized: 1},
	// streams.version 1: streams groups (KIP-1071), finalized by default
	// as in Kafka 4.3.
	"streams.version": {min: 1, max: 1, finalized: 1},
}

func sortedFeatureNames() []string {
	names := make([]string, 0, len(brokerFeatures))
	for n := range brokerFeatures {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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
