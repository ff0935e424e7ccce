package coordinator

// The task assignor of streams groups: sticky and balanced, in the spirit
// of Kafka 4.3's StickyTaskAssignor. Active tasks stay with the member
// that had them as long as that keeps the members within one task of each
// other; the rest go to the least loaded member. Standby replicas
// (num.standby.replicas) go to members of other processes than the one
// running the task, the previous holder first, then the least loaded. A
// standby that no other process can take is not assigned, as in Kafka.
// Warm-up tasks are not built (no task lag is tracked).

import (
	"cmp"
	"slices"
	"strings"
)

// taskID is one task: a subtopology and a partition of its inputs.
type taskID struct {
	sub       string
	partition int32
}

func compareTask(a, b taskID) int {
	if c := strings.Compare(a.sub, b.sub); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

// taskSet is a set of tasks.
type taskSet map[taskID]struct{}

func (s taskSet) sorted() []taskID {
	out := make([]taskID, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	slices.SortFunc(out, compareTask)
	return out
}

func (s taskSet) clone() taskSet {
	out := make(taskSet, len(s))
	for t := range s {
		out[t] = struct{}{}
	}
	return out
}

func (s taskSet) equal(o taskSet) bool {
	if len(s) != len(o) {
		return false
	}
	for t := range s {
		if _, ok := o[t]; !ok {
			return false
		}
	}
	return true
}

// minus is s without o.
func (s taskSet) minus(o taskSet) taskSet {
	out := taskSet{}
	for t := range s {
		if _, ok := o[t]; !ok {
			out[t] = struct{}{}
		}
	}
	return out
}

// tasksTuple is Kafka's TasksTuple: active, standby and warm-up tasks.
type tasksTuple struct {
	active, standby, warmup taskSet
}

func emptyTuple() tasksTuple { return tasksTuple{taskSet{}, taskSet{}, taskSet{}} }

func (t tasksTuple) clone() tasksTuple {
	return tasksTuple{t.active.clone(), t.standby.clone(), t.warmup.clone()}
}

func (t tasksTuple) equal(o tasksTuple) bool {
	return t.active.equal(o.active) && t.standby.equal(o.standby) && t.warmup.equal(o.warmup)
}

func (t tasksTuple) empty() bool {
	return len(t.active) == 0 && len(t.standby) == 0 && len(t.warmup) == 0
}

func (t tasksTuple) minus(o tasksTuple) tasksTuple {
	return tasksTuple{t.active.minus(o.active), t.standby.minus(o.standby), t.warmup.minus(o.warmup)}
}

// assignMember is what the assignor knows of a member.
type assignMember struct {
	id, processID string
	prev          tasksTuple // its current target (or assignment)
}

// assignTasks computes the target assignment of members (sorted by id)
// for tasks (subtopology -> task count) with standbys standby replicas.
func assignTasks(members []assignMember, tasks map[string]int32, standbys int) map[string]tasksTuple {
	out := make(map[string]tasksTuple, len(members))
	for _, m := range members {
		out[m.id] = emptyTuple()
	}
	if len(members) == 0 {
		return out
	}
	var all []taskID
	for sub, n := range tasks {
		for p := range n {
			all = append(all, taskID{sub, p})
		}
	}
	slices.SortFunc(all, compareTask)
	byID := map[string]int{}
	for i, m := range members {
		byID[m.id] = i
	}
	prevActive := map[taskID]string{}
	prevStandby := map[taskID][]string{}
	for _, m := range members {
		for t := range m.prev.active {
			prevActive[t] = m.id
		}
		for t := range m.prev.standby {
			prevStandby[t] = append(prevStandby[t], m.id)
		}
	}
	base, extra := len(all)/len(members), len(all)%len(members)
	load := make([]int, len(members))
	atExtra := 0
	unassigned := []taskID{}
	// Sticky: keep a previous owner up to base tasks, then up to base+1
	// while fewer than extra members are there.
	for pass := 0; pass < 2; pass++ {
		var rest []taskID
		src := all
		if pass == 1 {
			src = unassigned
		}
		for _, t := range src {
			id, ok := prevActive[t]
			i, member := byID[id]
			if !ok || !member {
				rest = append(rest, t)
				continue
			}
			switch {
			case load[i] < base:
			case pass == 1 && load[i] == base && atExtra < extra:
				atExtra++
			default:
				rest = append(rest, t)
				continue
			}
			load[i]++
			out[id].active[t] = struct{}{}
		}
		unassigned = rest
	}
	for _, t := range unassigned {
		i := leastLoaded(load, func(int) bool { return true })
		load[i]++
		out[members[i].id].active[t] = struct{}{}
	}
	if standbys <= 0 {
		return out
	}
	activeProcess := map[taskID]string{}
	for _, m := range members {
		for t := range out[m.id].active {
			activeProcess[t] = m.processID
		}
	}
	for _, t := range all {
		used := map[string]bool{activeProcess[t]: true}
		for range standbys {
			eligible := func(i int) bool { return !used[members[i].processID] }
			pick := -1
			for _, id := range prevStandby[t] {
				if i, ok := byID[id]; ok && eligible(i) {
					pick = i
					break
				}
			}
			if pick < 0 {
				pick = leastLoaded(load, eligible)
			}
			if pick < 0 {
				break
			}
			load[pick]++
			used[members[pick].processID] = true
			out[members[pick].id].standby[t] = struct{}{}
		}
	}
	return out
}

// leastLoaded is the eligible index with the smallest load (the first
// on ties), -1 if none is eligible.
func leastLoaded(load []int, eligible func(int) bool) int {
	best := -1
	for i, l := range load {
		if eligible(i) && (best < 0 || l < load[best]) {
			best = i
		}
	}
	return best
}
