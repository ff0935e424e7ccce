package cleaner

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
)

// swapLayouts are the logs the crash and fault sweeps clean: 30 records
// of 5 keys, some tombstones. In "segment.bytes" a segment holds two or
// three batches and a group is one segment or two; in "one group" a
// segment holds two batches (segment.ms) and the first pass swaps all 14
// closed segments for one (Kafka's groupSegmentsBySize).
var swapLayouts = []struct {
	name    string
	configs map[string]string
	// groupOf is the number of segments the first pass puts in its
	// first group, at least.
	groupOf int
}{
	{"segment.bytes", map[string]string{"segment.bytes": "200", "delete.retention.ms": "0"}, 1},
	{"one group", map[string]string{"segment.ms": "1", "delete.retention.ms": "0"}, 14},
}

// buildSwapLog writes the log "c" of a layout on fs, checks that the
// first pass groups as the layout says (on a copy), and returns its
// records.
func buildSwapLog(t *testing.T, fs *memfs.FS, configs map[string]string, groupOf int) []rec {
	t.Helper()
	e := newTestEnv(t, fs)
	e.quiet = true
	e.open()
	l := e.topic("c", configs)
	for i := 0; i < 30; i++ {
		r := kv(fmt.Sprint("k", i%5), fmt.Sprint("v", i))
		if i%7 == 6 {
			r.Value = nil
		}
		e.appendRecs(l, plain, r)
		e.clock.Advance(time.Millisecond)
	}
	orig := readRecs(t, l)
	e.close()

	c := newTestEnv(t, fs.CrashClone())
	c.quiet = true
	c.open()
	defer c.close()
	before := c.log("c").Segments()
	if _, err := c.cleaner.CleanLog(tpOf(c.log("c"))); err != nil {
		t.Fatal(err)
	}
	after := c.log("c").Segments()
	if len(after) < 2 || after[1].BaseOffset != before[groupOf].BaseOffset {
		t.Fatalf("first group: segments %d -> %d, second now at %d, want %d", len(before), len(after), after[1].BaseOffset, before[groupOf].BaseOffset)
	}
	return orig
}

// TestCrashDuringSwap crashes the machine at every mutating file operation
// of a cleaning pass (writing .cleaned, renaming to .swap, retiring to
// .deleted, renaming .swap, syncing the directory, writing the
// checkpoint), keeping only what was synced, then recovers and checks
// that no live record was lost and every record is an original: each
// group of segments is either all old or all new.
func TestCrashDuringSwap(t *testing.T) { forEachSwapLayout(t, crashSweep) }

// forEachSwapLayout runs sweep over each of swapLayouts, built on a new
// memfs.
func forEachSwapLayout(t *testing.T, sweep func(t *testing.T, base *memfs.FS, orig []rec)) {
	for _, layout := range swapLayouts {
		t.Run(layout.name, func(t *testing.T) {
			base := memfs.New()
			sweep(t, base, buildSwapLog(t, base, layout.configs, layout.groupOf))
		})
	}
}

func crashSweep(t *testing.T, base *memfs.FS, orig []rec) {
	// Every crash point normally; under -race or -short every third.
	step := 1
	if raceEnabled || testing.Short() {
		step = 3
	}
	for k := 0; k < 10000; k += step {
		fs := base.CrashClone()
		e := newTestEnv(t, fs)
		e.quiet = true
		e.open()
		l := e.log("c")
		fs.FailAfter(k)
		e.cleaner.CleanLog(tpOf(l))
		e.cleaner.CleanLog(tpOf(l))
		done := fs.Ops() < k
		crashed := fs.CrashClone()
		e.cleaner.Close()
		e.store.Close() // fails: the machine is down

		e2 := newTestEnv(t, crashed)
		e2.quiet = true
		e2.open()
		got := readRecs(t, e2.log("c"))
		latest := map[string]rec{}
		for _, o := range orig {
			latest[string(o.Key)] = o
		}
		byOff := map[int64]rec{}
		for _, g := range got {
			o := orig[g.Offset]
			if !bytes.Equal(o.Key, g.Key) || !bytes.Equal(o.Value, g.Value) || (o.Value == nil) != (g.Value == nil) {
				t.Fatalf("crash at op %d: record %v is not the original %v", k, g, o)
			}
			byOff[g.Offset] = g
		}
		for key, o := range latest {
			if _, ok := byOff[o.Offset]; !ok && o.Value != nil {
				t.Fatalf("crash at op %d: latest value of %s (offset %d) lost: %s", k, key, o.Offset, recsString(got))
			}
		}
		if o := e2.log("c").Offsets(); o.LogEndOffset != 30 {
			t.Fatalf("crash at op %d: log end offset %d", k, o.LogEndOffset)
		}
		// The recovered log cleans to the same survivors as an uncrashed one.
		e2.cleanAll(e2.log("c"))
		e2.close()
		if done {
			t.Logf("%d crash points", k)
			if k < 5 {
				t.Fatalf("only %d crash points", k)
			}
			return
		}
	}
	t.Fatal("pass never finished")
}
