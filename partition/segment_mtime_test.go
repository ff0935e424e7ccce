package partition_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// ReplaceSegments gives the new segment the modification time of the last
// segment it replaces (Kafka's cleaned.setLastModified), and Segments
// reports Kafka's largestTimestamp: the largest record timestamp, or the
// file's time for a segment without timestamps.
func TestReplaceSegmentsKeepsLastModified(t *testing.T) {
	fs := memfs.New()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	fs.SetNow(clk.Now)
	s, err := partition.Open(partition.Config{Dir: "/data", NodeID: 1, FS: fs, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic("t", 1, map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "100"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := tp.Partitions[0]
	var written []time.Time
	for i := range 3 {
		ts := int64(-1) // no timestamp: judged by the file's time
		if i == 2 {
			ts = clk.Now().Add(-time.Minute).UnixMilli()
		}
		b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]recordbatch.Record{{Key: []byte{'k', byte(i)}, Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, clk.Now())
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
	}
	segs := l.Segments()
	if len(segs) != 3 {
		t.Fatalf("segments %+v", segs)
	}
	for i, want := range []int64{written[0].UnixMilli(), written[1].UnixMilli(), written[2].Add(-time.Minute).UnixMilli()} {
		if segs[i].LargestTimestamp != want {
			t.Fatalf("segment %d: largest timestamp %d, want %d", i, segs[i].LargestTimestamp, want)
		}
	}

	// Replace the first two segments by an empty one, hours later.
	f, err := l.CreateCleanedSegment(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := l.ReplaceSegments([]int64{0, 1}, 0); err != nil {
		t.Fatal(err)
	}
	segs = l.Segments()
	if len(segs) != 2 || segs[0].Size != 0 || segs[0].NextOffset != 2 {
		t.Fatalf("after replace: %+v", segs)
	}
	if segs[0].LargestTimestamp != written[1].UnixMilli() {
		t.Fatalf("replaced segment: largest timestamp %d, want the last replaced segment's time %d",
			segs[0].LargestTimestamp, written[1].UnixMilli())
	}
	for _, name := range []string{"/data/t-0/00000000000000000000.log", "/data/t-0/00000000000000000000.index", "/data/t-0/00000000000000000000.timeindex"} {
		fi, err := fs.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(written[1]) {
			t.Fatalf("%s: mtime %v, want %v", name, fi.ModTime(), written[1])
		}
	}
}
