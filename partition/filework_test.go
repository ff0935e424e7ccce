package partition

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// waiting is how many jobs wait for their time.
func (w *fileWork) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.later)
}

// isPinned reports whether the cache may not close s's files.
func (s *segment) isPinned() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.pinned
}

// TestRollsUseBoundedWorkers: many rolls, each with its background flush,
// and many delayed removals run on at most Config.FileWorkers goroutines,
// and none is left once the work is done.
func TestRollsUseBoundedWorkers(t *testing.T) {
	const workers, rolls = 2, 200
	e := newEnv(t)
	e.fileWorkers = workers
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "14", "file.delete.delay.ms": "60000"}).Partitions[0]
	base := runtime.NumGoroutine()
	for i := range rolls {
		mustAppend(t, l, mkBatch(t, 1, 1000+int64(i), 10))
		if i%10 == 9 {
			if _, err := l.DeleteSegmentsBefore(int64(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := runtime.NumGoroutine(); got > base+workers+1 {
		t.Fatalf("%d goroutines during %d rolls, %d before: more than the pool (%d) and its timer", got, rolls, base, workers)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute) // the delayed removals are due
	if p := s.work.peakWorkers(); p > workers || p == 0 {
		t.Fatalf("peak %d file workers, want 1..%d", p, workers)
	}
}

// TestRollFlushRetriesAtEMFILE: a rolled segment's background flush that
// runs out of descriptors (writing its producer snapshot) leaves the data
// dir online and tries again, so the segment is unpinned (its files may
// close when idle) once descriptors are free, not kept open until the
// log closes.
func TestRollFlushRetriesAtEMFILE(t *testing.T) {
	e := newEnv(t)
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "14"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1000, 10))
	e.fs.setOnOpen(emfileFor(snapshotSuffix))
	mustAppend(t, l, mkBatch(t, 1, 1001, 10)) // rolls
	old := (*l.segs.Load())[0]
	for i := 0; i < 10000 && s.work.waiting() == 0; i++ {
		time.Sleep(time.Millisecond) // the flush runs on a worker
	}
	if s.work.waiting() != 1 {
		t.Fatal("the failed flush is not waiting to retry")
	}
	if !old.isPinned() {
		t.Fatal("segment unpinned though its flush failed")
	}
	if err := s.Offline(); err != nil {
		t.Fatalf("data dir offline after EMFILE: %v", err)
	}
	e.fs.setOnOpen(nil)
	for i := 0; i < 10000 && old.isPinned(); i++ {
		// Advanced again each time: the retry's timer may be set only
		// after the worker counts as waiting (fileWork.timer reads the
		// time first), and would then be due a delay later.
		e.clock.Advance(rollRetryDelay)
		time.Sleep(time.Millisecond) // the retry runs on a worker
	}
	if old.isPinned() {
		t.Fatal("rolled segment still pinned after the retry")
	}
	if _, err := e.fs.Stat(l.dir + "/" + snapshotName(old.base+1)); err != nil {
		t.Fatalf("producer snapshot not written by the retry: %v", err)
	}
}

// TestRetiredSegmentNeverHalfRenamed: a reader that opens a segment's
// files while retention retires it sees the segment whole, under its old
// names or its .deleted ones, never a .log already renamed (ENOENT).
func TestRetiredSegmentNeverHalfRenamed(t *testing.T) {
	e := newEnv(t)
	e.openSegments = 1
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "14", "file.delete.delay.ms": "60000"}).Partitions[0]
	for i := range 4 {
		mustAppend(t, l, mkBatch(t, 1, 1000+int64(i), 10))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	segs := *l.segs.Load()
	// The rolls' flushes run on workers; rollWG is done once each has
	// unpinned its segment and put it in the idle cache.
	l.rollWG.Wait()
	seg := segs[0]
	for i := 1; i < 3; i++ { // push segment 0 out of the one-slot cache
		rel, err := (*l.segs.Load())[i].use()
		if err != nil {
			t.Fatal(err)
		}
		rel()
	}
	seg.closeMu.Lock()
	open := seg.filesOpen
	seg.closeMu.Unlock()
	if open {
		t.Fatal("segment 0's files are still open: the test needs them closed")
	}
	got := make(chan error, 1)
	var once sync.Once
	e.fs.mu.Lock()
	e.fs.onRename = func(old string) {
		if !strings.HasSuffix(old, seg.path(logSuffix)) {
			return
		}
		once.Do(func() {
			go func() {
				rel, err := seg.use()
				if err == nil {
					rel()
				}
				got <- err
			}()
			// Give the reader its chance between the renames.
			select {
			case err := <-got:
				got <- err
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
	e.fs.mu.Unlock()
	if _, err := l.DeleteSegmentsBefore(1); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("a reader of the segment being retired: %v", err)
	}
}

// TestListedSegmentTimestampsRace (run with -race): a segment start-up
// only listed gets its largest timestamp when a reader first opens it,
// under the segment's closeMu, while Segments and ListOffsets copy the
// timestamps under Log.mu; the two must not race. Here a ListOffsets by
// timestamp cannot load segments 0 and 1 (out of descriptors) and a
// reader loads segment 0 meanwhile.
func TestListedSegmentTimestampsRace(t *testing.T) {
	e := newEnv(t)
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "14"}).Partitions[0]
	for i := range 3 {
		mustAppend(t, l, mkBatch(t, 1, 1000+int64(i), 10))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = e.open()
	defer s.Close()
	l, _ = s.Log("t", 0)
	seg0, seg1 := segmentFileName(0, logSuffix), segmentFileName(1, logSuffix)
	var once sync.Once
	var failed atomic.Bool
	done := make(chan struct{})
	e.fs.setOnOpen(func(name string) error {
		switch {
		case strings.HasSuffix(name, seg0) && failed.CompareAndSwap(false, true):
			return syscall.EMFILE // Segments' own load of segment 0
		case strings.HasSuffix(name, seg1):
			once.Do(func() {
				go func() {
					defer close(done)
					if _, err := l.Read(0, 100, true); err != nil {
						t.Error(err)
					}
				}()
				// No synchronization on purpose: the reader loads
				// segment 0 meanwhile, ordered with what follows only
				// by the locks under test.
				time.Sleep(50 * time.Millisecond)
			})
			return syscall.EMFILE // nor segment 1: no lock after the sleep
		}
		return nil
	})
	_, _, _, _ = l.OffsetForTimestamp(5000)
	<-done
	e.fs.setOnOpen(nil)
	if got := l.Segments()[0].MaxTimestamp; got != 1000 {
		t.Fatalf("segment 0's max timestamp %d, want 1000", got)
	}
}
