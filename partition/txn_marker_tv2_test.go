package partition

import (
	"errors"
	"math"
	"testing"
)

// TestWriteTxnMarkerTransactionVersion: a marker of transaction.version 2
// must carry an epoch above the producer's, but may repeat it once the
// transaction is over (a retry, KAFKA-19999) or at the maximum epoch;
// below 2 the producer's own epoch is accepted (Kafka's
// ProducerAppendInfo.checkProducerEpoch).
func TestWriteTxnMarkerTransactionVersion(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	marker := func(pid int64, epoch, tv int16) error {
		_, err := l.WriteTxnMarker(TxnMarker{ProducerID: pid, ProducerEpoch: epoch, TransactionVersion: tv})
		return err
	}
	mustAppend(t, l, pidBatch(t, 1, 4, 0, 2, true))
	mustAppend(t, l, pidBatch(t, 2, 4, 0, 2, true))
	mustAppend(t, l, pidBatch(t, 3, math.MaxInt16, 0, 1, true))
	steps := []struct {
		name      string
		pid       int64
		epoch, tv int16
		want      error
	}{
		{"TV2 at the open transaction's epoch", 1, 4, 2, ErrInvalidProducerEpoch},
		{"TV3 is TV2's rule", 1, 4, 3, ErrInvalidProducerEpoch},
		{"TV2 below it", 1, 3, 2, ErrInvalidProducerEpoch},
		{"TV2 with the bumped epoch", 1, 5, 2, nil},
		{"TV2 retry once over", 1, 5, 2, nil},
		{"TV1 at the open transaction's epoch", 2, 4, 1, nil},
		{"TV2 at the maximum epoch", 3, math.MaxInt16, 2, nil},
		{"TV2 for an unknown producer", 9, 0, 2, nil},
	}
	for _, st := range steps {
		if err := marker(st.pid, st.epoch, st.tv); !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", st.name, err, st.want)
		}
	}
	if o := l.Offsets(); o.LastStableOffset != o.HighWatermark {
		t.Errorf("offsets %+v: every transaction should be over", o)
	}
}
