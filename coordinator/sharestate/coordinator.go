package sharestate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// StateTopic is the internal topic of share-partition state.
const StateTopic = "__share_group_state"

// Config is what the share coordinator needs. Start from DefaultConfig:
// zero (or negative) fields take Kafka's defaults, except
// SnapshotUpdateRecordsPerSnapshot, where 0 is a setting.
type Config struct {
	// StateTopicPartitions is the partition count __share_group_state is
	// created with (share.coordinator.state.topic.num.partitions, 50).
	StateTopicPartitions int32
	// StateTopicSegmentBytes is its segment.bytes
	// (share.coordinator.state.topic.segment.bytes, 100 MiB).
	StateTopicSegmentBytes int32
	// SnapshotUpdateRecordsPerSnapshot is how many ShareUpdate records
	// a share-partition gets between two ShareSnapshots
	// (share.coordinator.snapshot.update.records.per.snapshot, 500;
	// 0 snapshots every write). Negative: the default.
	SnapshotUpdateRecordsPerSnapshot int
	// Codec compresses the coordinator's batches
	// (share.coordinator.state.topic.compression.codec, default none).
	Codec recordbatch.Codec
	// LoadBufferSize is the bytes one read returns when loading
	// (share.coordinator.load.buffer.size, 5 MiB).
	LoadBufferSize int
	// PruneInterval is how often records no state needs any more are
	// cut off the front of each partition
	// (share.coordinator.state.topic.prune.interval.ms, 5 min).
	PruneInterval time.Duration
	// ColdPartitionSnapshotInterval is how old a share-partition's last
	// snapshot may get before a fresh one is written, so that pruning
	// can pass its old records
	// (share.coordinator.cold.partition.snapshot.interval.ms, 5 min).
	ColdPartitionSnapshotInterval time.Duration
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		StateTopicPartitions:             50,
		StateTopicSegmentBytes:           100 << 20,
		SnapshotUpdateRecordsPerSnapshot: 500,
		LoadBufferSize:                   5 << 20,
		PruneInterval:                    5 * time.Minute,
		ColdPartitionSnapshotInterval:    5 * time.Minute,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.StateTopicPartitions <= 0 {
		c.StateTopicPartitions = d.StateTopicPartitions
	}
	if c.StateTopicSegmentBytes <= 0 {
		c.StateTopicSegmentBytes = d.StateTopicSegmentBytes
	}
	if c.SnapshotUpdateRecordsPerSnapshot < 0 {
		c.SnapshotUpdateRecordsPerSnapshot = d.SnapshotUpdateRecordsPerSnapshot
	}
	if c.LoadBufferSize <= 0 {
		c.LoadBufferSize = d.LoadBufferSize
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = d.PruneInterval
	}
	if c.ColdPartitionSnapshotInterval <= 0 {
		c.ColdPartitionSnapshotInterval = d.ColdPartitionSnapshotInterval
	}
	return c
}

// Coordinator is the share coordinator of a single broker: it owns every
// partition of __share_group_state. It implements Persister.
type Coordinator struct {
	cfg   Config
	store *partition.Store
	clock clock.Clock
	log   zerolog.Logger

	topicMu sync.Mutex // serializes creating __share_group_state
	shards  []*shard   // one per partition of __share_group_state

	quit chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

var _ Persister = (*Coordinator)(nil)

// New returns a share coordinator over store, with every share-partition's
// state loaded from __share_group_state, and starts its periodic pruning
// and cold-partition snapshots. The topic itself is created on first use.
func New(cfg Config, store *partition.Store, clk clock.Clock, log zerolog.Logger) (*Coordinator, error) {
	cfg = cfg.withDefaults()
	if clk == nil {
		clk = clock.Real{}
	}
	c := &Coordinator{cfg: cfg, store: store, clock: clk, log: log, quit: make(chan struct{})}
	// As Kafka: the partition count is the topic's when it exists.
	n := cfg.StateTopicPartitions
	if t := store.Topic(StateTopic); t != nil {
		n = int32(len(t.Partitions))
	}
	c.shards = make([]*shard, n)
	for i := range c.shards {
		c.shards[i] = newShard(int32(i))
	}
	if err := c.load(); err != nil {
		return nil, err
	}
	c.wg.Add(2)
	go c.every(cfg.PruneInterval, c.Prune)
	go c.every(cfg.ColdPartitionSnapshotInterval, func() { c.SnapshotColdPartitions(); c.CleanupDeletedTopics() })
	return c, nil
}

// Close stops the periodic jobs. Calls after Close still work (the store
// decides whether they can write).
func (c *Coordinator) Close() error {
	c.once.Do(func() { close(c.quit) })
	c.wg.Wait()
	return nil
}

// every runs f every d until Close.
func (c *Coordinator) every(d time.Duration, f func()) {
	defer c.wg.Done()
	clock.Every(c.clock, d, c.quit, f)
}

// PartitionFor is the __share_group_state partition of a share-partition:
// Kafka's Utils.abs("groupId:topicId:partition".hashCode()) % partitions,
// the topic id in Kafka's base64 form.
func PartitionFor(k Key, partitions int32) int32 {
	s := k.GroupID + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // a surrogate pair in Java's UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 { // Utils.abs
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

func (c *Coordinator) shardFor(k Key) *shard {
	return c.shards[PartitionFor(k, int32(len(c.shards)))]
}

// EnsureStateTopic creates __share_group_state if it does not exist yet,
// with the configs Kafka's ShareCoordinatorService gives it: a delete
// policy that never expires by time (the coordinator prunes it itself).
func (c *Coordinator) EnsureStateTopic() (*partition.Topic, error) {
	if t := c.store.Topic(StateTopic); t != nil {
		return t, nil
	}
	c.topicMu.Lock()
	defer c.topicMu.Unlock()
	if t := c.store.Topic(StateTopic); t != nil {
		return t, nil
	}
	configs := map[string]string{
		partition.CleanupPolicyConfig:   "delete",
		partition.CompressionTypeConfig: "producer",
		partition.SegmentBytesConfig:    strconv.Itoa(int(c.cfg.StateTopicSegmentBytes)),
		partition.RetentionMsConfig:     "-1",
	}
	if c.cfg.StateTopicSegmentBytes < 1<<20 {
		// Below segment.bytes' bound (tests): Kafka 4's test-only
		// internal.segment.bytes.
		delete(configs, partition.SegmentBytesConfig)
		configs[partition.InternalSegmentBytesConfig] = strconv.Itoa(int(c.cfg.StateTopicSegmentBytes))
	}
	t, err := c.store.CreateTopic(StateTopic, int32(len(c.shards)), configs, false)
	if errors.Is(err, partition.ErrTopicExists) {
		if t := c.store.Topic(StateTopic); t != nil {
			return t, nil
		}
	}
	if err != nil {
		c.log.Error().Err(err).Str("topic", StateTopic).Msg("creating internal topic failed")
		return nil, err
	}
	c.log.Info().Str("topic", StateTopic).Int("partitions", len(c.shards)).Msg("created internal topic")
	return t, nil
}

// appendRecords writes recs as one batch to partition p of the state
// topic, durable per the flush policy when it returns; it returns the
// offset of the first record.
func (c *Coordinator) appendRecords(p int32, recs []recordbatch.Record) (int64, error) {
	if _, err := c.EnsureStateTopic(); err != nil {
		return -1, writeError(err)
	}
	log, err := c.store.Log(StateTopic, p)
	if err != nil {
		return -1, writeError(err)
	}
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{
		Codec:         c.cfg.Codec,
		BaseTimestamp: c.clock.Now().UnixMilli(),
		ProducerID:    -1,
		ProducerEpoch: -1,
		BaseSequence:  -1,
	}, recs)
	if err != nil {
		return -1, err
	}
	res, err := log.Append(b)
	if err != nil {
		return -1, fmt.Errorf("sharestate: writing %s-%d: %w", StateTopic, p, writeError(err))
	}
	return res.BaseOffset, nil
}

// writeError is the Kafka error a failed state write answers, as Kafka's
// CoordinatorOperationExceptionHelper maps a failed append (a storage
// error: NOT_COORDINATOR, so the caller finds the coordinator again; a
// store shutting down: COORDINATOR_NOT_AVAILABLE; a batch too large:
// UNKNOWN_SERVER_ERROR); the cause stays wrapped.
func writeError(err error) error {
	switch {
	case errors.Is(err, partition.ErrStorage):
		return fmt.Errorf("%w: %w", kerr.NotCoordinator, err)
	case errors.Is(err, partition.ErrClosed), errors.Is(err, partition.ErrUnknownTopic):
		return fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
	default:
		return fmt.Errorf("%w: %w", kerr.UnknownServerError, err)
	}
}

// topicKnown is Kafka's metadata-image check: the topic exists and has
// the partition.
func (c *Coordinator) topicKnown(k Key) bool {
	t := c.store.TopicByID(partition.TopicID(k.TopicID))
	return t != nil && int(k.Partition) < len(t.Partitions)
}

// errInvalid is INVALID_REQUEST with Kafka's message.
func errInvalid(msg string) error {
	return fmt.Errorf("%w: %s", kerr.InvalidRequest, msg)
}

// Initialize is InitializeShareGroupState: a new ShareSnapshot with the
// state epoch and start offset, no batches, leader epoch 0.
func (c *Coordinator) Initialize(k Key, stateEpoch int32, startOffset int64) error {
	if k.Partition < 0 {
		return errInvalid("The partition id cannot be a negative number.")
	}
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.states[k]
	if stateEpoch != -1 && e != nil && e.stateEpoch > stateEpoch {
		return kerr.FencedStateEpoch
	}
	if !c.topicKnown(k) {
		return kerr.UnknownTopicOrPartition
	}
	now := c.clock.Now().UnixMilli()
	v := snapshotValue{StateEpoch: stateEpoch, StartOffset: startOffset, DeliveryCompleteCount: 0, CreateTimestamp: now, WriteTimestamp: now}
	if startOffset == -1 {
		v.DeliveryCompleteCount = -1
	}
	if e != nil {
		v.SnapshotEpoch = e.state.SnapshotEpoch + 1
	}
	return c.commit(s, []recordbatch.Record{snapshotRecord(k, &v)})
}

// Read is ReadShareGroupState. A reader with a new leader epoch has it
// written first (Kafka's readStateAndMaybeUpdateLeaderEpoch).
func (c *Coordinator) Read(k Key, leaderEpoch int32) (State, bool, error) {
	if k.Partition < 0 {
		return State{}, false, errInvalid("The partition id cannot be a negative number.")
	}
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.states[k]
	if e == nil {
		// Kafka answers INVALID_REQUEST ("Read operation on uninitialized
		// share partition not allowed."); the Persister contract says
		// not found.
		return State{}, false, nil
	}
	if leaderEpoch != -1 && e.leaderEpoch > leaderEpoch {
		return State{}, false, kerr.FencedLeaderEpoch
	}
	if !c.topicKnown(k) {
		return State{}, false, kerr.UnknownTopicOrPartition
	}
	st := e.publicState()
	if leaderEpoch == -1 || e.leaderEpoch == leaderEpoch {
		return st, true, nil
	}
	rec := c.stateRecord(s, k, e, e.state.StartOffset, e.state.DeliveryCompleteCount, leaderEpoch, nil)
	if err := c.commit(s, []recordbatch.Record{rec}); err != nil {
		return State{}, false, err
	}
	return st, true, nil
}

// Write is WriteShareGroupState: a ShareUpdate merged into the state, or
// a ShareSnapshot once the share-partition has had
// SnapshotUpdateRecordsPerSnapshot updates since its last snapshot.
func (c *Coordinator) Write(k Key, stateEpoch, leaderEpoch int32, startOffset int64, deliveryCompleteCount int32, batches []StateBatch) error {
	if k.Partition < 0 {
		return errInvalid("The partition id cannot be a negative number.")
	}
	for _, b := range batches {
		// Not checked by Kafka; a batch like these would not merge.
		if !validBatch(b) {
			return errInvalid(fmt.Sprintf("Invalid state batch %d-%d.", b.FirstOffset, b.LastOffset))
		}
	}
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.states[k]
	if e == nil {
		return errInvalid("Write operation on uninitialized share partition not allowed.")
	}
	if leaderEpoch != -1 && e.leaderEpoch > leaderEpoch {
		return kerr.FencedLeaderEpoch
	}
	if stateEpoch != -1 && e.stateEpoch > stateEpoch {
		return kerr.FencedStateEpoch
	}
	if !c.topicKnown(k) {
		return kerr.UnknownTopicOrPartition
	}
	// As Kafka: a write keeps the leader epoch stored; only a read with a
	// new one changes it.
	rec := c.stateRecord(s, k, e, startOffset, deliveryCompleteCount, e.state.LeaderEpoch, batches)
	return c.commit(s, []recordbatch.Record{rec})
}

// ReadSummary is ReadShareGroupStateSummary.
func (c *Coordinator) ReadSummary(k Key) (Summary, bool, error) {
	if k.Partition < 0 {
		return Summary{}, false, errInvalid("The partition id cannot be a negative number.")
	}
	if !c.topicKnown(k) {
		return Summary{}, false, kerr.UnknownTopicOrPartition
	}
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.states[k]
	if e == nil {
		return Summary{}, false, nil
	}
	return Summary{
		StateEpoch:            e.state.StateEpoch,
		LeaderEpoch:           e.state.LeaderEpoch,
		StartOffset:           e.state.StartOffset,
		DeliveryCompleteCount: e.state.DeliveryCompleteCount,
	}, true, nil
}

// Delete is DeleteShareGroupState: a tombstone of the ShareSnapshot key;
// deleting a state that does not exist succeeds and writes nothing.
func (c *Coordinator) Delete(k Key) error {
	if k.Partition < 0 {
		return errInvalid("The partition id cannot be a negative number.")
	}
	if !c.topicKnown(k) {
		return kerr.UnknownTopicOrPartition
	}
	s := c.shardFor(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states[k] == nil {
		return nil
	}
	return c.commit(s, []recordbatch.Record{{Key: appendKey(nil, recShareSnapshot, k)}})
}

// stateRecord is Kafka's generateShareStateRecord: a ShareSnapshot of the
// merged state when the updates since the last one reached the limit,
// else a ShareUpdate carrying just this write (its batches combined among
// themselves). REQUIRES: s.mu held.
func (c *Coordinator) stateRecord(s *shard, k Key, e *entry, startOffset int64, dcc, leaderEpoch int32, batches []StateBatch) recordbatch.Record {
	if e.updates >= c.cfg.SnapshotUpdateRecordsPerSnapshot {
		now := c.clock.Now().UnixMilli()
		start := startOffset
		if start == -1 {
			start = e.state.StartOffset
		}
		v := snapshotValue{
			SnapshotEpoch:         e.state.SnapshotEpoch + 1,
			StateEpoch:            e.state.StateEpoch,
			LeaderEpoch:           leaderEpoch,
			StartOffset:           start,
			DeliveryCompleteCount: dcc,
			CreateTimestamp:       now,
			WriteTimestamp:        now,
			Batches:               combineStateBatches(e.state.Batches, batches, start),
		}
		return snapshotRecord(k, &v)
	}
	v := updateValue{
		SnapshotEpoch:         e.state.SnapshotEpoch,
		LeaderEpoch:           leaderEpoch,
		StartOffset:           startOffset,
		DeliveryCompleteCount: dcc,
		Batches:               combineStateBatches(nil, batches, startOffset),
	}
	return recordbatch.Record{Key: appendKey(nil, recShareUpdate, k), Value: v.appendTo(nil)}
}

func snapshotRecord(k Key, v *snapshotValue) recordbatch.Record {
	return recordbatch.Record{Key: appendKey(nil, recShareSnapshot, k), Value: v.appendTo(nil)}
}

// commit writes recs to s's partition and, once they are durable, replays
// them into s exactly as loading would. REQUIRES: s.mu held.
func (c *Coordinator) commit(s *shard, recs []recordbatch.Record) error {
	base, err := c.appendRecords(s.partition, recs)
	if err != nil {
		return err
	}
	for i, r := range recs {
		if err := s.replay(r.Key, r.Value, base+int64(i), c.cfg.SnapshotUpdateRecordsPerSnapshot); err != nil {
			return err // cannot happen: we encoded them
		}
	}
	return nil
}
