package partition

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/panics"
	"github.com/kcompatd/kcompatd/internal/vfs"
)

// maxPartitions bounds a topic's partition count so a request cannot make
// the broker allocate without limit.
const maxPartitions = 1 << 16

// defaultCheckpointInterval is log.flush.offset.checkpoint.interval.ms.
const defaultCheckpointInterval = 60 * time.Second

// TopicID is a topic's 16-byte UUID (KIP-516).
type TopicID [16]byte

// Topic is an immutable snapshot of one topic.
type Topic struct {
	Name       string
	ID         TopicID
	Config     LogConfig
	Overrides  map[string]string // the topic-level configs as given
	Internal   bool              // __consumer_offsets, __transaction_state
	Partitions []*Log            // index = partition number
}

// Offsets are a partition's offsets at one instant.
type Offsets struct {
	LogStartOffset   int64
	HighWatermark    int64
	LastStableOffset int64
	LogEndOffset     int64
}

// AppendResult is what Produce answers for an appended batch.
type AppendResult struct {
	BaseOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	// Duplicate: the batch repeats one of its producer's last five
	// batches; nothing was written and BaseOffset is the original's
	// (LogAppendTime is then the original's timestamp, as Kafka answers).
	Duplicate bool
}

// ReadResult is the answer to a Read.
type ReadResult struct {
	// Records are whole batches, as stored, starting with the batch that
	// contains the requested offset, all below the bound of the read's
	// isolation (see Isolation). May be empty.
	Records []byte
	// AbortedTransactions, for ReadCommitted only, are the aborted
	// transactions overlapping [requested offset, end of Records), from
	// the .txnindex (Kafka's LocalLog.read with includeAbortedTxns). Nil
	// for ReadUncommitted and when Records is empty.
	AbortedTransactions []AbortedTxn
	Offsets
}

// Isolation is what a read may see, with Kafka's values for a Fetch's
// isolation_level.
type Isolation int8

const (
	// ReadUncommitted reads up to the high watermark.
	ReadUncommitted Isolation = 0
	// ReadCommitted reads up to the last stable offset: no batch whose
	// last offset is at or past it, and with the aborted transactions of
	// the returned range.
	ReadCommitted Isolation = 1
)

// Store is the broker's storage: topic catalog plus one Log per partition.
// The order of its locks is in LOCKING.md at the repository root.
type Store struct {
	cfg    Config
	fs     vfs.FS
	clock  clock.Clock
	logger zerolog.Logger
	lock   io.Closer
	meta   metaProperties

	catalogMu sync.Mutex   // serializes topic creation and deletion
	ckptMu    sync.Mutex   // serializes WriteCheckpoints (one temp file per checkpoint)
	mu        sync.RWMutex // guards topics, byID, closed
	topics    map[string]*Topic
	byID      map[TopicID]*Topic
	closed    bool

	recoveryBytes atomic.Int64 // .log bytes read by recovery since Open

	dyn     dynamicBroker    // dynamic broker configs (topic_config.go)
	quotas  clientQuotaStore // client quotas (client_quotas.go)
	scram   scramStore       // SCRAM credentials (scram_credentials.go)
	acl     aclStore         // ACLs (acls.go)
	offline offlineState     // an I/O error took the data dir offline (offline.go)
	// openSegs is the cache of idle inactive segments whose files are
	// open (segment_files.go).
	openSegs *openSegments

	work   *fileWork      // background file work (filework.go)
	bg     sync.WaitGroup // store-level background work: directory removals
	stop   chan struct{}
	loopWG sync.WaitGroup
}

// DefaultReplayCacheBudget is Config.ReplayCacheBudget's default, 64 MiB.
const DefaultReplayCacheBudget = 64 << 20

// Open opens (creating if needed) the data dir, takes its lock, loads the
// catalog and recovers every log.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("partition: no data dir (log.dirs)")
	}
	if cfg.FS == nil {
		cfg.FS = vfs.OS{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.RecoveryCheckpointInterval <= 0 {
		cfg.RecoveryCheckpointInterval = defaultCheckpointInterval
	}
	cfg.Defaults = cfg.Defaults.withDefaults()
	if cfg.ReplayCacheBudget <= 0 {
		cfg.ReplayCacheBudget = DefaultReplayCacheBudget
	}
	if cfg.OpenSegments <= 0 {
		cfg.OpenSegments = DefaultOpenSegments
	}
	if cfg.MaxOpenFiles <= 0 {
		cfg.MaxOpenFiles = openFileLimit()
	}
	s := &Store{
		cfg:    cfg,
		fs:     cfg.FS,
		clock:  cfg.Clock,
		logger: cfg.Logger,
		topics: map[string]*Topic{},
		byID:   map[TopicID]*Topic{},
		stop:   make(chan struct{}),
	}
	s.openSegs = &openSegments{max: cfg.OpenSegments, kick: make(chan struct{}, 1),
		maxPinnedActive: maxPinnedActive(cfg.MaxOpenFiles, cfg.OpenSegments)}
	s.work = newFileWork(s.clock, s.logger, cfg.FileWorkers)
	if err := s.fs.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("partition: creating data dir: %w", err)
	}
	lock, err := s.fs.Lock(filepath.Join(cfg.Dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("partition: data dir %s is in use by another process: %w", cfg.Dir, err)
	}
	s.lock = lock
	if err := s.load(); err != nil {
		s.closeLogs()
		lock.Close()
		return nil, err
	}
	s.loopWG.Add(3)
	go s.activeSweepLoop()
	go s.checkpointLoop()
	go s.producerExpiryLoop()
	return s, nil
}

func (s *Store) producerExpirationMs() int64 {
	if s.cfg.ProducerIDExpirationMs > 0 {
		return s.cfg.ProducerIDExpirationMs
	}
	return DefaultProducerIDExpirationMs
}

// producerExpiryLoop forgets expired producers of every log every
// producer.id.expiration.check.interval.ms (Kafka's
// PeriodicProducerExpirationCheck).
func (s *Store) producerExpiryLoop() {
	defer s.loopWG.Done()
	every := s.cfg.ProducerIDExpirationCheckInterval
	if every <= 0 {
		every = DefaultProducerIDExpirationCheckIntervalMs * time.Millisecond
	}
	for {
		t := s.clock.NewTimer(every)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C():
		}
		// A panic fails this run only (KafkaScheduler's rule).
		panics.Run(s.logger, "producer expiry panicked; it runs again at its next interval", func() {
			for _, tp := range s.Topics() {
				for _, l := range tp.Partitions {
					l.ExpireProducers(s.producerExpirationMs())
				}
			}
		})
	}
}

// load reads meta.properties, the checkpoints and the catalog, and opens
// every log.
func (s *Store) load() error {
	if err := s.loadMetaProperties(); err != nil {
		return err
	}
	if err := s.loadDynamicBrokerConfigs(); err != nil {
		return err
	}
	if err := s.loadClientQuotas(); err != nil {
		return err
	}
	if err := s.loadScramCredentials(); err != nil {
		return err
	}
	if err := s.loadACLs(); err != nil {
		return err
	}
	_, err := s.fs.Stat(filepath.Join(s.cfg.Dir, cleanShutdownFile))
	clean := err == nil
	recoveryPoints := s.readOffsetCheckpoint(recoveryPointFile)
	logStarts := s.readOffsetCheckpoint(logStartOffsetFile)

	var topics []catalogTopicJSON
	data, err := readFile(s.fs, filepath.Join(s.cfg.Dir, catalogFile), int64(s.maxMetadataBytes()))
	switch {
	case err == nil:
		if topics, err = decodeCatalog(data); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	start := s.clock.Now()
	known := map[string]bool{}
	var opens []logParams
	loaded := make([]*Topic, 0, len(topics))
	for _, ct := range topics {
		id, _ := ParseTopicID(ct.ID)
		overrides, conf := s.loadableOverrides(ct.Name, ct.Configs)
		t := &Topic{Name: ct.Name, ID: id, Config: conf, Overrides: overrides, Internal: IsInternalTopic(ct.Name)}
		if t.Overrides == nil {
			t.Overrides = map[string]string{}
		}
		t.Partitions = make([]*Log, ct.Partitions)
		loaded = append(loaded, t)
		for p := int32(0); p < ct.Partitions; p++ {
			tp := topicPartition{ct.Name, p}
			known[partitionDirName(ct.Name, p)] = true
			rp, ok := recoveryPoints[tp]
			if !ok {
				rp = -1
			}
			ls, ok := logStarts[tp]
			if !ok {
				ls = -1
			}
			opens = append(opens, logParams{topic: ct.Name, partition: p, id: id, cfg: conf, recoveryPoint: rp, logStart: ls, clean: clean})
		}
	}
	logs, err := s.openLogs(opens)
	for i, k := 0, 0; i < len(loaded); i++ {
		t := loaded[i]
		for p := range t.Partitions {
			t.Partitions[p] = logs[k]
			k++
		}
		if err != nil {
			// What opened is kept for Close; the topic is not served.
			t.Partitions = slices.DeleteFunc(t.Partitions, func(l *Log) bool { return l == nil })
			s.topics[t.Name] = t
			continue
		}
		s.topics[t.Name] = t
		s.byID[t.ID] = t
	}
	if err != nil {
		return err
	}
	if err := s.sweepDataDir(known); err != nil {
		return err
	}
	// Entries of partitions that no longer exist (a deletion that crashed
	// before rewriting the checkpoints) must not outlive this start: a
	// topic created again under the same name would inherit them.
	if staleCheckpointEntries(recoveryPoints, known) || staleCheckpointEntries(logStarts, known) {
		if err := s.WriteCheckpoints(); err != nil {
			return fmt.Errorf("partition: rewriting offset checkpoints: %w", err)
		}
	}
	// From here on a crash is unclean.
	if clean {
		if err := s.fs.Remove(filepath.Join(s.cfg.Dir, cleanShutdownFile)); err != nil {
			return err
		}
		if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
			return err
		}
	}
	s.logger.Info().Bool("clean_shutdown", clean).Int("topics", len(s.topics)).
		Int64("recovery_bytes_read", s.recoveryBytes.Load()).Dur("took", s.clock.Now().Sub(start)).Msg("storage loaded")
	return nil
}

// loadableOverrides returns a catalog topic's overrides that still
// validate, with the configuration they resolve to. An override an older
// kcompatd accepted and this one refuses (message.format.version took any
// string once) is dropped with a warning rather than refusing the data
// dir, as dynamic broker configs are; so is a set that conflicts with the
// broker defaults as a whole (min.compaction.lag.ms above a lowered
// max.compaction.lag.ms), which loses the conflicting pair only.
func (s *Store) loadableOverrides(topic string, configs map[string]string) (map[string]string, LogConfig) {
	defaults := s.dynamicDefaults()
	kept := make(map[string]string, len(configs))
	for name, v := range configs {
		if _, err := ResolveLogConfig(defaults, map[string]string{name: v}); err != nil {
			s.logger.Warn().Err(err).Str("topic", topic).Str("config", name).Msg("ignoring topic config that no longer validates")
			continue
		}
		kept[name] = v
	}
	conf, err := ResolveLogConfig(defaults, kept)
	if err != nil {
		s.logger.Warn().Err(err).Str("topic", topic).Msg("ignoring topic compaction lags that conflict")
		delete(kept, minCompactionLagConfig)
		delete(kept, maxCompactionLagConfig)
		if conf, err = ResolveLogConfig(defaults, kept); err != nil {
			s.logger.Warn().Err(err).Str("topic", topic).Msg("ignoring every topic config")
			kept, conf = map[string]string{}, defaults
		}
	}
	return kept, conf
}

// sweepDataDir removes directories of deleted topics left by a crash and
// sets aside partition directories the catalog does not know, as Kafka
// does with stray logs.
func (s *Store) sweepDataDir(known map[string]bool) error {
	entries, err := s.fs.ReadDir(s.cfg.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || known[name] {
			continue
		}
		path := filepath.Join(s.cfg.Dir, name)
		switch {
		case strings.HasSuffix(name, "-delete"):
			s.removeAsync(path)
		case strings.HasSuffix(name, "-stray"):
		case looksLikePartitionDir(name) && s.holdsNoRecords(path):
			// A topic creation the crash cut short: nothing was ever
			// appended, so there is nothing to keep.
			// Removed now, not in the background: the name may be created
			// again as soon as the store is open.
			s.logger.Info().Str("dir", name).Msg("removing empty partition directory of a topic not in the catalog")
			if err := s.fs.RemoveAll(path); err != nil {
				return err
			}
		case looksLikePartitionDir(name):
			stray := fmt.Sprintf("%s.%s-stray", path, newUUID().hex())
			s.logger.Warn().Str("dir", name).Msg("setting aside partition directory of a topic not in the catalog")
			if err := s.fs.Rename(path, stray); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdsNoRecords reports whether a partition directory's segment files
// are all empty (or it has none); an unreadable one counts as holding
// records, so it is set aside rather than removed.
func (s *Store) holdsNoRecords(dir string) bool {
	entries, err := s.fs.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), logSuffix) {
			continue
		}
		fi, err := s.fs.Stat(filepath.Join(dir, e.Name()))
		if err != nil || fi.Size() > 0 {
			return false
		}
	}
	return true
}

func looksLikePartitionDir(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return false
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return ValidateTopicName(name[:i]) == nil
}

func (s *Store) loadMetaProperties() error {
	name := filepath.Join(s.cfg.Dir, metaPropertiesFile)
	data, err := readFile(s.fs, name, 64<<10)
	if err == nil {
		m, err := decodeMetaProperties(data)
		if err != nil {
			return err
		}
		if m.NodeID != s.cfg.NodeID {
			return fmt.Errorf("partition: %s has node.id=%d but the configured node.id is %d", name, m.NodeID, s.cfg.NodeID)
		}
		s.meta = m
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	s.meta = metaProperties{ClusterID: newUUID().String(), NodeID: s.cfg.NodeID, DirectoryID: newUUID()}
	now := s.clock.Now().UTC().Format("Mon Jan 02 15:04:05 MST 2006")
	return writeFileAtomic(s.fs, name, encodeMetaProperties(s.meta, now))
}

// readOffsetCheckpoint reads a data-dir checkpoint; a missing or broken one
// means recovering everything, which is safe.
func (s *Store) readOffsetCheckpoint(file string) map[topicPartition]int64 {
	data, err := readFile(s.fs, filepath.Join(s.cfg.Dir, file), maxCheckpointFileBytes)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.logger.Warn().Err(err).Str("file", file).Msg("cannot read checkpoint")
		}
		return nil
	}
	m, err := decodeOffsetCheckpoint(data)
	if err != nil {
		s.logger.Warn().Err(err).Str("file", file).Msg("ignoring malformed checkpoint")
		return nil
	}
	return m
}

// ClusterID is the cluster.id from meta.properties.
func (s *Store) ClusterID() string { return s.meta.ClusterID }

// DirectoryID is the directory.id from meta.properties.
func (s *Store) DirectoryID() TopicID { return s.meta.DirectoryID }

// RecoveryBytesRead is how many .log bytes recovery read since Open: zero
// after a clean shutdown.
func (s *Store) RecoveryBytesRead() int64 { return s.recoveryBytes.Load() }

// CreateTopic creates a topic with n partitions (n <= 0: broker default
// num.partitions is the caller's job, Store takes n >= 1) and the given
// topic-level overrides. With validateOnly nothing is written.
func (s *Store) CreateTopic(name string, n int32, overrides map[string]string, validateOnly bool) (*Topic, error) {
	if err := ValidateTopicName(name); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, withDetail(ErrInvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	if n > MaxPartitionsPerRequest {
		return nil, withDetail(ErrTooManyPartitions, TooManyPartitionsCreateTopics)
	}
	conf, err := ResolveLogConfig(s.dynamicDefaults(), overrides)
	if err != nil {
		return nil, err
	}
	ov := make(map[string]string, len(overrides))
	for k, v := range overrides {
		ov[k] = v
	}

	s.catalogMu.Lock()
	defer s.catalogMu.Unlock()
	// Dynamic broker defaults change under catalogMu: resolve again.
	if conf, err = ResolveLogConfig(s.dynamicDefaults(), overrides); err != nil {
		return nil, err
	}
	s.mu.RLock()
	closed := s.closed
	_, exists := s.topics[name]
	collision := ""
	if !exists {
		norm := strings.ReplaceAll(name, ".", "_")
		for other := range s.topics {
			if strings.ReplaceAll(other, ".", "_") == norm {
				collision = other
				break
			}
		}
	}
	s.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case s.Offline() != nil:
		return nil, s.Offline()
	case exists:
		return nil, withDetail(ErrTopicExists, fmt.Sprintf("Topic '%s' already exists.", name))
	case collision != "":
		return nil, withDetail(ErrInvalidTopic, fmt.Sprintf("Topic '%s' collides with existing topic: %s", name, collision))
	}
	// The coordinators' internal topics are exempt: without them groups
	// and transactions do not work at all, which a low descriptor limit
	// must not cause.
	if !IsInternalTopic(name) {
		if err := s.checkPartitionCount(int64(n)); err != nil {
			return nil, err
		}
	}
	t := &Topic{Name: name, ID: newUUID(), Config: conf, Overrides: ov, Internal: IsInternalTopic(name)}
	if validateOnly {
		return t, nil
	}
	if err := s.createLogs(t, n); err != nil {
		return nil, err
	}
	if err := s.writeCatalog(name, t); err != nil {
		s.discardLogs(t.Partitions)
		return nil, err
	}
	s.publishTopic(t)
	s.logger.Info().Str("topic", name).Str("topic_id", t.ID.String()).Int32("partitions", n).Msg("topic created")
	return t, nil
}

// createLogs creates t's partitions from len(t.Partitions) up to total,
// empty, and makes their directories durable. On error it leaves none of
// them behind (t is then the caller's to drop).
func (s *Store) createLogs(t *Topic, total int32) (err error) {
	from := len(t.Partitions)
	defer func() {
		if err != nil {
			s.markOffline(err)
			s.discardLogs(t.Partitions[from:])
		}
	}()
	for p := int32(from); p < total; p++ {
		// Open set aside any directory of that name left by a crash
		// before the catalog was written, so create finds none.
		l, err := s.openLog(logParams{topic: t.Name, partition: p, id: t.ID, cfg: t.Config, recoveryPoint: -1, logStart: -1, create: true})
		if err != nil {
			return storageError(fmt.Errorf("creating %s-%d: %w", t.Name, p, err))
		}
		t.Partitions = append(t.Partitions, l)
	}
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
		return storageError(err)
	}
	return nil
}

// discardLogs undoes a failed creation: closes and removes logs this call
// created (only those: a failed open may have found a directory it must
// not touch).
func (s *Store) discardLogs(logs []*Log) {
	for _, l := range logs {
		l.close(true)
		s.fs.RemoveAll(l.dir)
	}
}

// hostedTopic returns the topic a catalog change applies to, or Kafka's
// error when the store is closed or does not have it.
func (s *Store) hostedTopic(name string) (*Topic, error) {
	s.mu.RLock()
	t, ok := s.topics[name]
	closed := s.closed
	s.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case s.Offline() != nil:
		return nil, s.Offline()
	case !ok:
		return nil, withDetail(ErrUnknownTopic, "This server does not host this topic-partition.")
	}
	return t, nil
}

// writeCatalog durably writes the catalog as it is with name's entry
// replaced by t, or removed when t is nil. REQUIRES: catalogMu held, so
// the topics cannot change before the caller publishes the change.
func (s *Store) writeCatalog(name string, t *Topic) error {
	s.mu.RLock()
	next := make(map[string]*Topic, len(s.topics)+1)
	for k, v := range s.topics {
		next[k] = v
	}
	s.mu.RUnlock()
	if t != nil {
		next[name] = t
	} else {
		delete(next, name)
	}
	data, err := s.boundedMetadata("topic catalog", encodeCatalog(next))
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, catalogFile), data); err != nil {
		// The old or the new catalog may be on disk: write nothing more.
		s.markOffline(err)
		return fmt.Errorf("%w: writing catalog: %v", ErrStorage, err)
	}
	return nil
}

// publishTopic makes t the topic of its name, once the catalog has it.
func (s *Store) publishTopic(t *Topic) {
	s.mu.Lock()
	s.topics[t.Name] = t
	s.byID[t.ID] = t
	s.mu.Unlock()
}

// DeleteTopic deletes a topic and its partition directories: the catalog
// forgets it first, then each directory is renamed to Kafka's
// "<topic>-<p>.<uuid>-delete" and removed in the background. Its logs are
// closed and their waiters woken.
func (s *Store) DeleteTopic(name string) error {
	s.catalogMu.Lock()
	defer s.catalogMu.Unlock()
	t, err := s.hostedTopic(name)
	if err != nil {
		return err
	}
	if err := s.writeCatalog(name, nil); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.topics, name)
	delete(s.byID, t.ID)
	s.mu.Unlock()
	var firstErr error
	for _, l := range t.Partitions {
		l.close(true)
	}
	// As Kafka's LogManager does on deletion, drop the topic's recovery
	// point and log start offset now: a topic created again under this
	// name (which needs catalogMu, held here) must not inherit them.
	if err := s.WriteCheckpoints(); err != nil {
		s.logger.Error().Err(err).Str("topic", name).Msg("cannot rewrite offset checkpoints after deletion")
		firstErr = err
	}
	for _, l := range t.Partitions {
		del := fmt.Sprintf("%s.%s-delete", l.dir, newUUID().hex())
		if err := s.fs.Rename(l.dir, del); err != nil {
			// The catalog no longer has the topic: the next start sets the
			// directory aside as stray.
			s.logger.Error().Err(err).Str("dir", l.dir).Msg("cannot rename deleted partition directory")
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		s.removeAsync(del)
	}
	if err := s.fs.SyncDir(s.cfg.Dir); err != nil && firstErr == nil {
		firstErr = err
	}
	s.logger.Info().Str("topic", name).Msg("topic deleted")
	if firstErr != nil {
		s.markOffline(firstErr)
		return storageError(firstErr)
	}
	return nil
}

// removeAsync removes a directory in the background.
func (s *Store) removeAsync(path string) {
	s.goBackground(func() {
		if err := s.fs.RemoveAll(path); err != nil {
			s.logger.Warn().Err(err).Str("dir", path).Msg("cannot remove deleted directory")
		}
	})
}

// goBackground runs f on the file-work pool; Close waits for it.
func (s *Store) goBackground(f func()) {
	s.bg.Add(1)
	s.work.submit(func() {
		defer s.bg.Done()
		f()
	})
}

// Topic returns the named topic, or nil.
func (s *Store) Topic(name string) *Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.topics[name]
}

// TopicByID returns the topic with that id, or nil.
func (s *Store) TopicByID(id TopicID) *Topic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

// Topics returns every topic, sorted by name.
func (s *Store) Topics() []*Topic {
	s.mu.RLock()
	out := make([]*Topic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Log returns the log of one partition, or ErrUnknownTopic.
func (s *Store) Log(topic string, partition int32) (*Log, error) {
	t := s.Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, ErrUnknownTopic
	}
	return t.Partitions[partition], nil
}

// checkpointLoop writes the recovery-point and log-start-offset
// checkpoints every RecoveryCheckpointInterval, and flushes logs whose
// flush.ms has passed (checked at the same interval).
func (s *Store) checkpointLoop() {
	defer s.loopWG.Done()
	for {
		t := s.clock.NewTimer(s.cfg.RecoveryCheckpointInterval)
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-t.C():
		}
		if s.Offline() != nil {
			continue // Kafka flushes and checkpoints only live log dirs
		}
		// A panic fails this run only (KafkaScheduler's rule).
		panics.Run(s.logger, "flush and checkpoint task panicked; it runs again at its next interval", func() {
			s.closeIdleSegments()
			s.flushDue()
			if err := s.WriteCheckpoints(); err != nil {
				s.logger.Error().Err(err).Msg("cannot write offset checkpoints")
			}
		})
	}
}

// flushDue fsyncs the logs whose flush.ms has passed since their last
// flush.
func (s *Store) flushDue() {
	now := s.clock.Now().UnixMilli()
	for _, t := range s.Topics() {
		for _, l := range t.Partitions {
			ms := l.cfg.Load().FlushMs
			if ms == 1<<63-1 || now-l.lastFlushMs.Load() < ms || l.flushed.Load() >= l.leo.Load() {
				continue
			}
			if err := l.Flush(); err != nil && !l.gone.Load() {
				l.logger.Error().Err(err).Msg("flush.ms flush failed")
			}
		}
	}
}

// WriteCheckpoints writes recovery-point-offset-checkpoint and
// log-start-offset-checkpoint for every partition.
func (s *Store) WriteCheckpoints() error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	if err := s.Offline(); err != nil {
		return err
	}
	rps := map[topicPartition]int64{}
	starts := map[topicPartition]int64{}
	for _, t := range s.Topics() {
		for _, l := range t.Partitions {
			if l.deleted.Load() {
				continue
			}
			tp := topicPartition{l.topic, l.partition}
			rps[tp] = l.flushed.Load()
			starts[tp] = l.logStart.Load()
		}
	}
	err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, recoveryPointFile), encodeOffsetCheckpoint(rps))
	if err == nil {
		err = writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, logStartOffsetFile), encodeOffsetCheckpoint(starts))
	}
	if err != nil {
		// As Kafka's LogManager: a checkpoint that cannot be written
		// takes the log dir offline.
		s.markOffline(err)
		return storageError(err)
	}
	return nil
}

// Close flushes, writes checkpoints and releases the lock. After a Close
// without errors the next Open reads no segment data.
func (s *Store) Close() error {
	s.catalogMu.Lock()
	defer s.catalogMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.loopWG.Wait()

	clean := true
	var firstErr error
	for _, t := range s.Topics() {
		for _, l := range t.Partitions {
			if err := l.close(false); err != nil {
				clean = false
				if firstErr == nil {
					firstErr = fmt.Errorf("partition: closing %s-%d: %w", l.topic, l.partition, err)
				}
			} else if !l.cleanlyClosed() {
				clean = false
			}
		}
	}
	s.bg.Wait()
	if err := s.WriteCheckpoints(); err != nil {
		clean = false
		if firstErr == nil {
			firstErr = err
		}
	}
	if clean {
		// Kafka 3.9's clean-shutdown file (CleanShutdownFileHandler).
		err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, cleanShutdownFile), []byte(`{"broker_epoch":"-1","version":"0"}`))
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := s.lock.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// closeLogs closes every open log after a failed Open.
func (s *Store) closeLogs() {
	for _, t := range s.topics {
		for _, l := range t.Partitions {
			l.close(false)
		}
	}
	s.bg.Wait()
}

// maxMetadataBytes bounds the topic catalog, the dynamic broker configs
// and the client quotas files, both when they are written and when
// start-up reads them: Config.MaxMetadataFileBytes, 64 MiB by default.
func (s *Store) maxMetadataBytes() int {
	if s.cfg.MaxMetadataFileBytes > 0 {
		return s.cfg.MaxMetadataFileBytes
	}
	return maxCheckpointFileBytes
}

// boundedMetadata returns data, or ErrMetadataTooLarge when it is larger
// than start-up reads of a metadata file.
func (s *Store) boundedMetadata(what string, data []byte) ([]byte, error) {
	if max := s.maxMetadataBytes(); len(data) > max {
		return nil, withDetail(ErrMetadataTooLarge, fmt.Sprintf("kcompatd keeps its %s in a file of at most %d bytes; this change would make it %d", what, max, len(data)))
	}
	return data, nil
}

// writeFileAtomic is the one way small metadata files are written.
func writeFileAtomic(fsys vfs.FS, name string, data []byte) error {
	return vfs.WriteFileAtomic(fsys, name, data)
}

// readFile reads a whole small file, refusing one larger than limit.
func readFile(fsys vfs.FS, name string, limit int64) ([]byte, error) {
	return vfs.ReadFileLimit(fsys, name, limit)
}

// AlterTopicConfig changes a topic's overrides: update gets a copy of the
// current set and returns the new whole set (or an error, returned as it
// is), which is validated as CreateTopic validates. update runs under the
// catalog lock, so concurrent alters cannot lose each other's change. With
// validateOnly nothing changes. The new configuration applies to the next
// append; segment.index.bytes applies to new segments.
func (s *Store) AlterTopicConfig(name string, update func(cur map[string]string) (map[string]string, error), validateOnly bool) (*Topic, error) {
	s.catalogMu.Lock()
	defer s.catalogMu.Unlock()
	old, err := s.hostedTopic(name)
	if err != nil {
		return nil, err
	}
	overrides, err := update(copyMap(old.Overrides))
	if err != nil {
		return nil, err
	}
	conf, err := ResolveLogConfig(s.dynamicDefaults(), overrides)
	if err != nil {
		return nil, err
	}
	t := &Topic{Name: old.Name, ID: old.ID, Config: conf, Overrides: copyMap(overrides), Internal: old.Internal, Partitions: old.Partitions}
	if validateOnly {
		return t, nil
	}
	if err := s.writeCatalog(name, t); err != nil {
		return nil, err
	}
	for _, l := range t.Partitions {
		c := conf
		l.cfg.Store(&c)
	}
	s.publishTopic(t)
	return t, nil
}

// Defaults is the broker-level topic config defaults in effect: the
// static ones with the dynamic broker configs applied.
func (s *Store) Defaults() LogConfig { return s.dynamicDefaults() }

// staleCheckpointEntries reports whether a checkpoint names a partition
// whose directory is not in known (the catalog's partitions).
func staleCheckpointEntries(entries map[topicPartition]int64, known map[string]bool) bool {
	for tp := range entries {
		if !known[partitionDirName(tp.Topic, tp.Partition)] {
			return true
		}
	}
	return false
}
