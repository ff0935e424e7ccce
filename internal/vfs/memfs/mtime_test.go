package memfs

import (
	"os"
	"testing"
	"time"
)

// Modification times follow the injected clock on create, write and
// truncate, survive renames and crashes, and Chtimes sets them.
func TestModTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fs := New()
	fs.SetNow(func() time.Time { return now })
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	mtime := func(name string) time.Time {
		t.Helper()
		fi, err := fs.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	f, err := fs.OpenFile("/d/a", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	created := now
	if got := mtime("/d/a"); !got.Equal(created) {
		t.Fatalf("after create: %v", got)
	}
	now = now.Add(time.Hour)
	if _, err := f.ReadAt(make([]byte, 1), 0); err == nil {
		t.Fatal("read of an empty file")
	}
	if got := mtime("/d/a"); !got.Equal(created) {
		t.Fatalf("a read moved the time: %v", got)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := mtime("/d/a"); !got.Equal(now) {
		t.Fatalf("after write: %v, want %v", got, now)
	}
	now = now.Add(time.Hour)
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if got := mtime("/d/a"); !got.Equal(now) {
		t.Fatalf("after truncate: %v, want %v", got, now)
	}
	old := now.Add(-48 * time.Hour)
	if err := fs.Chtimes("/d/a", old, old); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename("/d/a", "/d/b"); err != nil {
		t.Fatal(err)
	}
	if got := mtime("/d/b"); !got.Equal(old) {
		t.Fatalf("after chtimes and rename: %v, want %v", got, old)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if fi, err := fs.CrashClone().Stat("/d/b"); err != nil || !fi.ModTime().Equal(old) {
		t.Fatalf("after a crash: %v %v", fi, err)
	}
	if err := fs.Chtimes("/d/none", old, old); !os.IsNotExist(err) {
		t.Fatalf("chtimes of a missing file: %v", err)
	}
}
