package sharefetch

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// fakeLog is a log of whole batches in memory.
type fakeLog struct {
	batches [][]byte
	hw, lso int64
	aborted []partition.AbortedTxn
}

func (l *fakeLog) add(t *testing.T, spec recordbatch.BatchSpec, n int) {
	t.Helper()
	spec.BaseOffset = l.hw
	if spec.ProducerID == 0 {
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = recordbatch.NoProducerID, recordbatch.NoProducerEpoch, recordbatch.NoSequence
	}
	var recs []recordbatch.Record
	for i := 0; i < n; i++ {
		recs = append(recs, recordbatch.Record{OffsetDelta: int32(i), Value: []byte("v")})
	}
	b, err := recordbatch.Build(spec, recs)
	if err != nil {
		t.Fatal(err)
	}
	l.batches = append(l.batches, b)
	l.hw += int64(n)
	l.lso = l.hw
}

func (l *fakeLog) ReadWith(offset int64, maxBytes int32, minOne bool, iso partition.Isolation, _ func(int) []byte) (partition.ReadResult, error) {
	res := partition.ReadResult{Offsets: l.Offsets()}
	bound := l.hw
	if iso == partition.ReadCommitted {
		bound = l.lso
	}
	for _, b := range l.batches {
		h, _ := recordbatch.ParseHeader(b)
		if h.LastOffset() < offset || h.BaseOffset() >= bound {
			continue
		}
		if len(res.Records)+len(b) > int(maxBytes) && !(minOne && len(res.Records) == 0) {
			break
		}
		res.Records = append(res.Records, b...)
	}
	if iso == partition.ReadCommitted {
		res.AbortedTransactions = l.aborted
	}
	return res, nil
}

func (l *fakeLog) Offsets() partition.Offsets {
	return partition.Offsets{HighWatermark: l.hw, LastStableOffset: l.lso, LogEndOffset: l.hw}
}

func (l *fakeLog) OffsetForTimestamp(int64) (int64, int64, bool, error) { return 0, 0, false, nil }

// mapPersister is a Persister in memory that keeps each write.
type mapPersister struct {
	mu     sync.Mutex
	states map[sharestate.Key]sharestate.State
	writes int
	fail   error
}

func newMapPersister() *mapPersister {
	return &mapPersister{states: map[sharestate.Key]sharestate.State{}}
}

func (p *mapPersister) Initialize(k sharestate.Key, e int32, start int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.states[k] = sharestate.State{StateEpoch: e, StartOffset: start}
	return nil
}
func (p *mapPersister) Read(k sharestate.Key, _ int32) (sharestate.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.states[k]
	return st, ok, nil
}
func (p *mapPersister) Write(k sharestate.Key, e, _ int32, start int64, complete int32, batches []sharestate.StateBatch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.writes++
	st := p.states[k]
	st.StateEpoch = e
	if start >= 0 {
		st.StartOffset = start
	}
	st.DeliveryCompleteCount = complete
	// Per offset: later batches override.
	m := map[int64]sharestate.StateBatch{}
	for _, list := range [][]sharestate.StateBatch{st.Batches, batches} {
		for _, b := range list {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				if o >= st.StartOffset {
					m[o] = sharestate.StateBatch{FirstOffset: o, LastOffset: o, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount}
				}
			}
		}
	}
	st.Batches = st.Batches[:0]
	for _, b := range m {
		st.Batches = append(st.Batches, b)
	}
	p.states[k] = st
	return nil
}
func (p *mapPersister) ReadSummary(k sharestate.Key) (sharestate.Summary, bool, error) {
	st, ok, err := p.Read(k, 0)
	return sharestate.Summary{StateEpoch: st.StateEpoch, StartOffset: st.StartOffset, DeliveryCompleteCount: st.DeliveryCompleteCount}, ok, err
}
func (p *mapPersister) Delete(k sharestate.Key) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.states, k)
	return nil
}

var testKey = sharestate.Key{GroupID: "g", Partition: 0}

func testSettings() Settings {
	return Settings{LockDuration: 30 * time.Second, DeliveryLimit: 5, MaxRecordLocks: 2000, AutoOffsetReset: "earliest", RenewEnabled: true}
}

// step is one operation on a share-partition and what it must give.
type step struct {
	member  string
	acquire int // > 0: acquire up to this many
	acks    []AckBatch
	advance time.Duration
	release bool // ReleaseMember
	want    []AcquiredRange
	code    int16
	spso    *int64 // nil: not checked
}

func at(n int64) *int64 { return &n }

func ack(first, last int64, t int8) AckBatch {
	return AckBatch{FirstOffset: first, LastOffset: last, Types: []int8{t}}
}

func TestSharePartitionStateMachine(t *testing.T) {
	plain := func(n int) func(*testing.T) *fakeLog {
		return func(t *testing.T) *fakeLog {
			l := &fakeLog{}
			l.add(t, recordbatch.BatchSpec{}, n)
			return l
		}
	}
	for _, tc := range []struct {
		name     string
		log      func(*testing.T) *fakeLog
		settings func(*Settings)
		steps    []step
	}{
		{"acquire in order, up to max records", plain(5), nil, []step{
			{member: "a", acquire: 3, want: []AcquiredRange{{0, 2, 1}}, spso: at(0)},
			{member: "b", acquire: 10, want: []AcquiredRange{{3, 4, 1}}, spso: at(0)},
			{member: "b", acquire: 10, want: nil, spso: at(0)},
		}},
		{"accept advances the SPSO", plain(5), nil, []step{
			{member: "a", acquire: 5, want: []AcquiredRange{{0, 4, 1}}},
			{member: "a", acks: []AckBatch{ack(0, 2, AckAccept)}, spso: at(3)},
			{member: "a", acks: []AckBatch{ack(4, 4, AckAccept)}, spso: at(3)},
			{member: "a", acks: []AckBatch{ack(3, 3, AckAccept)}, spso: at(5)},
		}},
		{"release redelivers with a higher count", plain(3), nil, []step{
			{member: "a", acquire: 3, want: []AcquiredRange{{0, 2, 1}}},
			{member: "a", acks: []AckBatch{ack(1, 2, AckRelease)}, spso: at(0)},
			{member: "b", acquire: 3, want: []AcquiredRange{{1, 2, 2}}},
		}},
		{"reject archives", plain(3), nil, []step{
			{member: "a", acquire: 3, want: []AcquiredRange{{0, 2, 1}}},
			{member: "a", acks: []AckBatch{ack(0, 0, AckReject), ack(1, 2, AckGap)}, spso: at(3)},
			{member: "a", acquire: 3, want: nil, spso: at(3)},
		}},
		{"one type per offset", plain(3), nil, []step{
			{member: "a", acquire: 3, want: []AcquiredRange{{0, 2, 1}}},
			{member: "a", acks: []AckBatch{{FirstOffset: 0, LastOffset: 2, Types: []int8{AckAccept, AckRelease, AckAccept}}}, spso: at(1)},
			{member: "a", acquire: 3, want: []AcquiredRange{{1, 1, 2}}},
		}},
		{"only the holder acknowledges", plain(2), nil, []step{
			{member: "a", acquire: 2, want: []AcquiredRange{{0, 1, 1}}},
			{member: "b", acks: []AckBatch{ack(0, 0, AckAccept)}, code: kerr.InvalidRecordState.Code, spso: at(0)},
			{member: "a", acks: []AckBatch{ack(0, 5, AckAccept)}, code: kerr.InvalidRecordState.Code, spso: at(0)},
			{member: "a", acks: []AckBatch{{FirstOffset: 0, LastOffset: 1, Types: []int8{1, 1, 1}}}, code: kerr.InvalidRequest.Code},
			{member: "a", acks: []AckBatch{ack(0, 0, 9)}, code: kerr.InvalidRequest.Code},
			{member: "a", acks: []AckBatch{ack(0, 1, AckAccept)}, spso: at(2)},
			{member: "a", acks: []AckBatch{ack(0, 1, AckAccept)}, code: kerr.InvalidRecordState.Code, spso: at(2)},
		}},
		{"lock timeout makes records available again", plain(2), nil, []step{
			{member: "a", acquire: 2, want: []AcquiredRange{{0, 1, 1}}},
			{advance: 29 * time.Second},
			{member: "b", acquire: 2, want: nil},
			{advance: time.Second},
			{member: "a", acks: []AckBatch{ack(0, 0, AckAccept)}, code: kerr.InvalidRecordState.Code},
			{member: "b", acquire: 2, want: []AcquiredRange{{0, 1, 2}}},
		}},
		{"renew extends the lock", plain(1), nil, []step{
			{member: "a", acquire: 1, want: []AcquiredRange{{0, 0, 1}}},
			{advance: 20 * time.Second},
			{member: "a", acks: []AckBatch{ack(0, 0, AckRenew)}},
			{advance: 20 * time.Second},
			{member: "b", acquire: 1, want: nil},
			{member: "a", acks: []AckBatch{ack(0, 0, AckAccept)}, spso: at(1)},
		}},
		{"delivery count limit archives a poison record", plain(1), func(s *Settings) { s.DeliveryLimit = 2 }, []step{
			{member: "a", acquire: 1, want: []AcquiredRange{{0, 0, 1}}},
			{member: "a", acks: []AckBatch{ack(0, 0, AckRelease)}, spso: at(0)},
			{member: "a", acquire: 1, want: []AcquiredRange{{0, 0, 2}}},
			{advance: 31 * time.Second}, // the second delivery times out: archived
			{member: "a", acquire: 1, want: nil, spso: at(1)},
		}},
		{"a closed session releases the member's records", plain(3), nil, []step{
			{member: "a", acquire: 2, want: []AcquiredRange{{0, 1, 1}}},
			{member: "b", acquire: 1, want: []AcquiredRange{{2, 2, 1}}},
			{member: "a", release: true},
			{member: "c", acquire: 3, want: []AcquiredRange{{0, 1, 2}}},
		}},
		{"max record locks bounds what is in flight", plain(150), func(s *Settings) { s.MaxRecordLocks = 100 }, []step{
			{member: "a", acquire: 500, want: []AcquiredRange{{0, 99, 1}}},
			{member: "b", acquire: 500, want: nil},
			{member: "a", acks: []AckBatch{ack(0, 9, AckAccept)}, spso: at(10)},
			{member: "b", acquire: 500, want: []AcquiredRange{{100, 109, 1}}},
		}},
		{"renew is refused when disabled", plain(1), func(s *Settings) { s.RenewEnabled = false }, []step{
			{member: "a", acquire: 1, want: []AcquiredRange{{0, 0, 1}}},
			{member: "a", acks: []AckBatch{ack(0, 0, AckRenew)}, code: kerr.InvalidRequest.Code},
		}},
		{"read_committed skips aborted transactions and markers", func(t *testing.T) *fakeLog {
			l := &fakeLog{}
			l.add(t, recordbatch.BatchSpec{}, 2)                                                  // 0-1
			l.add(t, recordbatch.BatchSpec{Transactional: true, ProducerID: 7}, 2)                // 2-3 aborted
			l.add(t, recordbatch.BatchSpec{Transactional: true, Control: true, ProducerID: 7}, 1) // 4 abort marker
			l.add(t, recordbatch.BatchSpec{Transactional: true, ProducerID: 7}, 1)                // 5 committed
			l.add(t, recordbatch.BatchSpec{Transactional: true, Control: true, ProducerID: 7}, 1) // 6 commit marker
			l.add(t, recordbatch.BatchSpec{}, 1)                                                  // 7
			l.aborted = []partition.AbortedTxn{{ProducerID: 7, FirstOffset: 2}}
			return l
		}, func(s *Settings) { s.Isolation = partition.ReadCommitted }, []step{
			{member: "a", acquire: 10, want: []AcquiredRange{{0, 1, 1}, {5, 5, 1}, {7, 7, 1}}},
			{member: "a", acks: []AckBatch{ack(0, 1, AckAccept), ack(5, 5, AckAccept), ack(7, 7, AckAccept)}, spso: at(8)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := tc.log(t)
			p := newMapPersister()
			clk := clock.NewManual(time.Unix(1_700_000_000, 0))
			s := testSettings()
			if tc.settings != nil {
				tc.settings(&s)
			}
			// As the group coordinator does when it assigns the
			// partition; -1: share.auto.offset.reset decides at load.
			if err := p.Initialize(testKey, 0, -1); err != nil {
				t.Fatal(err)
			}
			sp := newSharePartition(testKey, log, p, nil)
			for i, st := range tc.steps {
				switch {
				case st.advance > 0:
					clk.Advance(st.advance)
					continue
				case st.release:
					sp.ReleaseMember(st.member, s, clk.Now())
				case st.acquire > 0:
					f := sp.Acquire(st.member, st.acquire, 1<<20, s, clk.Now())
					if f.Code != st.code {
						t.Fatalf("step %d: code %d, want %d", i, f.Code, st.code)
					}
					if !equalRanges(f.Acquired, st.want) {
						t.Fatalf("step %d: acquired %v, want %v", i, f.Acquired, st.want)
					}
					if len(f.Acquired) > 0 && len(f.Records) == 0 {
						t.Fatalf("step %d: acquired without records", i)
					}
				default:
					if code := sp.Acknowledge(st.member, st.acks, s.RenewEnabled, s, clk.Now()); code != st.code {
						t.Fatalf("step %d: ack code %d, want %d", i, code, st.code)
					}
				}
				if st.spso != nil {
					if got := sp.StartOffset(); got != *st.spso {
						t.Fatalf("step %d: SPSO %d, want %d", i, got, *st.spso)
					}
				}
			}
		})
	}
}

func equalRanges(a, b []AcquiredRange) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSharePartitionStateSurvivesReload: what was acknowledged stays
// acknowledged and what was in flight is delivered again (with its count)
// by a share-partition reading the persisted state afresh; a failed write
// changes nothing and is reported.
func TestSharePartitionStateSurvivesReload(t *testing.T) {
	log := &fakeLog{}
	log.add(t, recordbatch.BatchSpec{}, 6)
	p := newMapPersister()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	s := testSettings()
	if err := p.Initialize(testKey, 0, -1); err != nil {
		t.Fatal(err)
	}
	sp := newSharePartition(testKey, log, p, nil)
	sp.Acquire("a", 6, 1<<20, s, clk.Now())
	if c := sp.Acknowledge("a", []AckBatch{ack(0, 1, AckAccept), ack(3, 3, AckAccept), ack(4, 4, AckRelease)}, false, s, clk.Now()); c != 0 {
		t.Fatal(c)
	}
	p.fail = kerr.FencedStateEpoch
	if c := sp.Acknowledge("a", []AckBatch{ack(2, 2, AckAccept)}, false, s, clk.Now()); c != kerr.FencedStateEpoch.Code {
		t.Fatalf("failed write: %d", c)
	}
	p.fail = nil
	if got := sp.Snapshot(); got.StartOffset != 2 || got.States[0] != Acquired {
		t.Fatalf("after failed write: %+v", got)
	}
	// A broker restart: a new share-partition over the same state.
	sp2 := newSharePartition(testKey, log, p, nil)
	f := sp2.Acquire("b", 10, 1<<20, s, clk.Now())
	// Offset 2 was in flight when the last write covered it: its delivery
	// counts (Kafka counts a delivery a crash interrupted too).
	want := []AcquiredRange{{2, 2, 2}, {4, 4, 2}, {5, 5, 1}}
	if !equalRanges(f.Acquired, want) || sp2.StartOffset() != 2 {
		t.Fatalf("after reload: %v (SPSO %d), want %v", f.Acquired, sp2.StartOffset(), want)
	}
}

func TestParseISODuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"PT1H", time.Hour, true},
		{"P1D", 24 * time.Hour, true},
		{"P1DT2H3M4.5S", 24*time.Hour + 2*time.Hour + 3*time.Minute + 4500*time.Millisecond, true},
		{"pt10m", 10 * time.Minute, true},
		{"P", 0, false},
		{"PT", 0, false},
		{"-PT1H", 0, false},
		{"PT1D", 0, false},
		{"P1H", 0, false},
		{"1H", 0, false},
	} {
		got, ok := ParseISODuration(tc.in)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%q: %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// A share-partition with no state (the group coordinator never assigned
// it) is not initialized by a fetch: Kafka's share coordinator refuses the
// read, answered UNKNOWN_SERVER_ERROR, and nothing is written.
func TestSharePartitionWithoutStateIsNotInitialized(t *testing.T) {
	log := &fakeLog{}
	log.add(t, recordbatch.BatchSpec{}, 3)
	p := newMapPersister()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	s := testSettings()
	sp := newSharePartition(testKey, log, p, nil)
	f := sp.Acquire("a", 10, 1<<20, s, clk.Now())
	if f.Code != kerr.UnknownServerError.Code || f.Message != UninitializedMessage || len(f.Acquired) != 0 {
		t.Fatalf("acquire: %+v", f)
	}
	if c := sp.Acknowledge("a", []AckBatch{ack(0, 0, AckAccept)}, false, s, clk.Now()); c != kerr.UnknownServerError.Code {
		t.Fatalf("acknowledge: %d", c)
	}
	sp.ReleaseMember("a", s, clk.Now())
	if _, found, err := p.Read(testKey, 0); err != nil || found || p.writes != 0 || sp.Loaded() {
		t.Fatalf("state created: found=%v err=%v writes=%d loaded=%v", found, err, p.writes, sp.Loaded())
	}
}
