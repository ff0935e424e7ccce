package protocol

// The broker's feature levels (KIP-584): the supported range and the
// finalized level of each feature of api_versions.go's brokerFeatures, as
// ApiVersions reports them and UpdateFeatures changes them. A capped
// kcompatd.kafka.version reproduces that release's table (franz-go's
// kversion features): a feature the release lacks is neither supported
// nor finalized, and the finalized level is the release's default (what
// a cluster of it is formatted with), within what kcompatd implements.
//
// A change through UpdateFeatures is written to the data dir
// (partition.FeatureLevelsFile, one "name=level" line per feature and an
// "epoch=N" line, where Kafka writes FeatureLevelRecords to its metadata
// log) before it takes effect, and read back at start; a saved level
// outside what the (capped) broker supports is ignored, and a start that
// finalizes other levels than the saved ones takes and saves the next
// epoch.

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
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
	// resaveNeeded: the levels at start differ from the saved ones (resave).
	resaveNeeded bool
}

// newFeatureState is brokerFeatures capped by the release vs (nil: none),
// with the levels saved by earlier updates.
func newFeatureState(vs *kversion.Versions, saved []byte) *featureState {
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
		if l, ok := decodeFeatureLevels(saved)[name]; ok && l >= lo && l <= hi {
			fin = l
		}
		if fin != 0 {
			f.finalized[name] = fin
		}
	}
	f.epoch = savedFeatureEpoch(saved)
	if len(saved) > 0 && !sameLevels(decodeFeatureLevels(saved), f.supported, f.finalized) {
		// The release cap (or a new kcompatd) finalized other levels than
		// those saved: a new epoch, so clients take them (resave stores
		// it).
		f.epoch++
		f.resaveNeeded = true
	}
	return f
}

// sameLevels reports whether the saved levels are the finalized ones of
// every supported feature (a feature saved but not supported differs).
func sameLevels(saved map[string]int16, supported map[string]featureLevels, finalized map[string]int16) bool {
	for name, l := range saved {
		if name == featureEpochKey {
			continue
		}
		if _, ok := supported[name]; !ok || finalized[name] != l {
			return false
		}
	}
	for name := range supported {
		if _, ok := saved[name]; !ok {
			return false
		}
	}
	return true
}

// resave stores the levels and epoch newFeatureState settled on when they
// differ from the saved ones, so that a later start cannot report an older
// epoch with other levels; a no-op otherwise.
func (f *featureState) resave(save func([]byte) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.resaveNeeded {
		return nil
	}
	levels := map[string]int16{}
	for n := range f.supported {
		levels[n] = f.finalized[n]
	}
	b := fmt.Appendf(encodeFeatureLevels(levels), "%s=%d\n", featureEpochKey, f.epoch)
	if err := save(b); err != nil {
		return err
	}
	f.resaveNeeded = false
	return nil
}

// savedFeatureEpoch is the epoch line of the saved levels (0: none, as a
// file written before epochs were saved).
func savedFeatureEpoch(saved []byte) int64 {
	for _, line := range bytes.Split(saved, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(featureEpochKey+"=")); ok {
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// encodeFeatureLevels is the saved form of levels: "name=level" lines,
// sorted.
func encodeFeatureLevels(levels map[string]int16) []byte {
	names := make([]string, 0, len(levels))
	for n := range levels {
		names = append(names, n)
	}
	sort.Strings(names)
	var b []byte
	for _, n := range names {
		b = fmt.Appendf(b, "%s=%d\n", n, levels[n])
	}
	return b
}

// featureEpochKey is the saved FinalizedFeaturesEpoch's line, beside the
// levels (no feature name lacks a dot).
const featureEpochKey = "epoch"

// decodeFeatureLevels reads encodeFeatureLevels' form; lines that do not
// parse are skipped (the file is read at start, untrusted).
func decodeFeatureLevels(b []byte) map[string]int16 {
	out := map[string]int16{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		name, level, ok := bytes.Cut(line, []byte("="))
		if !ok || len(name) == 0 {
			continue
		}
		l, err := strconv.ParseInt(string(level), 10, 16)
		if err != nil || l < 0 {
			continue
		}
		out[string(name)] = int16(l)
	}
	return out
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
	return f.viewLocked()
}

// viewLocked is view. REQUIRES: f.mu held.
func (f *featureState) viewLocked() featureView {
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

// update finalizes the levels decide picks from the current ones (none:
// nothing changes), in one change, once save (nil: none) has stored every
// served feature's level; it returns what was finalized.
func (f *featureState) update(decide func(featureView) map[string]int16, save func([]byte) error) (map[string]int16, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	levels := decide(f.viewLocked())
	if len(levels) == 0 {
		return nil, nil
	}
	next := map[string]int16{}
	for n := range f.supported {
		next[n] = f.finalized[n]
	}
	for n, l := range levels {
		next[n] = l
	}
	if save != nil {
		b := encodeFeatureLevels(next)
		// The epoch is saved too: a client keeps only levels of a newer
		// epoch than it has seen, so it must not restart from 0.
		b = fmt.Appendf(b, "%s=%d\n", featureEpochKey, f.epoch+1)
		if err := save(b); err != nil {
			return nil, err
		}
	}
	for n, l := range next {
		if l == 0 {
			delete(f.finalized, n)
		} else {
			f.finalized[n] = l
		}
	}
	f.epoch++
	return levels, nil
}
