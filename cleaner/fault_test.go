package cleaner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
)

// TestFaultDuringCleaning strikes two cleaning passes (writing .cleaned,
// its indexes, the swap, the checkpoint) with each fault kind at the k-th
// operation it can strike, for every k (sampled under -race unless
// KCOMPATD_FULL_SWEEP is set). After a short write, an fsync error or a
// full disk the pass is abandoned and the data dir goes offline, as an
// IOException in Kafka's cleaner does; the log answers ErrStorage. A
// restart on what a killed process leaves and on what a power cut leaves
// then finds the original records or their cleaned replacement (each
// group of segments all old or all new), every latest value, the log end
// offset, no .cleaned, .swap or .deleted file, and cleans to the same
// survivors as a log that was never struck.
func TestFaultDuringCleaning(t *testing.T) { forEachSwapLayout(t, faultSweep) }

func faultSweep(t *testing.T, base *memfs.FS, orig []rec) {
	want := func() string {
		e := newTestEnv(t, base.CrashClone())
		e.quiet = true
		e.open()
		defer e.close()
		e.cleanAll(e.log("c"))
		return liveSurvivors(readRecs(t, e.log("c")))
	}()

	for _, kind := range []memfs.FaultKind{memfs.ShortWrite, memfs.SyncError, memfs.NoSpace, memfs.Crash} {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			total := func() int {
				fs := base.CrashClone()
				e := newTestEnv(t, fs)
				e.quiet = true
				e.open()
				fs.Inject(&memfs.Fault{Kind: kind, At: 1 << 30})
				e.cleaner.CleanLog(tpOf(e.log("c")))
				e.cleaner.CleanLog(tpOf(e.log("c")))
				n := fs.Applicable()
				fs.Inject(nil)
				e.close()
				return n
			}()
			// About n fault points unless KCOMPATD_FULL_SWEEP is set.
			n := 60
			if raceEnabled {
				n = 20
			}
			stride := 1
			if !fullSweep() && total > n {
				stride = (total + n - 1) / n
			}
			struck := 0
			for k := 0; ; k += stride {
				if k > 4*total+100 {
					t.Fatalf("sweep did not end (k=%d, %d operations)", k, total)
				}
				fs := base.CrashClone()
				e := newTestEnv(t, fs)
				e.quiet = true
				e.open()
				l := e.log("c")
				fs.Inject(&memfs.Fault{Kind: kind, At: k})
				_, err1 := e.cleaner.CleanLog(tpOf(l))
				_, err2 := e.cleaner.CleanLog(tpOf(l))
				if !fs.Fired() {
					if err1 != nil || err2 != nil {
						t.Fatalf("k=%d: cleaning failed without a fault: %v %v", k, err1, err2)
					}
					fs.Inject(nil)
					e.close()
					break
				}
				struck++
				where := fs.Struck()
				if kind != memfs.Crash {
					if err := e.store.Offline(); !errors.Is(err, partition.ErrStorage) {
						t.Fatalf("k=%d: %v struck %s, cleaning said %v, %v, but the data dir is online", k, kind, where, err1, err2)
					}
					if _, err := l.Read(0, 1<<20, true); !errors.Is(err, partition.ErrStorage) {
						t.Fatalf("k=%d: read with the dir offline: %v", k, err)
					}
				}
				kill, power := fs.Clone(), fs.CrashClone()
				e.cleaner.Close()
				if err := e.store.Close(); err == nil && kind != memfs.Crash {
					t.Fatalf("k=%d: %v struck %s: Close reported nothing", k, kind, where)
				}
				for _, img := range []struct {
					name string
					fs   *memfs.FS
				}{{"kill", kill}, {"power cut", power}} {
					if err := checkAfterFault(t, img.fs, orig, want); err != nil {
						t.Fatalf("k=%d: %v struck %s; restart after %s: %v", k, kind, where, img.name, err)
					}
				}
			}
			t.Logf("%v: struck %d of %d operations", kind, struck, total)
			if struck < 3 {
				t.Fatalf("%v struck only %d operations", kind, struck)
			}
		})
	}
}

func fullSweep() bool { return os.Getenv("KCOMPATD_FULL_SWEEP") != "" }

// liveSurvivors is survivors without tombstones, whose removal depends on
// how many passes ran.
func liveSurvivors(rs []rec) string {
	var live []rec
	for _, r := range rs {
		if r.Value != nil {
			live = append(live, r)
		}
	}
	return survivors(live)
}

// checkAfterFault opens the image a fault left and checks the log (see
// TestFaultDuringCleaning).
func checkAfterFault(t *testing.T, img *memfs.FS, orig []rec, want string) error {
	e := newTestEnv(t, img)
	e.quiet = true
	e.open()
	l := e.log("c")
	got := readRecs(t, l)
	byOff := map[int64]rec{}
	for _, g := range got {
		if g.Offset < 0 || g.Offset >= int64(len(orig)) {
			return fmt.Errorf("record at offset %d", g.Offset)
		}
		o := orig[g.Offset]
		if !bytes.Equal(o.Key, g.Key) || !bytes.Equal(o.Value, g.Value) || (o.Value == nil) != (g.Value == nil) {
			return fmt.Errorf("record %v is not the original %v", g, o)
		}
		byOff[g.Offset] = g
	}
	latest := map[string]rec{}
	for _, o := range orig {
		latest[string(o.Key)] = o
	}
	for key, o := range latest {
		if _, ok := byOff[o.Offset]; !ok && o.Value != nil {
			return fmt.Errorf("latest value of %s (offset %d) lost: %s", key, o.Offset, recsString(got))
		}
	}
	if o := l.Offsets(); o.LogEndOffset != int64(len(orig)) {
		return fmt.Errorf("log end offset %d, want %d", o.LogEndOffset, len(orig))
	}
	e.cleanAll(l)
	if s := liveSurvivors(readRecs(t, l)); s != want {
		return fmt.Errorf("cleans to %q, an unstruck log to %q", s, want)
	}
	e.close()
	entries, err := img.ReadDir("/data/c-0")
	if err != nil {
		return err
	}
	for _, ent := range entries {
		for _, suf := range []string{".cleaned", ".swap", ".deleted"} {
			if strings.HasSuffix(ent.Name(), suf) {
				return fmt.Errorf("%s left after a restart", ent.Name())
			}
		}
	}
	return nil
}
