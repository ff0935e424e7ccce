package partition

import (
	"strings"
	"testing"
)

// Regressions found in review, each once a real bug.

// A read below the high watermark keeps working when the cleaner swaps in
// a smaller segment with the base offset the high watermark's position
// points into (flush.messages=1: the HW lags while the new segment's first
// fsync runs).
func TestReadAfterSwapOfHighWatermarkSegment(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1", "segment.bytes": "400"}).Partitions[0]
	var last AppendResult
	var lastBatch []byte
	for i := 0; i < 3; i++ {
		lastBatch = mkBatch(t, 1, int64(1000+i), 50)
		last = mustAppend(t, l, lastBatch)
	}
	block := make(chan struct{})
	blocked := make(chan struct{}, 10)
	e.fs.setHooks(func(name string) error {
		if strings.HasSuffix(name, ".log") && !strings.HasSuffix(name, "00000000000000000000.log") {
			blocked <- struct{}{}
			<-block
		}
		return nil
	}, nil)
	done := make(chan error)
	go func() { _, err := l.Append(mkBatch(t, 1, 2000, 300)); done <- err }()
	<-blocked
	t.Logf("segments %d, hw %+v (HW still in old segment while fsync runs)", len(*l.segs.Load()), *l.hw.Load())
	f, err := l.CreateCleanedSegment(0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(lastBatch, 0)
	f.Sync()
	f.Close()
	if err := l.ReplaceSegments([]int64{0}, 0); err != nil {
		t.Fatalf("ReplaceSegments: %v", err)
	}
	_, err = l.Read(last.BaseOffset, 1<<20, true)
	t.Logf("Read(%d) after swap: err=%v", last.BaseOffset, err)
	if err != nil {
		t.Errorf("read below the high watermark fails after a swap: %v", err)
	}
	close(block)
	go func() {
		for range blocked {
		}
	}()
	// The append that was waiting for its fsync during the swap is
	// acknowledged and readable.
	if err := <-done; err != nil {
		t.Fatalf("Append blocked during the swap: %v", err)
	}
	if rr, err := l.Read(last.BaseOffset+1, 1<<20, true); err != nil || len(rr.Records) == 0 {
		t.Fatalf("Read(%d) of the append made during the swap: %d bytes, %v", last.BaseOffset+1, len(rr.Records), err)
	}
	s.Close()
}

// A deleted topic's checkpoint entries do not apply to a topic created
// again under its name: acknowledged, fsynced records of the new topic
// survive a crash (they were once hidden below the old log start offset).
func TestRecreatedTopicIgnoresOldCheckpoints(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	tp := mustCreate(t, s, "t", 1, nil)
	l := tp.Partitions[0]
	for i := 0; i < 10; i++ {
		mustAppend(t, l, mkBatch(t, 1, int64(1000+i), 10))
	}
	if _, err := l.AdvanceLogStartOffset(8); err != nil { // DeleteRecords
		t.Fatal(err)
	}
	if err := s.WriteCheckpoints(); err != nil { // periodic checkpoint
		t.Fatal(err)
	}
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	tp = mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"})
	l = tp.Partitions[0]
	for i := 0; i < 5; i++ {
		mustAppend(t, l, mkBatch(t, 1, int64(2000+i), 10)) // acked after fsync
	}
	t.Logf("before crash: %+v", l.Offsets())
	s.abandon() // kill -9 within log.flush.offset.checkpoint.interval.ms
	s = e.open()
	defer s.Close()
	l2, _ := s.Log("t", 0)
	o := l2.Offsets()
	t.Logf("after restart: %+v", o)
	if o.LogStartOffset != 0 {
		t.Errorf("acknowledged records 0..%d of the new topic are below log start %d", o.LogEndOffset-1, o.LogStartOffset)
	}
}
