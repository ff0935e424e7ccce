package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

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
	Clock                        clock.Clock // nil: clock.Real{}
	Logger                       zerolog.Logger
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

// PartitionFor is the __consumer_offsets partition of a group: Kafka's
// Utils.abs(groupId.hashCode) % partitions, with Java's String.hashCode
// over UTF-16 code units.
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
	return (h & 0x7fffffff) % partitions
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
// transactional offsets and no members, in place of old, whose goroutine
// is ending (group.recoverPanic).
func (c *Coordinator) replaceGroup(old *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.groups[old.id] != old {
		return
	}
	g := newGroup(c, old.id)
	g.offsets, g.txnOffsets = old.offsets, old.txnOffsets
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
