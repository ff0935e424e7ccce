package sharefetch

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// Config is what the manager needs.
type Config struct {
	Persister sharestate.Persister
	Store     *partition.Store
	Clock     clock.Clock
	// Settings are a group's effective share settings.
	Settings func(group string) Settings
	// MaxSessions is group.share.max.share.sessions (default 2000).
	MaxSessions int
	NodeID      int32
}

// Manager is Kafka's SharePartitionManager: the share-partitions in use,
// created (and their state read) on first use, and the share sessions.
type Manager struct {
	cfg Config

	mu       sync.Mutex // guards parts, sessions, avail
	parts    map[sharestate.Key]*SharePartition
	sessions map[sessionKey]*session
	// avail is closed (and replaced) when records become acquirable
	// again (released, timed out), so waiting fetches look again.
	avail chan struct{}
}

type tidp struct {
	topic     [16]byte
	partition int32
}

type sessionKey struct{ group, member string }

// session is a share session (ShareSessionCache): the partitions a
// member fetches and the epoch its next request must bring.
type session struct {
	epoch int32
	// order is the session's partitions, each once, in the order they
	// joined (for the round-robin start): Kafka's ordered set
	// (ImplicitLinkedHashCollection), with no second copy to keep in step.
	order []tidp
	next  int
	done  chan struct{} // closed when the session is removed or replaced
}

// endLocked ends s: its disconnect watcher returns. REQUIRES: m.mu held.
func (s *session) endLocked() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
}

// NewManager returns an empty manager.
func NewManager(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 2000
	}
	return &Manager{cfg: cfg, parts: map[sharestate.Key]*SharePartition{}, sessions: map[sessionKey]*session{}, avail: make(chan struct{})}
}

func (m *Manager) notifyAvailable() {
	m.mu.Lock()
	close(m.avail)
	m.avail = make(chan struct{})
	m.mu.Unlock()
}

// partition returns the share-partition, creating it; code is
// UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION for a partition we do not
// have.
func (m *Manager) partition(group string, tp tidp) (*SharePartition, *partition.Log, int16) {
	log, code := m.topicLog(tp)
	if code != 0 {
		return nil, nil, code
	}
	k := sharestate.Key{GroupID: group, TopicID: tp.topic, Partition: tp.partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	sp := m.parts[k]
	if sp == nil || sp.log != Log(log) {
		sp = newSharePartition(k, log, m.cfg.Persister, m.notifyAvailable)
		m.parts[k] = sp
	}
	return sp, log, 0
}

// topicLog is the log of tp, or UNKNOWN_TOPIC_ID /
// UNKNOWN_TOPIC_OR_PARTITION.
func (m *Manager) topicLog(tp tidp) (*partition.Log, int16) {
	t := m.cfg.Store.TopicByID(tp.topic)
	if t == nil {
		return nil, kerr.UnknownTopicID.Code
	}
	if tp.partition < 0 || int(tp.partition) >= len(t.Partitions) {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	return t.Partitions[tp.partition], 0
}

// dropUnloaded forgets sp when its state could not be read (as Kafka
// removes a share-partition that failed to initialize from its cache): a
// fetch for a partition with no state, from any group id, holds nothing.
func (m *Manager) dropUnloaded(sp *SharePartition) {
	if sp.Loaded() {
		return
	}
	m.mu.Lock()
	if m.parts[sp.key] == sp {
		delete(m.parts, sp.key)
	}
	m.mu.Unlock()
}

// Forget drops the in-memory share-partitions of group (its state was
// reset, altered or deleted through the persister): the next use reads
// the state again.
func (m *Manager) Forget(group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if k.GroupID == group {
			delete(m.parts, k)
		}
	}
}

// TopicsDeleted drops the share-partitions of the deleted topics (as
// Kafka's share-partition listener on partition deletion), so their
// in-flight windows are not kept, fetched past or released on a member's
// leave. Sessions keep naming them: a fetch answers UNKNOWN_TOPIC_ID for
// such a partition (Kafka's answer) until the client forgets it.
func (m *Manager) TopicsDeleted(ids [][16]byte) {
	deleted := make(map[[16]byte]bool, len(ids))
	for _, id := range ids {
		deleted[id] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if deleted[k.TopicID] {
			delete(m.parts, k)
		}
	}
}

// ReleaseMember releases what member holds in group's share-partitions
// and closes its session (it left the group or was fenced).
func (m *Manager) ReleaseMember(group, member string) {
	m.mu.Lock()
	if s := m.sessions[sessionKey{group, member}]; s != nil {
		s.endLocked()
		delete(m.sessions, sessionKey{group, member})
	}
	var sps []*SharePartition
	for k, sp := range m.parts {
		if k.GroupID == group {
			sps = append(sps, sp)
		}
	}
	m.mu.Unlock()
	s := m.cfg.Settings(group)
	now := m.cfg.Clock.Now()
	for _, sp := range sps {
		sp.ReleaseMember(member, s, now)
	}
}

// sessionFor applies the epoch rules of a ShareFetch or ShareAcknowledge
// (epoch 0 opens a session, -1 closes one, otherwise it must be the
// session's); the returned session is already moved to its next epoch.
// newParts are added first (epoch 0: the session's only partitions).
func (m *Manager) sessionFor(key sessionKey, epoch int32, newParts, forget []tidp, fetch bool) (*session, int16) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[key]
	switch {
	case epoch == 0:
		if !fetch {
			return nil, kerr.InvalidShareSessionEpoch.Code
		}
		if s == nil && len(m.sessions) >= m.cfg.MaxSessions {
			return nil, kerr.ShareSessionLimitReached.Code
		}
		if s != nil {
			s.endLocked()
		}
		s = &session{done: make(chan struct{})}
		m.sessions[key] = s
	case epoch == -1:
		if s == nil {
			return nil, kerr.ShareSessionNotFound.Code
		}
		s.endLocked()
		delete(m.sessions, key)
		return s, 0
	case epoch < -1:
		return nil, kerr.InvalidShareSessionEpoch.Code
	default:
		if s == nil {
			return nil, kerr.ShareSessionNotFound.Code
		}
		if s.epoch != epoch {
			return nil, kerr.InvalidShareSessionEpoch.Code
		}
	}
	s.update(newParts, forget)
	s.epoch++
	if s.epoch <= 0 {
		s.epoch = 1 // wraps as Kafka's
	}
	return s, 0
}

// update adds newParts the session lacks, at its end, and removes forget.
// The index of the order is built only for a request that changes it.
func (s *session) update(newParts, forget []tidp) {
	if len(newParts) == 0 && len(forget) == 0 {
		return
	}
	in := make(map[tidp]struct{}, len(s.order)+len(newParts))
	for _, tp := range s.order {
		in[tp] = struct{}{}
	}
	for _, tp := range newParts {
		if _, ok := in[tp]; !ok {
			in[tp] = struct{}{}
			s.order = append(s.order, tp)
		}
	}
	if len(forget) == 0 {
		return
	}
	for _, tp := range forget {
		delete(in, tp)
	}
	s.order = slices.DeleteFunc(s.order, func(tp tidp) bool {
		_, keep := in[tp]
		return !keep
	})
}

// sessionParts is a copy of the session's partitions, starting at its
// rotating start (so one busy partition does not starve the others).
func (m *Manager) sessionParts(s *session) []tidp {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(s.order)
	out := make([]tidp, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, s.order[(s.next+i)%n])
	}
	if n > 0 {
		s.next = (s.next + 1) % n
	}
	return out
}

// ValidMemberID is Kafka's KafkaApis.isMemberIdValid for the share APIs:
// non-empty and at most 36 UTF-16 code units (a UUID's string), so a
// client cannot key share sessions with ids of any length.
func ValidMemberID(id string) bool {
	return id != "" && len(utf16.Encode([]rune(id))) <= 36
}

// InvalidMemberIDMessage is Kafka's message for a member id
// ValidMemberID refuses (INVALID_REQUEST).
const InvalidMemberIDMessage = "Invalid member id in the request."

func ptr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ackBatches converts the request's acknowledgement batches.
func fetchAcks(bs []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) []AckBatch {
	out := make([]AckBatch, 0, len(bs))
	for _, b := range bs {
		out = append(out, AckBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, Types: b.AcknowledgeTypes})
	}
	return out
}

func ackAcks(bs []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) []AckBatch {
	out := make([]AckBatch, 0, len(bs))
	for _, b := range bs {
		out = append(out, AckBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, Types: b.AcknowledgeTypes})
	}
	return out
}

// acknowledge applies one partition's acknowledgements.
func (m *Manager) acknowledge(group, member string, tp tidp, batches []AckBatch, renew bool, s Settings) int16 {
	sp, _, code := m.partition(group, tp)
	if code != 0 {
		return code
	}
	code = sp.Acknowledge(member, batches, renew, s, m.cfg.Clock.Now())
	if code != 0 {
		m.dropUnloaded(sp)
	}
	return code
}

// Authorized reports whether the requester may READ the topic of id; nil
// allows every topic. It is asked on every request, for every partition
// of the session and of the request (Kafka's filterByAuthorized over
// getErroneousAndValidTopicIdPartitions), so READ taken away stops a
// session at its next fetch.
type Authorized func(topicID [16]byte) bool

func (a Authorized) ok(id [16]byte) bool { return a == nil || a(id) }

// ShareFetch serves a ShareFetch: the session's epoch rules, the
// piggybacked acknowledgements, then records acquired for the member
// from the session's partitions, waiting up to MaxWait for some.
// Partitions of topics authorized refuses are answered
// TOPIC_AUTHORIZATION_FAILED (requested ones are not added to the
// session) and neither acknowledged nor acquired from.
func (m *Manager) ShareFetch(ctx context.Context, req *kmsg.ShareFetchRequest, authorized Authorized) *kmsg.ShareFetchResponse {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(code int16) *kmsg.ShareFetchResponse {
		resp.ErrorCode = code
		return resp
	}
	group, member := ptr(req.GroupID), ptr(req.MemberID)
	if !ValidMemberID(member) {
		msg := InvalidMemberIDMessage
		resp.ErrorMessage = &msg
		return fail(kerr.InvalidRequest.Code)
	}
	if group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	var add, forget []tidp
	hasAcks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if authorized.ok(t.TopicID) {
				add = append(add, tidp{t.TopicID, p.Partition})
			}
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, tidp{t.TopicID, p})
		}
	}
	if req.ShareSessionEpoch == 0 && hasAcks {
		return fail(kerr.InvalidRequest.Code)
	}
	if req.IsRenewAck && (req.MaxWaitMillis != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxBytes != 0) {
		return fail(kerr.InvalidRequest.Code)
	}
	settings := m.cfg.Settings(group)
	resp.AcquisitionLockTimeoutMillis = int32(settings.LockDuration / time.Millisecond)
	if req.IsRenewAck && !settings.RenewEnabled {
		return fail(kerr.InvalidRequest.Code)
	}
	key := sessionKey{group, member}
	sess, code := m.sessionFor(key, req.ShareSessionEpoch, add, forget, true)
	if code != 0 {
		return fail(code)
	}
	if req.ShareSessionEpoch == 0 && ctx.Done() != nil {
		// As Kafka's connection disconnect listener: the session lives
		// as long as the connection that opened it.
		go m.dropOnDisconnect(ctx, key, sess)
	}

	out := newFetchResponse(resp, m.cfg.NodeID)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := tidp{t.TopicID, p.Partition}
			rp := out.part(tp)
			if !authorized.ok(t.TopicID) {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				if len(p.AcknowledgementBatches) > 0 {
					rp.AcknowledgeErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				continue
			}
			if len(p.AcknowledgementBatches) > 0 {
				rp.AcknowledgeErrorCode = m.acknowledge(group, member, tp, fetchAcks(p.AcknowledgementBatches), req.IsRenewAck, settings)
			}
		}
	}
	if req.ShareSessionEpoch == -1 {
		// The final fetch: acknowledgements only, then what the member
		// still holds is released.
		m.releaseSession(group, member, sess, settings)
		return out.finish()
	}
	if req.IsRenewAck {
		return out.finish()
	}
	var parts []tidp
	for _, tp := range m.sessionParts(sess) {
		if authorized.ok(tp.topic) {
			parts = append(parts, tp)
		} else {
			out.part(tp).ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
	}
	m.fetchInto(ctx, out, group, member, parts, req, settings)
	return out.finish()
}

// dropOnDisconnect removes the session (if it is still key's) and
// releases what the member holds in it once ctx, the connection that
// opened it, ends.
func (m *Manager) dropOnDisconnect(ctx context.Context, key sessionKey, s *session) {
	select {
	case <-ctx.Done():
	case <-s.done:
		return
	}
	m.mu.Lock()
	mine := m.sessions[key] == s
	if mine {
		s.endLocked()
		delete(m.sessions, key)
	}
	m.mu.Unlock()
	if mine {
		m.releaseSession(key.group, key.member, s, m.cfg.Settings(key.group))
	}
}

// releaseSession releases what member holds in the partitions of a closed
// session.
func (m *Manager) releaseSession(group, member string, s *session, settings Settings) {
	now := m.cfg.Clock.Now()
	for _, tp := range s.order {
		if sp, _, code := m.partition(group, tp); code == 0 {
			sp.ReleaseMember(member, settings, now)
			m.dropUnloaded(sp)
		}
	}
}

// fetchInto acquires records from parts, long-polling while none came.
func (m *Manager) fetchInto(ctx context.Context, out *fetchResponse, group, member string, parts []tidp, req *kmsg.ShareFetchRequest, s Settings) {
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = 500
	}
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 50 << 20
	}
	partMax := map[tidp]int32{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if p.PartitionMaxBytes > 0 {
				partMax[tidp{t.TopicID, p.Partition}] = p.PartitionMaxBytes
			}
		}
	}
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	expired := req.MaxWaitMillis <= 0
	for {
		m.mu.Lock()
		avail := m.avail
		m.mu.Unlock()
		var waits []<-chan struct{}
		var earliest time.Time
		got, bytes := 0, int32(0)
		for _, tp := range parts {
			if got >= maxRecords || bytes >= maxBytes {
				break
			}
			sp, log, code := m.partition(group, tp)
			if code != 0 {
				out.part(tp).ErrorCode = code
				continue
			}
			waits = append(waits, log.Wait())
			pm := maxBytes - bytes
			if v, ok := partMax[tp]; ok && v < pm {
				pm = v
			}
			f := sp.Acquire(member, maxRecords-got, pm, s, m.cfg.Clock.Now())
			rp := out.part(tp)
			rp.CurrentLeader.LeaderEpoch = log.LeaderEpoch()
			if f.Code != 0 {
				rp.ErrorCode = f.Code
				if f.Message != "" {
					msg := f.Message
					rp.ErrorMessage = &msg
				}
				m.dropUnloaded(sp)
				continue
			}
			if len(f.Acquired) > 0 {
				rp.Records = f.Records
				for _, a := range f.Acquired {
					rp.AcquiredRecords = append(rp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
						FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, DeliveryCount: a.DeliveryCount,
					})
					got += int(a.LastOffset - a.FirstOffset + 1)
				}
				bytes += int32(len(f.Records))
			}
			if e := sp.NextExpiry(); !e.IsZero() && (earliest.IsZero() || e.Before(earliest)) {
				earliest = e
			}
		}
		if got > 0 && bytes >= req.MinBytes || expired || len(waits) == 0 {
			return
		}
		if timer == nil {
			timer = m.cfg.Clock.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		}
		var lockTimer clock.Timer
		var lockC <-chan time.Time
		if !earliest.IsZero() {
			lockTimer = m.cfg.Clock.NewTimer(max(earliest.Sub(m.cfg.Clock.Now()), time.Millisecond))
			lockC = lockTimer.C()
		}
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(avail)},
		}
		if lockC != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(lockC)})
		}
		for _, w := range waits {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
		}
		chosen, _, _ := reflect.Select(cases)
		if lockTimer != nil {
			lockTimer.Stop()
		}
		switch chosen {
		case 0:
			return
		case 1:
			expired = true
		}
		if got > 0 {
			return // what was acquired is answered, not held while waiting for more bytes
		}
	}
}

// ShareAcknowledge serves a ShareAcknowledge: the session's epoch rules
// (epoch 0 is not allowed), then each partition's acknowledgements (those
// of topics authorized refuses answered TOPIC_AUTHORIZATION_FAILED).
func (m *Manager) ShareAcknowledge(req *kmsg.ShareAcknowledgeRequest, authorized Authorized) *kmsg.ShareAcknowledgeResponse {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(code int16) *kmsg.ShareAcknowledgeResponse {
		resp.ErrorCode = code
		return resp
	}
	group, member := ptr(req.GroupID), ptr(req.MemberID)
	if !ValidMemberID(member) {
		msg := InvalidMemberIDMessage
		resp.ErrorMessage = &msg
		return fail(kerr.InvalidRequest.Code)
	}
	if group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	settings := m.cfg.Settings(group)
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(settings.LockDuration / time.Millisecond)
	}
	if req.IsRenewAck && !settings.RenewEnabled {
		return fail(kerr.InvalidRequest.Code)
	}
	sess, code := m.sessionFor(sessionKey{group, member}, req.ShareSessionEpoch, nil, nil, false)
	if code != 0 {
		return fail(code)
	}
	byTopic := map[[16]byte]int{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := tidp{t.TopicID, p.Partition}
			i, ok := byTopic[t.TopicID]
			if !ok {
				i = len(resp.Topics)
				byTopic[t.TopicID] = i
				resp.Topics = append(resp.Topics, kmsg.ShareAcknowledgeResponseTopic{TopicID: t.TopicID})
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			if authorized.ok(t.TopicID) {
				rp.ErrorCode = m.acknowledge(group, member, tp, ackAcks(p.AcknowledgementBatches), req.IsRenewAck, settings)
			} else {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			rp.CurrentLeader.LeaderID = m.cfg.NodeID
			if log, code := m.topicLog(tp); code == 0 {
				rp.CurrentLeader.LeaderEpoch = log.LeaderEpoch()
			}
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
		}
	}
	if req.ShareSessionEpoch == -1 {
		m.releaseSession(group, member, sess, settings)
	}
	return resp
}

// fetchResponse builds a ShareFetch response's topics in request order.
type fetchResponse struct {
	resp  *kmsg.ShareFetchResponse
	node  int32
	parts map[tidp]*kmsg.ShareFetchResponseTopicPartition
	order []tidp
}

func newFetchResponse(resp *kmsg.ShareFetchResponse, node int32) *fetchResponse {
	return &fetchResponse{resp: resp, node: node, parts: map[tidp]*kmsg.ShareFetchResponseTopicPartition{}}
}

func (f *fetchResponse) part(tp tidp) *kmsg.ShareFetchResponseTopicPartition {
	if p := f.parts[tp]; p != nil {
		return p
	}
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = tp.partition
	p.CurrentLeader.LeaderID = f.node
	f.parts[tp] = &p
	f.order = append(f.order, tp)
	return &p
}

// finish lays out the partitions by topic; every partition touched (in
// the request, fetched from, or failed) is answered.
func (f *fetchResponse) finish() *kmsg.ShareFetchResponse {
	byTopic := map[[16]byte]int{}
	for _, tp := range f.order {
		i, ok := byTopic[tp.topic]
		if !ok {
			i = len(f.resp.Topics)
			byTopic[tp.topic] = i
			f.resp.Topics = append(f.resp.Topics, kmsg.ShareFetchResponseTopic{TopicID: tp.topic})
		}
		p := f.parts[tp]
		if p.Records == nil {
			p.Records = []byte{}
		}
		f.resp.Topics[i].Partitions = append(f.resp.Topics[i].Partitions, *p)
	}
	return f.resp
}
