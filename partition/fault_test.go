package partition

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// fullFaultSweep: KCOMPATD_FULL_SWEEP=1 (make soak) strikes every
// operation; otherwise the sweeps sample, to stay fast under -race.
func fullFaultSweep() bool { return os.Getenv("KCOMPATD_FULL_SWEEP") != "" }

// sweepStride is the step between the fault points a sweep visits: 1 in
// the full sweep, else about n points in all (n small for -race runs).
func sweepStride(total, n int) int {
	if fullFaultSweep() || total <= n {
		return 1
	}
	return (total + n - 1) / n
}

type ackedBatch struct {
	base, last int64
	data       []byte
}

// faultWorkload is one run of the storage workload on a file system with
// an armed fault, and what it observed.
type faultWorkload struct {
	t     *testing.T
	fs    *memfs.FS
	ov    map[string]string
	s     *Store
	acked map[string][]ackedBatch // topic -> acknowledged batches of partition 0
	rp    map[string]int64        // topic -> largest recovery point seen
	start map[string]int64        // topic -> largest log start offset asked for
	// firstErr is the first error the workload saw; after it, every probe
	// of every partition must answer ErrStorage and nothing is acked.
	firstErr error
	openErr  error
	closeErr error
	ts       int64
}

func (w *faultWorkload) note(what string, err error) bool {
	if err == nil {
		w.sample()
		return false
	}
	if w.firstErr == nil {
		w.firstErr = fmt.Errorf("%s: %w", what, err)
	}
	return true
}

// sample records the recovery points: every offset below one is fsynced.
func (w *faultWorkload) sample() {
	for _, name := range []string{"a", "b"} {
		if tp := w.s.Topic(name); tp != nil {
			w.rp[name] = max(w.rp[name], tp.Partitions[0].RecoveryPoint())
		}
	}
}

func (w *faultWorkload) append(topic string) error {
	tp := w.s.Topic(topic)
	if tp == nil {
		return fmt.Errorf("topic %s missing", topic)
	}
	w.ts++
	b := mkBatch(w.t, 2, w.ts, 40)
	r, err := tp.Partitions[0].Append(b)
	if err != nil {
		return err
	}
	h := recordbatch.Header(b)
	if r.BaseOffset != h.BaseOffset() {
		w.t.Fatalf("acked base %d, batch says %d", r.BaseOffset, h.BaseOffset())
	}
	w.acked[topic] = append(w.acked[topic], ackedBatch{r.BaseOffset, h.LastOffset(), b})
	return nil
}

// run is the workload: two topics, appends across segment rolls with index
// entries, checkpoints, a log start offset move and a segment deletion, a
// topic created and deleted, then a clean close. It stops at the first
// error, then checks that the store is offline: every partition answers
// ErrStorage and acknowledges nothing.
func (w *faultWorkload) run() {
	w.acked, w.rp, w.start = map[string][]ackedBatch{}, map[string]int64{}, map[string]int64{}
	s, err := openMem(w.t, w.fs)
	if err != nil {
		w.openErr = err
		return
	}
	w.s = s
	steps := []struct {
		what string
		do   func() error
	}{
		{"create a", func() error { _, err := s.CreateTopic("a", 1, w.ov, false); return err }},
		{"create b", func() error { _, err := s.CreateTopic("b", 1, w.ov, false); return err }},
	}
	for i := 0; i < 8; i++ {
		steps = append(steps, struct {
			what string
			do   func() error
		}{fmt.Sprintf("append a %d", i), func() error { return w.append("a") }})
		if i%3 == 0 {
			steps = append(steps, struct {
				what string
				do   func() error
			}{fmt.Sprintf("append b %d", i), func() error { return w.append("b") }})
		}
	}
	steps = append(steps, []struct {
		what string
		do   func() error
	}{
		{"checkpoints", s.WriteCheckpoints},
		{"advance log start", func() error {
			l := s.Topic("a").Partitions[0]
			target := w.acked["a"][1].base + 1 // inside a batch
			w.start["a"] = target
			_, err := l.AdvanceLogStartOffset(target)
			return err
		}},
		{"delete segments", func() error {
			l := s.Topic("a").Partitions[0]
			segs := l.Segments()
			if len(segs) < 3 {
				w.t.Fatalf("workload made %d segments, want >= 3", len(segs))
			}
			w.start["a"] = max(w.start["a"], segs[1].BaseOffset)
			_, err := l.DeleteSegmentsBefore(segs[1].BaseOffset)
			return err
		}},
		{"checkpoints", s.WriteCheckpoints},
		{"create c", func() error {
			tp, err := s.CreateTopic("c", 2, w.ov, false)
			if err != nil {
				return err
			}
			_, err = tp.Partitions[1].Append(mkBatch(w.t, 1, 1, 10))
			return err
		}},
		{"delete c", func() error { return s.DeleteTopic("c") }},
		{"append a", func() error { return w.append("a") }},
		{"append b", func() error { return w.append("b") }},
		{"append a", func() error { return w.append("a") }},
	}...)
	for _, st := range steps {
		if w.note(st.what, st.do()) {
			break
		}
	}
	if w.firstErr == nil && w.fs.Fired() && !w.fs.Crashed() {
		// A fault in a background flush shows at the next append at the
		// latest; the workload has none left, so probe with one.
		w.note("probe append", w.append("a"))
	}
	if w.firstErr != nil {
		w.checkOffline()
	}
	w.closeErr = s.Close()
}

// checkOffline: after an I/O error the whole data dir is offline.
func (w *faultWorkload) checkOffline() {
	t, s := w.t, w.s
	if !w.fs.Fired() {
		t.Fatalf("error without a fault: %v", w.firstErr)
	}
	if !errors.Is(w.firstErr, ErrStorage) && !errors.Is(w.firstErr, memfs.ErrCrashed) {
		t.Fatalf("first error %v is not ErrStorage", w.firstErr)
	}
	if err := s.Offline(); !errors.Is(err, ErrStorage) {
		t.Fatalf("after %v the store is not offline: %v", w.firstErr, err)
	}
	for _, name := range []string{"a", "b"} {
		tp := s.Topic(name)
		if tp == nil {
			continue
		}
		l := tp.Partitions[0]
		if r, err := l.Append(mkBatch(t, 1, 1, 1)); !errors.Is(err, ErrStorage) {
			t.Fatalf("after %v: Append to %s = %+v, %v; want ErrStorage", w.firstErr, name, r, err)
		}
		if _, err := l.Read(l.Offsets().LogStartOffset, 1<<20, true); !errors.Is(err, ErrStorage) {
			t.Fatalf("after %v: Read of %s = %v; want ErrStorage", w.firstErr, name, err)
		}
	}
	if _, err := s.CreateTopic("z", 1, nil, false); !errors.Is(err, ErrStorage) {
		t.Fatalf("after %v: CreateTopic = %v; want ErrStorage", w.firstErr, err)
	}
}

// verifyRestart opens the image a fault left and checks it is a valid
// log holding what it must: every batch CRC-valid, offsets contiguous,
// each batch found through the offset index at its first and last offset,
// appends taken at the log end offset, and every acknowledged batch that
// must survive present with its bytes.
//
// With holesAbove, offsets from the topic's recovery point on may have
// holes: unflushed data lost under segments whose directory entries were
// durable (a directory fsync for one purpose makes every entry in it
// durable; Kafka's logs have the same holes after a power cut, and after a
// failed fsync dropped cached pages).
func (w *faultWorkload) verifyRestart(img *memfs.FS, holesAbove bool, mustSurvive func(topic string, b ackedBatch) bool) error {
	s, err := openMem(w.t, img)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer s.Close()
	for _, name := range []string{"a", "b"} {
		var need []ackedBatch
		for _, b := range w.acked[name] {
			if b.base >= w.start[name] && mustSurvive(name, b) {
				need = append(need, b)
			}
		}
		tp := s.Topic(name)
		if tp == nil {
			if len(need) > 0 {
				return fmt.Errorf("topic %s lost with %d batches that must survive", name, len(need))
			}
			continue
		}
		l := tp.Partitions[0]
		o := l.Offsets()
		if o.HighWatermark != o.LogEndOffset {
			return fmt.Errorf("%s: recovered HW %d != LEO %d", name, o.HighWatermark, o.LogEndOffset)
		}
		if o.LogStartOffset > w.start[name] {
			return fmt.Errorf("%s: log start offset %d past the %d asked for", name, o.LogStartOffset, w.start[name])
		}
		holeFrom := int64(1 << 62)
		if holesAbove {
			holeFrom = w.rp[name]
		}
		got := map[int64][]byte{}
		next := int64(-1)
		for off := o.LogStartOffset; off < o.LogEndOffset; {
			r, err := l.Read(off, 1<<20, true)
			if err != nil {
				return fmt.Errorf("%s: Read(%d): %w", name, off, err)
			}
			if len(r.Records) == 0 {
				if off >= holeFrom {
					next = -1
					break
				}
				return fmt.Errorf("%s: Read(%d) empty below LEO %d", name, off, o.LogEndOffset)
			}
			for rec := r.Records; len(rec) > 0; {
				h, err := recordbatch.ParseHeader(rec)
				if err != nil || h.Size() > len(rec) {
					return fmt.Errorf("%s: batch at %d: %v", name, off, err)
				}
				if err := h.CheckCRC(); err != nil {
					return fmt.Errorf("%s: batch %d: %w", name, h.BaseOffset(), err)
				}
				if next >= 0 && h.BaseOffset() != next && next < holeFrom {
					return fmt.Errorf("%s: batch at %d follows one ending at %d", name, h.BaseOffset(), next-1)
				}
				next = h.LastOffset() + 1
				got[h.BaseOffset()] = append([]byte(nil), rec[:h.Size()]...)
				rec = rec[h.Size():]
			}
			off = next
		}
		if next >= 0 && next != o.LogEndOffset {
			return fmt.Errorf("%s: batches end at %d, LEO %d", name, next, o.LogEndOffset)
		}
		for base, data := range got {
			last := recordbatch.Header(data).LastOffset()
			for _, off := range []int64{base, last} {
				if off < o.LogStartOffset {
					continue
				}
				r, err := l.Read(off, 1, true)
				if err != nil || len(r.Records) == 0 || recordbatch.Header(r.Records).BaseOffset() != base {
					return fmt.Errorf("%s: index lookup of %d does not find batch %d (%v)", name, off, base, err)
				}
			}
		}
		for _, b := range need {
			if !bytes.Equal(got[b.base], b.data) {
				return fmt.Errorf("%s: acknowledged batch %d-%d lost or changed (LEO %d)", name, b.base, b.last, o.LogEndOffset)
			}
		}
		if r, err := l.Append(mkBatch(w.t, 1, 1, 1)); err != nil || r.BaseOffset != o.LogEndOffset {
			return fmt.Errorf("%s: append after restart: %+v %v, want base %d", name, r, err, o.LogEndOffset)
		}
	}
	if s.Topic("z") != nil {
		return errors.New("topic created while offline exists")
	}
	return s.Close()
}

// TestFaultAtEveryOperation strikes the workload with each fault kind at
// the k-th operation it can strike, for every k (sampled unless
// KCOMPATD_FULL_SWEEP is set), under both flush policies, and checks:
// the store goes offline and acknowledges nothing more; a restart on what
// a killed process leaves (page cache kept) and on what a power cut leaves
// (only synced data) opens a valid log; with flush.messages=1 every
// acknowledged batch survives both; with the default policy every batch
// below the recovery point survives the power cut, and every acknowledged
// batch survives the kill unless an fsync failed (which may drop cached
// data, so Kafka's guarantee stops at the recovery point).
func TestFaultAtEveryOperation(t *testing.T) {
	for _, pol := range []struct {
		name    string
		ov      map[string]string
		durable bool
	}{
		{"flush.messages=1", map[string]string{"flush.messages": "1", "internal.segment.bytes": "300", "index.interval.bytes": "50"}, true},
		{"default flush policy", map[string]string{"internal.segment.bytes": "300", "index.interval.bytes": "50"}, false},
	} {
		for _, kind := range []memfs.FaultKind{memfs.Crash, memfs.ShortWrite, memfs.SyncError, memfs.NoSpace} {
			t.Run(pol.name+"/"+kind.String(), func(t *testing.T) {
				t.Parallel()
				sweepFaults(t, kind, pol.ov, pol.durable)
			})
		}
	}
}

func sweepFaults(t *testing.T, kind memfs.FaultKind, ov map[string]string, durable bool) {
	// Count the operations the fault can strike in an undisturbed run.
	total := 0
	{
		fs := memfs.New()
		fs.Inject(&memfs.Fault{Kind: kind, At: 1 << 30})
		w := &faultWorkload{t: t, fs: fs, ov: ov}
		w.run()
		if w.firstErr != nil || w.closeErr != nil {
			t.Fatalf("undisturbed run: %v %v", w.firstErr, w.closeErr)
		}
		total = fs.Applicable()
	}
	n := 120
	if raceEnabled {
		n = 40
	}
	stride := sweepStride(total, n)
	struck := 0
	for k := 0; ; k += stride {
		if k > 4*total+100 {
			t.Fatalf("sweep did not end (k=%d, %d operations)", k, total)
		}
		fs := memfs.New()
		fs.Inject(&memfs.Fault{Kind: kind, At: k})
		w := &faultWorkload{t: t, fs: fs, ov: ov}
		w.run()
		if !fs.Fired() {
			break
		}
		struck++
		if w.openErr == nil && w.closeErr == nil {
			t.Fatalf("k=%d: %v struck %s but Close reported nothing (first error %v)", k, kind, fs.Struck(), w.firstErr)
		}
		// A killed process leaves the page cache, unless a failed fsync
		// dropped pages of it; a power cut keeps what was fsynced.
		killHoles := kind == memfs.SyncError && !durable
		kill := func(topic string, b ackedBatch) bool { return !killHoles || b.last < w.rp[topic] }
		power := func(topic string, b ackedBatch) bool { return durable || b.last < w.rp[topic] }
		if err := w.verifyRestart(fs.Clone(), killHoles, kill); err != nil {
			t.Fatalf("k=%d, %v struck %s, restart after kill: %v (workload stopped at %v)", k, kind, fs.Struck(), err, w.firstErr)
		}
		if err := w.verifyRestart(fs.CrashClone(), !durable, power); err != nil {
			t.Fatalf("k=%d, %v struck %s, restart after power cut: %v (workload stopped at %v)", k, kind, fs.Struck(), err, w.firstErr)
		}
	}
	t.Logf("%v: struck %d of %d operations", kind, struck, total)
}
