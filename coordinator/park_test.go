package coordinator

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// runningGroups counts the groups whose goroutine runs.
func (c *Coordinator) runningGroups() int {
	n := 0
	for _, g := range c.allGroups() {
		g.runMu.Lock()
		if g.running {
			n++
		}
		g.runMu.Unlock()
	}
	return n
}

// settledGoroutines waits (bounded) for goroutines that are ending to end
// and returns how many are left.
func settledGoroutines(limit int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 500 && n > limit; i++ {
		time.Sleep(2 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// TestIdleGroupsPark: 10,000 group ids, each used for a commit and a
// fetch and a classic member's join, sync and leave, leave O(1)
// goroutines: idle groups park, and the next request to one starts it
// again with its state intact.
func TestIdleGroupsPark(t *testing.T) {
	e := newEnv(t, nil)
	base := runtime.NumGoroutine()
	const groups = 10000
	for i := range groups {
		id := fmt.Sprintf("g-%d", i)
		expectCode(t, "commit", commit(e, id, -1, "", map[string]int64{"t": int64(i)}), nil)
		if i%100 == 0 { // a whole classic membership on some of them
			m, _ := e.stableGroup(id, 1)
			code, _ := e.c.LeaveGroup(context.Background(), id, []kmsg.LeaveGroupRequestMember{{MemberID: m[0]}})
			expectCode(t, "leave", code, nil)
		}
	}
	if n := e.c.runningGroups(); n > 0 {
		// a group may still be between its last request and parking
		if n = settledRunning(e.c); n > 0 {
			t.Fatalf("%d of %d idle groups still have a goroutine", n, groups)
		}
	}
	if n := settledGoroutines(base + 10); n > base+10 {
		t.Fatalf("%d goroutines after cycling %d groups, %d before", n, groups, base)
	}
	// A parked group wakes with its offsets and takes members again.
	if got := fetch(e, "g-4242")["t"]; got != 4242 {
		t.Fatalf("parked group's offset %d, want 4242", got)
	}
	e.stableGroup("g-4242", 2)
	if s := e.state("g-4242"); s != "Stable" {
		t.Fatalf("woken group %s, want Stable", s)
	}
	if n := settledRunning(e.c); n != 1 {
		t.Fatalf("%d groups running, want the one Stable group", n)
	}
	// Close with parked groups does not hang, and a parked group after
	// Close answers as gone.
	e.close()
}

// settledRunning waits (bounded) for groups that are about to park.
func settledRunning(c *Coordinator) int {
	n := c.runningGroups()
	for i := 0; i < 500 && n > 1; i++ {
		time.Sleep(2 * time.Millisecond)
		n = c.runningGroups()
	}
	return n
}
