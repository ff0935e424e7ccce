package cleaner

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// mtimeOf is a segment file's modification time on the test's memfs.
func mtimeOf(t *testing.T, e *env, path string) time.Time {
	t.Helper()
	fi, err := e.fs.Stat(path)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	return fi.ModTime()
}

// A cleaned segment takes the modification time of the last segment of
// its group (Kafka's cleaned.setLastModified(segments.last.lastModified)),
// not the time of the pass.
func TestCleanedSegmentKeepsLastModified(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	var written []time.Time // the clock at each append, one segment each
	for _, r := range []rec{kv("a", "1"), kv("a", "2"), kv("b", "1"), kv("z", "1")} {
		written = append(written, e.clock.Now())
		e.appendRecs(l, plain, r)
		e.clock.Advance(time.Hour)
	}
	if n := e.cleanAll(l); n == 0 {
		t.Fatal("nothing cleaned")
	}
	// Each pass ran hours after the writes; groups of one keep their
	// own time, a merged group its last member's.
	segs := l.Segments()
	for _, s := range segs[:len(segs)-1] {
		got := mtimeOf(t, e, s.LogPath)
		want := written[s.NextOffset-1] // the last source segment of the group
		if !got.Equal(want) {
			t.Fatalf("segment %d [%d, %d): mtime %v, want %v (segments %+v)", s.BaseOffset, s.BaseOffset, s.NextOffset, got, want, segs)
		}
		for _, suf := range []string{".index", ".timeindex"} {
			idx := strings.TrimSuffix(s.LogPath, ".log") + suf
			if got := mtimeOf(t, e, idx); !got.Equal(want) {
				t.Fatalf("%s: mtime %v, want %v", idx, got, want)
			}
		}
	}
	if segs[0].Size != 0 || segs[0].MaxTimestamp != -1 || segs[0].LargestTimestamp != written[0].UnixMilli() {
		t.Fatalf("emptied first segment: %+v, want largest timestamp %d", segs[0], written[0].UnixMilli())
	}
}

// retention.ms judges a segment the cleaner emptied by the modification
// time it inherited, as Kafka's largestTimestamp does: not at once (it
// has no timestamps), and not from the time of the pass.
func TestRetentionOfEmptiedSegment(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"cleanup.policy": "compact,delete", "internal.segment.bytes": "100",
		"retention.ms": "3600000", "file.delete.delay.ms": "0"})
	t0 := e.clock.Now()
	e.appendRecs(l, plain, kv("a", "1")) // segment 0, emptied below
	e.clock.Advance(10 * time.Minute)
	e.appendRecs(l, plain, kv("a", "2"))
	e.appendRecs(l, plain, kv("z", "1"))
	e.clock.Advance(10 * time.Minute)
	e.cleanAll(l) // at t0+20m
	segs := l.Segments()
	if segs[0].Size != 0 || segs[0].LargestTimestamp != t0.UnixMilli() {
		t.Fatalf("segment 0 not emptied with its old time: %+v", segs[0])
	}

	e.clock.Advance(t0.Add(time.Hour).Sub(e.clock.Now())) // exactly retention.ms: not breached
	e.cleaner.RetainCompacted()
	if o := l.Offsets(); o.LogStartOffset != 0 {
		t.Fatalf("emptied segment deleted before its time: %+v", o)
	}
	// Past t0 + retention.ms (but before pass time + retention.ms) it
	// goes; the next segment, written 10 min later, stays.
	e.clock.Advance(time.Millisecond)
	e.cleaner.RetainCompacted()
	if o := l.Offsets(); o.LogStartOffset != 1 {
		t.Fatalf("emptied segment not deleted by its inherited time: %+v", o)
	}
}

// A segment whose records carry no timestamps (-1) is judged by its file
// time too (Kafka: largestTimestamp falls back to lastModified).
func TestLargestTimestampFallsBackToFileTime(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"cleanup.policy": "delete", "internal.segment.bytes": "100",
		"retention.ms": "1000", "file.delete.delay.ms": "0"})
	written := e.clock.Now()
	b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]recordbatch.Record{{Key: []byte("a"), Value: []byte("1")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	e.appendRecs(l, plain, kv("b", "1"))
	segs := l.Segments()
	if segs[0].MaxTimestamp != -1 || segs[0].LargestTimestamp != written.UnixMilli() {
		t.Fatalf("segment without timestamps: %+v, want largest %d", segs[0], written.UnixMilli())
	}
	e.clock.Advance(time.Second)
	e.cleaner.RetainDeleteOnly()
	if o := l.Offsets(); o.LogStartOffset != 1 {
		t.Fatalf("expired segment without timestamps kept: %+v", o)
	}
}

// A log whose cleaning fails is marked uncleanable, logged at Error with
// its partition, and left alone (cleaning and the cleaner threads'
// retention) for UncleanableRetryMs, or until the cleaner restarts or the
// partition is deleted (Kafka's markPartitionUncleanable /
// maintainUncleanablePartitions; the retry is the cleaner spec's, section
// 18, where Kafka waits for a restart).
func TestFailedLogStaysUncleanable(t *testing.T) {
	fs := memfs.New()
	e := newTestEnv(t, fs)
	e.open()
	l, tp := e.keyWrittenThrice()
	var logs bytes.Buffer
	e.cleaner.logger = zerolog.New(&logs)
	// Corrupt the first segment's last byte: its CRC no longer matches.
	path := l.Segments()[0].LogPath
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := f.WriteAt([]byte{0xff}, st.Size()-1); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.cleaner.CleanOnce(); ok || err == nil {
		t.Fatalf("corrupt log cleaned: %v %v", ok, err)
	}
	if !strings.Contains(logs.String(), `"level":"error"`) || !strings.Contains(logs.String(), `"topic":"t","partition":0`) {
		t.Fatalf("failure not logged at error with the partition: %s", logs.String())
	}
	if got := e.cleaner.UncleanablePartitions(); len(got) != 1 || got[0] != tp {
		t.Fatalf("uncleanable %v", got)
	}
	// Left alone until the retry time.
	e.clock.Advance(time.Duration(e.cleaner.cfg.UncleanableRetryMs-1) * time.Millisecond)
	for i := 0; i < 3; i++ {
		if ok, err := e.cleaner.CleanOnce(); ok || err != nil {
			t.Fatalf("uncleanable log picked again before its retry: %v %v", ok, err)
		}
	}
	// Then tried again: still corrupt, so it fails and is marked again.
	e.clock.Advance(time.Millisecond)
	logs.Reset()
	if ok, err := e.cleaner.CleanOnce(); ok || err == nil {
		t.Fatalf("retry of the corrupt log: %v %v", ok, err)
	}
	if !strings.Contains(logs.String(), `"level":"error"`) {
		t.Fatalf("retry failure not logged at error: %s", logs.String())
	}
	if ok, err := e.cleaner.CleanOnce(); ok || err != nil {
		t.Fatalf("log picked again right after its second failure: %v %v", ok, err)
	}
	// The cleaner threads' retention skips it too (Kafka's deletableLogs).
	if _, err := l.AdvanceLogStartOffset(1); err != nil {
		t.Fatal(err)
	}
	e.cleaner.RetainCompacted()
	if segs := l.Segments(); segs[0].BaseOffset != 0 {
		t.Fatalf("retention ran over an uncleanable log: %+v", segs)
	}
	e.close()
}

// A restart (a new Cleaner) or deleting the partition forgets the mark.
func TestUncleanableMarkForgotten(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l, tp := e.keyWrittenThrice()
	e.cleaner.uncleanable[tp] = uncleanableMark{log: l, retryAt: math.MaxInt64}
	if ok, _ := e.cleaner.CleanOnce(); ok {
		t.Fatal("marked log cleaned")
	}
	// Restart: a new cleaner over the same store cleans it.
	e.cleaner.Close()
	e.cleaner = New(e.store, Config{Clock: e.clock, Logger: e.logger()})
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("after restart: %v %v", ok, err)
	}

	// Deleted and created again under the same name: a new partition.
	e.cleaner.uncleanable[tp] = uncleanableMark{log: l, retryAt: math.MaxInt64}
	if err := e.store.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	l2 := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l2, plain, kv("a", "1"))
	e.appendRecs(l2, plain, kv("a", "2"))
	e.appendRecs(l2, plain, kv("a", "3"))
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("recreated partition: %v %v", ok, err)
	}
	if got := e.cleaner.UncleanablePartitions(); len(got) != 0 {
		t.Fatalf("mark of the deleted partition kept: %v", got)
	}
}

// Changing cleanup.policy away from compact aborts a pass in flight: its
// output is dropped and the checkpoint stays (Kafka's updateTopicConfig
// calls abortCleaning).
func TestPolicyChangeAbortsPass(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.ccfg.IOMaxBytesPerSecond = 1 // the pass waits on the clock at its first read
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, plain, kv("a", "1"))
	e.appendRecs(l, plain, kv("a", "2"))
	e.appendRecs(l, plain, kv("a", "3"))
	before := l.Segments()
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := e.cleaner.CleanLog(tpOf(l))
		done <- result{ok, err}
	}()
	// The store keeps two timers on this clock (checkpoints, producer
	// expiry): the third is the pass waiting at its throttle, mid-pass.
	e.clock.WaitForTimers(3)
	if _, err := e.store.AlterTopicConfig("t", partition.ReplaceConfigs(map[string]string{"cleanup.policy": "delete", "internal.segment.bytes": "100"}), false); err != nil {
		t.Fatal(err)
	}
	var r result
	for i := 0; ; i++ {
		if i == 10000 {
			t.Fatal("pass did not end")
		}
		e.clock.Advance(time.Hour)
		select {
		case r = <-done:
		case <-time.After(time.Millisecond):
			continue
		}
		break
	}
	if r.ok || r.err != nil {
		t.Fatalf("pass after policy change: %v %v", r.ok, r.err)
	}
	if cp := e.cleaner.Checkpoint(tpOf(l)); cp != -1 {
		t.Fatalf("checkpoint moved to %d", cp)
	}
	after := l.Segments()
	if len(after) != len(before) || after[0].Size != before[0].Size {
		t.Fatalf("segments changed: %+v -> %+v", before, after)
	}
	if got := e.cleaner.UncleanablePartitions(); len(got) != 0 {
		t.Fatalf("aborted pass marked uncleanable: %v", got)
	}
}

// min.compaction.lag.ms judges a segment without timestamps by its file
// time (Kafka's cleanableOffsets uses largestTimestamp), so a segment the
// cleaner emptied, or one of records stamped -1, written recently stays
// uncleanable.
func TestMinLagUsesLargestTimestamp(t *testing.T) {
	const now = 1_000_000
	segs := []partition.SegmentInfo{
		{BaseOffset: 0, NextOffset: 10, Size: 100, MaxTimestamp: 1000, LargestTimestamp: 1000},
		{BaseOffset: 10, NextOffset: 20, Size: 100, MaxTimestamp: -1, LargestTimestamp: now - 10},
		{BaseOffset: 20, NextOffset: 30, Size: 100, MaxTimestamp: 2000, LargestTimestamp: 2000},
		{BaseOffset: 30, NextOffset: 35, Size: 100, MaxTimestamp: 3000, LargestTimestamp: 3000, Active: true},
	}
	offs := partition.Offsets{HighWatermark: 35, LastStableOffset: 35, LogEndOffset: 35}
	cfg := partition.DefaultLogConfig()
	cfg.MinCompactionLagMs = 1000
	cfg.MaxCompactionLagMs = math.MaxInt64
	r := computeRange(segs, offs, 35, -1, cfg, now, func(partition.SegmentInfo) int64 { return -1 })
	if r.firstUncleanable != 10 {
		t.Fatalf("first uncleanable %d, want 10 (the recently modified segment without timestamps)", r.firstUncleanable)
	}
	cfg.MinCompactionLagMs = 5
	if r := computeRange(segs, offs, 35, -1, cfg, now, func(partition.SegmentInfo) int64 { return -1 }); r.firstUncleanable != 30 {
		t.Fatalf("first uncleanable %d, want 30", r.firstUncleanable)
	}
}

// segmentBases lists a log's segment base offsets.
func segmentBases(l *partition.Log) []int64 {
	var out []int64
	for _, s := range l.Segments() {
		out = append(out, s.BaseOffset)
	}
	return out
}

// The input of cmd/kcompatd/offline/testdata/kafka/compacted-0 (gen/main.go):
// an idempotent producer writes keys a, b, c in four rounds, b a
// tombstone in round 2, each round in a segment of its own (segment.ms
// 100). Kafka 4.3.1 cleaned the three closed segments into ONE segment at
// base 0 holding only the batch 6-8 (its tombstone stamped with a
// horizon), before the active segment 9: the checkpoint is 9.
func TestKafkaCompactedGolden(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l := e.topic("compacted", map[string]string{"segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"})
	idem := batchOpts{pid: 6, epoch: 0}
	for round := 0; round < 4; round++ {
		var recs []rec
		for _, k := range []string{"a", "b", "c"} {
			r := kv(k, fmt.Sprintf("%s-%d", k, round))
			if round == 2 && k == "b" {
				r.Value = nil
			}
			recs = append(recs, r)
		}
		idem.seq = int32(3 * round)
		e.appendRecs(l, idem, recs...)
		e.clock.Advance(300 * time.Millisecond)
		e.cleanAll(l) // Kafka's cleaner ran between the rounds too
	}
	e.cleanAll(l)
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 9}) {
		t.Fatalf("segments %v, want Kafka's [0 9]", got)
	}
	if cp := e.cleaner.Checkpoint(tpOf(l)); cp != 9 {
		t.Fatalf("checkpoint %d, want 9", cp)
	}
	hs := readBatches(t, l)
	if len(hs) != 2 || hs[0].BaseOffset() != 6 || hs[0].LastOffset() != 8 || hs[0].RecordCount() != 3 ||
		!hs[0].HasDeleteHorizon() || hs[0].BaseSequence() != 6 || hs[1].BaseOffset() != 9 || hs[1].HasDeleteHorizon() {
		t.Fatalf("batches %v", hs)
	}
}

// Kafka's groupSegmentsBySize bounds a group by the sizes of its
// segments' real indexes (entries times 8 and 12 bytes), not by an
// estimate from the log bytes. Here every segment holds three batches
// with index.interval.bytes 1, so two entries in each index (16 and 24
// bytes); with segment.index.bytes 64 Kafka puts two segments in a group
// (the time indexes: 24+24 <= 64 < 72).
func TestGroupingByIndexSizes(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"segment.ms": "100", "index.interval.bytes": "1", "segment.index.bytes": "64"})
	for s := 0; s < 7; s++ {
		for b := 0; b < 3; b++ {
			e.appendRecs(l, plain, kv(fmt.Sprintf("k%d", 3*s+b), "v"))
			e.clock.Advance(time.Millisecond)
		}
		e.clock.Advance(300 * time.Millisecond)
	}
	e.appendRecs(l, plain, kv("active", "v"))
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 3, 6, 9, 12, 15, 18, 21}) {
		t.Fatalf("segments before cleaning %v", got)
	}
	e.cleanAll(l)
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 6, 12, 18, 21}) {
		t.Fatalf("segments %v, want Kafka's [0 6 12 18 21]", got)
	}
	if n := len(readRecs(t, l)); n != 22 {
		t.Fatalf("%d records, want 22", n)
	}
}

// The other way round: a rolled segment's time index holds at least its
// closing entry (12 bytes) even when index.interval.bytes gives it no
// other, so with segment.index.bytes 24 Kafka's groups hold two one-batch
// segments each, where a log-bytes estimate saw no index at all.
func TestGroupingByClosingTimeIndexEntries(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"segment.ms": "100", "segment.index.bytes": "24"})
	for i := 0; i < 6; i++ {
		e.appendRecs(l, plain, kv(fmt.Sprintf("k%d", i), "v"))
		e.clock.Advance(300 * time.Millisecond)
	}
	e.appendRecs(l, plain, kv("active", "v"))
	for _, s := range l.Segments()[:6] {
		if s.OffsetIndexBytes != 0 || s.TimeIndexBytes != 12 {
			t.Fatalf("segment %d: index bytes %d and %d, want Kafka's 0 and 12", s.BaseOffset, s.OffsetIndexBytes, s.TimeIndexBytes)
		}
	}
	e.cleanAll(l)
	if got := segmentBases(l); !slices.Equal(got, []int64{0, 2, 4, 6}) {
		t.Fatalf("segments %v, want Kafka's [0 2 4 6]", got)
	}
}
