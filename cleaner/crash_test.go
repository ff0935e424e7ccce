package cleaner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/recordbatch"
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
	{"segment.bytes", map[string]string{"internal.segment.bytes": "200", "delete.retention.ms": "0"}, 1},
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

// crashLoop crashes the machine at the k-th mutating file operation of
// run, for k = 0, step, 2*step, ... until run finishes before it, and
// calls check on the restarted image (done: run was not struck). It
// returns the number of crash points.
func crashLoop(t *testing.T, base *memfs.FS, step int, run func(e *env), check func(k int, e2 *env, done bool)) int {
	t.Helper()
	for k := 0; k < 10000; k += step {
		fs := base.CrashClone()
		e := newTestEnv(t, fs)
		e.quiet = true
		e.open()
		fs.FailAfter(k)
		run(e)
		done := fs.Ops() < k
		crashed := fs.CrashClone()
		e.cleaner.Close()
		e.store.Close() // fails: the machine is down

		e2 := newTestEnv(t, crashed)
		e2.quiet = true
		e2.open()
		check(k, e2, done)
		e2.close()
		if done {
			t.Logf("%d crash points", k)
			return k
		}
	}
	t.Fatal("the run never finished")
	return 0
}

func crashSweep(t *testing.T, base *memfs.FS, orig []rec) {
	// Every crash point normally; under -race or -short every third.
	step := 1
	if raceEnabled || testing.Short() {
		step = 3
	}
	run := func(e *env) {
		e.cleaner.CleanLog(tpOf(e.log("c")))
		e.cleaner.CleanLog(tpOf(e.log("c")))
	}
	n := crashLoop(t, base, step, run, func(k int, e2 *env, _ bool) {
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
	})
	if n < 5 {
		t.Fatalf("only %d crash points", n)
	}
}

// TestCrashDuringSwapOfTxnIndex crashes at every file operation of the
// two passes that drop an aborted transaction (transaction.version 2:
// its marker bumps the epoch): the first removes its data and keeps its
// marker and .txnindex entry, the second drops the entry (the
// .txnindex.cleaned is empty) in a group of two segments. After a
// restart, aborted data still in the log is always covered by an entry,
// so read_committed never shows it, and the committed values are there.
func TestCrashDuringSwapOfTxnIndex(t *testing.T) {
	base := memfs.New()
	{
		e := newTestEnv(t, base)
		e.quiet = true
		e.open()
		l := e.topic("t", map[string]string{"segment.ms": "1", "delete.retention.ms": "0"})
		e.appendRecs(l, plain, kv("a", "1"))                                                      // 0
		e.appendRecs(l, batchOpts{pid: 9, epoch: 0, seq: 0, transactional: true}, kv("a", "bad")) // 1
		e.clock.Advance(time.Millisecond)
		e.appendMarker(l, 9, 1, false) // 2
		e.appendRecs(l, plain, kv("z", "1"))
		e.clock.Advance(2 * time.Millisecond)
		e.appendRecs(l, plain, kv("y", "1")) // 4, the active segment
		e.close()
	}
	step := 1
	if raceEnabled || testing.Short() {
		step = 2
	}
	run := func(e *env) {
		l := e.log("t")
		e.cleaner.CleanLog(tpOf(l))
		// Past the active segment's first batch (a new env's clock starts
		// again at testStart): the append rolls it.
		e.clock.Advance(10 * time.Millisecond)
		if _, err := l.AppendWithOrigin(mustBatch(t, e.now(), kv("x", "1")), recordbatch.OriginInternal); err == nil {
			e.cleaner.CleanLog(tpOf(l))
		}
	}
	crashLoop(t, base, step, run, func(k int, e2 *env, done bool) {
		l2 := e2.log("t")
		for _, h := range readBatches(t, l2) {
			if h.ProducerID() == 9 && !h.Control() && h.RecordCount() > 0 {
				covered := false
				for _, a := range l2.AbortedTransactions(h.BaseOffset(), h.LastOffset()+1) {
					covered = covered || a.ProducerID == 9
				}
				if !covered {
					t.Fatalf("crash at op %d: aborted batch %d without a .txnindex entry", k, h.BaseOffset())
				}
			}
		}
		if s := survivors(readRecs(t, l2)); !strings.Contains(s, "a=1 ") || !strings.Contains(s, "z=1 ") {
			t.Fatalf("crash at op %d: committed values lost: %q", k, s)
		}
		if got := l2.AbortedTransactions(0, l2.Offsets().LogEndOffset); done && len(got) != 0 {
			t.Fatalf("after both passes: entries %+v", got)
		}
	})
}

// mustBatch builds one plain batch of records at timestamp ts.
func mustBatch(t *testing.T, ts int64, recs ...rec) []byte {
	t.Helper()
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
