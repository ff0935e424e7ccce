package coordinator

import (
	"encoding/json"
	"testing"
)

// TestConsumerGroupStaticReplacementSurvivesRestart: a static member that
// takes over its instance with a new member id has its target assignment
// written under the new id, so a restart right after the replacement
// loads the same group.
func TestConsumerGroupStaticReplacementSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	inst := "instance-1"
	a, b, kept := staticAndDynamic(e, &inst)
	a.leave(-2)
	a2 := e.newClient("g", "a2", "t")
	a2.instance = &inst
	a2.ok()
	if !a2.owned.equal(kept) {
		t.Fatalf("rejoined static member got %v, want %v", a2.owned.sorted(), kept.sorted())
	}
	before, _ := json.Marshal(e.describeCG("g"))
	e.restart()
	if after, _ := json.Marshal(e.describeCG("g")); string(after) != string(before) {
		t.Fatalf("describe changed across restart:\n%s\n%s", before, after)
	}
	epoch := a2.epoch
	a2.ok()
	b.ok()
	if !a2.owned.equal(kept) || a2.epoch != epoch || len(b.owned) != 2 {
		t.Fatalf("after restart a2 owns %v at %d (want %v at %d), b %d", a2.owned.sorted(), a2.epoch, kept.sorted(), epoch, len(b.owned))
	}
	// A new member: the assignor starts from a2's target, which it must
	// have; nobody owns a partition twice.
	c := e.newClient("g", "c", "t")
	for i := 0; i < 4; i++ {
		c.ok()
		a2.ok()
		b.ok()
		disjoint(t, a2, b, c)
	}
	if n := len(a2.owned) + len(b.owned) + len(c.owned); n != 4 {
		t.Fatalf("%d partitions owned", n)
	}
}
