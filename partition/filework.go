package partition

import (
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/panics"
)

// DefaultFileWorkers is Config.FileWorkers' default.
const DefaultFileWorkers = 4

// fileWork runs the store's background file work (the flush after a
// segment roll, the removal of retired segments after
// file.delete.delay.ms, of a deleted topic's directory) on at most max
// goroutines, started as work arrives and ended when none is left, so an
// idle store has none and N rolls never have more than max. Work due
// later waits in a list watched by one timer goroutine while the list is
// not empty (Kafka's single kafka-scheduler threads do the same work).
type fileWork struct {
	clock clock.Clock
	log   zerolog.Logger
	max   int

	mu      sync.Mutex // guards everything below
	ready   []func()
	later   []laterJob
	workers int
	peak    int           // most workers ever running at once (tests)
	timing  bool          // the timer goroutine runs
	kick    chan struct{} // wakes the timer goroutine: an earlier job, or one made due now
}

// laterJob is work due at a time, or at once when its owner closes.
type laterJob struct {
	at    time.Time
	owner *Log
	run   func()
}

func newFileWork(clk clock.Clock, log zerolog.Logger, max int) *fileWork {
	if max <= 0 {
		max = DefaultFileWorkers
	}
	return &fileWork{clock: clk, log: log, max: max, kick: make(chan struct{}, 1)}
}

// submit runs f on a worker as soon as one is free.
func (w *fileWork) submit(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.readyLocked(f)
}

// readyLocked queues f and starts a worker if one may start.
// REQUIRES: w.mu held.
func (w *fileWork) readyLocked(f func()) {
	w.ready = append(w.ready, f)
	if w.workers < w.max {
		w.workers++
		w.peak = max(w.peak, w.workers)
		go w.work()
	}
}

// work runs queued jobs until there are none.
func (w *fileWork) work() {
	for {
		w.mu.Lock()
		if len(w.ready) == 0 {
			w.workers--
			w.mu.Unlock()
			return
		}
		f := w.ready[0]
		w.ready[0] = nil
		w.ready = w.ready[1:]
		w.mu.Unlock()
		w.runOne(f)
	}
}

func (w *fileWork) runOne(f func()) {
	defer panics.Log(w.log, "background file work panicked")
	f()
}

// after runs f on a worker after d, or as soon as owner closes (expedite).
func (w *fileWork) after(d time.Duration, owner *Log, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d <= 0 {
		w.readyLocked(f)
		return
	}
	w.later = append(w.later, laterJob{at: w.clock.Now().Add(d), owner: owner, run: f})
	if !w.timing {
		w.timing = true
		go w.timer()
		return
	}
	w.kickLocked()
}

func (w *fileWork) kickLocked() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// expedite makes owner's later work due now.
func (w *fileWork) expedite(owner *Log) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := w.later[:0]
	for _, j := range w.later {
		if j.owner == owner {
			w.readyLocked(j.run)
			continue
		}
		keep = append(keep, j)
	}
	if len(keep) < len(w.later) {
		w.kickLocked() // the timer may be waiting for nothing now
	}
	clear(w.later[len(keep):])
	w.later = keep
}

// timer moves later work to the workers when it is due; it ends when no
// work is left waiting.
func (w *fileWork) timer() {
	for {
		w.mu.Lock()
		now := w.clock.Now()
		var next time.Time
		keep := w.later[:0]
		for _, j := range w.later {
			if !j.at.After(now) {
				w.readyLocked(j.run)
				continue
			}
			if next.IsZero() || j.at.Before(next) {
				next = j.at
			}
			keep = append(keep, j)
		}
		clear(w.later[len(keep):])
		w.later = keep
		if len(w.later) == 0 {
			w.timing = false
			w.mu.Unlock()
			return
		}
		t := w.clock.NewTimer(next.Sub(now))
		w.mu.Unlock()
		select {
		case <-t.C():
		case <-w.kick:
			t.Stop()
		}
	}
}

// peakWorkers is the most workers that ever ran at once.
func (w *fileWork) peakWorkers() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}
