package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"maps"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/coordinator/sharefetch"
	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// OffsetsTopic is the internal topic holding group metadata and committed
// offsets.
const OffsetsTopic = "__consumer_offsets"

// Config is what the group coordinator needs. Start from DefaultConfig.
type Config struct {
	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members (group.initial.rebalance.delay.ms,
	// default 3 s).
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound a member's session
	// timeout (group.min.session.timeout.ms, default 6 s;
	// group.max.session.timeout.ms, default 30 min).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxGroupSize is group.max.size (default math.MaxInt32).
	MaxGroupSize int
	// OffsetsTopicPartitions is offsets.topic.num.partitions (default 50),
	// used when __consumer_offsets is created.
	OffsetsTopicPartitions int32
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes (default
	// 100 MiB).
	OffsetsTopicSegmentBytes int32
	// OffsetsRetention is offsets.retention.minutes (default 7 days).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms
	// (default 10 min).
	OffsetsRetentionCheckInterval time.Duration
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes (default 4096).
	OffsetMetadataMaxBytes int

	// ConsumerSessionTimeout is a KIP-848 member's session timeout
	// (group.consumer.session.timeout.ms, default 45 s).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is the heartbeat interval told to KIP-848
	// members (group.consumer.heartbeat.interval.ms, default 5 s).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerMaxSize is group.consumer.max.size (default
	// math.MaxInt32).
	ConsumerMaxSize int
	// ConsumerAssignors are the server-side assignors offered, the first
	// the default (group.consumer.assignors, default uniform, range).
	ConsumerAssignors []string
	// ConsumerRegexRefreshInterval is how often a subscribed regular
	// expression is resolved again against the topics
	// (group.consumer.regex.refresh.interval.ms, default 10 s).
	ConsumerRegexRefreshInterval time.Duration
	// ConsumerMigrationPolicy is group.consumer.migration.policy: which
	// online conversions between classic and consumer groups with
	// members are allowed (MigrationBidirectional, the default,
	// MigrationUpgrade, MigrationDowngrade, MigrationDisabled).
	ConsumerMigrationPolicy string
	// DisableConsumerProtocol is group.coordinator.rebalance.protocols
	// without "consumer": ConsumerGroupHeartbeat and
	// ConsumerGroupDescribe answer UNSUPPORTED_VERSION, as Kafka's.
	DisableConsumerProtocol bool

	// Share groups (KIP-932): group.share.session.timeout.ms (default
	// 45 s) within group.share.min/max.session.timeout.ms (45 s, 60 s);
	// group.share.heartbeat.interval.ms (5 s) within its min/max (5 s,
	// 15 s); group.share.max.size (200).
	ShareSessionTimeout, ShareMinSessionTimeout, ShareMaxSessionTimeout          time.Duration
	ShareHeartbeatInterval, ShareMinHeartbeatInterval, ShareMaxHeartbeatInterval time.Duration
	ShareMaxSize                                                                 int
	// group.share.record.lock.duration.ms (30 s) within its min/max (15 s,
	// 60 s); group.share.delivery.count.limit (5) within 2..10;
	// group.share.partition.max.record.locks (2000) within 100..4000;
	// group.share.max.share.sessions (2000).
	ShareRecordLockDuration, ShareMinRecordLockDuration, ShareMaxRecordLockDuration                time.Duration
	ShareDeliveryCountLimit, ShareMinDeliveryCountLimit, ShareMaxDeliveryCountLimit                int
	SharePartitionMaxRecordLocks, ShareMinPartitionMaxRecordLocks, ShareMaxPartitionMaxRecordLocks int
	ShareMaxShareSessions                                                                          int
	// SharePersister keeps the share-partitions' state (the share
	// coordinator, coordinator/sharestate). Nil: kept in memory, lost on
	// a restart. The one place the durable store is wired in (kcompatd.go).
	SharePersister sharestate.Persister
	// ConsumerMin/MaxSessionTimeout and ConsumerMin/MaxHeartbeatInterval
	// bound the consumer.* group configs (group.consumer.min/max.*;
	// default 45 s-60 s and 5 s-15 s).
	ConsumerMinSessionTimeout, ConsumerMaxSessionTimeout       time.Duration
	ConsumerMinHeartbeatInterval, ConsumerMaxHeartbeatInterval time.Duration
	// NodeID is node.id: the leader the share-fetch path names.
	NodeID int32
	// GroupConfigDir is where the group config overrides are kept (the
	// data dir); "" keeps them in memory.
	GroupConfigDir string

	// StreamsSessionTimeout, StreamsHeartbeatInterval,
	// StreamsNumStandbyReplicas and StreamsMaxSize are the broker
	// defaults of streams groups (group.streams.session.timeout.ms,
	// default 45 s; group.streams.heartbeat.interval.ms, 5 s;
	// group.streams.num.standby.replicas, 0; group.streams.max.size).
	StreamsSessionTimeout     time.Duration
	StreamsHeartbeatInterval  time.Duration
	StreamsNumStandbyReplicas int
	StreamsMaxSize            int
	// StreamsInitialRebalanceDelay delays a new streams group's first
	// assignment (group.streams.initial.rebalance.delay.ms, default 3 s;
	// 0: none).
	StreamsInitialRebalanceDelay time.Duration
	// StreamsDisabled refuses streams groups (UNSUPPORTED_VERSION), as
	// Kafka without streams in group.coordinator.rebalance.protocols.
	StreamsDisabled bool
	Clock           clock.Clock // nil: clock.Real{}
	Logger          zerolog.Logger
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay:         3 * time.Second,
		MinSessionTimeout:             6 * time.Second,
		MaxSessionTimeout:             30 * time.Minute,
		MaxGroupSize:                  math.MaxInt32,
		OffsetsTopicPartitions:        50,
		OffsetsTopicSegmentBytes:      100 << 20,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetMetadataMaxBytes:        4096,
		ConsumerSessionTimeout:        45 * time.Second,
		ConsumerHeartbeatInterval:     5 * time.Second,
		ConsumerMaxSize:               math.MaxInt32,
		ConsumerAssignors:             []string{UniformAssignor, RangeAssignor},
		ConsumerRegexRefreshInterval:  10 * time.Second,
		ConsumerMigrationPolicy:       MigrationBidirectional,

		ConsumerMinSessionTimeout:       45 * time.Second,
		ConsumerMaxSessionTimeout:       60 * time.Second,
		ConsumerMinHeartbeatInterval:    5 * time.Second,
		ConsumerMaxHeartbeatInterval:    15 * time.Second,
		ShareSessionTimeout:             45 * time.Second,
		ShareMinSessionTimeout:          45 * time.Second,
		ShareMaxSessionTimeout:          60 * time.Second,
		ShareHeartbeatInterval:          5 * time.Second,
		ShareMinHeartbeatInterval:       5 * time.Second,
		ShareMaxHeartbeatInterval:       15 * time.Second,
		ShareMaxSize:                    200,
		ShareRecordLockDuration:         30 * time.Second,
		ShareMinRecordLockDuration:      15 * time.Second,
		ShareMaxRecordLockDuration:      60 * time.Second,
		ShareDeliveryCountLimit:         5,
		ShareMinDeliveryCountLimit:      2,
		ShareMaxDeliveryCountLimit:      10,
		SharePartitionMaxRecordLocks:    2000,
		ShareMinPartitionMaxRecordLocks: 100,
		ShareMaxPartitionMaxRecordLocks: 4000,
		ShareMaxShareSessions:           2000,
		StreamsSessionTimeout:           45 * time.Second,
		StreamsHeartbeatInterval:        5 * time.Second,
		StreamsMaxSize:                  math.MaxInt32,
		StreamsInitialRebalanceDelay:    3 * time.Second,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = d.MinSessionTimeout
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = d.MaxSessionTimeout
	}
	if c.MaxGroupSize <= 0 {
		c.MaxGroupSize = d.MaxGroupSize
	}
	if c.OffsetsTopicPartitions <= 0 {
		c.OffsetsTopicPartitions = d.OffsetsTopicPartitions
	}
	if c.OffsetsTopicSegmentBytes <= 0 {
		c.OffsetsTopicSegmentBytes = d.OffsetsTopicSegmentBytes
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = d.OffsetsRetention
	}
	if c.OffsetsRetentionCheckInterval <= 0 {
		c.OffsetsRetentionCheckInterval = d.OffsetsRetentionCheckInterval
	}
	if c.OffsetMetadataMaxBytes <= 0 {
		c.OffsetMetadataMaxBytes = d.OffsetMetadataMaxBytes
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = d.ConsumerSessionTimeout
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = d.ConsumerHeartbeatInterval
	}
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = d.ConsumerMaxSize
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = d.ConsumerAssignors
	}
	if c.ConsumerRegexRefreshInterval <= 0 {
		c.ConsumerRegexRefreshInterval = d.ConsumerRegexRefreshInterval
	}
	switch c.ConsumerMigrationPolicy {
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
	default:
		c.ConsumerMigrationPolicy = d.ConsumerMigrationPolicy
	}
	c.shareDefaults(d)
	if c.StreamsSessionTimeout <= 0 {
		c.StreamsSessionTimeout = d.StreamsSessionTimeout
	}
	if c.StreamsHeartbeatInterval <= 0 {
		c.StreamsHeartbeatInterval = d.StreamsHeartbeatInterval
	}
	if c.StreamsNumStandbyReplicas < 0 {
		c.StreamsNumStandbyReplicas = 0
	}
	if c.StreamsMaxSize <= 0 {
		c.StreamsMaxSize = d.StreamsMaxSize
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}

// Coordinator is the classic group coordinator of a single broker: it is
// the coordinator of every group.
type Coordinator struct {
	cfg   Config
	store *partition.Store
	log   zerolog.Logger
	clock clock.Clock

	topicMu sync.Mutex // serializes creating __consumer_offsets

	mu     sync.Mutex // guards groups, closed
	groups map[string]*group
	closed bool

	quit chan struct{} // closed by Close: every group goroutine exits
	wg   sync.WaitGroup

	txnIdx txnIndex // groups with open transactions, by producer id (txn_offsets.go)

	// loadedPartitions are the groups whose records load found in another
	// __consumer_offsets partition than PartitionFor's (OffsetsPartition);
	// written by load before any group runs, read-only after.
	loadedPartitions map[string]int32

	groupCfgs *GroupConfigs        // group config overrides (group_configs.go)
	persister sharestate.Persister // share-partition state (share groups)
	share     *sharefetch.Manager  // the share-fetch path
}

// New returns a coordinator over store, loading every group and committed
// offset found in __consumer_offsets, and starts its background offset
// expiry.
func New(cfg Config, store *partition.Store) (*Coordinator, error) {
	cfg = cfg.withDefaults()
	c := &Coordinator{
		cfg:    cfg,
		store:  store,
		log:    cfg.Logger,
		clock:  cfg.Clock,
		groups: map[string]*group{},
		quit:   make(chan struct{}),
	}
	if err := c.initShare(); err != nil {
		return nil, err
	}
	loaded, err := c.load()
	if err != nil {
		return nil, err
	}
	for _, g := range loaded {
		g.onLoaded() // before its goroutine starts: nothing shares g yet
		g.publish()
		c.groups[g.id] = g
		c.startGroup(g)
	}
	if len(loaded) > 0 {
		c.log.Info().Int("groups", len(loaded)).Msg("loaded groups from __consumer_offsets")
	}
	c.wg.Add(1)
	go c.expiryLoop()
	return c, nil
}

// Close stops every group's goroutine. Requests waiting on a group get
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	close(c.quit)
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// PartitionFor is the __consumer_offsets partition of a group (and the
// __transaction_state partition of a transactional id): Kafka's
// Utils.abs(id.hashCode) % partitions, with Java's String.hashCode over
// UTF-16 code units and Utils.abs's 0 for Integer.MIN_VALUE. (Before this
// was Kafka's formula, kcompatd masked the sign bit, which differs for a
// negative hash; Coordinator.OffsetsPartition keeps such a group where
// its records are.)
func PartitionFor(groupID string, partitions int32) int32 {
	var h int32
	for _, r := range groupID {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return javaAbs(h) % partitions
}

// javaAbs is Kafka's Utils.abs: |n|, and 0 for math.MinInt32.
func javaAbs(n int32) int32 {
	switch {
	case n == math.MinInt32:
		return 0
	case n < 0:
		return -n
	}
	return n
}

// OffsetsPartition is the __consumer_offsets partition (of n) group id's
// records go to: the one its records were found in at load when that is
// not PartitionFor's (a data dir written by a kcompatd that computed it
// otherwise), so that no group's records are split across partitions;
// else PartitionFor.
func (c *Coordinator) OffsetsPartition(id string, n int32) int32 {
	if p, ok := c.loadedPartitions[id]; ok && p < n {
		return p
	}
	return PartitionFor(id, n)
}

// EnsureOffsetsTopic creates __consumer_offsets if it does not exist yet,
// as Kafka does on the first FindCoordinator for a group.
func (c *Coordinator) EnsureOffsetsTopic() (*partition.Topic, error) {
	return ensureInternalTopic(c.store, &c.topicMu, c.log, OffsetsTopic, c.cfg.OffsetsTopicPartitions, map[string]string{
		partition.CleanupPolicyConfig:   "compact",
		partition.CompressionTypeConfig: "producer",
		partition.SegmentBytesConfig:    strconv.Itoa(int(c.cfg.OffsetsTopicSegmentBytes)),
	})
}

// ensureInternalTopic returns the internal topic name, creating it with
// the given partitions and configs on first use; mu serializes creators.
func ensureInternalTopic(store *partition.Store, mu *sync.Mutex, log zerolog.Logger, name string, partitions int32, configs map[string]string) (*partition.Topic, error) {
	if t := store.Topic(name); t != nil {
		return t, nil
	}
	mu.Lock()
	defer mu.Unlock()
	if t := store.Topic(name); t != nil {
		return t, nil
	}
	t, err := store.CreateTopic(name, partitions, configs, false)
	if errors.Is(err, partition.ErrTopicExists) {
		if t := store.Topic(name); t != nil {
			return t, nil
		}
	}
	if err != nil {
		log.Error().Err(err).Str("topic", name).Msg("creating internal topic failed")
		return nil, err
	}
	log.Info().Str("topic", name).Int32("partitions", partitions).Msg("created internal topic")
	return t, nil
}

// lookup returns the group, or with create a new empty one; nil if absent
// (or closed).
func (c *Coordinator) lookup(id string, create bool) *group {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	g := c.groups[id]
	if g == nil && create {
		g = newGroup(c, id)
		c.groups[id] = g
		c.startGroup(g)
	}
	return g
}

// startGroup starts g's goroutine (which parks once the group is idle:
// park.go). REQUIRES: c.mu held or c not yet shared, and c not closed;
// g.runMu held or g not yet shared; g not running.
func (c *Coordinator) startGroup(g *group) {
	g.running = true
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		g.run()
	}()
}

// replaceGroup puts a fresh group, with old's committed and pending
// transactional offsets, in place of old, whose goroutine is ending
// (group.recoverPanic): no classic or consumer members; a share or streams
// group as its written records have it.
func (c *Coordinator) replaceGroup(old *group) {
	// Built before c.mu: rebuilding a share or streams group reads group
	// configs and the store, whose locks rank below c.mu (LOCKING.md).
	g := newGroup(c, old.id)
	g.offsets, g.txnOffsets = old.offsets, old.txnOffsets
	// A share or streams group is rebuilt from the records it wrote, as
	// a restart would load it: its memory may be half-changed, its
	// records are not, and dropping it would leave them untombstoned.
	if old.sg != nil {
		g.shareFromWritten(old.sg.written)
	}
	if old.stg != nil {
		if ls := loadedStreams(maps.Clone(old.stg.written)); ls.hasMetadata() {
			g.streamsGroupLoaded(ls)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[old.id] != old {
		return
	}
	for pid := range g.txnOffsets {
		c.txnIdx.remove(pid, old)
		c.txnIdx.add(pid, g)
	}
	g.publish()
	c.groups[g.id] = g
	c.startGroup(g)
}

// removeGroup forgets a group that went Dead.
func (c *Coordinator) removeGroup(g *group) {
	c.mu.Lock()
	if c.groups[g.id] == g {
		delete(c.groups, g.id)
	}
	c.mu.Unlock()
}

// allGroups is a snapshot of the live groups.
func (c *Coordinator) allGroups() []*group {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, g)
	}
	return out
}

// expiryLoop expires committed offsets every OffsetsRetentionCheckInterval.
func (c *Coordinator) expiryLoop() {
	defer c.wg.Done()
	for {
		t := c.clock.NewTimer(c.cfg.OffsetsRetentionCheckInterval)
		select {
		case <-c.quit:
			t.Stop()
			return
		case <-t.C():
		}
		c.ExpireOffsets()
	}
}

// ExpireOffsets runs one offset expiry pass over every group now (the
// background loop does this every OffsetsRetentionCheckInterval).
func (c *Coordinator) ExpireOffsets() {
	c.eachGroup(context.Background(), (*group).expireOffsets)
}

// newMemberID is Kafka's clientId + "-" + UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return clientID + "-" + string(s[:])
}
