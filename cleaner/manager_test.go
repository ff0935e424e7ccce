package cleaner

import (
	"errors"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

func TestFilthiestLogFirst(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	a := e.topic("a", oneBatchPerSegment)
	for i := 0; i < 6; i++ {
		e.appendRecs(a, plain, kv("k", "v"))
	}
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("CleanOnce: %v %v", ok, err)
	}
	// a: clean now; one more record makes one small dirty segment: ratio
	// below 0.5. b: never cleaned, ratio 1.
	e.appendRecs(a, plain, kv("k", "v"))
	b := e.topic("b", oneBatchPerSegment)
	e.appendRecs(b, plain, kv("k", "1"))
	e.appendRecs(b, plain, kv("k", "2"))
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("CleanOnce: %v %v", ok, err)
	}
	if e.cleaner.Checkpoint(tpOf(b)) != 1 {
		t.Fatalf("b not cleaned first: checkpoint %d", e.cleaner.Checkpoint(tpOf(b)))
	}
	if ok, _ := e.cleaner.CleanOnce(); ok {
		t.Fatalf("a cleaned below min.cleanable.dirty.ratio")
	}
}

// With min.cleanable.dirty.ratio 1 a log is cleaned only when forced by
// max.compaction.lag.ms (KIP-354), measured from the first batch of the
// oldest dirty segment.
func TestMaxCompactionLagForces(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"internal.segment.bytes": "100", "min.cleanable.dirty.ratio": "1", "max.compaction.lag.ms": "60000"})
	e.appendRecs(l, plain, kv("k", "1"))
	e.appendRecs(l, plain, kv("k", "2"))
	e.appendRecs(l, plain, kv("k", "3"))
	if ok, _ := e.cleaner.CleanOnce(); ok {
		t.Fatal("cleaned before max.compaction.lag.ms")
	}
	e.clock.Advance(60 * time.Second)
	if ok, _ := e.cleaner.CleanOnce(); ok {
		t.Fatal("cleaned at exactly max.compaction.lag.ms")
	}
	e.clock.Advance(time.Millisecond)
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("not forced: %v %v", ok, err)
	}
	if s := survivors(readRecs(t, l)); s != "k=2 k=3 " {
		t.Fatalf("survivors %q", s)
	}
}

// min.compaction.lag.ms protects whole segments holding records newer
// than the lag (KIP-58).
func TestMinCompactionLag(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"internal.segment.bytes": "100", "min.compaction.lag.ms": "10000"})
	e.appendRecs(l, plain, kv("k", "1"))
	e.clock.Advance(5 * time.Second)
	e.appendRecs(l, plain, kv("k", "2"))
	e.appendRecs(l, plain, kv("k", "3"))
	if ok, _ := e.cleaner.CleanLog(tpOf(l)); ok {
		t.Fatal("cleaned inside min.compaction.lag.ms")
	}
	e.clock.Advance(5*time.Second + time.Millisecond)
	// Segment 0 is old enough; segment 1 is not, so cleaning stops at 1.
	if ok, err := e.cleaner.CleanLog(tpOf(l)); !ok || err != nil {
		t.Fatalf("CleanLog: %v %v", ok, err)
	}
	if cp := e.cleaner.Checkpoint(tpOf(l)); cp != 1 {
		t.Fatalf("checkpoint %d", cp)
	}
	e.clock.Advance(5 * time.Second)
	e.cleanAll(l)
	if s := survivors(readRecs(t, l)); s != "k=2 k=3 " {
		t.Fatalf("survivors %q", s)
	}
}

func TestPauseAbortsAndResumes(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, plain, kv("k", "1"))
	e.appendRecs(l, plain, kv("k", "2"))
	e.cleaner.Pause(tpOf(l))
	if ok, err := e.cleaner.CleanLog(tpOf(l)); ok || !errors.Is(err, errAborted) {
		t.Fatalf("paused log cleaned: %v %v", ok, err)
	}
	if ok, _ := e.cleaner.CleanOnce(); ok {
		t.Fatal("paused log chosen")
	}
	e.cleaner.Resume(tpOf(l))
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("after resume: %v %v", ok, err)
	}
}

// The checkpoint survives a restart, and one past the log end offset (a
// truncated or recreated log) is reset to the log start offset.
func TestCheckpointPersistsAndResets(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	l := e.topic("t", oneBatchPerSegment)
	for i := 0; i < 4; i++ {
		e.appendRecs(l, plain, kv("k", "v"))
	}
	e.cleanAll(l)
	tp := tpOf(l)
	e.close()
	e.open()
	defer e.close()
	if cp := e.cleaner.Checkpoint(tp); cp != 3 {
		t.Fatalf("checkpoint after restart %d", cp)
	}
	if err := e.store.WriteCleanerCheckpoint(map[partition.TopicPartition]int64{tp: 99}); err != nil {
		t.Fatal(err)
	}
	e.cleaner.Close()
	e.cleaner = New(e.store, Config{Clock: e.clock, Logger: e.logger()})
	e.cleaner.CleanOnce()
	if cp := e.cleaner.Checkpoint(tp); cp != 3 {
		t.Fatalf("checkpoint past LEO not reset and re-cleaned: %d", cp)
	}
}

func TestRetention(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	del := func(name string, ov map[string]string) *partition.Log {
		o := map[string]string{"cleanup.policy": "delete", "internal.segment.bytes": "100", "file.delete.delay.ms": "0"}
		for k, v := range ov {
			o[k] = v
		}
		tp, err := e.store.CreateTopic(name, 1, o, false)
		if err != nil {
			t.Fatal(err)
		}
		return tp.Partitions[0]
	}
	t.Run("retention.ms rolls an expired active segment", func(t *testing.T) {
		l := del("ms", map[string]string{"retention.ms": "1000"})
		e.appendRecs(l, plain, kv("a", "1"))
		e.clock.Advance(600 * time.Millisecond)
		e.appendRecs(l, plain, kv("a", "2"))
		e.clock.Advance(401 * time.Millisecond)
		e.cleaner.RetainDeleteOnly()
		if o := l.Offsets(); o.LogStartOffset != 1 || o.LogEndOffset != 2 {
			t.Fatalf("offsets %+v", o)
		}
		e.clock.Advance(time.Second)
		e.cleaner.RetainDeleteOnly()
		segs := l.Segments()
		if o := l.Offsets(); o.LogStartOffset != 2 || o.LogEndOffset != 2 || len(segs) != 1 || segs[0].BaseOffset != 2 {
			t.Fatalf("offsets %+v segments %+v", o, segs)
		}
	})
	t.Run("retention.bytes", func(t *testing.T) {
		l := del("bytes", map[string]string{"retention.bytes": "150"})
		for i := 0; i < 4; i++ {
			e.appendRecs(l, plain, kv("a", "1"))
		}
		e.cleaner.RetainDeleteOnly()
		var size int64
		for _, s := range l.Segments() {
			size += s.Size
		}
		// Deleting one more segment would go below retention.bytes.
		if size-l.Segments()[0].Size >= 150 || l.Offsets().LogStartOffset != 1 {
			t.Fatalf("size %d, log start %d", size, l.Offsets().LogStartOffset)
		}
	})
	t.Run("compact-only logs keep old segments", func(t *testing.T) {
		l := e.topic("c", map[string]string{"retention.ms": "1", "retention.bytes": "1", "internal.segment.bytes": "100"})
		e.appendRecs(l, plain, kv("a", "1"))
		e.appendRecs(l, plain, kv("b", "1"))
		e.clock.Advance(time.Second)
		e.cleaner.RetainCompacted()
		if o := l.Offsets(); o.LogStartOffset != 0 {
			t.Fatalf("compact-only log trimmed: %+v", o)
		}
		// but segments below the log start offset go.
		if _, err := l.AdvanceLogStartOffset(1); err != nil {
			t.Fatal(err)
		}
		e.cleaner.RetainCompacted()
		if segs := l.Segments(); segs[0].BaseOffset != 1 {
			t.Fatalf("segments %+v", segs)
		}
	})
}

// compact,delete: the cleaner compacts, and retention (run by the cleaner
// threads) removes whole expired segments.
func TestCompactDeleteRetention(t *testing.T) {
	// On memfs, whose file times follow the test clock: the segment the
	// cleaner empties expires by its inherited modification time.
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"cleanup.policy": "compact,delete", "internal.segment.bytes": "100", "retention.ms": "1000"})
	e.appendRecs(l, plain, kv("a", "1"))
	e.appendRecs(l, plain, kv("a", "2"))
	e.clock.Advance(600 * time.Millisecond)
	e.appendRecs(l, plain, kv("b", "1"))
	e.appendRecs(l, plain, kv("c", "1"))
	e.cleanAll(l)
	if s := survivors(readRecs(t, l)); s != "a=2 b=1 c=1 " {
		t.Fatalf("compacted: %q", s)
	}
	e.clock.Advance(401 * time.Millisecond)
	e.cleaner.RetainDeleteOnly() // not its job
	if o := l.Offsets(); o.LogStartOffset != 0 {
		t.Fatalf("retention task trimmed a compacted log: %+v", o)
	}
	e.cleaner.RetainCompacted()
	if s := survivors(readRecs(t, l)); s != "b=1 c=1 " || l.Offsets().LogStartOffset != 2 {
		t.Fatalf("after retention %q, log start %d", s, l.Offsets().LogStartOffset)
	}
}

// A pass over a log whose topic is deleted stops without error and
// without marking anything uncleanable.
func TestDeletedTopicAbortsCleaning(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l, tp := e.keyWrittenThrice()
	if err := e.store.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.cleaner.CleanOnce(); ok || err != nil {
		t.Fatalf("deleted log cleaned: %v %v", ok, err)
	}
	if ok, err := e.cleaner.clean(candidate{tp: tp, log: l}, e.now()); ok || err != nil {
		t.Fatalf("pass over a deleted log: %v %v", ok, err)
	}
	if _, bad := e.cleaner.uncleanable[tp]; bad {
		t.Fatal("deleted log marked uncleanable")
	}
}

// LogAppendTime batches are rebuilt with every record at the batch's
// maxTimestamp, as Kafka's MemoryRecordsBuilder does.
func TestLogAppendTimeBatchRebuilt(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", map[string]string{"internal.segment.bytes": "150", "message.timestamp.type": "LogAppendTime"})
	e.appendRecs(l, plain, kv("a", "1"), kv("b", "1"))
	appended := e.now()
	e.clock.Advance(time.Second)
	e.appendRecs(l, plain, kv("a", "2"))
	e.appendRecs(l, plain, kv("z", "1"))
	e.cleanAll(l)
	hs := readBatches(t, l)
	h := hs[0]
	if h.RecordCount() != 1 || !h.LogAppendTime() || h.MaxTimestamp() != appended || h.BaseTimestamp() != appended {
		t.Fatalf("rebuilt batch: count %d lat %v max %d base %d, appended at %d", h.RecordCount(), h.LogAppendTime(), h.MaxTimestamp(), h.BaseTimestamp(), appended)
	}
	recs, err := recordbatch.Records(h, 1<<20)
	if err != nil || len(recs) != 1 || string(recs[0].Key) != "b" || recs[0].TimestampDelta != 0 || recs[0].OffsetDelta != 1 {
		t.Fatalf("records %+v %v", recs, err)
	}
}

// A log that looked eligible but had nothing to clean (an open
// transaction the offsets did not show) is skipped until it grows, so it
// cannot starve the others.
func TestIdleLogDoesNotStarveOthers(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	a := e.topic("a", oneBatchPerSegment)
	e.appendRecs(a, batchOpts{pid: 1, epoch: 0, seq: 0, transactional: true}, kv("k", "1"))
	e.appendRecs(a, plain, kv("k", "2"))
	e.appendRecs(a, plain, kv("k", "3"))
	for i := 0; i < 6; i++ {
		e.appendRecs(a, plain, kv("pad", "x"))
	}
	b := e.topic("b", oneBatchPerSegment)
	e.appendRecs(b, plain, kv("k", "1"))
	e.appendRecs(b, plain, kv("k", "2"))
	e.appendRecs(b, plain, kv("k", "3"))
	cleanedB := false
	for i := 0; i < 3 && !cleanedB; i++ {
		e.cleaner.CleanOnce()
		cleanedB = e.cleaner.Checkpoint(tpOf(b)) > 0
	}
	if !cleanedB {
		t.Fatal("b never cleaned while a is blocked by its open transaction")
	}
}
