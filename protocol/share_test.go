package protocol

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

func init() {
	versionChecks[kmsg.ShareGroupHeartbeat.Int16()] = checkShareGroupHeartbeatVersion
	versionChecks[kmsg.ShareGroupDescribe.Int16()] = checkShareGroupDescribeVersion
	versionChecks[kmsg.ShareFetch.Int16()] = checkShareFetchVersion
	versionChecks[kmsg.ShareAcknowledge.Int16()] = checkShareAcknowledgeVersion
	versionChecks[kmsg.DescribeShareGroupOffsets.Int16()] = checkDescribeShareGroupOffsetsVersion
	versionChecks[kmsg.AlterShareGroupOffsets.Int16()] = checkAlterShareGroupOffsetsVersion
	versionChecks[kmsg.DeleteShareGroupOffsets.Int16()] = checkDeleteShareGroupOffsetsVersion
}

// shareFixture is a topic with n records and a share group reading it
// from the earliest offset.
type shareFixture struct {
	topic *partition.Topic
	group string
}

func newShareFixture(t *testing.T, b *testBroker, w *wire, name string, n int) shareFixture {
	t.Helper()
	tp := b.createTopic(t, name, 1, nil)
	if n > 0 {
		var recs []recordbatch.Record
		for i := 0; i < n; i++ {
			recs = append(recs, recordbatch.Record{Value: []byte(fmt.Sprint(i))})
		}
		p := onlyProducePartition(t, w.roundTrip(produceReq(9, name, tp.ID, 0, testBatch(t, recordbatch.None, b.nowMs(), recs...))))
		if p.ErrorCode != 0 {
			t.Fatalf("produce: %d", p.ErrorCode)
		}
	}
	f := shareFixture{topic: tp, group: "sg-" + name}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = resourceGroup, f.group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", strp("earliest")
	res.Configs = append(res.Configs, c)
	alter.Resources = append(alter.Resources, res)
	if r := w.roundTrip(alter).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %d %s", r.Resources[0].ErrorCode, deref(r.Resources[0].ErrorMessage))
	}
	return f
}

func (f shareFixture) join(t *testing.T, w *wire, member string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.SetVersion(1)
	req.GroupID, req.MemberID, req.MemberEpoch = f.group, member, 0
	req.SubscribedTopicNames = []string{f.topic.Name}
	resp := w.roundTrip(req).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %d %s", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp
}

func (f shareFixture) fetch(w *wire, v int16, member string, epoch int32, acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	req := kmsg.NewPtrShareFetchRequest()
	req.SetVersion(v)
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &f.group, &member, epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 1, 1<<20, 500, 500
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rp.AcknowledgementBatches = acks
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: f.topic.ID, Partitions: []kmsg.ShareFetchRequestTopicPartition{rp}}}
	return w.roundTrip(req).(*kmsg.ShareFetchResponse)
}

func onlySharePartition(t *testing.T, resp *kmsg.ShareFetchResponse) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("share fetch: code %d, topics %+v", resp.ErrorCode, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

func checkShareGroupHeartbeatVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	f := newShareFixture(t, b, w, fmt.Sprintf("sghb%d", v), 0)
	resp := f.join(t, w, "m1")
	if resp.MemberEpoch != 1 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join %+v", resp)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.SetVersion(v)
	hb.GroupID, hb.MemberID, hb.MemberEpoch = f.group, "m1", 7
	if r := w.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("wrong epoch: %d", r.ErrorCode)
	}
	hb.MemberEpoch = 1
	if r := w.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 || r.Assignment != nil {
		t.Fatalf("heartbeat: %+v", r)
	}
	hb.MemberEpoch = -1
	if r := w.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	hb.MemberID, hb.MemberEpoch = "", 0
	if r := w.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("no member id: %d", r.ErrorCode)
	}
}

func checkShareGroupDescribeVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	f := newShareFixture(t, b, w, fmt.Sprintf("sgd%d", v), 0)
	f.join(t, w, "m1")
	f.join(t, w, "m2")
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.SetVersion(v)
	req.GroupIDs = []string{f.group, "nope"}
	resp := w.roundTrip(req).(*kmsg.ShareGroupDescribeResponse)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || len(g.Members) != 2 || g.Assignor != "simple" || g.GroupEpoch != 2 {
		t.Fatalf("describe %+v", g)
	}
	// Two members, one partition: both share it.
	for _, m := range g.Members {
		if len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != f.topic.Name {
			t.Fatalf("member %+v", m)
		}
	}
	if resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("missing group: %d", resp.Groups[1].ErrorCode)
	}
}

func checkShareFetchVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	f := newShareFixture(t, b, w, fmt.Sprintf("sf%d", v), 3)
	f.join(t, w, "m1")
	resp := f.fetch(w, v, "m1", 0, nil)
	p := onlySharePartition(t, resp)
	if resp.AcquisitionLockTimeoutMillis != 30000 || len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 2 || p.AcquiredRecords[0].DeliveryCount != 1 || len(p.Records) == 0 {
		t.Fatalf("fetch: lock %d, %+v", resp.AcquisitionLockTimeoutMillis, p)
	}
	// Acknowledgements in a new session are refused.
	if r := f.fetch(w, v, "m1", 0, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acks at epoch 0: %d", r.ErrorCode)
	}
	// The new session (epoch 0 again) is at epoch 1: accept 0, release 1-2.
	r := f.fetch(w, v, "m1", 1, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
		{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}},
		{FirstOffset: 1, LastOffset: 2, AcknowledgeTypes: []int8{2}},
	})
	p = onlySharePartition(t, r)
	if p.AcknowledgeErrorCode != 0 || len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 1 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("redelivery: %+v", p)
	}
	if r := f.fetch(w, v, "m1", 5, nil); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("bad epoch: %d", r.ErrorCode)
	}
	if r := f.fetch(w, v, "m9", 3, nil); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %d", r.ErrorCode)
	}
}

func checkShareAcknowledgeVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	f := newShareFixture(t, b, w, fmt.Sprintf("sa%d", v), 2)
	f.join(t, w, "m1")
	onlySharePartition(t, f.fetch(w, 2, "m1", 0, nil))
	ack := func(epoch int32, renew bool, typ int8) *kmsg.ShareAcknowledgeResponse {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.SetVersion(v)
		member := "m1"
		req.GroupID, req.MemberID, req.ShareSessionEpoch, req.IsRenewAck = &f.group, &member, epoch, renew
		req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: f.topic.ID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{
			Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 1, AcknowledgeTypes: []int8{typ}}},
		}}}}
		return w.roundTrip(req).(*kmsg.ShareAcknowledgeResponse)
	}
	if r := ack(0, false, 1); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 0: %d", r.ErrorCode)
	}
	epoch := int32(1)
	if v >= 2 {
		r := ack(epoch, true, 4)
		if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 || r.AcquisitionLockTimeoutMillis != 30000 {
			t.Fatalf("renew: %+v", r)
		}
		epoch++
	}
	r := ack(epoch, false, 3)
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reject: %+v", r)
	}
	// Rejected records are archived: acknowledging them again is not
	// allowed, and the SPSO moved past them.
	if r := ack(epoch+1, false, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("ack twice: %d", r.Topics[0].Partitions[0].ErrorCode)
	}
	d := describeShareOffsets(t, w, 1, f.group)
	if d.Topics[0].Partitions[0].StartOffset != 2 || d.Topics[0].Partitions[0].Lag != 0 {
		t.Fatalf("after reject: %+v", d.Topics[0].Partitions[0])
	}
}

func describeShareOffsets(t *testing.T, w *wire, v int16, group string) kmsg.DescribeShareGroupOffsetsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.SetVersion(v)
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	resp := w.roundTrip(req).(*kmsg.DescribeShareGroupOffsetsResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 {
		t.Fatalf("describe offsets: %+v", resp.Groups)
	}
	return resp.Groups[0]
}

func alterShareOffsets(w *wire, group, topic string, start int64) *kmsg.AlterShareGroupOffsetsResponse {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: start}}}}
	return w.roundTrip(req).(*kmsg.AlterShareGroupOffsetsResponse)
}

func checkDescribeShareGroupOffsetsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	f := newShareFixture(t, b, w, fmt.Sprintf("dsgo%d", v), 5)
	if r := alterShareOffsets(w, f.group, f.topic.Name, 2); r.ErrorCode != 0 {
		t.Fatalf("alter: %d", r.ErrorCode)
	}
	p := describeShareOffsets(t, w, v, f.group).Topics[0].Partitions[0]
	wantLag := int64(-1)
	if v >= 1 {
		wantLag = 3
	}
	if p.StartOffset != 2 || p.Lag != wantLag || p.ErrorCode != 0 {
		t.Fatalf("describe: %+v", p)
	}
}

func checkAlterShareGroupOffsetsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	f := newShareFixture(t, b, w, fmt.Sprintf("asgo%d", v), 5)
	if r := alterShareOffsets(w, f.group, f.topic.Name, 4); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if r := alterShareOffsets(w, f.group, "nope", 4); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", r)
	}
	f.join(t, w, "m1")
	onlySharePartition(t, f.fetch(w, 2, "m1", 0, nil))
	if r := alterShareOffsets(w, f.group, f.topic.Name, 0); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("non-empty group: %d", r.ErrorCode)
	}
}

func checkDeleteShareGroupOffsetsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	f := newShareFixture(t, b, w, fmt.Sprintf("delsgo%d", v), 5)
	alterShareOffsets(w, f.group, f.topic.Name, 3)
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.SetVersion(v)
	req.GroupID = f.group
	req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: f.topic.Name}}
	resp := w.roundTrip(req).(*kmsg.DeleteShareGroupOffsetsResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", resp)
	}
	d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	d.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: f.group}}
	if g := w.roundTrip(d).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Fatalf("after delete: %+v", g)
	}
	req.GroupID = "nope"
	if r := w.roundTrip(req).(*kmsg.DeleteShareGroupOffsetsResponse); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("missing group: %d", r.ErrorCode)
	}
}

// TestShareGroupsListedAndDeleted: ListGroups lists a share group with
// type "share"; DeleteGroups refuses it while it has members and then
// deletes it with its share state.
func TestShareGroupsListedAndDeleted(t *testing.T) {
	b, w, ss := shareStateBroker(t)
	f := newShareFixture(t, b, w, "lsg", 2)
	f.join(t, w, "m1")
	key := sharestate.Key{GroupID: f.group, TopicID: f.topic.ID, Partition: 0}
	// The assignment initialized the share state.
	if _, found, err := ss.Read(key, -1); err != nil || !found {
		t.Fatalf("share state after the join: found %v, %v", found, err)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.SetVersion(5)
	lg.TypesFilter = []string{"share"}
	resp := w.roundTrip(lg).(*kmsg.ListGroupsResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].Group != f.group || resp.Groups[0].GroupType != "share" || resp.Groups[0].GroupState != "Stable" || resp.Groups[0].ProtocolType != "share" {
		t.Fatalf("list: %+v", resp.Groups)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{f.group}
	if r := w.roundTrip(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: %d", r.Groups[0].ErrorCode)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.SetVersion(1)
	hb.GroupID, hb.MemberID, hb.MemberEpoch = f.group, "m1", -1
	expectErr(t, "leave", w.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, nil)
	if r := w.roundTrip(del).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %d", r.Groups[0].ErrorCode)
	}
	// The share coordinator no longer has the group's state.
	if _, found, err := ss.Read(key, -1); err != nil || found {
		t.Fatalf("share state after DeleteGroups: found %v, %v; want not found", found, err)
	}
	if r := w.roundTrip(lg).(*kmsg.ListGroupsResponse); len(r.Groups) != 0 {
		t.Fatalf("listed after delete: %+v", r.Groups)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{f.group}
	if r := w.roundTrip(dg).(*kmsg.DescribeGroupsResponse); r.Groups[0].State != "Dead" {
		t.Fatalf("describe: %+v", r.Groups[0])
	}
}

// TestShareFetchLongPoll: a ShareFetch with nothing to acquire waits, and
// an append wakes it with the new records (the clock does not move: only
// the append can end the wait).
func TestShareFetchLongPoll(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	f := newShareFixture(t, b, w, "sflp", 0)
	f.join(t, w, "m1")
	fw := dialWire(t, b.addr)
	done := make(chan *kmsg.ShareFetchResponse, 1)
	go func() {
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(2)
		member := "m1"
		req.GroupID, req.MemberID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = &f.group, &member, 60000, 1, 1<<20, 10
		req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: f.topic.ID, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
		done <- fw.roundTrip(req).(*kmsg.ShareFetchResponse)
	}()
	b.clock.WaitForTimers(1) // the poll is waiting
	p := onlyProducePartition(t, w.roundTrip(produceReq(9, f.topic.Name, f.topic.ID, 0, testBatch(t, recordbatch.None, b.nowMs()))))
	if p.ErrorCode != 0 {
		t.Fatal(p.ErrorCode)
	}
	sp := onlySharePartition(t, <-done)
	if len(sp.AcquiredRecords) != 1 || sp.AcquiredRecords[0].FirstOffset != 0 {
		t.Fatalf("woken fetch: %+v", sp)
	}
}

// TestShareSessionLimit: group.share.max.share.sessions bounds the share
// sessions; a closed session makes room.
func TestShareSessionLimit(t *testing.T) {
	b := startBrokerTuned(t, nil, nil, func(c *coordinator.Config) { c.ShareMaxShareSessions = 1 })
	w := dialWire(t, b.addr)
	f := newShareFixture(t, b, w, "ssl", 1)
	f.join(t, w, "m1") // the assignment initializes the share state
	onlySharePartition(t, f.fetch(w, 2, "m1", 0, nil))
	if r := f.fetch(w, 2, "m2", 0, nil); r.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("second session: %d", r.ErrorCode)
	}
	// m1's final fetch closes its session and releases its record.
	if r := f.fetch(w, 2, "m1", -1, nil); r.ErrorCode != 0 {
		t.Fatalf("closing: %d", r.ErrorCode)
	}
	p := onlySharePartition(t, f.fetch(w, 2, "m2", 0, nil))
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("after close: %+v", p)
	}
}
