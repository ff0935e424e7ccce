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
// flush.messages, answering each before taking the next would cost each
// request a whole fsync of its own, one after the other. Instead, when
// the next request has already arrived and is a Produce, the connection
// writes the current one's batches, holds its answer (with the fsync not
// yet waited for), and serves the next: the log's next fsync covers the
// batches of every request held (group commit, partition.Log.syncTo).
// Answers are written in request order, each only once its fsync is done:
// nothing is acknowledged earlier than before, and every request other
// than a Produce is served only after every answer held is written, so
// it sees what it would have seen.

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
}

// hold finishes serving a request whose answer waits for an fsync
// (r.durable) or comes after one that does: it is held while the next
// request, already read, is a Produce, and otherwise written with the
// ones before it.
func (c *conn) hold(h header, resp kmsg.Response, r *Request, frame []byte, start time.Time) error {
	releaseFrame(h.key, frame)
	c.held = append(c.held, heldResponse{h, resp, r, start})
	if len(c.held) < maxHeld && c.nextIsProduce() {
		return nil
	}
	return c.flushHeld()
}

// flushHeld waits for every held answer's fsyncs and writes the answers,
// in order. A panic while waiting ends the connection, as one in a
// handler does. Every held request is waited for even after a write
// failed: its wait also publishes its appends (the high watermark,
// waking fetchers), which must not depend on the client reading.
func (c *conn) flushHeld() error {
	held := c.held
	c.held = c.held[:0]
	var err error
	for i := range held {
		x := &held[i]
		if x.r.durable != nil {
			if werr := c.completeRecovered(x.r); err == nil {
				err = werr
			}
		}
		if err == nil {
			err = c.write(x.h, x.resp)
			c.observe(x.h, x.resp, x.start)
		}
		x.r.releaseBufs()
		*x = heldResponse{}
	}
	return err
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

// nextIsProduce reports whether the next request has been read and is a
// Produce. It takes the frame from the reader, if there is one, and keeps
// it for nextFrame; taken, the frame lets the reader read the one after
// it while this one is served, so that frame is there to look at when
// this one is done (the reader is still at most one frame ahead of the
// frames taken, and at most maxHeld answers are held).
func (c *conn) nextIsProduce() bool {
	if c.next == nil && !c.framesDone {
		select {
		case f, ok := <-c.frames:
			if ok {
				c.next = f
				<-c.queued // let the reader read the next body
			} else {
				c.framesDone = true
			}
		default:
		}
	}
	return isProduceFrame(c.next)
}

// nextFrame is the next request frame to serve: the one nextIsProduce
// took, or the reader's next; false once the reader is done. The reader
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
