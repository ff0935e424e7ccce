package protocol

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Connection limits, with Kafka's names and semantics (SocketServer's
// Acceptor and ConnectionQuotas, and the Selector's idle expiry):
//
//   - max.connections: when the broker holds that many connections, the
//     accept loop takes the next connection and then waits, without
//     serving it, until another connection closes (Kafka's acceptor blocks
//     in waitForConnectionSlot); connections behind it wait in the
//     listen backlog.
//   - max.connections.per.ip and its overrides: a new connection from an
//     address already holding its maximum is closed at once, after the
//     wait for a broker-wide slot, as Kafka's inc does; the address's
//     other connections are untouched.
//   - connections.max.idle.ms: a connection with no request being served
//     that has received no bytes and started no response for that long is
//     closed. A request being served (a Fetch long poll) keeps its
//     connection alive, where Kafka's Selector would count only socket
//     activity; with Kafka's bounds on fetch.max.wait.ms the two agree. A
//     response being written is activity whenever the socket takes some
//     of it, as Kafka's Selector counts a writable socket (conn.send): a
//     client that stops reading is closed once its response has moved no
//     byte for the timeout, and a slow reader that keeps draining is not
//     cut short; a request read ahead behind it does not count as being
//     served.
//   - queued.max.request.bytes: see requestMemory.

// ConnectionLimits bounds the connections a server holds. Values are
// taken as given (zero is meaningful for each); start from
// DefaultConnectionLimits.
type ConnectionLimits struct {
	// MaxIdleMs is connections.max.idle.ms (default 600000): how long a
	// connection may be idle before it is closed. Negative: never.
	MaxIdleMs int64
	// MaxConnections is max.connections (default 2147483647).
	MaxConnections int32
	// MaxConnectionsPerIP is max.connections.per.ip (default 2147483647).
	MaxConnectionsPerIP int32
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides,
	// with host names already resolved to addresses. IPv4-mapped IPv6
	// addresses are matched as IPv4.
	MaxConnectionsPerIPOverrides map[netip.Addr]int32
}

// DefaultConnectionLimits returns Kafka's defaults.
func DefaultConnectionLimits() ConnectionLimits {
	return ConnectionLimits{
		MaxIdleMs:           600000,
		MaxConnections:      math.MaxInt32,
		MaxConnectionsPerIP: math.MaxInt32,
	}
}

// maxIdle is the longest idle timeout kept as a duration: beyond it
// (about a century) connections are never idle-closed, and deadlines in
// Unix nanoseconds cannot overflow.
const maxIdle = 100 * 365 * 24 * time.Hour

// idleTimeout converts connections.max.idle.ms; negative means never.
func (l ConnectionLimits) idleTimeout() time.Duration {
	if l.MaxIdleMs < 0 || l.MaxIdleMs > int64(maxIdle/time.Millisecond) {
		return -1
	}
	return time.Duration(l.MaxIdleMs) * time.Millisecond
}

// errTooManyConnections is a per-IP rejection.
type errTooManyConnections struct {
	ip  netip.Addr
	max int32
}

func (e *errTooManyConnections) Error() string {
	return fmt.Sprintf("protocol: %s already has the configured maximum of %d connections", e.ip, e.max)
}

// connQuotas counts connections in total and per address (Kafka's
// ConnectionQuotas).
type connQuotas struct {
	max       int
	maxPerIP  int
	overrides map[netip.Addr]int

	mu    sync.Mutex
	total int
	perIP map[netip.Addr]int
	// freed wakes every acceptor waiting for a slot when a connection is
	// released (Kafka's notifyAll).
	freed wakeup
	log   zerolog.Logger
}

func newConnQuotas(l ConnectionLimits) *connQuotas {
	q := &connQuotas{
		max:      int(l.MaxConnections),
		maxPerIP: int(l.MaxConnectionsPerIP),
		perIP:    make(map[netip.Addr]int),
	}
	if len(l.MaxConnectionsPerIPOverrides) > 0 {
		q.overrides = make(map[netip.Addr]int, len(l.MaxConnectionsPerIPOverrides))
		for a, n := range l.MaxConnectionsPerIPOverrides {
			q.overrides[a.Unmap()] = int(n)
		}
	}
	return q
}

// acquire takes a slot for a connection from ip (invalid: an address
// without an IP, counted only in the total). It waits while the broker is
// at max.connections, until a connection is released or ctx ends
// (returning ctx's error); then it refuses with *errTooManyConnections if
// ip is at its limit.
func (q *connQuotas) acquire(ctx context.Context, ip netip.Addr) error {
	q.mu.Lock()
	for logged := false; q.total >= q.max; logged = true {
		if !logged {
			q.log.Info().Int("max_connections", q.max).
				Msg("max.connections reached; accepting waits until a connection closes")
		}
		if err := q.freed.wait(ctx, &q.mu); err != nil {
			return err
		}
	}
	defer q.mu.Unlock()
	if ip.IsValid() {
		limit, ok := q.overrides[ip]
		if !ok {
			limit = q.maxPerIP
		}
		n := q.perIP[ip]
		if n >= limit {
			return &errTooManyConnections{ip: ip, max: int32(limit)}
		}
		q.perIP[ip] = n + 1
	}
	q.total++
	return nil
}

// release returns the slot acquire took for ip.
func (q *connQuotas) release(ip netip.Addr) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total--
	if ip.IsValid() {
		if n := q.perIP[ip]; n <= 1 {
			delete(q.perIP, ip)
		} else {
			q.perIP[ip] = n - 1
		}
	}
	q.freed.broadcast()
}

// remoteIP is the IP of a connection's peer, invalid if it has none
// (net.Pipe in tests).
func remoteIP(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	case nil:
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// activityReader is the connection's socket as its reader sees it: each
// read that brings bytes marks the connection active.
type activityReader struct{ c *conn }

func (r activityReader) Read(p []byte) (int, error) {
	n, err := r.c.nc.Read(p)
	if n > 0 {
		r.c.touch()
	}
	return n, err
}

// requestDone marks the request being served as answered: the
// connection is idle from now. Called when its response starts being
// written (so a client that never reads it leaves an idle connection,
// as Kafka's Selector sees no activity either), or when serving ends
// without a response.
func (c *conn) requestDone() {
	if c.pending {
		c.pending = false
		c.touch()
		c.inflight.Add(-1) // after touch: see closeIdle
	}
}

// touch marks the connection active now.
func (c *conn) touch() {
	if c.s.idle >= 0 {
		c.active.Store(c.s.clock.Now().UnixNano())
	}
}

// startIdleSweepLocked starts the idle sweeper if it is not running.
// REQUIRES: s.mu held, the server not closed.
func (s *Server) startIdleSweepLocked() {
	if s.idle < 0 || s.sweeping {
		return
	}
	s.sweeping = true
	s.goroutineLocked(s.sweepIdle)
}

// sweepIdle closes idle connections. It runs while the server has
// connections, on one timer set for the earliest instant any connection
// could expire: activity only moves a connection's expiry later, so the
// timer never fires late, and there are no per-request timers.
func (s *Server) sweepIdle() {
	for {
		now := s.clock.Now()
		next, closed, ok := s.closeIdle(now)
		if !ok {
			return
		}
		t := s.clock.NewTimer(next.Sub(now))
		if s.swept != nil {
			s.swept(closed)
		}
		select {
		case <-t.C():
		case <-s.ctx.Done():
			t.Stop()
			return
		}
	}
}

// closeIdle closes the connections idle at now and returns when the next
// check is due and how many it closed; false (and the sweeper marked
// stopped) when the server has no connections left or is closed.
func (s *Server) closeIdle(now time.Time) (next time.Time, closed int, ok bool) {
	nowNs, idleNs := now.UnixNano(), int64(s.idle)
	nextNs := nowNs + idleNs // a busy or new connection expires no earlier
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.conns) == 0 {
		s.sweeping = false
		return time.Time{}, 0, false
	}
	for c := range s.conns {
		if c.ctx.Err() != nil { // already closing
			continue
		}
		// inflight before active: the handler stores active before it
		// decrements inflight, so a zero count sees its last response.
		busy := c.inflight.Load() > 0
		deadline := c.active.Load() + idleNs
		if busy {
			// Not idle while its request runs; check again when it
			// would be idle had the request ended now, so that the
			// sweep times do not depend on whether a sweep found it
			// busy.
			if deadline > nowNs {
				nextNs = min(nextNs, deadline)
			}
			continue
		}
		if deadline <= nowNs {
			c.log.Debug().Dur("idle", time.Duration(nowNs-c.active.Load())).Msg("closing idle connection")
			c.close()
			closed++
			continue
		}
		nextNs = min(nextNs, deadline)
	}
	return time.Unix(0, nextNs), closed, true
}

// requestMemory bounds the bytes of request frames held across all
// connections: read (or being read) and not yet handled. It is Kafka's
// queued.max.request.bytes memory pool: when the pool is spent, readers
// wait before reading the next frame's body until a handled request
// gives its bytes back (Kafka mutes every channel while its pool is out of
// memory). As in Kafka's non-strict pool, a frame is admitted whenever
// any memory is left, so the bound is limit plus one frame
// (socket.request.max.bytes), and a frame larger than the whole pool is
// still served.
//
// A frame's bytes are counted from its size prefix, before they arrive,
// so that frames being read can never deadlock the pool by each holding
// part of what it needs; and released when its handler returns, before
// its response is written, so that a client that never reads its
// responses holds at most the one frame its reader has read ahead.
type requestMemory struct {
	limit int64 // <= 0: unbounded, only counted
	used  atomic.Int64

	mu sync.Mutex
	// freed wakes every waiting reader when bytes are released.
	freed wakeup
	log   zerolog.Logger
}

func newRequestMemory(limit int64, log zerolog.Logger) *requestMemory {
	return &requestMemory{limit: limit, log: log}
}

// acquire counts n bytes, first waiting while the pool is spent, until
// bytes are released or ctx ends (returning ctx's error).
func (m *requestMemory) acquire(ctx context.Context, n int64) error {
	if m.limit <= 0 {
		m.used.Add(n)
		return nil
	}
	m.mu.Lock()
	for logged := false; m.used.Load() >= m.limit; logged = true {
		if !logged {
			m.log.Debug().Int64("queued_max_request_bytes", m.limit).Int64("frame_bytes", n).
				Msg("queued.max.request.bytes reached; reading waits until a request is handled")
		}
		if err := m.freed.wait(ctx, &m.mu); err != nil {
			return err
		}
	}
	m.used.Add(n)
	m.mu.Unlock()
	return nil
}

// release gives back n bytes from acquire.
func (m *requestMemory) release(n int64) {
	m.used.Add(-n)
	if m.limit <= 0 {
		return
	}
	m.mu.Lock()
	m.freed.broadcast()
	m.mu.Unlock()
}

// inUse is the bytes counted now.
func (m *requestMemory) inUse() int64 { return m.used.Load() }

// wakeup lets goroutines wait, under a mutex, until another goroutine
// frees something (Kafka's wait/notifyAll). Its channel is made only when
// someone waits, so a broadcast with no waiter costs nothing.
type wakeup struct {
	ch chan struct{}
	// waiting is called each time a goroutine starts waiting (tests).
	waiting func()
}

// wait unlocks mu, waits for the next broadcast or for ctx to end, and
// then relocks mu, unless ctx ended (its error is returned, mu unlocked).
// REQUIRES: mu held.
func (w *wakeup) wait(ctx context.Context, mu *sync.Mutex) error {
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	ch, waiting := w.ch, w.waiting
	mu.Unlock()
	if waiting != nil {
		waiting()
	}
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	mu.Lock()
	return nil
}

// broadcast wakes every waiter. REQUIRES: the mutex wait was given, held.
func (w *wakeup) broadcast() {
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}
