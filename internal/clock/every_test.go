package clock

import (
	"testing"
	"time"
)

// TestEvery: f runs once per period as the clock advances, and the loop
// returns once quit is closed.
func TestEvery(t *testing.T) {
	m := NewManual(time.Unix(0, 0))
	quit, done, ran := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		Every(m, time.Second, quit, func() { ran <- struct{}{} })
	}()
	for i := 0; i < 3; i++ {
		m.WaitForTimers(1)
		m.Advance(time.Second)
		<-ran
	}
	m.WaitForTimers(1)
	close(quit)
	<-done
}
