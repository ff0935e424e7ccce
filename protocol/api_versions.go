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
//   - Features (v3+): exactly what is implemented, brokerFeatures below,
//     with Kafka 4.3.1's levels: transaction.version supported 0-2 and
//     finalized at 2 (KIP-890 part 2), group.version 0-1 finalized at 1
//     (KIP-848). metadata.version is not advertised, though Kafka brokers
//     report it: it versions the KRaft metadata log and inter-broker
//     protocols, which kcompatd does not have, and no client changes
//     behaviour on it (it is shown by Admin.describeFeatures and
//     kafka-features.sh only). Below v4 a supported feature whose min
//     level is 0 is left out, as Kafka does (KAFKA-17492); a finalized
//     level 0 is never listed. UpdateFeatures (update_features.go)
//     changes the finalized levels within the supported ranges, and
//     FinalizedFeaturesEpoch counts the changes. A capped
//     kcompatd.kafka.version reports that release's levels (features.go).
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
	"github.com/twmb/franz-go/pkg/kversion"
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
		v := s.features.view()
		for _, name := range v.names {
			f := v.supported[name]
			if r.Version >= 4 || f.min != 0 {
				resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: name, MinVersion: f.min, MaxVersion: f.max})
			}
			if l := v.finalized[name]; l != 0 {
				resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{Name: name, MinVersionLevel: l, MaxVersionLevel: l})
			}
		}
		resp.FinalizedFeaturesEpoch = v.epoch
	}
	return resp, nil
}

// featureLevels is one feature's supported levels and finalized level.
type featureLevels struct{ min, max, finalized int16 }

// Feature names the broker acts on.
const (
	transactionVersionFeature = "transaction.version"
	groupVersionFeature       = "group.version"
	shareVersionFeature       = "share.version"
	streamsVersionFeature     = "streams.version"
)

// brokerFeatures are the features advertised, with the levels implemented
// and the level finalized at start (Kafka 4.3.1's defaults): for
// transaction.version, 0 writes __transaction_state values at version 0,
// 1 at their flexible version 1, 2 is KIP-890 part 2 (clients add
// partitions through Produce and TxnOffsetCommit, every EndTxn bumps the
// epoch); group.version 1 serves KIP-848's consumer groups
// (ConsumerGroupHeartbeat and ConsumerGroupDescribe answer
// UNSUPPORTED_VERSION at 0); share.version 1 serves KIP-932's share
// groups and streams.version 1 KIP-1071's streams groups (their APIs
// answer UNSUPPORTED_VERSION at 0). A feature absent here is supported
// and finalized at 0 only.
var brokerFeatures = map[string]featureLevels{
	groupVersionFeature:       {min: 0, max: 1, finalized: 1},
	shareVersionFeature:       {min: 0, max: 1, finalized: 1},
	streamsVersionFeature:     {min: 0, max: 1, finalized: 1},
	transactionVersionFeature: {min: 0, max: 2, finalized: 2},
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

// kafka4MinVersions are the lowest versions Kafka 4 serves of the APIs
// whose old versions it removed (KIP-896), for those we register lower:
// the handlers still serve the old versions when kcompatd.kafka.version
// names a 3.x or older release. JoinGroup v0-1 came back in 4.1
// (KAFKA-19444), so 4.0 alone starts it at v2.
var kafka4MinVersions = map[int16]int16{
	kmsg.ListOffsets.Int16():          1,
	kmsg.OffsetCommit.Int16():         2,
	kmsg.OffsetFetch.Int16():          1,
	kmsg.CreateTopics.Int16():         2,
	kmsg.DeleteTopics.Int16():         1,
	kmsg.OffsetForLeaderEpoch.Int16(): 2,
	kmsg.DescribeConfigs.Int16():      1,
	kmsg.DescribeLogDirs.Int16():      1,
	kmsg.AlterReplicaLogDirs.Int16():  1,
	kmsg.WriteTxnMarkers.Int16():      1,
}

// releaseMinVersion is the lowest version of key served under the release
// vs (nil: the newest): Kafka 4's minimums from 4.0 on, none before. The
// release is told by its APIs: EndTxn v5 is new in 4.0, Produce v13 in
// 4.1 (kversion keeps the minimums to itself).
func releaseMinVersion(vs *kversion.Versions, key int16) int16 {
	at := func(k kmsg.Key, v int16) bool {
		if vs == nil {
			return true
		}
		max, ok := vs.LookupMaxKeyVersion(k.Int16())
		return ok && max >= v
	}
	if !at(kmsg.EndTxn, 5) {
		return 0
	}
	if key == kmsg.JoinGroup.Int16() && !at(kmsg.Produce, 13) {
		return 2
	}
	return kafka4MinVersions[key]
}
