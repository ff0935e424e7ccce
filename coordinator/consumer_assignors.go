package coordinator

// The server-side assignors of KIP-848 consumer groups
// (group.consumer.assignors): "uniform" (Kafka's UniformAssignor, the
// default) and "range" (Kafka's server-side RangeAssignor). Both are
// sticky: they start from the current target assignment.

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/kcompatd/kcompatd/partition"
)

// Assignor names, as Kafka's UniformAssignor.NAME and RangeAssignor.NAME.
const (
	UniformAssignor = "uniform"
	RangeAssignor   = "range"
)

// assignmentMember is one member as an assignor sees it.
type assignmentMember struct {
	topics  []partition.TopicID // subscribed topics that exist, sorted
	current partSet             // its current target assignment
	rack    *string
}

// assignmentInput is what an assignor gets: the members and the partition
// count of every subscribed topic.
type assignmentInput struct {
	members map[string]assignmentMember
	topics  map[partition.TopicID]int32
}

type assignor interface {
	assign(in assignmentInput) map[string]partSet
}

// assignorByName returns the named assignor; names were checked against
// group.consumer.assignors when the request came in.
func assignorByName(name string) assignor {
	if name == RangeAssignor {
		return rangeAssignor{}
	}
	return uniformAssignor{}
}

// KnownAssignor reports whether kcompatd has an assignor of that name.
func KnownAssignor(name string) bool { return name == UniformAssignor || name == RangeAssignor }

func sortedMemberIDs(in assignmentInput) []string {
	ids := make([]string, 0, len(in.members))
	for id := range in.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func sortedTopicIDs(in assignmentInput) []partition.TopicID {
	ids := make([]partition.TopicID, 0, len(in.topics))
	for id := range in.topics {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b partition.TopicID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

func subscribes(m assignmentMember, t partition.TopicID) bool {
	_, ok := slices.BinarySearchFunc(m.topics, t, func(a, b partition.TopicID) int { return bytes.Compare(a[:], b[:]) })
	return ok
}

// uniformAssignor spreads every subscribed partition over the members
// subscribed to its topic so that their partition counts differ by at
// most one where subscriptions allow it, moving as few partitions as it
// can: a member keeps what it has unless it holds more than its share.
// With identical subscriptions this is Kafka's optimized uniform builder
// (each member ends with floor or ceil of partitions/members); with
// differing ones, a greedy balance over the eligible members.
type uniformAssignor struct{}

func (uniformAssignor) assign(in assignmentInput) map[string]partSet {
	ids := sortedMemberIDs(in)
	out := make(map[string]partSet, len(ids))
	for _, id := range ids {
		out[id] = partSet{}
	}
	if len(ids) == 0 {
		return out
	}
	total := 0
	for _, n := range in.topics {
		total += int(n)
	}
	// Each member keeps its current partitions that are still valid, up
	// to ceil(total/members) (the largest share any member can have).
	quota := (total + len(ids) - 1) / len(ids)
	taken := map[topicIDPartition]bool{}
	for _, id := range ids {
		m := in.members[id]
		for _, tp := range m.current.sorted() {
			n, ok := in.topics[tp.id]
			if !ok || tp.partition >= n || !subscribes(m, tp.id) || taken[tp] || len(out[id]) >= quota {
				continue
			}
			out[id][tp] = struct{}{}
			taken[tp] = true
		}
	}
	// Every other partition goes to the eligible member with the fewest.
	for _, t := range sortedTopicIDs(in) {
		for p := int32(0); p < in.topics[t]; p++ {
			tp := topicIDPartition{t, p}
			if taken[tp] {
				continue
			}
			if best := fewest(ids, out, in, t, ""); best != "" {
				out[best][tp] = struct{}{}
				taken[tp] = true
			}
		}
	}
	// Then move partitions from the fullest members to eligible members
	// with at least two fewer, until none can move (bounded: each move
	// lowers the sum of squared counts).
	for moves := 0; moves <= total; moves++ {
		moved := false
		from := slices.Clone(ids)
		slices.SortStableFunc(from, func(a, b string) int { return cmp.Compare(len(out[b]), len(out[a])) })
		for _, src := range from {
			for _, tp := range out[src].sorted() {
				dst := fewest(ids, out, in, tp.id, src)
				if dst != "" && len(out[dst])+1 < len(out[src]) {
					delete(out[src], tp)
					out[dst][tp] = struct{}{}
					moved = true
					break
				}
			}
			if moved {
				break
			}
		}
		if !moved {
			break
		}
	}
	return out
}

// fewest is the member subscribed to topic t with the fewest partitions
// (ties to the smallest id), other than except; "" if none.
func fewest(ids []string, out map[string]partSet, in assignmentInput, t partition.TopicID, except string) string {
	best := ""
	for _, id := range ids {
		if id == except || !subscribes(in.members[id], t) {
			continue
		}
		if best == "" || len(out[id]) < len(out[best]) {
			best = id
		}
	}
	return best
}

// rangeAssignor gives each member, per topic, a contiguous range of that
// topic's partitions, as the classic range assignor does: members
// subscribed to the topic in member id order, the first
// partitions%members of them one more. It is sticky as Kafka's
// server-side RangeAssignor: a member keeps the partitions it has up to
// its quota, and only the rest is handed out in order.
type rangeAssignor struct{}

func (rangeAssignor) assign(in assignmentInput) map[string]partSet {
	ids := sortedMemberIDs(in)
	out := make(map[string]partSet, len(ids))
	for _, id := range ids {
		out[id] = partSet{}
	}
	for _, t := range sortedTopicIDs(in) {
		var subs []string
		for _, id := range ids {
			if subscribes(in.members[id], t) {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(in.topics[t])
		base, extra := n/len(subs), n%len(subs)
		quota := make(map[string]int, len(subs))
		for i, id := range subs {
			quota[id] = base
			if i < extra {
				quota[id]++
			}
		}
		taken := make([]bool, n)
		// Sticky pass: current partitions up to the quota.
		for _, id := range subs {
			for _, tp := range in.members[id].current.sorted() {
				if tp.id != t || int(tp.partition) >= n || taken[tp.partition] || len(partsOf(out[id], t)) >= quota[id] {
					continue
				}
				out[id][tp] = struct{}{}
				taken[tp.partition] = true
			}
		}
		// Fill pass: the free partitions in order.
		p := 0
		for _, id := range subs {
			for len(partsOf(out[id], t)) < quota[id] {
				for p < n && taken[p] {
					p++
				}
				if p >= n {
					break
				}
				out[id][topicIDPartition{t, int32(p)}] = struct{}{}
				taken[p] = true
			}
		}
	}
	return out
}

// partsOf counts a set's partitions of topic t.
func partsOf(s partSet, t partition.TopicID) []int32 {
	var ps []int32
	for tp := range s {
		if tp.id == t {
			ps = append(ps, tp.partition)
		}
	}
	return ps
}
