package coordinator

import (
	"fmt"
	"testing"

	"github.com/kcompatd/kcompatd/partition"
)

var (
	topicA = partition.TopicID{1}
	topicB = partition.TopicID{2}
)

func tps(id partition.TopicID, ps ...int32) partSet {
	s := partSet{}
	for _, p := range ps {
		s[topicIDPartition{id, p}] = struct{}{}
	}
	return s
}

func union(sets ...partSet) partSet {
	out := partSet{}
	for _, s := range sets {
		for tp := range s {
			out[tp] = struct{}{}
		}
	}
	return out
}

// checkAssignment checks that every partition of a subscribed topic is
// assigned exactly once, to a member subscribed to its topic.
func checkAssignment(t *testing.T, in assignmentInput, out map[string]partSet) {
	t.Helper()
	owner := map[topicIDPartition]string{}
	for id, s := range out {
		for tp := range s {
			if o, dup := owner[tp]; dup {
				t.Fatalf("partition %v to %s and %s", tp, o, id)
			}
			if !subscribes(in.members[id], tp.id) {
				t.Fatalf("partition %v to %s, which does not subscribe", tp, id)
			}
			owner[tp] = id
		}
	}
	for topic, n := range in.topics {
		subscribed := false
		for _, m := range in.members {
			subscribed = subscribed || subscribes(m, topic)
		}
		for p := int32(0); p < n && subscribed; p++ {
			if _, ok := owner[topicIDPartition{topic, p}]; !ok {
				t.Fatalf("partition %d of %v unassigned", p, topic)
			}
		}
	}
}

func TestAssignors(t *testing.T) {
	both := []partition.TopicID{topicA, topicB}
	onlyA := []partition.TopicID{topicA}
	cases := []struct {
		name     string
		assignor assignor
		members  map[string]assignmentMember
		topics   map[partition.TopicID]int32
		want     map[string]partSet // nil: only the general checks
		maxSkew  int                // largest allowed difference in counts; -1: unchecked
	}{
		{
			name: "uniform: one member takes all", assignor: uniformAssignor{},
			members: map[string]assignmentMember{"a": {topics: both}},
			topics:  map[partition.TopicID]int32{topicA: 3, topicB: 2},
			want:    map[string]partSet{"a": union(tps(topicA, 0, 1, 2), tps(topicB, 0, 1))},
		},
		{
			name: "uniform: balanced over three", assignor: uniformAssignor{},
			members: map[string]assignmentMember{"a": {topics: both}, "b": {topics: both}, "c": {topics: both}},
			topics:  map[partition.TopicID]int32{topicA: 4, topicB: 3},
			maxSkew: 1,
		},
		{
			name: "uniform: sticky, a newcomer takes only the surplus", assignor: uniformAssignor{},
			members: map[string]assignmentMember{
				"a": {topics: onlyA, current: tps(topicA, 0, 1, 2)},
				"b": {topics: onlyA, current: tps(topicA, 3, 4, 5)},
				"c": {topics: onlyA},
			},
			topics:  map[partition.TopicID]int32{topicA: 6},
			maxSkew: 0,
		},
		{
			name: "uniform: a stable assignment does not move", assignor: uniformAssignor{},
			members: map[string]assignmentMember{
				"a": {topics: onlyA, current: tps(topicA, 1, 3)},
				"b": {topics: onlyA, current: tps(topicA, 0, 2)},
			},
			topics: map[partition.TopicID]int32{topicA: 4},
			want:   map[string]partSet{"a": tps(topicA, 1, 3), "b": tps(topicA, 0, 2)},
		},
		{
			name: "uniform: heterogeneous subscriptions", assignor: uniformAssignor{},
			members: map[string]assignmentMember{"a": {topics: onlyA}, "b": {topics: both}},
			topics:  map[partition.TopicID]int32{topicA: 2, topicB: 2},
			want:    map[string]partSet{"a": tps(topicA, 0, 1), "b": tps(topicB, 0, 1)},
		},
		{
			name: "range: contiguous ranges, extras first", assignor: rangeAssignor{},
			members: map[string]assignmentMember{"a": {topics: both}, "b": {topics: both}},
			topics:  map[partition.TopicID]int32{topicA: 3, topicB: 2},
			want:    map[string]partSet{"a": union(tps(topicA, 0, 1), tps(topicB, 0)), "b": union(tps(topicA, 2), tps(topicB, 1))},
		},
		{
			name: "range: sticky within quota", assignor: rangeAssignor{},
			members: map[string]assignmentMember{
				"a": {topics: onlyA, current: tps(topicA, 2, 3)},
				"b": {topics: onlyA, current: tps(topicA, 0, 1)},
			},
			topics: map[partition.TopicID]int32{topicA: 4},
			want:   map[string]partSet{"a": tps(topicA, 2, 3), "b": tps(topicA, 0, 1)},
		},
		{
			name: "range: only subscribers get a topic", assignor: rangeAssignor{},
			members: map[string]assignmentMember{"a": {topics: onlyA}, "b": {topics: both}},
			topics:  map[partition.TopicID]int32{topicA: 2, topicB: 2},
			want:    map[string]partSet{"a": tps(topicA, 0), "b": union(tps(topicA, 1), tps(topicB, 0, 1))},
		},
		{
			name: "range: a partition gone from the topic is dropped", assignor: rangeAssignor{},
			members: map[string]assignmentMember{"a": {topics: onlyA, current: tps(topicA, 0, 5)}},
			topics:  map[partition.TopicID]int32{topicA: 2},
			want:    map[string]partSet{"a": tps(topicA, 0, 1)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := assignmentInput{members: tc.members, topics: tc.topics}
			out := tc.assignor.assign(in)
			checkAssignment(t, in, out)
			for id, want := range tc.want {
				if !out[id].equal(want) {
					t.Fatalf("%s got %v, want %v", id, out[id].sorted(), want.sorted())
				}
			}
			if tc.want == nil && tc.maxSkew >= 0 {
				lo, hi := 1<<30, 0
				for _, s := range out {
					lo, hi = min(lo, len(s)), max(hi, len(s))
				}
				if hi-lo > tc.maxSkew {
					t.Fatalf("counts %d..%d", lo, hi)
				}
			}
			for id, m := range tc.members {
				moved := 0
				for tp := range m.current {
					if _, ok := out[id][tp]; !ok {
						moved++
					}
				}
				if tc.name == "uniform: sticky, a newcomer takes only the surplus" && len(m.current) > 0 && moved != 1 {
					t.Fatalf("%s lost %d partitions, want 1", id, moved)
				}
			}
		})
	}
}

// TestUniformAssignorBalanceSweep: every member count and partition count
// up to 9 gives floor/ceil shares with identical subscriptions.
func TestUniformAssignorBalanceSweep(t *testing.T) {
	for members := 1; members <= 9; members++ {
		for parts := int32(0); parts <= 9; parts++ {
			in := assignmentInput{members: map[string]assignmentMember{}, topics: map[partition.TopicID]int32{topicA: parts}}
			for i := 0; i < members; i++ {
				in.members[fmt.Sprint("m", i)] = assignmentMember{topics: []partition.TopicID{topicA}}
			}
			out := uniformAssignor{}.assign(in)
			checkAssignment(t, in, out)
			for id, s := range out {
				if n := len(s); n < int(parts)/members || n > (int(parts)+members-1)/members {
					t.Fatalf("%d members, %d partitions: %s has %d", members, parts, id, n)
				}
			}
		}
	}
}

// TestAssignorsIgnoreRacks: as Kafka 4.3's UniformAssignor and
// RangeAssignor, member racks do not change the assignment (a single
// broker has one rack, so every partition's replicas are in it anyway).
func TestAssignorsIgnoreRacks(t *testing.T) {
	r1, r2 := "rack-1", "rack-2"
	for _, a := range []assignor{uniformAssignor{}, rangeAssignor{}} {
		mk := func(racks bool) assignmentInput {
			in := assignmentInput{members: map[string]assignmentMember{}, topics: map[partition.TopicID]int32{topicA: 7, topicB: 3}}
			for i, rack := range []*string{&r1, &r2, &r1} {
				m := assignmentMember{topics: []partition.TopicID{topicA, topicB}, current: partSet{}}
				if racks {
					m.rack = rack
				}
				in.members[fmt.Sprintf("m%d", i)] = m
			}
			return in
		}
		with, without := a.assign(mk(true)), a.assign(mk(false))
		checkAssignment(t, mk(true), with)
		for id := range without {
			if !with[id].equal(without[id]) {
				t.Fatalf("%T: member %s got %v with racks, %v without", a, id, with[id].sorted(), without[id].sorted())
			}
		}
	}
}
