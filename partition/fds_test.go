package partition

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// emfileFor makes every open of a path containing substr fail with EMFILE,
// as a process at its descriptor limit sees it.
func emfileFor(substr string) func(string) error {
	return func(name string) error {
		if strings.Contains(name, substr) {
			return syscall.EMFILE
		}
		return nil
	}
}

// TestEMFILEFailsOnlyTheRequest: running out of descriptors while creating
// a topic or rolling a segment fails that request with ErrResourceLimit,
// leaves nothing half created, and keeps the data dir online: the other
// partitions keep serving and the same request succeeds once descriptors
// are free again.
func TestEMFILEFailsOnlyTheRequest(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "live", 1, map[string]string{"segment.bytes": "200"}).Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 10))

	e.fs.setOnOpen(emfileFor("many-3"))
	if _, err := s.CreateTopic("many", 8, nil, false); !errors.Is(err, ErrResourceLimit) || errors.Is(err, ErrStorage) {
		t.Fatalf("CreateTopic at EMFILE = %v, want ErrResourceLimit", err)
	}
	e.fs.setOnOpen(nil)
	if err := s.Offline(); err != nil {
		t.Fatalf("data dir offline after EMFILE: %v", err)
	}
	if s.Topic("many") != nil || len(segFiles(t, e.dir, "many-0")) != 0 {
		t.Fatal("the failed topic was half created")
	}
	mustAppend(t, l, mkBatch(t, 1, 2, 10))
	mustCreate(t, s, "many", 8, nil)

	// A roll that cannot open the new segment fails that append only.
	e.fs.setOnOpen(emfileFor("live-0"))
	if _, err := l.Append(mkBatch(t, 1, 3, 200)); !errors.Is(err, ErrResourceLimit) {
		t.Fatalf("Append needing a roll at EMFILE = %v, want ErrResourceLimit", err)
	}
	e.fs.setOnOpen(nil)
	if err := s.Offline(); err != nil {
		t.Fatalf("data dir offline after EMFILE on roll: %v", err)
	}
	mustAppend(t, l, mkBatch(t, 1, 3, 200))
	if got := len(readAll(t, l)); got != 3 {
		t.Fatalf("read %d batches, want 3", got)
	}
}
