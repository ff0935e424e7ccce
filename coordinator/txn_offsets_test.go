package coordinator

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// txnCommit commits offsets (partition 0 of each topic) in producer pid's
// transaction, from outside any group unless gen >= 0.
func txnCommit(e *env, group string, pid int64, epoch int16, gen int32, member string, instance *string, offsets map[string]int64) int16 {
	e.t.Helper()
	var parts []CommitPartition
	for topic, o := range offsets {
		parts = append(parts, CommitPartition{Topic: topic, Offset: o, LeaderEpoch: 3, Metadata: "txn", CommitTimestamp: e.c.Now(), ExpireTimestamp: -1})
	}
	return oneCode(e.t, e.c.TxnOffsetCommit(context.Background(), group,
		TxnCommit{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Generation: gen, MemberID: member, InstanceID: instance}, parts))
}

// endTxn does what the transaction coordinator does at the end of pid's
// transaction: the marker in the group's __consumer_offsets partition,
// then CompleteTxnOffsets.
func endTxn(e *env, group string, pid int64, epoch int16, commit bool) {
	e.t.Helper()
	p := PartitionFor(group, e.cfg.OffsetsTopicPartitions)
	log, err := e.store.Log(OffsetsTopic, p)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := log.WriteTxnMarker(partition.TxnMarker{ProducerID: pid, ProducerEpoch: epoch, Commit: commit}); err != nil {
		e.t.Fatal(err)
	}
	e.c.CompleteTxnOffsets(p, pid, commit)
}

// fetchStable is OffsetFetch of partition 0 of topics with require_stable:
// topic -> offset, or -2 for UNSTABLE_OFFSET_COMMIT.
func fetchStable(e *env, group string, topics ...string) map[string]int64 {
	e.t.Helper()
	ask := map[string][]int32{}
	for _, t := range topics {
		ask[t] = []int32{0}
	}
	os, code := e.c.FetchOffsetsStable(context.Background(), group, ask, true)
	if code != 0 {
		e.t.Fatalf("fetch: %v", kerr.ErrorForCode(code))
	}
	out := map[string]int64{}
	for _, o := range os {
		switch o.ErrorCode {
		case 0:
			out[o.Topic] = o.Offset
		case kerr.UnstableOffsetCommit.Code:
			if o.Offset != -1 {
				e.t.Fatalf("unstable partition with offset %d", o.Offset)
			}
			out[o.Topic] = -2
		default:
			e.t.Fatalf("fetch %s: %v", o.Topic, kerr.ErrorForCode(o.ErrorCode))
		}
	}
	return out
}

func TestTxnOffsetsVisibleOnlyOnCommit(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "regular commit", commit(e, "g", -1, "", map[string]int64{"b": 1}), nil)
	expectCode(t, "txn commit", txnCommit(e, "g", 100, 0, -1, "", nil, map[string]int64{"a": 5, "b": 6}), nil)

	if got := fetch(e, "g"); len(got) != 1 || got["b"] != 1 {
		t.Fatalf("pending offsets visible: %v", got)
	}
	if got := fetchStable(e, "g", "a", "b", "c"); got["a"] != -2 || got["b"] != -2 || got["c"] != -1 {
		t.Fatalf("require_stable while pending: %v", got)
	}
	// Fetching all with require_stable: only committed partitions are
	// listed, a pending one as unstable.
	all, _ := e.c.FetchOffsetsStable(context.Background(), "g", nil, true)
	if len(all) != 1 || all[0].Topic != "b" || all[0].ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("fetch all with require_stable: %+v", all)
	}
	// Another producer's abort does not touch them.
	endTxn(e, "g", 101, 0, false)
	if got := fetchStable(e, "g", "a"); got["a"] != -2 {
		t.Fatalf("other producer's marker ended the transaction: %v", got)
	}

	endTxn(e, "g", 100, 0, true)
	if got := fetchStable(e, "g", "a", "b"); got["a"] != 5 || got["b"] != 6 {
		t.Fatalf("after commit: %v", got)
	}
	os, _ := e.c.FetchOffsets(context.Background(), "g", map[string][]int32{"a": {0}})
	if o := os[0]; o.LeaderEpoch != 3 || o.Metadata != "txn" {
		t.Fatalf("committed txn offset %+v", o)
	}
	// A second marker for the same producer (the coordinator retrying)
	// changes nothing.
	endTxn(e, "g", 100, 0, false)
	if got := fetch(e, "g"); got["a"] != 5 {
		t.Fatalf("after a repeated marker: %v", got)
	}
}

func TestTxnOffsetsAbortDropped(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "regular commit", commit(e, "g", -1, "", map[string]int64{"a": 1}), nil)
	expectCode(t, "txn commit", txnCommit(e, "g", 100, 0, -1, "", nil, map[string]int64{"a": 5, "b": 6}), nil)
	endTxn(e, "g", 100, 0, false)
	if got := fetchStable(e, "g", "a", "b"); got["a"] != 1 || got["b"] != -1 {
		t.Fatalf("after abort: %v", got)
	}
	// The group of an aborted transaction with no offsets goes at the
	// next expiry pass, as any empty group without offsets.
	expectCode(t, "txn commit", txnCommit(e, "g2", 100, 1, -1, "", nil, map[string]int64{"a": 5}), nil)
	endTxn(e, "g2", 100, 1, false)
	e.c.ExpireOffsets()
	for _, l := range e.c.ListGroups(nil, nil) {
		if l.Group == "g2" {
			t.Fatal("empty group of an aborted transaction kept")
		}
	}
}

// TestTxnOffsetsAndRegularCommits checks Kafka's rule between a
// transactional commit and a regular one for the same partition: the one
// written last to __consumer_offsets wins when the transaction commits.
func TestTxnOffsetsAndRegularCommits(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "regular before", commit(e, "g", -1, "", map[string]int64{"a": 1, "b": 1}), nil)
	expectCode(t, "txn commit", txnCommit(e, "g", 100, 0, -1, "", nil, map[string]int64{"a": 5, "b": 5}), nil)
	expectCode(t, "regular while pending", commit(e, "g", -1, "", map[string]int64{"b": 9}), nil)
	if got := fetch(e, "g"); got["a"] != 1 || got["b"] != 9 {
		t.Fatalf("while pending: %v", got)
	}
	endTxn(e, "g", 100, 0, true)
	if got := fetch(e, "g"); got["a"] != 5 || got["b"] != 9 {
		t.Fatalf("after commit: %v (want the txn offset for a, the later regular one for b)", got)
	}
	// The same after a reload.
	e.restart()
	if got := fetch(e, "g"); got["a"] != 5 || got["b"] != 9 {
		t.Fatalf("after restart: %v", got)
	}
}

func TestTxnOffsetsReload(t *testing.T) {
	e := newEnv(t, nil)
	// Committed, aborted and open transactions of three producers.
	expectCode(t, "txn 1", txnCommit(e, "g", 1, 0, -1, "", nil, map[string]int64{"a": 10}), nil)
	expectCode(t, "txn 2", txnCommit(e, "g", 2, 0, -1, "", nil, map[string]int64{"b": 20}), nil)
	expectCode(t, "txn 3", txnCommit(e, "g", 3, 0, -1, "", nil, map[string]int64{"c": 30}), nil)
	expectCode(t, "regular", commit(e, "g", -1, "", map[string]int64{"b": 2}), nil)
	endTxn(e, "g", 1, 0, true)
	endTxn(e, "g", 2, 0, false)
	// A group whose only offsets are pending.
	expectCode(t, "txn 3 other group", txnCommit(e, "only-pending", 3, 0, -1, "", nil, map[string]int64{"x": 7}), nil)

	e.restart()
	if got := fetchStable(e, "g", "a", "b", "c"); got["a"] != 10 || got["b"] != 2 || got["c"] != -2 {
		t.Fatalf("after restart: %v", got)
	}
	if got := fetchStable(e, "only-pending", "x"); got["x"] != -2 {
		t.Fatalf("pending-only group after restart: %v", got)
	}
	// The transaction coordinator completes the open one after its own
	// load.
	endTxn(e, "g", 3, 0, true)
	if p := PartitionFor("only-pending", e.cfg.OffsetsTopicPartitions); p != PartitionFor("g", e.cfg.OffsetsTopicPartitions) {
		endTxn(e, "only-pending", 3, 0, true)
	}
	if got := fetchStable(e, "g", "a", "b", "c"); got["a"] != 10 || got["b"] != 2 || got["c"] != 30 {
		t.Fatalf("after completing: %v", got)
	}
	if got := fetchStable(e, "only-pending", "x"); got["x"] != 7 {
		t.Fatalf("pending-only group after completing: %v", got)
	}
	// And the marker written before the restart now decides the load.
	e.restart()
	if got := fetchStable(e, "g", "a", "b", "c"); got["a"] != 10 || got["b"] != 2 || got["c"] != 30 {
		t.Fatalf("after second restart: %v", got)
	}
}

func TestTxnOffsetCommitValidation(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OffsetMetadataMaxBytes = 4 })
	expectCode(t, "empty group id", txnCommit(e, "", 1, 0, -1, "", nil, map[string]int64{"a": 1}), kerr.InvalidGroupID)
	expectCode(t, "member of unknown group", txnCommit(e, "nogroup", 1, 0, 1, "m", nil, map[string]int64{"a": 1}), kerr.IllegalGeneration)
	expectCode(t, "no producer id", txnCommit(e, "nogroup", -1, -1, -1, "", nil, map[string]int64{"a": 1}), kerr.InvalidProducerIDMapping)

	inst := "i"
	ids, gen := e.stableGroup("g", 1)
	expectCode(t, "member", txnCommit(e, "g", 1, 0, gen, ids[0], nil, map[string]int64{"a": 1}), nil)
	expectCode(t, "stale generation", txnCommit(e, "g", 1, 0, gen-1, ids[0], nil, map[string]int64{"a": 1}), kerr.IllegalGeneration)
	expectCode(t, "unknown member", txnCommit(e, "g", 1, 0, gen, "x", nil, map[string]int64{"a": 1}), kerr.UnknownMemberID)
	// Unlike OffsetCommit, a commit from outside the group (as every
	// TxnOffsetCommit before v3) is accepted while it has members.
	expectCode(t, "anonymous", txnCommit(e, "g", 1, 0, -1, "", nil, map[string]int64{"a": 2}), nil)

	// Static member fenced by a newer instance.
	sid := wait(t, e.join(joinReq(9, "s", "", &inst, "m"))).MemberID
	e.sync("s", 1, sid, map[string]string{sid: "a"})
	expectCode(t, "static member", txnCommit(e, "s", 1, 0, 1, sid, &inst, map[string]int64{"a": 1}), nil)
	expectCode(t, "fenced instance", txnCommit(e, "s", 1, 0, 1, "other", &inst, map[string]int64{"a": 1}), kerr.FencedInstanceID)

	// Transactional commits are allowed while the group waits for the
	// leader's assignment (no REBALANCE_IN_PROGRESS).
	_, ch := e.joinNew("g", "m")
	r0 := wait(t, e.join(joinReq(9, "g", ids[0], nil, "m")))
	wait(t, ch)
	if s := e.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state %s", s)
	}
	expectCode(t, "member while completing", txnCommit(e, "g", 1, 0, r0.Generation, ids[0], nil, map[string]int64{"a": 3}), nil)

	// Metadata over offset.metadata.max.bytes: that partition only.
	codes := e.c.TxnOffsetCommit(context.Background(), "m", TxnCommit{ProducerID: 2, Generation: -1}, []CommitPartition{
		{Topic: "a", Offset: 1, Metadata: "12345", ExpireTimestamp: -1},
		{Topic: "b", Offset: 2, Metadata: "1234", ExpireTimestamp: -1},
	})
	expectCode(t, "too large", codes[0], kerr.OffsetMetadataTooLarge)
	expectCode(t, "fits", codes[1], nil)
	endTxn(e, "m", 2, 0, true)
	if got := fetch(e, "m"); len(got) != 1 || got["b"] != 2 {
		t.Fatalf("after commit: %v", got)
	}
}

func TestTxnOffsetCommitStaleEpoch(t *testing.T) {
	e := newEnv(t, nil)
	expectCode(t, "epoch 1", txnCommit(e, "g", 1, 1, -1, "", nil, map[string]int64{"a": 1}), nil)
	endTxn(e, "g", 1, 1, true)
	// The partition knows epoch 1 now: an older one is refused and
	// leaves nothing pending.
	expectCode(t, "epoch 0", txnCommit(e, "g", 1, 0, -1, "", nil, map[string]int64{"a": 2}), kerr.InvalidProducerEpoch)
	if got := fetchStable(e, "g", "a"); got["a"] != 1 {
		t.Fatalf("after refused commit: %v", got)
	}
}

func TestTxnOffsetsExpiryAndDeletion(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OffsetsRetention = time.Hour })
	expectCode(t, "regular", commit(e, "g", -1, "", map[string]int64{"a": 1, "b": 1}), nil)
	expectCode(t, "txn", txnCommit(e, "g", 1, 0, -1, "", nil, map[string]int64{"a": 5}), nil)
	e.clk.Advance(2 * time.Hour)
	e.c.ExpireOffsets()
	// b expired; a has a pending transactional offset and stays, and so
	// does the group.
	if got := fetch(e, "g"); len(got) != 1 || got["a"] != 1 {
		t.Fatalf("after expiry: %v", got)
	}
	// A group with only pending offsets is not removed either.
	expectCode(t, "txn only", txnCommit(e, "p", 1, 0, -1, "", nil, map[string]int64{"x": 5}), nil)
	e.clk.Advance(2 * time.Hour)
	e.c.ExpireOffsets()
	if got := fetchStable(e, "p", "x"); got["x"] != -2 {
		t.Fatalf("pending-only group after expiry: %v", got)
	}

	// OffsetDelete of a pending-only partition removes it from the
	// transaction, which stays open.
	code, codes := e.c.DeleteOffsets(context.Background(), "p", []TopicPartition{{"x", 0}})
	if code != 0 || codes[0] != 0 {
		t.Fatalf("offset delete: %d %v", code, codes)
	}
	if got := fetchStable(e, "p", "x"); got["x"] != -1 {
		t.Fatalf("after offset delete: %v", got)
	}
	endTxn(e, "p", 1, 0, true)
	if got := fetch(e, "p"); len(got) != 0 {
		t.Fatalf("deleted offset committed: %v", got)
	}

	// DeleteGroups of an Empty group drops its pending offsets too.
	expectCode(t, "txn again", txnCommit(e, "d", 2, 0, -1, "", nil, map[string]int64{"y": 5}), nil)
	expectCode(t, "delete", e.c.DeleteGroup(context.Background(), "d"), nil)
	endTxn(e, "d", 2, 0, true)
	if got := fetch(e, "d"); len(got) != 0 {
		t.Fatalf("deleted group's pending offsets committed: %v", got)
	}
	e.restart()
	if got := fetchStable(e, "d", "y"); got["y"] != -1 {
		t.Fatalf("deleted group's offsets after restart: %v", got)
	}

	// A deleted topic's pending offsets go.
	expectCode(t, "txn topic", txnCommit(e, "g", 3, 0, -1, "", nil, map[string]int64{"gone": 5}), nil)
	e.c.TopicDeleted(context.Background(), "gone")
	endTxn(e, "g", 3, 0, true)
	if got := fetch(e, "g"); got["gone"] != 0 {
		t.Fatalf("deleted topic's pending offset committed: %v", got)
	}
}

// TestTxnOffsetCommitConcurrentCompletion races commits of many producers
// with the completion of their transactions (run with -race).
func TestTxnOffsetCommitConcurrentCompletion(t *testing.T) {
	e := newEnv(t, nil)
	const producers = 8
	done := make(chan struct{}, producers)
	for i := 0; i < producers; i++ {
		go func(pid int64) {
			defer func() { done <- struct{}{} }()
			for j := 0; j < 10; j++ {
				parts := []CommitPartition{{Topic: "t", Partition: int32(pid), Offset: int64(j), ExpireTimestamp: -1}}
				codes := e.c.TxnOffsetCommit(context.Background(), "g", TxnCommit{ProducerID: pid, Generation: -1}, parts)
				if codes[0] != 0 {
					t.Errorf("pid %d: %v", pid, kerr.ErrorForCode(codes[0]))
					return
				}
				p := PartitionFor("g", e.cfg.OffsetsTopicPartitions)
				log, _ := e.store.Log(OffsetsTopic, p)
				if _, err := log.WriteTxnMarker(partition.TxnMarker{ProducerID: pid, Commit: true}); err != nil {
					t.Error(err)
					return
				}
				e.c.CompleteTxnOffsets(p, pid, true)
			}
		}(int64(i))
	}
	for i := 0; i < producers; i++ {
		<-done
	}
	os, _ := e.c.FetchOffsetsStable(context.Background(), "g", nil, true)
	if len(os) != producers {
		t.Fatalf("offsets %+v", os)
	}
	for _, o := range os {
		if o.Offset != 9 || o.ErrorCode != 0 {
			t.Fatalf("offset %+v", o)
		}
	}
}

// FuzzLoadBatch feeds arbitrary batches, as read back from
// __consumer_offsets, to the loader's batch replay, after a transactional
// offset of producer 7 is pending. Invariants: no panic; a batch that is
// not a decodable marker of producer 7 leaves that offset pending unless
// it is a tombstone for its key; a decodable marker of producer 7 ends it
// (committed on commit, gone on abort).
func FuzzLoadBatch(f *testing.F) {
	g := &group{id: "g"}
	tp := topicPartition{"t", 0}
	pending := g.offsetRecord(tp, &offsetEntry{offset: 5, expireTimestamp: -1})
	for _, commit := range []bool{true, false} {
		m, err := recordbatch.BuildEndTxnMarker(10, 0, 1, 7, 0, recordbatch.EndTxnMarker{Commit: commit})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(m)
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{BaseOffset: 11, ProducerID: 7, Transactional: true, BaseSequence: 0},
		[]recordbatch.Record{g.offsetRecord(topicPartition{"u", 1}, &offsetEntry{offset: 6, expireTimestamp: -1})})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{0, 1, 2})
	c := &Coordinator{clock: clock.NewManual(time.UnixMilli(0)), log: zerolog.Nop()}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := newLoader(c)
		l.record(pending, 3, 7)
		h, err := recordbatch.ParseHeader(data)
		if err != nil || h.Size() > len(data) {
			return
		}
		batch := data[:h.Size()]
		_ = l.batch(h, batch) // errors are logged and the batch skipped
		lg := l.byID["g"]
		_, stillPending := lg.txn[7][tp]
		committed, isCommitted := lg.offsets[tp]
		var marker *recordbatch.EndTxnMarker
		if h.Control() && h.ProducerID() == 7 {
			_ = recordbatch.ForEachRecord(batch, maxDecompressed, func(r recordbatch.Record) error {
				if marker == nil {
					if m, err := recordbatch.ParseEndTxnMarker(r); err == nil {
						marker = &m
					}
				}
				return nil
			})
		}
		switch {
		case marker != nil && marker.Commit:
			if stillPending || !isCommitted || committed.offset != 5 {
				t.Fatalf("commit marker: pending %v, committed %+v %v", stillPending, committed, isCommitted)
			}
		case marker != nil:
			if stillPending || isCommitted {
				t.Fatalf("abort marker: pending %v, committed %v", stillPending, isCommitted)
			}
		case h.Control():
			if !stillPending || isCommitted {
				t.Fatalf("other control batch ended the transaction")
			}
		default:
			if isCommitted && committed.recordOffset == 3 {
				t.Fatal("pending offset committed without a marker")
			}
		}
	})
}

// BenchmarkTxnOffsetCycle is one transaction's offsets on a coordinator
// holding 10,000 other groups: TxnOffsetCommit, the marker, and
// CompleteTxnOffsets (which looks at every group of the coordinator).
func BenchmarkTxnOffsetCycle(b *testing.B) {
	c, st := benchCoordinator(b, 3)
	for i := 0; i < 10000; i++ {
		c.lookup("other-"+strconv.Itoa(i), true)
	}
	parts := []CommitPartition{{Topic: "t", Offset: 1, ExpireTimestamp: -1}, {Topic: "u", Offset: 2, ExpireTimestamp: -1}}
	p := PartitionFor("g", 3)
	log, err := st.Log(OffsetsTopic, p)
	if err != nil {
		c.CommitOffsets(context.Background(), 8, "g", -1, "", nil, parts) // creates __consumer_offsets
		if log, err = st.Log(OffsetsTopic, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		codes := c.TxnOffsetCommit(context.Background(), "g", TxnCommit{ProducerID: 1, Generation: -1}, parts)
		if codes[0] != 0 {
			b.Fatal(kerr.ErrorForCode(codes[0]))
		}
		if _, err := log.WriteTxnMarker(partition.TxnMarker{ProducerID: 1, Commit: true}); err != nil {
			b.Fatal(err)
		}
		c.CompleteTxnOffsets(p, 1, true)
	}
}
