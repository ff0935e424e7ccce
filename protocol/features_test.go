package protocol

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kversion"
)

// TestFeatureStateSavedLevels: saved levels replace the defaults at start
// when the broker (capped or not) supports them, and are ignored
// otherwise; a failed save changes nothing.
func TestFeatureStateSavedLevels(t *testing.T) {
	for _, c := range []struct {
		name  string
		vs    *kversion.Versions
		saved string
		tv    int16
		gv    int16
	}{
		{"none saved", nil, "", 2, 1},
		{"saved downgrade", nil, "group.version=0\ntransaction.version=1\n", 1, 0},
		{"out of range", nil, "transaction.version=7\ngroup.version=-1\n", 2, 1},
		{"garbage", nil, "transaction.version\n=1\ntransaction.version=x\n\x00\n", 2, 1},
		{"unknown feature", nil, "foo.version=3\n", 2, 1},
		{"capped release without the feature", kversion.FromString("3.9"), "transaction.version=1\n", 0, 0},
		{"capped release", kversion.FromString("4.0"), "transaction.version=0\n", 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFeatureState(c.vs, []byte(c.saved))
			if tv, gv := f.level(transactionVersionFeature), f.level(groupVersionFeature); tv != c.tv || gv != c.gv {
				t.Fatalf("transaction.version %d group.version %d, want %d %d", tv, gv, c.tv, c.gv)
			}
		})
	}

	f := newFeatureState(nil, nil)
	var saved []byte
	if err := f.set(map[string]int16{transactionVersionFeature: 1}, func(b []byte) error { saved = b; return nil }); err != nil {
		t.Fatal(err)
	}
	if string(saved) != "group.version=1\nshare.version=1\nstreams.version=1\ntransaction.version=1\nepoch=1\n" {
		t.Fatalf("saved %q", saved)
	}
	// The epoch survives a restart: a client keeps only levels of an
	// epoch newer than it has seen.
	g := newFeatureState(nil, saved)
	if g.level(transactionVersionFeature) != 1 || g.level(groupVersionFeature) != 1 || g.view().epoch != 1 {
		t.Fatalf("reloaded %+v", g.view())
	}
	if err := g.set(map[string]int16{transactionVersionFeature: 2}, nil); err != nil || g.view().epoch != 2 {
		t.Fatalf("the next change after a restart: epoch %d, %v", g.view().epoch, err)
	}
	boom := errors.New("disk full")
	if err := f.set(map[string]int16{transactionVersionFeature: 0}, func([]byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("failed save: %v", err)
	}
	if v := f.view(); v.finalized[transactionVersionFeature] != 1 || v.epoch != 1 {
		t.Fatalf("a failed save changed the levels: %+v", v)
	}
}

// FuzzDecodeFeatureLevels: the saved levels file is read at start, so any
// bytes decode without a panic, and what decodes encodes back to itself.
func FuzzDecodeFeatureLevels(f *testing.F) {
	f.Add([]byte("group.version=1\ntransaction.version=2\n"))
	f.Add([]byte("=\n=1\nx=\nx=99999\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := decodeFeatureLevels(b)
		for n, l := range m {
			if n == "" || l < 0 {
				t.Fatalf("decoded %q=%d", n, l)
			}
		}
		again := decodeFeatureLevels(encodeFeatureLevels(m))
		for n, l := range m {
			if again[n] != l {
				t.Fatalf("%q=%d did not round-trip", n, l)
			}
		}
	})
}

// set finalizes levels (update without a choice).
func (f *featureState) set(levels map[string]int16, save func([]byte) error) error {
	_, err := f.update(func(featureView) map[string]int16 { return levels }, save)
	return err
}

// TestFeatureEpochAtStart: a start that finalizes the saved levels keeps
// the saved epoch; one that finalizes others (a lower kcompatd.kafka.version
// here) takes the next epoch and saves it, so no later start reports an
// epoch a client already saw with other levels.
func TestFeatureEpochAtStart(t *testing.T) {
	saved := []byte("group.version=1\nshare.version=1\nstreams.version=1\ntransaction.version=1\nepoch=3\n")
	if f := newFeatureState(nil, saved); f.view().epoch != 3 || f.resaveNeeded {
		t.Fatalf("same levels: epoch %d, resave %v", f.view().epoch, f.resaveNeeded)
	}
	f := newFeatureState(kversion.FromString("4.0"), saved)
	if f.view().epoch != 4 || !f.resaveNeeded {
		t.Fatalf("other levels: epoch %d, resave %v", f.view().epoch, f.resaveNeeded)
	}
	var got []byte
	if err := f.resave(func(b []byte) error { got = b; return nil }); err != nil {
		t.Fatal(err)
	}
	if string(got) != "group.version=1\ntransaction.version=1\nepoch=4\n" {
		t.Fatalf("resaved %q", got)
	}
	if g := newFeatureState(kversion.FromString("4.0"), got); g.view().epoch != 4 || g.resaveNeeded {
		t.Fatalf("after the resave: epoch %d, resave %v", g.view().epoch, g.resaveNeeded)
	}
}
