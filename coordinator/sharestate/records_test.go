package sharestate

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"slices"
	"testing"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// kafkaGolden is a __share_group_state segment written by Apache Kafka
// 4.3.1 during the java-share compat check (integration/compat; run with
// COMPAT_AGAINST=kafka COMPAT_KEEP=1), copied from its data dir:
// partition 47 of 50, the one share-partition of the check's group, its
// whole life: initialized, acknowledgements (releases, redeliveries, a
// lock timeout), AlterShareGroupOffsets to 5 (a new initialize), more
// acknowledgements, DeleteShareGroupOffsets (a tombstone).
const kafkaGolden = "testdata/kafka-4.3.1-__share_group_state-47.log"

// The check's group and topic (the topic id from its partition.metadata).
const (
	goldenGroup   = "compat-java-share-1796169633-25990-share"
	goldenTopicID = "u8u2ysZDTYiAOoaiDnjBxQ"
)

type goldenRecord struct {
	offset int64
	rec    recordbatch.Record
}

func readGolden(t testing.TB, path string) []goldenRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenRecord
	for len(data) > 0 {
		h, err := recordbatch.ParseHeader(data)
		if err != nil || h.Size() > len(data) {
			t.Fatalf("bad batch: %v", err)
		}
		batch := data[:h.Size()]
		data = data[h.Size():]
		if err := recordbatch.ForEachRecord(batch, 1<<20, func(r recordbatch.Record) error {
			r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			out = append(out, goldenRecord{h.BaseOffset() + int64(r.OffsetDelta), r})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func goldenKey(t testing.TB) Key {
	id, err := base64.RawURLEncoding.DecodeString(goldenTopicID)
	if err != nil || len(id) != 16 {
		t.Fatalf("topic id %q: %v", goldenTopicID, err)
	}
	return Key{GroupID: goldenGroup, TopicID: [16]byte(id), Partition: 0}
}

// TestRecordsKafkaGolden decodes every record Kafka 4.3.1 wrote and
// encodes it back to the same bytes, keys and values; checks what the
// records say; and that Kafka chose the partition PartitionFor chooses.
func TestRecordsKafkaGolden(t *testing.T) {
	recs := readGolden(t, kafkaGolden)
	if len(recs) != 8 {
		t.Fatalf("%d records", len(recs))
	}
	want := goldenKey(t)
	if p := PartitionFor(want, 50); p != 47 {
		t.Errorf("PartitionFor = %d, Kafka wrote to 47", p)
	}
	var types []int16
	for _, g := range recs {
		typ, k, err := parseKey(g.rec.Key)
		if err != nil {
			t.Fatalf("offset %d: key: %v", g.offset, err)
		}
		types = append(types, typ)
		if k != want {
			t.Errorf("offset %d: key %+v", g.offset, k)
		}
		if got := appendKey(nil, typ, k); !bytes.Equal(got, g.rec.Key) {
			t.Errorf("offset %d: key re-encodes to %x, Kafka wrote %x", g.offset, got, g.rec.Key)
		}
		var got []byte
		switch {
		case g.rec.Value == nil:
			continue
		case typ == recShareSnapshot:
			v, err := parseSnapshotValue(g.rec.Value)
			if err != nil {
				t.Fatalf("offset %d: %v", g.offset, err)
			}
			got = v.appendTo(nil)
		default:
			v, err := parseUpdateValue(g.rec.Value)
			if err != nil {
				t.Fatalf("offset %d: %v", g.offset, err)
			}
			got = v.appendTo(nil)
		}
		if !bytes.Equal(got, g.rec.Value) {
			t.Errorf("offset %d: value re-encodes to\n%x, Kafka wrote\n%x", g.offset, got, g.rec.Value)
		}
	}

	// The initialization: a snapshot with the group's state epoch, no
	// start offset and no delivery-complete count yet.
	snap, err := parseSnapshotValue(recs[0].rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	if types[0] != recShareSnapshot || snap.SnapshotEpoch != 0 || snap.StateEpoch != 2 || snap.LeaderEpoch != 0 ||
		snap.StartOffset != -1 || snap.DeliveryCompleteCount != -1 || len(snap.Batches) != 0 || snap.CreateTimestamp != snap.WriteTimestamp {
		t.Errorf("first record %d %+v", types[0], snap)
	}
	// The first acknowledgements: even offsets acknowledged, odd ones
	// released, five complete (the tagged DeliveryCompleteCount).
	upd, err := parseUpdateValue(recs[1].rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	if types[1] != recShareUpdate || upd.StartOffset != 0 || upd.DeliveryCompleteCount != 5 || len(upd.Batches) != 10 ||
		upd.Batches[0] != b(0, 0, 2, 1) || upd.Batches[1] != b(1, 1, 0, 1) {
		t.Errorf("second record %d %+v", types[1], upd)
	}
	// AlterShareGroupOffsets: a new initialize with the next snapshot
	// epoch and the group's new state epoch.
	if snap, err = parseSnapshotValue(recs[5].rec.Value); err != nil || types[5] != recShareSnapshot ||
		snap.SnapshotEpoch != 1 || snap.StateEpoch != 10 || snap.StartOffset != 5 || snap.DeliveryCompleteCount != 0 || len(snap.Batches) != 0 {
		t.Errorf("sixth record %d %+v %v", types[5], snap, err)
	}
	if types[7] != recShareSnapshot || recs[7].rec.Value != nil {
		t.Errorf("last record %d is not a snapshot tombstone", types[7])
	}
	// Its tail, by hand: the last batch, then the tagged field (one
	// field, tag 0, 4 bytes: 5).
	if tail := hex.EncodeToString(recs[1].rec.Value[len(recs[1].rec.Value)-27:]); tail != "0000000000000009"+"0000000000000009"+"00"+"0001"+"00"+"01"+"00"+"04"+"00000005" {
		t.Errorf("second record ends %s", tail)
	}
}

// TestReplayKafkaGolden loads Kafka's records into a shard: before the
// tombstone the state is what Kafka's share-partition had (start offset
// 5, 5-12 acknowledged, state epoch 10), then it is gone.
func TestReplayKafkaGolden(t *testing.T) {
	s := newShard(47)
	recs := readGolden(t, kafkaGolden)
	k := goldenKey(t)
	for i, g := range recs {
		if err := s.replay(g.rec.Key, g.rec.Value, g.offset, 500); err != nil {
			t.Fatalf("offset %d: %v", g.offset, err)
		}
		if i != len(recs)-2 {
			continue
		}
		e := s.states[k]
		if e == nil {
			t.Fatal("no state")
		}
		want := snapshotValue{SnapshotEpoch: 1, StateEpoch: 10, StartOffset: 5, DeliveryCompleteCount: 8,
			CreateTimestamp: e.state.CreateTimestamp, WriteTimestamp: e.state.CreateTimestamp, Batches: []StateBatch{b(5, 12, 2, 1)}}
		if !snapshotEqual(e.state, want) || e.stateEpoch != 10 || e.updates != 5 {
			t.Errorf("state %+v (epoch %d, %d updates), want %+v", e.state, e.stateEpoch, e.updates, want)
		}
	}
	if s.states[k] != nil {
		t.Error("state kept after the tombstone")
	}
	// The last snapshot was the initialize at offset 5; the tombstone
	// at 7 then removed the share-partition from the redundancy map.
	if off, ok := s.redundantOffset(); !ok || off != 7 {
		t.Errorf("redundant offset %d %v, want 7", off, ok)
	}
}

// TestRecordsHandmadeGolden pins the bytes of both values written out by
// hand from the schemas, the tagged DeliveryCompleteCount present and
// absent (-1, its default, is not written).
func TestRecordsHandmadeGolden(t *testing.T) {
	k := Key{GroupID: "g", TopicID: [16]byte{15: 1}, Partition: 3}
	if got, want := hex.EncodeToString(appendKey(nil, recShareUpdate, k)), "0001"+"0001"+"67"+"00000000000000000000000000000001"+"00000003"; got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	s := snapshotValue{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, StartOffset: 4, DeliveryCompleteCount: -1, CreateTimestamp: 5, WriteTimestamp: 6,
		Batches: []StateBatch{b(7, 8, 2, 9)}}
	want := "0000" + "00000001" + "00000002" + "00000003" + "0000000000000004" + "0000000000000005" + "0000000000000006" +
		"02" + "0000000000000007" + "0000000000000008" + "02" + "0009" + "00" + "00"
	if got := hex.EncodeToString(s.appendTo(nil)); got != want {
		t.Errorf("snapshot %s, want %s", got, want)
	}
	u := updateValue{SnapshotEpoch: 1, LeaderEpoch: 3, StartOffset: -1, DeliveryCompleteCount: 7}
	want = "0000" + "00000001" + "00000003" + "ffffffffffffffff" + "01" + "01" + "00" + "04" + "00000007"
	if got := hex.EncodeToString(u.appendTo(nil)); got != want {
		t.Errorf("update %s, want %s", got, want)
	}
}

// FuzzRecordDecoders feeds arbitrary key and value bytes to the decoders
// and to replay. Invariants: nothing panics or allocates beyond the
// input; whatever decodes encodes back to bytes that decode to the same
// value.
func FuzzRecordDecoders(f *testing.F) {
	for _, g := range readGolden(f, kafkaGolden) {
		f.Add(g.rec.Key, g.rec.Value)
	}
	f.Add([]byte{0, 0}, []byte{0, 0})
	f.Add([]byte{0, 1, 0, 0}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if typ, k, err := parseKey(key); err == nil {
			if got := appendKey(nil, typ, k); !bytes.Equal(got, key) {
				t.Fatalf("key %x re-encodes to %x", key, got)
			}
		}
		if v, err := parseSnapshotValue(value); err == nil {
			again, err := parseSnapshotValue(v.appendTo(nil))
			if err != nil || !snapshotEqual(again, v) {
				t.Fatalf("snapshot %+v round-trips to %+v, %v", v, again, err)
			}
		}
		if v, err := parseUpdateValue(value); err == nil {
			again, err := parseUpdateValue(v.appendTo(nil))
			if err != nil || !updateEqual(again, v) {
				t.Fatalf("update %+v round-trips to %+v, %v", v, again, err)
			}
		}
		s := newShard(0)
		_ = s.replay(key, value, 1, 2)
		_ = s.replay(key, value, 2, 2)
	})
}

func snapshotEqual(a, b snapshotValue) bool {
	return a.SnapshotEpoch == b.SnapshotEpoch && a.StateEpoch == b.StateEpoch && a.LeaderEpoch == b.LeaderEpoch &&
		a.StartOffset == b.StartOffset && a.DeliveryCompleteCount == b.DeliveryCompleteCount &&
		a.CreateTimestamp == b.CreateTimestamp && a.WriteTimestamp == b.WriteTimestamp && slices.Equal(a.Batches, b.Batches)
}

func updateEqual(a, b updateValue) bool {
	return a.SnapshotEpoch == b.SnapshotEpoch && a.LeaderEpoch == b.LeaderEpoch && a.StartOffset == b.StartOffset &&
		a.DeliveryCompleteCount == b.DeliveryCompleteCount && slices.Equal(a.Batches, b.Batches)
}
