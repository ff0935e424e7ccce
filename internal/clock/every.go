package clock

import "time"

// Every runs f every d on c until quit is closed: a background job's
// loop (the first run is d after the call).
func Every(c Clock, d time.Duration, quit <-chan struct{}, f func()) {
	for {
		t := c.NewTimer(d)
		select {
		case <-quit:
			t.Stop()
			return
		case <-t.C():
		}
		f()
	}
}
