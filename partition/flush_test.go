package partition

import (
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFlushPolicy: by default no fsync happens on append (the OS writes
// back); with flush.messages=1 the batch is fsynced before Append returns.
func TestFlushPolicy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		perAppend int64
	}{
		{"default: no fsync", nil, 0},
		{"flush.messages=1", map[string]string{"flush.messages": "1"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open()
			defer s.Close()
			l := mustCreate(t, s, "t", 1, tc.overrides).Partitions[0]
			mustAppend(t, l, mkBatch(t, 1, 1, 1)) // the first append writes leader-epoch-checkpoint
			var logSyncs int64
			var mu sync.Mutex
			e.fs.setHooks(func(name string) error {
				if filepath.Ext(name) == ".log" {
					mu.Lock()
					logSyncs++
					mu.Unlock()
				}
				return nil
			}, nil)
			for i := 1; i <= 5; i++ {
				mustAppend(t, l, mkBatch(t, 1, 1, 1))
				mu.Lock()
				got := logSyncs
				mu.Unlock()
				if got != int64(i)*tc.perAppend {
					t.Fatalf("after append %d: %d fsyncs of the segment, want %d", i, got, int64(i)*tc.perAppend)
				}
				if tc.perAppend > 0 && l.RecoveryPoint() != int64(i+1) {
					t.Fatalf("recovery point %d after append %d", l.RecoveryPoint(), i)
				}
			}
		})
	}
}

// TestFlushMessagesN: flush.messages=3 fsyncs once every third record.
func TestFlushMessagesN(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "3"}).Partitions[0]
	for i := 1; i <= 7; i++ {
		mustAppend(t, l, mkBatch(t, 1, 1, 1))
		want := int64(i / 3 * 3)
		if rp := l.RecoveryPoint(); rp != want {
			t.Fatalf("after %d records: recovery point %d, want %d", i, rp, want)
		}
	}
}

// TestGroupCommit: appenders that arrive while an fsync runs are all
// covered by the next single fsync.
func TestGroupCommit(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 1))

	var mu sync.Mutex
	syncs := 0
	release := make(chan struct{})
	first := make(chan struct{})
	e.fs.setHooks(func(name string) error {
		if filepath.Ext(name) != ".log" {
			return nil
		}
		mu.Lock()
		syncs++
		n := syncs
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
		return nil
	}, nil)

	const waiters = 8
	var wg sync.WaitGroup
	errs := make(chan error, waiters+1)
	offsets := make(chan int64, waiters+1)
	appendOne := func() {
		defer wg.Done()
		r, err := l.Append(mkBatch(t, 1, 1, 1))
		errs <- err
		offsets <- r.BaseOffset
	}
	wg.Add(1)
	go appendOne()
	<-first // the first fsync is running and blocked
	wg.Add(waiters)
	for i := 0; i < waiters; i++ {
		go appendOne()
	}
	// Wait until every waiter has written its batch (the log end offset
	// says so) and is queued behind the running fsync.
	waitForLEO(t, l, 2+waiters)
	close(release)
	wg.Wait()
	close(errs)
	close(offsets)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int64]bool{}
	for o := range offsets {
		seen[o] = true
	}
	if len(seen) != waiters+1 {
		t.Fatalf("offsets %v", seen)
	}
	mu.Lock()
	defer mu.Unlock()
	if syncs != 2 {
		t.Fatalf("%d fsyncs for %d appends, want 2", syncs, waiters+1)
	}
	if o := l.Offsets(); o.HighWatermark != 2+waiters || l.RecoveryPoint() != 2+waiters {
		t.Fatalf("offsets %+v, recovery point %d", o, l.RecoveryPoint())
	}
}

// TestConcurrentAppendRead runs appenders and readers together under
// -race; every batch comes back exactly once, in order.
func TestConcurrentAppendRead(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1", "internal.segment.bytes": "2000", "index.interval.bytes": "200"}).Partitions[0]
	const appenders, each = 4, 25
	var wg sync.WaitGroup
	for a := 0; a < appenders; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := l.Append(mkBatch(t, 2, int64(i), 40)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		off := int64(0)
		for off < appenders*each*2 {
			w := l.Wait()
			r, err := l.Read(off, 1000, true)
			if err != nil {
				t.Error(err)
				return
			}
			if len(r.Records) == 0 {
				<-w
				continue
			}
			for _, h := range batchesIn(t, r.Records) {
				if h.BaseOffset() != off {
					t.Errorf("batch at %d, want %d", h.BaseOffset(), off)
					return
				}
				off = h.LastOffset() + 1
			}
		}
	}()
	wg.Wait()
	<-done
}

// TestFlushMs: a log whose flush.ms has passed is fsynced by the
// background flusher (driven here directly, with the manual clock).
func TestFlushMs(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.ms": "1000"}).Partitions[0]
	other := mustCreate(t, s, "u", 1, nil).Partitions[0]
	mustAppend(t, l, mkBatch(t, 3, 1, 1))
	mustAppend(t, other, mkBatch(t, 3, 1, 1))
	s.flushDue()
	if l.RecoveryPoint() != 0 {
		t.Fatal("flushed before flush.ms")
	}
	e.clock.Advance(time.Second)
	s.flushDue()
	if l.RecoveryPoint() != 3 {
		t.Fatalf("recovery point %d after flush.ms", l.RecoveryPoint())
	}
	if other.RecoveryPoint() != 0 {
		t.Fatal("flushed a log without flush.ms")
	}
}

// TestPendingAppendsShareOneFsync: batches written with
// AppendWithConfigPending are neither fsynced nor visible until waited
// for, and the first Wait's fsync covers every batch written before it.
func TestPendingAppendsShareOneFsync(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 1)) // writes leader-epoch-checkpoint
	var logSyncs atomic.Int64
	e.fs.setHooks(func(name string) error {
		if filepath.Ext(name) == ".log" {
			logSyncs.Add(1)
		}
		return nil
	}, nil)
	const n = 6
	var pend [n]PendingAppend
	for i := range pend {
		p, err := l.AppendWithConfigPending(l.ConfigSnapshot(), mkBatch(t, 2, 1, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !p.NeedsSync() {
			t.Fatalf("append %d: flush.messages=1 but no fsync needed", i)
		}
		pend[i] = p
	}
	if got := logSyncs.Load(); got != 0 {
		t.Fatalf("%d fsyncs before any Wait", got)
	}
	if o := l.Offsets(); o.HighWatermark != 1 || o.LogEndOffset != 1+2*n {
		t.Fatalf("unsynced batches visible: %+v", o)
	}
	for i := range pend {
		res, err := pend[i].Wait()
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(1 + 2*i); res.BaseOffset != want {
			t.Fatalf("append %d at %d, want %d", i, res.BaseOffset, want)
		}
	}
	if got := logSyncs.Load(); got != 1 {
		t.Fatalf("%d fsyncs for %d pending appends, want 1", got, n)
	}
	if o := l.Offsets(); o.HighWatermark != 1+2*n || l.RecoveryPoint() != 1+2*n {
		t.Fatalf("offsets %+v, recovery point %d", o, l.RecoveryPoint())
	}
}

// TestGroupCommitFailureFailsEveryWaiter: N appenders wait behind a
// running fsync; the one fsync that then covers them all fails, and every
// one of them gets the error: none is acknowledged or made visible, and
// no further fsync is tried (the log is offline).
func TestGroupCommitFailureFailsEveryWaiter(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 1))

	var syncs atomic.Int64
	release := make(chan struct{})
	first := make(chan struct{})
	e.fs.setHooks(func(name string) error {
		if filepath.Ext(name) != ".log" {
			return nil
		}
		switch syncs.Add(1) {
		case 1:
			close(first)
			<-release
			return nil
		default:
			return errInjected
		}
	}, nil)

	const waiters = 16
	firstErr := make(chan error, 1)
	go func() {
		_, err := l.Append(mkBatch(t, 1, 1, 1))
		firstErr <- err
	}()
	<-first // the first fsync runs, blocked, covering offset 1 only
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		go func() {
			_, err := l.Append(mkBatch(t, 1, 1, 1))
			errs <- err
		}()
	}
	waitForLEO(t, l, 2+waiters)
	close(release)
	if err := <-firstErr; err != nil {
		t.Fatalf("append covered by the good fsync: %v", err)
	}
	for i := 0; i < waiters; i++ {
		if err := <-errs; !errors.Is(err, ErrStorage) {
			t.Fatalf("waiter %d: %v, want a storage error", i, err)
		}
	}
	if got := syncs.Load(); got != 2 {
		t.Fatalf("%d fsyncs, want 2 (the good one, then one failing for all %d waiters)", got, waiters)
	}
	if hw := l.Offsets().HighWatermark; hw != 2 {
		t.Fatalf("high watermark %d after the failed fsync, want 2", hw)
	}
}

// waitForLEO waits until appenders running concurrently have written up
// to the log end offset want.
func waitForLEO(t *testing.T, l *Log, want int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for l.Offsets().LogEndOffset != want {
		select {
		case <-deadline:
			t.Fatalf("appenders did not write: %+v", l.Offsets())
		default:
			runtime.Gosched()
		}
	}
}

// TestFlushPanicFailsItsWaitersOnly: a flush that panics (here in the
// segment's fsync) answers the append it was for with a storage error,
// rather than leaving it and every later waiter waiting for a flush loop
// that is gone; the log stays online and the next append's flush covers
// both batches.
func TestFlushPanicFailsItsWaitersOnly(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 1))
	var syncs atomic.Int64
	e.fs.setHooks(func(name string) error {
		if filepath.Ext(name) == ".log" && syncs.Add(1) == 1 {
			panic("injected")
		}
		return nil
	}, nil)
	if _, err := l.Append(mkBatch(t, 1, 1, 1)); !errors.Is(err, ErrStorage) {
		t.Fatalf("append under the panicking flush: %v, want a storage error", err)
	}
	if hw := l.Offsets().HighWatermark; hw != 1 {
		t.Fatalf("high watermark %d past the failed flush", hw)
	}
	r, err := l.Append(mkBatch(t, 1, 1, 1))
	if err != nil || r.BaseOffset != 2 {
		t.Fatalf("append after the panic: %+v, %v", r, err)
	}
	if o := l.Offsets(); o.HighWatermark != 3 || l.RecoveryPoint() != 3 {
		t.Fatalf("offsets %+v, recovery point %d", o, l.RecoveryPoint())
	}
}

// TestSyncToAfterClose: a waiter that reaches syncTo once Log.close has
// let go of the files (a held Produce's wait) starts no flush on them:
// it gets the closed log's error (UNKNOWN_TOPIC for a deleted one) and no
// file is opened or fsynced. A target already durable is still nil.
func TestSyncToAfterClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete bool
		want   error
	}{
		{"closed", false, ErrClosed},
		{"deleted", true, ErrUnknownTopic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open()
			defer s.Close()
			l := mustCreate(t, s, "t", 1, nil).Partitions[0]
			mustAppend(t, l, mkBatch(t, 3, 1, 1)) // not fsynced: flush.messages default
			if tc.delete {
				if err := s.DeleteTopic("t"); err != nil {
					t.Fatal(err)
				}
			} else if err := l.close(false); err != nil {
				t.Fatal(err)
			}
			durable := l.flushed.Load()
			syncs, dirSyncs, opened := e.fs.fileSyncs.Load(), e.fs.dirSyncs.Load(), e.fs.opened.Load()
			// A clean close fsyncs to the log end; one offset past it
			// stands for an append the close did not cover.
			if err := l.syncTo(l.leo.Load() + 1); !errors.Is(err, tc.want) {
				t.Fatalf("syncTo after close: %v, want %v", err, tc.want)
			}
			if err := l.syncTo(durable); err != nil {
				t.Fatalf("syncTo(%d) of what close made durable: %v", durable, err)
			}
			if got := e.fs.fileSyncs.Load() - syncs; got != 0 {
				t.Errorf("%d file fsyncs after close", got)
			}
			if got := e.fs.dirSyncs.Load() - dirSyncs; got != 0 {
				t.Errorf("%d directory fsyncs after close", got)
			}
			if got := e.fs.opened.Load() - opened; got != 0 {
				t.Errorf("%d files opened after close", got)
			}
			l.fmu.Lock()
			syncing := l.syncing
			l.fmu.Unlock()
			if syncing {
				t.Error("a flush loop started after close")
			}
		})
	}
}
