package protocol

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Observer is told of connections and served requests, for metrics
// (internal/metrics implements it). Config.Observer nil observes nothing
// and costs nothing: every hook is behind a nil check. Its methods run on
// the connection's goroutines, so they must be quick and must not block.
type Observer interface {
	// ConnectionOpened and ConnectionClosed bracket a connection
	// accepted on the listener named listener (Listener.Name).
	ConnectionOpened(listener string)
	ConnectionClosed(listener string)
	// RequestDone is called once a request's response is written (resp
	// nil: the request has none, an acks=0 produce), with the time
	// since its frame was taken to be served. resp is valid only during
	// the call. Requests that close the connection instead are not
	// reported.
	RequestDone(key, version int16, resp kmsg.Response, d time.Duration)
}

// requestStart is when a request began, for its observer (zero without
// one, so that an unobserved server does not read the clock).
func (c *conn) requestStart() time.Time {
	if c.s.cfg.Observer == nil {
		return time.Time{}
	}
	return time.Now()
}

// observe reports a request answered with resp to the observer, if any.
func (c *conn) observe(h header, resp kmsg.Response, start time.Time) {
	if o := c.s.cfg.Observer; o != nil {
		o.RequestDone(h.key, h.version, resp, time.Since(start))
	}
}
