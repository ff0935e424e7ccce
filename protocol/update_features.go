package protocol

// UpdateFeatures: v0-2
//
// Behavior (Kafka's QuorumController.updateFeatures and
// FeatureControlManager.updateFeature, KIP-584 and KIP-778):
//   - kcompatd supports the ranges of api_versions.go's brokerFeatures
//     (transaction.version 0-2, group.version 0-1; capped by
//     kcompatd.kafka.version) and level 0 of every other feature. Each
//     update is checked in request order as Kafka's controller does, and
//     the first failure fails the whole request with
//     INVALID_UPDATE_VERSION: an upgrade type other than 1 (upgrade), 2
//     (safe downgrade), 3 (unsafe downgrade); a level below 0; a level
//     outside the supported range ("Local controller N does not support
//     this feature." when only 0 is supported, else "Local controller N
//     only supports versions 0-2"); a level below the finalized one with
//     upgrade type 1 ("Can't downgrade the version of this feature
//     without setting the upgrade type to either safe or unsafe
//     downgrade."); metadata.version at 0 (an unknown metadata.version);
//     a feature name Kafka does not know ("Feature X not found.").
//   - Otherwise every level asked for is finalized at once (unless
//     ValidateOnly), as Kafka's controller writes them in one batch:
//     ApiVersions reports them with the next FinalizedFeaturesEpoch, a
//     transaction.version change reaches the transaction coordinator
//     (its record version), group.version 0 turns KIP-848 groups away.
//     The levels are saved in the data dir first (features.go), so they
//     survive a restart as Kafka's do; if saving fails the update fails
//     with UNKNOWN_SERVER_ERROR and nothing changes.
//   - v0 has AllowDowngrade instead of UpgradeType: true is a safe
//     downgrade (Kafka's UpdateFeaturesRequest.getFeature).
//   - On failure the top-level error carries Kafka's "The update failed for
//     all features since the following feature had an error: ..." and no
//     per-feature results; on success v0-1 list each feature with no error.
//
// Version notes:
//   - v0: flexible from the start
//   - v1: ValidateOnly; UpgradeType replaces AllowDowngrade
//   - v2: no per-feature results in the response

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.UpdateFeatures.Int16(), 0, 2, handleUpdateFeatures) }

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeSafeDowngrade   = 2
	upgradeTypeUnsafeDowngrade = 3
)

// kafkaFeatureNames are the features Kafka 4.3's Features enum knows
// besides metadata.version: level 0 of each is valid (and already true).
var kafkaFeatureNames = map[string]bool{
	"kraft.version":                    true,
	"transaction.version":              true,
	"group.version":                    true,
	"eligible.leader.replicas.version": true,
	"share.version":                    true,
	"streams.version":                  true,
}

func handleUpdateFeatures(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode = s.clusterAuthCode(r, authz.OpAlter); resp.ErrorCode != 0 {
		return resp, nil
	}
	// Checked and applied under the levels' lock, so concurrent updates
	// are serialized as by Kafka's controller.
	var failure string
	decide := func(v featureView) map[string]int16 {
		levels := map[string]int16{}
		for _, u := range req.FeatureUpdates {
			upgradeType := u.UpgradeType
			if r.Version == 0 {
				upgradeType = upgradeTypeUpgrade
				if u.AllowDowngrade {
					upgradeType = upgradeTypeSafeDowngrade
				}
			}
			if failure = s.checkFeatureUpdate(v, u.Feature, u.MaxVersionLevel, upgradeType); failure != "" {
				return nil
			}
			if _, ok := v.supported[u.Feature]; ok {
				levels[u.Feature] = u.MaxVersionLevel
			}
		}
		if req.ValidateOnly {
			return nil
		}
		return levels
	}
	levels, err := s.features.update(decide, s.store.WriteFeatureLevels)
	switch {
	case failure != "":
		resp.ErrorCode = kerr.InvalidUpdateVersion.Code
		resp.ErrorMessage = msgPtr("The update failed for all features since the following feature had an error: " + failure)
		return resp, nil
	case err != nil:
		s.log.Error().Err(err).Msg("saving finalized feature levels failed")
		resp.ErrorCode = kerr.UnknownServerError.Code
		resp.ErrorMessage = msgPtr("The update failed for all features: the feature levels could not be saved.")
		return resp, nil
	case len(levels) > 0:
		if l, ok := levels[transactionVersionFeature]; ok {
			s.txns.SetTransactionVersion(l)
		}
		s.log.Info().Interface("levels", levels).Msg("finalized feature levels updated")
	}
	if r.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}

// checkFeatureUpdate is FeatureControlManager.updateFeature against this
// broker's levels v: Kafka's message for the problem, or "".
func (s *Server) checkFeatureUpdate(v featureView, name string, level int16, upgradeType int8) string {
	invalid := func(reason string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", level, name, reason)
	}
	f, served := v.supported[name]
	switch {
	case upgradeType != upgradeTypeUpgrade && upgradeType != upgradeTypeSafeDowngrade && upgradeType != upgradeTypeUnsafeDowngrade:
		return invalid("The controller does not support the given upgrade type.")
	case level < 0:
		return invalid("A feature version cannot be less than 0.")
	case served:
		if level < f.min || level > f.max {
			if f.min == f.max {
				return invalid(fmt.Sprintf("Local controller %d only supports versions %d", s.cfg.NodeID, f.min))
			}
			return invalid(fmt.Sprintf("Local controller %d only supports versions %d-%d", s.cfg.NodeID, f.min, f.max))
		}
		if level < v.finalized[name] && upgradeType == upgradeTypeUpgrade {
			return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
		}
	case level > 0:
		return invalid(fmt.Sprintf("Local controller %d does not support this feature.", s.cfg.NodeID))
	case name == "metadata.version":
		return fmt.Sprintf("Invalid metadata.version %d. Unknown metadata.version.", level)
	case !kafkaFeatureNames[name]:
		return invalid(fmt.Sprintf("Feature %s not found.", name))
	}
	return ""
}

// savedFeatureLevels is what earlier UpdateFeatures saved (nil if none or
// unreadable, which is logged: the defaults are finalized then).
func (s *Server) savedFeatureLevels() []byte {
	b, err := s.store.ReadFeatureLevels()
	if err != nil {
		s.log.Warn().Err(err).Msg("reading the saved feature levels failed; finalizing the defaults")
		return nil
	}
	return b
}

// consumerGroupsEnabled is group.version 1 or more: KIP-848's consumer
// groups are served (Kafka's isConsumerGroupProtocolEnabled).
func (s *Server) consumerGroupsEnabled() bool {
	return s.features.level(groupVersionFeature) >= 1
}
