package protocol

import (
	"context"
	"errors"
	"math"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
)

const testIdle = time.Minute

// limitsBroker starts a broker with limits and a sweep signal: swept
// receives the number of connections each idle sweep closed, after its
// next timer is armed, so a test advances the manual clock only when the
// sweeper waits on it.
func limitsBroker(t *testing.T, limits ConnectionLimits, prep func(*Server)) (*testBroker, chan int) {
	t.Helper()
	swept := make(chan int, 64)
	b := startBrokerPrep(t, func(c *Config) { c.Connections = &limits }, func(s *Server) {
		s.swept = func(closed int) { swept <- closed }
		if prep != nil {
			prep(s)
		}
	})
	return b, swept
}

func idleLimits() ConnectionLimits {
	l := DefaultConnectionLimits()
	l.MaxIdleMs = testIdle.Milliseconds()
	return l
}

func TestIdleConnectionsClosed(t *testing.T) {
	b, swept := limitsBroker(t, idleLimits(), nil)
	a := dialWire(t, b.addr)
	a.roundTrip(apiVersionsReq(3))
	<-swept // the sweeper started with the first connection: due at T0+idle
	c := dialWire(t, b.addr)
	c.roundTrip(apiVersionsReq(3))

	b.clock.Advance(testIdle / 2)
	c.roundTrip(apiVersionsReq(3)) // c is active at T0+idle/2
	b.clock.Advance(testIdle / 2)
	if n := <-swept; n != 1 {
		t.Fatalf("sweep closed %d connections, want 1", n)
	}
	a.expectClosed()               // idle since T0
	c.roundTrip(apiVersionsReq(3)) // idle for only half the timeout

	b.clock.Advance(testIdle) // past c's last request by the timeout
	<-swept
	c.expectClosed()
	alive(t, b.addr)
}

// A connection that has sent only part of a frame is idle once its bytes
// stop: a peer that trickles or half-opens a connection is closed.
func TestIdlePartialFrameClosed(t *testing.T) {
	b, swept := limitsBroker(t, idleLimits(), nil)
	a := dialWire(t, b.addr)
	a.roundTrip(apiVersionsReq(3))
	<-swept
	a.writeRaw([]byte{0, 0, 0, 100, 0, 18}) // a frame promising 100 bytes
	// The server reads those bytes at T0, or, if it is slow, after the
	// advance; then the next sweep closes the connection.
	closed := 0
	for range 2 {
		b.clock.Advance(testIdle)
		if closed = <-swept; closed > 0 {
			break
		}
	}
	if closed != 1 {
		t.Fatalf("closed %d connections", closed)
	}
	a.expectClosed()
}

// A request in flight (a Fetch long poll longer than the idle timeout)
// keeps its connection open; the idle clock starts when it is answered.
func TestIdleNotWhileRequestInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	b, swept := limitsBroker(t, idleLimits(), func(s *Server) {
		a := s.table[kmsg.Fetch.Int16()]
		a.handle = func(_ *Server, r *Request) (kmsg.Response, error) {
			close(entered)
			<-release
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(r.Version)
			return resp, nil
		}
		s.table[kmsg.Fetch.Int16()] = a
	})
	w := dialWire(t, b.addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis = int32(3 * testIdle.Milliseconds())
	corr := w.send(fetch)
	<-entered
	<-swept
	b.clock.Advance(2 * testIdle)
	if n := <-swept; n != 0 { // the sweep saw the request in flight
		t.Fatalf("sweep closed %d connections during a long poll", n)
	}
	close(release)
	if _, err := w.recv(kmsg.Fetch.Int16(), 11, corr); err != nil {
		t.Fatalf("long poll answer: %v", err)
	}
	w.roundTrip(apiVersionsReq(3))
	b.clock.Advance(testIdle)
	<-swept
	w.expectClosed()
}

func TestIdleDisabled(t *testing.T) {
	l := DefaultConnectionLimits()
	l.MaxIdleMs = -1
	b, swept := limitsBroker(t, l, nil)
	w := dialWire(t, b.addr)
	w.roundTrip(apiVersionsReq(3))
	b.clock.Advance(1000 * time.Hour)
	w.roundTrip(apiVersionsReq(3))
	select {
	case <-swept:
		t.Fatal("idle sweeper ran with connections.max.idle.ms=-1")
	default:
	}
}

func TestMaxConnectionsPerIP(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	for _, tt := range []struct {
		name      string
		perIP     int32
		overrides map[netip.Addr]int32
		allowed   int
	}{
		{"default limit", 2, nil, 2},
		{"override raises", 1, map[netip.Addr]int32{lo: 3}, 3},
		{"zero with override", 0, map[netip.Addr]int32{lo: 1}, 1},
		{"override for another address", 2, map[netip.Addr]int32{netip.MustParseAddr("10.0.0.1"): 5}, 2},
		{"v4-mapped override", 1, map[netip.Addr]int32{netip.MustParseAddr("::ffff:127.0.0.1"): 2}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := DefaultConnectionLimits()
			l.MaxConnectionsPerIP = tt.perIP
			l.MaxConnectionsPerIPOverrides = tt.overrides
			b, _ := limitsBroker(t, l, nil)
			var ws []*wire
			for range tt.allowed {
				w := dialWire(t, b.addr)
				w.roundTrip(apiVersionsReq(3))
				ws = append(ws, w)
			}
			extra := dialWire(t, b.addr)
			extra.expectClosed()
			for _, w := range ws { // the others keep working
				w.roundTrip(apiVersionsReq(3))
			}
			b.s.mu.Lock()
			n := len(b.s.conns)
			b.s.mu.Unlock()
			if n != tt.allowed {
				t.Fatalf("%d connections served, want %d", n, tt.allowed)
			}
		})
	}
}

// At max.connections the accept loop holds the next connection unserved
// until one closes, as Kafka's acceptor blocks in waitForConnectionSlot.
func TestMaxConnectionsWaitsForAClose(t *testing.T) {
	waiting := make(chan struct{}, 8)
	l := DefaultConnectionLimits()
	l.MaxConnections = 1
	b, _ := limitsBroker(t, l, func(s *Server) {
		s.quotas.freed.waiting = func() { waiting <- struct{}{} }
	})
	a := dialWire(t, b.addr)
	a.roundTrip(apiVersionsReq(3))

	c := dialWire(t, b.addr) // the kernel completes the handshake
	corr := c.send(apiVersionsReq(3))
	<-waiting // accepted, waiting for a slot
	b.s.mu.Lock()
	n := len(b.s.conns)
	b.s.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d connections served at max.connections=1", n)
	}
	a.roundTrip(apiVersionsReq(3)) // the served one is unaffected

	a.nc.Close()
	if _, err := c.recv(kmsg.ApiVersions.Int16(), 3, corr); err != nil {
		t.Fatalf("waiting connection not served after a close: %v", err)
	}
}

// With max.connections=0 nothing is served; Close still ends Serve while
// the accept loop waits.
func TestMaxConnectionsZeroAndClose(t *testing.T) {
	waiting := make(chan struct{}, 8)
	l := DefaultConnectionLimits()
	l.MaxConnections = 0
	b, _ := limitsBroker(t, l, func(s *Server) {
		s.quotas.freed.waiting = func() { waiting <- struct{}{} }
	})
	w := dialWire(t, b.addr)
	w.send(apiVersionsReq(3))
	<-waiting
	b.s.Close() // startBroker's cleanup checks that Serve returned nil
	w.expectClosed()
}

func TestConnQuotas(t *testing.T) {
	ip1, ip2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	q := newConnQuotas(ConnectionLimits{
		MaxConnections:               4,
		MaxConnectionsPerIP:          2,
		MaxConnectionsPerIPOverrides: map[netip.Addr]int32{ip2: 1},
	})
	ctx := context.Background()
	steps := []struct {
		ip      netip.Addr
		release bool
		refused bool
	}{
		{ip: ip1}, {ip: ip1}, {ip: ip1, refused: true},
		{ip: ip2}, {ip: ip2, refused: true},
		{ip: netip.Addr{}}, // no IP: counted in the total only
		{ip: ip1, release: true}, {ip: ip1},
		{ip: ip2, release: true}, {ip: ip2},
	}
	for i, s := range steps {
		if s.release {
			q.release(s.ip)
			continue
		}
		err := q.acquire(ctx, s.ip)
		var tm *errTooManyConnections
		if got := errors.As(err, &tm); got != s.refused || (err != nil && !got) {
			t.Fatalf("step %d (%v): %v, refused %v", i, s.ip, err, s.refused)
		}
	}
	if q.total != 4 || q.perIP[ip1] != 2 || q.perIP[ip2] != 1 {
		t.Fatalf("total %d, per IP %v", q.total, q.perIP)
	}
	// Full: acquire waits, and gives up when its context ends.
	ctx2, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.acquire(ctx2, netip.Addr{}) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting acquire: %v", err)
	}
	// A release wakes a waiter.
	go func() { done <- q.acquire(ctx, ip2) }()
	q.release(ip2)
	if err := <-done; err != nil {
		t.Fatalf("after a release: %v", err)
	}
	for _, ip := range []netip.Addr{ip1, ip1, ip2, {}} {
		q.release(ip)
	}
	if q.total != 0 || len(q.perIP) != 0 {
		t.Fatalf("after releasing all: total %d, per IP %v", q.total, q.perIP)
	}
}

func TestIdleTimeout(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want time.Duration
	}{
		{600000, 10 * time.Minute},
		{0, 0},
		{-1, -1},
		{math.MinInt64, -1},
		{math.MaxInt64, -1}, // would overflow: never
	} {
		if got := (ConnectionLimits{MaxIdleMs: tt.ms}).idleTimeout(); got != tt.want {
			t.Errorf("%d ms: %v, want %v", tt.ms, got, tt.want)
		}
	}
}

func TestRemoteIP(t *testing.T) {
	for _, tt := range []struct {
		addr net.Addr
		want netip.Addr
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}, netip.MustParseAddr("127.0.0.1")},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 1}, netip.MustParseAddr("10.1.2.3")},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}, netip.MustParseAddr("::1")},
		{&net.UnixAddr{Name: "pipe", Net: "unix"}, netip.Addr{}},
		{nil, netip.Addr{}},
	} {
		if got := remoteIP(tt.addr); got != tt.want {
			t.Errorf("%v: %v, want %v", tt.addr, got, tt.want)
		}
	}
}

// Idle tracking costs no allocation per request or per read.
func TestIdleTrackingAllocs(t *testing.T) {
	cfg := Config{Logger: zerolog.Nop()}
	store := openTestStore(t, clock.Real{}, cfg.Logger)
	startCoordinators(t, &cfg, store, nil)
	s := mustNewServer(t, cfg, store)
	defer s.Close()
	c := &conn{s: s, nc: nopConn{}}
	r := activityReader{c}
	buf := make([]byte, 8)
	if n := testing.AllocsPerRun(100, func() {
		r.Read(buf)
		c.inflight.Add(1)
		c.pending = true
		c.requestDone()
	}); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
}

// nopConn is a net.Conn whose reads always bring one byte.
type nopConn struct{ net.Conn }

func (nopConn) Read(p []byte) (int, error) { return 1, nil }
