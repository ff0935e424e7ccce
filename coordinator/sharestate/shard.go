package sharestate

import (
	"math"
	"slices"
	"sync"
)

// shard is the state of the share-partitions kept in one partition of
// __share_group_state (Kafka's ShareCoordinatorShard, with its
// ShareCoordinatorOffsetsManager).
type shard struct {
	partition int32

	mu     sync.Mutex // guards everything below; held across a write's append
	states map[Key]*entry
	// snapshotAt is, per share-partition, the offset of its last
	// ShareSnapshot (or tombstone): records below the smallest are
	// redundant and may be pruned.
	snapshotAt    map[Key]int64
	lastRedundant int64 // math.MaxInt64: none yet
	lastPruned    int64 // -1: never pruned
}

// entry is one share-partition's state: the merged snapshot and Kafka's
// side maps (leaderEpochMap and stateEpochMap hold the highest epoch any
// record carried; updates is snapshotUpdateCount).
type entry struct {
	state       snapshotValue
	leaderEpoch int32
	stateEpoch  int32
	updates     int
}

func newShard(p int32) *shard {
	return &shard{partition: p, states: map[Key]*entry{}, snapshotAt: map[Key]int64{}, lastRedundant: math.MaxInt64, lastPruned: -1}
}

func (e *entry) publicState() State {
	return State{
		StateEpoch:            e.state.StateEpoch,
		LeaderEpoch:           e.state.LeaderEpoch,
		StartOffset:           e.state.StartOffset,
		DeliveryCompleteCount: e.state.DeliveryCompleteCount,
		Batches:               slices.Clone(e.state.Batches),
	}
}

// replay applies one record read at offset (or just written there), as
// Kafka's ShareCoordinatorShard.replay: a snapshot replaces the state, an
// update merges into it, a snapshot tombstone deletes it. limit is
// share.coordinator.snapshot.update.records.per.snapshot. REQUIRES: s.mu
// held.
func (s *shard) replay(key, value []byte, offset int64, limit int) error {
	typ, k, err := parseKey(key)
	if err != nil {
		return err
	}
	switch typ {
	case recShareSnapshot:
		if value == nil {
			delete(s.states, k)
			s.noteSnapshot(k, offset, true)
			return nil
		}
		v, err := parseSnapshotValue(value)
		if err != nil {
			return err
		}
		e := s.states[k]
		if e == nil {
			e = &entry{leaderEpoch: v.LeaderEpoch, stateEpoch: v.StateEpoch}
			s.states[k] = e
		}
		e.leaderEpoch = max(e.leaderEpoch, v.LeaderEpoch)
		e.stateEpoch = max(e.stateEpoch, v.StateEpoch)
		e.state = v
		if e.updates >= limit {
			e.updates = 0
		}
		s.noteSnapshot(k, offset, false)
	case recShareUpdate:
		if value == nil {
			return nil // Kafka never writes one
		}
		v, err := parseUpdateValue(value)
		if err != nil {
			return err
		}
		e := s.states[k]
		if e == nil {
			// An update with no snapshot before it (its snapshot pruned
			// away): Kafka takes the update as the state.
			s.states[k] = &entry{
				state: snapshotValue{
					SnapshotEpoch: v.SnapshotEpoch, LeaderEpoch: v.LeaderEpoch, StartOffset: v.StartOffset,
					DeliveryCompleteCount: v.DeliveryCompleteCount, Batches: v.Batches,
				},
				leaderEpoch: v.LeaderEpoch,
				updates:     1,
			}
			return nil
		}
		e.leaderEpoch = max(e.leaderEpoch, v.LeaderEpoch)
		e.state = mergeUpdate(e.state, v)
		e.updates++
	}
	return nil
}

// mergeUpdate is Kafka's ShareCoordinatorShard.merge: the update's start
// offset and leader epoch when set (not -1), its delivery-complete count,
// and the batches combined; epochs of the snapshot and its timestamps
// stay.
func mergeUpdate(so snapshotValue, u updateValue) snapshotValue {
	if u.StartOffset != -1 {
		so.StartOffset = u.StartOffset
	}
	if u.LeaderEpoch != -1 {
		so.LeaderEpoch = u.LeaderEpoch
	}
	so.DeliveryCompleteCount = u.DeliveryCompleteCount
	so.Batches = combineStateBatches(so.Batches, u.Batches, so.StartOffset)
	return so
}

// noteSnapshot is Kafka's ShareCoordinatorOffsetsManager.updateState: the
// last redundant offset is the smallest offset of any share-partition's
// latest snapshot (a deleted one counts once, with its tombstone).
func (s *shard) noteSnapshot(k Key, offset int64, deleted bool) {
	s.snapshotAt[k] = offset
	low := int64(math.MaxInt64)
	for _, o := range s.snapshotAt {
		low = min(low, o)
	}
	s.lastRedundant = low
	if deleted {
		delete(s.snapshotAt, k)
	}
}

// redundantOffset is the offset records may be pruned below; false if
// none (Kafka's lastRedundantOffset: nothing at or below 0).
func (s *shard) redundantOffset() (int64, bool) {
	if s.lastRedundant <= 0 || s.lastRedundant == math.MaxInt64 {
		return 0, false
	}
	return s.lastRedundant, true
}
