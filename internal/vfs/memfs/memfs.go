// Package memfs is an in-memory vfs.FS for crash tests: a crash keeps only
// what was synced (file data at its last Sync, directory entries at their
// last SyncDir). The partition and cleaner crash tests share it, so both
// run on the same model of a power cut.
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
	"time"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

// FS is an in-memory file system that models what survives a power
// cut, after pebble's crashable MemFS: a file's durable contents are what
// it held at its last Sync, and a directory's durable entries are what it
// held at its last SyncDir (so a created or renamed file disappears unless
// its directory was synced). After failAfter mutating operations every
// further operation fails, as if the machine had stopped there.
type FS struct {
	mu        sync.Mutex
	cur       map[string]*memNode // path -> node, the live namespace
	durable   map[string]*memNode // the namespace a crash leaves
	ops       int
	failAfter int              // -1: never
	now       func() time.Time // modification times; time.Now unless SetNow
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
	return &FS{cur: map[string]*memNode{"/": {dir: true}}, durable: map[string]*memNode{"/": {dir: true}}, failAfter: -1, now: time.Now}
}

// SetNow makes now the source of the modification times that writes,
// truncations and creations set (an injected clock's Now, so tests of
// retention by file age run on that clock).
func (c *FS) SetNow(now func() time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// op counts a mutating operation. REQUIRES: mu held.
func (c *FS) op() error {
	if c.failAfter >= 0 && c.ops >= c.failAfter {
		return ErrCrashed
	}
	c.ops++
	return nil
}

func (c *FS) crashed() bool { return c.failAfter >= 0 && c.ops >= c.failAfter }

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
		if err := c.op(); err != nil {
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
	if err := c.op(); err != nil {
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
	if err := c.op(); err != nil {
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
	if err := c.op(); err != nil {
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
		if err := c.op(); err != nil {
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
	if err := c.op(); err != nil {
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
	if err := c.op(); err != nil {
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
	if err := f.fs.op(); err != nil {
		return 0, err
	}
	if end := off + int64(len(b)); end > int64(len(f.node.data)) {
		f.node.data = append(f.node.data, make([]byte, end-int64(len(f.node.data)))...)
	}
	copy(f.node.data[off:], b)
	f.node.mtime = f.fs.now()
	return len(b), nil
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
	if err := f.fs.op(); err != nil {
		return err
	}
	f.node.synced = append([]byte(nil), f.node.data...)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.fs.op(); err != nil {
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
// ErrCrashed, as if the machine stopped there; n < 0 never fails.
func (c *FS) FailAfter(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = 0
	c.failAfter = n
}

// Ops is the number of mutating operations since the last FailAfter.
func (c *FS) Ops() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops
}

var _ vfs.FS = (*FS)(nil)
