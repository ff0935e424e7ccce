package partition

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// emfileFor makes every open of a path containing substr fail with EMFILE,
// as a process at its descriptor limit sees it.
func emfileFor(substr string) func(string) error {
	return func(name string) error {
		if strings.Contains(name, substr) {
			return syscall.EMFILE
		}
		return nil
	}
}

// TestEMFILEFailsOnlyTheRequest: running out of descriptors while creating
// a topic or rolling a segment fails that request with ErrResourceLimit,
// leaves nothing half created, and keeps the data dir online: the other
// partitions keep serving and the same request succeeds once descriptors
// are free again.
func TestEMFILEFailsOnlyTheRequest(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "live", 1, map[string]string{"internal.segment.bytes": "200"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 10))

	e.fs.setOnOpen(emfileFor("many-3"))
	if _, err := s.CreateTopic("many", 8, nil, false); !errors.Is(err, ErrResourceLimit) || errors.Is(err, ErrStorage) {
		t.Fatalf("CreateTopic at EMFILE = %v, want ErrResourceLimit", err)
	}
	e.fs.setOnOpen(nil)
	if err := s.Offline(); err != nil {
		t.Fatalf("data dir offline after EMFILE: %v", err)
	}
	if s.Topic("many") != nil || len(segFiles(t, e.dir, "many-0")) != 0 {
		t.Fatal("the failed topic was half created")
	}
	mustAppend(t, l, mkBatch(t, 1, 2, 10))
	mustCreate(t, s, "many", 8, nil)

	// A roll that cannot open the new segment fails that append only.
	e.fs.setOnOpen(emfileFor("live-0"))
	if _, err := l.Append(mkBatch(t, 1, 3, 200)); !errors.Is(err, ErrResourceLimit) {
		t.Fatalf("Append needing a roll at EMFILE = %v, want ErrResourceLimit", err)
	}
	e.fs.setOnOpen(nil)
	if err := s.Offline(); err != nil {
		t.Fatalf("data dir offline after EMFILE on roll: %v", err)
	}
	mustAppend(t, l, mkBatch(t, 1, 3, 200))
	if got := len(readAll(t, l)); got != 3 {
		t.Fatalf("read %d batches, want 3", got)
	}
}

// TestSegmentFilesOpenLazily: start-up opens only the active segment's
// files (after a clean shutdown, and after a crash only the segments past
// the recovery point too), reading every segment keeps the open files
// within the cache's bound, idle segments are closed by the sweep, and a
// descriptor limit hit while opening an idle segment for a read fails
// that read alone.
func TestSegmentFilesOpenLazily(t *testing.T) {
	const nsegs, cacheSize = 60, 4
	e := newEnv(t)
	e.openSegments = cacheSize
	// The checkpoint loop (which also sweeps idle segments) must not run
	// when the test advances the clock: it opens checkpoint files.
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "14"}).Partitions[0]
	for i := 0; i < nsegs; i++ {
		mustAppend(t, l, mkBatch(t, 1, 1000+int64(i), 10))
	}
	if n := len(*l.segs.Load()); n != nsegs {
		t.Fatalf("%d segments, want %d", n, nsegs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := e.fs.open.Load(); n != 0 {
		t.Fatalf("%d files open after Close", n)
	}

	opened := e.fs.opened.Load()
	s = e.open()
	defer func() { s.Close() }()
	l, _ = s.Log("t", 0)
	atStart := e.fs.open.Load()
	t.Logf("after a clean start with %d segments: %d files open, %d opened by start-up", nsegs, atStart, e.fs.opened.Load()-opened)
	if atStart != 3 {
		t.Fatalf("%d files open after start-up, want 3 (the active segment's)", atStart)
	}
	// Out of descriptors, retention's view cannot load the listed
	// segments' time indexes: they count as new, so none expires by an
	// unknown age.
	e.fs.setOnOpen(emfileFor(logSuffix))
	for _, si := range l.Segments()[:nsegs-1] {
		if si.LargestTimestamp != e.clock.Now().UnixMilli() {
			t.Fatalf("segment %d unreadable: largest timestamp %d, want now", si.BaseOffset, si.LargestTimestamp)
		}
	}
	e.fs.setOnOpen(nil)
	if err := s.Offline(); err != nil {
		t.Fatal(err)
	}
	maxOpen := int64(3 + 3*cacheSize)
	got := 0
	off := int64(0)
	for {
		r, err := l.Read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(r.Records) == 0 {
			break
		}
		hs := batchesIn(t, r.Records)
		got += len(hs)
		off = hs[len(hs)-1].LastOffset() + 1
		if n := e.fs.open.Load(); n > maxOpen {
			t.Fatalf("%d files open while reading offset %d, bound %d", n, off, maxOpen)
		}
	}
	if got != nsegs {
		t.Fatalf("read %d batches, want %d", got, nsegs)
	}
	t.Logf("after reading every segment: %d files open (bound %d)", e.fs.open.Load(), maxOpen)
	// Retention's and ListOffsets' view loads every segment's largest
	// timestamp, within the same bound.
	for i, si := range l.Segments() {
		if si.MaxTimestamp != 1000+int64(i) {
			t.Fatalf("segment %d: max timestamp %d, want %d", i, si.MaxTimestamp, 1000+i)
		}
	}
	if n := e.fs.open.Load(); n > maxOpen {
		t.Fatalf("%d files open after Segments, bound %d", n, maxOpen)
	}
	if o, _, ok, err := l.OffsetForTimestamp(1007); err != nil || !ok || o != 7 {
		t.Fatalf("OffsetForTimestamp(1007) = %d %v %v", o, ok, err)
	}
	e.clock.Advance(segmentIdleMs * 2 * 1e6)
	s.closeIdleSegments()
	// Nothing was appended since the start: the active segment is idle
	// too, and closed with the others.
	if n := e.fs.open.Load(); n != 0 {
		t.Fatalf("%d files open after the idle sweep, want 0", n)
	}

	// EMFILE while a read opens an idle segment: that read fails, the
	// data dir stays online, the next read succeeds.
	e.fs.setOnOpen(emfileFor(segmentFileName(0, logSuffix)))
	if _, err := l.Read(0, 1<<20, true); !errors.Is(err, ErrResourceLimit) {
		t.Fatalf("Read at EMFILE = %v, want ErrResourceLimit", err)
	}
	e.fs.setOnOpen(nil)
	if err := s.Offline(); err != nil {
		t.Fatalf("data dir offline after EMFILE on read: %v", err)
	}
	if r, err := l.Read(0, 1<<20, true); err != nil || len(r.Records) == 0 {
		t.Fatalf("Read after EMFILE: %v", err)
	}

	// After a crash, the segments past the recovery point are opened and
	// recovered, those below it only listed.
	for i := 0; i < 5; i++ {
		mustAppend(t, l, mkBatch(t, 1, int64(100+i), 10))
	}
	// The recovery point is the log end offset once flushed; the
	// checkpoint records it (the rolls' background flushes cannot move it
	// further).
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	s.abandon()
	opened = e.fs.opened.Load()
	s = e.open()
	l, _ = s.Log("t", 0)
	t.Logf("after a crash: %d files open, %d opened by start-up", e.fs.open.Load(), e.fs.opened.Load()-opened)
	if n := e.fs.open.Load(); n != 3 {
		t.Fatalf("%d files open after a crash with every segment below the recovery point, want 3", n)
	}
	if got := len(readAll(t, l)); got != nsegs+5 {
		t.Fatalf("read %d batches after the crash, want %d", got, nsegs+5)
	}
}

// TestPartitionCountsRefusedUpFront: a CreateTopics or CreatePartitions
// asking for more partitions than one request may (Kafka's 10000) or than
// the broker's descriptor limit can hold is refused with
// ErrTooManyPartitions (POLICY_VIOLATION) and creates nothing; a large
// create costs a constant number of fsyncs, not some per partition.
func TestPartitionCountsRefusedUpFront(t *testing.T) {
	e := newEnv(t)
	e.openSegments = 4
	// Budget: (34/2 - 3*4) * 8 / 4 = 10 partitions.
	e.maxOpenFiles = 34
	s := e.open()
	defer s.Close()
	noDirs := func(prefix string) {
		t.Helper()
		if m := segFiles(t, e.dir, ""); len(m) > 0 {
			for _, p := range m {
				if strings.HasPrefix(filepath.Base(p), prefix) {
					t.Fatalf("%s left behind", p)
				}
			}
		}
	}
	if _, err := s.CreateTopic("huge", 65536, nil, false); !errors.Is(err, ErrTooManyPartitions) || err.Error() != TooManyPartitionsCreateTopics {
		t.Fatalf("CreateTopic(65536) = %v", err)
	}
	noDirs("huge-")
	mustCreate(t, s, "six", 6, nil)
	if _, err := s.CreateTopic("five", 5, nil, false); !errors.Is(err, ErrTooManyPartitions) {
		t.Fatalf("CreateTopic past the descriptor budget = %v", err)
	}
	if _, err := s.CreateTopic("five", 5, nil, true); !errors.Is(err, ErrTooManyPartitions) {
		t.Fatalf("validate-only CreateTopic past the budget = %v", err)
	}
	noDirs("five-")
	// The coordinators' topics are exempt: groups must work on a low limit.
	mustCreate(t, s, "__consumer_offsets", 50, map[string]string{"cleanup.policy": "compact"})
	if _, err := s.CreatePartitions("six", 11, false); !errors.Is(err, ErrTooManyPartitions) {
		t.Fatalf("CreatePartitions past the budget = %v", err)
	}
	if _, err := s.CreatePartitions("six", 6+MaxPartitionsPerRequest+1, false); !errors.Is(err, ErrTooManyPartitions) || err.Error() != TooManyPartitionsCreatePartitions {
		t.Fatalf("CreatePartitions of 10001 = %v", err)
	}
	noDirs("six-6")
	if got := len(s.Topic("six").Partitions); got != 6 {
		t.Fatalf("six has %d partitions", got)
	}
	syncs := e.fs.fileSyncs.Load() + e.fs.dirSyncs.Load()
	mustCreate(t, s, "four", 4, nil)
	if n := e.fs.fileSyncs.Load() + e.fs.dirSyncs.Load() - syncs; n > 3 {
		t.Fatalf("creating 4 partitions took %d fsyncs, want at most 3 (data dir, catalog file and its dir)", n)
	}
}

// TestSegmentFilesConcurrentReaders: readers of different segments, with
// a cache of one idle segment, open and close each other's files all the
// time; no read fails and no file is closed under its reader (the race
// detector watches the reference counts).
func TestSegmentFilesConcurrentReaders(t *testing.T) {
	const nsegs, readers, rounds = 20, 4, 30
	e := newEnv(t)
	e.openSegments = 1
	s := e.open()
	l := mustCreate(t, s, "t", 1, map[string]string{"internal.segment.bytes": "14"}).Partitions[0]
	for i := 0; i < nsegs; i++ {
		mustAppend(t, l, mkBatch(t, 1, 1000+int64(i), 10))
	}
	s.Close()
	s = e.open()
	defer s.Close()
	l, _ = s.Log("t", 0)
	errs := make(chan error, readers)
	for r := 0; r < readers; r++ {
		go func() {
			for i := 0; i < rounds; i++ {
				off := int64((i*7 + r*5) % nsegs)
				res, err := l.Read(off, 1<<20, true)
				if err == nil && len(res.Records) == 0 {
					err = errors.New("empty read")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for r := 0; r < readers; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := e.fs.open.Load(); n > 3+3*1 {
		t.Fatalf("%d files open after the readers, bound %d", n, 6)
	}
}
