package coordinator

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestOffsetRecordGolden checks the bytes of an offset commit record
// against Kafka's schemas (OffsetCommitKey.json v1, OffsetCommitValue.json
// v3 and v1), written out by hand.
func TestOffsetRecordGolden(t *testing.T) {
	g := &group{id: "g1"}
	tp := topicPartition{"tp", 3}
	rec := g.offsetRecord(tp, &offsetEntry{offset: 42, leaderEpoch: 5, metadata: "m", commitTimestamp: 1000, expireTimestamp: -1})
	wantKey := "0001" + "0002" + hex.EncodeToString([]byte("g1")) + "0002" + hex.EncodeToString([]byte("tp")) + "00000003"
	wantValue := "0003" + "000000000000002a" + "00000005" + "0001" + hex.EncodeToString([]byte("m")) + "00000000000003e8"
	if got := hex.EncodeToString(rec.Key); got != wantKey {
		t.Errorf("key %s, want %s", got, wantKey)
	}
	if got := hex.EncodeToString(rec.Value); got != wantValue {
		t.Errorf("value %s, want %s", got, wantValue)
	}
	// With an expire timestamp (OffsetCommit v2-v4 retention): v1, no
	// leader epoch, expire timestamp last.
	rec = g.offsetRecord(tp, &offsetEntry{offset: 42, leaderEpoch: 5, metadata: "m", commitTimestamp: 1000, expireTimestamp: 2000})
	wantValue = "0001" + "000000000000002a" + "0001" + hex.EncodeToString([]byte("m")) + "00000000000003e8" + "00000000000007d0"
	if got := hex.EncodeToString(rec.Value); got != wantValue {
		t.Errorf("v1 value %s, want %s", got, wantValue)
	}
	if rec := g.offsetRecord(tp, nil); rec.Value != nil {
		t.Error("tombstone has a value")
	}
}

// TestGroupRecordGolden checks the group metadata record's header fields
// (GroupMetadataKey.json v2, GroupMetadataValue.json v3) and that it
// decodes back.
func TestGroupRecordGolden(t *testing.T) {
	c := &Coordinator{clock: clock.NewManual(time.UnixMilli(5000)), log: zerolog.Nop()}
	g := newGroup(c, "g1")
	g.protocolType, g.protocol, g.generation, g.leader = "consumer", "range", 7, "m1"
	inst := "i1"
	g.members["m1"] = &member{id: "m1", instanceID: &inst, clientID: "c", clientHost: "/h", rebalanceTimeout: time.Second, sessionTimeout: 2 * time.Second,
		protocols: []protocol{{name: "range", metadata: []byte{1}}}, assignment: []byte{2}}
	rec := g.groupRecord(false)
	if got, want := hex.EncodeToString(rec.Key), "0002"+"0002"+hex.EncodeToString([]byte("g1")); got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	wantPrefix := "0003" + "0008" + hex.EncodeToString([]byte("consumer")) + "00000007" + "0005" + hex.EncodeToString([]byte("range")) + "0002" + hex.EncodeToString([]byte("m1")) + "0000000000001388"
	if got := hex.EncodeToString(rec.Value); len(got) < len(wantPrefix) || got[:len(wantPrefix)] != wantPrefix {
		t.Errorf("value %s, want prefix %s", got, wantPrefix)
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(rec.Value); err != nil {
		t.Fatal(err)
	}
	m := v.Members[0]
	if m.MemberID != "m1" || *m.InstanceID != "i1" || m.RebalanceTimeoutMillis != 1000 || m.SessionTimeoutMillis != 2000 ||
		!bytes.Equal(m.Subscription, []byte{1}) || !bytes.Equal(m.Assignment, []byte{2}) {
		t.Errorf("member %+v", m)
	}
	if rec := g.groupRecord(true); rec.Value != nil {
		t.Error("tombstone has a value")
	}
}

// FuzzLoadRecord feeds arbitrary key and value bytes, as read back from
// __consumer_offsets, to the loader, in a regular or a transactional
// batch. Invariants: it never panics; a record it cannot decode changes
// nothing; an offset it loads re-encodes (offsetRecord) to a record that
// loads back to the same entry; a transactional offset is pending, not
// committed, until its producer's marker (commit: committed; abort:
// gone); a tombstone for the key removes it, committed or pending.
func FuzzLoadRecord(f *testing.F) {
	g := &group{id: "g"}
	tp := topicPartition{"t", 0}
	for _, r := range []recordbatch.Record{
		g.offsetRecord(tp, &offsetEntry{offset: 1, metadata: "x", expireTimestamp: -1}),
		g.offsetRecord(tp, &offsetEntry{offset: 1, expireTimestamp: 9}),
		g.offsetRecord(tp, nil),
	} {
		f.Add(r.Key, r.Value, false)
		f.Add(r.Key, r.Value, true)
	}
	c := &Coordinator{clock: clock.NewManual(time.UnixMilli(0)), log: zerolog.Nop()}
	gg := newGroup(c, "g")
	gg.members["m"] = &member{id: "m", protocols: []protocol{{name: "p"}}}
	gr := gg.groupRecord(false)
	f.Add(gr.Key, gr.Value, false)
	f.Add([]byte{0, 9, 1}, []byte{0}, true)
	const pid = 7
	f.Fuzz(func(t *testing.T, key, value []byte, txn bool) {
		producer := recordbatch.NoProducerID
		if txn {
			producer = pid
		}
		l := newLoader(c)
		l.record(recordbatch.Record{Key: key, Value: value}, 5, producer)
		var k kmsg.OffsetCommitKey
		isOffset := len(key) >= 2 && key[0] == 0 && key[1] <= 1 && k.ReadFrom(key) == nil
		var v kmsg.OffsetCommitValue
		decodes := isOffset && value != nil && v.ReadFrom(value) == nil
		if !decodes {
			for id, lg := range l.byID {
				if len(lg.offsets) > 0 || len(lg.txn) > 0 {
					t.Fatalf("group %q got offsets from an undecodable or non-offset record", id)
				}
			}
			return
		}
		ktp := topicPartition{k.Topic, k.Partition}
		lg := l.byID[k.Group]
		if lg == nil {
			t.Fatal("decodable offset record loaded no group")
		}
		var e offsetEntry
		if txn {
			if _, ok := lg.offsets[ktp]; ok {
				t.Fatal("transactional offset committed before its marker")
			}
			var ok bool
			if e, ok = lg.txn[pid][ktp]; !ok {
				t.Fatal("transactional offset not pending")
			}
		} else {
			var ok bool
			if e, ok = lg.offsets[ktp]; !ok {
				t.Fatal("offset not loaded")
			}
		}
		if e.offset != v.Offset || e.metadata != v.Metadata || e.recordOffset != 5 {
			t.Fatalf("entry %+v from value %+v", e, v)
		}
		// Round trip through our own encoding.
		re := (&group{id: k.Group}).offsetRecord(ktp, &e)
		l2 := newLoader(c)
		l2.record(re, 5, recordbatch.NoProducerID)
		if got := l2.byID[k.Group].offsets[ktp]; got != e {
			t.Fatalf("re-encoded entry loads as %+v, want %+v", got, e)
		}
		if txn {
			// An abort drops it; on a copy, a commit makes it the
			// committed offset.
			l2 = newLoader(c)
			l2.record(recordbatch.Record{Key: key, Value: value}, 5, pid)
			l2.marker(pid, true)
			if got, ok := l2.byID[k.Group].offsets[ktp]; !ok || got != e || len(l2.byID[k.Group].txn) != 0 {
				t.Fatalf("after commit: %+v %v, pending %v", got, ok, l2.byID[k.Group].txn)
			}
			l.marker(pid, false)
			if _, ok := lg.offsets[ktp]; ok || len(lg.txn) != 0 {
				t.Fatal("aborted offset survived")
			}
			l.record(recordbatch.Record{Key: key, Value: value}, 6, pid)
		}
		l.record(recordbatch.Record{Key: key}, 7, recordbatch.NoProducerID)
		if _, ok := lg.offsets[ktp]; ok || len(lg.txn[pid]) != 0 {
			t.Fatal("tombstone left the offset")
		}
	})
}

// FuzzConsumerGroupRecord decodes arbitrary bytes as each consumer group
// record type. Invariants: never panics; a value that decodes re-encodes,
// through a member, to bytes that decode to the same member.
func FuzzConsumerGroupRecord(f *testing.F) {
	g := &group{id: "g", cg: newConsumerGroup(time.Time{})}
	inst := "i"
	m := &cgMember{id: "m", instanceID: &inst, clientID: "c", clientHost: "/h", subscribedNames: []string{"a", "b"}, regex: "x.*",
		epoch: 3, previousEpoch: 2, state: memberUnrevokedPartitions,
		assigned: tps(partition.TopicID{9}, 0, 1), pendingRevocation: tps(partition.TopicID{9}, 2)}
	g.cg.target["m"] = tps(partition.TopicID{9}, 0)
	classic := &cgMember{id: "k", clientID: "c", clientHost: "/h", subscribedNames: []string{"a"},
		assigned: partSet{}, pendingRevocation: partSet{},
		classic: &classicMember{sessionTimeout: 6 * time.Second, protocols: []protocol{{"range", []byte{0, 1}}, {"cooperative-sticky", nil}}}}
	for _, r := range append(append(append(g.cgMemberRecords(m), g.cgMetadataRecord()), g.cgTargetRecords()...), g.cgMemberRecords(classic)...) {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if len(key) < 2 {
			return
		}
		typ := uint16(key[0])<<8 | uint16(key[1])
		_, member, err := parseConsumerKey(typ, key)
		if err != nil {
			return
		}
		lc := newLoadedConsumer()
		if lc.apply(typ, member, value) != nil {
			return
		}
		if mm := lc.members[member]; mm != nil && mm.classic != nil {
			// ClassicMemberMetadata survives a re-encoding.
			g2 := &group{id: "g", cg: newConsumerGroup(time.Time{})}
			mm.assigned, mm.pendingRevocation = partSet{}, partSet{}
			lc2 := newLoadedConsumer()
			if err := lc2.apply(typ, member, g2.cgMemberRecords(mm)[0].Value); err != nil {
				t.Fatalf("re-encoded member metadata does not decode: %v", err)
			}
			c2 := lc2.members[member].classic
			if c2 == nil || c2.sessionTimeout != mm.classic.sessionTimeout || len(c2.protocols) != len(mm.classic.protocols) {
				t.Fatalf("round trip changed the classic member metadata")
			}
			for i, p := range c2.protocols {
				if p.name != mm.classic.protocols[i].name || string(p.metadata) != string(mm.classic.protocols[i].metadata) {
					t.Fatalf("round trip changed protocol %d", i)
				}
			}
		}
		if cur := lc.current[member]; cur != nil {
			g2 := &group{id: "g", cg: newConsumerGroup(time.Time{})}
			cur.assigned, cur.pendingRevocation = nonNilSet(cur.assigned), nonNilSet(cur.pendingRevocation)
			again := g2.cgMemberRecords(cur)[1]
			lc2 := newLoadedConsumer()
			if err := lc2.apply(typ, member, again.Value); err != nil {
				t.Fatalf("re-encoded current assignment does not decode: %v", err)
			}
			c2 := lc2.current[member]
			if c2.epoch != cur.epoch || c2.previousEpoch != cur.previousEpoch || c2.state != cur.state ||
				!c2.assigned.equal(cur.assigned) || !c2.pendingRevocation.equal(cur.pendingRevocation) {
				t.Fatalf("round trip changed the current assignment")
			}
		}
	})
}

func nonNilSet(s partSet) partSet {
	if s == nil {
		return partSet{}
	}
	return s
}

// TestConsumerGroupRecordGolden checks the consumer group records against
// Kafka's schemas (ConsumerGroupMetadataKey/Value,
// ConsumerGroupMemberMetadataKey/Value,
// ConsumerGroupCurrentMemberAssignmentValue,
// ConsumerGroupTargetAssignmentMember/MetadataValue), written out by
// hand: keys are the record type then non-flexible strings; values are
// version 0 then compact (length+1) strings and arrays, with an empty
// tag section after each struct.
func TestConsumerGroupRecordGolden(t *testing.T) {
	id := partition.TopicID{0xaa, 15: 0xbb}
	idHex := "aa0000000000000000000000000000bb"
	g := &group{id: "g", cg: newConsumerGroup(time.Time{})}
	g.cg.epoch, g.cg.assignmentEpoch = 7, 6
	g.cg.target["m"] = tps(id, 1)
	inst := "i"
	m := &cgMember{id: "m", instanceID: &inst, clientID: "c", clientHost: "/h", subscribedNames: []string{"t"}, regex: "",
		serverAssignor: "uniform", rebalanceTimeout: 300 * time.Millisecond,
		epoch: 7, previousEpoch: 6, state: memberStable, assigned: tps(id, 1, 2), pendingRevocation: partSet{}}
	s := func(v string) string { return hex.EncodeToString([]byte(v)) }
	cases := []struct {
		name       string
		rec        recordbatch.Record
		key, value string
	}{
		{"metadata", g.cgMetadataRecord(), "0003" + "0001" + s("g"), "0000" + "00000007" + "00"},
		{"member metadata", g.cgMemberRecords(m)[0], "0005" + "0001" + s("g") + "0001" + s("m"),
			"0000" + "02" + s("i") + "00" + "02" + s("c") + "03" + s("/h") + "02" + "02" + s("t") + "00" + "0000012c" + "08" + s("uniform") + "00"},
		{"current assignment", g.cgMemberRecords(m)[1], "0008" + "0001" + s("g") + "0001" + s("m"),
			"0000" + "00000007" + "00000006" + "02" + "02" + idHex + "03" + "00000001" + "00000002" + "00" + "01" + "00"},
		{"target member", g.cgTargetRecords()[0], "0007" + "0001" + s("g") + "0001" + s("m"),
			"0000" + "02" + idHex + "02" + "00000001" + "00" + "00"},
		{"target metadata", g.cgTargetRecords()[1], "0006" + "0001" + s("g"), "0000" + "00000006" + "00"},
	}
	for _, tc := range cases {
		if got := hex.EncodeToString(tc.rec.Key); got != tc.key {
			t.Errorf("%s key %s, want %s", tc.name, got, tc.key)
		}
		if got := hex.EncodeToString(tc.rec.Value); got != tc.value {
			t.Errorf("%s value %s, want %s", tc.name, got, tc.value)
		}
	}
}
