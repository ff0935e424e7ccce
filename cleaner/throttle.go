package cleaner

import (
	"time"

	"github.com/kcompatd/kcompatd/internal/clock"
)

// throttler holds the cleaner's I/O to log.cleaner.io.max.bytes.per.second
// (Kafka's Throttler): it counts bytes over a period and, when they run
// ahead of the rate, waits until the rate is met again.
type throttler struct {
	clock  clock.Clock
	rate   float64 // bytes per second; <= 0 or +Inf: unlimited
	stop   <-chan struct{}
	start  time.Time
	bytes  int64
	period time.Duration
}

func (t *throttler) wait(n int64) {
	if t == nil || t.rate <= 0 || t.rate > 1e300 {
		return
	}
	now := t.clock.Now()
	if t.start.IsZero() {
		t.start = now
	}
	t.bytes += n
	elapsed := now.Sub(t.start)
	if elapsed < t.period && float64(t.bytes) <= t.rate*t.period.Seconds() {
		return
	}
	need := time.Duration(float64(t.bytes) / t.rate * float64(time.Second))
	if need > elapsed {
		tm := t.clock.NewTimer(need - elapsed)
		select {
		case <-tm.C():
		case <-t.stop:
			tm.Stop()
		}
	}
	t.start = t.clock.Now()
	t.bytes = 0
}
