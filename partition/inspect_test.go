package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestParseSegmentFileName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		base   int64
		suffix string
		ok     bool
	}{
		{"00000000000000000042.timeindex", 42, ".timeindex", true},
		{"00000000000000000000.log", 0, ".log", true},
		{"00000000000000000007.log.swap", 7, ".log.swap", true},
		{"0000000000000000042.log", 0, "", false},
		{"0000000000000000004x.log", 0, "", false},
		{"leader-epoch-checkpoint", 0, "", false},
		{"00000000000000000042", 0, "", false},
	} {
		base, suffix, ok := ParseSegmentFileName(tc.name)
		if base != tc.base || suffix != tc.suffix || ok != tc.ok {
			t.Errorf("ParseSegmentFileName(%q) = %d, %q, %v; want %d, %q, %v", tc.name, base, suffix, ok, tc.base, tc.suffix, tc.ok)
		}
	}
}

func TestInspectIndexEntries(t *testing.T) {
	// Two entries, then Kafka's zero-filled preallocated tail, then a
	// torn partial entry.
	b := []byte{0, 0, 0, 5, 0, 0, 0, 100, 0, 0, 0, 9, 0, 0, 1, 0}
	b = append(b, make([]byte, 16)...)
	b = append(b, 1, 2, 3)
	es, valid := OffsetIndexEntries(b, 1000)
	if len(es) != 4 || valid != 2 || es[0] != (OffsetIndexEntry{1005, 100}) || es[1] != (OffsetIndexEntry{1009, 256}) || es[2] != (OffsetIndexEntry{1000, 0}) {
		t.Errorf("OffsetIndexEntries = %v, %d", es, valid)
	}
	tb := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, 1700000000000), 3)
	tb = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(tb, 1600000000000), 4) // out of order
	ts, valid := TimeIndexEntries(tb, 10)
	if len(ts) != 2 || valid != 1 || ts[0] != (TimeIndexEntry{1700000000000, 13}) {
		t.Errorf("TimeIndexEntries = %v, %d", ts, valid)
	}
}

func TestInspectSnapshotAndTxnIndex(t *testing.T) {
	p := newProducerEntry(7)
	p.epoch, p.coordinatorEpoch, p.lastTimestamp, p.txnFirstOffset = 3, 2, 99, 40
	p.batches = []batchMeta{{lastSeq: 9, lastOffset: 42, offsetDelta: 2, timestamp: 99}}
	q := newProducerEntry(8) // no batch: known only by its epoch
	q.epoch = 1
	es, err := ProducerSnapshot(encodeSnapshot([]*producerEntry{q, p}))
	if err != nil || len(es) != 2 {
		t.Fatalf("ProducerSnapshot = %v, %v", es, err)
	}
	want := ProducerSnapshotEntry{ProducerID: 7, ProducerEpoch: 3, CoordinatorEpoch: 2, LastTimestamp: 99, TxnFirstOffset: 40,
		HasBatch: true, FirstSequence: 7, LastSequence: 9, LastOffset: 42, OffsetDelta: 2, Timestamp: 99}
	if es[0] != want || es[1].HasBatch || es[1].ProducerID != 8 || es[1].TxnFirstOffset != -1 {
		t.Errorf("ProducerSnapshot = %+v", es)
	}
	if _, err := ProducerSnapshot([]byte{0, 1, 0, 0}); !errors.Is(err, errCorruptSnapshot) {
		t.Errorf("short snapshot: %v", err)
	}

	b := appendTxnEntry(nil, abortedEntry{producerID: 5, firstOffset: 3, lastOffset: 5, lastStableOffset: 6})
	b = append(b, 0, 0, 1) // torn
	txns, err := TxnIndexEntries(b)
	if err != nil || len(txns) != 1 || txns[0] != (AbortedTxnEntry{5, 3, 5, 6}) {
		t.Errorf("TxnIndexEntries = %v, %v", txns, err)
	}
}

func TestInspectCheckpoints(t *testing.T) {
	cp, err := OffsetCheckpoint([]byte("0\n3\nb 1 7\na 2 5\nb 0 9\n"))
	if err != nil || len(cp) != 3 || cp[0] != (CheckpointEntry{"a", 2, 5}) || cp[1] != (CheckpointEntry{"b", 0, 9}) {
		t.Errorf("OffsetCheckpoint = %v, %v", cp, err)
	}
	if _, err := OffsetCheckpoint([]byte("0\n2\na 0 1\n")); !errors.Is(err, errBadCheckpoint) {
		t.Errorf("count mismatch: %v", err)
	}
	le, err := LeaderEpochCheckpoint([]byte("0\n2\n0 0\n3 17\n"))
	if err != nil || len(le) != 2 || le[1] != (LeaderEpochEntry{3, 17}) {
		t.Errorf("LeaderEpochCheckpoint = %v, %v", le, err)
	}
}

// FuzzInspect feeds arbitrary bytes to every decoder of inspect.go.
// Invariants: never panics; index decoders return one entry per whole
// entry of the input and a valid prefix no longer than that; the other
// decoders return entries only as the input's size allows.
func FuzzInspect(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 100, 0, 0, 0, 9, 0, 0, 1, 0})
	f.Add(appendTxnEntry(nil, abortedEntry{producerID: 5, firstOffset: 3, lastOffset: 5, lastStableOffset: 6}))
	f.Add(encodeSnapshot([]*producerEntry{newProducerEntry(1)}))
	f.Add([]byte("0\n1\ntopic 0 5\n"))
	f.Add(bytes.Repeat([]byte{0xff}, 50))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, valid := OffsetIndexEntries(b, 100)
		if len(es) != len(b)/offsetIndexEntrySize || valid > len(es) || valid < 0 {
			t.Fatalf("OffsetIndexEntries: %d entries, %d valid, from %d bytes", len(es), valid, len(b))
		}
		ts, valid := TimeIndexEntries(b, 100)
		if len(ts) != len(b)/timeIndexEntrySize || valid > len(ts) || valid < 0 {
			t.Fatalf("TimeIndexEntries: %d entries, %d valid, from %d bytes", len(ts), valid, len(b))
		}
		if txns, _ := TxnIndexEntries(b); len(txns) > len(b)/txnEntrySize {
			t.Fatalf("TxnIndexEntries: %d entries from %d bytes", len(txns), len(b))
		}
		if ps, err := ProducerSnapshot(b); err == nil && len(ps)*snapshotEntrySize+snapshotHeader != len(b) {
			t.Fatalf("ProducerSnapshot: %d entries from %d bytes", len(ps), len(b))
		}
		if cp, err := OffsetCheckpoint(b); err == nil && len(cp) > len(b) {
			t.Fatalf("OffsetCheckpoint: %d entries from %d bytes", len(cp), len(b))
		}
		if le, err := LeaderEpochCheckpoint(b); err == nil && len(le) > len(b) {
			t.Fatalf("LeaderEpochCheckpoint: %d entries from %d bytes", len(le), len(b))
		}
	})
}
