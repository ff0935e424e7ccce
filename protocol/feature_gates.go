package protocol

// The share and streams APIs stay advertised at every feature level, as
// Kafka 4.3.1's ApiVersions leaves them in; while share.version or
// streams.version is 0 they answer UNSUPPORTED_VERSION, as KafkaApis'
// isShareGroupProtocolEnabled and isStreamsGroupProtocolEnabled checks.

import "github.com/twmb/franz-go/pkg/kerr"

// shareGroupsEnabled is share.version 1 or more (KIP-932 served).
func (s *Server) shareGroupsEnabled() bool {
	return s.features.level(shareVersionFeature) >= 1
}

// streamsGroupsEnabled is streams.version 1 or more (KIP-1071 served);
// group.coordinator.rebalance.protocols without streams is the
// coordinator's check.
func (s *Server) streamsGroupsEnabled() bool {
	return s.features.level(streamsVersionFeature) >= 1
}

// unsupportedVersion is UNSUPPORTED_VERSION's code.
var unsupportedVersion = kerr.UnsupportedVersion.Code

// unsupportedVersionMessage is Kafka's Errors.UNSUPPORTED_VERSION.message(),
// which the share offsets APIs send with the code.
var unsupportedVersionMessage = "The version of API is not supported."
