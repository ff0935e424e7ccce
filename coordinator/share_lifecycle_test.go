package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// shareJoin sends a ShareGroupHeartbeat at epoch (0 joins) subscribing to
// topics (nil: unchanged).
func (e *env) shareJoin(t *testing.T, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.SetVersion(1)
	r.GroupID, r.MemberID, r.MemberEpoch = group, member, epoch
	r.SubscribedTopicNames = topics
	return e.c.ShareGroupHeartbeat(context.Background(), r, ClientInfo{})
}

// appendRecords appends n records to partition p of tp.
func appendRecords(t *testing.T, tp *partition.Topic, p, n int) {
	t.Helper()
	var recs []recordbatch.Record
	for i := 0; i < n; i++ {
		recs = append(recs, recordbatch.Record{OffsetDelta: int32(i), Value: []byte("v")})
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.Partitions[p].Append(b); err != nil {
		t.Fatal(err)
	}
}

// The offset expiry pass never deletes a share group (Kafka's
// ShareGroup.shouldExpire is false), with or without members: its members
// keep heartbeating and its share state is not initialized again.
func TestShareGroupNotExpired(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave bool
	}{{"with a member", false}, {"empty", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			tp, err := e.store.CreateTopic("t", 1, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			resp := e.shareJoin(t, "sg", "m", 0, "t")
			expectCode(t, "join", resp.ErrorCode, nil)
			key := sharestate.Key{GroupID: "sg", TopicID: tp.ID, Partition: 0}
			appendRecords(t, tp, 0, 10)
			// Two acknowledged, the rest in flight.
			if err := e.c.persister.Write(key, 0, 0, 2, 0, nil); err != nil {
				t.Fatal(err)
			}
			epoch := resp.MemberEpoch
			if tc.leave {
				expectCode(t, "leave", e.shareJoin(t, "sg", "m", leaveEpoch).ErrorCode, nil)
				epoch = 0
			}
			e.c.ExpireOffsets()
			d := e.c.ShareGroupDescribe(context.Background(), "sg")
			expectCode(t, "describe", d.ErrorCode, nil)
			if want := map[bool]int{false: 1, true: 0}[tc.leave]; len(d.Members) != want {
				t.Fatalf("members after the expiry pass: %d, want %d", len(d.Members), want)
			}
			expectCode(t, "heartbeat", e.shareJoin(t, "sg", "m", epoch, "t").ErrorCode, nil)
			st, found, err := e.c.persister.Read(key, 0)
			if err != nil || !found || st.StartOffset != 2 {
				t.Fatalf("share state after the expiry pass: %+v found=%v err=%v, want start offset 2", st, found, err)
			}
		})
	}
}

// A share group that finds state in the persister for a partition it
// has not initialized (it lost its records) keeps that state.
func TestShareAssignmentKeepsExistingState(t *testing.T) {
	e := newEnv(t, nil)
	tp, err := e.store.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	appendRecords(t, tp, 0, 10)
	key := sharestate.Key{GroupID: "sg", TopicID: tp.ID, Partition: 0}
	if err := e.c.persister.Initialize(key, 3, 4); err != nil {
		t.Fatal(err)
	}
	expectCode(t, "join", e.shareJoin(t, "sg", "m", 0, "t").ErrorCode, nil)
	st, found, err := e.c.persister.Read(key, 0)
	if err != nil || !found || st.StartOffset != 4 || st.StateEpoch != 3 {
		t.Fatalf("share state after the join: %+v found=%v err=%v, want start 4 state epoch 3", st, found, err)
	}
}

// A panic in a share group's goroutine leaves the group as its records
// have it: the member keeps its epoch and its assignment.
func TestShareGroupGoroutinePanic(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.store.CreateTopic("t", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	resp := e.shareJoin(t, "sg", "m", 0, "t")
	expectCode(t, "join", resp.ErrorCode, nil)
	old := e.c.lookup("sg", false)
	if !old.do(context.Background(), func() { panic("injected: share group work") }) {
		t.Fatal("group gone before the panic")
	}
	wait(t, old.done)
	hb := e.shareJoin(t, "sg", "m", resp.MemberEpoch)
	expectCode(t, "heartbeat after the panic", hb.ErrorCode, nil)
	if hb.MemberEpoch != resp.MemberEpoch {
		t.Fatalf("member epoch after the panic: %d, want %d", hb.MemberEpoch, resp.MemberEpoch)
	}
	d := e.c.ShareGroupDescribe(context.Background(), "sg")
	if len(d.Members) != 1 || len(d.Members[0].Assignment.TopicPartitions) != 1 || len(d.Members[0].Assignment.TopicPartitions[0].Partitions) != 2 {
		t.Fatalf("described after the panic: %+v", d)
	}
	// What was rebuilt is what is written: a restart loads the same.
	e.restart()
	expectCode(t, "heartbeat after the restart", e.shareJoin(t, "sg", "m", resp.MemberEpoch).ErrorCode, nil)
}

// A share group has no committed offsets: OffsetCommit, TxnOffsetCommit,
// OffsetDelete and OffsetFetch answer GROUP_ID_NOT_FOUND, as Kafka's
// ShareGroup.validateOffsetCommit/Fetch/Delete ("Group %s is not a
// consumer group."), and nothing is written (a restart finds the share
// group as it was).
func TestShareGroupRefusesOffsets(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.store.CreateTopic("t", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	resp := e.shareJoin(t, "sg", "m", 0, "t")
	expectCode(t, "join", resp.ErrorCode, nil)
	part := []CommitPartition{{Topic: "t", Partition: 0, Offset: 42, LeaderEpoch: -1, ExpireTimestamp: -1}}
	for _, tc := range []struct {
		name string
		code func() int16
	}{
		{"OffsetCommit, simple", func() int16 { return oneCode(t, e.c.CommitOffsets(context.Background(), 9, "sg", -1, "", nil, part)) }},
		{"OffsetCommit, member", func() int16 {
			return oneCode(t, e.c.CommitOffsets(context.Background(), 9, "sg", resp.MemberEpoch, "m", nil, part))
		}},
		{"OffsetCommit v8", func() int16 { return oneCode(t, e.c.CommitOffsets(context.Background(), 8, "sg", -1, "", nil, part)) }},
		{"TxnOffsetCommit", func() int16 { return txnCommit(e, "sg", 1, 0, -1, "", nil, map[string]int64{"t": 42}) }},
		{"OffsetDelete", func() int16 {
			code, _ := e.c.DeleteOffsets(context.Background(), "sg", []TopicPartition{{Topic: "t", Partition: 0}})
			return code
		}},
		{"OffsetFetch", func() int16 {
			_, code := e.c.FetchOffsets(context.Background(), "sg", map[string][]int32{"t": {0}})
			return code
		}},
		{"OffsetFetch, all", func() int16 {
			_, code := e.c.FetchOffsets(context.Background(), "sg", nil)
			return code
		}},
	} {
		expectCode(t, tc.name, tc.code(), kerr.GroupIDNotFound)
	}
	e.restart()
	d := e.c.ShareGroupDescribe(context.Background(), "sg")
	expectCode(t, "describe after restart", d.ErrorCode, nil)
	if len(d.Members) != 1 {
		t.Fatalf("members after restart: %d", len(d.Members))
	}
}

// A group that has committed offsets is a classic group: as Kafka's
// getOrMaybeCreateShareGroup, a ShareGroupHeartbeat for it is
// GROUP_ID_NOT_FOUND "Group %s is not a share group.".
func TestShareHeartbeatOnSimpleClassicGroup(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := e.store.CreateTopic("t", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	expectCode(t, "commit", oneCode(t, e.c.CommitOffsets(context.Background(), 9, "g", -1, "", nil,
		[]CommitPartition{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1, ExpireTimestamp: -1}})), nil)
	resp := e.shareJoin(t, "g", "m", 0, "t")
	expectCode(t, "share heartbeat", resp.ErrorCode, kerr.GroupIDNotFound)
	if resp.ErrorMessage == nil || *resp.ErrorMessage != "Group g is not a share group." {
		t.Fatalf("message: %v", resp.ErrorMessage)
	}
}

// topicCheckedPersister refuses to delete the state of a topic the store
// no longer has, as Kafka's share coordinator (and sharestate) do.
type topicCheckedPersister struct {
	sharestate.Persister
	store **partition.Store
}

func (p topicCheckedPersister) Delete(k sharestate.Key) error {
	if (*p.store).TopicByID(k.TopicID) == nil {
		return kerr.UnknownTopicOrPartition
	}
	return p.Persister.Delete(k)
}

// A share group one of whose topics was deleted can still be deleted, and
// its offsets of the other topics too: the deleted topic's partitions are
// skipped (Kafka's share coordinator would refuse them), not retried
// forever.
func TestShareGroupDeleteAfterTopicDeleted(t *testing.T) {
	var store *partition.Store
	e := newEnv(t, func(c *Config) { c.SharePersister = topicCheckedPersister{newMemPersister(), &store} })
	store = e.store
	keep, err := e.store.CreateTopic("keep", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateTopic("gone", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	expectCode(t, "join", e.shareJoin(t, "sg", "m", 0, "keep", "gone").ErrorCode, nil)
	expectCode(t, "leave", e.shareJoin(t, "sg", "m", leaveEpoch).ErrorCode, nil)
	if err := e.store.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	e.c.TopicDeleted(ctx, "gone")

	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = "sg"
	for _, n := range []string{"gone", "keep"} {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	resp := e.c.DeleteShareGroupOffsets(ctx, req)
	expectCode(t, "DeleteShareGroupOffsets", resp.ErrorCode, nil)
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || resp.Topics[1].ErrorCode != 0 {
		t.Fatalf("DeleteShareGroupOffsets topics: %+v", resp.Topics)
	}
	if _, found, err := e.c.persister.Read(sharestate.Key{GroupID: "sg", TopicID: keep.ID}, 0); err != nil || found {
		t.Fatalf("keep's share state after DeleteShareGroupOffsets: found %v, %v; want not found", found, err)
	}
	expectCode(t, "DeleteGroups", e.c.DeleteGroup(ctx, "sg"), nil)
	expectCode(t, "describe", e.c.ShareGroupDescribe(ctx, "sg").ErrorCode, kerr.GroupIDNotFound)
	e.restart()
	store = e.store
	expectCode(t, "describe after restart", e.c.ShareGroupDescribe(ctx, "sg").ErrorCode, kerr.GroupIDNotFound)
}

// A panic in a streams group's goroutine leaves the group as its records
// have it, as a restart would: described the same, a member heartbeats on
// at its epoch with its tasks.
func TestStreamsGroupGoroutinePanic(t *testing.T) {
	e := newEnv(t, nil)
	e.topic("in", 2)
	a := e.newStreamsClient("g", "a", wordCount("in"))
	for range 3 {
		a.heartbeat()
	}
	before := e.c.StreamsGroupDescribe(context.Background(), "g")
	old := e.c.lookup("g", false)
	if !old.do(context.Background(), func() { panic("injected: streams group work") }) {
		t.Fatal("group gone before the panic")
	}
	wait(t, old.done)
	after := e.c.StreamsGroupDescribe(context.Background(), "g")
	if after.ErrorCode != 0 || after.Epoch != before.Epoch || len(after.Members) != 1 || after.Members[0].MemberEpoch != before.Members[0].MemberEpoch {
		t.Fatalf("after the panic %+v\nbefore %+v", after, before)
	}
	ea := a.epoch
	a.heartbeat()
	if a.epoch != ea || len(a.owned.active) == 0 {
		t.Fatalf("after the panic: epoch %d (was %d), owned %v", a.epoch, ea, a.owned.active)
	}
}

// ShareGroupHeartbeat refuses a member id Kafka's isMemberIdValid
// refuses, ahead of the request's other checks; a blank but non-empty
// id is the coordinator's "MemberId can't be empty.".
func TestShareHeartbeatMemberIDValidated(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ group, member, msg string }{
		{"sg", "", "Invalid member id in the request."},
		{"", "", "Invalid member id in the request."},
		{"sg", "0123456789012345678901234567890123456", "Invalid member id in the request."},
		{"sg", " ", "MemberId can't be empty."},
	} {
		resp := e.shareJoin(t, tc.group, tc.member, 0, "t")
		expectCode(t, tc.member, resp.ErrorCode, kerr.InvalidRequest)
		if resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg {
			t.Fatalf("member %q: message %v, want %q", tc.member, resp.ErrorMessage, tc.msg)
		}
	}
}
