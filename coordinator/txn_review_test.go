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
	"github.com/kcompatd/kcompatd/recordbatch"
)

// setEpoch puts id's producer epoch at e, as many bumps would have.
func (h *txnHarness) setEpoch(id string, e int16) {
	tx := h.c.lookup(id)
	tx.mu.Lock()
	tx.data.producerEpoch = e
	tx.publish()
	tx.mu.Unlock()
}

func (h *txnHarness) data(id string) txnData {
	return *h.c.lookup(id).view.Load()
}

// A delayed duplicate of the InitProducerId that rotated the producer id
// must not fence the new producer once it moved on: every transition
// records the current producer id as the previous one (Kafka's
// prepareTransitionTo), so only the transition right after the rotation
// accepts the old id.
func TestTxnDelayedRotationRetryFenced(t *testing.T) {
	h := newTxnHarness(t)
	id := "tx"
	a, _ := h.init(t, id, 60000)
	h.setEpoch(id, math.MaxInt16-1)
	b, e, code := h.c.InitProducerID(&id, 60000, a, math.MaxInt16-1)
	wantCode(t, "rotating init", code, nil)
	if b == a || e != 0 {
		t.Fatalf("rotation got %d/%d", b, e)
	}
	wantCode(t, "add", h.c.AddPartitions(id, b, 0, []TopicPartition{tpA0}), nil)
	if d := h.log.last().d; d.prevProducerID != b {
		t.Fatalf("AddPartitions wrote previous producer id %d, want %d", d.prevProducerID, b)
	}
	_, _, code = h.c.InitProducerID(&id, 60000, a, math.MaxInt16-1)
	wantCode(t, "delayed duplicate of the rotating init", code, kerr.ProducerFenced)
	if d := h.data(id); d.state != txnOngoing || d.producerID != b || d.producerEpoch != 0 {
		t.Fatalf("after the duplicate: %v %d/%d", d.state, d.producerID, d.producerEpoch)
	}
	code, _, _ = h.c.EndTxn(id, b, 0, true, false)
	wantCode(t, "commit", code, nil)
	for _, r := range h.log.recs[len(h.log.recs)-2:] {
		if r.d.prevProducerID != b {
			t.Fatalf("%v written with previous producer id %d, want %d", r.d.state, r.d.prevProducerID, b)
		}
	}
}

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

// Concurrent first InitProducerIds of the same ids agree on one producer
// id per id (the losers' ids are wasted).
func TestTxnConcurrentCreate(t *testing.T) {
	h := newTxnHarness(t)
	ids := []string{"x", "y", "z"}
	var wg sync.WaitGroup
	got := make([][]int64, len(ids))
	var mu sync.Mutex
	for range 8 {
		for j, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, _, code := h.c.InitProducerID(&id, 60000, -1, -1)
				if code != 0 {
					t.Error(kerr.ErrorForCode(code))
					return
				}
				mu.Lock()
				got[j] = append(got[j], p)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for j, ps := range got {
		for _, p := range ps {
			if p != ps[0] {
				t.Fatalf("%s got producer ids %v", ids[j], ps)
			}
		}
	}
}

// EndTxn v5 (transaction.version 2) by Kafka's table in
// TransactionCoordinator.endTransaction: an abort with the current epoch
// and nothing open bumps the epoch; a retry (the epoch one below) of the
// completed outcome is NONE with the current id and epoch; the rest is
// INVALID_TXN_STATE, or PRODUCER_FENCED for a retry from Empty.
func TestTxnEndTxnV5Table(t *testing.T) {
	const abort, commit = false, true
	h := newTxnHarness(t)
	id := "tx"
	pid, e := h.init(t, id, 60000)
	steps := []struct {
		name   string
		commit bool
		epoch  int16
		want   *kerr.Error
		state  txnState
		epoch2 int16 // answered epoch on success
	}{
		{"Empty commit", commit, e, kerr.InvalidTxnState, txnEmpty, 0},
		{"Empty abort retry", abort, e - 1, kerr.ProducerFenced, txnEmpty, 0},
		{"Empty abort", abort, e, nil, txnCompleteAbort, e + 1},
		{"CompleteAbort abort retry", abort, e, nil, txnCompleteAbort, e + 1},
		{"CompleteAbort commit retry", commit, e, kerr.InvalidTxnState, txnCompleteAbort, 0},
		{"CompleteAbort commit", commit, e + 1, kerr.InvalidTxnState, txnCompleteAbort, 0},
		{"CompleteAbort abort", abort, e + 1, nil, txnCompleteAbort, e + 2},
		{"CompleteAbort newer epoch", abort, e + 3, kerr.ProducerFenced, txnCompleteAbort, 0},
	}
	for _, s := range steps {
		code, rp, re := h.c.EndTxn(id, pid, s.epoch, s.commit, true)
		wantCode(t, s.name, code, s.want)
		if got := h.state(id); got != s.state {
			t.Fatalf("%s: state %v, want %v", s.name, got, s.state)
		}
		if s.want == nil && (rp != pid || re != s.epoch2) {
			t.Fatalf("%s: answered %d/%d, want %d/%d", s.name, rp, re, pid, s.epoch2)
		}
	}
	if ms := h.markers.take(); len(ms) != 0 {
		t.Fatalf("markers for aborts with nothing open: %+v", ms)
	}
	// The empty abort wrote PrepareAbort then CompleteAbort, started now.
	if r := h.log.recs[len(h.log.recs)-2]; r.d.state != txnPrepareAbort || r.d.startMs != h.clk.Now().UnixMilli() || r.d.clientTxnVersion != tv2 {
		t.Fatalf("empty abort wrote %+v", *r.d)
	}

	// From CompleteCommit: a commit retry is NONE, an abort retry
	// INVALID_TXN_STATE, an abort with the current epoch bumps it.
	e = e + 2
	wantCode(t, "add", h.c.AddPartitions(id, pid, e, []TopicPartition{tpA0}), nil)
	code, _, re := h.c.EndTxn(id, pid, e, commit, true)
	wantCode(t, "commit", code, nil)
	if re != e+1 || h.state(id) != txnCompleteCommit {
		t.Fatalf("commit answered epoch %d, state %v", re, h.state(id))
	}
	code, _, _ = h.c.EndTxn(id, pid, e, abort, true)
	wantCode(t, "CompleteCommit abort retry", code, kerr.InvalidTxnState)
	code, _, re = h.c.EndTxn(id, pid, e, commit, true)
	wantCode(t, "CompleteCommit commit retry", code, nil)
	if re != e+1 {
		t.Fatalf("commit retry answered epoch %d", re)
	}
	code, _, re = h.c.EndTxn(id, pid, e+1, abort, true)
	wantCode(t, "CompleteCommit abort", code, nil)
	if re != e+2 || h.state(id) != txnCompleteAbort {
		t.Fatalf("abort answered epoch %d, state %v", re, h.state(id))
	}

	// Below v5 nothing changes: an abort with nothing open is invalid.
	other := "v4"
	op, oe := h.init(t, other, 60000)
	code, _, _ = h.c.EndTxn(other, op, oe, abort, false)
	wantCode(t, "v4 abort from Empty", code, kerr.InvalidTxnState)
}

// After a v5 end the last epoch is the one the client used, so its
// KIP-360 InitProducerId retry with that epoch gets the current epoch back
// (Kafka's prepareComplete keeps lastProducerEpoch).
func TestTxnEndTxnV5KeepsPreBumpEpoch(t *testing.T) {
	h := newTxnHarness(t)
	id := "tx"
	pid, e := h.init(t, id, 60000)
	wantCode(t, "add", h.c.AddPartitions(id, pid, e, []TopicPartition{tpA0}), nil)
	code, _, _ := h.c.EndTxn(id, pid, e, true, true)
	wantCode(t, "commit", code, nil)
	if d := h.data(id); d.lastEpoch != e || d.producerEpoch != e+1 {
		t.Fatalf("epoch %d, last epoch %d; want %d, %d", d.producerEpoch, d.lastEpoch, e+1, e)
	}
	p, e2, code := h.c.InitProducerID(&id, 60000, pid, e)
	wantCode(t, "init with the pre-bump epoch", code, nil)
	if p != pid || e2 != e+1 {
		t.Fatalf("init retry got %d/%d, want %d/%d", p, e2, pid, e+1)
	}
}

// An EndTxn v5 at the last usable epoch rotates the producer id: the
// answer is the new id at epoch 0, the markers carry the bumped epoch, and
// the retry with the old id and epoch is recognised.
func TestTxnEndTxnV5EpochOverflow(t *testing.T) {
	for _, failMarkers := range []bool{false, true} {
		h := newTxnHarness(t)
		id := "tx"
		pid, _ := h.init(t, id, 60000)
		last := int16(math.MaxInt16 - 1)
		h.setEpoch(id, last)
		wantCode(t, "add", h.c.AddPartitions(id, pid, last, []TopicPartition{tpA0}), nil)
		if failMarkers {
			h.markers.fail[tpA0] = partition.ErrStorage
		}
		code, np, ne := h.c.EndTxn(id, pid, last, true, true)
		wantCode(t, "commit at the last epoch", code, nil)
		if np == pid || ne != 0 {
			t.Fatalf("answered %d/%d, want a new producer id at epoch 0", np, ne)
		}
		if failMarkers {
			if d := h.data(id); d.state != txnPrepareCommit || d.nextProducerID != np {
				t.Fatalf("after failed markers: %v next %d", d.state, d.nextProducerID)
			}
			delete(h.markers.fail, tpA0)
			h.c.AbortTimedOut() // retries the markers
		}
		ms := h.markers.take()
		if len(ms) != 1 || ms[0].m.ProducerID != pid || ms[0].m.ProducerEpoch != math.MaxInt16 {
			t.Fatalf("markers %+v", ms)
		}
		d := h.data(id)
		if d.state != txnCompleteCommit || d.producerID != np || d.producerEpoch != 0 || d.prevProducerID != pid || d.lastEpoch != last {
			t.Fatalf("after rotation %+v", d)
		}
		code, rp, re := h.c.EndTxn(id, pid, last, true, true)
		wantCode(t, "retry over the rotation", code, nil)
		if rp != np || re != 0 {
			t.Fatalf("retry answered %d/%d", rp, re)
		}
		p, e, code := h.c.InitProducerID(&id, 60000, pid, last)
		wantCode(t, "KIP-360 init over the rotation", code, nil)
		if p != np || e != 0 {
			t.Fatalf("init retry got %d/%d", p, e)
		}
	}
}

// hookLog calls hook after each successful write.
type hookLog struct {
	*fakeTxnLog
	hook func()
}

func (l hookLog) appendTxn(id string, rec recordbatch.Record) error {
	err := l.fakeTxnLog.appendTxn(id, rec)
	l.hook()
	return err
}

// Close stops a cleanup pass between ids instead of waiting for all of
// its writes.
func TestTxnCleanupPassStopsOnClose(t *testing.T) {
	const n = 500
	setup := func(t *testing.T, ongoing bool) *txnHarness {
		h := newTxnHarness(t)
		for i := range n {
			id := "id-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			pid, e := h.init(t, id, 1000)
			if ongoing {
				wantCode(t, "add", h.c.AddPartitions(id, pid, e, []TopicPartition{tpA0}), nil)
			}
		}
		h.log.recs = nil
		return h
	}
	count := func(h *txnHarness, s txnState) int {
		k := 0
		for _, r := range h.log.recs {
			if (r.d == nil && s == txnDead) || (r.d != nil && r.d.state == s) {
				k++
			}
		}
		return k
	}

	t.Run("RemoveExpired", func(t *testing.T) {
		h := setup(t, false)
		h.c.txnLog = hookLog{h.log, func() { h.c.Close() }}
		h.clk.Advance(8 * 24 * time.Hour)
		h.c.RemoveExpired()
		if k := count(h, txnDead); k != 1 {
			t.Fatalf("%d tombstones after Close in the pass, want 1", k)
		}
	})
	t.Run("AbortTimedOut", func(t *testing.T) {
		h := setup(t, true)
		h.c.txnLog = hookLog{h.log, func() { h.c.Close() }}
		h.clk.Advance(time.Hour)
		h.c.AbortTimedOut()
		if k := count(h, txnPrepareAbort); k != 1 {
			t.Fatalf("%d aborts after Close in the pass, want 1", k)
		}
	})
	t.Run("timer", func(t *testing.T) {
		h := setup(t, false)
		closed := make(chan struct{})
		var once sync.Once
		h.c.txnLog = hookLog{h.log, func() {
			once.Do(func() {
				go func() { h.c.Close(); close(closed) }()
				<-h.c.quit // Close has begun; it waits for this pass
			})
		}}
		h.c.start()
		h.clk.WaitForTimers(2)
		h.clk.Advance(8 * 24 * time.Hour)
		<-closed
		if k := count(h, txnDead); k != 1 {
			t.Fatalf("%d tombstones after Close in the pass, want 1", k)
		}
	})
}
