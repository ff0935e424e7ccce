// Package vfs is the file-system seam of the storage engine. partition/ and
// cleaner/ do all file I/O through FS so that crash and fault tests can run
// against an in-memory file system that drops unsynced data, or one that
// injects errors at the k-th operation.
package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// File is an open file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	Sync() error
	Truncate(size int64) error
}

// FS is the set of file-system operations the storage engine uses.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	RemoveAll(path string) error
	MkdirAll(path string, perm fs.FileMode) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	// SyncDir fsyncs a directory, making created, renamed and removed
	// entries in it durable.
	SyncDir(dir string) error
	// Lock takes an exclusive advisory lock on the file name (created if
	// missing), failing at once if another process holds it.
	Lock(name string) (io.Closer, error)
	// Chtimes sets a file's access and modification times, as os.Chtimes
	// does. The cleaner gives its output the modification time of the
	// last segment it replaces (Kafka's LogSegment.setLastModified), so
	// retention of segments without timestamps sees the old age.
	Chtimes(name string, atime, mtime time.Time) error
}

// OS is the real file system.
type OS struct{}

var _ FS = OS{}

// OpenFile opens with open(2) and os.NewFile rather than os.OpenFile: for
// a file os.OpenFile also tries to register it with the network poller
// (four fcntl calls and an epoll_ctl that fails for a regular file), five
// system calls of six per open, which start-up with thousands of
// partitions (a dozen opens each) pays in full. A blocking descriptor
// given to os.NewFile is never put in the poller, as a regular file never
// is by os.OpenFile either.
func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

func (OS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OS) Remove(name string) error                     { return os.Remove(name) }
func (OS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (OS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (OS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (OS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (OS) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(name, atime, mtime)
}

func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

func (OS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFileLimit reads a whole small file (opened read-only), refusing
// one larger than limit before it allocates.
func ReadFileLimit(fsys FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("vfs: %s is %d bytes, more than %d", name, st.Size(), limit)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// WriteFileAtomic writes data to name so that after a crash the file holds
// either its old contents or data, never a mix: write a temp file, fsync it,
// rename it over name, fsync the directory.
func WriteFileAtomic(fsys FS, name string, data []byte) error {
	if err := WriteFileReplace(fsys, name, data); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(name))
}

// WriteFileReplace is WriteFileAtomic without the directory fsync: the
// file holds its old contents or data, never a mix, but the rename is
// durable only with the directory's next fsync. For files that a log
// writes while it may be rolling segments: a directory fsync makes every
// entry in it durable, and one that runs ahead of the log's own flush
// would make durable a new segment whose predecessor's data is not, a
// hole in the offsets after a power cut.
func WriteFileReplace(fsys FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsys.Rename(tmp, name)
}
