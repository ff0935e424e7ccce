package partition

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Memory bounded by configuration, not by data (issue 15): these tests
// count allocations and opened files, never time.

// TestAppendAllocsIndependentOfRecords: appending a batch allocates the
// same whether it holds one record or a thousand (nothing per record on
// the append path: the batch is validated and written as it is).
func TestAppendAllocsIndependentOfRecords(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	s := newEnv(t).open()
	defer s.Close()
	allocs := map[int]float64{}
	for _, n := range []int{1, 1000} {
		l := mustCreate(t, s, fmt.Sprintf("t%d", n), 1, nil).Partitions[0]
		batch := mkBatch(t, n, 1, 100)
		mustAppend(t, l, batch) // the first append sets up what every later one reuses
		allocs[n] = testing.AllocsPerRun(100, func() {
			if _, err := l.Append(batch); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("allocations per append: %v (by records per batch)", allocs)
	if allocs[1000] > allocs[1] {
		t.Fatalf("an append of 1000 records allocates %v times, of one record %v: something is allocated per record", allocs[1000], allocs[1])
	}
}

// TestIdempotentAppendAllocs: a batch with a producer id allocates no more
// than one without (the producer state's entry is reused, not copied per
// append), here nothing at all.
func TestIdempotentAppendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	s := newEnv(t).open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	seq := int32(0)
	batch := pidBatch(t, 5, 0, seq, 10, false)
	appendNext := func() {
		binary.BigEndian.PutUint32(batch[53:], uint32(seq)) // baseSequence; Append does not check the CRC (Produce did)
		seq += 10
		if _, err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	appendNext() // the producer's first batch makes its entry
	if n := testing.AllocsPerRun(100, appendNext); n != 0 {
		t.Fatalf("%v allocations per idempotent append", n)
	}
}

// TestReadAllocsIndependentOfBytes: a read into a caller's buffer (as
// Fetch reads, recycling buffers) allocates the same for 16 KiB as for
// 1 MiB of batches: nothing per batch or per byte on the read path.
func TestReadAllocsIndependentOfBytes(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	s := newEnv(t).open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	batch := mkBatch(t, 16, 1, 1000) // ~16 KiB
	for range 80 {
		mustAppend(t, l, batch)
	}
	buf := make([]byte, 2<<20)
	alloc := func(n int) []byte { return buf[:n] }
	allocs := map[int32]float64{}
	for _, max := range []int32{16 << 10, 1 << 20} {
		var got int
		allocs[max] = testing.AllocsPerRun(50, func() {
			r, err := l.ReadWith(0, max, true, ReadUncommitted, alloc)
			if err != nil {
				t.Fatal(err)
			}
			got = len(r.Records)
		})
		if got < int(max)/2 {
			t.Fatalf("read of up to %d bytes returned %d", max, got)
		}
	}
	t.Logf("allocations per read: %v (by max bytes)", allocs)
	if allocs[1<<20] > allocs[16<<10] {
		t.Fatalf("a 1 MiB read allocates %v times, a 16 KiB read %v: something is allocated per batch", allocs[1<<20], allocs[16<<10])
	}
}

// TestManyPartitionsOpenNoIndexUntilRead: a store of many partitions of
// many segments opens, at start-up, only each partition's active
// segment's index files; the other segments' indexes are opened (and read)
// only when a read needs them, and then only the segment read.
func TestManyPartitionsOpenNoIndexUntilRead(t *testing.T) {
	const partitions, segsEach = 40, 6
	e := newEnv(t)
	e.ckptInterval = 1000 * time.Hour
	s := e.open()
	tp := mustCreate(t, s, "t", partitions, map[string]string{"internal.segment.bytes": "14"})
	for _, l := range tp.Partitions {
		for i := range segsEach {
			mustAppend(t, l, mkBatch(t, 1, 1000+int64(i), 10))
		}
	}
	active := map[string]bool{} // partition dir -> active segment file stem
	for _, l := range tp.Partitions {
		segs := *l.segs.Load()
		if len(segs) != segsEach {
			t.Fatalf("%d segments, want %d", len(segs), segsEach)
		}
		active[segs[len(segs)-1].path("")] = true
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var opened []string // index files opened
	e.fs.setOnOpen(func(name string) error {
		if strings.HasSuffix(name, indexSuffix) || strings.HasSuffix(name, timeIndexSuffix) {
			mu.Lock()
			opened = append(opened, name)
			mu.Unlock()
		}
		return nil
	})
	s = e.open()
	defer s.Close()
	mu.Lock()
	for _, name := range opened {
		if !active[strings.TrimSuffix(strings.TrimSuffix(name, indexSuffix), timeIndexSuffix)] {
			t.Errorf("start-up opened %s, an inactive segment's index", filepath.Base(name))
		}
	}
	if want := 2 * partitions; len(opened) != want {
		t.Errorf("start-up opened %d index files, want %d (the active segments')", len(opened), want)
	}
	opened = nil
	mu.Unlock()

	// A read of one partition's first segment opens its indexes alone.
	l, _ := s.Log("t", 7)
	first := (*l.segs.Load())[0]
	r, err := l.Read(0, 1<<20, true)
	if err != nil || len(r.Records) == 0 {
		t.Fatalf("Read: %d bytes, %v", len(r.Records), err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range opened {
		if filepath.Dir(name) != filepath.Dir(first.path("")) || !strings.HasPrefix(name, first.path("")) {
			t.Errorf("a read of %s-7 at offset 0 opened %s", "t", name)
		}
	}
	if len(opened) == 0 {
		t.Errorf("a read of the first segment opened no index (it reads them: lazyLoadLocked)")
	}
}
