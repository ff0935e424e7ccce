package cleaner

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// oneBatchPerSegment makes every batch of a record or two its own segment.
var oneBatchPerSegment = map[string]string{"internal.segment.bytes": "100", "delete.retention.ms": "1000"}

func TestCleanLatestPerKeyAndTombstones(t *testing.T) {
	for _, codec := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			e := newTestEnv(t, nil)
			e.open()
			defer e.close()
			l := e.topic("t", oneBatchPerSegment)
			o := plain
			o.codec = codec
			for _, r := range []rec{kv("a", "1"), kv("b", "1"), kv("a", "2"), kv("c", "1"), kv("b", "-"), kv("d", "1")} {
				e.appendRecs(l, o, r)
				e.clock.Advance(time.Millisecond)
			}
			before := l.Offsets()
			orig := readRecs(t, l)
			e.cleanAll(l)
			got := readRecs(t, l)
			if s := survivors(got); s != "a=2 c=1 b=- d=1 " {
				t.Fatalf("survivors %q, all %s", s, recsString(got))
			}
			// Offsets, timestamps and values are the originals.
			for _, g := range got {
				o := orig[g.Offset]
				if o.Timestamp != g.Timestamp || !bytes.Equal(o.Key, g.Key) || !bytes.Equal(o.Value, g.Value) || (o.Value == nil) != (g.Value == nil) {
					t.Fatalf("record %v changed from %v", g, o)
				}
			}
			if after := l.Offsets(); after != before {
				t.Fatalf("offsets %+v, were %+v", after, before)
			}
			// The codec of rebuilt batches is the original.
			for _, h := range readBatches(t, l) {
				if h.RecordCount() > 0 && h.Codec() != codec {
					t.Fatalf("batch %d codec %v", h.BaseOffset(), h.Codec())
				}
			}
			// A fetch at a removed offset continues at the next batch.
			r, err := l.Read(0, 1<<20, true)
			if err != nil || len(r.Records) == 0 || recordbatch.Header(r.Records).LastOffset() < 0 {
				t.Fatalf("Read(0): %v", err)
			}
			// The tombstone lives until delete.retention.ms after the pass
			// that stamped it, and then goes at the next pass.
			e.clock.Advance(999 * time.Millisecond)
			e.appendRecs(l, plain, kv("e", "1"))
			e.cleanAll(l)
			if s := survivors(readRecs(t, l)); s != "a=2 c=1 b=- d=1 e=1 " {
				t.Fatalf("before the horizon: %q", s)
			}
			e.clock.Advance(2 * time.Millisecond)
			e.appendRecs(l, plain, kv("f", "1"))
			e.cleanAll(l)
			if s := survivors(readRecs(t, l)); s != "a=2 c=1 d=1 e=1 f=1 " {
				t.Fatalf("after the horizon: %q", s)
			}
		})
	}
}

// The horizon is recorded in the batch (KIP-534): attribute bit 6 and
// baseTimestamp = pass time + delete.retention.ms, record timestamps kept.
func TestDeleteHorizonStamped(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, plain, kv("a", "-"))
	ts := e.now()
	e.appendRecs(l, plain, kv("z", "1"))
	e.clock.Advance(5 * time.Second)
	passTime := e.now()
	e.cleanAll(l)
	hs := readBatches(t, l)
	if !hs[0].HasDeleteHorizon() || hs[0].BaseTimestamp() != passTime+1000 {
		t.Fatalf("horizon bit %v base %d, want %d", hs[0].HasDeleteHorizon(), hs[0].BaseTimestamp(), passTime+1000)
	}
	if got := readRecs(t, l); got[0].Timestamp != ts || got[0].Value != nil {
		t.Fatalf("tombstone %v, ts want %d", got[0], ts)
	}
	// Old tombstone timestamps do not matter, only the horizon.
	if hs[0].MaxTimestamp() != ts {
		t.Fatalf("max timestamp %d want %d", hs[0].MaxTimestamp(), ts)
	}
}

func TestKeylessRecordsDropped(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"internal.segment.bytes": "150"})
	e.appendRecs(l, plain, kv("a", "1"), rec{Value: []byte("nokey")})
	e.appendRecs(l, plain, kv("b", "1"))
	e.appendRecs(l, plain, kv("c", "1"))
	e.cleanAll(l)
	if s := survivors(readRecs(t, l)); s != "a=1 b=1 c=1 " {
		t.Fatalf("survivors %q", s)
	}
	st, _ := e.cleaner.LastStats(tpOf(l))
	if st.InvalidMessages != 1 {
		t.Fatalf("invalid messages %d", st.InvalidMessages)
	}
}

// An empty key is a real key, and an empty value is not a tombstone.
func TestEmptyKeyAndValue(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, plain, rec{Key: []byte{}, Value: []byte("1")})
	e.appendRecs(l, plain, rec{Key: []byte{}, Value: []byte{}})
	e.appendRecs(l, plain, kv("z", "1"))
	e.clock.Advance(time.Hour)
	e.cleanAll(l)
	e.appendRecs(l, plain, kv("y", "1"))
	e.cleanAll(l)
	got := readRecs(t, l)
	if len(got) != 3 || got[0].Offset != 1 || got[0].Value == nil || len(got[0].Value) != 0 {
		t.Fatalf("got %s", recsString(got))
	}
}

// The active segment is never cleaned, and the log end offset survives:
// the last batch before the first uncleanable offset stays (KAFKA-17076).
func TestActiveSegmentUntouchedAndLastBatchKept(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"internal.segment.bytes": "1000000"})
	e.appendRecs(l, plain, kv("a", "1"))
	e.appendRecs(l, plain, kv("a", "2"))
	e.cleanAll(l)
	if s := survivors(readRecs(t, l)); s != "a=1 a=2 " {
		t.Fatalf("active segment cleaned: %q", s)
	}
	l2 := e.topic("u", oneBatchPerSegment)
	e.appendRecs(l2, plain, kv("a", "1"))
	e.appendRecs(l2, plain, kv("a", "2"))
	e.appendRecs(l2, plain, rec{Value: []byte("nokey")})
	e.appendRecs(l2, plain, kv("a", "3"))
	e.cleanAll(l2)
	hs := readBatches(t, l2)
	// a=1 goes; the keyless record at 2 goes too, but its batch ends at
	// the first uncleanable offset (3), so its header stays.
	if len(hs) != 3 || hs[0].BaseOffset() != 1 || hs[1].BaseOffset() != 2 || hs[1].RecordCount() != 0 ||
		hs[1].LastOffset() != 2 || hs[1].Codec() != recordbatch.None || hs[2].BaseOffset() != 3 {
		t.Fatalf("batches %d, first at %d with %d records", len(hs), hs[0].BaseOffset(), hs[0].RecordCount())
	}
}

// A tiny dedupe buffer forces partial passes, each ending where the map
// filled, and the result is the same as with a big one.
func TestMultiPassTinyDedupeBuffer(t *testing.T) {
	e := newTestEnv(t, nil)
	e.ccfg.DedupeBufferSize = 3 * entrySize // 3 slots, 2 usable
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"internal.segment.bytes": "400"})
	want := map[string]string{}
	for i := 0; i < 40; i++ {
		k := string(rune('a' + i%7))
		v := string(rune('0' + i%10))
		e.appendRecs(l, plain, kv(k, v), kv(k+k, v))
		want[k], want[k+k] = v, v
	}
	e.appendRecs(l, plain, kv("zz", "1"))
	passes := e.cleanAll(l)
	if passes < 5 {
		t.Fatalf("only %d passes with a 2-key map", passes)
	}
	got := readRecs(t, l)
	seen := map[string]bool{}
	for _, r := range got[:len(got)-1] {
		if seen[string(r.Key)] {
			t.Fatalf("key %s twice: %s", r.Key, recsString(got))
		}
		seen[string(r.Key)] = true
		if want[string(r.Key)] != string(r.Value) {
			t.Fatalf("key %s = %s, want %s", r.Key, r.Value, want[string(r.Key)])
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%d keys survive, want %d", len(seen), len(want))
	}
}

func TestComputeRange(t *testing.T) {
	const now = 1_000_000
	// Segments [0,10) [10,20) [20,30) active [30,35), each 100 bytes, max
	// timestamps 1000, 2000, 999_500, 999_900.
	segs := []partition.SegmentInfo{
		{BaseOffset: 0, NextOffset: 10, Size: 100, MaxTimestamp: 1000, LargestTimestamp: 1000},
		{BaseOffset: 10, NextOffset: 20, Size: 100, MaxTimestamp: 2000, LargestTimestamp: 2000},
		{BaseOffset: 20, NextOffset: 30, Size: 100, MaxTimestamp: 999_500, LargestTimestamp: 999_500},
		{BaseOffset: 30, NextOffset: 35, Size: 100, MaxTimestamp: 999_900, LargestTimestamp: 999_900, Active: true},
	}
	offs := partition.Offsets{LogStartOffset: 0, HighWatermark: 35, LastStableOffset: 35, LogEndOffset: 35}
	cfg := partition.DefaultLogConfig()
	firstTs := func(s partition.SegmentInfo) int64 { return s.MaxTimestamp - 5 }
	tests := []struct {
		name             string
		lso, hw, cp      int64
		minLag, maxLag   int64
		start            int64
		firstDirty, unc  int64
		clean, cleanable int64
		forced, reset    bool
	}{
		{name: "never cleaned", lso: 35, hw: 35, cp: -1, firstDirty: 0, unc: 30, cleanable: 300},
		{name: "LSO mid segment rounds down", lso: 15, hw: 35, cp: -1, firstDirty: 0, unc: 10, cleanable: 100},
		{name: "HW bound", lso: 35, hw: 25, cp: -1, firstDirty: 0, unc: 20, cleanable: 200},
		{name: "checkpoint", lso: 35, hw: 35, cp: 20, firstDirty: 20, unc: 30, clean: 200, cleanable: 100},
		{name: "checkpoint mid segment", lso: 35, hw: 35, cp: 15, firstDirty: 15, unc: 30, clean: 200, cleanable: 200},
		{name: "checkpoint past LEO resets", lso: 35, hw: 35, cp: 99, firstDirty: 0, unc: 30, cleanable: 300, reset: true},
		{name: "checkpoint below log start resets", lso: 35, hw: 35, cp: 5, start: 10, firstDirty: 10, unc: 30, clean: 100, cleanable: 200, reset: true},
		{name: "min lag protects a whole segment", lso: 35, hw: 35, cp: -1, minLag: 1000, firstDirty: 0, unc: 20, cleanable: 200},
		{name: "min lag protects all", lso: 35, hw: 35, cp: -1, minLag: now, firstDirty: 0, unc: 0},
		{name: "checkpoint in active", lso: 35, hw: 35, cp: 32, firstDirty: 32, unc: 30, clean: 400},
		{name: "max lag forces", lso: 35, hw: 35, cp: 10, maxLag: 100_000, firstDirty: 10, unc: 30, clean: 100, cleanable: 200, forced: true},
		{name: "max lag not yet", lso: 35, hw: 35, cp: 20, maxLag: 100_000, firstDirty: 20, unc: 30, clean: 200, cleanable: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := offs
			o.LastStableOffset, o.HighWatermark, o.LogStartOffset = tc.lso, tc.hw, tc.start
			c := cfg
			c.MinCompactionLagMs = tc.minLag
			c.MaxCompactionLagMs = math.MaxInt64
			if tc.maxLag > 0 {
				c.MaxCompactionLagMs = tc.maxLag
			}
			r := computeRange(segs, o, tc.lso, tc.cp, c, now, firstTs)
			if r.firstDirty != tc.firstDirty || r.firstUncleanable != tc.unc || r.cleanBytes != tc.clean ||
				r.cleanableBytes != tc.cleanable || r.forced != tc.forced || r.resetCheckpoint != tc.reset {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

// groupSegments follows Kafka's groupSegmentsBySize (LogCleanerTest
// testSegmentGrouping*): log bytes within segment.bytes, each index's
// bytes within segment.index.bytes, offsets within an int32 of the
// group's base (estimated from the next segment's base, or the first
// uncleanable offset for the last), and no offset check for an empty
// segment.
func TestGroupSegments(t *testing.T) {
	seg := func(base, size, offIdx, timeIdx int64) partition.SegmentInfo {
		return partition.SegmentInfo{BaseOffset: base, Size: size, OffsetIndexBytes: offIdx, TimeIndexBytes: timeIdx}
	}
	cfg := partition.DefaultLogConfig()
	cfg.SegmentBytes = 100
	cfg.SegmentIndexBytes = 40
	for _, c := range []struct {
		name             string
		segs             []partition.SegmentInfo
		firstUncleanable int64
		want             [][]int64
	}{
		{"log bytes", []partition.SegmentInfo{seg(0, 50, 0, 12), seg(10, 50, 0, 12), seg(20, 1, 0, 0), seg(30, 100, 0, 0)}, 40,
			[][]int64{{0, 10}, {20}, {30}}},
		{"offset index", []partition.SegmentInfo{seg(0, 1, 24, 0), seg(10, 1, 16, 0), seg(20, 1, 8, 0)}, 30,
			[][]int64{{0, 10}, {20}}},
		{"time index", []partition.SegmentInfo{seg(0, 1, 0, 24), seg(10, 1, 0, 12), seg(20, 1, 0, 12)}, 30,
			[][]int64{{0, 10}, {20}}},
		{"int32 offsets", []partition.SegmentInfo{seg(0, 1, 0, 0), seg(math.MaxInt32-5, 1, 0, 0), seg(math.MaxInt32+1, 1, 0, 0),
			seg(math.MaxInt32+3, 1, 0, 0)}, math.MaxInt32 + 10,
			[][]int64{{0, math.MaxInt32 - 5}, {math.MaxInt32 + 1, math.MaxInt32 + 3}}},
		{"empty segment past int32", []partition.SegmentInfo{seg(0, 1, 0, 0), seg(100, 0, 0, 0)}, math.MaxInt32 + 200,
			[][]int64{{0, 100}}},
		{"last segment judged by first uncleanable", []partition.SegmentInfo{seg(0, 1, 0, 0), seg(100, 1, 0, 0)}, math.MaxInt32 + 2,
			[][]int64{{0}, {100}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got [][]int64
			for _, g := range groupSegments(c.segs, cfg, c.firstUncleanable) {
				var bases []int64
				for _, s := range g {
					bases = append(bases, s.BaseOffset)
				}
				got = append(got, bases)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("groups %v, want %v", got, c.want)
			}
		})
	}
}
