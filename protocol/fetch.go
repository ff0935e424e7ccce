package protocol

// Fetch: v4-v18
//
// Behavior:
//   - Partitions are read in request order (in session order for an
//     incremental fetch). Each returns whole batches from the one holding
//     the fetch offset, up to PartitionMaxBytes and what is left of the
//     response's MaxBytes (capped by fetch.max.bytes); the first partition
//     that has data returns at least one batch even if it is larger.
//   - read_uncommitted reads up to the high watermark, read_committed up to
//     the last stable offset (the partition read applies the isolation
//     level, partition.Log.ReadWith). AbortedTransactions is null for
//     read_uncommitted and a list (empty when none) for read_committed, as
//     Kafka sends them.
//   - Long poll: while the bytes read are fewer than MinBytes, wait for an
//     append to any fetched partition, MaxWaitMs, or the connection's
//     context, then read again. A partition error or a diverging epoch
//     answers at once, as Kafka's DelayedFetch does.
//   - Fetch sessions (KIP-227), see fetch_session.go.
//   - Partitions with errors found before reading (unknown topic, topic id
//     or partition) come after the partitions read, as in Kafka.
//   - Only consumers are served: a replica id >= 0 (a follower) gets
//     NOT_LEADER_OR_FOLLOWER, or UNKNOWN_LEADER_EPOCH when it sent a leader
//     epoch, per partition, as Kafka answers a replica it does not know.
//   - The record bytes are passed through as read, never decoded: one
//     read into a pooled buffer, written to the socket from there
//     (fetch_write.go), the buffer recycled after the write
//     (BenchmarkFetch, BenchmarkFetchFromStore).
//
// Version notes:
//   - v4: IsolationLevel, LastStableOffset, AbortedTransactions (the
//     oldest version Kafka 4 serves).
//   - v5: LogStartOffset in the response.
//   - v7: fetch sessions (SessionID, SessionEpoch, ForgottenTopics, the
//     top-level ErrorCode).
//   - v9: CurrentLeaderEpoch: FENCED_LEADER_EPOCH if older than ours,
//     UNKNOWN_LEADER_EPOCH if newer.
//   - v11: Rack; PreferredReadReplica (always -1: a single broker).
//   - v12: flexible; LastFetchedEpoch and DivergingEpoch.
//   - v13: topics by TopicID, UNKNOWN_TOPIC_ID; a session is bound to
//     using ids or names (FETCH_SESSION_TOPIC_ID_ERROR).
//   - v15: ReplicaState replaces ReplicaID (KIP-903).
//   - v16: CurrentLeader and NodeEndpoints with FENCED_LEADER_EPOCH and
//     NOT_LEADER_OR_FOLLOWER (KIP-951).
//   - v17: ReplicaDirectoryID (KIP-853, followers only; ignored).
//   - v18: the follower's HighWatermark per partition (KIP-1166, followers
//     only; ignored).
//
// Deliberate differences: negative MaxBytes or PartitionMaxBytes read as 0
// (Kafka fails the partition with UNKNOWN_SERVER_ERROR); no fetch quotas,
// so ThrottleMillis is 0; fetch.max.bytes is fixed at Kafka's default.
// LastFetchedEpoch is checked against the one leader epoch a single broker
// has, not an epoch history.
//
// read_committed gets the aborted transactions of the returned range from
// the partition read, which takes them from the .txnindex (an empty list
// when none overlap).

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

func init() { register(kmsg.Fetch.Int16(), 4, 18, handleFetch) }

const (
	// fetchMaxBytes is Kafka's default for fetch.max.bytes, the broker's
	// cap on one response's record bytes.
	fetchMaxBytes = 55 << 20
)

// fetchLog is what a fetch needs of a partition's log (*partition.Log);
// tests substitute an in-memory log. ReadWith reads into a buffer from
// alloc, so the record bytes can come from (and go back to) bufPools, and
// only what the isolation level may see.
type fetchLog interface {
	ReadWith(offset int64, maxBytes int32, minOne bool, iso partition.Isolation, alloc func(n int) []byte) (partition.ReadResult, error)
	Offsets() partition.Offsets
	Wait() <-chan struct{}
	LeaderEpoch() int32
}

var _ fetchLog = (*partition.Log)(nil)

// fetchTarget is one partition to answer, resolved against the catalog.
type fetchTarget struct {
	req     fetchPartitionReq
	topic   string   // name; empty for an unknown topic id
	topicID [16]byte // zero before v13
	log     fetchLog // nil when errCode is set
	errCode int16    // UNKNOWN_TOPIC_ID or UNKNOWN_TOPIC_OR_PARTITION
}

// fetchResolver finds the log of a partition of a fetch.
type fetchResolver func(usesTopicIDs bool, key sessionKey) fetchTarget

func handleFetch(s *Server, r *Request) (kmsg.Response, error) {
	return s.serveFetch(r, s.resolveFromStore)
}

// resolveFromStore resolves a partition by topic id (v13+) or name.
func (s *Server) resolveFromStore(usesTopicIDs bool, key sessionKey) fetchTarget {
	t := fetchTarget{topic: key.topic, topicID: key.topicID}
	var topic *partition.Topic
	if usesTopicIDs {
		topic = s.store.TopicByID(partition.TopicID(key.topicID))
		if topic == nil {
			t.errCode = kerr.UnknownTopicID.Code
			return t
		}
		t.topic = topic.Name
	} else {
		topic = s.store.Topic(key.topic)
		if topic == nil {
			t.errCode = kerr.UnknownTopicOrPartition.Code
			return t
		}
	}
	if key.partition < 0 || int(key.partition) >= len(topic.Partitions) || topic.Partitions[key.partition] == nil {
		t.errCode = kerr.UnknownTopicOrPartition.Code
		return t
	}
	t.log = topic.Partitions[key.partition]
	return t
}

// fetchParams are the request-wide parameters of one fetch.
type fetchParams struct {
	version      int16
	replicaID    int32
	maxWait      time.Duration
	minBytes     int32
	maxBytes     int32
	isolation    partition.Isolation
	usesTopicIDs bool
	// r is the request, whose pooled buffers (from alloc, r.readBuf)
	// hold the record bytes read until the response is written.
	r     *Request
	alloc func(n int) []byte
}

func (s *Server) serveFetch(r *Request, resolve fetchResolver) (kmsg.Response, error) {
	req, ok := r.Body.(*kmsg.FetchRequest)
	if !ok {
		return nil, fmt.Errorf("protocol: fetch handler got %T", r.Body)
	}
	v := r.Version
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.Version = v

	p := fetchParams{
		version:      v,
		replicaID:    req.ReplicaID,
		maxWait:      time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond,
		isolation:    partition.Isolation(req.IsolationLevel),
		usesTopicIDs: v >= 13,
		r:            r,
		alloc:        r.readBuf,
	}
	if v >= 15 {
		p.replicaID = req.ReplicaState.ID
	}
	// Kafka: fetchMaxBytes = min(request, fetch.max.bytes) and MinBytes
	// no larger than that.
	p.maxBytes = min(max(req.MaxBytes, 0), fetchMaxBytes)
	p.minBytes = min(req.MinBytes, p.maxBytes)
	if p.isolation != partition.ReadUncommitted && p.isolation != partition.ReadCommitted {
		// Kafka fails the request (IsolationLevel.forId throws).
		return fetchErrorResponse(req, resp, kerr.UnknownServerError.Code), nil
	}

	parts, forgotten := fetchRequestParts(req, v)
	sessionID, epoch := req.SessionID, req.SessionEpoch
	if v < 7 {
		sessionID, epoch = invalidSessionID, finalEpoch
	}
	fc := s.fetchSessions.newContext(p.usesTopicIDs, p.replicaID >= 0, sessionID, epoch, parts, forgotten, s.clock.Now().UnixMilli())
	if fc.kind == sessionError {
		resp.ErrorCode = fc.errCode
		return resp, nil
	}

	targets := make([]fetchTarget, len(fc.parts))
	for i, pr := range fc.parts {
		targets[i] = resolve(p.usesTopicIDs, pr.key)
		targets[i].req = pr
		s.authorizeFetchTarget(r, p.replicaID, &targets[i])
	}
	results, err := s.fetchLongPoll(r.Ctx, &p, targets)
	if err != nil {
		return nil, err
	}
	errCode, sid, results := s.fetchSessions.finish(&fc, results, s.clock.Now().UnixMilli())
	resp.ErrorCode, resp.SessionID = errCode, sid
	s.fillFetchTopics(resp, &p, results)
	return resp, nil
}

// fetchRequestParts lists the request's partitions, each key once (a
// repeated partition keeps its first place and its last parameters, as
// Kafka's LinkedHashMap does), and the forgotten partitions.
func fetchRequestParts(req *kmsg.FetchRequest, v int16) ([]fetchPartitionReq, []sessionKey) {
	usesTopicIDs := v >= 13
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	parts := make([]fetchPartitionReq, 0, n)
	var seen map[sessionKey]int
	for i := range req.Topics {
		t := &req.Topics[i]
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			pr := fetchPartitionReq{
				key:                   topicKey(usesTopicIDs, t.Topic, t.TopicID, rp.Partition),
				fetchOffset:           rp.FetchOffset,
				maxBytes:              max(rp.PartitionMaxBytes, 0),
				currentLeaderEpoch:    rp.CurrentLeaderEpoch,
				lastFetchedEpoch:      rp.LastFetchedEpoch,
				fetcherLogStartOffset: rp.LogStartOffset,
			}
			if v < 9 {
				pr.currentLeaderEpoch = -1
			}
			if v < 12 {
				pr.lastFetchedEpoch = -1
			}
			if n > 1 {
				if seen == nil {
					seen = make(map[sessionKey]int, n)
				}
				if at, dup := seen[pr.key]; dup {
					parts[at] = pr
					continue
				}
				seen[pr.key] = len(parts)
			}
			parts = append(parts, pr)
		}
	}
	var forgotten []sessionKey
	if v >= 7 {
		for i := range req.ForgottenTopics {
			ft := &req.ForgottenTopics[i]
			for _, part := range ft.Partitions {
				forgotten = append(forgotten, topicKey(usesTopicIDs, ft.Topic, ft.TopicID, part))
			}
		}
	}
	return parts, forgotten
}

func topicKey(usesTopicIDs bool, name string, id [16]byte, part int32) sessionKey {
	if usesTopicIDs {
		return sessionKey{topicID: id, partition: part}
	}
	return sessionKey{topic: name, partition: part}
}

// fetchLongPoll reads every target, and while fewer than MinBytes came
// back, waits for an append to one of the logs read, MaxWait, or ctx, then
// reads again. Each wait consumes an append or ends the poll, so the loop
// is bounded by the appends within MaxWait. A log whose Wait keeps
// returning the channel that already fired (closed or deleted; its reads
// fail and answer at once anyway) is not waited on again, so that even a
// log breaking that contract cannot make the poll spin.
func (s *Server) fetchLongPoll(ctx context.Context, p *fetchParams, targets []fetchTarget) ([]fetchResult, error) {
	var (
		timer   clock.Timer
		expired bool
		waits   []<-chan struct{}
		waitFor []int // target index of each of waits
		// lastFired[i] is target i's channel that last woke the poll; a
		// log returning it again is not waited on.
		lastFired []<-chan struct{}
	)
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		mayWait := !expired && p.maxWait > 0 && p.minBytes > 0
		waits, waitFor = waits[:0], waitFor[:0]
		if mayWait {
			// Take the channels before reading, so that an append between
			// the read and the wait is not missed.
			for i := range targets {
				if targets[i].log == nil {
					continue
				}
				w := targets[i].log.Wait()
				if lastFired != nil && lastFired[i] == w {
					continue
				}
				waits, waitFor = append(waits, w), append(waitFor, i)
			}
		}
		held := len(p.r.bufs)
		results, bytes, respondNow := s.readFetchTargets(p, targets)
		if !mayWait || respondNow || len(waits) == 0 || bytes >= int(p.minBytes) {
			return results, nil
		}
		// These results are read again after the wait: recycle their
		// buffers now, so a long poll holds one round's reads at most.
		results = nil
		p.r.dropBufs(held)
		if timer == nil {
			timer = s.clock.NewTimer(p.maxWait)
		}
		switch outcome, i := waitAny(ctx, timer.C(), waits); outcome {
		case waitCtx:
			if context.Cause(ctx) != errPeerEOF {
				return nil, ctx.Err()
			}
			expired = true // the peer stopped sending: answer with what there is (conn.go)
		case waitTimer:
			expired = true // read once more and answer, as Kafka's onExpiration does
		case waitAppend:
			if lastFired == nil {
				lastFired = make([]<-chan struct{}, len(targets))
			}
			lastFired[waitFor[i]] = waits[i]
		}
	}
}

type waitOutcome int8

const (
	waitAppend waitOutcome = iota
	waitTimer
	waitCtx
)

// waitAny blocks until ctx is done, the timer fires, or any of waits is
// closed; for the last it also returns the index of the channel.
func waitAny(ctx context.Context, timer <-chan time.Time, waits []<-chan struct{}) (waitOutcome, int) {
	if len(waits) == 1 {
		select {
		case <-ctx.Done():
			return waitCtx, -1
		case <-timer:
			return waitTimer, -1
		case <-waits[0]:
			return waitAppend, 0
		}
	}
	cases := make([]reflect.SelectCase, 0, len(waits)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer)},
	)
	for _, w := range waits {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
	}
	switch chosen, _, _ := reflect.Select(cases); chosen {
	case 0:
		return waitCtx, -1
	case 1:
		return waitTimer, -1
	default:
		return waitAppend, chosen - 2
	}
}

// readFetchTargets reads every target once, sharing the response's byte
// budget in order (ReplicaManager.readFromLog). It returns the results
// (partitions read first, then those that failed to resolve), the record
// bytes read, and whether a partition's error or diverging epoch means the
// response must go now.
func (s *Server) readFetchTargets(p *fetchParams, targets []fetchTarget) ([]fetchResult, int, bool) {
	results := make([]fetchResult, 0, len(targets))
	var unresolved []fetchResult
	limit := p.maxBytes
	minOne := true
	total := 0
	respondNow := false
	for i := range targets {
		t := &targets[i]
		if t.log == nil {
			unresolved = append(unresolved, fetchResult{req: t.req, topic: t.topic, resp: unresolvedPartition(t.req.key.partition, t.errCode)})
			continue
		}
		rp := s.readFetchPartition(p, t, min(t.req.maxBytes, limit), minOne)
		if n := len(rp.RecordBatches); n > 0 {
			minOne = false
			limit = max(limit-int32(min(n, fetchMaxBytes)), 0)
			total += n
		}
		if rp.ErrorCode != 0 || rp.DivergingEpoch.Epoch >= 0 {
			respondNow = true
		}
		results = append(results, fetchResult{req: t.req, topic: t.topic, resp: rp})
	}
	return append(results, unresolved...), total, respondNow
}

// unresolvedPartition is Kafka's FetchResponse.partitionResponse for a
// partition that was never read: high watermark -1, the other offsets at
// their defaults, an empty (not null) aborted list, no records.
func unresolvedPartition(part int32, code int16) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = part
	rp.ErrorCode = code
	rp.HighWatermark = -1
	rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	rp.RecordBatches = []byte{}
	return rp
}

// readErrorPartition is a partition whose read failed: every offset -1,
// null aborted list, no records (ReplicaManager's LogReadResult for an
// exception).
func readErrorPartition(part int32, code int16) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = part
	rp.ErrorCode = code
	rp.HighWatermark = -1
	rp.RecordBatches = []byte{}
	return rp
}

// readFetchPartition reads one partition (Partition.fetchRecords for a
// consumer).
func (s *Server) readFetchPartition(p *fetchParams, t *fetchTarget, maxBytes int32, minOne bool) kmsg.FetchResponseTopicPartition {
	part := t.req.key.partition
	ourEpoch := t.log.LeaderEpoch()
	if e := t.req.currentLeaderEpoch; e >= 0 && e != ourEpoch {
		code := kerr.FencedLeaderEpoch.Code
		if e > ourEpoch {
			code = kerr.UnknownLeaderEpoch.Code
		}
		return s.leaderErrorPartition(p, part, code, ourEpoch)
	}
	if p.replicaID >= 0 {
		// A follower we do not know: Kafka's followerReplicaOrThrow.
		code := kerr.NotLeaderForPartition.Code
		if t.req.currentLeaderEpoch >= 0 {
			code = kerr.UnknownLeaderEpoch.Code
		}
		return s.leaderErrorPartition(p, part, code, ourEpoch)
	}

	if lfe := t.req.lastFetchedEpoch; lfe >= 0 {
		// Partition.readRecords: check the fetcher's last fetched epoch
		// against our epoch history, which on a single broker is one epoch.
		off := t.log.Offsets()
		if lfe > ourEpoch || t.req.fetchOffset < off.LogStartOffset {
			return readErrorPartition(part, kerr.OffsetOutOfRange.Code)
		}
		if lfe == ourEpoch && off.LogEndOffset < t.req.fetchOffset {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = part
			rp.HighWatermark = off.HighWatermark
			rp.LastStableOffset = off.LastStableOffset
			rp.LogStartOffset = off.LogStartOffset
			rp.DivergingEpoch.Epoch = ourEpoch
			rp.DivergingEpoch.EndOffset = off.LogEndOffset
			rp.RecordBatches = []byte{}
			return rp
		}
	}

	rr, err := t.log.ReadWith(t.req.fetchOffset, maxBytes, minOne, p.isolation, p.alloc)
	if err != nil {
		code := s.errorCode(err) // logs what it cannot map
		if code == kerr.KafkaStorageError.Code && p.version <= 5 {
			// Old clients do not know KAFKA_STORAGE_ERROR (Kafka's
			// maybeDownConvertStorageError).
			code = kerr.NotLeaderForPartition.Code
		}
		return readErrorPartition(part, code)
	}
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = part
	rp.HighWatermark = rr.HighWatermark
	rp.LastStableOffset = rr.LastStableOffset
	rp.LogStartOffset = rr.LogStartOffset
	rp.RecordBatches = rr.Records
	if rp.RecordBatches == nil {
		rp.RecordBatches = []byte{}
	}
	if p.isolation == partition.ReadCommitted {
		// The read stopped at the LSO and listed the aborted
		// transactions of the returned range.
		rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
		for _, a := range rr.AbortedTransactions {
			rp.AbortedTransactions = append(rp.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{
				ProducerID: a.ProducerID, FirstOffset: a.FirstOffset,
			})
		}
	}
	return rp
}

// leaderErrorPartition answers FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or
// NOT_LEADER_OR_FOLLOWER; v16+ names us as the current leader for the first
// and last (KIP-951).
func (s *Server) leaderErrorPartition(p *fetchParams, part int32, code int16, ourEpoch int32) kmsg.FetchResponseTopicPartition {
	rp := readErrorPartition(part, code)
	if p.version >= 16 && (code == kerr.FencedLeaderEpoch.Code || code == kerr.NotLeaderForPartition.Code) {
		rp.CurrentLeader.LeaderID = s.cfg.NodeID
		rp.CurrentLeader.LeaderEpoch = ourEpoch
	}
	return rp
}

// fillFetchTopics groups results into topics, a new topic entry whenever
// the topic changes from the previous result (FetchResponse.toMessage
// keeps the order), and adds our endpoint when a partition names us as
// leader (v16+).
func (s *Server) fillFetchTopics(resp *kmsg.FetchResponse, p *fetchParams, results []fetchResult) {
	nameLeader := false
	for i := range results {
		r := &results[i]
		var last *kmsg.FetchResponseTopic
		if n := len(resp.Topics); n > 0 {
			last = &resp.Topics[n-1]
		}
		same := last != nil && ((p.usesTopicIDs && last.TopicID == r.req.key.topicID) ||
			(!p.usesTopicIDs && last.Topic == r.req.key.topic))
		if !same {
			t := kmsg.NewFetchResponseTopic()
			if p.usesTopicIDs {
				t.TopicID = r.req.key.topicID
				t.Topic = r.topic
			} else {
				t.Topic = r.req.key.topic
			}
			resp.Topics = append(resp.Topics, t)
			last = &resp.Topics[len(resp.Topics)-1]
		}
		last.Partitions = append(last.Partitions, r.resp)
		if r.resp.CurrentLeader.LeaderID >= 0 {
			nameLeader = true
		}
	}
	if nameLeader && p.version >= 16 {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID = s.cfg.NodeID
		b.Host, b.Port = s.advertisedFor(p.r)
		b.Rack = s.cfg.Rack
		resp.Brokers = append(resp.Brokers, b)
	}
}

// fetchErrorResponse fails the whole request (FetchRequest.getErrorResponse):
// the top-level code, and before v13 the same code on every partition.
func fetchErrorResponse(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, code int16) *kmsg.FetchResponse {
	resp.ErrorCode = code
	resp.SessionID = req.SessionID
	if req.Version < 7 {
		resp.SessionID = 0
	}
	if req.Version >= 13 {
		return resp
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		t := kmsg.NewFetchResponseTopic()
		t.Topic = rt.Topic
		for j := range rt.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = rt.Partitions[j].Partition
			rp.ErrorCode = code
			rp.HighWatermark = -1
			rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			rp.RecordBatches = []byte{}
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
