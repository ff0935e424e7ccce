package protocol

// The broker's feature levels (KIP-584): the supported range and the
// finalized level of each feature of api_versions.go's brokerFeatures, as
// ApiVersions reports them and UpdateFeatures changes them. A capped
// kcompatd.kafka.version reproduces that release's table (franz-go's
// kversion features): a feature the release lacks is neither supported
// nor finalized, and the finalized level is the release's default (what
// a cluster of it is formatted with), within what kcompatd implements.
//
// A change through UpdateFeatures lasts until the broker stops: the
// levels are not persisted (Kafka keeps them in its metadata log); the
// next start finalizes the defaults again.

import (
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kversion"
)

// featureState is the levels in effect. Its mutex guards every field; it
// is a leaf lock (nothing is taken while holding it).
type featureState struct {
	mu        sync.Mutex
	supported map[string]featureLevels // min and max only
	finalized map[string]int16         // level 0 is absent
	// epoch is FinalizedFeaturesEpoch: bumped by every change, so a
	// client can tell newer levels from older ones.
	epoch int64
}

// newFeatureState is brokerFeatures capped by the release vs (nil: none).
func newFeatureState(vs *kversion.Versions) *featureState {
	f := &featureState{supported: map[string]featureLevels{}, finalized: map[string]int16{}}
	var relSupported map[string][2]int16
	var relFinalized map[string]int16
	if vs != nil {
		relSupported, relFinalized = map[string][2]int16{}, map[string]int16{}
		vs.EachSupportedFeature(func(name string, min, max int16) { relSupported[name] = [2]int16{min, max} })
		vs.EachFinalizedFeature(func(name string, level int16) { relFinalized[name] = level })
	}
	for name, l := range brokerFeatures {
		lo, hi, fin := l.min, l.max, l.finalized
		if vs != nil {
			r, ok := relSupported[name]
			if !ok {
				continue
			}
			lo, hi = max(lo, r[0]), min(hi, r[1])
			if lo > hi {
				continue
			}
			fin = min(max(relFinalized[name], lo), hi)
		}
		f.supported[name] = featureLevels{min: lo, max: hi}
		if fin != 0 {
			f.finalized[name] = fin
		}
	}
	return f
}

// featureView is one consistent read of the levels.
type featureView struct {
	names     []string // sorted
	supported map[string]featureLevels
	finalized map[string]int16
	epoch     int64
}

func (f *featureState) view() featureView {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := featureView{supported: make(map[string]featureLevels, len(f.supported)), finalized: make(map[string]int16, len(f.finalized)), epoch: f.epoch}
	for n, l := range f.supported {
		v.names = append(v.names, n)
		v.supported[n] = l
	}
	for n, l := range f.finalized {
		v.finalized[n] = l
	}
	sort.Strings(v.names)
	return v
}

// level is name's finalized level (0 when not finalized).
func (f *featureState) level(name string) int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.finalized[name]
}

// set finalizes the levels given, by feature name, in one change.
func (f *featureState) set(levels map[string]int16) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, l := range levels {
		if l == 0 {
			delete(f.finalized, n)
		} else {
			f.finalized[n] = l
		}
	}
	f.epoch++
}
