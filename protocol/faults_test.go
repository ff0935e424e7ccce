package protocol

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/recordbatch"
)

func faultBroker(t *testing.T) (*testBroker, *Faults) {
	t.Helper()
	f := &Faults{}
	b := startBroker(t, func(c *Config) { c.Faults = f })
	b.createTopic(t, "t", 2, nil)
	b.createTopic(t, "other", 1, nil)
	return b, f
}

func mustAddFault(t *testing.T, f *Faults, r FaultRule) int64 {
	t.Helper()
	id, err := f.Add(r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// An error rule answers Produce with the code on the partitions the
// request names, and appends nothing; the rule's count runs out.
func TestFaultErrorProduce(t *testing.T) {
	b, f := faultBroker(t)
	p := int32(1)
	mustAddFault(t, f, FaultRule{APIKey: kmsg.Produce.Int16(), Topic: "t", Partition: &p, Action: FaultError, ErrorCode: kerr.NotLeaderForPartition.Code, Count: 1})
	w := dialWire(t, b.addr)
	// Another partition does not match.
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "t", [16]byte{}, 0, testBatch(t, recordbatch.None, b.nowMs())))); sp.ErrorCode != 0 {
		t.Fatalf("partition 0: error %d", sp.ErrorCode)
	}
	sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "t", [16]byte{}, 1, testBatch(t, recordbatch.None, b.nowMs()))))
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.Partition != 1 {
		t.Fatalf("partition 1: %+v", sp)
	}
	if o := b.store.Topic("t").Partitions[1].Offsets(); o.LogEndOffset != 0 {
		t.Fatalf("appended despite the fault: %+v", o)
	}
	// Count 1: the rule is gone.
	if sp := onlyProducePartition(t, w.roundTrip(produceReq(9, "t", [16]byte{}, 1, testBatch(t, recordbatch.None, b.nowMs())))); sp.ErrorCode != 0 {
		t.Fatalf("after the count: error %d", sp.ErrorCode)
	}
	if n := len(f.List()); n != 0 {
		t.Fatalf("%d rules left", n)
	}
}

// The error goes into every error field the response has: Metadata's
// topics (mirrored from the request), JoinGroup's top level.
func TestFaultErrorResponses(t *testing.T) {
	b, f := faultBroker(t)
	mustAddFault(t, f, FaultRule{APIKey: kmsg.Metadata.Int16(), Action: FaultError, ErrorCode: kerr.LeaderNotAvailable.Code})
	mustAddFault(t, f, FaultRule{APIKey: kmsg.JoinGroup.Int16(), ClientID: "kcompatd-test", Action: FaultError, ErrorCode: kerr.CoordinatorLoadInProgress.Code})
	w := dialWire(t, b.addr)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: strp("t")}, {Topic: strp("other")}}
	resp := w.roundTrip(md).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 || *resp.Topics[1].Topic != "other" || resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code || resp.Topics[1].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("metadata: %+v", resp.Topics)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.SetVersion(9)
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	if r := w.roundTrip(jg).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("join: %+v", r)
	}
	if st := f.List(); len(st) != 2 || st[0].Matched != 1 || st[1].Matched != 1 {
		t.Fatalf("status %+v", st)
	}
}

// A delay rule answers after the delay on the server's clock; a drop rule
// closes the connection without an answer; a pass rule only counts.
func TestFaultDelayDropPass(t *testing.T) {
	b, f := faultBroker(t)
	clk := clock.NewManual(time.Unix(0, 0))
	f.Clock = clk
	id := mustAddFault(t, f, FaultRule{APIKey: kmsg.ListOffsets.Int16(), Action: FaultDelay, Delay: time.Minute})
	w := dialWire(t, b.addr)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(4)
	lo.ReplicaID = -1
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
	corr := w.send(lo)
	clk.WaitForTimers(1) // the request waits for the delay
	clk.Advance(time.Minute)
	if r, err := w.recv(lo.Key(), lo.GetVersion(), corr); err != nil || r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("after the delay: %v %+v", err, r)
	}
	if !f.Remove(id) || f.Remove(id) {
		t.Fatal("Remove")
	}
	mustAddFault(t, f, FaultRule{APIKey: kmsg.ListOffsets.Int16(), Action: FaultPass})
	w.roundTrip(lo)
	if st := f.List(); st[0].Matched != 1 {
		t.Fatalf("pass: %+v", st)
	}
	mustAddFault(t, f, FaultRule{APIKey: kmsg.Fetch.Int16(), Action: FaultDrop})
	fr := kmsg.NewPtrFetchRequest()
	fr.SetVersion(11)
	fr.ReplicaID = -1
	fr.MaxBytes = 1 << 20
	fr.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1}}}}
	w.send(fr)
	w.expectClosed()
}

func TestFaultRuleValidate(t *testing.T) {
	p := int32(0)
	for _, r := range []FaultRule{
		{APIKey: 9999, Action: FaultPass},
		{APIKey: 0, Action: "explode"},
		{APIKey: 0, Action: FaultError},
		{APIKey: 0, Action: FaultDelay},
		{APIKey: 0, Partition: &p, Action: FaultPass},
		{APIKey: 0, Action: FaultPass, Count: -1},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v: valid", r)
		}
	}
}
