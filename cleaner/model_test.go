package cleaner

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// modelWorkloads is how many random workloads TestModel runs; a soak run
// raises it: go test -run TestModel ./cleaner/ -cleaner.workloads=5000.
var modelWorkloads = 300

func init() {
	flag.IntVar(&modelWorkloads, "cleaner.workloads", modelWorkloads, "random workloads in TestModel")
}

// TestModel runs random workloads (keys overwritten and deleted, keyless
// records, idempotent producers, every codec, tiny segments, tiny offset
// maps forcing partial passes, tombstone horizons, restarts) and checks
// every pass against an oracle that follows spec sections 7-9:
//   - survivors are original records, unchanged, in offset order;
//   - every record at or past the checkpoint is untouched (a pass ends at
//     its map's latest offset + 1, which becomes the checkpoint), except
//     aborted transactional data, which the first pass over it removes;
//   - aborted data never survives below the checkpoint, nor deletes the
//     committed value before it;
//   - below the checkpoint each key appears at most once and no keyless
//     record remains;
//   - the latest value of every key survives; a latest tombstone survives
//     until delete.retention.ms after the first pass that could stamp it;
//   - cleaning never moves the log start offset, high watermark or log end
//     offset, and the log reads back the same after a restart;
//   - without min.compaction.lag.ms, passes repeated until they stop reach
//     the active segment's base offset (cleaning stops at a segment
//     boundary, and partial passes always progress).
func TestModel(t *testing.T) {
	n := modelWorkloads
	if testing.Short() || raceEnabled {
		n /= 5
	}
	for i := 0; i < n; i++ {
		seed := uint64(i)*7919 + 1
		if !runWorkload(t, seed) {
			t.Fatalf("workload seed %d failed", seed)
		}
	}
}

type modelRec struct {
	rec
	appendedAt int64 // clock at append
	aborted    bool  // written in a transaction that was aborted
	marker     bool  // a transaction marker (readRecs skips control batches)
}

func runWorkload(t *testing.T, seed uint64) bool {
	rng := rand.New(rand.NewPCG(seed, seed>>3))
	e := newTestEnv(t, memfs.New())
	e.quiet = true
	e.ccfg.DedupeBufferSize = int64([]int{3, 4, 6, 20, 10000}[rng.IntN(5)]) * entrySize
	e.open()
	segBytes := []int{100, 180, 300, 1000}[rng.IntN(4)]
	retention := []int64{0, 20, 200}[rng.IntN(3)]
	minLag := []int64{0, 0, 15}[rng.IntN(3)]
	l := e.topic("m", map[string]string{"internal.segment.bytes": fmt.Sprint(segBytes), "delete.retention.ms": fmt.Sprint(retention),
		"min.compaction.lag.ms": fmt.Sprint(minLag)})
	var orig []modelRec
	txnOpen, txnRecs := false, []int(nil)
	passTimes := []int64{}
	fail := func(format string, args ...any) bool {
		t.Errorf("seed %d (seg %d, map %d, retention %d, min lag %d): %s", seed, segBytes, e.ccfg.DedupeBufferSize/entrySize,
			retention, minLag, fmt.Sprintf(format, args...))
		return false
	}
	check := func() bool {
		got := readRecs(t, l)
		cp := e.cleaner.Checkpoint(tpOf(l))
		byOff := map[int64]rec{}
		for i, g := range got {
			if i > 0 && g.Offset <= got[i-1].Offset {
				return fail("offsets out of order at %d", g.Offset)
			}
			if g.Offset >= int64(len(orig)) {
				return fail("unknown offset %d", g.Offset)
			}
			o := orig[g.Offset].rec
			if !bytes.Equal(o.Key, g.Key) || (o.Key == nil) != (g.Key == nil) || !bytes.Equal(o.Value, g.Value) ||
				(o.Value == nil) != (g.Value == nil) || o.Timestamp != g.Timestamp {
				return fail("record %v changed from %v", g, o)
			}
			byOff[g.Offset] = g
		}
		for off := max(cp, 0); off < int64(len(orig)); off++ {
			// Aborted data goes with the first pass over its segment,
			// even past the map's latest offset.
			if _, ok := byOff[off]; !ok && !orig[off].marker && !orig[off].aborted {
				return fail("dirty record %v at/after checkpoint %d missing", orig[off].rec, cp)
			}
		}
		seen := map[string]bool{}
		for _, g := range got {
			if g.Offset >= cp {
				break
			}
			if orig[g.Offset].aborted {
				return fail("aborted record %v below checkpoint %d", g, cp)
			}
			if g.Key == nil {
				return fail("keyless record %d below checkpoint %d", g.Offset, cp)
			}
			if seen[string(g.Key)] {
				return fail("key %q twice below checkpoint %d: %s", g.Key, cp, recsString(got))
			}
			seen[string(g.Key)] = true
		}
		latest := map[string]int64{}
		for _, o := range orig {
			if o.Key != nil {
				if !o.aborted {
					latest[string(o.Key)] = o.Offset
				}
			}
		}
		now := e.now()
		for k, off := range latest {
			o := orig[off]
			if _, ok := byOff[off]; ok {
				continue
			}
			if o.Value != nil {
				return fail("latest value of %q at %d lost", k, off)
			}
			// The horizon is at least the first pass at or after the append
			// plus delete.retention.ms.
			first := int64(-1)
			for _, pt := range passTimes {
				if pt >= o.appendedAt {
					first = pt
					break
				}
			}
			if first < 0 || now < first+retention {
				return fail("tombstone of %q at %d removed before its horizon (first pass %d, now %d)", k, off, first, now)
			}
		}
		return true
	}
	codecs := []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd}
	ops := 20 + rng.IntN(40)
	for op := 0; op < ops; op++ {
		switch x := rng.IntN(10); {
		case x < 6 && txnOpen && rng.IntN(3) == 0:
			// End the open transaction (producer 7).
			commit := rng.IntN(2) == 0
			e.appendMarker(l, 7, 0, commit)
			orig = append(orig, modelRec{rec: rec{Offset: int64(len(orig)), Key: []byte("<marker>"), Value: []byte("m")}, aborted: true, marker: true})
			if !commit {
				for _, i := range txnRecs {
					orig[i].aborted = true
				}
			}
			txnOpen, txnRecs = false, nil
		case x < 6:
			o := plain
			o.codec = codecs[rng.IntN(len(codecs))]
			if rng.IntN(4) == 0 {
				o.pid, o.epoch, o.seq = int64(rng.IntN(2)), 0, int32(op)
			}
			txn := rng.IntN(6) == 0
			if txn {
				o.pid, o.epoch, o.seq, o.transactional = 7, 0, int32(op), true
			}
			var recs []rec
			for range 1 + rng.IntN(4) {
				var r rec
				switch y := rng.IntN(20); {
				case y == 0:
					r = rec{Value: []byte("nokey")}
				case y < 5:
					r = rec{Key: []byte(fmt.Sprint("k", rng.IntN(8)))}
				default:
					r = rec{Key: []byte(fmt.Sprint("k", rng.IntN(8))), Value: []byte(fmt.Sprint("v", op))}
				}
				recs = append(recs, r)
			}
			ts := e.now()
			base := e.appendRecs(l, o, recs...)
			for i, r := range recs {
				r.Offset, r.Timestamp = base+int64(i), ts+int64(i)
				if txn {
					txnOpen = true
					txnRecs = append(txnRecs, len(orig))
				}
				orig = append(orig, modelRec{rec: r, appendedAt: ts})
			}
			e.clock.Advance(time.Duration(rng.IntN(8)) * time.Millisecond)
		case x < 9:
			before := l.Offsets()
			passTimes = append(passTimes, e.now())
			if _, err := e.cleaner.CleanLog(tpOf(l)); err != nil {
				return fail("CleanLog: %v", err)
			}
			if after := l.Offsets(); after != before {
				return fail("offsets moved: %+v -> %+v", before, after)
			}
			if !check() {
				return false
			}
		default:
			want := recsString(readRecs(t, l))
			e.close()
			e.open()
			l = e.log("m")
			if got := recsString(readRecs(t, l)); got != want {
				return fail("after restart:\n%s\nwant\n%s", got, want)
			}
		}
	}
	if txnOpen {
		e.appendMarker(l, 7, 0, false)
		orig = append(orig, modelRec{rec: rec{Offset: int64(len(orig)), Key: []byte("<marker>"), Value: []byte("m")}, aborted: true, marker: true})
		for _, i := range txnRecs {
			orig[i].aborted = true
		}
	}
	if minLag == 0 {
		for i := 0; i < 1000; i++ {
			passTimes = append(passTimes, e.now())
			before := e.cleaner.Checkpoint(tpOf(l))
			if _, err := e.cleaner.CleanLog(tpOf(l)); err != nil {
				return fail("CleanLog: %v", err)
			}
			if e.cleaner.Checkpoint(tpOf(l)) == before {
				break
			}
		}
		segs := l.Segments()
		if cp := e.cleaner.Checkpoint(tpOf(l)); len(segs) > 1 && cp != segs[len(segs)-1].BaseOffset {
			return fail("cleaning stopped at %d, active segment at %d", cp, segs[len(segs)-1].BaseOffset)
		}
		if !check() {
			return false
		}
		// Liveness: once every horizon has passed, passes over new dirty
		// data leave below the checkpoint exactly the latest value of every
		// key whose latest record is not a tombstone.
		// Two rounds: the first stamps tombstones that were still in the
		// active segment, the second (past their horizon) drops them.
		for round := 0; round < 2; round++ {
			e.clock.Advance(time.Duration(retention+1) * time.Millisecond)
			for _, v := range []int{4 * segBytes, 1} {
				ts := e.now()
				r := rec{Key: []byte("tail"), Value: make([]byte, v)}
				r.Offset = e.appendRecs(l, plain, r)
				r.Timestamp = ts
				orig = append(orig, modelRec{rec: r, appendedAt: ts})
			}
			for i := 0; i < 1000; i++ {
				before := e.cleaner.Checkpoint(tpOf(l))
				if _, err := e.cleaner.CleanLog(tpOf(l)); err != nil {
					return fail("CleanLog: %v", err)
				}
				if e.cleaner.Checkpoint(tpOf(l)) == before {
					break
				}
			}
		}
		cp := e.cleaner.Checkpoint(tpOf(l))
		want := map[string]int64{}
		for _, o := range orig {
			if o.Offset < cp && o.Key != nil && !o.aborted {
				want[string(o.Key)] = o.Offset
			}
		}
		for k, off := range want {
			if orig[off].Value == nil {
				delete(want, k)
			}
		}
		got := 0
		for _, g := range readRecs(t, l) {
			if g.Offset >= cp {
				break
			}
			if want[string(g.Key)] != g.Offset || g.Value == nil {
				return fail("after every horizon, %v below checkpoint %d survives", g, cp)
			}
			got++
		}
		if got != len(want) {
			return fail("after every horizon, %d records below checkpoint %d, want %d", got, cp, len(want))
		}
	}
	e.close()
	return true
}

var _ = partition.ErrSegmentsChanged
