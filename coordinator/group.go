package coordinator

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
)

// groupState is a classic group's state; see the package doc.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

type protocol struct {
	name     string
	metadata []byte
}

// member is one member of a group. Owned by the group's goroutine.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol
	assignment       []byte
	joinCh           chan *kmsg.JoinGroupResponse // non-nil: awaiting join
	joinVersion      int16
	syncCh           chan *kmsg.SyncGroupResponse // non-nil: awaiting sync
	syncVersion      int16
	// deadline is the session expiry. It counts while the member is not
	// awaiting a join or sync, and always while it is new.
	deadline time.Time
	// isNew marks a member added in the current join phase, until that
	// phase completes (Kafka's MemberMetadata.isNew): its deadline is
	// newMemberJoinTimeout and runs while its JoinGroup waits.
	isNew bool
}

// newMemberJoinTimeout is Kafka's NewMemberJoinTimeoutMs (KAFKA-7610): a
// new member's JoinGroup that the join phase has not answered by then is
// dropped with the member, since a client that timed out and retried
// would otherwise leave a defunct member behind.
const newMemberJoinTimeout = 5 * time.Minute

// sessionDeadline is when the member expires; zero while it waits in a
// join or sync as an old member (Kafka's hasSatisfiedHeartbeat).
func (m *member) sessionDeadline() time.Time {
	if !m.isNew && (m.joinCh != nil || m.syncCh != nil) {
		return time.Time{}
	}
	return m.deadline
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// sameProtocols reports whether a rejoin carries the member's protocols
// unchanged (Kafka's MemberMetadata.matches).
func (m *member) sameProtocols(ps []protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || !bytes.Equal(ps[i].metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// summary is what ListGroups needs, published by the group's goroutine.
type summary struct {
	state        groupState
	protocolType string
	consumer     string // the consumer group state; "" for a classic group
	share        string // the share group state; "" if not a share group
	streams      string // the streams group state; "" for another group
}

// group is one group; everything but reqs, done, sum and the run fields
// is owned by the goroutine running run.
type group struct {
	c    *Coordinator
	id   string
	log  zerolog.Logger
	reqs chan func()
	done chan struct{} // closed when the goroutine exits (Dead or Close)
	sum  atomic.Pointer[summary]

	// An idle group parks: its goroutine exits without closing done and
	// the next do starts it again (park.go), so groups that only hold
	// offsets cost no goroutine. runMu guards running and senders.
	runMu   sync.Mutex
	running bool // a goroutine runs g.run
	senders int  // do calls between wake and their hand-off

	state        groupState
	stateSince   time.Time
	protocolType string // "" for a group that only commits offsets
	protocol     string // selected protocol of the current generation
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string    // group.instance.id -> member id
	pending      map[string]time.Time // ids told MEMBER_ID_REQUIRED -> expiry
	pendingSync  map[string]struct{}
	syncDeadline time.Time

	// The join phase (PreparingRebalance) ends at joinDeadline. The
	// initial delayed join of an empty group extends itself while new
	// members arrive, up to initialRemaining.
	joinDeadline     time.Time
	initialJoin      bool
	initialRemaining time.Duration
	newMemberJoined  bool

	offsets map[topicPartition]offsetEntry

	// cg is set while the group is a KIP-848 consumer group
	// (consumer_group.go); the classic fields then stay Empty.
	cg *consumerGroup
	// sg is set while the group is a KIP-932 share group (share_group.go).
	sg *shareGroup
	// stg is set while the group is a KIP-1071 streams group
	// (streams_group.go).
	stg *streamsGroup

	// txnOffsets are the pending transactional offset commits by producer
	// id (txn_offsets.go); a producer with an empty map still has an open
	// transaction on the group.
	txnOffsets map[int64]map[topicPartition]offsetEntry

	timer   clock.Timer
	timerAt time.Time

	// replies are answers to blocked JoinGroup and SyncGroup calls held
	// until publish: a member that gets its answer and at once lists or
	// describes the group sees the state the answer was given in.
	replies []reply
}

// reply is one held answer (answerJoin, answerSync).
type reply struct {
	join  chan *kmsg.JoinGroupResponse
	jresp *kmsg.JoinGroupResponse
	sync  chan *kmsg.SyncGroupResponse
	sresp *kmsg.SyncGroupResponse
}

// answerJoin queues r for ch; publish sends it.
func (g *group) answerJoin(ch chan *kmsg.JoinGroupResponse, r *kmsg.JoinGroupResponse) {
	g.replies = append(g.replies, reply{join: ch, jresp: r})
}

// answerSync queues r for ch; publish sends it.
func (g *group) answerSync(ch chan *kmsg.SyncGroupResponse, r *kmsg.SyncGroupResponse) {
	g.replies = append(g.replies, reply{sync: ch, sresp: r})
}

// sendReplies sends the held answers; code != 0 replaces each with that
// error, which only recoverPanic asks for (a panicked group's answers
// describe a state it no longer has). Every channel has room for its one
// answer, so this never blocks.
func (g *group) sendReplies(code int16) {
	for _, r := range g.replies {
		switch {
		case r.join != nil && code != 0:
			r.join <- g.joinError(r.jresp.Version, r.jresp.MemberID, code)
		case r.join != nil:
			r.join <- r.jresp
		case code != 0:
			r.sync <- &kmsg.SyncGroupResponse{Version: r.sresp.Version, ErrorCode: code}
		default:
			r.sync <- r.sresp
		}
	}
	clear(g.replies)
	g.replies = g.replies[:0]
}

func newGroup(c *Coordinator, id string) *group {
	g := &group{
		c:          c,
		id:         id,
		log:        c.log.With().Str("group", id).Logger(),
		reqs:       make(chan func()),
		done:       make(chan struct{}),
		stateSince: c.clock.Now(),
		members:    map[string]*member{},
		static:     map[string]string{},
		pending:    map[string]time.Time{},
		offsets:    map[topicPartition]offsetEntry{},
		txnOffsets: map[int64]map[topicPartition]offsetEntry{},
	}
	g.publish()
	return g
}

func (g *group) publish() {
	s := g.sum.Load()
	consumer := ""
	if g.cg != nil {
		consumer = g.cg.state().String()
	}
	share := ""
	if g.sg != nil {
		share = g.sg.state()
	}
	streams := ""
	if g.stg != nil {
		streams = g.stg.state().String()
	}
	if s == nil || s.state != g.state || s.protocolType != g.protocolType || s.consumer != consumer || s.share != share || s.streams != streams {
		g.sum.Store(&summary{state: g.state, protocolType: g.protocolType, consumer: consumer, share: share, streams: streams})
	}
	g.sendReplies(0) // after the summary they were given in
}

// do runs f on the group's goroutine; false if the group is gone (Dead
// or the coordinator closed). ctx is deliberately not a way out: Kafka
// fully processes a request it has read even if its client hangs up, so
// an OffsetCommit or LeaveGroup sent just before a close still happens
// (and a select on a cancelled ctx would drop it half of the time). The
// group goroutine never blocks for long, so this hand-off is short; a
// caller that waits for an answer (JoinGroup, SyncGroup) still selects
// on ctx while waiting.
func (g *group) do(_ context.Context, f func()) bool {
	if !g.wake() {
		return false
	}
	select {
	case g.reqs <- f: // the goroutine counts it taken (handedOff)
		return true
	case <-g.done:
		g.handedOff()
		return false
	}
}

// run is the group's goroutine: it serves requests and timers until the
// group goes Dead, the coordinator closes, or the group is idle and
// parks (returning without closing done).
func (g *group) run() {
	parked := false
	defer func() {
		if parked {
			return // the group is no longer ours to touch
		}
		g.stopTimer()
		close(g.done)
	}()
	defer g.recoverPanic() // first: replaces the group before done closes
	for {
		if g.idle() {
			g.stopTimer()
			if parked = g.park(); parked {
				return
			}
		}
		g.armTimer()
		var tc <-chan time.Time
		if g.timer != nil {
			tc = g.timer.C()
		}
		// A due timer goes before requests, so a request sent after the
		// clock moved sees what the timer did.
		select {
		case <-tc:
			g.fireTimer()
		default:
			select {
			case <-g.c.quit:
				g.failWaiters(kerr.CoordinatorNotAvailable.Code)
				g.publish()
				return
			case f := <-g.reqs:
				g.handedOff()
				f()
			case <-tc:
				g.fireTimer()
			}
		}
		g.publish()
		if g.state == stateDead {
			g.c.removeGroup(g)
			g.failWaiters(kerr.CoordinatorNotAvailable.Code)
			g.sendReplies(0) // Dead is published already
			return
		}
	}
}

// recoverPanic handles a panic of the group's goroutine (a request's work
// or a timer's): logged at Error with the group and the stack, the
// group's membership is failed and its committed offsets kept. Blocked
// JoinGroup and SyncGroup calls get NOT_COORDINATOR, every other caller
// sees the goroutine gone (done closes), and a fresh group with the same
// offsets and pending transactional offsets, and no classic or consumer
// members, takes its place: those former members are told
// UNKNOWN_MEMBER_ID and rejoin (a share or streams group is rebuilt from
// the records it wrote, so its members go on). This
// is how Kafka's coordinator runtime contains a failed operation to its
// group (CoordinatorRuntime fails the event and keeps the shard), except
// that a half-applied membership change cannot be rolled back here, so
// the membership is dropped rather than trusted. The offsets are kept
// because a commit changes memory only after its record is written.
func (g *group) recoverPanic() {
	r := recover()
	if r == nil {
		return
	}
	g.log.Error().Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).
		Msg("group goroutine panicked: membership failed, committed offsets kept")
	g.failWaiters(kerr.NotCoordinator.Code)
	g.sendReplies(kerr.NotCoordinator.Code) // no publish follows
	g.c.replaceGroup(g)
}

// fireTimer runs the due timer's work; the timer is spent.
func (g *group) fireTimer() {
	g.timer, g.timerAt = nil, time.Time{}
	g.onTimer()
}

// failWaiters queues code as the answer of every blocked JoinGroup and
// SyncGroup. Answers queued before it stand: the next publish sends them
// all, in order, once the state they were given in is listed.
func (g *group) failWaiters(code int16) {
	for _, m := range g.members {
		if m.joinCh != nil {
			g.answerJoin(m.joinCh, g.joinError(m.joinVersion, m.id, code))
			m.joinCh = nil
		}
		if m.syncCh != nil {
			g.answerSync(m.syncCh, &kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: code})
			m.syncCh = nil
		}
	}
}

// nextDeadline is the earliest instant something in the group is due.
func (g *group) nextDeadline() time.Time {
	var at time.Time
	min := func(t time.Time) {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	if g.state == statePreparingRebalance {
		min(g.joinDeadline)
	}
	if len(g.pendingSync) > 0 {
		min(g.syncDeadline)
	}
	for _, m := range g.members {
		min(m.sessionDeadline())
	}
	for _, d := range g.pending {
		min(d)
	}
	if g.cg != nil {
		min(g.cgDeadline())
	}
	if g.sg != nil {
		min(g.sgDeadline())
	}
	if g.stg != nil {
		min(g.stgDeadline())
	}
	return at
}

// armTimer keeps one timer armed at or before the next deadline. A timer
// set for a later instant is replaced; an earlier one is kept, and when it
// fires onTimer finds nothing due and the timer is re-armed.
func (g *group) armTimer() {
	at := g.nextDeadline()
	if at.IsZero() {
		if g.timer != nil {
			g.timer.Stop()
			g.timer, g.timerAt = nil, time.Time{}
		}
		return
	}
	if g.timer != nil && !g.timerAt.After(at) {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timer = g.c.clock.NewTimer(at.Sub(g.c.clock.Now()))
	g.timerAt = at
}

// onTimer handles whatever is due.
func (g *group) onTimer() {
	now := g.c.clock.Now()
	if g.cg != nil {
		g.cgOnTimer(now)
		return
	}
	if g.sg != nil {
		g.sgOnTimer(now)
		return
	}
	if g.stg != nil {
		g.stgOnTimer(now)
		return
	}
	for id, d := range g.pending {
		if !d.After(now) {
			delete(g.pending, id)
			g.log.Debug().Str("member", id).Msg("pending member expired")
		}
	}
	if g.state == statePreparingRebalance && !g.joinDeadline.IsZero() && !g.joinDeadline.After(now) {
		if g.initialJoin && g.newMemberJoined && g.initialRemaining > 0 {
			// Kafka's InitialDelayedJoin: wait another delay while
			// members keep arriving, within the rebalance timeout.
			d := min(g.c.cfg.InitialRebalanceDelay, g.initialRemaining)
			g.initialRemaining -= d
			g.newMemberJoined = false
			g.joinDeadline = now.Add(d)
		} else {
			g.completeJoin()
		}
	}
	if len(g.pendingSync) > 0 && !g.syncDeadline.IsZero() && !g.syncDeadline.After(now) &&
		(g.state == stateCompletingRebalance || g.state == stateStable) {
		for id := range g.pendingSync {
			if m := g.members[id]; m != nil {
				g.log.Info().Str("member", id).Msg("member did not sync within the rebalance timeout; removing it")
				g.removeMember(m, kerr.UnknownMemberID.Code)
			}
		}
		g.pendingSync = nil
		g.prepareRebalance("members did not sync in time")
		g.tryCompleteJoin()
	}
	var expired []*member
	for _, m := range g.members {
		if d := m.sessionDeadline(); !d.IsZero() && !d.After(now) {
			expired = append(expired, m)
		}
	}
	for _, m := range expired {
		if m.isNew && m.joinCh != nil {
			g.log.Info().Str("member", m.id).Dur("new_member_join_timeout", newMemberJoinTimeout).Msg("new member's join did not complete in time; removing it")
		} else {
			g.log.Info().Str("member", m.id).Dur("session_timeout", m.sessionTimeout).Msg("member session expired; removing it")
		}
		g.removeMember(m, kerr.UnknownMemberID.Code)
	}
	if len(expired) > 0 {
		g.afterMemberRemoved("member session expired")
	} else if g.state == statePreparingRebalance && !g.initialJoin {
		g.tryCompleteJoin()
	}
}

func (g *group) setState(s groupState) {
	if g.state != s {
		g.state = s
		g.stateSince = g.c.clock.Now()
	}
	if s == stateDead {
		// At once, so whoever asked for the change sees the group gone.
		g.c.removeGroup(g)
		g.publish()
	}
}

// heartbeat pushes a member's session expiry out by its session timeout.
func (g *group) heartbeat(m *member) {
	m.deadline = g.c.clock.Now().Add(m.sessionTimeout)
}

func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// prepareRebalance moves the group to PreparingRebalance: pending syncs
// get REBALANCE_IN_PROGRESS, and the join phase starts (with the initial
// delay when the group was empty).
func (g *group) prepareRebalance(reason string) {
	if g.state == statePreparingRebalance || g.state == stateDead {
		return
	}
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.syncCh != nil {
				g.answerSync(m.syncCh, &kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: kerr.RebalanceInProgress.Code})
				m.syncCh = nil
			}
		}
	}
	g.pendingSync = nil
	now := g.c.clock.Now()
	rt := g.maxRebalanceTimeout()
	if g.state == stateEmpty {
		d := min(g.c.cfg.InitialRebalanceDelay, rt)
		g.initialJoin = true
		g.initialRemaining = rt - d
		g.newMemberJoined = false
		g.joinDeadline = now.Add(d)
	} else {
		g.initialJoin = false
		g.joinDeadline = now.Add(rt)
	}
	g.log.Info().Str("reason", reason).Str("from", g.state.String()).Int32("generation", g.generation).Msg("preparing to rebalance group")
	g.setState(statePreparingRebalance)
	if g.initialJoin && g.joinDeadline.Equal(now) {
		g.completeJoin()
	}
}

// tryCompleteJoin ends the join phase once every member has rejoined and
// no member id handed out with MEMBER_ID_REQUIRED is outstanding.
func (g *group) tryCompleteJoin() {
	if g.state != statePreparingRebalance || g.initialJoin {
		return
	}
	for _, m := range g.members {
		if m.joinCh == nil {
			return
		}
	}
	if len(g.pending) > 0 {
		return
	}
	g.completeJoin()
}

// completeJoin is Kafka's onCompleteJoin: members that did not rejoin are
// removed (static ones stay), the next generation starts, and every
// waiting JoinGroup is answered, the leader with the members' metadata.
func (g *group) completeJoin() {
	for _, m := range g.members {
		if m.joinCh == nil && m.instanceID == nil {
			g.log.Info().Str("member", m.id).Msg("member did not rejoin within the rebalance timeout; removing it")
			g.removeMember(m, kerr.UnknownMemberID.Code)
		}
	}
	g.joinDeadline = time.Time{}
	g.initialJoin = false
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.leader = ""
		g.setState(stateEmpty)
		g.log.Info().Int32("generation", g.generation).Msg("group is empty")
		if err := g.storeGroup(); err != nil {
			g.log.Error().Err(err).Msg("writing group metadata failed")
		}
		return
	}
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok || g.members[g.leader].joinCh == nil {
		g.pickLeader()
	}
	g.setState(stateCompletingRebalance)
	g.log.Info().Int32("generation", g.generation).Str("protocol", g.protocol).Str("leader", g.leader).Int("members", len(g.members)).Msg("rebalance completed join phase")
	g.pendingSync = make(map[string]struct{}, len(g.members))
	for id, m := range g.members {
		g.pendingSync[id] = struct{}{}
		if m.joinCh != nil {
			resp := g.joinResponse(m.joinVersion, m.id)
			if m.id == g.leader {
				resp.Members = g.memberList()
			}
			g.answerJoin(m.joinCh, resp)
			m.joinCh = nil
		}
		// Every member, static ones that did not rejoin included, starts
		// a new session, and no member is new any more.
		g.heartbeat(m)
		m.isNew = false
	}
	g.syncDeadline = g.c.clock.Now().Add(g.maxRebalanceTimeout())
}

func (g *group) pickLeader() {
	g.leader = ""
	for id, m := range g.members {
		if m.joinCh != nil {
			g.leader = id
			return
		}
		if g.leader == "" {
			g.leader = id
		}
	}
}

// memberList is what the leader gets: every member's metadata for the
// selected protocol.
func (g *group) memberList() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, kmsg.JoinGroupResponseMember{
			MemberID:         m.id,
			InstanceID:       m.instanceID,
			ProtocolMetadata: m.metadataFor(g.protocol),
		})
	}
	return out
}

// selectProtocol is Kafka's vote: among protocols every member supports,
// each member votes for the first of its own list; most votes wins (ties
// go to the candidate listed first by the leader-independent order of the
// first member's list).
func (g *group) selectProtocol() string {
	candidates := g.candidates()
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if _, ok := candidates[p.name]; ok {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	// Deterministic tie-break: walk any member's list in its order.
	for _, m := range g.members {
		for _, p := range m.protocols {
			if v, ok := votes[p.name]; ok && v > bestVotes {
				best, bestVotes = p.name, v
			}
		}
		break
	}
	return best
}

// candidates are the protocol names every member supports.
func (g *group) candidates() map[string]struct{} {
	var out map[string]struct{}
	for _, m := range g.members {
		names := map[string]struct{}{}
		for _, p := range m.protocols {
			if out == nil {
				names[p.name] = struct{}{}
			} else if _, ok := out[p.name]; ok {
				names[p.name] = struct{}{}
			}
		}
		out = names
	}
	return out
}

// supportsProtocols is Kafka's ClassicGroup.supportsProtocols: a joining
// member must share the group's protocol type and at least one protocol
// with every current member.
func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	c := g.candidates()
	for _, p := range ps {
		if _, ok := c[p.name]; ok {
			return true
		}
	}
	return false
}

// removeMember drops a member; a blocked JoinGroup of it gets code with
// no member id (Kafka's removeMemberAndUpdateGroup), so a client still
// alive joins again as a new member.
func (g *group) removeMember(m *member, code int16) {
	if m.joinCh != nil {
		g.answerJoin(m.joinCh, g.joinError(m.joinVersion, "", code))
		m.joinCh = nil
	}
	if m.syncCh != nil {
		g.answerSync(m.syncCh, &kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: code})
		m.syncCh = nil
	}
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.pickLeader()
	}
}

// afterMemberRemoved is Kafka's removeMemberAndUpdateGroup tail.
func (g *group) afterMemberRemoved(reason string) {
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalance(reason)
		g.tryCompleteJoin() // at once when nobody is left
	case statePreparingRebalance:
		g.tryCompleteJoin()
	}
}

func (g *group) joinError(version int16, memberID string, code int16) *kmsg.JoinGroupResponse {
	r := &kmsg.JoinGroupResponse{Version: version, ErrorCode: code, Generation: -1, MemberID: memberID}
	if version < 7 {
		empty := ""
		r.Protocol = &empty
	}
	return r
}

func (g *group) joinResponse(version int16, memberID string) *kmsg.JoinGroupResponse {
	pt, p := g.protocolType, g.protocol
	return &kmsg.JoinGroupResponse{
		Version:      version,
		Generation:   g.generation,
		ProtocolType: &pt,
		Protocol:     &p,
		LeaderID:     g.leader,
		MemberID:     memberID,
	}
}

// acceptJoiningMember is Kafka 3.9's rule for group.max.size, checked
// before anything else in a JoinGroup. While rebalancing, the members
// already rejoined count (the group may be over the limit after a restart
// with a smaller group.max.size; the last to rejoin are turned away);
// otherwise the members. Member ids handed out with MEMBER_ID_REQUIRED
// count in neither.
func (g *group) acceptJoiningMember(memberID string) bool {
	switch g.state {
	case statePreparingRebalance:
		if m := g.members[memberID]; m != nil && m.joinCh != nil {
			return true
		}
		awaiting := 0
		for _, m := range g.members {
			if m.joinCh != nil {
				awaiting++
			}
		}
		return awaiting < g.c.cfg.MaxGroupSize
	case stateCompletingRebalance, stateStable:
		_, ok := g.members[memberID]
		return ok || len(g.members) < g.c.cfg.MaxGroupSize
	default: // Empty, Dead
		return true
	}
}

// onLoaded is Kafka's onGroupLoaded: a group loaded with more members
// than group.max.size rebalances, so the members over the limit are
// turned away when they rejoin.
func (g *group) onLoaded() {
	if len(g.members) > g.c.cfg.MaxGroupSize {
		g.prepareRebalance("loaded group is over group.max.size")
	}
}

// join handles a JoinGroup on the group's goroutine; the answer goes to
// ch, now or when the join phase completes.
func (g *group) join(req *kmsg.JoinGroupRequest, client ClientInfo, ch chan *kmsg.JoinGroupResponse) {
	v := req.Version
	fail := func(code int16) { g.answerJoin(ch, g.joinError(v, req.MemberID, code)) }
	ps := make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		ps[i] = protocol{name: p.Name, metadata: p.Metadata}
	}
	if !g.acceptJoiningMember(req.MemberID) {
		// Kafka drops the member (or pending id) it turns away, so the
		// group sheds members that have not rejoined.
		if m := g.members[req.MemberID]; m != nil {
			g.log.Info().Str("member", m.id).Int("group_max_size", g.c.cfg.MaxGroupSize).Msg("group is full; removing member that has not rejoined")
			g.removeMember(m, kerr.GroupMaxSizeReached.Code)
		}
		delete(g.pending, req.MemberID)
		g.answerJoin(ch, g.joinError(v, "", kerr.GroupMaxSizeReached.Code))
		g.tryCompleteJoin()
		return
	}
	if g.state == stateDead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if (g.stg != nil && !g.leaveStreamsGroup()) || g.sg != nil {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if g.cg != nil && !g.leaveConsumerGroup() {
		// A classic member of a consumer group (consumer_classic.go).
		g.answerJoin(ch, g.classicJoin(req, client))
		return
	}
	if req.Reason != nil {
		g.log.Debug().Str("member", req.MemberID).Str("reason", *req.Reason).Msg("join group")
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if v == 0 || req.RebalanceTimeoutMillis <= 0 {
		rebalance = session
	}
	_, pendingKnown := g.pending[req.MemberID]
	knownMember := req.MemberID != "" && !pendingKnown
	if !g.supportsProtocols(req.ProtocolType, ps) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}

	if knownMember {
		g.joinKnown(req, ps, session, rebalance, ch)
		return
	}
	if pendingKnown {
		delete(g.pending, req.MemberID)
		g.addMember(req, req.MemberID, ps, session, rebalance, client, ch)
		return
	}
	id := newMemberID(client.ClientID)
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok && g.members[old] != nil {
			g.replaceStatic(req, g.members[old], id, ps, session, rebalance, ch)
			return
		}
		g.addMember(req, id, ps, session, rebalance, client, ch)
		return
	}
	if v >= 4 {
		// KIP-394: hand out the member id first, so a client that
		// times out does not leave an unknown member behind.
		g.pending[id] = g.c.clock.Now().Add(session)
		r := g.joinError(v, id, kerr.MemberIDRequired.Code)
		g.answerJoin(ch, r)
		return
	}
	g.addMember(req, id, ps, session, rebalance, client, ch)
}

func (g *group) addMember(req *kmsg.JoinGroupRequest, id string, ps []protocol, session, rebalance time.Duration, client ClientInfo, ch chan *kmsg.JoinGroupResponse) {
	m := &member{
		id:               id,
		instanceID:       req.InstanceID,
		clientID:         client.ClientID,
		clientHost:       client.ClientHost,
		rebalanceTimeout: rebalance,
		sessionTimeout:   session,
		protocolType:     req.ProtocolType,
		protocols:        ps,
		joinCh:           ch,
		joinVersion:      req.Version,
		// A new member cannot heartbeat before its join is answered:
		// its JoinGroup times out instead (Kafka's
		// NewMemberJoinTimeoutMs).
		isNew:    true,
		deadline: g.c.clock.Now().Add(newMemberJoinTimeout),
	}
	if len(g.members) == 0 {
		g.leader = id
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = id
	}
	// As Kafka, only a group's first join phase (generation 0) extends
	// its initial delay when members arrive.
	if g.state == statePreparingRebalance && g.generation == 0 {
		g.newMemberJoined = true
	}
	g.log.Info().Str("member", id).Str("client_id", client.ClientID).Msg("member joined group")
	switch g.state {
	case stateEmpty, stateStable, stateCompletingRebalance:
		g.prepareRebalance("member " + id + " joined")
	}
	g.tryCompleteJoin()
}

func (g *group) joinKnown(req *kmsg.JoinGroupRequest, ps []protocol, session, rebalance time.Duration, ch chan *kmsg.JoinGroupResponse) {
	v := req.Version
	fail := func(code int16) { g.answerJoin(ch, g.joinError(v, req.MemberID, code)) }
	if code := g.checkMember(req.MemberID, req.InstanceID); code != 0 {
		fail(code)
		return
	}
	m := g.members[req.MemberID]
	update := func() {
		if m.joinCh != nil && m.joinCh != ch {
			// A retried JoinGroup replaces the older one.
			g.answerJoin(m.joinCh, g.joinError(m.joinVersion, m.id, kerr.UnknownServerError.Code))
		}
		m.protocols = ps
		m.sessionTimeout = session
		m.rebalanceTimeout = rebalance
		m.joinCh = ch
		m.joinVersion = v
	}
	switch g.state {
	case statePreparingRebalance:
		update()
		g.tryCompleteJoin()
	case stateCompletingRebalance:
		if m.sameProtocols(ps) {
			// The member lost our JoinGroup answer: give it again.
			r := g.joinResponse(v, m.id)
			if m.id == g.leader {
				r.Members = g.memberList()
			}
			g.answerJoin(ch, r)
			return
		}
		update()
		g.prepareRebalance("member " + m.id + " rejoined with new metadata")
		g.tryCompleteJoin()
	case stateStable:
		if m.id != g.leader && m.sameProtocols(ps) {
			g.answerJoin(ch, g.joinResponse(v, m.id))
			return
		}
		update()
		g.prepareRebalance("leader or member with new metadata rejoined: " + m.id)
		g.tryCompleteJoin()
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

// replaceStatic is KIP-345's restart of a static member: a new member id
// takes the old one's place; the old id is fenced.
func (g *group) replaceStatic(req *kmsg.JoinGroupRequest, old *member, newID string, ps []protocol, session, rebalance time.Duration, ch chan *kmsg.JoinGroupResponse) {
	v := req.Version
	oldID := old.id
	if old.joinCh != nil {
		g.answerJoin(old.joinCh, g.joinError(old.joinVersion, oldID, kerr.FencedInstanceID.Code))
		old.joinCh = nil
	}
	if old.syncCh != nil {
		g.answerSync(old.syncCh, &kmsg.SyncGroupResponse{Version: old.syncVersion, ErrorCode: kerr.FencedInstanceID.Code})
		old.syncCh = nil
	}
	delete(g.members, oldID)
	old.id = newID
	g.members[newID] = old
	g.static[*req.InstanceID] = newID
	if _, ok := g.pendingSync[oldID]; ok {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = struct{}{}
	}
	if g.leader == oldID {
		g.leader = newID
	}
	oldProtocols := old.protocols
	old.protocols = ps
	old.sessionTimeout = session
	old.rebalanceTimeout = rebalance
	// The old id's session ends; the new id's starts (a member still new
	// in this join phase stays new).
	g.heartbeat(old)
	g.log.Info().Str("old_member", oldID).Str("member", newID).Str("instance_id", *req.InstanceID).Msg("static member rejoined with a new member id")
	switch g.state {
	case stateStable:
		if g.selectProtocol() == g.protocol {
			isLeader := g.leader == newID
			if !isLeader || v >= 9 {
				if err := g.storeGroup(); err != nil {
					// Undo, as Kafka does when the write fails.
					delete(g.members, newID)
					old.id = oldID
					old.protocols = oldProtocols
					g.members[oldID] = old
					g.static[*req.InstanceID] = oldID
					if g.leader == newID {
						g.leader = oldID
					}
					g.answerJoin(ch, g.joinError(v, "", storeErrorCode(err)))
					return
				}
				r := g.joinResponse(v, newID)
				if isLeader {
					r.Members = g.memberList()
					r.SkipAssignment = true
				}
				g.answerJoin(ch, r)
				g.heartbeat(old)
				return
			}
		}
		old.joinCh, old.joinVersion = ch, v
		g.prepareRebalance("static member " + *req.InstanceID + " rejoined")
		g.tryCompleteJoin()
	case stateCompletingRebalance:
		old.joinCh, old.joinVersion = ch, v
		g.prepareRebalance("static member " + *req.InstanceID + " rejoined")
		g.tryCompleteJoin()
	default:
		old.joinCh, old.joinVersion = ch, v
		g.tryCompleteJoin()
	}
}

// checkMember is Kafka's validateCurrentMember: a static member's id must
// be the one registered for its instance id, and the member must exist.
func (g *group) checkMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		if id, ok := g.static[*instanceID]; ok && id != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// sync handles a SyncGroup on the group's goroutine.
func (g *group) sync(req *kmsg.SyncGroupRequest, ch chan *kmsg.SyncGroupResponse) {
	v := req.Version
	fail := func(code int16) { g.answerSync(ch, &kmsg.SyncGroupResponse{Version: v, ErrorCode: code}) }
	if g.state == stateDead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if g.cg != nil {
		g.answerSync(ch, g.classicSync(req))
		return
	}
	if code := g.checkMember(req.MemberID, req.InstanceID); code != 0 {
		fail(code)
		return
	}
	if req.Generation != g.generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		fail(kerr.UnknownMemberID.Code)
	case statePreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case stateCompletingRebalance:
		delete(g.pendingSync, m.id)
		if m.syncCh != nil {
			g.answerSync(m.syncCh, &kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: kerr.UnknownServerError.Code})
		}
		m.syncCh, m.syncVersion = ch, v
		if m.id != g.leader {
			return
		}
		for _, mm := range g.members {
			mm.assignment = []byte{}
		}
		for _, a := range req.GroupAssignment {
			if mm := g.members[a.MemberID]; mm != nil {
				mm.assignment = a.MemberAssignment
			}
		}
		if err := g.storeGroup(); err != nil {
			g.log.Error().Err(err).Msg("writing group metadata failed")
			code := storeErrorCode(err)
			for _, mm := range g.members {
				mm.assignment = nil
				if mm.syncCh != nil {
					g.answerSync(mm.syncCh, &kmsg.SyncGroupResponse{Version: mm.syncVersion, ErrorCode: code})
					mm.syncCh = nil
				}
			}
			g.prepareRebalance("writing group metadata failed")
			return
		}
		g.setState(stateStable)
		g.log.Info().Int32("generation", g.generation).Msg("group is stable")
		for _, mm := range g.members {
			if mm.syncCh != nil {
				g.answerSync(mm.syncCh, g.syncResponse(mm.syncVersion, mm.assignment))
				mm.syncCh = nil
				g.heartbeat(mm)
			}
		}
	case stateStable:
		delete(g.pendingSync, m.id)
		g.answerSync(ch, g.syncResponse(v, m.assignment))
		g.heartbeat(m)
	}
}

func (g *group) syncResponse(v int16, assignment []byte) *kmsg.SyncGroupResponse {
	pt, p := g.protocolType, g.protocol
	if assignment == nil {
		assignment = []byte{}
	}
	return &kmsg.SyncGroupResponse{Version: v, ProtocolType: &pt, Protocol: &p, MemberAssignment: assignment}
}

// heartbeatReq handles a Heartbeat.
func (g *group) heartbeatReq(req *kmsg.HeartbeatRequest) int16 {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.cg != nil {
		return g.classicHeartbeat(req)
	}
	if g.state == stateEmpty {
		return kerr.UnknownMemberID.Code
	}
	if code := g.checkMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[req.MemberID]
	g.heartbeat(m)
	if g.state == statePreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// leave handles LeaveGroup's members; codes are per member.
func (g *group) leave(members []kmsg.LeaveGroupRequestMember) []int16 {
	if g.cg != nil && g.state != stateDead {
		return g.classicLeave(members)
	}
	codes := make([]int16, len(members))
	removed := false
	for i, lm := range members {
		if g.state == stateDead {
			codes[i] = kerr.CoordinatorNotAvailable.Code
			continue
		}
		id := lm.MemberID
		if lm.InstanceID != nil {
			sid, ok := g.static[*lm.InstanceID]
			switch {
			case !ok:
				codes[i] = kerr.UnknownMemberID.Code
				continue
			case id != "" && id != sid:
				codes[i] = kerr.FencedInstanceID.Code
				continue
			}
			id = sid
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			removed = true
			continue
		}
		m := g.members[id]
		if m == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		ev := g.log.Info().Str("member", id)
		if lm.Reason != nil {
			ev = ev.Str("reason", *lm.Reason)
		}
		ev.Msg("member left group")
		g.removeMember(m, kerr.UnknownMemberID.Code)
		removed = true
	}
	if removed {
		g.afterMemberRemoved("members left")
	}
	return codes
}
