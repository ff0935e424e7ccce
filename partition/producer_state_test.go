package partition

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// pidBatch builds a batch of n records from producer pid at epoch/seq.
func pidBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, txn bool) []byte {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Value: []byte("v")}
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: testStart.UnixMilli(), MaxTimestamp: testStart.UnixMilli(),
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: txn}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSequenceValidation mirrors ProducerStateManagerTest's sequence and
// epoch cases: each step appends a batch and expects an error (or none).
func TestSequenceValidation(t *testing.T) {
	type step struct {
		epoch int16
		seq   int32
		n     int
		want  error
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{0, 0, 1, nil}, {0, 1, 2, nil}, {0, 3, 1, nil}}},
		{"gap is out of order", []step{{0, 0, 1, nil}, {0, 2, 1, ErrOutOfOrderSequence}}},
		{"unknown producer starts anywhere (KIP-360)", []step{{0, 17, 1, nil}, {0, 18, 1, nil}}},
		{"new epoch must start at 0", []step{{0, 0, 1, nil}, {1, 5, 1, ErrOutOfOrderSequence}}},
		{"new epoch at 0", []step{{0, 0, 3, nil}, {1, 0, 1, nil}, {1, 1, 1, nil}}},
		{"old epoch fenced (KIP-588)", []step{{2, 0, 1, nil}, {1, 1, 1, ErrInvalidProducerEpoch}}},
		{"sequence wraps at Int32.MaxValue", []step{{0, math.MaxInt32 - 1, 2, nil}, {0, 0, 1, nil}}},
		{"batch wrapping itself", []step{{0, math.MaxInt32, 2, nil}, {0, 1, 1, nil}}},
		{"repeat of an older, evicted batch", []step{{0, 0, 1, nil}, {0, 1, 1, nil}, {0, 2, 1, nil}, {0, 3, 1, nil}, {0, 4, 1, nil}, {0, 5, 1, nil}, {0, 0, 1, ErrOutOfOrderSequence}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open()
			defer s.Close()
			l := mustCreate(t, s, "t", 1, nil).Partitions[0]
			for i, st := range tc.steps {
				_, err := l.Append(pidBatch(t, 7, st.epoch, st.seq, st.n, false))
				if !errors.Is(err, st.want) || (st.want == nil && err != nil) {
					t.Fatalf("step %d: %v, want %v", i, err, st.want)
				}
			}
		})
	}
}

// TestDuplicateBatch: a retry of any of the last five batches gets the
// original offsets and writes nothing; an older one is out of order.
func TestDuplicateBatch(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, map[string]string{"message.timestamp.type": "LogAppendTime"}).Partitions[0]
	var bases []int64
	var times []int64
	for i := 0; i < 6; i++ {
		e.clock.Advance(time.Second)
		r := mustAppend(t, l, pidBatch(t, 9, 0, int32(2*i), 2, false))
		bases, times = append(bases, r.BaseOffset), append(times, r.LogAppendTime)
	}
	leo := l.Offsets().LogEndOffset
	for i := 1; i < 6; i++ {
		r, err := l.Append(pidBatch(t, 9, 0, int32(2*i), 2, false))
		if err != nil || !r.Duplicate || r.BaseOffset != bases[i] || r.LogAppendTime != times[i] {
			t.Fatalf("retry %d: %+v %v, want base %d time %d", i, r, err, bases[i], times[i])
		}
	}
	if _, err := l.Append(pidBatch(t, 9, 0, 0, 2, false)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("evicted retry: %v", err)
	}
	// Same first sequence but a different range is not a duplicate.
	if _, err := l.Append(pidBatch(t, 9, 0, 10, 1, false)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("partial overlap: %v", err)
	}
	if got := l.Offsets().LogEndOffset; got != leo {
		t.Fatalf("LEO %d after duplicates, want %d", got, leo)
	}
	// A duplicate from another epoch is not one.
	if r, err := l.Append(pidBatch(t, 9, 1, 0, 2, false)); err != nil || r.Duplicate {
		t.Fatalf("new epoch: %+v %v", r, err)
	}
}

// TestTransactionLSOAndMarkers: an open transaction holds the LSO at its
// first offset; markers complete it; an abort lands in the .txnindex with
// Kafka's bytes; stale coordinator epochs are fenced.
func TestTransactionLSOAndMarkers(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	mustAppend(t, l, mkBatch(t, 2, 1, 1))            // 0-1
	mustAppend(t, l, pidBatch(t, 5, 0, 0, 3, true))  // 2-4 txn of 5
	mustAppend(t, l, pidBatch(t, 6, 0, 0, 1, true))  // 5 txn of 6
	mustAppend(t, l, pidBatch(t, 7, 0, 0, 1, false)) // 6 idempotent
	if _, err := l.Append(pidBatch(t, 5, 0, 3, 1, false)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional write in open txn: %v", err)
	}
	if o := l.Offsets(); o.LastStableOffset != 2 || o.HighWatermark != 7 {
		t.Fatalf("offsets %+v, want LSO 2", o)
	}
	off, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 3, Commit: false})
	if err != nil || off != 7 {
		t.Fatalf("abort marker: %d %v", off, err)
	}
	if o := l.Offsets(); o.LastStableOffset != 5 {
		t.Fatalf("LSO %d after abort, want 5 (producer 6 still open)", o.LastStableOffset)
	}
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 2}); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("stale coordinator epoch: %v", err)
	}
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 6, ProducerEpoch: 0, CoordinatorEpoch: 3, Commit: true}); err != nil {
		t.Fatal(err)
	}
	if o := l.Offsets(); o.LastStableOffset != o.HighWatermark || o.HighWatermark != 9 {
		t.Fatalf("offsets %+v after commit", o)
	}
	if got := l.AbortedTransactions(0, 9); len(got) != 1 || got[0] != (AbortedTxn{5, 2}) {
		t.Fatalf("aborted %+v", got)
	}
	for _, r := range [][2]int64{{8, 9}, {0, 2}} {
		if got := l.AbortedTransactions(r[0], r[1]); len(got) != 0 {
			t.Fatalf("aborted in %v: %+v", r, got)
		}
	}
	// Kafka's 34-byte entry: version 0, pid 5, first 2, last 7, LSO 5.
	want, _ := hex.DecodeString("0000" + "0000000000000005" + "0000000000000002" + "0000000000000007" + "0000000000000005")
	data, err := readFile(s.fs, l.active.path(txnIndexSuffix), 1<<20)
	if err != nil || !bytes.Equal(data, want) {
		t.Fatalf("txnindex %x %v, want %x", data, err, want)
	}
	ps := l.Producers()
	if len(ps) != 3 || ps[0] != (ProducerInfo{5, 0, 2, ps[0].LastTimestamp, 3, -1}) {
		t.Fatalf("producers %+v", ps)
	}
	// An old producer epoch on a marker is fenced too.
	mustAppend(t, l, pidBatch(t, 5, 1, 0, 1, true))
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 3}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch marker: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened (clean): state from the close snapshot, the open txn of
	// producer 5 (epoch 1) holds the LSO, the aborted index is read back.
	s = e.open()
	defer s.Close()
	if n := s.RecoveryBytesRead(); n != 0 {
		t.Fatalf("clean restart read %d bytes", n)
	}
	l = s.Topic("t").Partitions[0]
	if o := l.Offsets(); o.LastStableOffset != 9 || o.HighWatermark != 10 {
		t.Fatalf("offsets after restart %+v", o)
	}
	if got := l.AbortedTransactions(3, 4); len(got) != 1 || got[0] != (AbortedTxn{5, 2}) {
		t.Fatalf("aborted after restart %+v", got)
	}
	if r, err := l.Append(pidBatch(t, 7, 0, 0, 1, false)); err != nil || !r.Duplicate || r.BaseOffset != 6 {
		t.Fatalf("duplicate after restart: %+v %v", r, err)
	}
}

// TestLSONeverPastHW: with flush.messages the HW moves after the fsync;
// the LSO follows it, and a completed transaction holds the LSO until the
// HW passes its marker.
func TestLSONeverPastHW(t *testing.T) {
	ps := newProducerState()
	open := func(pid, first int64) {
		info, err := ps.prepare(recordbatch.Header(pidBatch(t, pid, 0, 0, 1, true)), first, nil, true, false, func() string { return "t-0" })
		if err != nil {
			t.Fatal(err)
		}
		ps.apply(&info, 0)
	}
	open(1, 10)
	if got := lsoFrom(ps.spans, 5); got != 5 {
		t.Fatalf("LSO %d with HW 5, want 5", got)
	}
	if got := lsoFrom(ps.spans, 20); got != 10 {
		t.Fatalf("LSO %d, want 10", got)
	}
	mk, _ := recordbatch.BuildEndTxnMarker(0, 0, 0, 1, 0, recordbatch.EndTxnMarker{Commit: true})
	info, err := ps.prepare(recordbatch.Header(mk), 20, &recordbatch.EndTxnMarker{Commit: true}, false, false, func() string { return "t-0" })
	if err != nil {
		t.Fatal(err)
	}
	ps.apply(&info, 20)
	if got := lsoFrom(ps.spans, 20); got != 10 {
		t.Fatalf("LSO %d before the HW passes the marker, want 10", got)
	}
	if got := lsoFrom(ps.spans, 21); got != 21 {
		t.Fatalf("LSO %d after, want 21", got)
	}
}

// TestSnapshotGolden: Kafka's snapshot bytes for two producers.
func TestSnapshotGolden(t *testing.T) {
	a := newProducerEntry(1000)
	a.epoch = 2
	a.addBatch(2, 9, 55, 4, 1700000000000)
	a.coordinatorEpoch = 3
	b := newProducerEntry(7)
	b.epoch = 0
	b.lastTimestamp = 12
	b.txnFirstOffset = 40
	got := encodeSnapshot([]*producerEntry{a, b})
	want := "0001" + "5dc1d0ad" + "00000002" +
		"0000000000000007" + "0000" + "ffffffff" + "ffffffffffffffff" + "00000000" + "000000000000000c" + "ffffffff" + "0000000000000028" +
		"00000000000003e8" + "0002" + "00000009" + "0000000000000037" + "00000004" + "0000018bcfe56800" + "00000003" + "ffffffffffffffff"
	if hex.EncodeToString(got) != want {
		t.Fatalf("snapshot\n got %x\nwant %s", got, want)
	}
	back, err := decodeSnapshot(got)
	if err != nil || len(back) != 2 || back[1].lastSeq() != 9 || back[1].lastDataOffset() != 55 || back[0].txnFirstOffset != 40 || back[0].lastSeq() != -1 {
		t.Fatalf("decoded %+v %v", back, err)
	}
	got[len(got)-1] ^= 1
	if _, err := decodeSnapshot(got); !errors.Is(err, errCorruptSnapshot) {
		t.Fatalf("flipped bit: %v", err)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	a := newProducerEntry(3)
	a.addBatch(1, 4, 10, 2, 99)
	f.Add(encodeSnapshot([]*producerEntry{a}))
	f.Add(encodeSnapshot(nil))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeSnapshot(entries), b) {
			// Entries come back sorted; a valid file with unsorted
			// producers re-encodes differently but must decode the same.
			again, err := decodeSnapshot(encodeSnapshot(entries))
			if err != nil || len(again) != len(entries) {
				t.Fatalf("re-encoding: %v", err)
			}
		}
	})
}

func FuzzDecodeTxnIndex(f *testing.F) {
	f.Add(appendTxnEntry(nil, abortedEntry{1, 2, 3, 4}))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, _ := decodeTxnEntries(b)
		var out []byte
		for _, e := range entries {
			out = appendTxnEntry(out, e)
		}
		if !bytes.Equal(out, b[:len(out)]) {
			t.Fatal("valid prefix does not re-encode")
		}
	})
}

// TestRecoveryFromSnapshot: after a crash, producer state comes from the
// newest snapshot (taken at a roll) plus the batches after it; a corrupt
// snapshot is ignored and an older one (or the log start) used.
func TestRecoveryFromSnapshot(t *testing.T) {
	for _, corrupt := range []bool{false, true} {
		fsys := memfs.New()
		s, err := openMem(t, fsys)
		if err != nil {
			t.Fatal(err)
		}
		tp, err := s.CreateTopic("t", 1, map[string]string{"internal.segment.bytes": "300", "flush.messages": "1"}, false)
		if err != nil {
			t.Fatal(err)
		}
		l := tp.Partitions[0]
		for i := 0; i < 12; i++ {
			mustAppend(t, l, pidBatch(t, 4, 0, int32(i), 1, false))
		}
		mustAppend(t, l, pidBatch(t, 8, 0, 0, 2, true)) // open transaction
		first := l.Offsets().LogEndOffset - 2
		l.rollWG.Wait()
		offs, _ := l.snapshotOffsets()
		if len(offs) == 0 {
			t.Fatal("no snapshot after rolls")
		}
		if corrupt {
			name := "/data/t-0/" + snapshotName(offs[len(offs)-1])
			if err := writeFileAtomic(fsys, name, []byte("junk")); err != nil {
				t.Fatal(err)
			}
		}
		s.abandon()

		s, err = openMem(t, fsys.CrashClone())
		if err != nil {
			t.Fatal(err)
		}
		l = s.Topic("t").Partitions[0]
		if o := l.Offsets(); o.LastStableOffset != first {
			t.Fatalf("corrupt=%v: LSO %d, want the open txn's %d", corrupt, o.LastStableOffset, first)
		}
		if r, err := l.Append(pidBatch(t, 4, 0, 11, 1, false)); err != nil || !r.Duplicate || r.BaseOffset != 11 {
			t.Fatalf("corrupt=%v: retry after crash %+v %v", corrupt, r, err)
		}
		if _, err := l.Append(pidBatch(t, 4, 0, 13, 1, false)); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("corrupt=%v: gap after crash: %v", corrupt, err)
		}
		s.Close()
	}
}

// pstateView is what a crash test compares of a recovered log.
type pstateView struct {
	producers []ProducerInfo
	lso, leo  int64
	aborted   []AbortedTxn
}

// observePState opens fsys and reads the view of topic t's partition 0.
func observePState(t *testing.T, fsys *memfs.FS) (pstateView, bool) {
	t.Helper()
	s, err := openMem(t, fsys)
	if err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	defer s.Close()
	tp := s.Topic("t")
	if tp == nil {
		return pstateView{}, false
	}
	l := tp.Partitions[0]
	o := l.Offsets()
	return pstateView{l.Producers(), o.LastStableOffset, o.LogEndOffset, l.AbortedTransactions(0, o.LogEndOffset)}, true
}

// TestProducerStateCrashAtEveryOperation stops the machine at the k-th
// file-system operation of a workload with idempotent and transactional
// producers, markers and rolls, for every k and both flush policies, and
// checks that what recovery rebuilds (from snapshots and a partial
// replay) equals a replay of the whole surviving log: producers, LSO and
// aborted transactions.
func TestProducerStateCrashAtEveryOperation(t *testing.T) {
	for _, ov := range []map[string]string{
		{"internal.segment.bytes": "250", "flush.messages": "1"},
		{"internal.segment.bytes": "250"},
	} {
		sweepProducerStateCrashes(t, ov)
	}
}

func sweepProducerStateCrashes(t *testing.T, ov map[string]string) {
	for k := 0; k < 10000; k++ {
		fsys := memfs.New()
		fsys.FailAfter(k)
		if s, err := openMem(t, fsys); err == nil {
			tp, err := s.CreateTopic("t", 1, ov, false)
			if err == nil {
				l := tp.Partitions[0]
				steps := []func() error{
					func() error { _, err := l.Append(pidBatch(t, 1, 0, 0, 2, false)); return err },
					func() error { _, err := l.Append(pidBatch(t, 2, 0, 0, 1, true)); return err },
					func() error { _, err := l.Append(pidBatch(t, 1, 0, 2, 1, false)); return err },
					func() error { _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 2, CoordinatorEpoch: 1}); return err },
					func() error { _, err := l.Append(pidBatch(t, 3, 0, 0, 2, true)); return err },
					func() error { _, err := l.Append(pidBatch(t, 1, 0, 3, 2, false)); return err },
					func() error { _, err := l.Append(pidBatch(t, 2, 1, 0, 1, true)); return err },
					func() error {
						_, err := l.WriteTxnMarker(TxnMarker{ProducerID: 3, CoordinatorEpoch: 1, Commit: true})
						return err
					},
					func() error { _, err := l.Append(pidBatch(t, 1, 0, 5, 1, false)); return err },
				}
				for _, st := range steps {
					if st() != nil {
						break
					}
				}
			}
			s.Close()
		}
		finished := fsys.Ops() < k

		got, ok := observePState(t, fsys.CrashClone())
		// The reference: the same files without snapshots or the
		// clean-shutdown file, so the whole log is replayed.
		ref := fsys.CrashClone()
		if entries, err := ref.ReadDir("/data/t-0"); err == nil {
			for _, e := range entries {
				if _, isSnap := parseSegmentFileName(e.Name(), snapshotSuffix); isSnap {
					ref.Remove("/data/t-0/" + e.Name())
				}
			}
		}
		ref.Remove("/data/" + cleanShutdownFile)
		want, _ := observePState(t, ref)
		if ok {
			if got.lso != want.lso || got.leo != want.leo || len(got.producers) != len(want.producers) || len(got.aborted) != len(want.aborted) {
				t.Fatalf("%v k=%d: recovered %+v, full replay %+v", ov, k, got, want)
			}
			for i := range got.producers {
				if got.producers[i] != want.producers[i] {
					t.Fatalf("%v k=%d: producer %+v, full replay %+v", ov, k, got.producers[i], want.producers[i])
				}
			}
			for i := range got.aborted {
				if got.aborted[i] != want.aborted[i] {
					t.Fatalf("%v k=%d: aborted %+v, full replay %+v", ov, k, got.aborted, want.aborted)
				}
			}
		}
		if finished {
			// Producer 2's second transaction (epoch 1, offset 9) is open.
			if len(got.producers) != 3 || got.lso != 9 || got.leo != 12 || len(got.aborted) != 1 {
				t.Fatalf("%v finished run: %+v", ov, got)
			}
			t.Logf("%v: %d crash points", ov, k)
			return
		}
	}
	t.Fatal("did not finish")
}

// TestProducerExpiry: a producer idle for producer.id.expiration.ms (by
// its last batch timestamp) is forgotten, so it may continue at any
// sequence; one with an open transaction never is. The periodic check
// runs on the store's clock.
func TestProducerExpiry(t *testing.T) {
	fsys := memfs.New()
	clk := clock.NewManual(testStart)
	s, err := Open(Config{Dir: "/data", NodeID: 1, FS: fsys, Clock: clk, Logger: zerolog.Nop(),
		ProducerIDExpirationMs: 1000, ProducerIDExpirationCheckInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp, err := s.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	l := tp.Partitions[0]
	mustAppend(t, l, pidBatch(t, 1, 0, 0, 1, false))
	mustAppend(t, l, pidBatch(t, 2, 0, 0, 1, true))
	if n := l.ExpireProducers(1000); n != 0 {
		t.Fatalf("expired %d before the time", n)
	}
	// The checkpoint loop's timer and the expiry loop's: advance once
	// both wait, and look once the expiry loop waits again (it ran).
	clk.WaitForTimers(2)
	clk.Advance(1500 * time.Millisecond)
	clk.WaitForTimers(2)
	ps := l.Producers()
	if len(ps) != 1 || ps[0].ProducerID != 2 {
		t.Fatalf("producers after expiry %+v", ps)
	}
	if _, err := l.Append(pidBatch(t, 1, 0, 7, 1, false)); err != nil {
		t.Fatalf("expired producer at sequence 7: %v", err)
	}
}

// TestLastRecordsOfActiveProducersTV2: what the cleaner keeps of each
// producer (Kafka's lastRecordsOfActiveProducers), as markers of
// transaction.version 2 bump the epoch (the new epoch has no data batch
// yet) and those of version 1 do not (the last data batch stays the
// producer's last), the same after the log is reopened.
func TestLastRecordsOfActiveProducersTV2(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	marker := func(pid int64, epoch int16, commit bool) {
		t.Helper()
		if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: epoch, Commit: commit}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
		want map[int64]ProducerLastRecord
	}{
		{"TV2 data at epoch 0", func() { mustAppend(t, l, pidBatch(t, 1, 0, 0, 2, true)) }, // 0-1
			map[int64]ProducerLastRecord{1: {1, 0}}},
		{"TV2 commit at epoch 1", func() { marker(1, 1, true) }, // 2
			map[int64]ProducerLastRecord{1: {-1, 1}}},
		{"TV1 data and commit at epoch 0", func() { mustAppend(t, l, pidBatch(t, 2, 0, 0, 1, true)); marker(2, 0, true) }, // 3, 4
			map[int64]ProducerLastRecord{1: {-1, 1}, 2: {3, 0}}},
		{"TV2 next transaction at epoch 1", func() { mustAppend(t, l, pidBatch(t, 1, 1, 0, 1, true)) }, // 5
			map[int64]ProducerLastRecord{1: {5, 1}, 2: {3, 0}}},
		{"TV2 abort at epoch 2", func() { marker(1, 2, false) }, // 6
			map[int64]ProducerLastRecord{1: {-1, 2}, 2: {3, 0}}},
	}
	check := func(what string, want map[int64]ProducerLastRecord) {
		t.Helper()
		got := l.LastRecordsOfActiveProducers()
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
		for pid, w := range want {
			if got[pid] != w {
				t.Fatalf("%s: producer %d %+v, want %+v", what, pid, got[pid], w)
			}
		}
	}
	for _, st := range steps {
		st.do()
		check(st.name, st.want)
	}
	s.abandon() // as after kill -9: recovery rebuilds the producer state
	s = e.open()
	l = s.Topic("t").Partitions[0]
	check("after recovery", steps[len(steps)-1].want)
}

// TestProducerEntriesReused: prepare edits a spare entry that apply swaps
// with the one it replaces. Producers appending in turn, with rejected
// batches and duplicates between them (prepared, never applied), each
// keep their own sequence and last five batches.
func TestProducerEntriesReused(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	bases := map[int64][]int64{}
	for i := range int32(7) {
		for _, pid := range []int64{3, 4} {
			r := mustAppend(t, l, pidBatch(t, pid, 0, 2*i, 2, false))
			bases[pid] = append(bases[pid], r.BaseOffset)
			// A gap (prepared, rejected) and a retry of the batch just
			// written leave the state as it was.
			if _, err := l.Append(pidBatch(t, pid, 0, 2*i+5, 1, false)); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("producer %d gap: %v", pid, err)
			}
			if r, err := l.Append(pidBatch(t, pid, 0, 2*i, 2, false)); err != nil || !r.Duplicate || r.BaseOffset != bases[pid][i] {
				t.Fatalf("producer %d retry %d: %+v %v", pid, i, r, err)
			}
		}
	}
	for _, pid := range []int64{3, 4} {
		for i := 2; i < 7; i++ { // the last five batches
			if r, err := l.Append(pidBatch(t, pid, 0, int32(2*i), 2, false)); err != nil || !r.Duplicate || r.BaseOffset != bases[pid][i] {
				t.Fatalf("producer %d retry of batch %d: %+v %v, want base %d", pid, i, r, err, bases[pid][i])
			}
		}
	}
	got := l.Producers()
	if len(got) != 2 || got[0].ProducerID != 3 || got[0].LastSequence != 13 || got[1].ProducerID != 4 || got[1].LastSequence != 13 {
		t.Fatalf("producers %+v", got)
	}
}
