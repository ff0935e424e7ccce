package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Framing errors. Each closes the connection it happened on.
var (
	errFrameSize     = errors.New("protocol: request size out of range")
	errHeader        = errors.New("protocol: malformed request header")
	errUnknownAPI    = errors.New("protocol: unknown api key")
	errUnsupportedV  = errors.New("protocol: unsupported api version")
	errBody          = errors.New("protocol: malformed request body")
	errDecodeBound   = errors.New("protocol: request too large to decode")
	errHandlerPanic  = errors.New("protocol: handler panicked")
	errResponseVer   = errors.New("protocol: handler answered at the wrong version")
	errResponseKind  = errors.New("protocol: handler answered with another api's response")
	errNoResponseAck = errors.New("protocol: handler sent no response to a request that expects one")
)

// errPeerEOF is the cause with which conn.pollCtx is cancelled when the
// peer stops sending: it shut down its write side (a half-close) or
// closed the connection, which a read cannot tell apart (or it sent a
// size out of range, after which nothing more is read).
var errPeerEOF = errors.New("protocol: the peer closed its side of the connection")

// TCP keepalive on accepted connections, so that a peer that vanished
// without a FIN or RST (a pulled cable, a suspended VM) is found and its
// connection closed even while a request is in flight, when the idle
// timeout does not apply: about 2.5 minutes (Go's defaults; Kafka turns
// keepalive on with the system's, 2 hours on Linux).
const (
	keepAliveIdle     = 15 * time.Second
	keepAliveInterval = 15 * time.Second
	keepAliveCount    = 9
)

// readChunk is how much of a frame is allocated before its bytes arrive:
// a client announcing 100 MiB and sending 10 bytes costs this much, not
// 100 MiB. Larger frames grow by doubling as their bytes come in. It is
// the producer's default max.request.size, so a typical produce request
// is read into one allocation.
const readChunk = 1 << 20

// conn is one client connection.
type conn struct {
	s        *Server
	listener *Listener // the listener it came in on
	nc       net.Conn  // wrapped in TLS on SSL and SASL_SSL listeners
	remote   net.Addr
	log      zerolog.Logger
	ctx      context.Context // cancelled when the connection ends or the server closes
	cancel   context.CancelFunc
	// pollCtx is ctx, also cancelled with cause errPeerEOF once the peer
	// stops sending. A Fetch long poll waits on it, so it answers early
	// (with what it has) for a peer that went away; every other request
	// runs on ctx and is answered, as requests already read from a
	// half-closed peer must be.
	pollCtx  context.Context
	endPolls context.CancelCauseFunc
	// reserved is the bytes of the frame being served that are counted
	// in s.reqMem (serveLoop's; released by unreserve).
	reserved int64
	// frames carries request frames from the reader to the handler
	// goroutine. It holds one frame; queued holds a token for each frame
	// read or being read and not yet taken by the handler, at most one, so
	// the reader is at most one frame ahead, yet is reading the next size
	// prefix (and so notices the peer going away) while that frame waits.
	frames chan []byte
	queued chan struct{}
	wbuf   []byte // response buffer, reused between responses
	// reuse is what decoding the next request may reuse, and spareReq a
	// Produce's Request once its answer is written (never a held one);
	// serveLoop's.
	reuse    reuse
	spareReq *Request
	// writev: the socket writes net.Buffers in one system call (TCP), so
	// Fetch responses are written spliced (fetch_write.go). Elsewhere
	// (TLS) each piece would be a write and a record of its own.
	writev bool
	splice fetchSplicer

	// sasl is the authentication of a connection on a SASL listener
	// (nil on others), owned by serveLoop; saslPending is true until it
	// is done, for the reader's smaller frame bound.
	sasl        *saslState
	saslPending atomic.Bool

	// principal is who the peer authenticated as (User:ANONYMOUS
	// until it does): set by the reader after the TLS handshake, before
	// it hands over a frame, and by serveLoop when SASL completes; an
	// atomic so that others (ACLs, tests) may read it at any time.
	principal atomic.Pointer[string]

	ip netip.Addr // the peer's, as counted in s.quotas
	// active is when the connection last received bytes, or began
	// serving or answering a request, in Unix nanoseconds of s.clock;
	// inflight counts requests being served and not yet answered (0 or
	// 1). The idle sweeper reads both (limits.go).
	active   atomic.Int64
	inflight atomic.Int32
	pending  bool // serveLoop's request is not yet answered (requestDone)

	// Produce answers held for their fsyncs (conn_pipeline.go), and the
	// next frame when it was taken early to see whether it is a Produce;
	// framesDone: frames is closed. serveLoop's.
	held       []heldResponse
	next       []byte
	framesDone bool
}

// startConn registers nc, accepted on l, whose quota slot for ip is
// taken, and starts its goroutines; false if the server is closing.
func (s *Server) startConn(nc net.Conn, ip netip.Addr, l *Listener) bool {
	ctx, cancel := context.WithCancel(s.ctx)
	if tc, ok := nc.(*net.TCPConn); ok {
		if err := tc.SetKeepAliveConfig(net.KeepAliveConfig{
			Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount,
		}); err != nil {
			s.log.Debug().Err(err).Msg("setting TCP keepalive failed")
		}
	}
	nc = l.wrap(nc)
	c := &conn{
		s:        s,
		listener: l,
		nc:       nc,
		remote:   nc.RemoteAddr(),
		ctx:      ctx,
		cancel:   cancel,
		frames:   make(chan []byte, 1),
		queued:   make(chan struct{}, 1),
		ip:       ip,
	}
	c.setPrincipal(AnonymousPrincipal)
	c.pollCtx, c.endPolls = context.WithCancelCause(ctx)
	c.touch()
	_, c.writev = nc.(*net.TCPConn)
	if l.Protocol.UsesSASL() {
		c.sasl = &saslState{}
		c.saslPending.Store(true)
	}
	c.log = s.log.With().Str("remote", addrString(c.remote)).Logger()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cancel()
		c.endPolls(nil)
		return false
	}
	s.conns[c] = struct{}{}
	if s.cfg.Observer != nil {
		s.cfg.Observer.ConnectionOpened(c.listener.Name)
	}
	s.goroutineLocked(c.readLoop)
	s.goroutineLocked(c.serveLoop)
	s.startIdleSweepLocked()
	return true
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// close ends the connection; safe to call more than once.
func (c *conn) close() {
	c.cancel()
	c.nc.Close()
}

// readLoop reads frames and hands them to serveLoop. After queueing one
// it blocks reading the next size prefix, which is how a peer closing
// the connection while a request is in flight is noticed; it reads the
// next body only once the handler has taken the queued frame.
//
// When the peer stops sending (end of stream, even mid-frame), or sends a
// size out of range, the frames already read are still answered: the
// loop ends, serveLoop serves what it was handed and then closes; only a
// long-polling Fetch is told to answer early (pollCtx). Any other read
// error (a reset, a keepalive timeout, our own close) cancels every
// request of the connection.
func (c *conn) readLoop() {
	defer close(c.frames)
	if err := c.handshakeTLS(); err != nil {
		if c.ctx.Err() == nil {
			c.log.Info().Err(err).Msg("closing connection: TLS handshake failed")
		}
		c.cancel()
		return
	}
	br := bufio.NewReaderSize(activityReader{c}, 16<<10)
	for {
		frame, err := c.readRequest(br)
		if err != nil {
			switch {
			case errors.Is(err, errFrameSize):
				// Nothing after it can be framed: stop reading, and close
				// once the requests before it are answered, as for a
				// frame that does not decode.
				c.log.Info().Err(err).Msg("closing connection")
				c.endPolls(errPeerEOF)
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
				c.endPolls(errPeerEOF)
			default:
				if !errors.Is(err, net.ErrClosed) && c.ctx.Err() == nil {
					c.log.Debug().Err(err).Msg("connection read ended")
				}
				c.cancel()
			}
			return
		}
		c.frames <- frame // never blocks: queued holds its token
	}
}

// readRequest reads one frame, counted in s.reqMem from its size prefix
// on (it may wait there for queued.max.request.bytes).
func (c *conn) readRequest(br *bufio.Reader) ([]byte, error) {
	n, err := readFrameSize(br, c.s.cfg.MaxRequestBytes)
	if err != nil {
		return nil, err
	}
	// Kafka's bound before authentication ("Failing SASL authentication
	// due to invalid receive size"), checked once the size has arrived:
	// a client sends its next request only after the answer that
	// completed its authentication.
	if c.saslPending.Load() && n > c.s.cfg.SASLMaxReceiveBytes {
		return nil, fmt.Errorf("%w: %d before SASL authentication (max %d)", errFrameSize, n, c.s.cfg.SASLMaxReceiveBytes)
	}
	select {
	case c.queued <- struct{}{}: // the frame before is taken
	case <-c.ctx.Done():
		return nil, c.ctx.Err()
	}
	if err := c.s.reqMem.acquire(c.ctx, int64(n)); err != nil {
		<-c.queued
		return nil, err
	}
	frame, err := readFrameBody(br, n)
	if err != nil {
		c.s.reqMem.release(int64(n))
		<-c.queued
		return nil, err
	}
	return frame, nil
}

// unreserve gives the serving frame's bytes back to s.reqMem, once its
// handler is done with it; safe to call more than once.
func (c *conn) unreserve() {
	if c.reserved > 0 {
		c.s.reqMem.release(c.reserved)
		c.reserved = 0
	}
}

// readFrame reads one size-prefixed frame. The size is checked before
// anything is allocated, and the body buffer grows as bytes arrive.
func readFrame(r io.Reader, max int32) ([]byte, error) {
	n, err := readFrameSize(r, max)
	if err != nil {
		return nil, err
	}
	return readFrameBody(r, n)
}

// readFrameSize reads a frame's size prefix and checks it against max.
func readFrameSize(r io.Reader, max int32) (int32, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > max {
		return 0, fmt.Errorf("%w: %d (max %d)", errFrameSize, n, max)
	}
	return n, nil
}

// readFrameBody reads a frame body of n bytes, allocating as they arrive.
func readFrameBody(r io.Reader, n int32) ([]byte, error) {
	// A pooled buffer of the whole size is memory already held, so it
	// can be taken on the peer's word; a new one grows with the bytes
	// that arrive. Both keep power-of-two capacities so that a Produce
	// frame can be recycled (releaseFrame).
	buf := tryGetBuf(int(n))
	if buf != nil {
		buf = buf[:0]
	} else {
		buf = newFrameBuf(0, min(int(n), readChunk))
	}
	for len(buf) < int(n) {
		if len(buf) == cap(buf) {
			grown := newFrameBuf(len(buf), min(2*cap(buf), int(n)))
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):min(cap(buf), int(n))]) // capacities are rounded up: never read into the next frame
		buf = buf[:len(buf)+m]
		if err != nil {
			if len(buf) < int(n) {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
	}
	return buf, nil
}

// newFrameBuf allocates a frame buffer of len n with room for size bytes,
// rounded up to its pool size class so that it can be recycled.
func newFrameBuf(n, size int) []byte {
	if c := bufClass(size); c >= 0 {
		size = 1 << c
	}
	return make([]byte, n, size)
}

// releaseFrame recycles a request frame once its response is written, for
// the APIs whose handlers keep nothing of the request: kmsg decodes byte
// fields as slices of the frame, so a handler that stores one (group
// member metadata, assignments) must never see its frame reused. Only
// Produce frames are large, and handleProduce appends their batches
// synchronously (partition.Log.Append writes them before returning) and
// answers with fresh values.
func releaseFrame(key int16, frame []byte) {
	if key == kmsg.Produce.Int16() {
		putBuf(frame)
	}
}

// serveLoop handles requests one at a time, in order, writing each
// response before taking the next request.
func (c *conn) serveLoop() {
	defer func() {
		c.close()
		c.unreserve()
		if c.next != nil {
			c.s.reqMem.release(int64(len(c.next)))
		}
		// Let the reader finish: it exits on the closed socket.
		for frame := range c.frames {
			c.s.reqMem.release(int64(len(frame)))
		}
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
		c.s.quotas.release(c.ip)
		if c.s.cfg.Observer != nil {
			c.s.cfg.Observer.ConnectionClosed(c.listener.Name)
		}
		if c.s.connDone != nil {
			c.s.connDone()
		}
	}()
	for {
		if len(c.held) > 0 {
			// Answer what is held as it becomes durable (conn_pipeline.go).
			if err := c.awaitHeld(); err != nil {
				if c.ctx.Err() == nil {
					c.log.Info().Err(err).Msg("closing connection")
				}
				return
			}
		}
		frame, ok := c.nextFrame()
		if !ok {
			// The peer is done sending: answer what is held first.
			if err := c.flushHeld(); err != nil && c.ctx.Err() == nil {
				c.log.Info().Err(err).Msg("closing connection")
			}
			return
		}
		if len(c.held) > 0 && !isProduceFrame(frame) {
			// Answers held come first (conn_pipeline.go).
			if err := c.flushHeld(); err != nil {
				c.s.reqMem.release(int64(len(frame)))
				if c.ctx.Err() == nil {
					c.log.Info().Err(err).Msg("closing connection")
				}
				return
			}
		}
		// Counted from when it is served, not read: a frame read ahead
		// behind a response the client does not read must not keep the
		// connection from idling out. Touch first: see closeIdle.
		c.touch()
		c.inflight.Add(1)
		c.pending = true
		c.reserved = int64(len(frame))
		err := c.serveRecovered(frame)
		if err != nil && len(c.held) > 0 {
			// Answer the requests before the one that ends the connection.
			_ = c.flushHeld()
		}
		c.unreserve()   // if serving ended before the handler returned
		c.requestDone() // if no response was written
		if err != nil {
			if c.ctx.Err() == nil {
				c.log.Info().Err(err).Msg("closing connection")
			}
			return
		}
	}
}

// header is a parsed request header (v1 or v2; v0 is only for
// ControlledShutdown v0, which no client sends us).
type header struct {
	key, version int16
	correlation  int32
	clientID     *string
	size         int // bytes of header, the body follows
}

// parseHeader parses key, version, correlation id and client id. The tag
// section of a v2 header is skipped by skipTags once flexibility is known.
func parseHeader(b []byte) (header, error) { return parseHeaderID(b, nil) }

// parseHeaderID is parseHeader giving the client id as prev when they are
// equal: a client sends the same id in every request, so a connection's
// requests can share one string rather than allocate it each time.
func parseHeaderID(b []byte, prev *string) (header, error) {
	var h header
	if len(b) < 10 {
		return h, errHeader
	}
	h.key = int16(binary.BigEndian.Uint16(b[0:]))
	h.version = int16(binary.BigEndian.Uint16(b[2:]))
	h.correlation = int32(binary.BigEndian.Uint32(b[4:]))
	n := int(int16(binary.BigEndian.Uint16(b[8:])))
	h.size = 10
	switch {
	case n == -1:
	case n < -1 || 10+n > len(b):
		return h, errHeader
	default:
		if prev != nil && *prev == string(b[10:10+n]) {
			h.clientID = prev
		} else {
			id := string(b[10 : 10+n])
			h.clientID = &id
		}
		h.size += n
	}
	return h, nil
}

// skipTags skips a tagged-field section at the start of b and returns how
// many bytes it took.
func skipTags(b []byte) (int, error) {
	off := 0
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return 0, errHeader
	}
	off += n
	for range count {
		_, n = binary.Uvarint(b[off:])
		if n <= 0 {
			return 0, errHeader
		}
		off += n
		size, n := binary.Uvarint(b[off:])
		if n <= 0 || size > uint64(len(b)-off-n) {
			return 0, errHeader
		}
		off += n + int(size)
	}
	return off, nil
}

// errAPIVersionsFallback marks an ApiVersions request above our versions,
// answered with apiVersionsUnsupported rather than by closing.
var errAPIVersionsFallback = errors.New("protocol: ApiVersions version above ours")

// decodeRequest parses a frame's header and body against the routing table.
// It never panics on any input (FuzzRequestFrame).
func decodeRequest(table map[int16]api, frame []byte) (header, api, kmsg.Request, error) {
	return decodeRequestID(table, frame, nil)
}

// reuse is what a connection's decoding may reuse from its last
// requests, so that a producer's requests allocate less each.
type reuse struct {
	// clientID is the last client id (parseHeaderID's prev).
	clientID *string
	// produce, if not nil, is a Produce body nothing refers to any more
	// (its answer is written), decoded into by the next Produce, which
	// takes it; produceResp likewise a written Produce response, for the
	// next Produce's handler (Request.produceResponse).
	produce     *kmsg.ProduceRequest
	produceResp *kmsg.ProduceResponse
}

// decodeRequestID is decodeRequest reusing what ru holds (nil: nothing),
// and keeping the client id there for the next request.
func decodeRequestID(table map[int16]api, frame []byte, ru *reuse) (header, api, kmsg.Request, error) {
	var prevClientID *string
	if ru != nil {
		prevClientID = ru.clientID
	}
	h, err := parseHeaderID(frame, prevClientID)
	if ru != nil && h.clientID != nil {
		ru.clientID = h.clientID
	}
	if err != nil {
		return h, api{}, nil, err
	}
	a, ok := table[h.key]
	if !ok {
		return h, a, nil, fmt.Errorf("%w: %d", errUnknownAPI, h.key)
	}
	if h.version < a.min || h.version > a.max {
		if h.key == kmsg.ApiVersions.Int16() && h.version > a.max {
			return h, a, nil, errAPIVersionsFallback
		}
		return h, a, nil, fmt.Errorf("%w: key %d version %d (serving %d-%d)", errUnsupportedV, h.key, h.version, a.min, a.max)
	}
	var req kmsg.Request
	if ru != nil && ru.produce != nil && h.key == kmsg.Produce.Int16() {
		// Only the topics' capacity is kept; ReadFrom sets the rest.
		pr := ru.produce
		ru.produce = nil
		*pr = kmsg.ProduceRequest{Topics: pr.Topics[:0]}
		req = pr
	} else {
		req = kmsg.RequestForKey(h.key)
	}
	if req == nil {
		return h, a, nil, fmt.Errorf("%w: %d", errUnknownAPI, h.key)
	}
	req.SetVersion(h.version)
	body := frame[h.size:]
	if req.IsFlexible() {
		n, err := skipTags(body)
		if err != nil {
			return h, a, nil, err
		}
		body = body[n:]
	}
	if err := checkDecodeBound(h.key, h.version, body); err != nil {
		return h, a, nil, err
	}
	if err := req.ReadFrom(body); err != nil {
		return h, a, nil, fmt.Errorf("%w: key %d version %d: %v", errBody, h.key, h.version, err)
	}
	if pr, ok := req.(*kmsg.ProduceRequest); ok && len(pr.Topics) == 0 {
		pr.Topics = nil // as decoded fresh, not the reused capacity
	}
	return h, a, req, nil
}

// serveRecovered is serve with any panic outside a handler (decoding,
// encoding) turned into an error that closes only this connection; call
// recovers handler panics itself, with the request in the log.
func (c *conn) serveRecovered(frame []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error().Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).
				Msg("panic serving a request; closing connection")
			err = errHandlerPanic
		}
	}()
	return c.serve(frame)
}

// serve decodes one frame, runs its handler and writes the response. A
// returned error closes the connection.
func (c *conn) serve(frame []byte) error {
	if c.sasl != nil && c.sasl.stage != saslDone {
		return c.serveSASL(frame)
	}
	if c.sasl != nil {
		if handled, err := c.serveSession(frame); handled {
			return err
		}
	}
	start := c.requestStart()
	h, a, req, err := decodeRequestID(c.s.table, frame, &c.reuse)
	if lg := c.log.Debug(); lg.Enabled() && !errors.Is(err, errHeader) {
		cid := ""
		if h.clientID != nil {
			cid = *h.clientID
		}
		lg.Int16("api_key", h.key).Int16("api_version", h.version).
			Int32("correlation_id", h.correlation).Str("client_id", cid).
			Msg("request")
	}
	if errors.Is(err, errAPIVersionsFallback) {
		// KIP-511: answer a too-new ApiVersions with a v0 body naming
		// the versions we do serve, so the client retries with one.
		return c.write(h, apiVersionsUnsupported(a))
	}
	if err != nil {
		return err
	}

	ctx := c.ctx
	if h.key == kmsg.Fetch.Int16() {
		// Fetch is the one request that ends its wait early, and still
		// answers, when the peer stops sending.
		ctx = c.pollCtx
	}
	r := c.spareReq
	c.spareReq = nil
	if r == nil {
		r = new(Request)
	}
	*r = Request{
		Ctx:           ctx,
		Version:       h.version,
		CorrelationID: h.correlation,
		ClientID:      h.clientID,
		Remote:        c.remote,
		Body:          req,
		log:           &c.log,
		listener:      c.listener,
		principal:     c.Principal(),
	}
	if h.key == kmsg.Produce.Int16() {
		r.spareProduceResp, c.reuse.produceResp = c.reuse.produceResp, nil
	}
	resp, err := c.callWithFaults(a, r)
	c.unreserve() // the handler is done; the response need not hold the pool
	if err != nil {
		return err
	}
	if resp == nil {
		if pr, ok := req.(*kmsg.ProduceRequest); ok && pr.Acks == 0 {
			releaseFrame(h.key, frame)
			c.observe(h, nil, start)
			c.recycle(r, pr)
			return nil
		}
		return fmt.Errorf("%w: key %d", errNoResponseAck, h.key)
	}
	if resp.Key() != h.key {
		return fmt.Errorf("%w: key %d answered with key %d", errResponseKind, h.key, resp.Key())
	}
	if resp.GetVersion() != h.version {
		return fmt.Errorf("%w: key %d version %d answered at %d", errResponseVer, h.key, h.version, resp.GetVersion())
	}
	if r.durable != nil || len(c.held) > 0 {
		return c.hold(h, resp, r, frame, start) // conn_pipeline.go
	}
	err = c.write(h, resp)
	c.observe(h, resp, start)
	// The response is on the socket (or the connection is broken): the
	// buffers it was built from can be reused.
	r.releaseBufs()
	releaseFrame(h.key, frame)
	if pr, ok := req.(*kmsg.ProduceRequest); ok {
		c.recycle(r, pr)
		if presp, ok := resp.(*kmsg.ProduceResponse); ok && cap(presp.Topics) <= maxRecycledTopics {
			// Written, and observers may not keep it (Observer).
			clear(presp.Topics[:cap(presp.Topics)])
			presp.Topics = presp.Topics[:0]
			c.reuse.produceResp = presp
		}
	}
	return err
}

// maxRecycledTopics bounds what a connection keeps between Produce
// requests for reuse: a request or response with more topics is left to
// the GC, so that what an idle connection holds does not depend on the
// largest request it served.
const maxRecycledTopics = 64

// recycle keeps a Produce's Request and body for the next Produce, once
// its answer is written (or none is due): handleProduce keeps neither
// past that, unlike a held answer's wait, which still uses its Request.
func (c *conn) recycle(r *Request, pr *kmsg.ProduceRequest) {
	*r = Request{} // serve fills it anew
	c.spareReq = r
	if cap(pr.Topics) > maxRecycledTopics {
		return // an idle connection must not keep a huge request's arrays
	}
	clear(pr.Topics[:cap(pr.Topics)]) // the batches alias a recycled frame
	pr.Topics = pr.Topics[:0]
	c.reuse.produce = pr
}

// errFaultDrop closes a connection a fault rule drops.
var errFaultDrop = errors.New("protocol: connection dropped by a fault rule")

// callWithFaults applies the fault rule that matches r, if any (faults.go),
// then runs the handler unless the rule answers for it.
func (c *conn) callWithFaults(a api, r *Request) (kmsg.Response, error) {
	rule := c.s.cfg.Faults.match(a.key, r.ClientID, r.Body, c.s.topicNameByID)
	if rule == nil {
		return c.call(a, r)
	}
	c.log.Info().Int16("api_key", a.key).Str("action", string(rule.Action)).Msg("fault rule applied")
	switch rule.Action {
	case FaultDrop:
		return nil, errFaultDrop
	case FaultError:
		if pr, ok := r.Body.(*kmsg.ProduceRequest); ok && pr.Acks == 0 {
			// Kafka answers a failed acks=0 produce by closing the
			// connection, the only signal such a producer gets.
			return nil, errFaultDrop
		}
		return errorResponse(r.Body, r.Version, rule.ErrorCode), nil
	case FaultDelay:
		clk := c.s.cfg.Faults.Clock
		if clk == nil {
			clk = c.s.clock
		}
		t := clk.NewTimer(rule.Delay)
		select {
		case <-t.C():
		case <-r.Ctx.Done():
			t.Stop()
			return nil, r.Ctx.Err()
		}
	}
	return c.call(a, r)
}

// call runs the handler, turning a panic into an error that closes only
// this connection.
func (c *conn) call(a api, r *Request) (resp kmsg.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			cid := ""
			if r.ClientID != nil {
				cid = *r.ClientID
			}
			c.log.Error().Int16("api_key", a.key).Int16("api_version", r.Version).
				Int32("correlation_id", r.CorrelationID).Str("client_id", cid).
				Str("panic", fmt.Sprint(p)).Bytes("stack", debug.Stack()).
				Msg("handler panicked; closing connection")
			resp, err = nil, errHandlerPanic
		}
	}()
	return a.handle(c.s, r)
}

// write encodes resp with its response header and writes it. The
// ApiVersions response header is always v0 (no tag byte), even when the
// body is flexible, so that a client can parse it before it knows our
// versions.
func (c *conn) write(h header, resp kmsg.Response) error {
	c.requestDone()
	b := c.wbuf[:0]
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(h.correlation))
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		b = append(b, 0)
	}
	if fr, ok := resp.(*kmsg.FetchResponse); ok && c.writev {
		bufs, nb, ok := c.splice.encode(b, fr)
		if ok {
			err := c.send(nil, &bufs)
			c.splice.clear()
			c.keepWbuf(nb)
			return err
		}
		c.splice.clear()
		b = nb[:len(b)]
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	err := c.send(b, nil)
	c.keepWbuf(b)
	return err
}

// send writes a response, b or else bufs, whole. The socket taking any of
// it is activity (touch), as Kafka's Selector updates a connection's idle
// time whenever its socket is ready, pending send included
// (Selector.pollSelectionKeys -> IdleExpiryManager.update): so a client
// that reads a large response slowly but steadily is never idle, and one
// that stops reading is closed by the idle sweeper once its response has
// moved no byte for connections.max.idle.ms, which closes the socket
// and ends the write. To see progress while the socket is full, the write
// stops every writeStep (a real-time socket deadline; the idle clock is
// s.clock) and goes on with what is left. With connections.max.idle.ms
// negative there is no step and no idle close, as in Kafka.
//
// Only a *net.TCPConn can go on writing after a deadline expires: other
// connections (a tls.Conn from an embedder's listener) write without a
// step, so their progress is not seen: one whose response takes longer
// than connections.max.idle.ms to drain is closed by the idle sweeper
// even while it drains.
func (c *conn) send(b []byte, bufs *net.Buffers) error {
	step := c.s.writeStep
	if _, tcp := c.nc.(*net.TCPConn); !tcp {
		step = 0
	}
	for {
		if step > 0 {
			if err := c.nc.SetWriteDeadline(time.Now().Add(step)); err != nil {
				return err
			}
		}
		var n int64
		var err error
		if bufs != nil {
			n, err = bufs.WriteTo(c.nc)
		} else {
			k, werr := c.nc.Write(b)
			n, b, err = int64(k), b[k:], werr
		}
		if n > 0 && err != nil {
			c.touch()
		}
		if err == nil || step <= 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
	}
}

// writeStepFor is how often a blocked response write records its
// progress for an idle timeout of idle: a tenth of it, within [10 ms,
// 1 s], so progress is seen well within the timeout; 0 (never) when
// connections are never idle-closed.
func writeStepFor(idle time.Duration) time.Duration {
	if idle < 0 {
		return 0
	}
	return min(max(idle/10, 10*time.Millisecond), time.Second)
}

// keepWbuf keeps b's array for the next response unless it is large.
func (c *conn) keepWbuf(b []byte) {
	if cap(b) <= 1<<20 {
		c.wbuf = b[:0]
	} else {
		c.wbuf = nil // do not pin a large response
	}
}

// apiVersionsUnsupported is Kafka's answer to an ApiVersions request of a
// version above ours: a v0 body with UNSUPPORTED_VERSION and our
// ApiVersions range.
func apiVersionsUnsupported(a api) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: kmsg.ApiVersions.Int16(), MinVersion: a.advertisedMin, MaxVersion: a.max}}
	return resp
}

// handshakeTLS runs the TLS handshake of an SSL or SASL_SSL connection
// and takes the principal from a verified client certificate. The idle
// sweeper bounds a handshake that stalls (the connection counts as active
// only when bytes arrive).
func (c *conn) handshakeTLS() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	if err := tc.HandshakeContext(c.ctx); err != nil {
		return err
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return nil // no client certificate: ANONYMOUS
	}
	dn, err := DistinguishedName(st.PeerCertificates[0].RawSubject)
	if err != nil {
		return err
	}
	name := dn
	if c.listener.Principal != nil {
		if name, err = c.listener.Principal(dn); err != nil {
			return err
		}
	}
	c.setPrincipal("User:" + name)
	c.log.Debug().Str("principal", c.Principal()).Msg("TLS client authenticated")
	return nil
}

// Principal is who the peer is authenticated as, User:ANONYMOUS if no one.
func (c *conn) Principal() string { return *c.principal.Load() }

func (c *conn) setPrincipal(p string) { c.principal.Store(&p) }
