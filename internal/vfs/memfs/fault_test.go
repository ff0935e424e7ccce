package memfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
)

func mustWriteSynced(t *testing.T, c *FS, name string, data []byte) {
	t.Helper()
	f, err := c.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
}

func contents(t *testing.T, c *FS, name string) []byte {
	t.Helper()
	f, err := c.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestShortWrite(t *testing.T) {
	c := New()
	mustWriteSynced(t, c, "/a", []byte("0123"))
	f, _ := c.OpenFile("/a", os.O_RDWR, 0)
	c.Inject(&Fault{Kind: ShortWrite, At: 1})
	if n, err := f.WriteAt([]byte("abcd"), 4); n != 4 || err != nil {
		t.Fatalf("write 0 (not struck): %d %v", n, err)
	}
	n, err := f.WriteAt([]byte("efghij"), 8)
	if n != 3 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("struck write: n=%d err=%v, want 3, EIO", n, err)
	}
	if !c.Fired() || c.Crashed() {
		t.Fatalf("Fired=%v Crashed=%v", c.Fired(), c.Crashed())
	}
	if got := contents(t, c, "/a"); string(got) != "0123abcdefg" {
		t.Fatalf("contents %q", got)
	}
	// One-shot: the next write lands whole.
	if n, err := f.WriteAt([]byte("xy"), 11); n != 2 || err != nil {
		t.Fatalf("write after: %d %v", n, err)
	}
	if got := c.CrashClone(); string(contents(t, got, "/a")) != "0123" {
		t.Fatal("unsynced bytes survived a crash")
	}
}

func TestSyncErrorDropsUnsyncedData(t *testing.T) {
	c := New()
	mustWriteSynced(t, c, "/a", []byte("durable"))
	f, _ := c.OpenFile("/a", os.O_RDWR, 0)
	if _, err := f.WriteAt([]byte("+lost"), 7); err != nil {
		t.Fatal(err)
	}
	c.Inject(&Fault{Kind: SyncError, At: 0, Match: HasSuffix("/a")})
	if err := c.SyncDir("/"); err != nil {
		t.Fatalf("SyncDir does not match /a: %v", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync: %v, want EIO", err)
	}
	// The dirty pages were dropped: reads and a later successful fsync
	// see only what was durable.
	if got := contents(t, c, "/a"); string(got) != "durable" {
		t.Fatalf("after failed fsync reads %q", got)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("second Sync: %v", err)
	}
	if got := contents(t, c.CrashClone(), "/a"); string(got) != "durable" {
		t.Fatalf("after crash %q", got)
	}
}

func TestSyncDirError(t *testing.T) {
	c := New()
	c.Inject(&Fault{Kind: SyncError, At: 0})
	f, _ := c.OpenFile("/new", os.O_CREATE|os.O_RDWR, 0o644)
	f.Write([]byte("x"))
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("first sync: %v", err)
	}
	if err := c.SyncDir("/"); err != nil {
		t.Fatalf("fault is one-shot: %v", err)
	}
	c2 := New()
	c2.Inject(&Fault{Kind: SyncError, At: 1})
	f2, _ := c2.OpenFile("/new", os.O_CREATE|os.O_RDWR, 0o644)
	f2.Write([]byte("x"))
	if err := f2.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := c2.SyncDir("/"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("SyncDir: %v", err)
	}
	if _, err := c2.CrashClone().Stat("/new"); err == nil {
		t.Fatal("entry of a failed directory fsync survived the crash")
	}
}

func TestNoSpaceIsSticky(t *testing.T) {
	c := New()
	mustWriteSynced(t, c, "/a", []byte("a"))
	c.Inject(&Fault{Kind: NoSpace, At: 1})
	f, _ := c.OpenFile("/a", os.O_RDWR, 0)
	if _, err := f.WriteAt([]byte("b"), 1); err != nil {
		t.Fatal(err)
	}
	for i, op := range []func() error{
		func() error { _, err := f.WriteAt([]byte("c"), 2); return err },
		func() error { _, err := c.OpenFile("/b", os.O_CREATE|os.O_RDWR, 0o644); return err },
		func() error { return c.MkdirAll("/d", 0o755) },
		func() error { return c.Rename("/a", "/z") },
	} {
		if err := op(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("op %d: %v, want ENOSPC", i, err)
		}
	}
	// Space-neutral operations go on working.
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat("/b"); err == nil {
		t.Fatal("failed create left a file")
	}
}

func TestCrashIsFailAfter(t *testing.T) {
	for k := 0; k < 4; k++ {
		c := New()
		c.FailAfter(k)
		var errs int
		for i := 0; i < 4; i++ {
			if err := c.MkdirAll("/d"+string(rune('0'+i)), 0o755); err != nil {
				if !errors.Is(err, ErrCrashed) {
					t.Fatal(err)
				}
				errs++
			}
		}
		if errs != 4-k || c.Ops() != k || !c.Crashed() {
			t.Fatalf("k=%d: %d failed, Ops %d, Crashed %v", k, errs, c.Ops(), c.Crashed())
		}
	}
	c := New()
	c.FailAfter(-1)
	if c.MkdirAll("/x", 0o755) != nil || c.Fired() {
		t.Fatal("FailAfter(-1) failed an operation")
	}
}

// TestFaultSweepVisitsEachOpOnce: At counts only the operations a fault
// applies to, so a sweep strikes each of them once and then stops firing.
func TestFaultSweepVisitsEachOpOnce(t *testing.T) {
	work := func(c *FS) {
		f, err := c.OpenFile("/f.log", os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return
		}
		for i := 0; i < 3; i++ {
			f.Write([]byte("rec"))
			f.Sync()
		}
		c.SyncDir("/")
	}
	for _, tc := range []struct {
		kind FaultKind
		want int
	}{{Crash, 8}, {ShortWrite, 3}, {SyncError, 4}, {NoSpace, 4}} {
		k := 0
		for ; ; k++ {
			c := New()
			c.Inject(&Fault{Kind: tc.kind, At: k})
			work(c)
			if !c.Fired() {
				break
			}
		}
		if k != tc.want {
			t.Errorf("%v: struck %d operations, want %d", tc.kind, k, tc.want)
		}
	}
	c := New()
	c.Inject(&Fault{Kind: ShortWrite, At: 0, Match: HasSuffix(".index")})
	work(c)
	if c.Fired() {
		t.Fatal("Match ignored")
	}
	if got := contents(t, c, "/f.log"); !bytes.Equal(got, []byte("recrecrec")) {
		t.Fatalf("%q", got)
	}
}

func TestCloneKeepsUnsyncedWrites(t *testing.T) {
	c := New()
	c.MkdirAll("/d", 0o755)
	f, _ := c.OpenFile("/d/a", os.O_CREATE|os.O_RDWR, 0o644)
	f.Write([]byte("cached"))
	k := c.Clone()
	if got := contents(t, k, "/d/a"); string(got) != "cached" {
		t.Fatalf("clone reads %q", got)
	}
	// The clone's state is its durable state: a crash of it loses nothing.
	if got := contents(t, k.CrashClone(), "/d/a"); string(got) != "cached" {
		t.Fatalf("crash of clone reads %q", got)
	}
	if _, err := c.CrashClone().Stat("/d/a"); err == nil {
		t.Fatal("unsynced entry survived a crash of the original")
	}
}
