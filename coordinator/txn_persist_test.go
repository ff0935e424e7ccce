package coordinator

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// openTxnStore opens a store over dir with a small __transaction_state.
func openTxnStore(t *testing.T, dir string, clk clock.Clock) (*partition.Store, *TxnCoordinator) {
	t.Helper()
	lg := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	st, err := partition.Open(partition.Config{Dir: dir, NodeID: 1, Clock: clk, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultTxnConfig()
	cfg.TopicPartitions = 3
	cfg.Clock, cfg.Logger = clk, lg
	c, err := NewTxnCoordinator(cfg, st, nil)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return st, c
}

// lastBatch returns the header of the last batch in topic-partition.
func lastBatch(t *testing.T, st *partition.Store, topic string, p int32) recordbatch.Header {
	t.Helper()
	log, err := st.Log(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := log.Read(log.Offsets().LogStartOffset, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	var last recordbatch.Header
	for b := res.Records; len(b) > 0; {
		h, err := recordbatch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		last = h
		b = b[h.Size():]
	}
	if last == nil {
		t.Fatalf("%s-%d is empty", topic, p)
	}
	return last
}

func TestTxnStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	st, c := openTxnStore(t, dir, clk)
	if _, err := st.CreateTopic("data", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	id := "tx"
	pid, epoch, code := c.InitProducerID(&id, 60000, -1, -1)
	wantCode(t, "init", code, nil)
	wantCode(t, "add", c.AddPartitions(id, pid, epoch, []TopicPartition{{"data", 0}, {"data", 1}}), nil)
	code, _, _ = c.EndTxn(id, pid, epoch, true, false)
	wantCode(t, "commit", code, nil)
	if h := lastBatch(t, st, "data", 1); !h.Control() || h.ProducerID() != pid {
		t.Fatal("no commit marker on data-1")
	}
	open := "open"
	opid, oepoch, code := c.InitProducerID(&open, 60000, -1, -1)
	wantCode(t, "init open", code, nil)
	wantCode(t, "add open", c.AddPartitions(open, opid, oepoch, []TopicPartition{{"data", 0}}), nil)
	idem, _, _ := c.InitProducerID(nil, 0, -1, -1)
	c.Close()
	st.Close()

	st, c = openTxnStore(t, dir, clk)
	defer st.Close()
	defer c.Close()
	if s := c.DescribeTransaction(id); s.ErrorCode != 0 || s.State != "CompleteCommit" || s.ProducerID != pid || s.ProducerEpoch != epoch {
		t.Fatalf("after restart %+v", s)
	}
	if s := c.DescribeTransaction(open); s.State != "Ongoing" || len(s.Topics) != 1 {
		t.Fatalf("open after restart %+v", s)
	}
	p2, e2, code := c.InitProducerID(&id, 60000, -1, -1)
	wantCode(t, "init after restart", code, nil)
	if p2 != pid || e2 != epoch+1 {
		t.Fatalf("after restart %d/%d", p2, e2)
	}
	// Producer ids never repeat across restarts.
	next, _, _ := c.InitProducerID(nil, 0, -1, -1)
	if next <= idem || next < ProducerIDBlockSize {
		t.Fatalf("producer id %d after restart (before: %d)", next, idem)
	}
}

// failingMarkers fails every marker, leaving transactions in Prepare*.
type failingMarkers struct{}

func (failingMarkers) writeMarker(TopicPartition, partition.TxnMarker) error {
	return partition.ErrStorage
}

func TestTxnPrepareCompletedAfterRestart(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(map[bool]string{true: "commit", false: "abort"}[commit], func(t *testing.T) {
			dir := t.TempDir()
			clk := clock.NewManual(time.Unix(1_700_000_000, 0))
			st, c := openTxnStore(t, dir, clk)
			if _, err := st.CreateTopic("data", 1, nil, false); err != nil {
				t.Fatal(err)
			}
			id := "tx"
			pid, epoch, _ := c.InitProducerID(&id, 60000, -1, -1)
			wantCode(t, "add", c.AddPartitions(id, pid, epoch, []TopicPartition{{"data", 0}}), nil)
			c.markers = failingMarkers{} // the broker "dies" after Prepare* is written
			code, _, _ := c.EndTxn(id, pid, epoch, commit, false)
			wantCode(t, "end", code, nil)
			want := "PrepareAbort"
			if commit {
				want = "PrepareCommit"
			}
			if s := c.DescribeTransaction(id); s.State != want {
				t.Fatalf("state %s", s.State)
			}
			c.Close()
			st.Close()

			st, c = openTxnStore(t, dir, clk)
			defer st.Close()
			defer c.Close()
			want = "CompleteAbort"
			if commit {
				want = "CompleteCommit"
			}
			if s := c.DescribeTransaction(id); s.State != want || len(s.Topics) != 0 {
				t.Fatalf("after restart %+v", s)
			}
			h := lastBatch(t, st, "data", 0)
			if !h.Control() || h.ProducerID() != pid || h.ProducerEpoch() != epoch {
				t.Fatal("no marker on data-0 after restart")
			}
			code, _, _ = c.EndTxn(id, pid, epoch, commit, false)
			wantCode(t, "retry of the EndTxn after restart", code, nil)
		})
	}
}

func TestTxnTopicCreatedCompacted(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	st, c := openTxnStore(t, t.TempDir(), clk)
	defer st.Close()
	defer c.Close()
	if st.Topic(TxnTopic) != nil {
		t.Fatal("created before first use")
	}
	tp, err := c.EnsureTxnTopic()
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.Partitions) != 3 || tp.Config.CleanupPolicy != "compact" || !tp.Internal {
		t.Fatalf("topic %+v", tp)
	}
	id := "x"
	_, _, code := c.InitProducerID(&id, 0, -1, -1)
	if code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("code %d", code)
	}
}

func TestTxnLoadSkipsUndecodableRecords(t *testing.T) {
	good := txnRecord("ok", &txnData{producerID: 5, prevProducerID: -1, nextProducerID: -1, producerEpoch: 2, lastEpoch: -1,
		timeoutMs: 1000, state: txnCompleteCommit, partitions: map[TopicPartition]struct{}{}, startMs: 1, lastUpdateMs: 2})
	gone := txnRecord("gone", &txnData{producerID: 6, state: txnEmpty, partitions: map[TopicPartition]struct{}{}})
	recs := []recordbatch.Record{
		good,
		{OffsetDelta: 1, Key: []byte{0, 9, 'x'}, Value: []byte{1}},                  // unknown key version
		{OffsetDelta: 2, Key: txnRecord("bad", nil).Key, Value: []byte{0, 1, 0xff}}, // truncated value
		{OffsetDelta: 3, Key: gone.Key, Value: gone.Value},
		{OffsetDelta: 4, Key: gone.Key}, // tombstone
	}
	batch, err := recordbatch.Build(recordbatch.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	c := newTxnCoordinator(DefaultTxnConfig(), nil)
	out := map[string]*txnData{}
	next, err := c.loadTxnBatches(batch, out)
	if err != nil || next != 5 {
		t.Fatalf("next %d err %v", next, err)
	}
	if len(out) != 1 || out["ok"] == nil || out["ok"].producerEpoch != 2 || out["ok"].state != txnCompleteCommit {
		t.Fatalf("loaded %+v", out)
	}
	if _, err := c.loadTxnBatches(batch[:20], map[string]*txnData{}); err == nil {
		t.Fatal("a truncated first batch loaded")
	}
}
