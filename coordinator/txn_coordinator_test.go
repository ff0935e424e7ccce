package coordinator

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// memPIDStore keeps the producer id block file in memory.
type memPIDStore struct {
	mu     sync.Mutex
	b      []byte
	writes int
}

func (m *memPIDStore) ReadProducerIDs() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.b, nil
}

func (m *memPIDStore) WriteProducerIDs(b []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.b = append([]byte(nil), b...)
	m.writes++
	return nil
}

// fakeTxnLog records __transaction_state writes; fail makes them fail.
type fakeTxnLog struct {
	mu   sync.Mutex
	recs []loggedTxn
	fail error
}

type loggedTxn struct {
	id string
	d  *txnData // nil: tombstone
}

func (f *fakeTxnLog) appendTxn(id string, rec recordbatch.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	gotID, d, ok := decodeTxnRecord(rec.Key, rec.Value)
	if !ok || gotID != id {
		return errors.New("fake: undecodable record")
	}
	f.recs = append(f.recs, loggedTxn{id, d})
	return nil
}

func (f *fakeTxnLog) last() loggedTxn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recs[len(f.recs)-1]
}

// fakeMarkers records markers; fail makes a partition's marker fail.
type fakeMarkers struct {
	mu      sync.Mutex
	written []markerCall
	fail    map[TopicPartition]error
}

type markerCall struct {
	tp TopicPartition
	m  partition.TxnMarker
}

func (f *fakeMarkers) writeMarker(tp TopicPartition, m partition.TxnMarker) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fail[tp]; err != nil {
		return err
	}
	f.written = append(f.written, markerCall{tp, m})
	return nil
}

func (f *fakeMarkers) take() []markerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.written
	f.written = nil
	return w
}

type txnHarness struct {
	c       *TxnCoordinator
	clk     *clock.Manual
	log     *fakeTxnLog
	markers *fakeMarkers
}

func newTxnHarness(t *testing.T) *txnHarness {
	t.Helper()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	pids, err := newProducerIDManager(&memPIDStore{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultTxnConfig()
	cfg.Clock = clk
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t))
	c := newTxnCoordinator(cfg, pids)
	h := &txnHarness{c: c, clk: clk, log: &fakeTxnLog{}, markers: &fakeMarkers{fail: map[TopicPartition]error{}}}
	c.txnLog, c.markers = h.log, h.markers
	t.Cleanup(func() { c.Close() })
	return h
}

func (h *txnHarness) init(t *testing.T, id string, timeoutMs int32) (int64, int16) {
	t.Helper()
	pid, epoch, code := h.c.InitProducerID(&id, timeoutMs, -1, -1)
	if code != 0 {
		t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(code))
	}
	return pid, epoch
}

func (h *txnHarness) state(id string) txnState {
	t := h.c.lookup(id)
	if t == nil {
		return txnDead
	}
	return t.view.Load().state
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("%s: got %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

var tpA0, tpA1 = TopicPartition{"a", 0}, TopicPartition{"a", 1}

func TestTxnIdempotentProducerIDs(t *testing.T) {
	h := newTxnHarness(t)
	seen := map[int64]bool{}
	for i := 0; i < 2500; i++ {
		pid, epoch, code := h.c.InitProducerID(nil, 0, -1, -1)
		if code != 0 || epoch != 0 || seen[pid] {
			t.Fatalf("InitProducerId #%d: pid %d epoch %d code %d", i, pid, epoch, code)
		}
		seen[pid] = true
	}
}

func TestTxnCommitAndAbort(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	if epoch != 0 || h.state("tx") != txnEmpty {
		t.Fatalf("epoch %d state %v", epoch, h.state("tx"))
	}
	code, _, _ := h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "EndTxn on Empty", code, kerr.InvalidTxnState)

	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0, tpA1}), nil)
	if h.state("tx") != txnOngoing {
		t.Fatalf("state %v", h.state("tx"))
	}
	if d := h.log.last().d; d.state != txnOngoing || len(d.partitions) != 2 || d.startMs != h.clk.Now().UnixMilli() {
		t.Fatalf("logged %+v", d)
	}
	wantCode(t, "add again", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), nil)

	code, rpid, repoch := h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "commit", code, nil)
	if rpid != pid || repoch != epoch {
		t.Fatalf("commit answered %d/%d", rpid, repoch)
	}
	ms := h.markers.take()
	if len(ms) != 2 || !ms[0].m.Commit || ms[0].m.ProducerID != pid || ms[0].m.ProducerEpoch != epoch || ms[0].m.CoordinatorEpoch != 0 {
		t.Fatalf("markers %+v", ms)
	}
	if h.state("tx") != txnCompleteCommit {
		t.Fatalf("state %v", h.state("tx"))
	}
	// Retries after completion, as Kafka answers them.
	code, _, _ = h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "commit retry", code, nil)
	code, _, _ = h.c.EndTxn("tx", pid, epoch, false, false)
	wantCode(t, "abort after commit", code, kerr.InvalidTxnState)
	if len(h.markers.take()) != 0 {
		t.Fatal("a retry wrote markers")
	}

	// The next transaction, aborted.
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA1}), nil)
	code, _, _ = h.c.EndTxn("tx", pid, epoch, false, false)
	wantCode(t, "abort", code, nil)
	if ms := h.markers.take(); len(ms) != 1 || ms[0].m.Commit || ms[0].tp != tpA1 {
		t.Fatalf("markers %+v", ms)
	}
	code, _, _ = h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "commit after abort", code, kerr.InvalidTxnState)
}

func TestTxnErrors(t *testing.T) {
	h := newTxnHarness(t)
	id := "tx"
	_, _, code := h.c.InitProducerID(&id, 0, -1, -1)
	wantCode(t, "timeout 0", code, kerr.InvalidTransactionTimeout)
	_, _, code = h.c.InitProducerID(&id, 900001, -1, -1)
	wantCode(t, "timeout above max", code, kerr.InvalidTransactionTimeout)
	empty := ""
	_, _, code = h.c.InitProducerID(&empty, 1000, -1, -1)
	wantCode(t, "empty id", code, kerr.InvalidRequest)

	wantCode(t, "add unknown", h.c.AddPartitions("nope", 1, 0, []TopicPartition{tpA0}), kerr.InvalidProducerIDMapping)
	code, _, _ = h.c.EndTxn("nope", 1, 0, true, false)
	wantCode(t, "end unknown", code, kerr.InvalidProducerIDMapping)
	wantCode(t, "add empty id", h.c.AddPartitions("", 1, 0, nil), kerr.InvalidRequest)

	pid, epoch := h.init(t, id, 1000)
	wantCode(t, "add other pid", h.c.AddPartitions(id, pid+1, epoch, []TopicPartition{tpA0}), kerr.InvalidProducerIDMapping)
	wantCode(t, "add other epoch", h.c.AddPartitions(id, pid, epoch+1, []TopicPartition{tpA0}), kerr.ProducerFenced)
	code, _, _ = h.c.EndTxn(id, pid+1, epoch, true, false)
	wantCode(t, "end other pid", code, kerr.InvalidProducerIDMapping)
	code, _, _ = h.c.EndTxn(id, pid, epoch+1, true, false)
	wantCode(t, "end other epoch", code, kerr.ProducerFenced)

	// A failed __transaction_state write changes nothing.
	h.log.fail = partition.ErrClosed
	wantCode(t, "add with log down", h.c.AddPartitions(id, pid, epoch, []TopicPartition{tpA0}), kerr.CoordinatorNotAvailable)
	if h.state(id) != txnEmpty {
		t.Fatalf("state %v after a failed write", h.state(id))
	}
	h.log.fail = nil
}

func TestTxnInitFencesOngoingTransaction(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), nil)

	id := "tx"
	_, _, code := h.c.InitProducerID(&id, 60000, -1, -1)
	wantCode(t, "init over an ongoing transaction", code, kerr.ConcurrentTransactions)
	ms := h.markers.take()
	if len(ms) != 1 || ms[0].m.Commit || ms[0].m.ProducerEpoch != epoch+1 {
		t.Fatalf("fence markers %+v", ms)
	}
	if h.state("tx") != txnCompleteAbort {
		t.Fatalf("state %v", h.state("tx"))
	}
	pid2, epoch2 := h.init(t, "tx", 60000)
	if pid2 != pid || epoch2 != epoch+2 {
		t.Fatalf("after fence: %d/%d", pid2, epoch2)
	}
	// The zombie is fenced everywhere.
	wantCode(t, "zombie add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), kerr.ProducerFenced)
	code, _, _ = h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "zombie end", code, kerr.ProducerFenced)
	if codes := h.c.VerifyPartitions("tx", pid, epoch, []TopicPartition{tpA0}); codes[0] != kerr.ProducerFenced.Code {
		t.Fatalf("zombie verify %v", codes)
	}
}

func TestTxnKIP360InitWithProducerIDAndEpoch(t *testing.T) {
	h := newTxnHarness(t)
	id := "tx"
	pid, epoch := h.init(t, id, 60000)

	p, e, code := h.c.InitProducerID(&id, 60000, pid, epoch)
	wantCode(t, "bump with current epoch", code, nil)
	if p != pid || e != epoch+1 {
		t.Fatalf("got %d/%d", p, e)
	}
	// A retry of that request (its answer lost): the same answer.
	p, e, code = h.c.InitProducerID(&id, 60000, pid, epoch)
	wantCode(t, "retry", code, nil)
	if p != pid || e != epoch+1 {
		t.Fatalf("retry got %d/%d", p, e)
	}
	_, _, code = h.c.InitProducerID(&id, 60000, pid+7, 0)
	wantCode(t, "other producer id", code, kerr.ProducerFenced)
	_, _, code = h.c.InitProducerID(&id, 60000, pid, epoch+5)
	wantCode(t, "unknown epoch", code, kerr.ProducerFenced)
	// A new producer (no id/epoch) clears the last epoch: the old
	// producer's retry is fenced.
	_, e2 := h.init(t, id, 60000)
	_, _, code = h.c.InitProducerID(&id, 60000, pid, epoch+1)
	wantCode(t, "old producer after a new one", code, kerr.ProducerFenced)
	if e2 != epoch+2 {
		t.Fatalf("epoch %d", e2)
	}
}

func TestTxnEpochExhaustionRotatesProducerID(t *testing.T) {
	h := newTxnHarness(t)
	id := "tx"
	pid, _ := h.init(t, id, 60000)
	tx := h.c.lookup(id)
	tx.mu.Lock()
	tx.data.producerEpoch = math.MaxInt16 - 1
	tx.publish()
	tx.mu.Unlock()

	p, e, code := h.c.InitProducerID(&id, 60000, pid, math.MaxInt16-1)
	wantCode(t, "init at exhausted epoch", code, nil)
	if p == pid || e != 0 {
		t.Fatalf("got %d/%d, want a new producer id at epoch 0", p, e)
	}
	// The retry of the rotation, with the old id and exhausted epoch.
	p2, e2, code := h.c.InitProducerID(&id, 60000, pid, math.MaxInt16-1)
	wantCode(t, "retry of rotation", code, nil)
	if p2 != p || e2 != 0 { // the same answer again (lastEpoch matches)
		t.Fatalf("retry got %d/%d", p2, e2)
	}
}

func TestTxnTimeoutAbortFencesProducer(t *testing.T) {
	h := newTxnHarness(t)
	h.c.start()
	pid, epoch := h.init(t, "tx", 5000)
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), nil)

	// Within its timeout: nothing happens.
	h.clk.WaitForTimers(2)
	h.clk.Advance(4 * time.Second)
	h.c.AbortTimedOut()
	if h.state("tx") != txnOngoing {
		t.Fatalf("aborted early: %v", h.state("tx"))
	}
	// The background check (every 10 s) aborts it past its timeout; its
	// loop arms the next check once the pass is done.
	h.clk.Advance(6 * time.Second)
	h.clk.WaitForTimers(2)
	if h.state("tx") != txnCompleteAbort {
		t.Fatalf("not aborted: %v", h.state("tx"))
	}
	ms := h.markers.take()
	if len(ms) != 1 || ms[0].m.Commit || ms[0].m.ProducerEpoch != epoch+1 {
		t.Fatalf("markers %+v", ms)
	}
	code, _, _ := h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "commit by the timed-out producer", code, kerr.ProducerFenced)
	_, e := h.init(t, "tx", 5000)
	if e != epoch+2 {
		t.Fatalf("next epoch %d", e)
	}
}

func TestTxnExpiredIDsRemoved(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "done", 60000)
	wantCode(t, "add", h.c.AddPartitions("done", pid, epoch, []TopicPartition{tpA0}), nil)
	code, _, _ := h.c.EndTxn("done", pid, epoch, true, false)
	wantCode(t, "commit", code, nil)
	p2, e2 := h.init(t, "ongoing", 900000)
	wantCode(t, "add", h.c.AddPartitions("ongoing", p2, e2, []TopicPartition{tpA1}), nil)

	h.clk.Advance(7*24*time.Hour - time.Second)
	h.c.RemoveExpired()
	if h.state("done") == txnDead {
		t.Fatal("expired early")
	}
	h.clk.Advance(2 * time.Second)
	h.c.RemoveExpired()
	if h.state("done") != txnDead {
		t.Fatal("not expired")
	}
	if l := h.log.last(); l.id != "done" || l.d != nil {
		t.Fatalf("last write %+v, want a tombstone", l)
	}
	if h.state("ongoing") != txnOngoing {
		t.Fatal("an ongoing transaction expired")
	}
	if s := h.c.DescribeTransaction("done"); s.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe %+v", s)
	}
	// The id starts over.
	if p, e := h.init(t, "done", 60000); p == pid || e != 0 {
		t.Fatalf("new id got %d/%d", p, e)
	}
}

func TestTxnMarkerFailureRetried(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0, tpA1}), nil)
	h.markers.fail[tpA1] = partition.ErrStorage
	h.markers.fail[TopicPartition{"gone", 0}] = nil
	code, _, _ := h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "commit", code, nil) // PrepareCommit is written: the outcome is decided
	if h.state("tx") != txnPrepareCommit {
		t.Fatalf("state %v", h.state("tx"))
	}
	code, _, _ = h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "commit retry while markers pending", code, kerr.ConcurrentTransactions)
	code, _, _ = h.c.EndTxn("tx", pid, epoch, false, false)
	wantCode(t, "abort while committing", code, kerr.InvalidTxnState)
	wantCode(t, "add while committing", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), kerr.ConcurrentTransactions)
	id := "tx"
	_, _, code = h.c.InitProducerID(&id, 60000, -1, -1)
	wantCode(t, "init while committing", code, kerr.ConcurrentTransactions)
	if s := h.c.DescribeTransaction("tx"); len(s.Topics) != 1 || len(s.Topics[0].Partitions) != 1 || s.Topics[0].Partitions[0] != 1 {
		t.Fatalf("describe %+v: only the pending partition should be left", s)
	}

	delete(h.markers.fail, tpA1)
	h.c.AbortTimedOut() // also retries pending markers
	if h.state("tx") != txnCompleteCommit {
		t.Fatalf("state %v", h.state("tx"))
	}
	if ms := h.markers.take(); len(ms) != 2 || ms[1].tp != tpA1 || !ms[1].m.Commit {
		t.Fatalf("markers %+v", ms)
	}

	// A marker for a deleted partition is dropped.
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), nil)
	h.markers.fail[tpA0] = partition.ErrUnknownTopic
	code, _, _ = h.c.EndTxn("tx", pid, epoch, false, false)
	wantCode(t, "abort", code, nil)
	if h.state("tx") != txnCompleteAbort {
		t.Fatalf("state %v", h.state("tx"))
	}
}

func TestTxnVerifyPartitions(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), nil)
	for _, tc := range []struct {
		name    string
		id      string
		pid     int64
		epoch   int16
		codes   []int16
		produce int16
	}{
		{"in the transaction", "tx", pid, epoch, []int16{0, kerr.TransactionAbortable.Code}, 0},
		{"unknown id", "nope", pid, epoch, []int16{kerr.InvalidProducerIDMapping.Code, kerr.InvalidProducerIDMapping.Code}, kerr.InvalidProducerIDMapping.Code},
		{"other producer id", "tx", pid + 1, epoch, []int16{kerr.InvalidProducerIDMapping.Code, kerr.InvalidProducerIDMapping.Code}, kerr.InvalidProducerIDMapping.Code},
		{"other epoch", "tx", pid, epoch + 1, []int16{kerr.ProducerFenced.Code, kerr.ProducerFenced.Code}, kerr.InvalidProducerEpoch.Code},
		{"empty id", "", pid, epoch, []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}, kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.c.VerifyPartitions(tc.id, tc.pid, tc.epoch, []TopicPartition{tpA0, tpA1})
			if got[0] != tc.codes[0] || got[1] != tc.codes[1] {
				t.Fatalf("got %v want %v", got, tc.codes)
			}
			if p := h.c.VerifyProducePartition(tc.id, tc.pid, tc.epoch, "a", 0); p != tc.produce {
				t.Fatalf("produce check %v want %v", kerr.ErrorForCode(p), kerr.ErrorForCode(tc.produce))
			}
		})
	}
	if p := h.c.VerifyProducePartition("tx", pid, epoch, "a", 1); p != kerr.TransactionAbortable.Code {
		t.Fatalf("partition not added: %v", kerr.ErrorForCode(p))
	}
}

func TestTxnEndTxnV5BumpsEpoch(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), nil)
	code, rpid, repoch := h.c.EndTxn("tx", pid, epoch, true, true)
	wantCode(t, "commit v5", code, nil)
	if rpid != pid || repoch != epoch+1 {
		t.Fatalf("answered %d/%d", rpid, repoch)
	}
	if ms := h.markers.take(); len(ms) != 1 || ms[0].m.ProducerEpoch != epoch+1 {
		t.Fatalf("markers %+v", ms)
	}
	// The retry with the old epoch is recognised.
	code, rpid, repoch = h.c.EndTxn("tx", pid, epoch, true, true)
	wantCode(t, "commit v5 retry", code, nil)
	if rpid != pid || repoch != epoch+1 {
		t.Fatalf("retry answered %d/%d", rpid, repoch)
	}
	// A commit with the new epoch and nothing open (Kafka's TV2 table:
	// CompleteCommit, commit, current epoch); a newer epoch is fenced.
	code, _, _ = h.c.EndTxn("tx", pid, epoch+1, true, true)
	wantCode(t, "commit with the new epoch and nothing open", code, kerr.InvalidTxnState)
	code, _, _ = h.c.EndTxn("tx", pid, epoch+2, false, true)
	wantCode(t, "abort with a newer epoch", code, kerr.ProducerFenced)
}

func TestTxnDescribeAndList(t *testing.T) {
	h := newTxnHarness(t)
	pa, ea := h.init(t, "alpha", 60000)
	wantCode(t, "add", h.c.AddPartitions("alpha", pa, ea, []TopicPartition{tpA1, tpA0, {"b", 3}}), nil)
	h.init(t, "beta", 30000)
	start := h.clk.Now().UnixMilli()
	h.clk.Advance(5 * time.Second)

	s := h.c.DescribeTransaction("alpha")
	if s.ErrorCode != 0 || s.State != "Ongoing" || s.ProducerID != pa || s.ProducerEpoch != ea || s.TimeoutMillis != 60000 ||
		s.StartTimestamp != start || len(s.Topics) != 2 || s.Topics[0].Topic != "a" || len(s.Topics[0].Partitions) != 2 {
		t.Fatalf("describe %+v", s)
	}
	if s := h.c.DescribeTransaction("beta"); s.State != "Empty" || s.StartTimestamp != -1 || len(s.Topics) != 0 {
		t.Fatalf("describe beta %+v", s)
	}
	if s := h.c.DescribeTransaction(""); s.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("describe empty %+v", s)
	}

	for _, tc := range []struct {
		name    string
		f       ListFilter
		want    []string
		unknown int
	}{
		{"all", ListFilter{DurationMs: -1}, []string{"alpha", "beta"}, 0},
		{"state", ListFilter{States: []string{"Ongoing"}, DurationMs: -1}, []string{"alpha"}, 0},
		{"unknown state", ListFilter{States: []string{"Bogus"}, DurationMs: -1}, nil, 1},
		{"producer id", ListFilter{ProducerIDs: []int64{pa}, DurationMs: -1}, []string{"alpha"}, 0},
		{"running longer than 4 s", ListFilter{DurationMs: 4000}, []string{"alpha", "beta"}, 0}, // beta never started: -1 start
		{"running longer than 5 s", ListFilter{DurationMs: 5000}, []string{"beta"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unknown, code := h.c.ListTransactions(tc.f)
			if code != 0 || len(unknown) != tc.unknown || len(got) != len(tc.want) {
				t.Fatalf("got %+v unknown %v code %d", got, unknown, code)
			}
			for i := range got {
				if got[i].TransactionalID != tc.want[i] {
					t.Fatalf("got %+v", got)
				}
			}
		})
	}
}

func TestProducerIDFile(t *testing.T) {
	for _, next := range []int64{0, 1000, math.MaxInt64 - 5} {
		got, err := decodeProducerIDs(encodeProducerIDs(next))
		if err != nil || got != next {
			t.Fatalf("round trip %d: %d %v", next, got, err)
		}
	}
	// Golden bytes: version 0, next block 2000, CRC-32C.
	want := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0x07, 0xd0}
	if b := encodeProducerIDs(2000); string(b[:10]) != string(want) {
		t.Fatalf("encoded % x", b)
	}
	good := encodeProducerIDs(3000)
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x40
		if _, err := decodeProducerIDs(bad); !errors.Is(err, errProducerIDsCorrupt) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
	if _, err := decodeProducerIDs(good[:13]); !errors.Is(err, errProducerIDsCorrupt) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestProducerIDBlocksSurviveRestart(t *testing.T) {
	st := &memPIDStore{}
	m, err := newProducerIDManager(st)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 1001; i++ {
		id, err := m.generate()
		if err != nil || id != i {
			t.Fatalf("id %d: %d %v", i, id, err)
		}
	}
	if st.writes != 2 {
		t.Fatalf("%d block writes, want 2", st.writes)
	}
	// A restart (or kill -9) starts past every persisted block.
	m2, err := newProducerIDManager(st)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := m2.generate(); id != 2000 {
		t.Fatalf("after restart: %d", id)
	}
}

func TestTxnClosedCoordinator(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	h.c.Close()
	id := "tx"
	_, _, code := h.c.InitProducerID(&id, 60000, -1, -1)
	wantCode(t, "init", code, kerr.CoordinatorNotAvailable)
	wantCode(t, "add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), kerr.CoordinatorNotAvailable)
	code, _, _ = h.c.EndTxn("tx", pid, epoch, true, false)
	wantCode(t, "end", code, kerr.CoordinatorNotAvailable)
	if c := h.c.VerifyProducePartition("tx", pid, epoch, "a", 0); c != kerr.NotEnoughReplicas.Code {
		t.Fatalf("produce check %v", kerr.ErrorForCode(c))
	}
	if _, _, c := h.c.ListTransactions(ListFilter{DurationMs: -1}); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("list %v", kerr.ErrorForCode(c))
	}
}

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
