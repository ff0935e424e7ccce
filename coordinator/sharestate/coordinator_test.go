package sharestate

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/cleaner"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

var testStart = time.UnixMilli(1_800_000_000_000)

// env is a store on an in-memory file system with a topic "t" of four
// partitions, and a share coordinator over it.
type env struct {
	t     *testing.T
	fsys  *memfs.FS
	clk   *clock.Manual
	cfg   Config
	flush bool // flush.messages=1 for every topic
	store *partition.Store
	c     *Coordinator
	topic [16]byte
}

func newEnv(t *testing.T, cfg Config, flush bool) *env {
	t.Helper()
	e := &env{t: t, fsys: memfs.New(), clk: clock.NewManual(testStart), cfg: cfg, flush: flush}
	e.open()
	tp, err := e.store.CreateTopic("t", 4, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	e.topic = tp.ID
	t.Cleanup(e.close)
	return e
}

func (e *env) open() {
	e.t.Helper()
	if err := e.tryOpen(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) tryOpen() error {
	defaults := partition.DefaultLogConfig()
	if e.flush {
		defaults.FlushMessages = 1
	}
	s, err := partition.Open(partition.Config{Dir: "/data", NodeID: 1, FS: e.fsys, Clock: e.clk, Logger: zerolog.Nop(), Defaults: defaults})
	if err != nil {
		return err
	}
	c, err := New(e.cfg, s, e.clk, zerolog.Nop())
	if err != nil {
		s.Close()
		return err
	}
	e.store, e.c = s, c
	return nil
}

func (e *env) close() {
	if e.c != nil {
		e.c.Close()
		e.store.Close()
		e.c, e.store = nil, nil
	}
}

// reopen closes cleanly and opens the same data dir again.
func (e *env) reopen() {
	e.close()
	e.open()
}

func (e *env) key(group string, p int32) Key {
	return Key{GroupID: group, TopicID: e.topic, Partition: p}
}

// stateLog is the state topic's partition holding k.
func (e *env) stateLog(k Key) *partition.Log {
	e.t.Helper()
	l, err := e.store.Log(StateTopic, PartitionFor(k, int32(len(e.c.shards))))
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// recordTypes lists the types of the records in k's state partition
// from its log start: "S" snapshot, "U" update, "T" tombstone.
func (e *env) recordTypes(k Key) string {
	e.t.Helper()
	l := e.stateLog(k)
	var out string
	for off := l.Offsets().LogStartOffset; off < l.Offsets().LogEndOffset; {
		res, err := l.Read(off, 1<<20, true)
		if err != nil || len(res.Records) == 0 {
			e.t.Fatalf("reading at %d: %v", off, err)
		}
		for b := res.Records; len(b) > 0; {
			h, err := recordbatch.ParseHeader(b)
			if err != nil {
				e.t.Fatal(err)
			}
			batch := b[:h.Size()]
			b = b[h.Size():]
			off = h.LastOffset() + 1
			_ = recordbatch.ForEachRecord(batch, 1<<20, func(r recordbatch.Record) error {
				typ, rk, err := parseKey(r.Key)
				switch {
				case err != nil || rk != k:
				case r.Value == nil:
					out += "T"
				case typ == recShareSnapshot:
					out += "S"
				default:
					out += "U"
				}
				return nil
			})
		}
	}
	return out
}

// conf is DefaultConfig changed by mod.
func conf(mod func(*Config)) Config {
	c := DefaultConfig()
	if mod != nil {
		mod(&c)
	}
	return c
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestInitializeWriteRead(t *testing.T) {
	e := newEnv(t, conf(nil), false)
	k := e.key("g", 1)
	mustNil(t, e.c.Initialize(k, 3, 0))
	st, found, err := e.c.Read(k, -1)
	if err != nil || !found {
		t.Fatalf("read: %v %v", found, err)
	}
	if want := (State{StateEpoch: 3, LeaderEpoch: 0, StartOffset: 0, DeliveryCompleteCount: 0, Batches: []StateBatch{}}); !statesEqual(st, want) {
		t.Fatalf("after initialize %+v, want %+v", st, want)
	}
	mustNil(t, e.c.Write(k, 3, 0, -1, 1, []StateBatch{b(0, 0, 2, 1), b(1, 4, 0, 1)}))
	mustNil(t, e.c.Write(k, 3, 0, 2, 2, []StateBatch{b(2, 3, 2, 2)}))
	st, _, err = e.c.Read(k, -1)
	mustNil(t, err)
	want := State{StateEpoch: 3, LeaderEpoch: 0, StartOffset: 2, DeliveryCompleteCount: 2, Batches: []StateBatch{b(2, 3, 2, 2), b(4, 4, 0, 1)}}
	if !statesEqual(st, want) {
		t.Fatalf("after writes %+v, want %+v", st, want)
	}
	sum, found, err := e.c.ReadSummary(k)
	if err != nil || !found || sum != (Summary{StateEpoch: 3, LeaderEpoch: 0, StartOffset: 2, DeliveryCompleteCount: 2}) {
		t.Fatalf("summary %+v %v %v", sum, found, err)
	}
	// Initialize again (AlterShareGroupOffsets): batches dropped.
	mustNil(t, e.c.Initialize(k, 4, 10))
	st = e.mustRead(k)
	if !statesEqual(st, State{StateEpoch: 4, StartOffset: 10, Batches: []StateBatch{}}) {
		t.Fatalf("after re-initialize %+v", st)
	}
	if e.c.shardFor(k).states[k].state.SnapshotEpoch != 1 {
		t.Errorf("snapshot epoch %d after the second initialize", e.c.shardFor(k).states[k].state.SnapshotEpoch)
	}
}

// mustRead is Read with no leader epoch check: the test fails on an error
// or a share-partition without state.
func (e *env) mustRead(k Key) State {
	e.t.Helper()
	st, found, err := e.c.Read(k, -1)
	if err != nil || !found {
		e.t.Fatalf("read %+v: found %v, %v", k, found, err)
	}
	return st
}

// readFound is Read with no leader epoch check, failing the test on an
// error, so that an error is never taken for "not found".
func (e *env) readFound(k Key) bool {
	e.t.Helper()
	_, found, err := e.c.Read(k, -1)
	if err != nil {
		e.t.Fatalf("read %+v: %v", k, err)
	}
	return found
}

func statesEqual(a, b State) bool {
	if len(a.Batches) == 0 && len(b.Batches) == 0 {
		a.Batches, b.Batches = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// TestErrors is the table of Kafka's share coordinator answers: epochs
// fencing, uninitialized state, unknown topics, bad partitions.
func TestErrors(t *testing.T) {
	e := newEnv(t, conf(nil), false)
	k := e.key("g", 0)
	mustNil(t, e.c.Initialize(k, 2, 0))
	if _, _, err := e.c.Read(k, 5); err != nil { // the leader epoch becomes 5
		t.Fatal(err)
	}
	unknownTopic := Key{GroupID: "g", TopicID: [16]byte{1}, Partition: 0}
	noPartition := e.key("g", 9)
	uninit := e.key("other", 0)
	for _, tc := range []struct {
		name string
		op   func() error
		want error
	}{
		{"write with an older leader epoch", func() error { return e.c.Write(k, 2, 4, -1, -1, nil) }, kerr.FencedLeaderEpoch},
		{"write with an older state epoch", func() error { return e.c.Write(k, 1, 5, -1, -1, nil) }, kerr.FencedStateEpoch},
		{"write checks the leader epoch first", func() error { return e.c.Write(k, 1, 4, -1, -1, nil) }, kerr.FencedLeaderEpoch},
		{"write with -1 epochs", func() error { return e.c.Write(k, -1, -1, -1, -1, nil) }, nil},
		{"write with newer epochs", func() error { return e.c.Write(k, 3, 6, -1, -1, nil) }, nil},
		{"read with an older leader epoch", func() error { _, _, err := e.c.Read(k, 4); return err }, kerr.FencedLeaderEpoch},
		{"initialize with an older state epoch", func() error { return e.c.Initialize(k, 1, 0) }, kerr.FencedStateEpoch},
		{"write uninitialized", func() error { return e.c.Write(uninit, 0, 0, 0, 0, nil) }, kerr.InvalidRequest},
		{"write negative partition", func() error { return e.c.Write(e.key("g", -1), 0, 0, 0, 0, nil) }, kerr.InvalidRequest},
		{"initialize unknown topic", func() error { return e.c.Initialize(unknownTopic, 0, 0) }, kerr.UnknownTopicOrPartition},
		{"initialize past the partitions", func() error { return e.c.Initialize(noPartition, 0, 0) }, kerr.UnknownTopicOrPartition},
		{"summary unknown topic", func() error { _, _, err := e.c.ReadSummary(unknownTopic); return err }, kerr.UnknownTopicOrPartition},
		{"delete unknown topic", func() error { return e.c.Delete(unknownTopic) }, kerr.UnknownTopicOrPartition},
		{"delete uninitialized", func() error { return e.c.Delete(uninit) }, nil},
		{"read negative partition", func() error { _, _, err := e.c.Read(e.key("g", -1), 0); return err }, kerr.InvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, found, err := e.c.Read(uninit, 0); found || err != nil {
		t.Errorf("read uninitialized: found %v, %v", found, err)
	}
	if _, found, err := e.c.ReadSummary(uninit); found || err != nil {
		t.Errorf("summary uninitialized: found %v, %v", found, err)
	}
}

// TestLeaderEpochFromRead: a read with a new leader epoch writes it; a
// write never changes it (Kafka's writeState keeps the stored one).
func TestLeaderEpochFromRead(t *testing.T) {
	e := newEnv(t, conf(nil), false)
	k := e.key("g", 0)
	mustNil(t, e.c.Initialize(k, 0, 0))
	end := e.stateLog(k).Offsets().LogEndOffset
	if _, _, err := e.c.Read(k, 0); err != nil {
		t.Fatal(err)
	}
	if got := e.stateLog(k).Offsets().LogEndOffset; got != end {
		t.Fatalf("a read with the same leader epoch wrote %d records", got-end)
	}
	mustNil(t, e.c.Write(k, 0, 9, -1, -1, nil))
	if s, _, _ := e.c.ReadSummary(k); s.LeaderEpoch != 0 {
		t.Fatalf("a write set the leader epoch to %d", s.LeaderEpoch)
	}
	if _, _, err := e.c.Read(k, 7); err != nil {
		t.Fatal(err)
	}
	if s, _, _ := e.c.ReadSummary(k); s.LeaderEpoch != 7 {
		t.Fatalf("leader epoch %d after a read with 7", s.LeaderEpoch)
	}
	e.reopen()
	if _, _, err := e.c.Read(k, 6); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("after restart a read with 6: %v", err)
	}
}

// TestSnapshotCadence: with share.coordinator.snapshot.update.records.per.snapshot
// = 3, an initialize snapshot, three updates, a snapshot of the merged
// state, updates again; the state read back is the same either way and
// after a restart.
func TestSnapshotCadence(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  string
	}{
		{3, "SUUUSUUUSU"},
		{1, "SUSUSUSUSU"},
		{0, "SSSSSSSSSS"},
		{500, "SUUUUUUUUU"},
	} {
		t.Run("", func(t *testing.T) {
			e := newEnv(t, conf(func(c *Config) { c.SnapshotUpdateRecordsPerSnapshot = tc.limit }), false)
			k := e.key("g", 2)
			mustNil(t, e.c.Initialize(k, 0, 0))
			for i := int64(0); i < 9; i++ {
				mustNil(t, e.c.Write(k, 0, 0, i, int32(i), []StateBatch{b(i, i+2, int8(2*(i%2)), int16(1+i%3))}))
			}
			if got := e.recordTypes(k); got != tc.want {
				t.Errorf("records %s, want %s", got, tc.want)
			}
			before := e.mustRead(k)
			want := State{StartOffset: 8, DeliveryCompleteCount: 8, Batches: []StateBatch{b(8, 10, 0, 3)}}
			if !statesEqual(before, want) {
				t.Errorf("state %+v, want %+v", before, want)
			}
			e.reopen()
			after := e.mustRead(k)
			if !statesEqual(before, after) {
				t.Errorf("after restart %+v, before %+v", after, before)
			}
		})
	}
}

func TestDeleteTombstone(t *testing.T) {
	e := newEnv(t, conf(nil), false)
	k, other := e.key("g", 0), e.key("h", 0)
	mustNil(t, e.c.Initialize(k, 1, 5))
	mustNil(t, e.c.Initialize(other, 1, 5))
	mustNil(t, e.c.Delete(k))
	if got := e.recordTypes(k); got != "ST" {
		t.Errorf("records %s", got)
	}
	if e.readFound(k) {
		t.Error("found after delete")
	}
	if err := e.c.Write(k, 1, 0, -1, -1, nil); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("write after delete: %v", err)
	}
	// Epochs go with the state: a lower state epoch initializes again.
	mustNil(t, e.c.Initialize(k, 0, 0))
	mustNil(t, e.c.Delete(k))
	e.reopen()
	if e.readFound(k) {
		t.Error("found after delete and restart")
	}
	if !e.readFound(other) {
		t.Error("the other share-partition is gone")
	}
	// A deleted topic's state goes too.
	mustNil(t, e.store.DeleteTopic("t"))
	e.c.CleanupDeletedTopics()
	if got := e.c.shardFor(other).states[other]; got != nil {
		t.Errorf("state of a deleted topic kept: %+v", got)
	}
}

// TestRestartLoadsEveryState writes many share-partitions across the
// state topic's partitions, restarts, and finds each as it was.
func TestRestartLoadsEveryState(t *testing.T) {
	e := newEnv(t, conf(func(c *Config) { c.SnapshotUpdateRecordsPerSnapshot = 4 }), false)
	want := map[Key]State{}
	for g := 0; g < 20; g++ {
		for p := int32(0); p < 4; p++ {
			k := e.key(string(rune('a'+g))+"-group", p)
			mustNil(t, e.c.Initialize(k, int32(g), 0))
			for i := int64(0); i < int64(g%7); i++ {
				mustNil(t, e.c.Write(k, int32(g), -1, i, int32(i), []StateBatch{b(i, i+3, 0, int16(i+1))}))
			}
			if g%5 == 0 {
				if _, _, err := e.c.Read(k, int32(g)); err != nil {
					t.Fatal(err)
				}
			}
			st := e.mustRead(k)
			want[k] = st
		}
	}
	e.reopen()
	for k, w := range want {
		got, found, err := e.c.Read(k, -1)
		if err != nil || !found || !statesEqual(got, w) {
			t.Errorf("%+v: %+v %v %v, want %+v", k, got, found, err, w)
		}
	}
}

// TestPruneAndRetentionLoadSameState: cold snapshots, then pruning up to
// the last redundant offset, then retention deleting the segments below
// it (what Kafka does instead of compacting the delete-policy topic):
// the state loads the same, from far fewer records.
func TestPruneAndRetentionLoadSameState(t *testing.T) {
	e := newEnv(t, conf(func(c *Config) {
		c.StateTopicPartitions, c.StateTopicSegmentBytes, c.ColdPartitionSnapshotInterval = 1, 1024, time.Minute
	}), false)
	keys := []Key{e.key("g", 0), e.key("g", 1), e.key("h", 3)}
	for _, k := range keys {
		mustNil(t, e.c.Initialize(k, 1, 0))
	}
	for i := int64(0); i < 60; i++ {
		k := keys[i%3]
		mustNil(t, e.c.Write(k, 1, 0, i/3, int32(i), []StateBatch{b(i, i+5, int8(2*(i%2)), int16(1+i%4))}))
	}
	want := map[Key]State{}
	for _, k := range keys {
		want[k] = e.mustRead(k)
	}
	l := e.stateLog(keys[0])
	if e.c.Prune(); l.Offsets().LogStartOffset != 0 {
		t.Fatal("pruned while the initialize snapshots are the latest")
	}
	e.clk.Advance(2 * time.Minute)
	e.c.SnapshotColdPartitions()
	if got := e.recordTypes(keys[0]); got[len(got)-1] != 'S' {
		t.Fatalf("no cold snapshot: %s", got)
	}
	end := l.Offsets().LogEndOffset
	e.c.Prune()
	if got := l.Offsets().LogStartOffset; got != end-3 {
		t.Fatalf("log start %d after pruning, want %d (the first of the 3 cold snapshots)", got, end-3)
	}
	segs := len(l.Segments())
	if n, err := cleaner.DeleteOldSegments(l, e.clk.Now().UnixMilli()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments of %d: %v", n, segs, err)
	}
	// A second cold pass writes nothing: every state was snapshotted so.
	e.c.SnapshotColdPartitions()
	if l.Offsets().LogEndOffset != end {
		t.Fatal("a second cold pass wrote again")
	}
	e.reopen()
	for _, k := range keys {
		got := e.mustRead(k)
		if !statesEqual(got, want[k]) {
			t.Errorf("%+v after prune and restart: %+v, want %+v", k, got, want[k])
		}
	}
	if got := e.recordTypes(keys[0]); got != "S" {
		t.Errorf("records left %s", got)
	}
}

// TestCrashKeepsEveryAnsweredWrite crashes the machine at every
// file-system operation of a run of writes (flush.messages=1, the flush
// policy that makes an append durable when it returns): after the crash
// the state loads as it was after the last write that returned nil, or
// after the write in flight.
func TestCrashKeepsEveryAnsweredWrite(t *testing.T) {
	const writes = 8
	run := func(e *env, k Key, done func(i int)) {
		if e.c.Initialize(k, 1, 0) != nil {
			return
		}
		done(0)
		for i := int64(0); i < writes; i++ {
			if e.c.Write(k, 1, 0, i/2, int32(i), []StateBatch{b(i, i+1, int8(2*(i%2)), int16(1+i%3))}) != nil {
				return
			}
			done(int(i) + 1)
		}
	}
	// The reference run: the state after each step.
	ref := newEnv(t, conf(func(c *Config) { c.SnapshotUpdateRecordsPerSnapshot, c.StateTopicPartitions = 3, 2 }), true)
	k := ref.key("g", 0)
	var states []State
	run(ref, k, func(int) {
		st := ref.mustRead(k)
		states = append(states, st)
	})
	if len(states) != writes+1 {
		t.Fatalf("reference run: %d steps", len(states))
	}
	for n := 0; n < 5000; n++ {
		e := newEnv(t, conf(func(c *Config) { c.SnapshotUpdateRecordsPerSnapshot, c.StateTopicPartitions = 3, 2 }), true)
		k := e.key("g", 0) // the topic id is new in every env
		e.fsys.FailAfter(n)
		acked := -1
		run(e, k, func(i int) { acked = i })
		finished := e.fsys.Ops() < n
		after := e.fsys.CrashClone()
		e.c.Close()
		e.store.Close()
		e.c, e.store = nil, nil
		e.fsys = after
		if err := e.tryOpen(); err != nil {
			t.Fatalf("n=%d: open after crash: %v", n, err)
		}
		got, found, err := e.c.Read(k, -1)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		switch {
		case !found:
			if acked >= 0 {
				t.Fatalf("n=%d: state lost after %d answered writes", n, acked)
			}
		case acked >= 0 && statesEqual(got, states[acked]):
		case acked+1 < len(states) && statesEqual(got, states[acked+1]):
		default:
			t.Fatalf("n=%d: after %d answered writes the state is %+v", n, acked, got)
		}
		if finished {
			t.Logf("crashed at each of %d file-system operations", n)
			return
		}
	}
	t.Fatal("the run never finished")
}

// TestCompressedBatchesLoad: with share.coordinator.state.topic.compression.codec
// set, the batches are compressed and load back the same.
func TestCompressedBatchesLoad(t *testing.T) {
	for _, codec := range []recordbatch.Codec{recordbatch.Gzip, recordbatch.Zstd} {
		e := newEnv(t, conf(func(c *Config) { c.Codec = codec }), false)
		k := e.key("g", 0)
		mustNil(t, e.c.Initialize(k, 0, 0))
		mustNil(t, e.c.Write(k, 0, 0, -1, 3, []StateBatch{b(0, 2, 2, 1), b(3, 7, 0, 2)}))
		res, err := e.stateLog(k).Read(0, 1<<20, true)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := recordbatch.ParseHeader(res.Records); err != nil || h.Codec() != codec {
			t.Fatalf("%v: batch codec %v, %v", codec, h.Codec(), err)
		}
		before := e.mustRead(k)
		e.reopen()
		if after := e.mustRead(k); !statesEqual(before, after) {
			t.Errorf("%v: %+v after restart, want %+v", codec, after, before)
		}
	}
}

// TestFailedWriteChangesNothing: an fsync failing under a write (with
// flush.messages=1) answers NOT_COORDINATOR, as Kafka maps a storage
// error, and leaves the state as it was; a full disk likewise.
func TestFailedWriteChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		fault memfs.FaultKind
		want  error
	}{
		{memfs.SyncError, kerr.NotCoordinator},
		{memfs.NoSpace, kerr.NotCoordinator},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			e := newEnv(t, conf(nil), true)
			k := e.key("g", 0)
			mustNil(t, e.c.Initialize(k, 0, 0))
			before := e.mustRead(k)
			e.fsys.Inject(&memfs.Fault{Kind: tc.fault, Match: memfs.HasSuffix(".log")})
			err := e.c.Write(k, 0, 0, 1, 1, []StateBatch{b(1, 2, 2, 1)})
			if !errors.Is(err, tc.want) {
				t.Fatalf("write: %v, want %v", err, tc.want)
			}
			if after := e.mustRead(k); !statesEqual(before, after) {
				t.Errorf("state %+v after a failed write, was %+v", after, before)
			}
		})
	}
}
