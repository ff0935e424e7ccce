package partition

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestReadCommitted: a ReadCommitted read stops before the first batch
// whose last offset reaches the LSO, lists the aborted transactions of
// what it returns, and returns nothing from a batch the LSO straddles
// (DeleteRecords moved the log start offset into an open transaction's
// batch); a ReadUncommitted read goes to the high watermark with no list.
func TestReadCommitted(t *testing.T) {
	s := newEnv(t).open()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	now := testStart.UnixMilli()                                          // one segment: no time-based roll
	mustAppend(t, l, mkBatch(t, 2, now, 10))                              // 0-1
	mustAppend(t, l, pidBatch(t, 5, 0, 0, 2, true))                       // 2-3, aborted
	if _, err := l.WriteTxnMarker(TxnMarker{ProducerID: 5}); err != nil { // 4
		t.Fatal(err)
	}
	mustAppend(t, l, mkBatch(t, 1, now, 10))        // 5
	mustAppend(t, l, pidBatch(t, 6, 0, 0, 2, true)) // 6-7, open
	mustAppend(t, l, mkBatch(t, 1, now, 10))        // 8

	lastOffsets := func(b []byte) []int64 {
		var out []int64
		for _, h := range batchesIn(t, b) {
			out = append(out, h.LastOffset())
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		logStart    int64
		offset      int64
		iso         Isolation
		wantLast    []int64
		wantAborted []AbortedTxn
	}{
		{"uncommitted to the high watermark", 0, 0, ReadUncommitted, []int64{1, 3, 4, 5, 7, 8}, nil},
		{"committed to the LSO", 0, 0, ReadCommitted, []int64{1, 3, 4, 5}, []AbortedTxn{{ProducerID: 5, FirstOffset: 2}}},
		{"committed past the aborted one", 0, 5, ReadCommitted, []int64{5}, nil},
		{"committed at the LSO", 0, 6, ReadCommitted, nil, nil},
		{"LSO straddling a batch", 7, 7, ReadCommitted, nil, nil},
		{"uncommitted from a straddled batch", 7, 7, ReadUncommitted, []int64{7, 8}, nil},
	} {
		if _, err := l.AdvanceLogStartOffset(tc.logStart); err != nil {
			t.Fatal(err)
		}
		r, err := l.ReadWith(tc.offset, 1<<20, true, tc.iso, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := lastOffsets(r.Records); !reflect.DeepEqual(got, tc.wantLast) || !reflect.DeepEqual(r.AbortedTransactions, tc.wantAborted) {
			t.Errorf("%s: batches ending at %v, aborted %+v (LSO %d); want %v, %+v",
				tc.name, got, r.AbortedTransactions, r.LastStableOffset, tc.wantLast, tc.wantAborted)
		}
	}
}

// headerBatch is a batch header of size bytes (at least PrefixSize), as far
// as committedPrefix looks: base offset, batch length, last offset delta.
func headerBatch(base int64, lastDelta int32, size int) []byte {
	b := make([]byte, size)
	recordbatch.Header(b).SetBaseOffset(base)
	binary.BigEndian.PutUint32(b[8:], uint32(size-recordbatch.LogOverhead)) // batchLength
	binary.BigEndian.PutUint32(b[23:], uint32(lastDelta))                   // lastOffsetDelta
	return b
}

func TestCommittedPrefix(t *testing.T) {
	three := append(append(headerBatch(0, 0, 30), headerBatch(5, 0, 30)...), headerBatch(9, 0, 40)...)
	straddle := headerBatch(5, 4, 40) // offsets 5-9
	for _, tc := range []struct {
		name    string
		records []byte
		lso     int64
		want    int
	}{
		{"empty", nil, 5, 0},
		{"all below", three, 100, 100},
		{"cut at second", three, 5, 30},
		{"cut at third", three, 6, 60},
		{"none", three, 0, 0},
		{"partial trailing batch below the LSO kept", three[:80], 100, 80},
		{"partial trailing batch at the LSO cut", three[:80], 9, 60},
		{"partial trailing header kept", three[:65], 100, 65},
		{"negative length", append(headerBatch(0, 0, 30), 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff), 100, 42},
		{"batch straddling the LSO cut", append(headerBatch(0, 0, 30), straddle...), 7, 30},
		{"batch ending below the LSO kept", append(headerBatch(0, 0, 30), straddle...), 10, 70},
	} {
		if got := committedPrefix(tc.records, tc.lso); len(got) != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, len(got), tc.want)
		}
	}
}

// FuzzCommittedPrefix: over any bytes, committedPrefix never panics and
// returns a prefix of its input.
func FuzzCommittedPrefix(f *testing.F) {
	f.Add(append(headerBatch(0, 0, 30), headerBatch(5, 0, 30)...), int64(5))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff}, int64(9))
	f.Fuzz(func(t *testing.T, b []byte, lso int64) {
		got := committedPrefix(b, lso)
		if len(got) > len(b) || !bytes.Equal(got, b[:len(got)]) {
			t.Fatalf("not a prefix: %d of %d bytes", len(got), len(b))
		}
	})
}
