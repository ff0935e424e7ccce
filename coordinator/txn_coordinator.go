package coordinator

// The transaction coordinator (Kafka's TransactionCoordinator,
// TransactionStateManager and TransactionMarkerChannelManager on one
// broker). See doc.go for the states and transitions.
//
// Concurrency: the coordinator's map of transactional ids is guarded by
// mu; each id's metadata by its own txn.mu, held for a whole operation,
// including the write to __transaction_state and the markers, so
// operations on one id are serialized while ids proceed in parallel.
// Where Kafka answers CONCURRENT_TRANSACTIONS during an in-flight state
// write (its pending state), a second request here waits for the first:
// it then sees the state that write left, as a retrying client would.
// Readers that must not wait behind marker writes (produce verification,
// ListTransactions, DescribeTransactions) read txn.view, an immutable
// snapshot published after each transition. The order of txn.mu, mu and
// the partition locks taken inside (Log.Append) is in LOCKING.md at the
// repository root.

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/panics"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// TxnTopic is the internal topic holding transaction metadata.
const TxnTopic = "__transaction_state"

// coordinatorEpoch is the epoch markers carry: Kafka uses the leader
// epoch of the __transaction_state partition, which never changes on a
// single broker.
const coordinatorEpoch int32 = 0

// TxnConfig is what the transaction coordinator needs. Start from
// DefaultTxnConfig.
type TxnConfig struct {
	// MaxTimeout bounds a producer's transaction.timeout.ms
	// (transaction.max.timeout.ms, default 15 min).
	MaxTimeout time.Duration
	// TopicPartitions is transaction.state.log.num.partitions (default
	// 50), used when __transaction_state is created.
	TopicPartitions int32
	// TopicSegmentBytes is transaction.state.log.segment.bytes (default
	// 100 MiB).
	TopicSegmentBytes int32
	// AbortTimedOutInterval is how often timed-out transactions are
	// aborted (transaction.abort.timed.out.transaction.cleanup.interval.ms,
	// default 10 s).
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is how often expired transactional ids are
	// removed (transaction.remove.expired.transaction.cleanup.interval.ms,
	// default 1 hour).
	RemoveExpiredInterval time.Duration
	// IDExpiration is how long a transactional id without a transaction
	// is kept after its last update (transactional.id.expiration.ms,
	// default 7 days).
	IDExpiration time.Duration
	Clock        clock.Clock // nil: clock.Real{}
	Logger       zerolog.Logger
}

// DefaultTxnConfig returns Kafka's defaults.
func DefaultTxnConfig() TxnConfig {
	return TxnConfig{
		MaxTimeout:            15 * time.Minute,
		TopicPartitions:       50,
		TopicSegmentBytes:     100 << 20,
		AbortTimedOutInterval: 10 * time.Second,
		RemoveExpiredInterval: time.Hour,
		IDExpiration:          7 * 24 * time.Hour,
	}
}

func (c TxnConfig) withDefaults() TxnConfig {
	d := DefaultTxnConfig()
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = d.MaxTimeout
	}
	if c.TopicPartitions <= 0 {
		c.TopicPartitions = d.TopicPartitions
	}
	if c.TopicSegmentBytes <= 0 {
		c.TopicSegmentBytes = d.TopicSegmentBytes
	}
	if c.AbortTimedOutInterval <= 0 {
		c.AbortTimedOutInterval = d.AbortTimedOutInterval
	}
	if c.RemoveExpiredInterval <= 0 {
		c.RemoveExpiredInterval = d.RemoveExpiredInterval
	}
	if c.IDExpiration <= 0 {
		c.IDExpiration = d.IDExpiration
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	return c
}

// markerWriter writes one partition's transaction marker: the store (and
// the group coordinator for __consumer_offsets) in production, a fake in
// tests. An error wrapping partition.ErrUnknownTopic means the partition
// is gone and its marker is dropped, as Kafka drops markers of deleted
// partitions.
type markerWriter interface {
	writeMarker(tp TopicPartition, m partition.TxnMarker) error
}

// txnLog is where transaction metadata records go: __transaction_state
// in production, a fake in tests.
type txnLog interface {
	appendTxn(id string, rec recordbatch.Record) error
}

// TxnCoordinator is the transaction coordinator of a single broker: the
// coordinator of every transactional id.
type TxnCoordinator struct {
	cfg     TxnConfig
	store   *partition.Store
	groups  *Coordinator
	log     zerolog.Logger
	clock   clock.Clock
	pids    *producerIDManager
	markers markerWriter
	txnLog  txnLog

	topicMu sync.Mutex // serializes creating __transaction_state

	mu     sync.Mutex // guards txns, closed
	txns   map[string]*txn
	closed bool

	quit chan struct{}
	wg   sync.WaitGroup

	// loadedMaxPID is the highest producer id any record read from
	// __transaction_state at start named, -1 if none; set before start.
	loadedMaxPID int64

	// loadedPartitions are the transactional ids whose records load found
	// in another __transaction_state partition than PartitionFor's (an
	// older kcompatd's data dir): they stay there (txnPartition). loading
	// is the partition being read and its topic's partition count. Set
	// before start, read-only after.
	loadedPartitions map[string]int32
	loading          struct{ part, n int32 }

	// txnVersion is the finalized transaction.version (Kafka's
	// transactionVersionLevel): it decides the record version written.
	// SetTransactionVersion changes it.
	txnVersion atomic.Int32
}

// LatestTransactionVersion is the highest transaction.version served
// (KIP-890 part 2), finalized unless changed.
const LatestTransactionVersion int16 = tv2

// SetTransactionVersion makes level the finalized transaction.version
// (ApiVersions' features, changed by UpdateFeatures): level 0 writes
// __transaction_state values at version 0, higher ones at version 1.
// What a client does is decided by its requests' versions, whatever the
// level, as in Kafka (its clients read the level to choose them).
func (c *TxnCoordinator) SetTransactionVersion(level int16) {
	c.txnVersion.Store(int32(level))
}

// TransactionVersion is the finalized transaction.version.
func (c *TxnCoordinator) TransactionVersion() int16 { return int16(c.txnVersion.Load()) }

// txn is one transactional id.
type txn struct {
	id   string
	mu   sync.Mutex // held for a whole operation on the id
	data txnData    // guarded by mu
	// hasFailedEpochFence is set when writing an epoch fence failed:
	// the epoch was bumped in memory but never returned, so the next
	// fence does not bump it again (Kafka's hasFailedEpochFence).
	hasFailedEpochFence bool // guarded by mu
	dead                bool // guarded by mu: removed; look the id up again
	view                atomic.Pointer[txnData]
}

// publish makes t.data visible to lock-free readers. REQUIRES: t.mu held.
func (t *txn) publish() {
	v := t.data.clone()
	t.view.Store(&v)
}

// NewTxnCoordinator returns a transaction coordinator over store, loading
// every transactional id found in __transaction_state and completing
// transactions a crash left in PrepareCommit or PrepareAbort, and starts
// its timers. groups receives the completion of transactional offset
// commits.
func NewTxnCoordinator(cfg TxnConfig, store *partition.Store, groups *Coordinator) (*TxnCoordinator, error) {
	pids, err := newProducerIDManager(store)
	if err != nil {
		return nil, fmt.Errorf("coordinator: loading producer id block: %w", err)
	}
	c := newTxnCoordinator(cfg, pids)
	c.store = store
	c.groups = groups
	c.markers = storeMarkers{c}
	c.txnLog = storeTxnLog{c}
	loaded, err := c.loadTxnTopic()
	if err != nil {
		return nil, err
	}
	if c.loadedMaxPID >= 0 {
		if err := pids.advancePast(c.loadedMaxPID); err != nil {
			return nil, err
		}
	}
	c.install(loaded)
	c.start()
	return c, nil
}

// newTxnCoordinator is the part of NewTxnCoordinator tests share: no
// store, nothing loaded, not started.
func newTxnCoordinator(cfg TxnConfig, pids *producerIDManager) *TxnCoordinator {
	cfg = cfg.withDefaults()
	c := &TxnCoordinator{
		cfg:   cfg,
		log:   cfg.Logger,
		clock: cfg.Clock,
		pids:  pids,
		txns:  map[string]*txn{},
		quit:  make(chan struct{}),

		loadedMaxPID: -1,
	}
	c.txnVersion.Store(int32(LatestTransactionVersion))
	return c
}

// install adds loaded metadata and completes the transactions left in
// PrepareCommit or PrepareAbort (their markers are written again, as
// Kafka does on loading a __transaction_state partition).
func (c *TxnCoordinator) install(loaded map[string]*txnData) {
	var pending []*txn
	for id, d := range loaded {
		if d.state == txnDead {
			continue
		}
		t := &txn{id: id, data: *d}
		t.publish()
		c.txns[id] = t
		if d.state == txnPrepareCommit || d.state == txnPrepareAbort {
			pending = append(pending, t)
		}
	}
	if len(loaded) > 0 {
		c.log.Info().Int("transactional_ids", len(c.txns)).Int("completing", len(pending)).Msg("loaded transactions from __transaction_state")
	}
	for _, t := range pending {
		t.mu.Lock()
		c.completeLocked(t)
		t.mu.Unlock()
	}
}

// start runs the timers: timed-out transactions, expired ids.
func (c *TxnCoordinator) start() {
	c.wg.Add(2)
	go c.every(c.cfg.AbortTimedOutInterval, c.AbortTimedOut)
	go c.every(c.cfg.RemoveExpiredInterval, c.RemoveExpired)
}

// every runs f every d until Close.
func (c *TxnCoordinator) every(d time.Duration, f func()) {
	defer c.wg.Done()
	for {
		t := c.clock.NewTimer(d)
		select {
		case <-c.quit:
			t.Stop()
			return
		case <-t.C():
		}
		// A panic fails this run only (KafkaScheduler's rule).
		panics.Run(c.log, "transaction coordinator task panicked; it runs again at its next interval", f)
	}
}

// Close stops the timers. Transactions keep their state in
// __transaction_state; one in PrepareCommit or PrepareAbort is completed
// at the next start.
func (c *TxnCoordinator) Close() error {
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

// lookup returns id's metadata, nil if unknown or closed.
func (c *TxnCoordinator) lookup(id string) *txn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return c.txns[id]
}

// snapshot is every live id, for the timers and ListTransactions.
func (c *TxnCoordinator) snapshot() []*txn {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*txn, 0, len(c.txns))
	for _, t := range c.txns {
		out = append(out, t)
	}
	return out
}

// closing reports whether Close was called, without waiting on mu: the
// cleanup passes check it between ids so Close does not wait for a whole
// pass of writes.
func (c *TxnCoordinator) closing() bool {
	select {
	case <-c.quit:
		return true
	default:
		return false
	}
}

func (c *TxnCoordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// EnsureTxnTopic creates __transaction_state if it does not exist yet, as
// Kafka does on the first FindCoordinator for a transactional id.
func (c *TxnCoordinator) EnsureTxnTopic() (*partition.Topic, error) {
	if c.store == nil {
		return nil, errors.New("coordinator: no store")
	}
	// TransactionStateManager.transactionTopicConfigs: compact, no
	// compression.
	return ensureInternalTopic(c.store, &c.topicMu, c.log, TxnTopic, c.cfg.TopicPartitions, map[string]string{
		partition.CleanupPolicyConfig:   "compact",
		partition.CompressionTypeConfig: "uncompressed",
		partition.SegmentBytesConfig:    strconv.Itoa(int(c.cfg.TopicSegmentBytes)),
	})
}

// txnPartition is the __transaction_state partition (of n) of id: where
// load found its records if not PartitionFor's, so that no id's records
// are split across partitions; else PartitionFor.
func (c *TxnCoordinator) txnPartition(id string, n int32) int32 {
	if p, ok := c.loadedPartitions[id]; ok && p < n {
		return p
	}
	return PartitionFor(id, n)
}

// noteLoaded records that id has records in the partition being loaded.
func (c *TxnCoordinator) noteLoaded(id string) {
	if c.loading.part == PartitionFor(id, c.loading.n) {
		return
	}
	if _, seen := c.loadedPartitions[id]; seen {
		return
	}
	if c.loadedPartitions == nil {
		c.loadedPartitions = map[string]int32{}
	}
	c.loadedPartitions[id] = c.loading.part
}

// storeTxnLog appends to the id's partition of __transaction_state.
type storeTxnLog struct{ c *TxnCoordinator }

func (s storeTxnLog) appendTxn(id string, rec recordbatch.Record) error {
	t, err := s.c.EnsureTxnTopic()
	if err != nil {
		return err
	}
	log, err := s.c.store.Log(TxnTopic, s.c.txnPartition(id, int32(len(t.Partitions))))
	if err != nil {
		return err
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{
		BaseTimestamp: s.c.clock.Now().UnixMilli(),
		ProducerID:    -1,
		ProducerEpoch: -1,
		BaseSequence:  -1,
	}, []recordbatch.Record{rec})
	if err != nil {
		return err
	}
	_, err = log.Append(b)
	return err
}

// storeMarkers writes markers through the partition logs; for a
// __consumer_offsets partition it then completes the producer's
// transactional offset commits there (Kafka's
// GroupCoordinator.onTransactionCompleted, called once the marker is
// written).
type storeMarkers struct{ c *TxnCoordinator }

func (s storeMarkers) writeMarker(tp TopicPartition, m partition.TxnMarker) error {
	log, err := s.c.store.Log(tp.Topic, tp.Partition)
	if err != nil {
		return err
	}
	if _, err := log.WriteTxnMarker(m); err != nil {
		return err
	}
	if tp.Topic == OffsetsTopic && s.c.groups != nil {
		s.c.groups.CompleteTxnOffsets(tp.Partition, m.ProducerID, m.Commit)
	}
	return nil
}

// WriteTxnMarker writes one partition's marker through the path the
// coordinator's own markers take (for __consumer_offsets, completing the
// producer's transactional offset commits there): what a WriteTxnMarkers
// request asks of this broker as a partition leader. It takes no
// transactional id's lock and leaves the coordinator's metadata alone, as
// Kafka's handler does. An error wrapping partition.ErrUnknownTopic means
// the partition does not exist.
func (c *TxnCoordinator) WriteTxnMarker(tp TopicPartition, m partition.TxnMarker) error {
	return c.markers.writeMarker(tp, m)
}

// loadChunk and maxDecompressed (persist.go) bound loading here too.

// loadTxnTopic reads every partition of __transaction_state: the last
// record per transactional id wins and a tombstone deletes.
func (c *TxnCoordinator) loadTxnTopic() (map[string]*txnData, error) {
	out := map[string]*txnData{}
	t := c.store.Topic(TxnTopic)
	if t == nil {
		return out, nil
	}
	for p, log := range t.Partitions {
		c.loading.part, c.loading.n = int32(p), int32(len(t.Partitions))
		off := log.Offsets().LogStartOffset
		for {
			res, err := log.Read(off, loadChunk, true)
			if err != nil {
				return nil, fmt.Errorf("coordinator: loading %s-%d at offset %d: %w", TxnTopic, p, off, err)
			}
			if len(res.Records) == 0 {
				break
			}
			next, err := c.loadTxnBatches(res.Records, out)
			if err != nil {
				return nil, fmt.Errorf("coordinator: loading %s-%d at offset %d: %w", TxnTopic, p, off, err)
			}
			if next <= off {
				break
			}
			off = next
		}
	}
	return out, nil
}

// loadTxnBatches applies the batches in b (bytes read from
// __transaction_state, untrusted) to out and returns the offset after the
// last whole batch. A batch whose records do not decode is logged and
// skipped, as is a record that is not transaction metadata.
func (c *TxnCoordinator) loadTxnBatches(b []byte, out map[string]*txnData) (int64, error) {
	next := int64(-1)
	for len(b) > 0 {
		h, err := recordbatch.ParseHeader(b)
		if err != nil || h.Size() > len(b) || h.Size() <= 0 {
			if next >= 0 {
				return next, nil // a partial batch at the end of a read
			}
			return -1, recordbatch.ErrTruncated
		}
		batch := b[:h.Size()]
		b = b[h.Size():]
		next = h.LastOffset() + 1
		if h.Control() {
			continue
		}
		err = recordbatch.ForEachRecord(batch, maxDecompressed, func(r recordbatch.Record) error {
			id, d, ok := decodeTxnRecord(r.Key, r.Value)
			if !ok {
				c.log.Warn().Int64("offset", h.BaseOffset()).Msg("skipping undecodable __transaction_state record")
				return nil
			}
			if c.loading.n > 0 {
				c.noteLoaded(id)
			}
			if d == nil {
				delete(out, id)
			} else {
				out[id] = d
				c.loadedMaxPID = max(c.loadedMaxPID, d.producerID, d.prevProducerID, d.nextProducerID)
			}
			return nil
		})
		if err != nil {
			c.log.Error().Err(err).Int64("offset", h.BaseOffset()).Msg("skipping undecodable __transaction_state batch")
		}
	}
	return next, nil
}
