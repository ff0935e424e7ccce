// Package protocol is kcompatd's network face: it accepts connections,
// reads size-prefixed Kafka request frames, decodes request headers and
// bodies with kmsg, dispatches each request to its API's handler (one file
// per API, registered in registry.go), and writes the responses back in
// request order.
//
// Connection model: each connection has a reader goroutine, which owns the
// socket's read side, and a handler goroutine, which serves one request at a
// time and writes its response before taking the next one, as Kafka does by
// muting a channel while a request is in flight. The reader stays at most one
// frame ahead of the handler; while it waits for the handler it notices the
// peer going away (a read of the next size prefix fails).
//
// Memory one connection can hold, at worst (README's Limits says the
// same): two request frames, the one being served and the one read ahead,
// each at most Config.MaxRequestBytes (socket.request.max.bytes, 100 MiB by
// default), plus the decoded form of the one being served, at most
// maxDecodedBytes (256 MiB; decode_limits.go); a 16 KiB read buffer; and
// one response being written, for a Fetch at most fetch.max.bytes (55 MiB,
// fixed at Kafka's default) of record bytes, with its encode buffer kept
// between responses only up to 1 MiB. With the defaults that is about 512
// MiB per connection. Across
// connections, request frames read and not yet handled can be bounded by
// queued.max.request.bytes (requestMemory, limits.go; unbounded by
// default, as in Kafka): past it, readers wait before reading the next
// body. A frame read ahead counts until its own handler returns, so it
// stays counted behind a long poll; and the frame being answered is held,
// uncounted, while its response is written.
//
// How long a client that stops reading holds its response: as in Kafka's
// Selector, a connection is idle while it receives no bytes and its socket
// takes no bytes of a response (conn.send); any progress makes it active
// again, so a slow but steady reader is never cut short. After
// connections.max.idle.ms (10 minutes by default) of that, it is closed and
// everything it held is freed. With connections.max.idle.ms negative it is
// never closed, as in Kafka; Kafka's Fetch responses refer to the log files
// while ours hold the bytes, so there a stalled reader costs up to 55 MiB
// until it disconnects.
//
// Peer going away: at the end of stream (the peer shut down its write
// side, or closed: a read cannot tell them apart) the requests already
// read are still handled and answered, a long-polling Fetch answering at
// once with what it has, and then the connection is closed. A reset or
// other read error cancels every request of the connection. Accepted TCP
// connections have keepalive on (conn.go), so a peer that vanished without
// a FIN is found in minutes even while a request is in flight.
//
// What closes a connection (and only that connection): a frame size below 0
// or above Config.MaxRequestBytes (after the requests before it are
// answered), a truncated frame, an unknown API key, a
// version this server does not serve (except ApiVersions, which gets Kafka's
// UNSUPPORTED_VERSION answer), a body that does not decode, a handler
// returning a Go error, a panic inside a handler (recovered and logged),
// and idleness past connections.max.idle.ms. A new connection over
// max.connections.per.ip is closed at once; at max.connections the accept
// loop waits for a connection to close (limits.go).
package protocol

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

// Config is what the network face needs to know. Start from DefaultConfig:
// its zero value is not Kafka's defaults (AutoCreateTopics is true there).
type Config struct {
	NodeID int32 // node.id
	// AdvertisedHost and AdvertisedPort are returned in Metadata
	// (advertised.listeners, else the listener's own address).
	AdvertisedHost string
	AdvertisedPort int32
	// Rack is broker.rack, returned in Metadata v1+ (nil: none).
	Rack *string
	// MaxRequestBytes bounds a request frame (socket.request.max.bytes,
	// default 104857600). Zero means the default.
	MaxRequestBytes int32
	// AutoCreateTopics is auto.create.topics.enable (default true).
	AutoCreateTopics bool
	// NumPartitions is num.partitions for auto-created topics and
	// CreateTopics with -1 (default 1). Zero means the default.
	NumPartitions int32
	// DefaultReplicationFactor is default.replication.factor (default 1),
	// reported for topics created with -1. Only 1 can be served by a single
	// broker; zero means the default.
	DefaultReplicationFactor int16
	// DeleteTopicEnable is delete.topic.enable (default true).
	DeleteTopicEnable bool
	// MaxDecompressedBytes bounds the inflated size of one produced batch,
	// in bytes; a batch inflating past it is refused with
	// MESSAGE_TOO_LARGE. Kafka has no such bound (it inflates as a
	// stream); ours caps the memory one request can make us allocate.
	// Zero means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int
	// Versions caps the advertised and served versions at an older Kafka
	// release (kversion.FromString("3.5")); nil serves everything
	// implemented. An API the release lacks is neither advertised nor
	// served.
	Versions *kversion.Versions
	// BrokerConfigs are the broker's static properties, which
	// DescribeConfigs reports for the BROKER resource (describe_configs.go).
	BrokerConfigs []BrokerConfig
	Clock         clock.Clock // nil: clock.Real{}
	Logger        zerolog.Logger
	// Groups is the group coordinator, required (NewServer fails without
	// it). The caller owns it: it is started before NewServer and closed
	// after Server.Close.
	Groups *coordinator.Coordinator
	// Connections bounds connections: max.connections, per IP, idle
	// timeout (limits.go). Nil: DefaultConnectionLimits.
	Connections *ConnectionLimits
	// QueuedMaxRequestBytes is queued.max.request.bytes: the bytes of
	// request frames read and not yet handled, across all connections,
	// beyond which reading waits (requestMemory in limits.go). Kafka's
	// default is -1, unbounded, and so is DefaultQueuedMaxRequestBytes,
	// which zero also means. Negative: unbounded. A frame read ahead
	// behind a long-waiting request (a Fetch long poll, a JoinGroup) stays
	// counted while it waits, so a small pool can stall readers until
	// that request ends.
	QueuedMaxRequestBytes int64
	// VerifyTxnPartition is the transaction coordinator's answer to
	// "is this partition part of the producer's ongoing transaction?",
	// asked before a transactional batch is appended (Kafka 3.6+'s
	// transaction verification, KIP-890 part 1): 0 when it is, else the
	// error code to answer the partition with. Nil: Txns's
	// VerifyProducePartition.
	VerifyTxnPartition func(transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) int16
	// AddTxnPartition adds a partition to the producer's transaction
	// before a transactional batch of Produce v12+ is appended
	// (transaction.version 2, KIP-890 part 2), with VerifyTxnPartition's
	// codes. Nil: Txns's AddProducePartition.
	AddTxnPartition func(transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) int16
	// SASLMaxReceiveBytes bounds a frame before a SASL client has
	// authenticated (sasl.server.max.receive.size, default 524288); zero
	// means the default.
	SASLMaxReceiveBytes int32
	// FailedAuthenticationDelay is how long a failed authentication waits
	// before it is answered and the connection closed
	// (connection.failed.authentication.delay.ms, 100 ms); zero means
	// the default, negative none.
	FailedAuthenticationDelay time.Duration
	// Txns is the transaction coordinator, required (NewServer fails
	// without it), owned by the caller as Groups is; VerifyTxnPartition
	// (if nil) is its check.
	Txns *coordinator.TxnCoordinator
	// QuotaLookupHost resolves the host name of an ip entity in
	// AlterClientQuotas, which must resolve to be valid (Java's
	// InetAddress.getByName); tests stub it so that they never ask a
	// resolver. Nil: net.DefaultResolver.LookupHost.
	QuotaLookupHost func(ctx context.Context, host string) ([]string, error)
	// Faults are fault-injection rules (faults.go), owned by the caller,
	// who may change them while the server runs; nil: none.
	Faults *Faults
	// Authorizer checks every request against the ACLs
	// (authorizer.class.name set; authorize.go); nil: no authorizer,
	// everything allowed and the ACL APIs answer SECURITY_DISABLED.
	Authorizer *authz.Authorizer
	// Observer is told of connections (labelled with their listener's
	// name) and requests, for metrics (observer.go); nil: none.
	Observer Observer
}

// Defaults for Config's zero fields.
const (
	DefaultMaxRequestBytes      = 100 << 20 // socket.request.max.bytes
	DefaultMaxDecompressedBytes = 64 << 20
	// DefaultQueuedMaxRequestBytes is Kafka's default: unbounded (each
	// connection still holds at most two request frames).
	DefaultQueuedMaxRequestBytes = -1
)

// DefaultConfig returns Kafka's defaults for the settings in Config.
func DefaultConfig() Config {
	return Config{
		AdvertisedHost:           "localhost",
		AdvertisedPort:           9092,
		MaxRequestBytes:          DefaultMaxRequestBytes,
		AutoCreateTopics:         true,
		NumPartitions:            1,
		DefaultReplicationFactor: 1,
		DeleteTopicEnable:        true,
		MaxDecompressedBytes:     DefaultMaxDecompressedBytes,
		QueuedMaxRequestBytes:    DefaultQueuedMaxRequestBytes,
	}
}

// Server serves the Kafka protocol over listeners it is given.
type Server struct {
	cfg           Config
	store         *partition.Store
	log           zerolog.Logger
	clock         clock.Clock
	fetchSessions *fetchSessions
	// groups and txns are Config.Groups and Config.Txns, never nil from
	// NewServer. (The handlers still answer COORDINATOR_NOT_AVAILABLE
	// for a nil one, as on a Server built by hand in tests.)
	groups *coordinator.Coordinator
	txns   *coordinator.TxnCoordinator
	// features are the feature levels ApiVersions reports (features.go).
	features *featureState

	// table is apis capped by cfg.Versions: what is advertised and served.
	table map[int16]api

	// ctx is cancelled by Close; every connection's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex // guards closed, listeners, conns
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	sweeping  bool // the idle sweeper runs (limits.go)
	// swept, if set before serving, is called after each idle sweep
	// with the number of connections it closed, once its next timer is
	// armed (tests).
	swept func(closed int)
	// connDone, if set before serving, is called once a connection has
	// ended and given back everything it held (tests).
	connDone func()
	// inflated, if set before serving, is called each time the produce
	// path inflates a compressed batch (tests: a batch is inflated once).
	inflated func()

	// quotas counts connections against max.connections and per IP.
	quotas *connQuotas
	// reqMem counts request frames against queued.max.request.bytes.
	reqMem *requestMemory
	// idle is connections.max.idle.ms; negative: never.
	idle time.Duration
	// writeStep is how often, in real time, a response write that the
	// socket does not take at once stops to record its progress (conn.send);
	// derived from idle, set by tests before serving.
	writeStep time.Duration

	// saslSecret keys the made-up SCRAM credentials of unknown users
	// (scram.go) and PLAIN's dummy password.
	saslSecret []byte
	// saslReauthentications and saslSessionsExpired count successful
	// re-authentications and connections closed for an expired session
	// (Kafka's successful-reauthentication-total and
	// expired-connections-killed-count).
	saslReauthentications, saslSessionsExpired atomic.Int64

	// wg counts every goroutine the server starts (see goroutine), so
	// Close can wait for all of them.
	wg sync.WaitGroup
}

// NewServer returns a server over store. cfg.Groups and cfg.Txns are
// required: it fails without them.
func NewServer(cfg Config, store *partition.Store) (*Server, error) {
	if cfg.Groups == nil {
		return nil, errors.New("protocol: NewServer: Config.Groups (the group coordinator) is required")
	}
	if cfg.Txns == nil {
		return nil, errors.New("protocol: NewServer: Config.Txns (the transaction coordinator) is required")
	}
	if cfg.VerifyTxnPartition == nil {
		cfg.VerifyTxnPartition = cfg.Txns.VerifyProducePartition
	}
	if cfg.AddTxnPartition == nil {
		cfg.AddTxnPartition = cfg.Txns.AddProducePartition
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.MaxDecompressedBytes <= 0 {
		cfg.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.SASLMaxReceiveBytes <= 0 {
		cfg.SASLMaxReceiveBytes = DefaultSASLMaxReceiveBytes
	}
	if cfg.FailedAuthenticationDelay == 0 {
		cfg.FailedAuthenticationDelay = DefaultFailedAuthenticationDelay
	}
	if cfg.QueuedMaxRequestBytes == 0 {
		cfg.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	}
	if cfg.QuotaLookupHost == nil {
		cfg.QuotaLookupHost = net.DefaultResolver.LookupHost
	}
	limits := DefaultConnectionLimits()
	if cfg.Connections != nil {
		limits = *cfg.Connections
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:       cfg,
		store:     store,
		log:       cfg.Logger,
		clock:     cfg.Clock,
		table:     servedVersions(cfg.Versions),
		ctx:       ctx,
		cancel:    cancel,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
		quotas:    newConnQuotas(limits),
		reqMem:    newRequestMemory(cfg.QueuedMaxRequestBytes, cfg.Logger),
		idle:      limits.idleTimeout(),
		writeStep: writeStepFor(limits.idleTimeout()),

		saslSecret: newSASLSecret(),
	}
	s.quotas.log = cfg.Logger
	s.fetchSessions = newFetchSessions(cfg)
	s.groups = cfg.Groups
	s.txns = cfg.Txns
	s.features = newFeatureState(cfg.Versions, s.savedFeatureLevels())
	if err := s.features.resave(s.store.WriteFeatureLevels); err != nil {
		// Served anyway: only a later start could then report an epoch
		// already seen with other levels.
		s.log.Warn().Err(err).Msg("saving the finalized feature levels of this start failed")
	}
	s.txns.SetTransactionVersion(s.features.level(transactionVersionFeature))
	return s, nil
}

// servedVersions caps every registered API at the release vs (nil: no cap).
// ApiVersions is kept even if vs lacks it, so a client can always learn
// what is served.
func servedVersions(vs *kversion.Versions) map[int16]api {
	t := make(map[int16]api, len(apis))
	for k, a := range apis {
		if vs != nil {
			max, ok := vs.LookupMaxKeyVersion(k)
			if !ok && k == kmsg.ApiVersions.Int16() {
				max, ok = 0, true
			}
			if !ok {
				continue
			}
			if max < a.max {
				a.max = max
			}
		}
		if m := releaseMinVersion(vs, k); m > a.min {
			a.min, a.advertisedMin = m, max(a.advertisedMin, m)
		}
		if a.max < a.min {
			continue
		}
		t[k] = a
	}
	return t
}

// Serve accepts connections on ln until Close, as a PLAINTEXT listener
// advertising Config.AdvertisedHost and AdvertisedPort; see ServeListener.
func (s *Server) Serve(ln net.Listener) error {
	return s.ServeListener(ln, s.defaultListener())
}

// ServeListener accepts connections on ln until Close, serving them as the
// listener l says (security protocol, advertised address); it returns nil
// after Close, or the listener's error if it fails for good (or l is not
// servable). Temporary accept errors (too many open files) are retried with
// a backoff.
func (s *Server) ServeListener(ln net.Listener, l *Listener) error {
	if err := l.check(); err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	s.log.Info().Str("addr", ln.Addr().String()).Str("listener", l.Name).Str("security_protocol", string(l.Protocol)).Msg("listening")
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return nil
			}
			if !isTemporary(err) {
				s.log.Error().Err(err).Str("addr", ln.Addr().String()).Msg("accept failed; listener stopped")
				return err
			}
			// Back off as net/http and NATS do, so a full file table
			// does not spin the accept loop.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay *= 2; delay > time.Second {
				delay = time.Second
			}
			s.log.Warn().Err(err).Dur("retry_in", delay).Msg("temporary accept error")
			t := s.clock.NewTimer(delay)
			select {
			case <-t.C():
			case <-s.ctx.Done():
				t.Stop()
				return nil
			}
			continue
		}
		delay = 0
		ip := remoteIP(nc.RemoteAddr())
		if err := s.quotas.acquire(s.ctx, ip); err != nil {
			nc.Close()
			var tm *errTooManyConnections
			if errors.As(err, &tm) {
				s.log.Info().Str("remote", addrString(nc.RemoteAddr())).Int32("max", tm.max).
					Msg("rejected connection: address already has the configured maximum of connections")
				continue
			}
			return nil // closing
		}
		if !s.startConn(nc, ip, l) {
			nc.Close()
			s.quotas.release(ip)
			return nil
		}
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// goroutine runs f on a goroutine counted in s.wg. REQUIRES: s.mu held and
// the server not closed, so that Close's Wait cannot miss it.
func (s *Server) goroutineLocked(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// Close stops accepting, closes every connection, cancels in-flight
// handlers and waits for all goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	s.cancel()
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.log.Info().Msg("protocol server closed")
	return nil
}
