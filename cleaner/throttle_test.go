package cleaner

import (
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/internal/clock"
)

// The throttler holds reads to the rate: 3000 bytes at 1000 B/s wait for
// the clock to reach 3 s from the start.
func TestThrottler(t *testing.T) {
	clk := clock.NewManual(testStart)
	th := &throttler{clock: clk, rate: 1000, period: 300 * time.Millisecond, stop: make(chan struct{})}
	th.wait(100) // within the period and the rate: no wait
	done := make(chan struct{})
	go func() {
		clk.Advance(300 * time.Millisecond)
		close(done)
	}()
	<-done
	finished := make(chan struct{})
	go func() {
		th.wait(2900)
		close(finished)
	}()
	clk.WaitForTimers(1)
	clk.Advance(2699 * time.Millisecond)
	select {
	case <-finished:
		t.Fatal("throttler let 3000 bytes through before 3 s")
	default:
	}
	clk.Advance(time.Millisecond)
	<-finished
}
