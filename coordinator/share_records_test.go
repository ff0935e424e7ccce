package coordinator

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestShareRecordsGolden: each share group record, key and value, is the
// bytes Kafka 4.3.1's generated classes write for the same fields
// (MessageUtil.toVersionPrefixedBytes over ShareGroup*Key/Value, the key
// prefixed with its record type; produced with the kafka-group-coordinator
// 4.3.1 jar), and reads back to the same fields.
func TestShareRecordsGolden(t *testing.T) {
	tid := partition.TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	parts := partSet{{tid, 0}: {}, {tid, 2}: {}}
	m := &sgMember{id: "m", clientID: "c", clientHost: "/h", subscribedNames: []string{"a", "b"}, epoch: 3, previous: 2, assigned: parts}
	sg := newShareGroup()
	sg.epoch, sg.assignmentEpoch, sg.subscriptionHash = 3, 3, 0x1122334455667788
	sg.members["m"] = m
	sg.target["m"] = parts
	g := &group{id: "g", sg: sg}
	member := g.sgMemberRecords(m)
	target := g.sgTargetRecords()
	recs := map[string]recordbatch.Record{
		"ShareGroupMetadata":                 g.sgMetadataRecord(),
		"ShareGroupMemberMetadata":           member[0],
		"ShareGroupCurrentMemberAssignment":  member[1],
		"ShareGroupTargetAssignmentMember":   target[0],
		"ShareGroupTargetAssignmentMetadata": target[1],
		"ShareGroupStatePartitionMetadata": {
			Key:   consumerKey(recShareGroupStatePartition, "g", nil),
			Value: statePartitionValue(parts, func(partition.TopicID) string { return "a" }),
		},
	}
	golden := map[string][2]string{
		"ShareGroupMetadata":                 {"000b000167", "000000000003112233445566778800"},
		"ShareGroupMemberMetadata":           {"000a00016700016d", "0000000263032f68030261026200"},
		"ShareGroupTargetAssignmentMetadata": {"000c000167", "00000000000300"},
		"ShareGroupTargetAssignmentMember":   {"000d00016700016d", "0000020102030405060708090a0b0c0d0e0f100300000000000000020000"},
		"ShareGroupCurrentMemberAssignment":  {"000e00016700016d", "0000000000030000000200020102030405060708090a0b0c0d0e0f100300000000000000020000"},
		"ShareGroupStatePartitionMetadata":   {"000f000167", "000001020102030405060708090a0b0c0d0e0f100261030000000000000002000100"},
	}
	for name, want := range golden {
		r := recs[name]
		if got := hex.EncodeToString(r.Key); got != want[0] {
			t.Errorf("%s key %s, want %s", name, got, want[0])
		}
		if got := hex.EncodeToString(r.Value); got != want[1] {
			t.Errorf("%s value %s, want %s", name, got, want[1])
		}
	}
	ls := newLoadedShare()
	for name, r := range recs {
		typ := binary.BigEndian.Uint16(r.Key)
		gid, mid, err := parseShareKey(typ, r.Key)
		if err != nil || gid != "g" || shareMemberKeyed(typ) && mid != "m" {
			t.Fatalf("%s key: %q %q %v", name, gid, mid, err)
		}
		if err := ls.apply(typ, mid, r.Value); err != nil {
			t.Fatalf("%s value: %v", name, err)
		}
	}
	lm, cur := ls.members["m"], ls.current["m"]
	if !ls.hasMeta || ls.epoch != 3 || ls.hash != 0x1122334455667788 || ls.targetEpoch != 3 || !ls.target["m"].equal(parts) || !ls.initialized.equal(parts) ||
		lm == nil || lm.clientID != "c" || lm.clientHost != "/h" || len(lm.subscribedNames) != 2 || lm.rackID != nil ||
		cur == nil || cur.epoch != 3 || cur.previous != 2 || !cur.assigned.equal(parts) {
		t.Fatalf("read back: %+v %+v %+v", ls, lm, cur)
	}
}

// FuzzShareRecord: no key or value decodes into a panic or an unbounded
// allocation.
func FuzzShareRecord(f *testing.F) {
	for _, s := range []string{"000b000167", "000a00016700016d", "000d00016700016d", "000f000167"} {
		k, _ := hex.DecodeString(s)
		f.Add(k, []byte{0, 0, 0, 0, 0, 3, 0})
	}
	v, _ := hex.DecodeString("000001020102030405060708090a0b0c0d0e0f100261030000000000000002000100")
	f.Add([]byte{0, 15, 0, 1, 'g'}, v)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		if len(key) < 2 {
			return
		}
		typ := binary.BigEndian.Uint16(key)
		if !isShareRecord(typ) {
			typ = recShareGroupMemberMetadata + typ%6
		}
		_, mid, err := parseShareKey(typ, key)
		if err != nil {
			return
		}
		ls := newLoadedShare()
		_ = ls.apply(typ, mid, value)
	})
}

// TestShareGroupSurvivesRestart: a share group's members, epochs,
// assignment and initialized share-partitions come back from
// __consumer_offsets; a member heartbeats on at its epoch.
func TestShareGroupSurvivesRestart(t *testing.T) {
	p := newMemPersister()
	e := newEnv(t, func(c *Config) { c.SharePersister = p })
	if _, err := e.store.CreateTopic("t", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hb := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.SetVersion(1)
		r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = "sg", member, epoch, topics
		return e.c.ShareGroupHeartbeat(ctx, r, ClientInfo{ClientID: "c", ClientHost: "/h"})
	}
	a := hb("a", 0, []string{"t"})
	b := hb("b", 0, []string{"t"})
	if a.ErrorCode != 0 || b.ErrorCode != 0 || b.MemberEpoch != 2 || len(b.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("join: %+v %+v", a, b)
	}
	before := e.c.ShareGroupDescribe(ctx, "sg")
	e.restart()
	after := e.c.ShareGroupDescribe(ctx, "sg")
	if after.ErrorCode != 0 || after.GroupEpoch != before.GroupEpoch || after.AssignmentEpoch != before.AssignmentEpoch || len(after.Members) != 2 {
		t.Fatalf("after restart: %+v, before %+v", after, before)
	}
	for i := range after.Members {
		if after.Members[i].MemberEpoch != before.Members[i].MemberEpoch || len(after.Members[i].Assignment.TopicPartitions) != 1 {
			t.Fatalf("member %d: %+v, before %+v", i, after.Members[i], before.Members[i])
		}
	}
	// a is still at the epoch it joined at; its heartbeat brings it to 2
	// with half the partitions.
	if r := hb("a", 1, nil); r.ErrorCode != 0 || r.MemberEpoch != 2 || r.Assignment == nil || len(r.Assignment.TopicPartitions[0].Partitions) != 1 {
		t.Fatalf("heartbeat after restart: %+v", r)
	}
	// The share-partitions were initialized once, at the latest offset.
	topic := e.store.Topic("t")
	for part := int32(0); part < 2; part++ {
		s, ok, _ := p.ReadSummary(sharestate.Key{GroupID: "sg", TopicID: topic.ID, Partition: part})
		if !ok || s.StartOffset != 0 {
			t.Fatalf("partition %d: %+v %v", part, s, ok)
		}
	}
	// Leaving empties the group, which DeleteGroups then removes with its
	// share state.
	hb("a", 2, nil)
	if r := hb("a", -1, nil); r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if r := hb("b", 2, nil); r.ErrorCode != 0 || r.MemberEpoch != 3 || len(r.Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("b after a left: %+v", r)
	}
	hb("b", -1, nil)
	if code := e.c.DeleteGroup(ctx, "sg"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if _, ok, _ := p.ReadSummary(sharestate.Key{GroupID: "sg", TopicID: topic.ID, Partition: 0}); ok {
		t.Fatal("share state kept after DeleteGroups")
	}
	e.restart()
	if d := e.c.ShareGroupDescribe(ctx, "sg"); d.ErrorCode == 0 {
		t.Fatalf("deleted group came back: %+v", d)
	}
}

func TestSimpleShareAssign(t *testing.T) {
	t1, t2 := partition.TopicID{1}, partition.TopicID{2}
	topics := map[string]struct {
		id partition.TopicID
		n  int
	}{"a": {t1, 3}, "b": {t2, 1}}
	lookup := func(n string) (partition.TopicID, int, bool) {
		x, ok := topics[n]
		return x.id, x.n, ok
	}
	count := func(a map[string]partSet) (perMember map[string]int, perPart map[topicIDPartition]int) {
		perMember, perPart = map[string]int{}, map[topicIDPartition]int{}
		for id, s := range a {
			perMember[id] = len(s)
			for tp := range s {
				perPart[tp]++
			}
		}
		return
	}
	// Fewer members than partitions: each partition to one member.
	m, p := count(simpleShareAssign(map[string][]string{"x": {"a", "b"}, "y": {"a", "b"}}, lookup))
	if m["x"] != 2 || m["y"] != 2 || len(p) != 4 {
		t.Fatalf("2 members, 4 partitions: %v %v", m, p)
	}
	for _, n := range p {
		if n != 1 {
			t.Fatalf("shared partition: %v", p)
		}
	}
	// More members than partitions: every member gets one, shared.
	subs := map[string][]string{}
	for _, id := range []string{"1", "2", "3", "4", "5"} {
		subs[id] = []string{"b"}
	}
	m, p = count(simpleShareAssign(subs, lookup))
	if len(m) != 5 || p[topicIDPartition{t2, 0}] != 5 {
		t.Fatalf("5 members, 1 partition: %v %v", m, p)
	}
	// An unknown topic assigns nothing.
	if a := simpleShareAssign(map[string][]string{"x": {"nope"}}, lookup); len(a["x"]) != 0 {
		t.Fatalf("unknown topic: %v", a)
	}
}

// isShareRecord reports whether typ is one of the share group record types.
func isShareRecord(typ uint16) bool {
	return typ >= recShareGroupMemberMetadata && typ <= recShareGroupStatePartition
}
