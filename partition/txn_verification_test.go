package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestTxnVerificationGuard: a transactional batch that would open a
// transaction must present the producer's current verification guard; the
// marker ending the transaction clears it, so a batch verified before the
// transaction ended cannot open a new one nobody will end. A batch
// continuing an ongoing transaction needs none; expiry drops a guard.
func TestTxnVerificationGuard(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	appendV := func(b []byte, g TxnVerificationGuard) (AppendResult, error) {
		return l.AppendVerified(b, recordbatch.OriginClient, g)
	}

	// Verified, then the transaction ends before the append: refused,
	// nothing written, the LSO does not move.
	g := l.StartTxnVerification(5, 0)
	mustAppend(t, l, pidBatch(t, 6, 0, 0, 1, false))                                                         // 0
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, CoordinatorEpoch: 1, Commit: true}); err != nil { // 1
		t.Fatal(err)
	}
	if _, err := appendV(pidBatch(t, 5, 0, 0, 1, true), g); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append with a guard the marker cleared: %v", err)
	}
	if o := l.Offsets(); o.LogEndOffset != 2 || o.LastStableOffset != 2 {
		t.Fatalf("offsets %+v after refused append", o)
	}
	// The zero guard opens nothing either.
	if _, err := appendV(pidBatch(t, 5, 0, 0, 1, true), TxnVerificationGuard{}); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append with the zero guard: %v", err)
	}

	// A fresh verification opens the transaction.
	g = l.StartTxnVerification(5, 0)
	if r, err := appendV(pidBatch(t, 5, 0, 0, 1, true), g); err != nil || r.BaseOffset != 2 {
		t.Fatalf("append with a fresh guard: %+v %v", r, err)
	}
	if o := l.Offsets(); o.LastStableOffset != 2 {
		t.Fatalf("LSO %d, want the transaction's 2", o.LastStableOffset)
	}
	// The guard is used up; with the transaction ongoing, verification
	// gives the zero guard, and continuing needs no guard at all.
	if g2 := l.StartTxnVerification(5, 0); g2 != (TxnVerificationGuard{}) {
		t.Fatal("guard for a producer with an ongoing transaction")
	}
	if _, err := appendV(pidBatch(t, 5, 0, 1, 1, true), TxnVerificationGuard{}); err != nil {
		t.Fatalf("continuing the transaction: %v", err)
	}
	if _, err := appendV(pidBatch(t, 5, 0, 2, 1, true), g); err != nil {
		t.Fatalf("continuing the transaction with an old guard: %v", err)
	}
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, CoordinatorEpoch: 1}); err != nil {
		t.Fatal(err)
	}

	// Two requests verified together share the guard; the first opens
	// the transaction, the second continues it.
	g1, g2 := l.StartTxnVerification(5, 0), l.StartTxnVerification(5, 0)
	if g1 != g2 || g1 == (TxnVerificationGuard{}) {
		t.Fatal("concurrent verifications got different guards")
	}
	if _, err := appendV(pidBatch(t, 5, 0, 3, 1, true), g1); err != nil {
		t.Fatal(err)
	}
	if _, err := appendV(pidBatch(t, 5, 0, 4, 1, true), g2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5, CoordinatorEpoch: 1}); err != nil {
		t.Fatal(err)
	}

	// A guard left behind (verification that never led to an append)
	// expires with the producers.
	g = l.StartTxnVerification(9, 0)
	e.clock.Advance(2 * time.Second)
	l.ExpireProducers(1000)
	if _, err := appendV(pidBatch(t, 9, 0, 0, 1, true), g); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append with an expired guard: %v", err)
	}

	// Unverified appends (AppendWithOrigin) are not checked.
	if _, err := l.AppendWithOrigin(pidBatch(t, 9, 0, 0, 1, true), recordbatch.OriginInternal); err != nil {
		t.Fatal(err)
	}
}
