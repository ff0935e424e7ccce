package protocol

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/internal/clock"
)

// shareStateBroker is a broker whose share state persister is the share
// coordinator (as kcompatd.go wires it), with 3 state partitions.
func shareStateBroker(t *testing.T) (*testBroker, *wire, *sharestate.Coordinator) {
	t.Helper()
	lg := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store := openTestStore(t, clk, lg)
	scfg := sharestate.DefaultConfig()
	scfg.StateTopicPartitions = 3
	ss, err := sharestate.New(scfg, store, clk, lg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	b := startBrokerOn(t, store, clk, lg, nil, nil, func(cfg *coordinator.Config) {
		cfg.InitialRebalanceDelay = 0
		cfg.OffsetsTopicPartitions = 3
		cfg.SharePersister = ss
	})
	return b, dialWire(t, b.addr), ss
}

// TestShareStateTopicAutoCreated: a Metadata asking for
// __share_group_state with auto-creation has the share coordinator create
// it with its partition count, as Kafka's AutoTopicCreationManager.
func TestShareStateTopicAutoCreated(t *testing.T) {
	b, w, _ := shareStateBroker(t)
	if tp := b.store.Topic(sharestate.StateTopic); tp != nil {
		t.Fatalf("state topic exists before it is asked for")
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(sharestate.StateTopic)
	req.Topics = append(req.Topics, rt)
	resp := w.roundTrip(req).(*kmsg.MetadataResponse)
	expectErr(t, "first metadata", resp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
	tp := b.store.Topic(sharestate.StateTopic)
	if tp == nil || len(tp.Partitions) != 3 {
		t.Fatalf("state topic %+v, want 3 partitions", tp)
	}
	resp = w.roundTrip(req).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != 0 || !resp.Topics[0].IsInternal {
		t.Fatalf("second metadata %+v", resp.Topics[0])
	}
}

// TestDeleteTopicsCleansShareState: deleting a topic a share group
// initialized drops the group's initialized share-partitions and their
// state in the share coordinator.
func TestDeleteTopicsCleansShareState(t *testing.T) {
	b, w, ss := shareStateBroker(t)
	f := newShareFixture(t, b, w, "gone", 3)
	f.join(t, w, "m1-aaaaaaaaaaaaaaaaaa")
	key := sharestate.Key{GroupID: f.group, TopicID: f.topic.ID, Partition: 0}
	if _, found, err := ss.Read(key, -1); err != nil || !found {
		t.Fatalf("share state before the deletion: found %v, %v", found, err)
	}
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.SetVersion(1)
	leave.GroupID, leave.MemberID, leave.MemberEpoch = f.group, "m1-aaaaaaaaaaaaaaaaaa", -1
	expectErr(t, "leave", w.roundTrip(leave).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode, nil)

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	n := "gone"
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &n}}
	expectErr(t, "delete", w.roundTrip(del).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, nil)

	if _, found, err := ss.Read(key, -1); err != nil || found {
		t.Fatalf("share state after the deletion: found %v, %v", found, err)
	}
	d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	d.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: f.group}}
	g := w.roundTrip(d).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Fatalf("initialized share-partitions after the deletion: %+v", g)
	}
}
