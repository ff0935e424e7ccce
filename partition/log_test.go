package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestAppendAssignsOffsets checks offset assignment, the leader epoch stamp,
// and that the bytes stored are the batch as given.
func TestAppendAssignsOffsets(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	sizes := []int{1, 5, 1, 10}
	next := int64(0)
	for _, n := range sizes {
		b := mkBatch(t, n, 1000, 8)
		recordbatch.Header(b).SetLeaderEpoch(77)
		r := mustAppend(t, l, b)
		if r.BaseOffset != next || r.LogAppendTime != -1 || r.LogStartOffset != 0 {
			t.Fatalf("Append = %+v, want base %d", r, next)
		}
		next += int64(n)
	}
	if o := l.Offsets(); o != (Offsets{0, next, next, next}) {
		t.Fatalf("Offsets = %+v", o)
	}
	hs := readAll(t, l)
	next = 0
	for i, h := range hs {
		if h.BaseOffset() != next || h.LeaderEpoch() != 0 || int(h.RecordCount()) != sizes[i] {
			t.Fatalf("batch %d: base %d epoch %d count %d", i, h.BaseOffset(), h.LeaderEpoch(), h.RecordCount())
		}
		next = h.LastOffset() + 1
	}
	got, err := os.ReadFile(filepath.Join(e.dir, "t-0", leaderEpochFile))
	if err != nil || string(got) != "0\n1\n0 0\n" {
		t.Fatalf("leader-epoch-checkpoint = %q, %v", got, err)
	}
}

func TestAppendRejects(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"max.message.bytes": "200"}).Partitions[0]
	good := mkBatch(t, 1, 1, 10)
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCorruptBatch},
		{"short", good[:30], ErrCorruptBatch},
		{"trailing bytes", append(append([]byte{}, good...), 0), ErrCorruptBatch},
		{"too large", mkBatch(t, 1, 1, 300), ErrRecordTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := l.Append(tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("Append = %v, want %v", err, tc.want)
			}
		})
	}
	if o := l.Offsets(); o.LogEndOffset != 0 {
		t.Fatalf("rejected batches moved the log end offset: %+v", o)
	}
}

// TestRead covers Read's contract: the batch containing the offset, whole
// batches up to maxBytes, minOne, the high watermark, out of range.
func TestRead(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"index.interval.bytes": "100"}).Partitions[0]
	var size int
	for i := 0; i < 20; i++ {
		b := mkBatch(t, 5, int64(i), 20) // offsets 5i..5i+4
		size = len(b)
		mustAppend(t, l, b)
	}
	for _, tc := range []struct {
		name     string
		offset   int64
		maxBytes int32
		minOne   bool
		bases    []int64 // base offsets of the batches returned
		err      error
	}{
		{"first", 0, int32(size), false, []int64{0}, nil},
		{"mid batch returns whole batch", 7, int32(size), false, []int64{5}, nil},
		{"last record of a batch", 9, int32(size), false, []int64{5}, nil},
		{"two batches", 12, int32(2*size + size/2), false, []int64{10, 15}, nil},
		{"maxBytes below one batch", 12, int32(size - 1), false, nil, nil},
		{"minOne overrides maxBytes", 12, 1, true, []int64{10}, nil},
		{"zero maxBytes minOne", 12, 0, true, []int64{10}, nil},
		{"tail", 97, 1 << 20, false, []int64{95}, nil},
		{"at high watermark", 100, 1 << 20, true, nil, nil},
		{"past high watermark", 101, 1 << 20, true, nil, ErrOffsetOutOfRange},
		{"negative", -1, 1 << 20, true, nil, ErrOffsetOutOfRange},
		{"all", 0, 1 << 20, false, []int64{0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := l.Read(tc.offset, tc.maxBytes, tc.minOne)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Read err = %v, want %v", err, tc.err)
			}
			if r.HighWatermark != 100 || r.LogEndOffset != 100 || r.LogStartOffset != 0 {
				t.Fatalf("offsets %+v", r.Offsets)
			}
			var bases []int64
			for _, h := range batchesIn(t, r.Records) {
				bases = append(bases, h.BaseOffset())
			}
			if len(bases) != len(tc.bases) {
				t.Fatalf("bases %v, want %v", bases, tc.bases)
			}
			for i := range bases {
				if bases[i] != tc.bases[i] {
					t.Fatalf("bases %v, want %v", bases, tc.bases)
				}
			}
			if int32(len(r.Records)) > tc.maxBytes && !(tc.minOne && len(bases) == 1) {
				t.Fatalf("%d bytes > maxBytes %d", len(r.Records), tc.maxBytes)
			}

			// ReadWith into a recycled, dirty buffer reads the same.
			dirty := bytes.Repeat([]byte{0xAA}, 1<<20)
			calls := 0
			rw, err := l.ReadWith(tc.offset, tc.maxBytes, tc.minOne, ReadUncommitted, func(n int) []byte {
				calls++
				return dirty[:n]
			})
			if !errors.Is(err, tc.err) || !bytes.Equal(rw.Records, r.Records) || rw.Offsets != r.Offsets {
				t.Fatalf("ReadWith: err %v, %d bytes, offsets %+v; Read: %d bytes", err, len(rw.Records), rw.Offsets, len(r.Records))
			}
			if calls > 1 || (len(rw.Records) > 0 && &rw.Records[0] != &dirty[0]) {
				t.Fatalf("ReadWith: %d allocs, records not in the given buffer", calls)
			}
		})
	}
}

// TestReadStopsAtHighWatermark checks that data written but not yet
// durable (flush.messages=1, fsync blocked) is not readable.
func TestReadStopsAtHighWatermark(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 2, 1, 10))
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	e.fs.setHooks(func(name string) error {
		if filepath.Ext(name) == ".log" {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
		}
		return nil
	}, nil)
	done := make(chan error)
	wait := l.Wait()
	go func() {
		_, err := l.Append(mkBatch(t, 3, 2, 10))
		done <- err
	}()
	<-entered
	if o := l.Offsets(); o.HighWatermark != 2 || o.LogEndOffset != 5 {
		t.Fatalf("during fsync: %+v", o)
	}
	r, err := l.Read(0, 1<<20, true)
	if err != nil || len(batchesIn(t, r.Records)) != 1 {
		t.Fatalf("read during fsync: %d bytes, %v", len(r.Records), err)
	}
	if r, err := l.Read(3, 1<<20, true); err != nil || len(r.Records) != 0 {
		t.Fatalf("read between HW and LEO: %d bytes, %v", len(r.Records), err)
	}
	if _, err := l.Read(6, 1<<20, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	select {
	case <-wait:
		t.Fatal("waiter woken before the high watermark moved")
	default:
	}
	e.fs.setHooks(nil, nil)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-wait
	if o := l.Offsets(); o.HighWatermark != 5 {
		t.Fatalf("after fsync: %+v", o)
	}
}

// TestSmallSegments uses Kafka's floor internal.segment.bytes=14: every batch gets
// its own segment, named by its base offset.
func TestSmallSegments(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "14"}).Partitions[0]
	for i := 0; i < 5; i++ {
		mustAppend(t, l, mkBatch(t, 2, int64(i), 10))
	}
	logs := segFiles(t, l.Dir(), ".log")
	want := []string{"00000000000000000000.log", "00000000000000000002.log", "00000000000000000004.log", "00000000000000000006.log", "00000000000000000008.log"}
	if len(logs) != len(want) {
		t.Fatalf("segments %v", logs)
	}
	for i, p := range logs {
		if filepath.Base(p) != want[i] {
			t.Fatalf("segment %d = %s, want %s", i, filepath.Base(p), want[i])
		}
	}
	for _, off := range []int64{0, 1, 3, 9} {
		r, err := l.Read(off, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		hs := batchesIn(t, r.Records)
		if len(hs) != 1 || hs[0].BaseOffset() != off/2*2 {
			t.Fatalf("Read(%d): %d batches", off, len(hs))
		}
	}
	if got := readAll(t, l); len(got) != 5 {
		t.Fatalf("readAll %d", len(got))
	}
	// Inactive segments carry their final time index entry.
	b, err := os.ReadFile(filepath.Join(l.Dir(), "00000000000000000000.timeindex"))
	if err != nil || len(b) != 12 || int64(binary.BigEndian.Uint64(b)) != 1 || binary.BigEndian.Uint32(b[8:]) != 1 {
		t.Fatalf("timeindex %x %v", b, err)
	}
}

func TestRollRules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		ts        func(i int) int64
		segments  int
	}{
		{"segment.bytes", map[string]string{"internal.segment.bytes": "300"}, func(i int) int64 { return 1 }, 5},
		{"segment.ms by record time", map[string]string{"segment.ms": "100"}, func(i int) int64 { return int64(i) * 60 }, 5},
		{"index full", map[string]string{"segment.index.bytes": "16", "index.interval.bytes": "0"}, func(i int) int64 { return int64(i) }, 5}, // 16/12: one time index entry
		{"no roll", nil, func(i int) int64 { return 1 }, 1},
		// KIP-354: a compacted topic rolls by max.compaction.lag.ms when
		// it is below segment.ms, so its records can be compacted in time.
		{"max.compaction.lag.ms on a compacted topic", map[string]string{"cleanup.policy": "compact", "max.compaction.lag.ms": "100"}, func(i int) int64 { return int64(i) * 60 }, 5},
		{"max.compaction.lag.ms without compact", map[string]string{"max.compaction.lag.ms": "100"}, func(i int) int64 { return int64(i) * 60 }, 1},
		// The jitter (the test's draw: its maximum, 149) brings the
		// roll age down to 51: every batch 60 ms later rolls.
		{"segment.jitter.ms", map[string]string{"segment.ms": "200", "segment.jitter.ms": "150"}, func(i int) int64 { return int64(i) * 60 }, 10},
		{"segment.jitter.ms at most segment.ms", map[string]string{"segment.ms": "100", "segment.jitter.ms": "100000"}, func(i int) int64 { return int64(i) * 60 }, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.jitter = func(n int64) int64 { return n - 1 }
			s := e.open()
			defer s.Close()
			l := mustCreate(t, s, "t", 1, tc.overrides).Partitions[0]
			for i := 0; i < 10; i++ {
				mustAppend(t, l, mkBatch(t, 1, tc.ts(i), 50)) // 130 bytes each
			}
			if n := len(segFiles(t, l.Dir(), ".log")); n != tc.segments {
				t.Fatalf("%d segments, want %d", n, tc.segments)
			}
			if got := readAll(t, l); len(got) != 10 {
				t.Fatalf("readAll %d", len(got))
			}
		})
	}
}

// TestSegmentMsWallClock: batches without timestamps roll by the clock.
func TestSegmentMsWallClock(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"segment.ms": "1000"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, -1, 5))
	mustAppend(t, l, mkBatch(t, 1, -1, 5))
	e.clock.Advance(1001 * 1e6)
	mustAppend(t, l, mkBatch(t, 1, -1, 5))
	if n := len(segFiles(t, l.Dir(), ".log")); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
}

// TestIndexes checks the sparse index entries Kafka would write: with
// index.interval.bytes smaller than a batch, every batch but the first
// gets an entry mapping its last offset to its position.
func TestIndexes(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"index.interval.bytes": "100"}).Partitions[0]
	var sizes []int
	for i := 0; i < 4; i++ {
		b := mkBatch(t, 3, 1000+int64(10*i), 60) // > 100 bytes
		sizes = append(sizes, len(b))
		mustAppend(t, l, b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idx, _ := os.ReadFile(filepath.Join(e.dir, "t-0", "00000000000000000000.index"))
	tidx, _ := os.ReadFile(filepath.Join(e.dir, "t-0", "00000000000000000000.timeindex"))
	var wantIdx, wantT []byte
	pos := sizes[0]
	for i := 1; i < 4; i++ {
		wantIdx = binary.BigEndian.AppendUint32(wantIdx, uint32(3*i+2))
		wantIdx = binary.BigEndian.AppendUint32(wantIdx, uint32(pos))
		wantT = binary.BigEndian.AppendUint64(wantT, uint64(1000+10*i+2))
		wantT = binary.BigEndian.AppendUint32(wantT, uint32(3*i+2))
		pos += sizes[i]
	}
	if string(idx) != string(wantIdx) {
		t.Fatalf(".index\n got %x\nwant %x", idx, wantIdx)
	}
	if string(tidx) != string(wantT) {
		t.Fatalf(".timeindex\n got %x\nwant %x", tidx, wantT)
	}
}

func TestLogAppendTime(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"}).Partitions[0]
	r := mustAppend(t, l, mkBatch(t, 3, 5, 5))
	if r.LogAppendTime != testStart.UnixMilli() {
		t.Fatalf("LogAppendTime %d", r.LogAppendTime)
	}
	h := readAll(t, l)[0]
	if !h.LogAppendTime() || h.MaxTimestamp() != r.LogAppendTime {
		t.Fatalf("stored batch not stamped")
	}
	ts, off, ok, err := l.MaxTimestamp()
	if err != nil || !ok || ts != r.LogAppendTime || off != 0 {
		t.Fatalf("MaxTimestamp = %d %d %v %v", ts, off, ok, err)
	}
}

func TestTimestamps(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "400", "index.interval.bytes": "0"}).Partitions[0]
	if _, _, ok, err := l.MaxTimestamp(); ok || err != nil {
		t.Fatalf("empty log: found %v %v", ok, err)
	}
	if _, _, ok, err := l.OffsetForTimestamp(0); ok || err != nil {
		t.Fatalf("empty log: found %v %v", ok, err)
	}
	// Batch i holds offsets 4i..4i+3 with timestamps 100i..100i+3; batch 5
	// goes back in time to check the max.
	for i := 0; i < 10; i++ {
		ts := int64(100 * i)
		if i == 5 {
			ts = 5000
		}
		mustAppend(t, l, mkBatch(t, 4, ts, 20))
	}
	for _, tc := range []struct {
		ts     int64
		offset int64
		stamp  int64
		found  bool
	}{
		{-1, 0, 0, true},
		{0, 0, 0, true},
		{2, 2, 2, true},
		{4, 4, 100, true},
		{101, 5, 101, true},
		{403, 19, 403, true},
		{404, 20, 5000, true},
		{600, 20, 5000, true},
		{903, 20, 5000, true}, // the first offset with a timestamp >= 903
		{5003, 23, 5003, true},
		{5004, -1, -1, false},
	} {
		off, st, ok, err := l.OffsetForTimestamp(tc.ts)
		if err != nil || off != tc.offset || st != tc.stamp || ok != tc.found {
			t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, %v", tc.ts, off, st, ok, err, tc.offset, tc.stamp, tc.found)
		}
	}
	ts, off, ok, err := l.MaxTimestamp()
	if err != nil || !ok || ts != 5003 || off != 23 {
		t.Fatalf("MaxTimestamp = %d %d %v %v", ts, off, ok, err)
	}
	// The same answers after a clean restart, from the time indexes alone.
	s.Close()
	s = e.open()
	defer s.Close()
	l = s.Topic("t").Partitions[0]
	ts, off, ok, err = l.MaxTimestamp()
	if err != nil || !ok || ts != 5003 || off != 23 {
		t.Fatalf("MaxTimestamp after restart = %d %d %v %v", ts, off, ok, err)
	}
	if off, _, _, _ := l.OffsetForTimestamp(404); off != 20 {
		t.Fatalf("OffsetForTimestamp after restart = %d", off)
	}
}

func TestWaitWakes(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	w := l.Wait()
	select {
	case <-w:
		t.Fatal("closed before any append")
	default:
	}
	mustAppend(t, l, mkBatch(t, 1, 1, 1))
	<-w
	w2 := l.Wait()
	if w2 == w {
		t.Fatal("same channel after append")
	}
}

// TestStorageErrorKeepsLogConsistent: a failed write is not acknowledged
// and takes the log dir offline, as in Kafka (nothing more is written even
// when the disk recovers); after a restart no partial batch is left and
// the next append takes the same offset.
func TestStorageErrorKeepsLogConsistent(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	mustAppend(t, l, mkBatch(t, 2, 1, 10))
	e.fs.setHooks(nil, func(name string) error {
		if filepath.Ext(name) == ".log" {
			return errInjected
		}
		return nil
	})
	if _, err := l.Append(mkBatch(t, 2, 1, 10)); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append = %v, want ErrStorage", err)
	}
	if o := l.Offsets(); o.LogEndOffset != 2 || o.HighWatermark != 2 {
		t.Fatalf("offsets after failure %+v", o)
	}
	e.fs.setHooks(nil, nil)
	if _, err := l.Append(mkBatch(t, 2, 1, 10)); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append with the log dir offline = %v, want ErrStorage", err)
	}
	if err := s.Close(); !errors.Is(err, ErrStorage) {
		t.Fatalf("Close = %v, want ErrStorage", err)
	}
	s = e.open()
	defer s.Close()
	l = s.Topic("t").Partitions[0]
	if r := mustAppend(t, l, mkBatch(t, 2, 1, 10)); r.BaseOffset != 2 {
		t.Fatalf("base %d", r.BaseOffset)
	}
	if n := len(readAll(t, l)); n != 2 {
		t.Fatalf("%d batches", n)
	}
}

// TestFsyncFailureTakesLogOffline: after a failed fsync nothing more is
// acknowledged.
func TestFsyncFailureTakesLogOffline(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"}).Partitions[0]
	e.fs.setHooks(func(name string) error {
		if filepath.Ext(name) == ".log" {
			return errInjected
		}
		return nil
	}, nil)
	if _, err := l.Append(mkBatch(t, 1, 1, 1)); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append = %v", err)
	}
	if o := l.Offsets(); o.HighWatermark != 0 {
		t.Fatalf("HW moved: %+v", o)
	}
	e.fs.setHooks(nil, nil)
	if _, err := l.Append(mkBatch(t, 1, 1, 1)); !errors.Is(err, ErrStorage) {
		t.Fatalf("Append after failed fsync = %v", err)
	}
	if o := l.Offsets(); o.LogEndOffset != 1 {
		t.Fatalf("an append after the failed fsync wrote: %+v", o)
	}
	err := s.Close()
	t.Logf("Close: %v", err)
	if err == nil {
		t.Fatal("Close after failed fsync: no error")
	}
	if _, err := os.Stat(filepath.Join(e.dir, cleanShutdownFile)); err == nil {
		t.Fatal("clean shutdown file written after a failure")
	}
}

var _ = math.MaxInt64

// TestNotifyAfterDeleteDoesNotPanic is the state an Append reaches when
// DeleteTopics closes the log between Append's unlock and its notify: a
// waiter took the channel, the close woke every waiter for good, and the
// append's notify runs last. notify must not close the closed channel
// again (from a coordinator goroutine that panic kills the process), and
// Wait must keep returning a closed channel.
func TestNotifyAfterDeleteDoesNotPanic(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 10))
	wait := l.Wait()
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("notify after close panicked: %v", r)
			}
		}()
		l.notify()
		l.notify()
	}()
	for i, ch := range []<-chan struct{}{wait, l.Wait()} {
		select {
		case <-ch:
		default:
			t.Fatalf("channel %d not closed after the log closed", i)
		}
	}
}

// TestAppendRacingDelete appends from several goroutines, each taking
// Wait's channel, while the topic is deleted: no append may panic.
func TestAppendRacingDelete(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	for round := 0; round < 20; round++ {
		l := mustCreate(t, s, "t", 1, nil).Partitions[0]
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := mkBatch(t, 1, 1, 10)
				for i := 0; i < 50; i++ {
					l.Wait()
					if _, err := l.Append(append([]byte(nil), b...)); err != nil {
						return
					}
				}
			}()
		}
		if err := s.DeleteTopic("t"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

// A read below the high watermark keeps working when the cleaner swaps in
// a smaller segment with the base offset the high watermark's position
// points into (flush.messages=1: the HW lags while the new segment's first
// fsync runs).
func TestReadAfterSwapOfHighWatermarkSegment(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1", "internal.segment.bytes": "400"}).Partitions[0]
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
