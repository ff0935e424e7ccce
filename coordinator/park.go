package coordinator

import "time"

// Parking: a group with nothing to wait for (no members, nothing due)
// gives up its goroutine, so a client cycling group ids, or the offsets
// of long-gone consumers kept for offsets.retention.minutes, cost memory
// but no goroutine. Live groups keep the single-owner model: one
// goroutine owns the group's fields while it runs; a parked group's
// fields are owned by nobody until do starts the goroutine again (the
// goroutine start and runMu order the hand-over).

// idle reports whether the group may park: no members of any protocol
// (classic, consumer, share, streams), none pending, and no deadline to
// wait for. A member is checked for itself, not only through its session
// deadline, so one whose deadline is not set (being fenced again later,
// say) keeps its group running. What a parked group holds (offsets, a
// share group's initialized partitions and epochs, a streams group's
// topology and target) stays in the group; the next request finds it.
// Owner only.
func (g *group) idle() bool {
	return g.state == stateEmpty &&
		len(g.members) == 0 && len(g.pending) == 0 && len(g.pendingSync) == 0 &&
		(g.cg == nil || len(g.cg.members) == 0) &&
		(g.sg == nil || len(g.sg.members) == 0) &&
		(g.stg == nil || len(g.stg.members) == 0) &&
		g.nextDeadline().IsZero()
}

// park ends the goroutine unless a do is about to hand it work; true if
// it parked. Owner only.
func (g *group) park() bool {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	if g.senders > 0 {
		return false
	}
	g.running = false
	return true
}

// wake makes sure a goroutine runs the group for the caller's hand-off
// (counted until the goroutine takes it or the group ends: handedOff); false if the coordinator is closed and the
// group is parked, so nothing will ever take it.
func (g *group) wake() bool {
	g.runMu.Lock()
	defer g.runMu.Unlock()
	if !g.running {
		c := g.c
		c.mu.Lock()
		closed := c.closed
		if !closed {
			c.startGroup(g)
		}
		c.mu.Unlock()
		if closed {
			return false
		}
	}
	g.senders++
	return true
}

// handedOff uncounts a hand-off wake counted.
func (g *group) handedOff() {
	g.runMu.Lock()
	g.senders--
	g.runMu.Unlock()
}

// stopTimer stops the group's timer, if any. Owner only.
func (g *group) stopTimer() {
	if g.timer != nil {
		g.timer.Stop()
		g.timer, g.timerAt = nil, time.Time{}
	}
}
