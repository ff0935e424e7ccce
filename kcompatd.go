// Package kcompatd is an embeddable Kafka broker: a single node that
// speaks the Kafka wire protocol to stock clients and keeps each partition
// as a segmented log of v2 RecordBatches in Kafka's on-disk format.
//
// A Config goes in (Kafka's property names, Kafka's defaults), a running
// broker comes out, and Close stops it:
//
//	cfg := kcompatd.DefaultConfig()
//	cfg.LogDirs = t.TempDir()
//	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
//	b, err := kcompatd.New(cfg, logger)
//	...
//	client, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
//	...
//	b.Close()
//
// cmd/kcompatd is a thin main over this package.
package kcompatd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/cleaner"
	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/configdef"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

// Broker is a running kcompatd broker.
type Broker struct {
	log zerolog.Logger
	// lns are the listening sockets in listeners order: lns[0] is Addr;
	// a listener has more than one when its host name has several
	// addresses. lnOf names the listener each serves.
	lns    []net.Listener
	lnOf   map[net.Listener]*protocol.Listener
	server *protocol.Server
	groups *coordinator.Coordinator
	// shareState is the share coordinator (__share_group_state).
	shareState *sharestate.Coordinator
	txns       *coordinator.TxnCoordinator
	store      *partition.Store
	dir        string // the data dir
	// cleaner compacts and applies retention in the background.
	cleaner *cleaner.Cleaner
	// faults are the fault-injection rules (admin_http.go); admin is the
	// admin HTTP listener, nil when off.
	faults *protocol.Faults
	admin  *adminServer
	// metrics are served by the admin listener (metrics.go); nil when off.
	metrics *brokerMetrics

	advertised string // host:port given to clients in Metadata

	serveWG   sync.WaitGroup // one per Serve goroutine
	serveOnce sync.Once
	serveDone chan struct{} // closed when serving stops: Close, or a listener failed
	serveErr  error         // the failure; read after serveDone

	closeOnce sync.Once
	closeErr  error
}

// New validates cfg, opens the data dir and the listener and starts
// serving. It does nothing slow: with an empty data dir the broker answers
// Metadata within milliseconds of New being called.
func New(cfg Config, log zerolog.Logger) (*Broker, error) {
	start := time.Now() // wall time on purpose: start-up is measured, not simulated
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The broker defaults of topic configs by the names DescribeConfigs
	// reports them under (log.retention.hours=2 is log.retention.ms),
	// also when a Go caller set LogDefaults by hand.
	cfg.LogDefaults, _ = partition.ParseBrokerLogConfigs(cfg.LogDefaults)
	plan, cerr := cfg.resolveListeners()
	if cerr != nil { // Validate already checked; kept for safety
		return nil, cerr
	}
	for _, name := range plan.skipped {
		log.Info().Str("listener", name).Msg("ignoring controller listener")
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	limits, err := cfg.connectionLimits()
	if err != nil {
		return nil, err
	}
	var versions *kversion.Versions
	if cfg.KafkaVersion != "" {
		versions = kversion.FromString(cfg.KafkaVersion)
	}

	served, lerrs := cfg.buildListeners(plan)
	if len(lerrs) > 0 { // Validate already checked; kept for safety
		return nil, joinConfigErrors(lerrs)
	}
	var lns []net.Listener                        // every socket, in listeners order
	lnOf := map[net.Listener]*protocol.Listener{} // the listener each serves
	closeListeners := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for i, spec := range plan.listeners {
		opened := []net.Listener{cfg.Listener}
		if cfg.Listener == nil {
			var err error
			if opened, err = listen(spec.bind.host, spec.bind.port, log); err != nil {
				closeListeners()
				return nil, fmt.Errorf("kcompatd: opening listener %s: %w", spec.name, err)
			}
		}
		lns = append(lns, opened...)
		host, port, err := advertisedAddr(spec, opened[0].Addr())
		if err != nil {
			closeListeners()
			return nil, err
		}
		l := served[i]
		l.AdvertisedHost, l.AdvertisedPort = host, int32(port)
		for _, ln := range opened {
			lnOf[ln] = l
		}
	}
	first := served[0]
	advHost, advPort := first.AdvertisedHost, int(first.AdvertisedPort)

	var met *brokerMetrics
	if cfg.AdminListener != "" {
		met = newBrokerMetrics()
	}
	logDefaults, err := partition.BrokerDefaults(cfg.LogDefaults) // Validate checked them
	if err != nil {
		closeListeners()
		return nil, err
	}
	if cfg.LogInternalSegmentBytes > 0 {
		logDefaults.SegmentBytes = cfg.LogInternalSegmentBytes // tests: see Config.LogInternalSegmentBytes
	}
	store, err := partition.Open(partition.Config{
		Dir:                               configdef.SplitList(cfg.LogDirs)[0],
		NodeID:                            cfg.NodeID,
		Defaults:                          logDefaults,
		RecoveryCheckpointInterval:        time.Duration(cfg.LogFlushOffsetCheckpointIntervalMs) * time.Millisecond,
		ProducerIDExpirationMs:            int64(cfg.ProducerIDExpirationMs),
		ProducerIDExpirationCheckInterval: time.Duration(cfg.ProducerIDExpirationCheckIntervalMs) * time.Millisecond,
		OpenSegments:                      int(cfg.LogOpenSegmentsMax),
		Clock:                             clk,
		Logger:                            log,
		Observer:                          met.storeObserver(),
	})
	if err != nil {
		closeListeners()
		return nil, fmt.Errorf("kcompatd: opening log dir: %w", err)
	}
	startupTopics, err := parseStartupTopics(cfg.CreateTopics, logDefaults) // Validate checked it
	if err == nil {
		err = createStartupTopics(store, startupTopics, log)
	}
	if err != nil {
		store.Close()
		closeListeners()
		return nil, err
	}

	if cfg.SCRAMUsers != "" {
		n, err := bootstrapScramUsers(store, cfg.SCRAMUsers)
		if err != nil {
			store.Close()
			closeListeners()
			return nil, fmt.Errorf("kcompatd: storing kcompatd.scram.users: %w", err)
		}
		log.Info().Int("stored", n).Msg("SCRAM users from the configuration")
	}

	var authorizer *authz.Authorizer
	if strings.TrimSpace(cfg.AuthorizerClassName) != "" {
		authorizer = authz.New(authz.Config{
			SuperUsers:                authz.ParseSuperUsers(cfg.SuperUsers),
			AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound,
		}, store.ACLs(), store.WriteACLs)
		log.Info().Int("acls", len(store.ACLs())).Msg("authorizer enabled")
	}

	// The share coordinator first: the group coordinator initializes and
	// reads share-partition state through it.
	shareState, err := sharestate.New(shareStateConfig(cfg), store, clk, log)
	if err != nil {
		store.Close()
		closeListeners()
		return nil, fmt.Errorf("kcompatd: loading share group state: %w", err)
	}

	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	groups, err := coordinator.New(coordinator.Config{
		InitialRebalanceDelay:           time.Duration(cfg.GroupInitialRebalanceDelayMs) * time.Millisecond,
		MinSessionTimeout:               time.Duration(cfg.GroupMinSessionTimeoutMs) * time.Millisecond,
		MaxSessionTimeout:               time.Duration(cfg.GroupMaxSessionTimeoutMs) * time.Millisecond,
		MaxGroupSize:                    int(cfg.GroupMaxSize),
		OffsetsTopicPartitions:          cfg.OffsetsTopicNumPartitions,
		OffsetsRetention:                time.Duration(cfg.OffsetsRetentionMinutes) * time.Minute,
		OffsetsRetentionCheckInterval:   time.Duration(cfg.OffsetsRetentionCheckIntervalMs) * time.Millisecond,
		OffsetMetadataMaxBytes:          int(cfg.OffsetMetadataMaxBytes),
		ConsumerSessionTimeout:          time.Duration(cfg.ConsumerGroupSessionTimeoutMs) * time.Millisecond,
		ConsumerHeartbeatInterval:       time.Duration(cfg.ConsumerGroupHeartbeatIntervalMs) * time.Millisecond,
		ConsumerMaxSize:                 int(cfg.ConsumerGroupMaxSize),
		ConsumerAssignors:               configdef.SplitList(cfg.ConsumerGroupAssignors),
		ConsumerMigrationPolicy:         cfg.ConsumerGroupMigrationPolicy,
		DisableConsumerProtocol:         !slices.Contains(configdef.SplitList(cfg.GroupCoordinatorRebalanceProtocols), "consumer"),
		StreamsSessionTimeout:           time.Duration(cfg.StreamsGroupSessionTimeoutMs) * time.Millisecond,
		StreamsHeartbeatInterval:        time.Duration(cfg.StreamsGroupHeartbeatIntervalMs) * time.Millisecond,
		StreamsNumStandbyReplicas:       int(cfg.StreamsGroupNumStandbyReplicas),
		StreamsMaxSize:                  int(cfg.StreamsGroupMaxSize),
		StreamsInitialRebalanceDelay:    time.Duration(cfg.StreamsGroupInitialRebalanceDelayMs) * time.Millisecond,
		StreamsDisabled:                 !slices.Contains(configdef.SplitList(cfg.GroupCoordinatorRebalanceProtocols), "streams"),
		NodeID:                          cfg.NodeID,
		ShareSessionTimeout:             ms(cfg.ShareGroupSessionTimeoutMs),
		ShareMinSessionTimeout:          ms(cfg.ShareGroupMinSessionTimeoutMs),
		ShareMaxSessionTimeout:          ms(cfg.ShareGroupMaxSessionTimeoutMs),
		ShareHeartbeatInterval:          ms(cfg.ShareGroupHeartbeatIntervalMs),
		ShareMinHeartbeatInterval:       ms(cfg.ShareGroupMinHeartbeatIntervalMs),
		ShareMaxHeartbeatInterval:       ms(cfg.ShareGroupMaxHeartbeatIntervalMs),
		ShareMaxSize:                    int(cfg.ShareGroupMaxSize),
		ShareRecordLockDuration:         ms(cfg.ShareGroupRecordLockDurationMs),
		ShareMinRecordLockDuration:      ms(cfg.ShareGroupMinRecordLockDurationMs),
		ShareMaxRecordLockDuration:      ms(cfg.ShareGroupMaxRecordLockDurationMs),
		ShareDeliveryCountLimit:         int(cfg.ShareGroupDeliveryCountLimit),
		ShareMinDeliveryCountLimit:      int(cfg.ShareGroupMinDeliveryCountLimit),
		ShareMaxDeliveryCountLimit:      int(cfg.ShareGroupMaxDeliveryCountLimit),
		SharePartitionMaxRecordLocks:    int(cfg.ShareGroupPartitionMaxRecordLocks),
		ShareMinPartitionMaxRecordLocks: int(cfg.ShareGroupMinPartitionMaxRecordLocks),
		ShareMaxPartitionMaxRecordLocks: int(cfg.ShareGroupMaxPartitionMaxRecordLocks),
		ShareMaxShareSessions:           int(cfg.ShareGroupMaxShareSessions),
		GroupConfigDir:                  store.Dir(),
		SharePersister:                  shareState,
		Clock:                           clk,
		Logger:                          log,
	}, store)
	if err != nil {
		shareState.Close()
		store.Close()
		closeListeners()
		return nil, fmt.Errorf("kcompatd: loading groups: %w", err)
	}

	// After the group coordinator: completing a transaction left in
	// PrepareCommit at the crash completes its transactional offsets.
	txns, err := coordinator.NewTxnCoordinator(coordinator.TxnConfig{
		MaxTimeout:            time.Duration(cfg.TransactionMaxTimeoutMs) * time.Millisecond,
		TopicPartitions:       cfg.TransactionStateLogNumPartitions,
		TopicSegmentBytes:     cfg.TransactionStateLogSegmentBytes,
		AbortTimedOutInterval: time.Duration(cfg.TransactionAbortTimedOutCleanupIntervalMs) * time.Millisecond,
		RemoveExpiredInterval: time.Duration(cfg.TransactionRemoveExpiredCleanupIntervalMs) * time.Millisecond,
		IDExpiration:          time.Duration(cfg.TransactionalIDExpirationMs) * time.Millisecond,
		Clock:                 clk,
		Logger:                log,
	}, store, groups)
	if err != nil {
		groups.Close()
		shareState.Close()
		store.Close()
		closeListeners()
		return nil, fmt.Errorf("kcompatd: loading transactions: %w", err)
	}

	faults := &protocol.Faults{}
	var rack *string
	if cfg.BrokerRack != "" {
		rack = &cfg.BrokerRack
	}
	server, err := protocol.NewServer(protocol.Config{
		NodeID:                    cfg.NodeID,
		AdvertisedHost:            advHost,
		AdvertisedPort:            int32(advPort),
		Rack:                      rack,
		MaxRequestBytes:           cfg.SocketRequestMaxBytes,
		QueuedMaxRequestBytes:     queuedMaxRequestBytes(cfg.QueuedMaxRequestBytes),
		AutoCreateTopics:          cfg.AutoCreateTopicsEnable,
		NumPartitions:             cfg.NumPartitions,
		DefaultReplicationFactor:  int16(cfg.DefaultReplicationFactor),
		DeleteTopicEnable:         cfg.DeleteTopicEnable,
		Versions:                  versions,
		BrokerConfigs:             cfg.brokerConfigs(),
		Clock:                     clk,
		Logger:                    log,
		Groups:                    groups,
		Txns:                      txns,
		VerifyTxnPartition:        txns.VerifyProducePartition,
		Connections:               &limits,
		Faults:                    faults,
		SASLMaxReceiveBytes:       cfg.SASLServerMaxReceiveSize,
		FailedAuthenticationDelay: failedAuthenticationDelayMs * time.Millisecond,
		Observer:                  met.serverObserver(),
		Authorizer:                authorizer,
	}, store)
	if err != nil {
		txns.Close()
		groups.Close()
		shareState.Close()
		store.Close()
		closeListeners()
		return nil, fmt.Errorf("kcompatd: %w", err)
	}

	logCleaner := cleaner.New(store, cleaner.Config{
		Enable:                   cfg.LogCleanerEnable,
		Threads:                  int(cfg.LogCleanerThreads),
		BackoffMs:                cfg.LogCleanerBackoffMs,
		DedupeBufferSize:         cfg.LogCleanerDedupeBufferSize,
		IOMaxBytesPerSecond:      cfg.LogCleanerIoMaxBytesPerSecond,
		RetentionCheckIntervalMs: cfg.LogRetentionCheckIntervalMs,
		Clock:                    clk,
		Logger:                   log,
	})
	logCleaner.Start()
	met.register(store, groups, txns, logCleaner)

	b := &Broker{
		cleaner:    logCleaner,
		log:        log,
		lns:        lns,
		lnOf:       lnOf,
		server:     server,
		groups:     groups,
		shareState: shareState,
		txns:       txns,
		store:      store,
		dir:        configdef.SplitList(cfg.LogDirs)[0],
		advertised: net.JoinHostPort(advHost, strconv.Itoa(advPort)),
		serveDone:  make(chan struct{}),
		faults:     faults,
		metrics:    met,
	}
	if cfg.AdminListener != "" {
		if err := b.startAdmin(cfg.AdminListener); err != nil {
			logCleaner.Close()
			server.Close()
			txns.Close()
			groups.Close()
			shareState.Close()
			store.Close()
			closeListeners()
			return nil, err
		}
	}
	for _, ln := range lns {
		b.serveWG.Add(1)
		go func() {
			defer b.serveWG.Done()
			if err := server.ServeListener(ln, lnOf[ln]); err != nil {
				b.stopServing(err)
			}
		}()
	}
	go func() {
		b.serveWG.Wait()
		b.stopServing(nil)
	}()
	ev := log.Info()
	if len(lns) > 1 {
		also := make([]string, 0, len(lns)-1)
		for _, ln := range lns[1:] {
			also = append(also, ln.Addr().String())
		}
		ev = ev.Strs("also_listening", also)
	}
	if b.admin != nil {
		ev = ev.Str("admin", b.admin.ln.Addr().String())
	}
	listening := zerolog.Dict() // each listener's first socket
	for _, l := range served {
		listening = listening.Str(l.Name, b.ListenerAddr(l.Name).String())
	}
	ev.Str("addr", lns[0].Addr().String()).
		Dict("listener_addrs", listening).
		Str("advertised", b.advertised).
		Str("log_dir", configdef.SplitList(cfg.LogDirs)[0]).
		Int32("node_id", cfg.NodeID).
		Str("cluster_id", store.ClusterID()).
		Int64("recovery_bytes_read", store.RecoveryBytesRead()).
		Dur("startup", time.Since(start)).
		Msg("broker started")
	return b, nil
}

// stopServing records why serving stopped (nil: Close) and closes Done,
// once.
func (b *Broker) stopServing(err error) {
	b.serveOnce.Do(func() {
		b.serveErr = err
		close(b.serveDone)
	})
}

// listen opens the client listener. An IP literal or an empty host (every
// interface) is one socket. A host name is every address it resolves to
// on one port, IPv4 first: "localhost" is 127.0.0.1 and ::1, and clients
// that try ::1 first and do not fall back (kafkajs on Node 17+) must find
// the broker there too. Only the first address must work; a later one
// that cannot be bound (IPv6 disabled) is logged and skipped.
func listen(host string, port int, log zerolog.Logger) ([]net.Listener, error) {
	if host == "" || net.ParseIP(host) != nil {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return nil, err
		}
		return []net.Listener{ln}, nil
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(context.Background(), host)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, a := range addrs {
		if a.Zone == "" && !slices.ContainsFunc(ips, a.IP.Equal) {
			ips = append(ips, a.IP)
		}
	}
	slices.SortStableFunc(ips, func(a, b net.IP) int {
		return cmp.Compare(boolInt(a.To4() == nil), boolInt(b.To4() == nil))
	})
	if len(ips) == 0 {
		return nil, fmt.Errorf("no usable address for %s", host)
	}
	var lns []net.Listener
	for i, ip := range ips {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
		if err != nil {
			if i == 0 {
				return nil, err
			}
			log.Warn().Err(err).Str("host", host).Str("ip", ip.String()).Msg("skipping an address of the listener's host")
			continue
		}
		if i == 0 {
			port = ln.Addr().(*net.TCPAddr).Port // the others share port 0's pick
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// advertisedAddr picks what Metadata tells clients of a listener: its
// advertised.listeners entry when set (port 0 meaning the bound port, as
// in Kafka), else the bound listener's configured host (its IP when the
// listener was handed in) and actual port. An empty host means this
// machine's host name, as Kafka uses its canonical host name.
func advertisedAddr(plan listenerSpec, bound net.Addr) (string, int, error) {
	boundHost, boundPortText, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "", 0, fmt.Errorf("kcompatd: listener address %s: %w", bound, err)
	}
	boundPort, err := strconv.Atoi(boundPortText)
	if err != nil {
		return "", 0, fmt.Errorf("kcompatd: listener address %s: %w", bound, err)
	}
	host, port := boundHost, boundPort
	switch {
	case plan.advertised != nil:
		host = plan.advertised.host
		if plan.advertised.port != 0 {
			port = plan.advertised.port
		}
	case plan.bind != nil:
		host = plan.bind.host
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, err = os.Hostname(); err != nil {
			return "", 0, fmt.Errorf("kcompatd: no host to advertise: %w", err)
		}
	}
	return host, port, nil
}

// Addr is the address the broker's first listener listens on (with the
// actual port when the configured one was 0).
func (b *Broker) Addr() net.Addr { return b.lns[0].Addr() }

// ListenerAddr is the address the listener named name (as in listeners,
// any case) listens on, nil if there is none.
func (b *Broker) ListenerAddr(name string) net.Addr {
	for _, ln := range b.lns {
		if strings.EqualFold(b.lnOf[ln].Name, name) {
			return ln.Addr()
		}
	}
	return nil
}

// AdvertisedAddr is the host:port Metadata gives clients.
func (b *Broker) AdvertisedAddr() string { return b.advertised }

// Done is closed when the broker stops serving, after Close or because
// the listener failed; Err then tells which.
func (b *Broker) Done() <-chan struct{} { return b.serveDone }

// Err is the error that stopped serving, nil after a clean Close. It
// blocks until Done is closed.
func (b *Broker) Err() error {
	<-b.serveDone
	return b.serveErr
}

// Close stops accepting connections, closes every connection (cancelling
// in-flight requests) and then closes the store, which writes its
// checkpoints and releases the data dir's lock. It is safe to call more
// than once; later calls return the first call's result.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		start := time.Now()
		var errs []error
		if b.admin != nil {
			b.admin.srv.Close()
		}
		if err := b.server.Close(); err != nil {
			errs = append(errs, fmt.Errorf("kcompatd: closing server: %w", err))
		}
		// The server closes the listeners it serves; closing them again
		// covers a Serve that returned early and is harmless otherwise.
		for _, ln := range b.lns {
			ln.Close()
		}
		b.serveWG.Wait()
		// Done is closed once Close returns, not only once the watching
		// goroutine has run; a listener's error recorded first stays.
		b.stopServing(nil)
		// After the server, so no request is still writing to
		// __consumer_offsets; before the store, which that topic lives in.
		// Before the group coordinator, whose transactional offsets its
		// markers complete.
		b.txns.Close()
		b.groups.Close()
		// After the group coordinator, which writes share state through it.
		b.shareState.Close()
		// Before the store: a pass in flight is aborted and its output
		// removed.
		b.cleaner.Close()
		if err := b.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("kcompatd: closing store: %w", err))
		}
		b.closeErr = errors.Join(errs...)
		ev := b.log.Info()
		if b.closeErr != nil {
			ev = b.log.Error().Err(b.closeErr)
		}
		ev.Dur("shutdown", time.Since(start)).Msg("broker stopped")
	})
	return b.closeErr
}

// queuedMaxRequestBytes maps queued.max.request.bytes to the protocol
// server's setting: Kafka reads zero and below as unbounded, where the
// server's zero means its default.
func queuedMaxRequestBytes(v int64) int64 {
	if v <= 0 {
		return -1
	}
	return v
}
