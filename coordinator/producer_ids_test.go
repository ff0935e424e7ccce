package coordinator

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// If the producer id block file is lost, producer ids restart past every
// one __transaction_state names, and that is persisted first.
func TestTxnProducerIDsPastLoadedAfterLostBlockFile(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	st, c := openTxnStore(t, dir, clk)
	for i := 0; i < 1500; i++ {
		if _, _, code := c.InitProducerID(nil, 0, -1, -1); code != 0 {
			t.Fatal(kerr.ErrorForCode(code))
		}
	}
	id := "tx"
	pid, _, code := c.InitProducerID(&id, 60000, -1, -1)
	wantCode(t, "init", code, nil)
	c.Close()
	st.Close()
	if err := os.Remove(filepath.Join(dir, partition.ProducerIDsFile)); err != nil {
		t.Fatal(err)
	}

	st, c = openTxnStore(t, dir, clk)
	defer st.Close()
	defer c.Close()
	b, err := st.ReadProducerIDs()
	if err != nil {
		t.Fatal(err)
	}
	if start, err := decodeProducerIDs(b); err != nil || start <= pid {
		t.Fatalf("persisted block start %d (%v), want past %d", start, err, pid)
	}
	next, _, code := c.InitProducerID(nil, 0, -1, -1)
	wantCode(t, "idempotent init", code, nil)
	other := "other"
	opid, _, code := c.InitProducerID(&other, 60000, -1, -1)
	wantCode(t, "init other", code, nil)
	if next <= pid || opid <= pid {
		t.Fatalf("ids %d and %d after restart, want past %d", next, opid, pid)
	}
}

func TestProducerIDAdvancePast(t *testing.T) {
	st := &memPIDStore{}
	m, err := newProducerIDManager(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.advancePast(41); err != nil {
		t.Fatal(err)
	}
	if start, _ := decodeProducerIDs(st.b); start != 42 {
		t.Fatalf("persisted %d", start)
	}
	if id, _ := m.generate(); id != 42 {
		t.Fatalf("got %d", id)
	}
	// Below what is handed out already: nothing changes.
	writes := st.writes
	if err := m.advancePast(10); err != nil || st.writes != writes {
		t.Fatalf("%v, %d writes", err, st.writes-writes)
	}
	if id, _ := m.generate(); id != 43 {
		t.Fatalf("got %d", id)
	}
	if err := m.advancePast(math.MaxInt64 - 1); err == nil {
		t.Fatal("no error past the last block")
	}
}

// blockingPIDStore blocks a block write while armed.
type blockingPIDStore struct {
	memPIDStore
	armed   chan struct{} // closed by the first blocked write
	release chan struct{}
	once    sync.Once
	on      bool
}

func (b *blockingPIDStore) WriteProducerIDs(p []byte) error {
	b.memPIDStore.mu.Lock()
	on := b.on
	b.memPIDStore.mu.Unlock()
	if on {
		b.once.Do(func() { close(b.armed) })
		<-b.release
	}
	return b.memPIDStore.WriteProducerIDs(p)
}

// A new block's write (an fsync) does not hold the coordinator-wide lock:
// lookups, produce verification among them, go on meanwhile.
func TestTxnBlockWriteDoesNotStallLookups(t *testing.T) {
	h := newTxnHarness(t)
	st := &blockingPIDStore{armed: make(chan struct{}), release: make(chan struct{})}
	pids, err := newProducerIDManager(st)
	if err != nil {
		t.Fatal(err)
	}
	h.c.pids = pids
	pid, epoch := h.init(t, "a", 60000)
	wantCode(t, "add", h.c.AddPartitions("a", pid, epoch, []TopicPartition{tpA0}), nil)
	pids.mu.Lock()
	pids.next = pids.end // the next id needs a new block
	pids.mu.Unlock()
	st.mu.Lock()
	st.on = true
	st.mu.Unlock()

	done := make(chan int16)
	go func() {
		b := "b"
		_, _, code := h.c.InitProducerID(&b, 60000, -1, -1)
		done <- code
	}()
	<-st.armed
	verified := make(chan int16)
	go func() { verified <- h.c.VerifyProducePartition("a", pid, epoch, "a", 0) }()
	select {
	case code := <-verified:
		wantCode(t, "verify during a block write", code, nil)
	case <-time.After(10 * time.Second):
		t.Fatal("produce verification waited for a producer id block write")
	}
	close(st.release)
	wantCode(t, "init during a block write", <-done, nil)
}
