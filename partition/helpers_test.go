package partition

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/recordbatch"
)

var testStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

type testEnv struct {
	t            *testing.T
	dir          string
	fs           *countingFS
	clock        *clock.Manual
	defs         LogConfig
	jitter       func(int64) int64 // Config.Jitter
	maxOpenFiles int64             // Config.MaxOpenFiles
	openSegments int               // Config.OpenSegments
	fileWorkers  int               // Config.FileWorkers
	ckptInterval time.Duration     // Config.RecoveryCheckpointInterval (0: default)
}

func newEnv(t *testing.T) *testEnv {
	t.Helper()
	return &testEnv{t: t, dir: t.TempDir(), fs: &countingFS{FS: vfs.OS{}}, clock: clock.NewManual(testStart), defs: DefaultLogConfig()}
}

func (e *testEnv) open() *Store {
	e.t.Helper()
	s, err := Open(Config{
		Dir:                        e.dir,
		NodeID:                     1,
		Defaults:                   e.defs,
		Jitter:                     e.jitter,
		OpenSegments:               e.openSegments,
		FileWorkers:                e.fileWorkers,
		MaxOpenFiles:               e.maxOpenFiles,
		RecoveryCheckpointInterval: e.ckptInterval,
		FS:                         e.fs,
		Clock:                      e.clock,
		Logger:                     zerolog.New(zerolog.NewTestWriter(e.t)),
	})
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	return s
}

// abandon drops the store as a kill -9 would: no flush, no checkpoints,
// no clean-shutdown file; files and the lock are released.
func (s *Store) abandon() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.loopWG.Wait()
	s.bg.Wait()
	for _, t := range s.topics {
		for _, l := range t.Partitions {
			l.mu.Lock()
			l.closed = true
			l.mu.Unlock()
			close(l.closing)
			s.work.expedite(l)
			l.rollWG.Wait()
			l.gone.Store(true)
			for _, seg := range *l.segs.Load() {
				seg.close()
			}
		}
	}
	s.lock.Close()
}

func mustCreate(t *testing.T, s *Store, name string, n int32, ov map[string]string) *Topic {
	t.Helper()
	tp, err := s.CreateTopic(name, n, ov, false)
	if err != nil {
		t.Fatalf("CreateTopic(%s): %v", name, err)
	}
	return tp
}

// mkBatch builds a batch of n records with values of size vsize and
// timestamps ts, ts+1, ...
func mkBatch(t testing.TB, n int, ts int64, vsize int) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Value: make([]byte, vsize)}
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	r, err := l.Append(b)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return r
}

// batchesIn splits records into batch headers.
func batchesIn(t *testing.T, b []byte) []recordbatch.Header {
	t.Helper()
	var out []recordbatch.Header
	for len(b) > 0 {
		h, err := recordbatch.ParseHeader(b)
		if err != nil {
			t.Fatalf("ParseHeader: %v", err)
		}
		if err := h.CheckCRC(); err != nil {
			t.Fatalf("CheckCRC: %v", err)
		}
		out = append(out, h[:h.Size()])
		b = b[h.Size():]
	}
	return out
}

// readAll reads every batch from offset 0 to the high watermark.
func readAll(t *testing.T, l *Log) []recordbatch.Header {
	t.Helper()
	var out []recordbatch.Header
	off := l.Offsets().LogStartOffset
	for i := 0; i < 100000; i++ {
		r, err := l.Read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(r.Records) == 0 {
			if off < r.HighWatermark {
				t.Fatalf("Read(%d) empty below HW %d", off, r.HighWatermark)
			}
			return out
		}
		hs := batchesIn(t, r.Records)
		out = append(out, hs...)
		off = hs[len(hs)-1].LastOffset() + 1
	}
	t.Fatal("readAll did not end")
	return nil
}

// countingFS wraps an FS, counting fsyncs and optionally failing or
// blocking them.
type countingFS struct {
	vfs.FS
	fileSyncs atomic.Int64
	dirSyncs  atomic.Int64
	mu        sync.Mutex
	onSync    func(name string) error // called before each file fsync
	onWrite   func(name string) error // called before each write
	onOpen    func(name string) error // called before each open
	onRename  func(oldpath string)    // called after each rename
	// open counts the files open now; opened counts every open.
	open, opened atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	c.mu.Lock()
	onOpen := c.onOpen
	c.mu.Unlock()
	if onOpen != nil {
		if err := onOpen(name); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	c.open.Add(1)
	c.opened.Add(1)
	return &countingFile{File: f, fs: c}, nil
}

func (c *countingFS) setOnOpen(h func(name string) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onOpen = h
}

func (c *countingFS) Rename(oldpath, newpath string) error {
	err := c.FS.Rename(oldpath, newpath)
	c.mu.Lock()
	h := c.onRename
	c.mu.Unlock()
	if h != nil && err == nil {
		h(oldpath)
	}
	return err
}

func (c *countingFS) SyncDir(dir string) error {
	c.dirSyncs.Add(1)
	return c.FS.SyncDir(dir)
}

func (c *countingFS) hooks() (func(string) error, func(string) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.onSync, c.onWrite
}

func (c *countingFS) setHooks(onSync, onWrite func(string) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onSync, c.onWrite = onSync, onWrite
}

type countingFile struct {
	vfs.File
	fs     *countingFS
	closed atomic.Bool
}

func (f *countingFile) Close() error {
	if !f.closed.Swap(true) {
		f.fs.open.Add(-1)
	}
	return f.File.Close()
}

func (f *countingFile) Sync() error {
	if h, _ := f.fs.hooks(); h != nil {
		if err := h(f.Name()); err != nil {
			return err
		}
	}
	f.fs.fileSyncs.Add(1)
	return f.File.Sync()
}

func (f *countingFile) WriteAt(b []byte, off int64) (int, error) {
	if _, h := f.fs.hooks(); h != nil {
		if err := h(f.Name()); err != nil {
			return 0, err
		}
	}
	return f.File.WriteAt(b, off)
}

var errInjected = errors.New("injected failure")

func segFiles(t *testing.T, dir string, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
