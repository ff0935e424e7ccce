package protocol

// Fetch sessions (KIP-227), as Kafka's FetchSession.scala serves them.
//
// A consumer that opts in sends SessionID 0 and epoch 0 (a full fetch); the
// broker caches the partitions of that fetch under a new session id and
// answers with the id. Later requests carry the id and the next epoch and
// list only the partitions whose fetch offset or max bytes changed, plus the
// partitions to forget; the broker reads every partition of the session and
// answers only with partitions that have records, a new high watermark or
// log start offset, or an error (an incremental fetch). Epoch -1 with an id
// closes the session; id 0 with epoch -1 is a sessionless fetch.
//
// The cache is bounded (max.incremental.fetch.session.cache.slots). When it
// is full a new session may evict, as Kafka does: first a session unused for
// longer than the eviction time, else the smallest session that is older
// than the eviction time if the new one has more partitions. When nothing can
// be evicted the full fetch is still served, with session id 0.
//
// Deliberate differences: one cache shard (Kafka 3.8+ splits the slots over
// 8 shards, which changes nothing a client can see but the id ranges).

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// defaultFetchSessionCacheSlots is Kafka's default for
	// max.incremental.fetch.session.cache.slots.
	defaultFetchSessionCacheSlots = 1000
	// fetchSessionEvictionMs is how long a session must have been unused
	// before any new session may evict it, and how old a session must be
	// before a larger one may evict it (Kafka's
	// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
	fetchSessionEvictionMs = 120_000

	// Session ids and epochs with a meaning of their own (Kafka's
	// FetchMetadata).
	invalidSessionID  = 0
	initialEpoch      = 0
	finalEpoch        = -1
	maxSessionIDRetry = 1 << 16 // bound on random id draws; the cache holds far fewer
)

// nextSessionEpoch is the epoch that follows e (FetchMetadata.nextEpoch):
// -1 stays -1, and the epoch wraps to 1, never to 0.
func nextSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return finalEpoch
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// sessionKey names a partition within a session: by topic id in sessions
// of Fetch v13+, by topic name before, as Kafka's CachedPartition compares.
type sessionKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// fetchPartitionReq is one partition of a fetch: as requested, or as
// remembered by a session for an incremental fetch.
type fetchPartitionReq struct {
	key                   sessionKey
	fetchOffset           int64
	maxBytes              int32
	currentLeaderEpoch    int32
	lastFetchedEpoch      int32
	fetcherLogStartOffset int64
}

// cachedPartition is what a session remembers of one partition: the last
// request parameters and the last high watermark and log start offset sent,
// so that an unchanged partition can be left out of the next response.
type cachedPartition struct {
	req fetchPartitionReq
	// highWatermark is the last high watermark sent; -1 (set after an
	// error) makes the next response include the partition again.
	highWatermark       int64
	localLogStartOffset int64
	prev, next          *cachedPartition
}

// fetchSession is one cached session. Guarded by fetchSessions.mu.
type fetchSession struct {
	id int32
	// epoch is the epoch the next request of this session must carry.
	epoch        int32
	privileged   bool // created by a follower (ReplicaID >= 0)
	usesTopicIDs bool // created by Fetch v13+
	createdMs    int64
	lastUsedMs   int64
	// cachedSize and the evictable flags are as of the last touch, as in
	// Kafka's EvictableKey bookkeeping.
	cachedSize            int
	evictableByAll        bool
	evictableByPrivileged bool

	parts      map[sessionKey]*cachedPartition
	head, tail *cachedPartition // read order; partitions with data move to the tail
}

func (s *fetchSession) pushBack(cp *cachedPartition) {
	cp.prev, cp.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = cp
	} else {
		s.head = cp
	}
	s.tail = cp
}

func (s *fetchSession) unlink(cp *cachedPartition) {
	if cp.prev != nil {
		cp.prev.next = cp.next
	} else {
		s.head = cp.next
	}
	if cp.next != nil {
		cp.next.prev = cp.prev
	} else {
		s.tail = cp.prev
	}
	cp.prev, cp.next = nil, nil
}

// fetchSessions is the broker's fetch session cache.
type fetchSessions struct {
	mu         sync.Mutex
	maxEntries int
	evictionMs int64
	sessions   map[int32]*fetchSession
	// newID draws a candidate session id; replaced in tests.
	newID func() int32
}

// newFetchSessions returns an empty cache with Kafka's default number of
// slots. The server calls it once, in NewServer.
func newFetchSessions(cfg Config) *fetchSessions {
	_ = cfg // the slot count is not configurable yet; see defaultFetchSessionCacheSlots
	return newFetchSessionCache(defaultFetchSessionCacheSlots, fetchSessionEvictionMs)
}

func newFetchSessionCache(maxEntries int, evictionMs int64) *fetchSessions {
	return &fetchSessions{
		maxEntries: maxEntries,
		evictionMs: evictionMs,
		sessions:   make(map[int32]*fetchSession),
		newID:      func() int32 { return rand.Int32N(math.MaxInt32) + 1 },
	}
}

// len returns the number of cached sessions.
func (c *fetchSessions) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// fetchContextKind is how one fetch request relates to the session cache
// (Kafka's FetchContext subclasses).
type fetchContextKind int8

const (
	sessionless      fetchContextKind = iota
	fullFetch                         // epoch 0: a new session is created with the response
	incrementalFetch                  // an existing session
	sessionError                      // answered with errCode and nothing else
)

// fetchContext is the outcome of matching a request against the cache:
// which partitions to read, and how to build the response.
type fetchContext struct {
	kind    fetchContextKind
	errCode int16 // sessionError only
	// parts are the partitions to read, in order.
	parts        []fetchPartitionReq
	session      *fetchSession // incrementalFetch only
	reqEpoch     int32
	usesTopicIDs bool
	privileged   bool
}

// newContext matches a request against the cache, as Kafka's
// FetchManager.newContext: a full fetch closes the session it names; an
// incremental fetch checks the id, epoch and topic-id usage, applies the
// added, changed and forgotten partitions, and advances the epoch. parts
// must hold each key once.
func (c *fetchSessions) newContext(usesTopicIDs, privileged bool, sessionID, epoch int32,
	parts []fetchPartitionReq, forgotten []sessionKey, nowMs int64,
) fetchContext {
	fc := fetchContext{reqEpoch: epoch, usesTopicIDs: usesTopicIDs, privileged: privileged}
	if epoch == initialEpoch || epoch == finalEpoch {
		if sessionID != invalidSessionID {
			c.remove(sessionID)
		}
		fc.parts = parts
		if epoch == finalEpoch {
			fc.kind = sessionless
		} else {
			fc.kind = fullFetch
		}
		return fc
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[sessionID]
	switch {
	case s == nil:
		fc.kind, fc.errCode = sessionError, kerr.FetchSessionIDNotFound.Code
		return fc
	case s.epoch != epoch:
		fc.kind, fc.errCode = sessionError, kerr.InvalidFetchSessionEpoch.Code
		return fc
	case s.usesTopicIDs != usesTopicIDs:
		fc.kind, fc.errCode = sessionError, kerr.FetchSessionTopicIDError.Code
		return fc
	}

	for _, p := range parts {
		if cp := s.parts[p.key]; cp != nil {
			cp.req = p
			continue
		}
		cp := &cachedPartition{req: p, highWatermark: -1, localLogStartOffset: -1}
		s.parts[p.key] = cp
		s.pushBack(cp)
	}
	for _, k := range forgotten {
		if cp := s.parts[k]; cp != nil {
			delete(s.parts, k)
			s.unlink(cp)
		}
	}
	if len(s.parts) == 0 {
		// Nothing left to fetch: Kafka closes the session and serves the
		// request sessionless.
		c.removeLocked(s)
		fc.kind, fc.parts = sessionless, parts
		return fc
	}
	c.touchLocked(s, nowMs)
	s.epoch = nextSessionEpoch(s.epoch)
	fc.kind, fc.session = incrementalFetch, s
	fc.parts = make([]fetchPartitionReq, 0, len(s.parts))
	for cp := s.head; cp != nil; cp = cp.next {
		fc.parts = append(fc.parts, cp.req)
	}
	return fc
}

// fetchResult is one partition of a response, with the request it answers.
type fetchResult struct {
	req fetchPartitionReq
	// topic is the topic's name (empty for an unknown topic id).
	topic string
	resp  kmsg.FetchResponseTopicPartition
}

// finish decides the response's error code, session id and partitions, as
// Kafka's updateAndGenerateResponseData: a full fetch tries to create a
// session holding every partition of the response; an incremental fetch
// keeps only partitions that changed, remembers what it sent, and moves
// partitions that returned records to the end of the session's read order
// so that the others get the byte budget next time.
func (c *fetchSessions) finish(fc *fetchContext, results []fetchResult, nowMs int64) (errCode int16, sessionID int32, out []fetchResult) {
	switch fc.kind {
	case sessionError:
		return fc.errCode, invalidSessionID, nil
	case sessionless:
		return 0, invalidSessionID, results
	case fullFetch:
		return 0, c.create(fc, results, nowMs), results
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	s := fc.session
	if s.epoch != nextSessionEpoch(fc.reqEpoch) {
		// A request with the same epoch raced this one (a duplicate).
		return kerr.InvalidFetchSessionEpoch.Code, s.id, nil
	}
	out = results[:0:0]
	for _, r := range results {
		cp := s.parts[r.req.key]
		if cp == nil {
			// Forgotten by a racing request; still answer for it.
			out = append(out, r)
			continue
		}
		if !cp.mustRespond(&r.resp) {
			continue
		}
		out = append(out, r)
		if len(r.resp.RecordBatches) > 0 {
			s.unlink(cp)
			s.pushBack(cp)
		}
	}
	return 0, s.id, out
}

// mustRespond reports whether an incremental response must include the
// partition, and records what is sent (CachedPartition.maybeUpdateResponseData).
func (cp *cachedPartition) mustRespond(p *kmsg.FetchResponseTopicPartition) bool {
	must := len(p.RecordBatches) > 0
	if cp.highWatermark != p.HighWatermark {
		must = true
		cp.highWatermark = p.HighWatermark
	}
	if cp.localLogStartOffset != p.LogStartOffset {
		must = true
		cp.localLogStartOffset = p.LogStartOffset
	}
	if p.PreferredReadReplica != -1 {
		must = true
	}
	if p.ErrorCode != 0 {
		cp.highWatermark = -1
		must = true
	}
	if p.DivergingEpoch.Epoch >= 0 {
		must = true
	}
	return must
}

// create tries to cache a new session for a full fetch and returns its id,
// or 0 if the cache is full and nothing could be evicted.
func (c *fetchSessions) create(fc *fetchContext, results []fetchResult, nowMs int64) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.maxEntries && !c.tryEvictLocked(fc.privileged, len(results), nowMs) {
		return invalidSessionID
	}
	id, ok := c.newSessionIDLocked()
	if !ok {
		return invalidSessionID
	}
	s := &fetchSession{
		id:           id,
		epoch:        nextSessionEpoch(initialEpoch),
		privileged:   fc.privileged,
		usesTopicIDs: fc.usesTopicIDs,
		createdMs:    nowMs,
		parts:        make(map[sessionKey]*cachedPartition, len(results)),
		cachedSize:   -1,
	}
	for _, r := range results {
		if old := s.parts[r.req.key]; old != nil {
			s.unlink(old)
		}
		cp := &cachedPartition{
			req:                 r.req,
			highWatermark:       r.resp.HighWatermark,
			localLogStartOffset: r.resp.LogStartOffset,
		}
		s.parts[r.req.key] = cp
		s.pushBack(cp)
	}
	c.sessions[id] = s
	c.touchLocked(s, nowMs)
	return id
}

// newSessionIDLocked draws a positive id not in use.
func (c *fetchSessions) newSessionIDLocked() (int32, bool) {
	for range maxSessionIDRetry {
		id := c.newID()
		if id == invalidSessionID || id < 0 {
			continue
		}
		if _, used := c.sessions[id]; !used {
			return id, true
		}
	}
	return invalidSessionID, false
}

// touchLocked marks a session used now and refreshes its eviction
// bookkeeping (FetchSessionCacheShard.touch).
func (c *fetchSessions) touchLocked(s *fetchSession, nowMs int64) {
	s.lastUsedMs = nowMs
	s.cachedSize = len(s.parts)
	old := nowMs-s.createdMs > c.evictionMs
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

// tryEvictLocked makes room for a new session of size partitions
// (FetchSessionCacheShard.tryEvict): a stale session goes first; else the
// least valuable evictable session, ordered by (privileged, size, id), if
// the new session is worth more.
func (c *fetchSessions) tryEvictLocked(privileged bool, size int, nowMs int64) bool {
	var lru, least *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || (s.lastUsedMs == lru.lastUsedMs && s.id < lru.id) {
			lru = s
		}
		evictable := s.evictableByAll
		if privileged {
			evictable = s.evictableByPrivileged
		}
		if evictable && (least == nil || evictableLess(s, least)) {
			least = s
		}
	}
	if lru == nil {
		return false
	}
	if nowMs-lru.lastUsedMs > c.evictionMs {
		c.removeLocked(lru)
		return true
	}
	if least == nil {
		return false
	}
	// The new key is (privileged, size, id 0); it may evict least unless
	// it compares lower.
	newLower := (!privileged && least.privileged) ||
		(privileged == least.privileged && (size < least.cachedSize || (size == least.cachedSize && 0 < least.id)))
	if newLower {
		return false
	}
	c.removeLocked(least)
	return true
}

func evictableLess(a, b *fetchSession) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.cachedSize != b.cachedSize {
		return a.cachedSize < b.cachedSize
	}
	return a.id < b.id
}

// remove closes a session by id; it reports whether one was cached.
func (c *fetchSessions) remove(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		return false
	}
	c.removeLocked(s)
	return true
}

func (c *fetchSessions) removeLocked(s *fetchSession) {
	delete(c.sessions, s.id)
}
