package partition

import (
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
)

// TestDuplicateOfUnwaitedAppendIsVisible: an append under flush.messages=1
// whose Wait never runs (its connection broke while the answer was held),
// then the producer's retry: the duplicate is acknowledged only once the
// original is durable, and then the original is visible (the flush
// publishes the high watermark, not only the original's waiter).
func TestDuplicateOfUnwaitedAppendIsVisible(t *testing.T) {
	s, err := openMem(t, memfs.New())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic("t", 1, map[string]string{"flush.messages": "1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := tp.Partitions[0]
	b := pidBatch(t, 7, 0, 0, 3, false)
	if _, err := l.AppendWithConfigPending(l.ConfigSnapshot(), append([]byte(nil), b...), nil); err != nil {
		t.Fatal(err)
	}
	p, err := l.AppendWithConfigPending(l.ConfigSnapshot(), append([]byte(nil), b...), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Wait()
	if err != nil || !res.Duplicate {
		t.Fatalf("retry: %+v, %v; want a duplicate", res, err)
	}
	if o := l.Offsets(); o.HighWatermark != 3 || o.LogEndOffset != 3 {
		t.Fatalf("offsets %+v after the acknowledged duplicate; want high watermark = log end = 3", o)
	}
}

// gatedSyncFS blocks the first fsync of a .log file after block is set
// until release is closed, to hold a flush in the middle.
type gatedSyncFS struct {
	*memfs.FS
	block   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

type gatedSyncFile struct {
	vfs.File
	g *gatedSyncFS
}

func (g *gatedSyncFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return f, err
	}
	return gatedSyncFile{f, g}, nil
}

func (f gatedSyncFile) Sync() error {
	err := f.File.Sync()
	if f.g.block.CompareAndSwap(true, false) {
		f.g.entered <- struct{}{}
		<-f.g.release
	}
	return err
}

// TestHighWatermarkNeverPassesPendingFsync: with flush.messages=10, an
// append A that needs an fsync is written while an earlier flush is in
// its fsync; the flush ends below A. A later append B, not itself due an
// fsync, must not publish a high watermark past A before A is fsynced:
// after B is acknowledged every offset below the high watermark is
// durable.
func TestHighWatermarkNeverPassesPendingFsync(t *testing.T) {
	g := &gatedSyncFS{FS: memfs.New(), entered: make(chan struct{}), release: make(chan struct{})}
	s, err := Open(Config{Dir: "/data", NodeID: 1, FS: g, Clock: clock.NewManual(testStart), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic("t", 1, map[string]string{"flush.messages": "10"}, false)
	if err != nil {
		t.Fatal(err)
	}
	l := tp.Partitions[0]
	for i := range 9 {
		if _, err := l.Append(mkBatch(t, 1, int64(i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	g.block.Store(true)
	done := make(chan error)
	go func() { done <- l.Flush() }() // covers [0, 9)
	<-g.entered
	a, err := l.AppendWithConfigPending(l.ConfigSnapshot(), mkBatch(t, 1, 9, 10), nil)
	if err != nil || !a.NeedsSync() {
		t.Fatalf("A: %v, needs an fsync %v", err, a.NeedsSync())
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(mkBatch(t, 1, 10, 10)); err != nil {
		t.Fatal(err)
	}
	if hw, rp := l.Offsets().HighWatermark, l.flushed.Load(); hw > rp {
		t.Fatalf("high watermark %d past the recovery point %d: offsets not fsynced are visible", hw, rp)
	}
	if _, err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	if o := l.Offsets(); o.HighWatermark != 11 {
		t.Fatalf("offsets %+v; want high watermark 11", o)
	}
}
