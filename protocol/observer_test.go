package protocol

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/metrics"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// startObservedBroker is startBroker with metrics on, as the root
// package wires them: the store reports to hot, the server to obs (hot
// itself when nil).
func startObservedBroker(t testing.TB) *testBroker {
	t.Helper()
	return startObservedBrokerWith(t, metrics.New(nil), nil)
}

func startObservedBrokerWith(t testing.TB, hot *metrics.Hot, obs Observer) *testBroker {
	t.Helper()
	if obs == nil {
		obs = hot
	}
	lg := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store, err := partition.Open(partition.Config{Dir: t.TempDir(), NodeID: 1, Clock: clk, Logger: lg, Observer: hot})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return startBrokerOn(t, store, clk, lg, func(c *Config) { c.Observer = obs }, nil, nil)
}

// recordingObserver records what it is told.
type recordingObserver struct {
	requests chan observedRequest
	opened   chan string
	closed   chan string
}

type observedRequest struct {
	key, version int16
	resp         kmsg.Response
}

func (o *recordingObserver) RequestDone(key, version int16, resp kmsg.Response, d time.Duration) {
	if d < 0 {
		panic("negative request time")
	}
	if resp != nil {
		// resp is valid only during the call (the connection reuses a
		// Produce response): keep a copy.
		c := kmsg.ResponseForKey(resp.Key())
		c.SetVersion(resp.GetVersion())
		if err := c.ReadFrom(resp.AppendTo(nil)); err != nil {
			panic(err)
		}
		resp = c
	}
	o.requests <- observedRequest{key, version, resp}
}
func (o *recordingObserver) ConnectionOpened(listener string) { o.opened <- listener }
func (o *recordingObserver) ConnectionClosed(listener string) { o.closed <- listener }

// The server tells its observer of each connection, with the listener's
// name, and of each answered request (acks=0 produce: without a
// response).
func TestObserverHooks(t *testing.T) {
	obs := &recordingObserver{requests: make(chan observedRequest, 16), opened: make(chan string, 4), closed: make(chan string, 4)}
	br := startObservedBrokerWith(t, metrics.New(nil), obs)
	br.createTopic(t, "t", 1, nil)
	w := dialWire(t, br.addr)
	next := func() observedRequest {
		t.Helper()
		select {
		case r := <-obs.requests:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no request observed")
			return observedRequest{}
		}
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	w.roundTrip(av)
	if l := <-obs.opened; l != "PLAINTEXT" {
		t.Fatalf("opened on %q", l)
	}
	if r := next(); r.key != kmsg.ApiVersions.Int16() || r.version != 3 || r.resp == nil {
		t.Fatalf("observed %+v", r)
	}
	batch := testBatch(t, recordbatch.None, br.nowMs(), recordbatch.Record{Value: []byte("v")})
	w.roundTrip(produceReq(9, "t", [16]byte{}, 0, batch))
	if r := next(); r.key != kmsg.Produce.Int16() || r.version != 9 || onlyProducePartition(t, r.resp).ErrorCode != 0 {
		t.Fatalf("observed %+v", r)
	}
	req := produceReq(9, "t", [16]byte{}, 0, testBatch(t, recordbatch.None, br.nowMs(), recordbatch.Record{Value: []byte("w")}))
	req.Acks = 0
	w.send(req)
	if r := next(); r.key != kmsg.Produce.Int16() || r.resp != nil {
		t.Fatalf("acks=0 observed %+v", r)
	}
	w.nc.Close()
	select {
	case l := <-obs.closed:
		if l != "PLAINTEXT" {
			t.Fatalf("closed on %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no close observed")
	}
}
