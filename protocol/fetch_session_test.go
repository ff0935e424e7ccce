package protocol

import (
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func nameKey(topic string, p int32) sessionKey { return sessionKey{topic: topic, partition: p} }

func reqAt(k sessionKey, offset int64) fetchPartitionReq {
	return fetchPartitionReq{key: k, fetchOffset: offset, maxBytes: 1 << 20, currentLeaderEpoch: -1, lastFetchedEpoch: -1, fetcherLogStartOffset: -1}
}

// state is what the fake "log" answers for a partition in these tests.
type partState struct {
	hw, logStart int64
	records      int // record bytes returned
	errCode      int16
}

// answer builds results for the partitions a context asks for, from state.
func answer(fc *fetchContext, state map[sessionKey]partState) []fetchResult {
	var out []fetchResult
	for _, pr := range fc.parts {
		st := state[pr.key]
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = pr.key.partition
		rp.HighWatermark = st.hw
		rp.LogStartOffset = st.logStart
		rp.ErrorCode = st.errCode
		rp.RecordBatches = make([]byte, st.records)
		out = append(out, fetchResult{req: pr, topic: pr.key.topic, resp: rp})
	}
	return out
}

func keysOf(rs []fetchResult) []sessionKey {
	var ks []sessionKey
	for _, r := range rs {
		ks = append(ks, r.req.key)
	}
	return ks
}

func partKeys(ps []fetchPartitionReq) []sessionKey {
	var ks []sessionKey
	for _, p := range ps {
		ks = append(ks, p.key)
	}
	return ks
}

// seqIDs makes session ids 1, 2, 3, ... so tests can name them.
func seqIDs(c *fetchSessions) {
	next := int32(0)
	c.newID = func() int32 { next++; return next }
}

func TestNextSessionEpoch(t *testing.T) {
	for _, tc := range []struct{ in, want int32 }{
		{-1, -1}, {-5, -1}, {0, 1}, {1, 2}, {math.MaxInt32 - 1, math.MaxInt32}, {math.MaxInt32, 1},
	} {
		if got := nextSessionEpoch(tc.in); got != tc.want {
			t.Errorf("nextSessionEpoch(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestFetchSessionLifecycle walks one consumer's session through the steps
// KIP-227 defines; each step is a request and what the broker must answer.
func TestFetchSessionLifecycle(t *testing.T) {
	a0, a1, b0 := nameKey("a", 0), nameKey("a", 1), nameKey("b", 0)
	state := map[sessionKey]partState{
		a0: {hw: 10, logStart: 0},
		a1: {hw: 5, logStart: 0},
		b0: {hw: 7, logStart: 0},
	}
	type step struct {
		name       string
		id, epoch  int32
		parts      []fetchPartitionReq
		forgotten  []sessionKey
		change     map[sessionKey]partState // applied to state before answering
		wantKind   fetchContextKind
		wantRead   []sessionKey // partitions read, in order
		wantCode   int16
		wantID     int32
		wantReturn []sessionKey // partitions in the response
		wantOffset map[sessionKey]int64
	}
	steps := []step{
		{
			name: "full fetch creates session 1", id: 0, epoch: 0,
			parts:    []fetchPartitionReq{reqAt(a0, 0), reqAt(a1, 0)},
			wantKind: fullFetch, wantRead: []sessionKey{a0, a1},
			wantID: 1, wantReturn: []sessionKey{a0, a1},
		},
		{
			name: "incremental, nothing changed: empty response", id: 1, epoch: 1,
			wantKind: incrementalFetch, wantRead: []sessionKey{a0, a1},
			wantID: 1, wantReturn: nil,
		},
		{
			name: "records on a0: only a0, and a0 moves to the back", id: 1, epoch: 2,
			change:   map[sessionKey]partState{a0: {hw: 12, records: 100}},
			wantKind: incrementalFetch, wantRead: []sessionKey{a0, a1},
			wantID: 1, wantReturn: []sessionKey{a0},
		},
		{
			name: "a0 updated offset keeps its place; new b0 added at the back", id: 1, epoch: 3,
			parts:    []fetchPartitionReq{reqAt(a0, 12), reqAt(b0, 3)},
			change:   map[sessionKey]partState{a0: {hw: 12}},
			wantKind: incrementalFetch, wantRead: []sessionKey{a1, a0, b0},
			wantID: 1, wantReturn: []sessionKey{b0},
			wantOffset: map[sessionKey]int64{a0: 12, b0: 3, a1: 0},
		},
		{
			name: "log start offset change is sent", id: 1, epoch: 4,
			change:   map[sessionKey]partState{a1: {hw: 5, logStart: 2}},
			wantKind: incrementalFetch, wantRead: []sessionKey{a1, a0, b0},
			wantID: 1, wantReturn: []sessionKey{a1},
		},
		{
			name: "error is always sent, and the partition again after", id: 1, epoch: 5,
			change:   map[sessionKey]partState{b0: {hw: -1, logStart: -1, errCode: kerr.OffsetOutOfRange.Code}},
			wantKind: incrementalFetch, wantRead: []sessionKey{a1, a0, b0},
			wantID: 1, wantReturn: []sessionKey{b0},
		},
		{
			name: "recovered partition is sent once more", id: 1, epoch: 6,
			parts:    []fetchPartitionReq{reqAt(b0, 0)},
			change:   map[sessionKey]partState{b0: {hw: 7, logStart: 0}},
			wantKind: incrementalFetch, wantRead: []sessionKey{a1, a0, b0},
			wantID: 1, wantReturn: []sessionKey{b0},
		},
		{
			name: "forget a1", id: 1, epoch: 7,
			forgotten: []sessionKey{a1, nameKey("nope", 9)},
			wantKind:  incrementalFetch, wantRead: []sessionKey{a0, b0},
			wantID: 1, wantReturn: nil,
		},
		{
			name: "stale epoch", id: 1, epoch: 7,
			wantKind: sessionError, wantCode: kerr.InvalidFetchSessionEpoch.Code,
		},
		{
			name: "future epoch", id: 1, epoch: 99,
			wantKind: sessionError, wantCode: kerr.InvalidFetchSessionEpoch.Code,
		},
		{
			name: "unknown id", id: 77, epoch: 1,
			wantKind: sessionError, wantCode: kerr.FetchSessionIDNotFound.Code,
		},
		{
			name: "incremental with id 0 is unknown", id: 0, epoch: 3,
			wantKind: sessionError, wantCode: kerr.FetchSessionIDNotFound.Code,
		},
		{
			name: "forgetting everything closes the session", id: 1, epoch: 8,
			forgotten: []sessionKey{a0, b0},
			wantKind:  sessionless, wantRead: nil,
			wantID: 0, wantReturn: nil,
		},
		{
			name: "session 1 is gone", id: 1, epoch: 9,
			wantKind: sessionError, wantCode: kerr.FetchSessionIDNotFound.Code,
		},
		{
			name: "full fetch creates session 2", id: 0, epoch: 0,
			parts:    []fetchPartitionReq{reqAt(b0, 0)},
			wantKind: fullFetch, wantRead: []sessionKey{b0},
			wantID: 2, wantReturn: []sessionKey{b0},
		},
		{
			name: "full fetch naming session 2 replaces it with 3", id: 2, epoch: 0,
			parts:    []fetchPartitionReq{reqAt(a0, 0)},
			wantKind: fullFetch, wantRead: []sessionKey{a0},
			wantID: 3, wantReturn: []sessionKey{a0},
		},
		{
			name: "session 2 is gone", id: 2, epoch: 1,
			wantKind: sessionError, wantCode: kerr.FetchSessionIDNotFound.Code,
		},
		{
			name: "epoch -1 closes session 3 and is sessionless", id: 3, epoch: -1,
			parts:    []fetchPartitionReq{reqAt(a0, 0)},
			wantKind: sessionless, wantRead: []sessionKey{a0},
			wantID: 0, wantReturn: []sessionKey{a0},
		},
		{
			name: "session 3 is gone", id: 3, epoch: 1,
			wantKind: sessionError, wantCode: kerr.FetchSessionIDNotFound.Code,
		},
		{
			name: "sessionless fetch", id: 0, epoch: -1,
			parts:    []fetchPartitionReq{reqAt(a1, 0)},
			wantKind: sessionless, wantRead: []sessionKey{a1},
			wantID: 0, wantReturn: []sessionKey{a1},
		},
	}

	c := newFetchSessionCache(10, fetchSessionEvictionMs)
	seqIDs(c)
	for i, st := range steps {
		for k, v := range st.change {
			state[k] = v
		}
		fc := c.newContext(false, false, st.id, st.epoch, st.parts, st.forgotten, int64(i))
		if fc.kind != st.wantKind {
			t.Fatalf("%s: kind %d, want %d", st.name, fc.kind, st.wantKind)
		}
		if got := partKeys(fc.parts); !slices.Equal(got, st.wantRead) {
			t.Fatalf("%s: reads %v, want %v", st.name, got, st.wantRead)
		}
		for _, p := range fc.parts {
			if want, ok := st.wantOffset[p.key]; ok && p.fetchOffset != want {
				t.Fatalf("%s: %v fetch offset %d, want %d", st.name, p.key, p.fetchOffset, want)
			}
		}
		code, id, out := c.finish(&fc, answer(&fc, state), int64(i))
		if code != st.wantCode || id != st.wantID {
			t.Fatalf("%s: code %d id %d, want code %d id %d", st.name, code, id, st.wantCode, st.wantID)
		}
		if got := keysOf(out); !slices.Equal(got, st.wantReturn) {
			t.Fatalf("%s: returned %v, want %v", st.name, got, st.wantReturn)
		}
	}
}

func TestFetchSessionTopicIDUsage(t *testing.T) {
	id := [16]byte{1}
	byID := sessionKey{topicID: id, partition: 0}
	for _, tc := range []struct {
		name             string
		createIDs, useID bool
		wantKind         fetchContextKind
		wantCode         int16
	}{
		{"ids then ids", true, true, incrementalFetch, 0},
		{"ids then names", true, false, sessionError, kerr.FetchSessionTopicIDError.Code},
		{"names then ids", false, true, sessionError, kerr.FetchSessionTopicIDError.Code},
		{"names then names", false, false, incrementalFetch, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFetchSessionCache(10, fetchSessionEvictionMs)
			k := nameKey("a", 0)
			if tc.createIDs {
				k = byID
			}
			fc := c.newContext(tc.createIDs, false, 0, 0, []fetchPartitionReq{reqAt(k, 0)}, nil, 0)
			_, sid, _ := c.finish(&fc, answer(&fc, nil), 0)
			if sid == 0 {
				t.Fatal("no session created")
			}
			fc = c.newContext(tc.useID, false, sid, 1, nil, nil, 1)
			if fc.kind != tc.wantKind || fc.errCode != tc.wantCode {
				t.Fatalf("kind %d code %d, want %d %d", fc.kind, fc.errCode, tc.wantKind, tc.wantCode)
			}
		})
	}
}

// TestFetchSessionRace: two requests with the same epoch (a retried
// request racing the original): the second is refused when it arrives, and
// the first, finishing after the epoch moved on, answers
// INVALID_FETCH_SESSION_EPOCH as Kafka's updateAndGenerateResponseData does.
func TestFetchSessionRace(t *testing.T) {
	c := newFetchSessionCache(10, fetchSessionEvictionMs)
	k := nameKey("a", 0)
	fc := c.newContext(false, false, 0, 0, []fetchPartitionReq{reqAt(k, 0)}, nil, 0)
	_, sid, _ := c.finish(&fc, answer(&fc, nil), 0)

	first := c.newContext(false, false, sid, 1, nil, nil, 1)
	dup := c.newContext(false, false, sid, 1, nil, nil, 1)
	if dup.kind != sessionError || dup.errCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("duplicate: kind %d code %d", dup.kind, dup.errCode)
	}
	next := c.newContext(false, false, sid, 2, nil, nil, 2)
	if next.kind != incrementalFetch {
		t.Fatalf("next: kind %d", next.kind)
	}
	code, id, out := c.finish(&first, answer(&first, nil), 3)
	if code != kerr.InvalidFetchSessionEpoch.Code || id != sid || len(out) != 0 {
		t.Fatalf("late first: code %d id %d out %d", code, id, len(out))
	}
}

// TestFetchSessionEviction follows FetchSessionCacheShard.tryEvict: a stale
// session goes first; otherwise a session older than the eviction time may
// be evicted by a larger new one; a privileged (follower) session may evict
// any consumer session.
func TestFetchSessionEviction(t *testing.T) {
	const ev = 1000 // eviction ms
	type create struct {
		atMs       int64
		size       int
		privileged bool
		wantID     int32 // 0: not cached
	}
	type touch struct {
		id   int32
		atMs int64
	}
	for _, tc := range []struct {
		name     string
		slots    int
		creates  []create
		touches  []touch // applied after the first len(creates)-1 creates
		last     create
		wantLive []int32
	}{
		{
			name:    "room left",
			slots:   2,
			creates: []create{{0, 1, false, 1}},
			last:    create{1, 1, false, 2}, wantLive: []int32{1, 2},
		},
		{
			name:    "full, nothing stale or old: not cached",
			slots:   2,
			creates: []create{{0, 1, false, 1}, {0, 1, false, 2}},
			last:    create{10, 5, false, 0}, wantLive: []int32{1, 2},
		},
		{
			name:    "stale session evicted first (least recently used)",
			slots:   2,
			creates: []create{{0, 5, false, 1}, {0, 5, false, 2}},
			touches: []touch{{1, 500}},
			last:    create{ev + 1, 1, false, 3}, wantLive: []int32{1, 3},
		},
		{
			name:    "old session evicted by a larger one",
			slots:   2,
			creates: []create{{0, 3, false, 1}, {0, 2, false, 2}},
			touches: []touch{{1, ev + 1}, {2, ev + 1}},
			last:    create{ev + 2, 3, false, 3}, wantLive: []int32{1, 3},
		},
		{
			name:    "old session not evicted by one of equal size",
			slots:   2,
			creates: []create{{0, 3, false, 1}, {0, 2, false, 2}},
			touches: []touch{{1, ev + 1}, {2, ev + 1}},
			last:    create{ev + 2, 2, false, 0}, wantLive: []int32{1, 2},
		},
		{
			name:    "young sessions are not evictable by size",
			slots:   2,
			creates: []create{{0, 1, false, 1}, {0, 1, false, 2}},
			touches: []touch{{1, 10}, {2, 10}},
			last:    create{20, 100, false, 0}, wantLive: []int32{1, 2},
		},
		{
			name:    "privileged evicts a young consumer session",
			slots:   2,
			creates: []create{{0, 4, false, 1}, {0, 2, false, 2}},
			last:    create{10, 1, true, 3}, wantLive: []int32{1, 3},
		},
		{
			name:    "privileged does not evict a young privileged session",
			slots:   1,
			creates: []create{{0, 1, true, 1}},
			last:    create{10, 5, true, 0}, wantLive: []int32{1},
		},
		{
			name:    "consumer never evicts a young privileged session",
			slots:   1,
			creates: []create{{0, 1, true, 1}},
			touches: []touch{{1, 10}},
			last:    create{20, 50, false, 0}, wantLive: []int32{1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFetchSessionCache(tc.slots, ev)
			seqIDs(c)
			mk := func(cr create) int32 {
				var parts []fetchPartitionReq
				for i := range cr.size {
					parts = append(parts, reqAt(nameKey("t", int32(i)), 0))
				}
				fc := c.newContext(false, cr.privileged, 0, 0, parts, nil, cr.atMs)
				_, id, _ := c.finish(&fc, answer(&fc, nil), cr.atMs)
				return id
			}
			for _, cr := range tc.creates {
				if id := mk(cr); id != cr.wantID {
					t.Fatalf("create %+v: id %d", cr, id)
				}
			}
			for _, to := range tc.touches {
				c.mu.Lock()
				s := c.sessions[to.id]
				c.mu.Unlock()
				fc := c.newContext(false, s.privileged, to.id, s.epoch, nil, nil, to.atMs)
				if fc.kind != incrementalFetch {
					t.Fatalf("touch %d: kind %d code %d", to.id, fc.kind, fc.errCode)
				}
				c.finish(&fc, answer(&fc, nil), to.atMs)
			}
			if id := mk(tc.last); id != tc.last.wantID {
				t.Fatalf("last create: id %d, want %d", id, tc.last.wantID)
			}
			var live []int32
			c.mu.Lock()
			for id := range c.sessions {
				live = append(live, id)
			}
			c.mu.Unlock()
			slices.Sort(live)
			if !slices.Equal(live, tc.wantLive) {
				t.Fatalf("live sessions %v, want %v", live, tc.wantLive)
			}
		})
	}
}

// TestFetchSessionCacheBounded: the cache never holds more than its slots.
func TestFetchSessionCacheBounded(t *testing.T) {
	c := newFetchSessionCache(defaultFetchSessionCacheSlots, fetchSessionEvictionMs)
	for i := range 3 * defaultFetchSessionCacheSlots {
		now := int64(i) * 100 // later ones find stale sessions
		fc := c.newContext(false, false, 0, 0, []fetchPartitionReq{reqAt(nameKey("t", 0), 0)}, nil, now)
		c.finish(&fc, answer(&fc, nil), now)
		if n := c.len(); n > defaultFetchSessionCacheSlots {
			t.Fatalf("cache holds %d sessions", n)
		}
	}
}
