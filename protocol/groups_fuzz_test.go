package protocol

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// groupKeys are the group coordinator's APIs.
var groupKeys = []int16{8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47}

// FuzzGroupRequests runs arbitrary group API request bodies through their
// handlers against one live coordinator, so requests build on the state
// earlier ones left. Input: a key index, a version, the body. Invariants:
// no handler panics, and every response encodes at the request's version.
// A JoinGroup or SyncGroup that would wait for other members is abandoned
// after a millisecond, as a closing connection abandons it.
func FuzzGroupRequests(f *testing.F) {
	seed := func(i int, req kmsg.Request, v int16) {
		req.SetVersion(v)
		f.Add(byte(i), byte(v), req.AppendTo(nil))
	}
	j := kmsg.NewPtrJoinGroupRequest()
	j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = "g", 10000, 10000, "consumer"
	j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)}}
	for _, v := range []int16{0, 4, 5, 9} {
		seed(3, j, v)
	}
	c := commitReq(0, "g", -1, "", "t", 1)
	for _, v := range []int16{0, 2, 6, 9} {
		seed(0, c, v)
	}
	o := kmsg.NewPtrOffsetFetchRequest()
	o.Group = "g"
	o.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
	for _, v := range []int16{0, 2, 8, 9} {
		seed(1, o, v)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "g", []string{"g", "h"}
	seed(2, fc, 0)
	seed(2, fc, 6)
	s := kmsg.NewPtrSyncGroupRequest()
	s.Group, s.MemberID = "g", "m"
	seed(6, s, 5)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "g"
	seed(4, hb, 4)
	l := kmsg.NewPtrLeaveGroupRequest()
	l.Group, l.Members = "g", []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	seed(5, l, 5)
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g", ""}
	seed(7, d, 6)
	lg := kmsg.NewPtrListGroupsRequest()
	lg.StatesFilter, lg.TypesFilter = []string{"Stable"}, []string{"classic"}
	seed(8, lg, 5)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g"}
	seed(9, dg, 2)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group, od.Topics = "g", []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	seed(10, od, 0)

	// Nothing may log to f once fuzzing runs: everything logs nowhere.
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store, err := partition.Open(partition.Config{Dir: f.TempDir(), NodeID: 1, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		f.Fatal(err)
	}
	gcfg := coordinator.DefaultConfig()
	gcfg.InitialRebalanceDelay, gcfg.OffsetsTopicPartitions, gcfg.Clock = 0, 3, clk
	groups, err := coordinator.New(gcfg, store)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		groups.Close()
		store.Close()
	})
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Clock, cfg.Logger, cfg.Groups = 1, clk, zerolog.Nop(), groups
	startCoordinators(f, &cfg, store, nil) // the transaction coordinator
	srv := mustNewServer(f, cfg, store)
	f.Cleanup(func() { srv.Close() })
	if _, err := store.CreateTopic("t", 2, nil, false); err != nil {
		f.Fatal(err)
	}
	id := "fuzz"
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	f.Fuzz(func(t *testing.T, keyIdx, version byte, body []byte) {
		key := groupKeys[int(keyIdx)%len(groupKeys)]
		a := apis[key]
		v := a.min + int16(version)%(a.max-a.min+1)
		req := kmsg.RequestForKey(key)
		req.SetVersion(v)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		resp, err := a.handle(srv, &Request{Ctx: ctx, Version: v, ClientID: &id, Remote: remote, Body: req})
		if err != nil {
			if err != errRequestAbandoned {
				t.Fatalf("key %d v%d: %v", key, v, err)
			}
			return
		}
		resp.SetVersion(v)
		resp.AppendTo(nil)
	})
}
