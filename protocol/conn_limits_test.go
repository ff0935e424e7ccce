package protocol

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// onlyConn returns the server's one connection.
func onlyConn(t *testing.T, s *Server) *conn {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 1 {
		t.Fatalf("%d connections, want 1", len(s.conns))
	}
	for c := range s.conns {
		return c
	}
	return nil
}

// longPollFetch is a Fetch of topic's partition 0 at offset that waits an
// hour for one byte: with the manual clock, it can only end early.
func longPollFetch(topic string, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxWaitMillis = int32(time.Hour.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// A peer that shuts down its write side (CloseWrite) after sending
// requests still gets every answer; a long-polling Fetch answers early.
// The connection is closed once they are written. (With two or more
// requests pipelined behind a long poll, the reader waits with the next
// size prefix read and sees the end of stream only after the poll: it
// ends at its MaxWait.)
func TestHalfClosedPeerGetsAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// blockMetadata makes Metadata wait until the server has seen
		// the half-close, and fail if its context was cancelled.
		blockMetadata bool
		reqs          func() []kmsg.Request
	}{
		{"pipelined", false, func() []kmsg.Request {
			m := kmsg.NewPtrMetadataRequest()
			m.SetVersion(12)
			return []kmsg.Request{apiVersionsReq(3), m, apiVersionsReq(3)}
		}},
		{"handler busy at the half-close", true, func() []kmsg.Request {
			m := kmsg.NewPtrMetadataRequest()
			m.SetVersion(12)
			return []kmsg.Request{m, apiVersionsReq(3)}
		}},
		{"long-polling fetch", false, func() []kmsg.Request {
			return []kmsg.Request{longPollFetch("lp", 0), apiVersionsReq(3)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			b := startBrokerPrep(t, nil, func(s *Server) {
				if !tc.blockMetadata {
					return
				}
				a := s.table[kmsg.Metadata.Int16()]
				orig := a.handle
				a.handle = func(s *Server, r *Request) (kmsg.Response, error) {
					close(entered)
					<-release
					if r.Ctx.Err() != nil {
						t.Errorf("request context cancelled by a half-close: %v", context.Cause(r.Ctx))
					}
					return orig(s, r)
				}
				s.table[kmsg.Metadata.Int16()] = a
			})
			b.createTopic(t, "lp", 1, nil)
			w := dialWire(t, b.addr)
			reqs := tc.reqs()
			corrs := make([]int32, len(reqs))
			for i, r := range reqs {
				corrs[i] = w.send(r)
			}
			if tc.blockMetadata {
				<-entered
			}
			if err := w.nc.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if tc.blockMetadata {
				<-onlyConn(t, b.s).pollCtx.Done() // the server saw the end of stream
				close(release)
			}
			for i, r := range reqs {
				resp, err := w.recv(r.Key(), r.GetVersion(), corrs[i])
				if err != nil {
					t.Fatalf("request %d (key %d): no answer after the half-close: %v", i, r.Key(), err)
				}
				if f, ok := resp.(*kmsg.FetchResponse); ok {
					if f.ErrorCode != 0 || len(f.Topics) != 1 || f.Topics[0].Partitions[0].ErrorCode != 0 {
						t.Fatalf("fetch answered %+v", f)
					}
				}
			}
			w.expectClosed()
			alive(t, b.addr)
		})
	}
}

// A peer that resets the connection (or vanishes, found by keepalive)
// cancels every request of its connection, not only long polls.
func TestResetPeerCancelsRequests(t *testing.T) {
	entered, released := make(chan struct{}), make(chan struct{})
	b := startBrokerPrep(t, nil, func(s *Server) {
		a := s.table[kmsg.Metadata.Int16()]
		a.handle = func(_ *Server, r *Request) (kmsg.Response, error) {
			close(entered)
			<-r.Ctx.Done()
			close(released)
			return nil, r.Ctx.Err()
		}
		s.table[kmsg.Metadata.Int16()] = a
	})
	w := dialWire(t, b.addr)
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(12)
	w.send(m)
	<-entered
	tc := w.nc.(*net.TCPConn)
	tc.SetLinger(0) // close sends RST
	tc.Close()
	<-released
	alive(t, b.addr)
}

// slowReaderBatch is a batch of about 900 KiB, under max.message.bytes.
func slowReaderBatch(t *testing.T, ts int64) []byte {
	return testBatch(t, recordbatch.None, ts, recordbatch.Record{Value: make([]byte, 900<<10)})
}

// A client that sends Fetches and never reads the responses blocks only
// its own connection: others keep producing and fetching, the idle
// sweeper closes it once its response has made no progress for
// connections.max.idle.ms (even with a request read ahead behind it), and
// everything it held is given back.
func TestSlowReaderClosedOthersServed(t *testing.T) {
	done := make(chan struct{}, 16)
	b, swept := limitsBroker(t, idleLimits(), func(s *Server) {
		s.connDone = func() { done <- struct{}{} }
	})
	b.createTopic(t, "big", 1, nil)
	b.createTopic(t, "t", 1, nil)
	l, err := b.store.Log("big", 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 18 {
		if _, err := l.Append(slowReaderBatch(t, b.nowMs())); err != nil {
			t.Fatal(err)
		}
	}

	stuck := dialWire(t, b.addr)
	stuck.roundTrip(apiVersionsReq(3))
	<-swept       // the sweeper runs
	for range 8 { // 8 x 16 MiB outstanding, far beyond the socket buffers
		f := longPollFetch("big", 0)
		f.Topics[0].Partitions[0].PartitionMaxBytes = 16 << 20
		f.MaxWaitMillis = 0
		stuck.send(f)
	}
	sc := onlyConn(t, b.s)

	// Others are served while it is stuck.
	other := dialWire(t, b.addr)
	id := b.store.Topic("t").ID
	for v := int16(3); v <= 9; v += 3 {
		if p := onlyProducePartition(t, other.roundTrip(produceReq(v, "t", id, 0, testBatch(t, recordbatch.None, b.nowMs())))); p.ErrorCode != 0 {
			t.Fatalf("produce v%d: %s", v, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	f := longPollFetch("t", 0)
	f.MaxWaitMillis = 0
	if fr := other.roundTrip(f).(*kmsg.FetchResponse); len(fr.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatal("other client fetched nothing")
	}

	// Wait (bounded) until the stuck connection's handler is writing:
	// nothing is being served on it, yet its requests are not answered.
	for i := 0; sc.inflight.Load() != 0; i++ {
		if i == 10000 {
			t.Fatal("stuck connection never started writing")
		}
		time.Sleep(time.Millisecond)
	}
	closed := 0
	for i := 0; sc.ctx.Err() == nil; i++ { // one sweep, unless the handler was between responses
		if i == 5 {
			t.Fatal("stuck connection not closed by the idle sweeper")
		}
		b.clock.Advance(testIdle)
		closed += <-swept
	}
	for range closed { // the other client, idle as long, may go too
		<-done
	}
	stuck.expectClosed()
	alive(t, b.addr)
	if n := b.s.reqMem.inUse(); n != 0 {
		t.Fatalf("%d request bytes still counted after the stuck connection closed", n)
	}
}

// queued.max.request.bytes: while handled requests hold the pool, other
// connections wait before reading their next frame; a frame larger than
// the whole pool is still admitted when the pool is free (Kafka's
// non-strict pool).
func TestQueuedMaxRequestBytes(t *testing.T) {
	const limit = 64 << 10
	entered, release := make(chan struct{}, 1), make(chan struct{})
	waiting := make(chan struct{}, 8)
	b := startBrokerPrep(t, func(c *Config) { c.QueuedMaxRequestBytes = limit }, func(s *Server) {
		s.reqMem.freed.waiting = func() { waiting <- struct{}{} }
		a := s.table[kmsg.Metadata.Int16()]
		orig := a.handle
		a.handle = func(s *Server, r *Request) (kmsg.Response, error) {
			entered <- struct{}{}
			<-release
			return orig(s, r)
		}
		s.table[kmsg.Metadata.Int16()] = a
	})
	big := kmsg.NewPtrMetadataRequest()
	big.SetVersion(12)
	name := strings.Repeat("x", 200)
	for range 500 { // about 100 KiB, above the whole pool
		big.Topics = append(big.Topics, kmsg.MetadataRequestTopic{Topic: &name})
	}
	a := dialWire(t, b.addr)
	ca := a.send(big)
	<-entered
	if n := b.s.reqMem.inUse(); n < limit {
		t.Fatalf("%d bytes counted for a frame above %d", n, limit)
	}
	c := dialWire(t, b.addr)
	cc := c.send(apiVersionsReq(3))
	<-waiting // c's reader waits for the pool
	close(release)
	if _, err := a.recv(kmsg.Metadata.Int16(), 12, ca); err != nil {
		t.Fatal(err)
	}
	if _, err := c.recv(kmsg.ApiVersions.Int16(), 3, cc); err != nil {
		t.Fatal(err)
	}
	a.roundTrip(apiVersionsReq(3))
	if n := b.s.reqMem.inUse(); n != 0 {
		t.Fatalf("%d bytes counted with nothing in flight", n)
	}
}

func TestRequestMemory(t *testing.T) {
	m := newRequestMemory(100, zerolog.Nop())
	ctx := context.Background()
	for i, s := range []struct {
		n       int64
		release bool
		used    int64
	}{
		{n: 60, used: 60},
		{n: 60, used: 120}, // non-strict: admitted while anything is left
		{n: 60, release: true, used: 60},
		{n: 40, used: 100},
		{n: 100, release: true, used: 0},
		{n: 500, used: 500}, // larger than the pool, admitted when free
		{n: 500, release: true, used: 0},
	} {
		if s.release {
			m.release(s.n)
		} else if err := m.acquire(ctx, s.n); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := m.inUse(); got != s.used {
			t.Fatalf("step %d: used %d, want %d", i, got, s.used)
		}
	}
	// Spent: acquire waits, gives up when its context ends, and is
	// woken by a release.
	m.acquire(ctx, 100)
	ctx2, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- m.acquire(ctx2, 1) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting acquire: %v", err)
	}
	go func() { errc <- m.acquire(ctx, 1) }()
	m.release(100)
	if err := <-errc; err != nil || m.inUse() != 1 {
		t.Fatalf("after release: %v, used %d", err, m.inUse())
	}
	// Unbounded: counted only.
	u := newRequestMemory(-1, zerolog.Nop())
	u.acquire(ctx, 1<<40)
	if u.inUse() != 1<<40 {
		t.Fatal("unbounded pool does not count")
	}
}

// A produced batch of any codec that inflates past MaxDecompressedBytes
// is refused with MESSAGE_TOO_LARGE, and nothing is appended; one under
// the bound is taken.
func TestProduceDecompressedLimitEachCodec(t *testing.T) {
	const limit = 1 << 20
	b := startBroker(t, func(c *Config) { c.MaxDecompressedBytes = limit })
	tp := b.createTopic(t, "z", 1, nil)
	w := dialWire(t, b.addr)
	for _, c := range []recordbatch.Codec{recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		for _, tc := range []struct {
			size int
			want int16
		}{
			{limit + 1<<10, kerr.MessageTooLarge.Code},
			{limit / 2, 0},
		} {
			batch := testBatch(t, c, b.nowMs(), recordbatch.Record{Value: make([]byte, tc.size)})
			if len(batch) > limit {
				t.Fatalf("%s: batch of %d bytes does not compress", c, len(batch))
			}
			p := onlyProducePartition(t, w.roundTrip(produceReq(9, "z", tp.ID, 0, batch)))
			if p.ErrorCode != tc.want {
				t.Errorf("%s, %d bytes inflated: %v, want %v", c, tc.size, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(tc.want))
			}
		}
	}
	if end := tp.Partitions[0].Offsets().LogEndOffset; end != 4 {
		t.Fatalf("log end offset %d, want 4 (one batch per codec)", end)
	}
}

// A client that reads its responses slowly but steadily is not cut short:
// as Kafka's Selector counts every write that moves bytes as activity, a
// response write is idle only while the socket takes none of it. Once
// the client stops reading, the connection is closed after
// connections.max.idle.ms without progress.
func TestSlowDrainingReaderKept(t *testing.T) {
	b, swept := limitsBroker(t, idleLimits(), func(s *Server) { s.writeStep = 5 * time.Millisecond })
	b.createTopic(t, "big", 1, nil)
	l, err := b.store.Log("big", 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 36 { // 32 MiB, beyond what the socket buffers hold
		if _, err := l.Append(slowReaderBatch(t, b.nowMs())); err != nil {
			t.Fatal(err)
		}
	}
	w := dialWire(t, b.addr)
	w.roundTrip(apiVersionsReq(3))
	<-swept
	sc := onlyConn(t, b.s)
	f := longPollFetch("big", 0)
	f.Topics[0].Partitions[0].PartitionMaxBytes = 32 << 20
	f.MaxWaitMillis = 0
	w.send(f)
	buf := make([]byte, 1<<20)
	if _, err := io.ReadFull(w.br, buf); err != nil { // the response is being written
		t.Fatal(err)
	}
	b.clock.Advance(time.Millisecond) // so that progress shows as a new active time
	for round := range 3 {
		if _, err := io.ReadFull(w.br, buf); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		now := b.clock.Now().UnixNano()
		for i := 0; sc.active.Load() != now; i++ { // the server records the progress
			if i == 5000 {
				t.Fatalf("round %d: the response's progress was not recorded as activity", round)
			}
			time.Sleep(time.Millisecond)
		}
		b.clock.Advance(testIdle - time.Millisecond)
		<-swept
		if sc.ctx.Err() != nil {
			t.Fatalf("round %d: a connection whose response is being read was closed as idle", round)
		}
	}
	b.clock.Advance(testIdle) // no reading for connections.max.idle.ms
	if closed := <-swept; closed != 1 {
		t.Fatalf("sweep closed %d connections, want the stalled one", closed)
	}
	w.expectClosed()
}
