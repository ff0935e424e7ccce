package cleaner

import (
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/syncbuf"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
)

// panicFS panics, while armed, when the cleaner creates its output.
type panicFS struct {
	vfs.FS
	armed atomic.Bool
}

func (p *panicFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if p.armed.Load() && strings.HasSuffix(name, ".cleaned") {
		panic("injected: cleaner output")
	}
	return p.FS.OpenFile(name, flag, perm)
}

// A panic during a pass fails that log as an error does (Kafka's
// cleanLog wraps any exception in a LogCleaningException and the thread
// marks the partition uncleanable): logged at Error with the partition,
// the log marked uncleanable, nothing left in progress, and the log is
// cleaned once tried again without the fault.
func TestPassPanicMarksLogUncleanable(t *testing.T) {
	pfs := &panicFS{FS: memfs.New()}
	e := newTestEnv(t, pfs)
	e.open()
	defer e.close()
	_, tp := e.keyWrittenThrice()
	var logs syncbuf.Buffer
	e.cleaner.logger = zerolog.New(&logs)

	pfs.armed.Store(true)
	var ok bool
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("the pass's panic escaped the cleaner: %v", r)
			}
		}()
		ok, err = e.cleaner.CleanOnce()
	}()
	if ok || !errors.Is(err, errPanicked) {
		t.Fatalf("CleanOnce over a panicking pass: %v %v", ok, err)
	}
	if got := e.cleaner.UncleanablePartitions(); len(got) != 1 || got[0] != tp {
		t.Fatalf("uncleanable %v", got)
	}
	if s := logs.String(); !strings.Contains(s, `"level":"error"`) || !strings.Contains(s, `"topic":"t","partition":0`) || !strings.Contains(s, "injected: cleaner output") {
		t.Fatalf("panic not logged at error with the partition: %s", s)
	}
	e.cleaner.Pause(tp) // returns: the pass is not left in progress
	e.cleaner.Resume(tp)

	pfs.armed.Store(false)
	e.clock.Advance(time.Duration(e.cleaner.cfg.UncleanableRetryMs) * time.Millisecond)
	if ok, err := e.cleaner.CleanOnce(); !ok || err != nil {
		t.Fatalf("retry without the fault: %v %v", ok, err)
	}
	if got := e.cleaner.UncleanablePartitions(); len(got) != 0 {
		t.Fatalf("still uncleanable after a clean pass: %v", got)
	}
}

// panicSource panics, while armed, when the cleaner lists the logs:
// outside the work on any one log.
type panicSource struct {
	*partition.Store
	armed atomic.Bool
	calls atomic.Int32
}

func (p *panicSource) Topics() []*partition.Topic {
	if p.armed.Load() {
		p.calls.Add(1)
		panic("injected: listing logs")
	}
	return p.Store.Topics()
}

// A panic outside the work on one log stops that cleaner thread, logged at
// Error and counted (Kafka's CleanerThread stops on an error doWork does
// not handle; LogCleaner counts dead threads); the retention task logs
// its panic and runs again at its next interval (KafkaScheduler); Close
// still returns. Nothing exits silently, and the process goes on.
func TestCleanerThreadPanic(t *testing.T) {
	e := newTestEnv(t, memfs.New())
	e.open()
	defer e.close()
	src := &panicSource{Store: e.store}
	src.armed.Store(true)
	var logs syncbuf.Buffer
	cfg := e.ccfg
	cfg.Threads = 2
	// A clock of its own: the store keeps timers on e.clock, so that
	// WaitForTimers there would not wait for the retention task's.
	clk := clock.NewManual(testStart)
	cfg.Clock, cfg.Logger = clk, zerolog.New(&logs)
	c := New(src, cfg)
	c.Start()
	for i := 0; c.DeadThreads() != 2; i++ { // bounded: both threads panic at once
		if i == 5000 {
			t.Fatalf("%d cleaner threads stopped, want 2", c.DeadThreads())
		}
		time.Sleep(time.Millisecond)
	}
	if n := strings.Count(logs.String(), "log cleaner thread stopped by a panic"); n != 2 {
		t.Fatalf("%d thread stops logged, want 2: %s", n, logs.String())
	}
	for run := int32(1); run <= 2; run++ {
		clk.WaitForTimers(1) // the retention task sleeps again, after logging its panic
		clk.Advance(time.Duration(cfg.RetentionCheckIntervalMs) * time.Millisecond)
		for i := 0; src.calls.Load() < 2+run; i++ {
			if i == 5000 {
				t.Fatalf("retention run %d did not happen after a panicking one", run)
			}
			time.Sleep(time.Millisecond)
		}
	}
	c.Close()
	if !strings.Contains(logs.String(), "retention run panicked") {
		t.Fatalf("retention panic not logged: %s", logs.String())
	}
}
