package memfs

import (
	"fmt"
	"io/fs"
	"syscall"
)

// Op is a kind of mutating file-system operation, as fault injection sees
// it.
type Op int

const (
	OpCreate   Op = iota // OpenFile that creates or truncates a file
	OpWrite              // Write, WriteAt
	OpTruncate           // File.Truncate
	OpSync               // File.Sync
	OpSyncDir            // SyncDir
	OpRename             // Rename (path is the new name)
	OpRemove             // Remove, RemoveAll
	OpMkdir              // each directory MkdirAll creates
	OpChtimes            // Chtimes
)

var opNames = [...]string{"create", "write", "truncate", "sync", "syncdir", "rename", "remove", "mkdir", "chtimes"}

func (o Op) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// FaultKind is what an injected fault does.
type FaultKind int

const (
	// Crash stops the machine: the operation and every later one fail
	// with ErrCrashed; CrashClone gives what survives.
	Crash FaultKind = iota
	// ShortWrite makes one write land only its first half and fail with
	// EIO (a real short write: Go's os.File retries until an error).
	ShortWrite
	// SyncError makes one File.Sync or SyncDir fail with EIO. A failed
	// File.Sync also drops the file's unsynced data, from reads as well
	// as from the durable image: Linux marks the pages of a failed
	// writeback clean, so they may be evicted and a later fsync succeeds
	// without having written them. Software must not trust anything it
	// wrote before a failed fsync.
	SyncError
	// NoSpace makes a write, file creation, directory creation or rename
	// fail with ENOSPC, doing nothing; the disk stays full: every later
	// such operation (that Match accepts) fails too. Removals, truncations
	// and syncs still work.
	NoSpace
)

var faultNames = [...]string{"crash", "short write", "fsync error", "ENOSPC"}

func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// appliesTo reports whether a fault of kind k can strike an operation o.
func (k FaultKind) appliesTo(o Op) bool {
	switch k {
	case Crash:
		return true
	case ShortWrite:
		return o == OpWrite
	case SyncError:
		return o == OpSync || o == OpSyncDir
	case NoSpace:
		return o == OpWrite || o == OpCreate || o == OpMkdir || o == OpRename
	}
	return false
}

// Fault is one injected failure: it strikes the At-th (0-based) operation
// it applies to (by kind, see FaultKind, and by Match), so sweeping At
// from 0 until Fired reports false visits every place the fault can
// strike, each once.
type Fault struct {
	Kind FaultKind
	At   int
	// Match, if set, restricts the operations counted and struck, e.g. to
	// a path suffix (for OpRename the path is the new name).
	Match func(op Op, path string) bool
}

type faultState struct {
	Fault
	seen    int  // applicable operations before the fault
	fired   bool // the fault struck
	where   string
	crashed bool // a Crash fault struck: everything fails
}

// Inject arms f (nil: no fault), replacing any earlier fault and resetting
// the count of operations (Ops). The file system keeps its contents.
func (c *FS) Inject(f *Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops = 0
	c.fault = nil
	if f != nil {
		c.fault = &faultState{Fault: *f}
	}
}

// Fired reports whether the injected fault has struck.
func (c *FS) Fired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fault != nil && c.fault.fired
}

// Struck describes the operation the fault struck ("" if none).
func (c *FS) Struck() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fault == nil {
		return ""
	}
	return c.fault.where
}

// Crashed reports whether a Crash fault has struck (the machine is down).
func (c *FS) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fault != nil && c.fault.crashed
}

// HasSuffix is a Fault.Match for operations on paths ending in suffix.
func HasSuffix(suffix string) func(Op, string) bool {
	return func(_ Op, path string) bool {
		return len(path) >= len(suffix) && path[len(path)-len(suffix):] == suffix
	}
}

func pathErr(o Op, path string, errno syscall.Errno) error {
	return &fs.PathError{Op: o.String(), Path: path, Err: errno}
}

// Applicable is how many operations the injected fault could have struck
// so far without striking them: with At past the end of a run, the number
// of places a sweep over At visits.
func (c *FS) Applicable() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fault == nil {
		return 0
	}
	return c.fault.seen
}
