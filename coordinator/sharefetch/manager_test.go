package sharefetch

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// A ShareFetch for a partition whose share state was never initialized
// (any group id, no member of a group assigned it) creates nothing, in the
// persister or in memory: the partition is answered UNKNOWN_SERVER_ERROR
// with the message Kafka's share coordinator gives, and each fetch of
// another group id leaves no share-partition behind. A partition with
// state is fetched from.
func TestShareFetchCreatesNoState(t *testing.T) {
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	st, err := partition.Open(partition.Config{Dir: t.TempDir(), Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := st.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	p := newMapPersister()
	m := NewManager(Config{Persister: p, Store: st, Clock: clk, Settings: func(string) Settings { return testSettings() }})
	fetch := func(group string) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		mid := "m"
		req.GroupID, req.MemberID = &group, &mid
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = tp.ID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := m.ShareFetch(context.Background(), req)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch for %q: %+v", group, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, g := range []string{"never-a-group-1", "never-a-group-2"} {
		got := fetch(g)
		if got.ErrorCode != kerr.UnknownServerError.Code || got.ErrorMessage == nil || *got.ErrorMessage != UninitializedMessage {
			t.Fatalf("fetch for %q: code %d message %v", g, got.ErrorCode, got.ErrorMessage)
		}
		if _, found, _ := p.Read(sharestate.Key{GroupID: g, TopicID: tp.ID}, 0); found {
			t.Fatalf("share state created for %q", g)
		}
	}
	m.mu.Lock()
	n := len(m.parts)
	m.mu.Unlock()
	if n != 0 || p.writes != 0 {
		t.Fatalf("after fetches for groups with no state: %d share-partitions in memory, %d writes", n, p.writes)
	}
	if err := p.Initialize(sharestate.Key{GroupID: "sg", TopicID: tp.ID}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := fetch("sg"); got.ErrorCode != 0 {
		t.Fatalf("fetch with state: code %d", got.ErrorCode)
	}
}
