package cleaner

import (
	"testing"
	"time"
)

// Metrics counts passes, their bytes and time, and retention's deleted
// segments; DirtyRatios gives each compacted log's ratio now, 1 before
// its first pass and lower after it.
func TestMetricsAndDirtyRatios(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	a := e.topic("a", oneBatchPerSegment)
	for range 6 {
		e.appendRecs(a, plain, kv("k", "v"))
	}
	if r := e.cleaner.DirtyRatios(); len(r) != 1 || r[tpOf(a)] != 1 {
		t.Fatalf("dirty ratios before cleaning: %v", r)
	}
	if m := e.cleaner.Metrics(); m != (Metrics{}) {
		t.Fatalf("metrics before any pass: %+v", m)
	}
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("CleanOnce: %v %v", ok, err)
	}
	m := e.cleaner.Metrics()
	if m.Passes != 1 || m.BytesRead <= 0 || m.BytesWritten <= 0 || m.BytesWritten >= m.BytesRead {
		t.Fatalf("metrics after a pass: %+v", m)
	}
	if r := e.cleaner.DirtyRatios()[tpOf(a)]; r != 0 {
		t.Fatalf("dirty ratio after cleaning %v, want 0", r)
	}
	e.appendRecs(a, plain, kv("k", "v"))
	if r := e.cleaner.DirtyRatios()[tpOf(a)]; r <= 0 || r >= 1 {
		t.Fatalf("dirty ratio with one new segment %v", r)
	}

	tp, err := e.store.CreateTopic("d", 1, map[string]string{"cleanup.policy": "delete", "internal.segment.bytes": "100", "file.delete.delay.ms": "0", "retention.ms": "1000"}, false)
	if err != nil {
		t.Fatal(err)
	}
	d := tp.Partitions[0]
	e.appendRecs(d, plain, kv("a", "1"))
	e.appendRecs(d, plain, kv("a", "2"))
	e.clock.Advance(2 * time.Second)
	e.cleaner.RetainDeleteOnly()
	if m := e.cleaner.Metrics(); m.RetentionDeletedSegments != 2 {
		t.Fatalf("retention deleted %d segments, want 2 (%+v, log %+v)", m.RetentionDeletedSegments, m, d.Offsets())
	}
	if _, ok := e.cleaner.DirtyRatios()[tpOf(d)]; ok {
		t.Fatal("a dirty ratio for a delete-only log")
	}
}
