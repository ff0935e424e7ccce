package protocol

import (
	"context"
	"net"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request, handed to its API's handler.
type Request struct {
	// Ctx is cancelled when the connection closes or the server shuts
	// down; handlers that block (Fetch long polls) select on it.
	Ctx           context.Context
	Version       int16
	CorrelationID int32
	ClientID      *string
	Remote        net.Addr
	Body          kmsg.Request

	// principal is who the connection authenticated as (User:ANONYMOUS
	// if no one), what the authorizer checks (authorize.go); "" in tests
	// that build a Request by hand means User:ANONYMOUS.
	principal string

	// listener is the listener the request came in on (nil in tests
	// that build a Request: the server's default listener).
	listener *Listener

	// bufs are pooled buffers the response refers to (Fetch's record
	// bytes), recycled once the response is written.
	bufs [][]byte
	// log is the connection's logger (it carries the remote address),
	// for what a handler logs about this request; nil in tests that
	// build a Request by hand.
	log *zerolog.Logger
	// durable, if set by the handler, waits for the fsyncs the response
	// depends on and completes it; the connection calls it before
	// writing the response (conn_pipeline.go).
	durable func()
	// spareProduceResp, for a Produce, is the connection's last Produce
	// response, written and free to reuse (produceResponse); or nil.
	spareProduceResp *kmsg.ProduceResponse
}

// produceResponse is req's empty response: the spare one if the
// connection has one (its topics' capacity kept), else a new one.
func (r *Request) produceResponse(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := r.spareProduceResp
	if resp == nil {
		return req.ResponseKind().(*kmsg.ProduceResponse)
	}
	r.spareProduceResp = nil
	*resp = kmsg.ProduceResponse{Version: req.Version, Topics: resp.Topics[:0]}
	resp.Default()
	return resp
}

// handlerFunc serves one API. A failed topic or partition is a Kafka error
// code inside the response; a returned Go error closes the connection. A nil
// response with a nil error sends nothing (Produce with acks=0).
type handlerFunc func(s *Server, r *Request) (kmsg.Response, error)

// api is one API's entry in the routing table: the versions served and the
// handler. The same table is what ApiVersions advertises, so that nothing
// is advertised that is not served.
type api struct {
	key      int16
	min, max int16
	// advertisedMin is the min version ApiVersions reports; it equals min
	// except for Produce (see advertiseFrom).
	advertisedMin int16
	handle        handlerFunc
}

// apis is filled by each API file's init (register) and read-only after.
var apis = map[int16]api{}

// register adds an API to the routing table. Each API file calls it once
// from init, next to the comment listing the versions it serves.
func register(key, min, max int16, h handlerFunc) {
	if _, dup := apis[key]; dup {
		panic("protocol: API registered twice")
	}
	apis[key] = api{key: key, min: min, max: max, advertisedMin: min, handle: h}
}

// advertiseFrom makes ApiVersions report min as key's lowest version while
// requests below the registered min are still refused. Only Produce needs
// it: Kafka 4 advertises Produce v0-v2 without serving them (KAFKA-18659),
// because librdkafka disables compression when the advertised min is not 0.
func advertiseFrom(key, min int16) {
	a, ok := apis[key]
	if !ok {
		panic("protocol: advertiseFrom before register")
	}
	a.advertisedMin = min
	apis[key] = a
}
