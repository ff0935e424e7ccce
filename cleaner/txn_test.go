package cleaner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// These tests write transactional batches and markers straight into the
// log, as the transaction coordinator does.

// dirtyPass appends a record of a fresh key (so the previous active segment
// becomes cleanable) and cleans.
func (e *env) dirtyPass(l *partition.Log) {
	e.t.Helper()
	e.appendRecs(l, plain, kv(fmt.Sprintf("filler%d", l.Offsets().LogEndOffset), "x"))
	e.cleanAll(l)
}

type batchView struct {
	base, last int64
	records    int32
	control    bool
	horizon    bool
}

func views(t *testing.T, l *partition.Log) []batchView {
	t.Helper()
	var out []batchView
	for _, h := range readBatches(t, l) {
		out = append(out, batchView{h.BaseOffset(), h.LastOffset(), h.RecordCount(), h.Control(), h.HasDeleteHorizon()})
	}
	return out
}

func findBatch(vs []batchView, base int64) (batchView, bool) {
	for _, v := range vs {
		if v.base == base {
			return v, true
		}
	}
	return batchView{}, false
}

func TestLSOBoundWithOpenTransaction(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, plain, kv("a", "1"))
	e.appendRecs(l, plain, kv("a", "2"))
	txn := batchOpts{pid: 7, epoch: 0, seq: 0, transactional: true}
	e.appendRecs(l, txn, kv("k", "x")) // offset 2, transaction open
	e.appendRecs(l, plain, kv("a", "3"))
	e.appendRecs(l, plain, kv("b", "1"))
	e.cleanAll(l)
	if s := survivors(readRecs(t, l)); s != "a=2 k=x a=3 b=1 " {
		t.Fatalf("with an open transaction: %q", s)
	}
	if cp := e.cleaner.Checkpoint(tpOf(l)); cp != 2 {
		t.Fatalf("checkpoint %d, want the open transaction's segment 2", cp)
	}
	e.appendMarker(l, 7, 0, true)
	e.appendRecs(l, plain, kv("c", "1"))
	e.cleanAll(l)
	if s := survivors(readRecs(t, l)); s != "k=x a=3 b=1 c=1 " {
		t.Fatalf("after the commit: %q", s)
	}
}

// abortedTxnLog creates topic t, one batch per segment: a=1 at 0, a=bad
// at 1 in a transaction of producer 9 (epoch 0) that the ABORT marker at 2
// ends, and z=1 at 3.
func (e *env) abortedTxnLog() *partition.Log {
	e.t.Helper()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, plain, kv("a", "1"))
	e.appendRecs(l, batchOpts{pid: 9, epoch: 0, seq: 0, transactional: true}, kv("a", "bad"))
	e.appendMarker(l, 9, 0, false)
	e.appendRecs(l, plain, kv("z", "1"))
	return l
}

// Aborted data never enters the offset map (it would delete the committed
// value before it), goes in the first pass, and its marker goes two passes
// after its last batch: one stamps the horizon, one drops it.
func TestAbortedDataAndMarkerRemoval(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.abortedTxnLog()
	e.cleanAll(l)
	if s := survivors(readRecs(t, l)); s != "a=1 z=1 " {
		t.Fatalf("survivors %q", s)
	}
	vs := views(t, l)
	// The producer is still active: its last batch stays, header only, and
	// keeps the marker alive.
	if v, ok := findBatch(vs, 1); !ok || v.records != 0 {
		t.Fatalf("producer's last batch: %+v %v", v, ok)
	}
	if v, ok := findBatch(vs, 2); !ok || !v.control || v.horizon {
		t.Fatalf("marker: %+v %v", v, ok)
	}
	// Once the producer expires its empty batch goes; the marker stays
	// that pass (its batch was seen), is stamped the next, and dropped
	// after delete.retention.ms.
	e.clock.Advance(25 * time.Hour)
	e.expireProducers(l)
	e.dirtyPass(l)
	vs = views(t, l)
	if _, ok := findBatch(vs, 1); ok {
		t.Fatalf("expired producer's batch kept: %+v", vs)
	}
	if v, ok := findBatch(vs, 2); !ok || v.horizon {
		t.Fatalf("marker after its data went: %+v %v", v, ok)
	}
	e.dirtyPass(l)
	if v, ok := findBatch(views(t, l), 2); !ok || !v.horizon {
		t.Fatalf("marker not stamped: %+v %v", v, ok)
	}
	e.clock.Advance(2 * time.Second)
	e.dirtyPass(l)
	if v, ok := findBatch(views(t, l), 2); ok {
		t.Fatalf("marker past its horizon kept: %+v", v)
	}
	if s := survivors(readRecs(t, l)); s[:8] != "a=1 z=1 " {
		t.Fatalf("survivors %q", s)
	}
}

func TestCommitMarkerRemoval(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, batchOpts{pid: 3, epoch: 0, seq: 0, transactional: true}, kv("k", "1")) // 0
	e.appendMarker(l, 3, 0, true)                                                           // 1
	e.appendRecs(l, plain, kv("k", "2"))                                                    // 2
	e.clock.Advance(25 * time.Hour)
	e.expireProducers(l)                 // the producer is forgotten
	e.appendRecs(l, plain, kv("z", "1")) // 3
	e.cleanAll(l)
	vs := views(t, l)
	if _, ok := findBatch(vs, 0); ok {
		t.Fatalf("superseded committed batch kept: %+v", vs)
	}
	if v, ok := findBatch(vs, 1); !ok || v.horizon {
		t.Fatalf("marker in the pass that removed its data: %+v %v", v, ok)
	}
	e.dirtyPass(l)
	if v, ok := findBatch(views(t, l), 1); !ok || !v.horizon {
		t.Fatalf("marker not stamped: %+v %v", v, ok)
	}
	e.clock.Advance(2 * time.Second)
	e.dirtyPass(l)
	if v, ok := findBatch(views(t, l), 1); ok {
		t.Fatalf("marker past its horizon kept: %+v", v)
	}
}

// The last batch of an active idempotent producer stays as a header with
// its producer id, epoch, base sequence and last offset delta (Kafka's
// testLogCleanerRetainsProducerLastSequence).
func TestProducerLastBatchKept(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	idem := batchOpts{pid: 5, epoch: 2, seq: 0}
	e.appendRecs(l, idem, kv("k", "1")) // 0
	idem.seq = 1
	e.appendRecs(l, idem, kv("k", "2")) // 1
	ts := e.now()
	e.clock.Advance(time.Second)
	e.appendRecs(l, plain, kv("k", "3")) // 2
	e.appendRecs(l, plain, kv("z", "1")) // 3
	e.cleanAll(l)
	hs := readBatches(t, l)
	if hs[0].BaseOffset() != 1 {
		t.Fatalf("first batch %d", hs[0].BaseOffset())
	}
	h := hs[0]
	if h.RecordCount() != 0 || h.ProducerID() != 5 || h.ProducerEpoch() != 2 || h.BaseSequence() != 1 ||
		h.LastOffsetDelta() != 0 || h.BaseTimestamp() != -1 || h.MaxTimestamp() != ts || h.Codec() != recordbatch.None ||
		h.Size() != recordbatch.HeaderSize {
		t.Fatalf("header-only batch: pid %d epoch %d seq %d count %d base ts %d max ts %d", h.ProducerID(), h.ProducerEpoch(),
			h.BaseSequence(), h.RecordCount(), h.BaseTimestamp(), h.MaxTimestamp())
	}
	if s := survivors(readRecs(t, l)); s != "k=3 z=1 " {
		t.Fatalf("survivors %q", s)
	}
}

// A user key equal to a marker's key must not remove the marker
// (KAFKA-14055): control records never enter the offset map.
func TestUserKeyEqualToMarkerKey(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, batchOpts{pid: 4, epoch: 0, seq: 0, transactional: true}, kv("k", "1")) // 0
	e.appendMarker(l, 4, 0, false)                                                          // 1: ABORT, key 0,0,0,0
	e.appendRecs(l, plain, rec{Key: []byte{0, 0, 0, 0}, Value: []byte("user")})             // 2
	e.appendRecs(l, plain, kv("z", "1"))                                                    // 3
	e.cleanAll(l)
	if v, ok := findBatch(views(t, l), 1); !ok || !v.control || v.records != 1 {
		t.Fatalf("marker: %+v %v", v, ok)
	}
}

// expireProducers runs the partition's producer expiry now, as its
// periodic check would (Kafka's removeExpiredProducers), so that a test
// decides when it happens.
func (e *env) expireProducers(l *partition.Log) {
	e.t.Helper()
	l.ExpireProducers(partition.DefaultProducerIDExpirationMs)
}

// With transaction.version 2 every marker bumps the producer epoch, and
// the new epoch starts with no data batch in the producer state: Kafka's
// lastRecordsOfActiveProducers then names no data offset, and the
// cleaner keeps the producer's control batches of the current epoch
// instead (Cleaner.cleanInto, isBatchLastRecordOfProducer). So the
// superseded data batch of the old epoch goes at once, and the marker,
// once past its delete horizon, stays as an empty control batch while
// the producer is active.
func TestLastBatchFromProducerStateAfterEpochBump(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, batchOpts{pid: 11, epoch: 0, seq: 0, transactional: true}, kv("k", "1")) // 0
	e.appendMarker(l, 11, 1, true)                                                           // 1: COMMIT, epoch bumped
	e.appendRecs(l, plain, kv("k", "2"))                                                     // 2
	e.appendRecs(l, plain, kv("z", "1"))                                                     // 3
	e.cleanAll(l)
	vs := views(t, l)
	if v, ok := findBatch(vs, 0); ok {
		t.Fatalf("data batch of the old epoch kept: %+v (all %+v)", v, vs)
	}
	if v, ok := findBatch(vs, 1); !ok || !v.control || v.records != 1 || v.horizon {
		t.Fatalf("marker in the pass that removed its data: %+v %v", v, ok)
	}
	e.dirtyPass(l) // stamps the marker's horizon
	if v, ok := findBatch(views(t, l), 1); !ok || !v.horizon {
		t.Fatalf("marker not stamped: %+v %v", v, ok)
	}
	e.clock.Advance(2 * time.Second)
	e.dirtyPass(l)
	if v, ok := findBatch(views(t, l), 1); !ok || !v.control || v.records != 0 {
		t.Fatalf("active producer's marker past its horizon: %+v %v, want an empty control batch", v, ok)
	}
	// Once the partition forgets the producer, the empty batch goes.
	e.clock.Advance(25 * time.Hour)
	e.expireProducers(l)
	e.dirtyPass(l)
	if v, ok := findBatch(views(t, l), 1); ok {
		t.Fatalf("expired producer's marker kept: %+v", v)
	}
}

// The cleaned .txnindex holds an aborted transaction exactly while its
// ABORT marker cannot yet be discarded, that is while the pass still met
// a batch of the transaction (Kafka's CleanedTransactionMetadata
// .onControlBatchRead appends to the cleaned index only then). The pass
// after the last batch went keeps the marker, stamps its horizon, and
// drops the entry; read_committed no longer needs it, there is no data
// left to filter.
func TestAbortedTxnIndexEntryGoesWithLastBatch(t *testing.T) {
	e := newTestEnv(t, nil)
	e.open()
	defer e.close()
	l := e.abortedTxnLog()
	entries := func() []partition.AbortedTxn { return l.AbortedTransactions(0, l.Offsets().LogEndOffset) }
	if got := entries(); len(got) != 1 || got[0].ProducerID != 9 || got[0].FirstOffset != 1 {
		t.Fatalf("before cleaning: %+v", got)
	}
	// The producer's last batch stays as a header: a batch of the
	// transaction, so the marker and its entry stay.
	e.cleanAll(l)
	if got := entries(); len(got) != 1 {
		t.Fatalf("entry with the producer's batch kept: %+v", got)
	}
	// The producer expires: this pass removes the last batch and still
	// met it, so the marker stays unstamped and indexed.
	e.clock.Advance(25 * time.Hour)
	e.expireProducers(l)
	e.dirtyPass(l)
	if got := entries(); len(got) != 1 {
		t.Fatalf("entry in the pass that removed the last batch: %+v", got)
	}
	// The next pass meets only the marker: discardable, stamped, and no
	// longer indexed, though it stays until its horizon.
	e.dirtyPass(l)
	if v, ok := findBatch(views(t, l), 2); !ok || !v.horizon {
		t.Fatalf("marker not stamped: %+v %v", v, ok)
	}
	if got := entries(); len(got) != 0 {
		t.Fatalf("entry of a discardable marker kept: %+v", got)
	}
	files, err := e.fs.ReadDir(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Name(), ".txnindex") {
			t.Fatalf("%s left without entries (Kafka writes none)", f.Name())
		}
	}
}
