// Package memfs is an in-memory vfs.FS for crash and fault tests: a crash
// keeps only what was synced (file data at its last Sync, directory entries
// at their last SyncDir), and Inject arms one fault (a crash, a short
// write, an fsync error, a full disk) at the k-th operation it applies to.
// The partition and cleaner tests share it, so both run on the same model
// of a power cut and of a failing disk.
package memfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

// FS is an in-memory file system that models what survives a power
// cut, after pebble's crashable MemFS: a file's durable contents are what
// it held at its last Sync, and a directory's durable entries are what it
// held at its last SyncDir (so a created or renamed file disappears unless
// its directory was synced). An injected Crash makes every operation from
// the k-th on fail, as if the machine had stopped there; the other faults
// (fault.go) strike and let the machine run on.
type FS struct {
	mu      sync.Mutex
	cur     map[string]*memNode // path -> node, the live namespace
	durable map[string]*memNode // the namespace a crash leaves
	ops     int                 // mutating operations since the last FailAfter or Inject
	fault   *faultState         // nil: never fails
	now     func() time.Time    // modification times; time.Now unless SetNow
}

type memNode struct {
	dir    bool
	data   []byte
	synced []byte
	mtime  time.Time // like a real file system's, not crash-modelled
}

// ErrCrashed is what every operation returns after the crash point.
var ErrCrashed = errors.New("memfs: machine crashed")

// New returns an empty file system that never fails.
func New() *FS {
	return &FS{cur: map[string]*memNode{"/": {dir: true}}, durable: map[string]*memNode{"/": {dir: true}}, now: time.Now}
}

// SetNow makes now the source of the modification times that writes,
// truncations and creations set (an injected clock's Now, so tests of
// retention by file age run on that clock).
func (c *FS) SetNow(now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// op counts a mutating operation of kind o on path and applies the
// injected fault to it: a non-nil error means the operation does nothing
// and returns it; short means a write lands only in part. REQUIRES: mu
// held.
func (c *FS) op(o Op, path string) (short bool, err error) {
	f := c.fault
	if f == nil {
		c.ops++
		return false, nil
	}
	if f.crashed {
		return false, ErrCrashed
	}
	applies := f.Kind.appliesTo(o) && (f.Match == nil || f.Match(o, path))
	if applies && f.Kind == NoSpace && f.fired {
		return false, pathErr(o, path, syscall.ENOSPC) // a full disk stays full
	}
	if applies && !f.fired {
		if f.seen == f.At {
			f.fired = true
			f.where = o.String() + " " + path
			switch f.Kind {
			case Crash:
				f.crashed = true
				return false, ErrCrashed
			case ShortWrite:
				c.ops++
				return true, nil
			case SyncError:
				c.ops++
				return false, pathErr(o, path, syscall.EIO)
			case NoSpace:
				return false, pathErr(o, path, syscall.ENOSPC)
			}
		}
		f.seen++
	}
	c.ops++
	return false, nil
}

// Clone returns the file system as a killed process leaves it: every
// write is kept (the page cache survives the process), only the injected
// fault is not. A restart on it sees what a kill -9 leaves, torn writes
// included.
func (c *FS) Clone() *FS {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := New()
	n.now = c.now
	for p, node := range c.cur {
		nn := &memNode{dir: node.dir, data: append([]byte(nil), node.data...), mtime: node.mtime}
		nn.synced = append([]byte(nil), nn.data...)
		n.cur[p] = nn
		n.durable[p] = nn
	}
	return n
}

// CrashClone returns the file system as a crash at this instant leaves it.
func (c *FS) CrashClone() *FS {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := New()
	n.now = c.now
	for p, node := range c.durable {
		nn := &memNode{dir: node.dir, data: append([]byte(nil), node.synced...), mtime: node.mtime}
		nn.synced = append([]byte(nil), nn.data...)
		n.cur[p] = nn
		n.durable[p] = nn
	}
	return n
}

func (c *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	name = filepath.Clean(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	node, ok := c.cur[name]
	if !ok || flag&os.O_TRUNC != 0 {
		if !ok && flag&os.O_CREATE == 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		if _, err := c.op(OpCreate, name); err != nil {
			return nil, err
		}
		if p := c.cur[filepath.Dir(name)]; p == nil || !p.dir {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		if !ok {
			node = &memNode{}
			c.cur[name] = node
		}
		node.data = nil
		node.mtime = c.now()
	} else if flag&os.O_EXCL != 0 && flag&os.O_CREATE != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	}
	if node.dir {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	return &memFile{fs: c, node: node, name: name}, nil
}

func (c *FS) Rename(oldpath, newpath string) error {
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(OpRename, newpath); err != nil {
		return err
	}
	if _, ok := c.cur[oldpath]; !ok {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	for p, n := range c.cur {
		if p == oldpath || strings.HasPrefix(p, oldpath+"/") {
			delete(c.cur, p)
			c.cur[newpath+strings.TrimPrefix(p, oldpath)] = n
		}
	}
	return nil
}

func (c *FS) Remove(name string) error {
	name = filepath.Clean(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(OpRemove, name); err != nil {
		return err
	}
	if _, ok := c.cur[name]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(c.cur, name)
	return nil
}

func (c *FS) RemoveAll(path string) error {
	path = filepath.Clean(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(OpRemove, path); err != nil {
		return err
	}
	for p := range c.cur {
		if p == path || strings.HasPrefix(p, path+"/") {
			delete(c.cur, p)
		}
	}
	return nil
}

func (c *FS) MkdirAll(path string, perm fs.FileMode) error {
	path = filepath.Clean(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := path; p != "/" && p != "."; p = filepath.Dir(p) {
		if n, ok := c.cur[p]; ok {
			if !n.dir {
				return &fs.PathError{Op: "mkdir", Path: p, Err: fs.ErrExist}
			}
			continue
		}
		if _, err := c.op(OpMkdir, p); err != nil {
			return err
		}
		c.cur[p] = &memNode{dir: true, mtime: c.now()}
	}
	return nil
}

func (c *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	name = filepath.Clean(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.cur[name]; !ok || !n.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	for p, n := range c.cur {
		if p != name && filepath.Dir(p) == name {
			out = append(out, memInfo{name: filepath.Base(p), node: n, size: int64(len(n.data)), mtime: n.mtime})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (c *FS) Stat(name string) (fs.FileInfo, error) {
	name = filepath.Clean(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.cur[name]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return memInfo{name: filepath.Base(name), node: n, size: int64(len(n.data)), mtime: n.mtime}, nil
}

func (c *FS) Chtimes(name string, atime, mtime time.Time) error {
	name = filepath.Clean(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(OpChtimes, name); err != nil {
		return err
	}
	n, ok := c.cur[name]
	if !ok {
		return &fs.PathError{Op: "chtimes", Path: name, Err: fs.ErrNotExist}
	}
	n.mtime = mtime
	return nil
}

func (c *FS) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.op(OpSyncDir, dir); err != nil {
		return err
	}
	for p := range c.durable {
		if filepath.Dir(p) == dir && p != dir {
			if _, ok := c.cur[p]; !ok {
				c.removeDurable(p)
			}
		}
	}
	for p, n := range c.cur {
		if filepath.Dir(p) == dir && p != dir {
			if old, ok := c.durable[p]; ok && old != n {
				c.removeDurable(p)
			}
			c.durable[p] = n
			if n.dir {
				c.adoptDurableChildren(p)
			}
		}
	}
	return nil
}

// removeDurable drops p and, for a directory, what the crash would lose
// with it.
func (c *FS) removeDurable(p string) {
	for q := range c.durable {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(c.durable, q)
		}
	}
}

// adoptDurableChildren: a directory renamed into place brings the durable
// entries it had under its old name (a rename moves the inode).
func (c *FS) adoptDurableChildren(dir string) {
	n := c.cur[dir]
	for q, m := range c.durable {
		if m == n && q != dir {
			for r, x := range c.durable {
				if strings.HasPrefix(r, q+"/") {
					c.durable[dir+strings.TrimPrefix(r, q)] = x
				}
			}
		}
	}
}

func (c *FS) Lock(name string) (io.Closer, error) {
	f, err := c.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// memInfo is a snapshot taken under the lock (node.dir never changes).
type memInfo struct {
	name  string
	node  *memNode
	size  int64
	mtime time.Time
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	return map[bool]fs.FileMode{true: fs.ModeDir | 0o755, false: 0o644}[i.node.dir]
}
func (i memInfo) ModTime() time.Time         { return i.mtime }
func (i memInfo) IsDir() bool                { return i.node.dir }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }

type memFile struct {
	fs   *FS
	node *memNode
	name string
	pos  int64
}

func (f *memFile) Name() string { return f.name }
func (f *memFile) Close() error { return nil }

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(b, f.node.data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Read(b []byte) (int, error) {
	n, err := f.ReadAt(b, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	short, err := f.fs.op(OpWrite, f.name)
	if err != nil {
		return 0, err
	}
	full := len(b)
	if short {
		b = b[:len(b)/2]
	}
	if end := off + int64(len(b)); end > int64(len(f.node.data)) {
		f.node.data = append(f.node.data, make([]byte, end-int64(len(f.node.data)))...)
	}
	copy(f.node.data[off:], b)
	f.node.mtime = f.fs.now()
	if short {
		return len(b), pathErr(OpWrite, f.name, syscall.EIO)
	}
	return full, nil
}

func (f *memFile) Write(b []byte) (int, error) {
	n, err := f.WriteAt(b, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) Seek(off int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	switch whence {
	case io.SeekStart:
		f.pos = off
	case io.SeekCurrent:
		f.pos += off
	case io.SeekEnd:
		f.pos = int64(len(f.node.data)) + off
	}
	return f.pos, nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return memInfo{name: filepath.Base(f.name), node: f.node, size: int64(len(f.node.data)), mtime: f.node.mtime}, nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if _, err := f.fs.op(OpSync, f.name); err != nil {
		if f.fs.fault != nil && !f.fs.fault.crashed {
			// Linux marks the pages of a failed writeback clean: they
			// may be evicted and never written. Model the worst case:
			// what was not synced is gone, from reads too.
			f.node.data = append([]byte(nil), f.node.synced...)
		}
		return err
	}
	f.node.synced = append([]byte(nil), f.node.data...)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if _, err := f.fs.op(OpTruncate, f.name); err != nil {
		return err
	}
	if size < int64(len(f.node.data)) {
		f.node.data = f.node.data[:size]
	} else {
		f.node.data = append(f.node.data, make([]byte, size-int64(len(f.node.data)))...)
	}
	f.node.mtime = f.fs.now()
	return nil
}

// FailAfter makes every mutating operation after the next n fail with
// ErrCrashed, as if the machine stopped there; n < 0 never fails. It is
// Inject(Fault{Kind: Crash, At: n}).
func (c *FS) FailAfter(n int) {
	if n < 0 {
		c.Inject(nil)
		return
	}
	c.Inject(&Fault{Kind: Crash, At: n})
}

// Ops is the number of mutating operations since the last FailAfter or
// Inject that took effect (a crashed one does not count).
func (c *FS) Ops() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops
}

var _ vfs.FS = (*FS)(nil)
