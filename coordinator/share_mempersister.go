package coordinator

import (
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
)

// memPersister is a sharestate.Persister in memory: what the coordinator
// uses when Config.SharePersister is nil (share state is then lost on a
// restart), and the tests' persister.
type memPersister struct {
	mu     sync.Mutex // guards states; a leaf
	states map[sharestate.Key]*sharestate.State
	writes int // Write calls, for tests
}

func newMemPersister() *memPersister {
	return &memPersister{states: map[sharestate.Key]*sharestate.State{}}
}

func (p *memPersister) Initialize(k sharestate.Key, stateEpoch int32, startOffset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.states[k] = &sharestate.State{StateEpoch: stateEpoch, StartOffset: startOffset, DeliveryCompleteCount: 0}
	return nil
}

func (p *memPersister) Read(k sharestate.Key, leaderEpoch int32) (sharestate.State, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.states[k]
	if st == nil {
		return sharestate.State{}, false, nil
	}
	if leaderEpoch < st.LeaderEpoch {
		return sharestate.State{}, false, kerr.FencedLeaderEpoch
	}
	out := *st
	out.Batches = append([]sharestate.StateBatch(nil), st.Batches...)
	return out, true, nil
}

func (p *memPersister) Write(k sharestate.Key, stateEpoch, leaderEpoch int32, startOffset int64, complete int32, batches []sharestate.StateBatch) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes++
	st := p.states[k]
	if st == nil {
		st = &sharestate.State{StateEpoch: stateEpoch, StartOffset: -1}
		p.states[k] = st
	}
	if stateEpoch < st.StateEpoch {
		return kerr.FencedStateEpoch
	}
	if leaderEpoch < st.LeaderEpoch {
		return kerr.FencedLeaderEpoch
	}
	st.LeaderEpoch = leaderEpoch
	if startOffset >= 0 {
		st.StartOffset = startOffset
	}
	st.DeliveryCompleteCount = complete
	st.Batches = mergeStateBatches(st.Batches, batches, st.StartOffset)
	return nil
}

func (p *memPersister) ReadSummary(k sharestate.Key) (sharestate.Summary, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.states[k]
	if st == nil {
		return sharestate.Summary{}, false, nil
	}
	return sharestate.Summary{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: st.StartOffset, DeliveryCompleteCount: st.DeliveryCompleteCount}, true, nil
}

func (p *memPersister) Delete(k sharestate.Key) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.states, k)
	return nil
}

// mergeStateBatches lays upd over cur (upd wins where they overlap) and
// drops what is below start: per offset, which is fine for the in-flight
// windows of a share-partition (bounded by its record locks).
func mergeStateBatches(cur, upd []sharestate.StateBatch, start int64) []sharestate.StateBatch {
	byOff := map[int64]sharestate.StateBatch{}
	for _, list := range [][]sharestate.StateBatch{cur, upd} {
		for _, b := range list {
			for o := max(b.FirstOffset, start); o <= b.LastOffset; o++ {
				byOff[o] = sharestate.StateBatch{FirstOffset: o, LastOffset: o, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount}
			}
		}
	}
	offs := make([]int64, 0, len(byOff))
	for o := range byOff {
		offs = append(offs, o)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	var out []sharestate.StateBatch
	for _, o := range offs {
		b := byOff[o]
		if n := len(out); n > 0 && out[n-1].LastOffset == o-1 && out[n-1].DeliveryState == b.DeliveryState && out[n-1].DeliveryCount == b.DeliveryCount {
			out[n-1].LastOffset = o
			continue
		}
		out = append(out, b)
	}
	return out
}
