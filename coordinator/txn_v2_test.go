package coordinator

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestTxnAddPartitionsTV2Rules: the implicit add of transaction.version 2
// (Kafka's handleAddPartitionsToTransaction with TV_2), rule by rule, and
// the client version each add records.
func TestTxnAddPartitionsTV2Rules(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(h *txnHarness, pid int64, epoch int16) // before the add
		pid   int64                                       // added to the producer id
		epoch int16                                       // added to the epoch
		want  *kerr.Error
		state txnState
	}{
		{"Empty starts a transaction", nil, 0, 0, nil, txnOngoing},
		{"another producer id", nil, 1, 0, kerr.InvalidProducerIDMapping, txnEmpty},
		{"an older epoch", nil, 0, -1, kerr.ProducerFenced, txnEmpty},
		{"a newer epoch", nil, 0, 1, kerr.ProducerFenced, txnEmpty},
		{"Ongoing adds", func(h *txnHarness, pid int64, e int16) {
			h.c.AddPartitionsTV2("tx", pid, e, []TopicPartition{tpA1})
		}, 0, 0, nil, txnOngoing},
		{"CompleteCommit under TV2: at the bumped epoch", func(h *txnHarness, pid int64, e int16) {
			h.c.AddPartitionsTV2("tx", pid, e, []TopicPartition{tpA1})
			h.c.EndTxn("tx", pid, e, true, true)
		}, 0, 1, nil, txnOngoing},
		{"CompleteCommit under TV2: the old epoch is fenced", func(h *txnHarness, pid int64, e int16) {
			h.c.AddPartitionsTV2("tx", pid, e, []TopicPartition{tpA1})
			h.c.EndTxn("tx", pid, e, true, true)
		}, 0, 0, kerr.ProducerFenced, txnCompleteCommit},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newTxnHarness(t)
			pid, epoch := h.init(t, "tx", 60000)
			if c.setup != nil {
				c.setup(h, pid, epoch)
			}
			wantCode(t, "add", h.c.AddPartitionsTV2("tx", pid+c.pid, epoch+c.epoch, []TopicPartition{tpA0}), c.want)
			if s := h.state("tx"); s != c.state {
				t.Fatalf("state %v, want %v", s, c.state)
			}
			if c.want == nil {
				if d := h.log.last().d; d.clientTxnVersion != tv2 || !d.hasAll([]TopicPartition{tpA0}) {
					t.Fatalf("recorded %+v", d)
				}
			}
		})
	}
	// AddPartitionsToTxn v0-3 and AddOffsetsToTxn record client version 0.
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	wantCode(t, "TV1 add", h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0}), nil)
	if d := h.log.last().d; d.clientTxnVersion != tv0 {
		t.Fatalf("TV1 add recorded client version %d", d.clientTxnVersion)
	}
}

// TestTxnProduceAddCodes: the codes a Produce v12+ gets from the implicit
// add, mapped as Kafka's AddPartitionsToTxnManager and ReplicaManager map
// them.
func TestTxnProduceAddCodes(t *testing.T) {
	h := newTxnHarness(t)
	pid, epoch := h.init(t, "tx", 60000)
	wantCode(t, "ongoing commit", h.c.AddProducePartition("tx", pid, epoch, "a", 0), nil)
	for _, c := range []struct {
		name  string
		id    string
		pid   int64
		epoch int16
		want  *kerr.Error
	}{
		{"fenced epoch", "tx", pid, epoch - 1, kerr.InvalidProducerEpoch},
		{"unknown id", "nope", pid, epoch, kerr.InvalidProducerIDMapping},
		{"empty id", "", pid, epoch, kerr.InvalidRequest},
		{"already in", "tx", pid, epoch, nil},
	} {
		wantCode(t, c.name, h.c.AddProducePartition(c.id, c.pid, c.epoch, "a", 0), c.want)
	}
	// A transaction left completing (its marker failed): retriable.
	h.markers.fail[tpA0] = errTestMarker
	code, _, _ := h.c.EndTxn("tx", pid, epoch, true, true)
	wantCode(t, "commit with a failing marker", code, nil)
	wantCode(t, "while completing", h.c.AddProducePartition("tx", pid, epoch+1, "a", 1), kerr.NotEnoughReplicas)
	// A write to __transaction_state that fails.
	delete(h.markers.fail, tpA0)
	h.c.AbortTimedOut() // completes the commit
	h.log.fail = errTestMarker
	wantCode(t, "state write fails", h.c.AddProducePartition("tx", pid, epoch+1, "a", 1), kerr.UnknownServerError)
}

var errTestMarker = errTest("injected")

type errTest string

func (e errTest) Error() string { return string(e) }

// TestTxnRecordVersionFollowsLevel: the finalized transaction.version
// decides the __transaction_state value version, as Kafka's
// transactionLogValueVersion: 0 below level 1 (no TV2 fields), 1 from it.
func TestTxnRecordVersionFollowsLevel(t *testing.T) {
	for _, c := range []struct {
		level   int16
		version int16
	}{{0, 0}, {1, 1}, {2, 1}} {
		var got []int16
		h := newTxnHarness(t)
		h.c.txnLog = txnLogFunc(func(id string, key, value []byte) {
			var v kmsg.TxnMetadataValue
			if err := v.ReadFrom(value); err != nil {
				t.Fatal(err)
			}
			got = append(got, v.Version)
		})
		h.c.SetTransactionVersion(c.level)
		pid, epoch := h.init(t, "tx", 60000)
		h.c.AddPartitions("tx", pid, epoch, []TopicPartition{tpA0})
		if len(got) != 2 || got[0] != c.version || got[1] != c.version {
			t.Fatalf("level %d: value versions %v, want %d", c.level, got, c.version)
		}
	}
}

// txnLogFunc is a txnLog that hands each record to a function.
type txnLogFunc func(id string, key, value []byte)

func (f txnLogFunc) appendTxn(id string, rec recordbatch.Record) error {
	f(id, rec.Key, rec.Value)
	return nil
}

// TestTxnV2StateSurvivesRestart: TV2 transitions, with their previous and
// next producer ids and client version, are read back after a restart,
// and the id goes on where it was: the retry of the last EndTxn v5 is
// still recognised, and an epoch-exhausting commit's rotation to a new
// producer id survives. (The kill -9 case is
// integration.TestTxnV2KillRecovery.)
func TestTxnV2StateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	st, c := openTxnStore(t, dir, clk)
	if _, err := st.CreateTopic("data", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	id := "tx"
	pid, e0, code := c.InitProducerID(&id, 60000, -1, -1)
	wantCode(t, "init", code, nil)
	wantCode(t, "implicit add", c.AddProducePartition(id, pid, e0, "data", 0), nil)
	code, _, _ = c.EndTxn(id, pid, e0, true, true)
	wantCode(t, "commit v5", code, nil)
	// Near exhaustion: a TV2 commit at 32766 rotates the producer id.
	tx := c.lookup(id)
	tx.mu.Lock()
	nd := tx.data.clone()
	nd.producerEpoch = math.MaxInt16 - 1
	wantCode(t, "jump the epoch", c.transitLocked(tx, nd), nil)
	tx.mu.Unlock()
	wantCode(t, "add at 32766", c.AddProducePartition(id, pid, math.MaxInt16-1, "data", 0), nil)
	code, rpid, repoch := c.EndTxn(id, pid, math.MaxInt16-1, true, true)
	if code != 0 || rpid == pid || repoch != 0 {
		t.Fatalf("rotating commit: %v %d/%d", kerr.ErrorForCode(code), rpid, repoch)
	}
	c.Close()
	st.Close()

	st2, c2 := openTxnStore(t, dir, clk)
	defer st2.Close()
	defer c2.Close()
	s := c2.DescribeTransaction(id)
	if s.State != "CompleteCommit" || s.ProducerID != rpid || s.ProducerEpoch != 0 {
		t.Fatalf("after restart %+v", s)
	}
	d := c2.lookup(id).view.Load()
	if d.clientTxnVersion != tv2 || d.prevProducerID != pid || d.nextProducerID != noProducerID {
		t.Fatalf("TV2 fields after restart: %+v", d)
	}
	// The retry of the rotating commit (old id at 32766) is recognised.
	code, p, e := c2.EndTxn(id, pid, math.MaxInt16-1, true, true)
	if code != 0 || p != rpid || e != 0 {
		t.Fatalf("retry after restart: %v %d/%d", kerr.ErrorForCode(code), p, e)
	}
	// And the new id carries on.
	wantCode(t, "add with the new id", c2.AddProducePartition(id, rpid, 0, "data", 0), nil)
	code, _, e = c2.EndTxn(id, rpid, 0, false, true)
	if code != 0 || e != 1 {
		t.Fatalf("abort with the new id: %v epoch %d", kerr.ErrorForCode(code), e)
	}
}
