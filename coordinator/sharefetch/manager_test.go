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
	"github.com/kcompatd/kcompatd/recordbatch"
)

// A ShareFetch for a partition whose share state was never initialized
// (any group id, no member of a group assigned it) creates nothing, in the
// persister or in memory: the partition is answered UNKNOWN_SERVER_ERROR
// with the message Kafka's share coordinator gives, and each fetch of
// another group id leaves no share-partition behind. A partition with
// state is fetched from.
func TestShareFetchCreatesNoState(t *testing.T) {
	clk, st, tp := storeWithTopic(t)
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
		resp := m.ShareFetch(context.Background(), req, nil)
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
		if _, found, err := p.Read(sharestate.Key{GroupID: g, TopicID: tp.ID}, 0); err != nil || found {
			t.Fatalf("share state for %q: found %v, %v; want not found", g, found, err)
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

// ShareFetch and ShareAcknowledge refuse a member id Kafka's
// isMemberIdValid refuses (empty, or over 36 UTF-16 code units) with
// INVALID_REQUEST "Invalid member id in the request.", before anything
// else, and open no share session for it.
func TestShareMemberIDValidated(t *testing.T) {
	m := NewManager(Config{Persister: newMapPersister(), Settings: func(string) Settings { return testSettings() }})
	long := "0123456789012345678901234567890123456" // 37
	for _, tc := range []struct {
		member string
		ok     bool
	}{
		{"", false},
		{long, false},
		{long[:36], true},
		{"ééééééééééééééééééééééééééééééééééé€", true}, // 36 code units, more bytes
		{"😀" + long[:35], false}, // a surrogate pair counts two
	} {
		if got := ValidMemberID(tc.member); got != tc.ok {
			t.Errorf("ValidMemberID(%q) = %v", tc.member, got)
		}
		if tc.ok {
			continue
		}
		group, member := "g", tc.member
		f := kmsg.NewPtrShareFetchRequest()
		f.SetVersion(1)
		f.GroupID, f.MemberID = &group, &member
		fr := m.ShareFetch(context.Background(), f, nil)
		a := kmsg.NewPtrShareAcknowledgeRequest()
		a.SetVersion(1)
		a.GroupID, a.MemberID, a.ShareSessionEpoch = &group, &member, 1
		ar := m.ShareAcknowledge(a, nil)
		for _, r := range []struct {
			code int16
			msg  *string
		}{{fr.ErrorCode, fr.ErrorMessage}, {ar.ErrorCode, ar.ErrorMessage}} {
			if r.code != kerr.InvalidRequest.Code || r.msg == nil || *r.msg != InvalidMemberIDMessage {
				t.Errorf("member %q: code %d message %v", tc.member, r.code, r.msg)
			}
		}
	}
	if len(m.sessions) != 0 {
		t.Fatalf("sessions opened: %d", len(m.sessions))
	}
}

// storeWithTopic is a store on a manual clock holding topic "t" of one
// partition.
func storeWithTopic(t *testing.T) (*clock.Manual, *partition.Store, *partition.Topic) {
	t.Helper()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	st, err := partition.Open(partition.Config{Dir: t.TempDir(), Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := st.CreateTopic("t", 1, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return clk, st, tp
}

// TestTopicsDeletedDropsSharePartitions: after a topic is deleted,
// TopicsDeleted leaves no share-partition of it in memory; the session's
// next fetch answers it UNKNOWN_TOPIC_ID (Kafka's answer for a session
// partition whose topic is gone) without making one again, and the
// member's leave writes nothing for it.
func TestTopicsDeletedDropsSharePartitions(t *testing.T) {
	clk, st, tp := storeWithTopic(t)
	recs := []recordbatch.Record{{Value: []byte("a")}, {OffsetDelta: 1, Value: []byte("b")}}
	b, err := recordbatch.Build(recordbatch.BatchSpec{ProducerID: recordbatch.NoProducerID, ProducerEpoch: recordbatch.NoProducerEpoch, BaseSequence: recordbatch.NoSequence}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.Partitions[0].Append(b); err != nil {
		t.Fatal(err)
	}
	p := newMapPersister()
	if err := p.Initialize(sharestate.Key{GroupID: "sg", TopicID: tp.ID}, 0, 0); err != nil {
		t.Fatal(err)
	}
	m := NewManager(Config{Persister: p, Store: st, Clock: clk, MaxSessions: 10, Settings: func(string) Settings { return testSettings() }})
	group, member := "sg", "m1"
	fetch := func(epoch int32) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.SetVersion(1)
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
		req.MaxRecords, req.MaxBytes = 10, 1<<20
		if epoch == 0 {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = tp.ID
			rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
		}
		resp := m.ShareFetch(context.Background(), req, nil)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch at epoch %d: %+v", epoch, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	if got := fetch(0); got.ErrorCode != 0 || len(got.AcquiredRecords) != 1 {
		t.Fatalf("first fetch: code %d acquired %v", got.ErrorCode, got.AcquiredRecords)
	}
	if err := st.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	m.TopicsDeleted([][16]byte{tp.ID})
	parts := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.parts)
	}
	if n := parts(); n != 0 {
		t.Fatalf("%d share-partitions in memory after the topic's deletion", n)
	}
	if got := fetch(1); got.ErrorCode != kerr.UnknownTopicID.Code || len(got.AcquiredRecords) != 0 {
		t.Fatalf("fetch after deletion: code %d acquired %v", got.ErrorCode, got.AcquiredRecords)
	}
	writes := p.writes
	m.ReleaseMember(group, member)
	if n := parts(); n != 0 || p.writes != writes {
		t.Fatalf("after the member's leave: %d share-partitions, %d writes", n, p.writes-writes)
	}
}
