// Package clock is the injected time source. Production code takes a Clock
// and never calls time.Now or time.NewTimer directly, so tests can drive
// timeouts, segment.ms, retention and compaction lag without sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer we use.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

var _ Clock = Real{}

func (Real) Now() time.Time { return time.Now() }

func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Manual is a clock that moves only when Advance is called.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
	// armed is closed and replaced whenever a timer is added, so tests
	// can wait for the code under test to arm its timer before they
	// Advance (see WaitForTimers).
	armed chan struct{}
}

var _ Clock = (*Manual)(nil)

// NewManual returns a manual clock set to start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start, armed: make(chan struct{})}
}

// WaitForTimers blocks until at least n timers are pending, so that a test
// advances the clock only after the code under test is waiting on it.
func (m *Manual) WaitForTimers(n int) {
	for {
		m.mu.Lock()
		pending, armed := len(m.timers), m.armed
		m.mu.Unlock()
		if pending >= n {
			return
		}
		<-armed
	}
}

func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *Manual) NewTimer(d time.Duration) Timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{m: m, at: m.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.fired = true
		t.c <- m.now
		return t
	}
	m.timers = append(m.timers, t)
	close(m.armed)
	m.armed = make(chan struct{})
	return t
}

// Advance moves the clock forward by d and fires every timer that is due.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	kept := m.timers[:0]
	for _, t := range m.timers {
		if !t.at.After(m.now) {
			t.fired = true
			t.c <- m.now
			continue
		}
		kept = append(kept, t)
	}
	m.timers = kept
}

type manualTimer struct {
	m     *Manual
	at    time.Time
	c     chan time.Time
	fired bool // guarded by m.mu
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.fired {
		return false
	}
	for i, o := range t.m.timers {
		if o == t {
			t.m.timers = append(t.m.timers[:i], t.m.timers[i+1:]...)
			break
		}
	}
	t.fired = true
	return true
}
