package protocol

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Holding Produce answers for an fsync. A producer keeps several Produce
// requests in flight on one connection (max.in.flight.requests.per.connection,
// 5 by default), and a connection serves them one at a time. Under
// flush.messages, waiting for each one's fsync before taking the next would
// leave the next request's batches unwritten until then, so that they
// missed the fsync that was running and waited for a whole one more after
// it. Instead the connection writes a request's batches, starts waiting for
// its fsyncs on a goroutine of its own (r.durable), holds its answer, and
// goes on serving whatever Produce comes next: the log's flush loop covers
// every batch written while an fsync runs with the next one (group commit,
// partition/flush.go). Between requests, it writes the held answers whose
// fsyncs are done. Answers are written in request order, each only once its
// fsync is done: nothing is acknowledged earlier than before, and every
// request other than a Produce is served only after every answer held is
// written, so it sees what it would have seen.

// maxHeld bounds the answers held on one connection: Kafka's default
// max.in.flight.requests.per.connection.
const maxHeld = 5

// heldResponse is an answer held for its fsyncs: what serve needs to
// finish it. Its frame is not kept: only Produce answers are held, and
// the batches are written before the handler returns (releaseFrame), so
// a connection holds no more request memory than it did.
type heldResponse struct {
	h     header
	resp  kmsg.Response
	r     *Request
	start time.Time
	wait  *heldWait // nil: nothing to wait for
}

// heldWait is a held answer's r.durable running on its own goroutine:
// done is closed when it returned, err then says whether it panicked.
type heldWait struct {
	done chan struct{}
	err  error
}

// hold finishes serving a request whose answer waits for an fsync
// (r.durable) or comes after one that does: it starts the wait and holds
// the answer, after writing those held whose fsyncs are done, and waits
// for the oldest first if maxHeld are held.
func (c *conn) hold(h header, resp kmsg.Response, r *Request, frame []byte, start time.Time) error {
	releaseFrame(h.key, frame)
	x := heldResponse{h: h, resp: resp, r: r, start: start}
	if r.durable != nil {
		w := &heldWait{done: make(chan struct{})}
		go func() {
			defer close(w.done)
			w.err = c.completeRecovered(r)
		}()
		x.wait = w
	}
	c.held = append(c.held, x)
	return c.answerHeld(len(c.held) - maxHeld + 1)
}

// awaitHeld runs before the next request is taken while answers are held:
// it writes each held answer as its fsyncs finish, and returns once none
// is held or the next request has come and is a Produce (served while the
// held wait). Any other request, or the end of the requests, waits for
// every held answer first. It never waits for the client alone with
// answers held: the request served last may have been one that is not
// answered (acks=0), and the next may not come before the client gives up.
func (c *conn) awaitHeld() error {
	for {
		if err := c.answerHeld(0); err != nil || len(c.held) == 0 {
			return err
		}
		if c.next == nil && !c.framesDone {
			select {
			case f, ok := <-c.frames:
				c.took(f, ok)
			case <-c.held[0].wait.done: // not done, so not nil (answerHeld)
				continue
			}
		}
		if isProduceFrame(c.next) {
			return nil
		}
		return c.flushHeld()
	}
}

// flushHeld waits for every held answer's fsyncs and writes the answers,
// in order.
func (c *conn) flushHeld() error { return c.answerHeld(len(c.held)) }

// answerHeld writes the held answers in order: the first waitFor of them
// once their fsyncs are done, waiting for them, then those after them
// whose fsyncs are already done. A panic while waiting ends the
// connection, as one in a handler does. After a failure every held
// answer is waited for and none written: its wait also publishes its
// appends (the high watermark, waking fetchers), which must not depend on
// the client reading.
func (c *conn) answerHeld(waitFor int) error {
	var err error
	n := 0
	for ; n < len(c.held); n++ {
		x := &c.held[n]
		if w := x.wait; w != nil {
			if n >= waitFor && err == nil && !isDone(w.done) {
				break
			}
			<-w.done
			if err == nil {
				err = w.err
			}
		}
		if err == nil {
			err = c.write(x.h, x.resp)
			c.observe(x.h, x.resp, x.start)
		}
		x.r.releaseBufs()
	}
	rest := copy(c.held, c.held[n:])
	clear(c.held[rest:])
	c.held = c.held[:rest]
	return err
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// completeRecovered runs r.durable, turning a panic into an error.
func (c *conn) completeRecovered(r *Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).
				Msg("panic completing a request; closing connection")
			err = errHandlerPanic
		}
	}()
	r.durable()
	return nil
}

// took keeps a frame awaitHeld received from the reader, for nextFrame
// (or notes the end of the frames). Taken, the frame lets the reader read
// the one after it while this one is served, so that frame is there to
// look at when this one is done (the reader is still at most one frame
// ahead of the frames taken, and at most maxHeld answers are held).
func (c *conn) took(f []byte, ok bool) {
	if !ok {
		c.framesDone = true
		return
	}
	c.next = f
	<-c.queued // let the reader read the next body
}

// nextFrame is the next request frame to serve: the one awaitHeld took,
// or the reader's next; false once the reader is done. The reader
// may read the next body once nextFrame returns.
func (c *conn) nextFrame() ([]byte, bool) {
	if f := c.next; f != nil {
		c.next = nil
		return f, true
	}
	if c.framesDone {
		return nil, false
	}
	f, ok := <-c.frames
	if !ok {
		c.framesDone = true
		return nil, false
	}
	<-c.queued // let the reader read the next body
	return f, true
}

// isProduceFrame reports whether frame, a request without its size
// prefix, is a Produce (its API key, the header's first field).
func isProduceFrame(frame []byte) bool {
	return len(frame) >= 2 && int16(frame[0])<<8|int16(frame[1]) == kmsg.Produce.Int16()
}
