package coordinator

// KIP-848 consumer groups: the group epoch, the target assignment and each
// member's reconciliation towards it, as Kafka 4.x's GroupMetadataManager,
// ConsumerGroup and CurrentAssignmentBuilder do it. A consumer group lives
// on the same goroutine as a classic one (a *group with cg set); see the
// package doc for the states and rules.

import (
	"bytes"
	"cmp"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Epochs a ConsumerGroupHeartbeat carries to leave (Kafka's
// LEAVE_GROUP_MEMBER_EPOCH and LEAVE_GROUP_STATIC_MEMBER_EPOCH).
const (
	leaveEpoch       = -1
	leaveStaticEpoch = -2
)

// memberState is Kafka's MemberState; the values are those of the
// ConsumerGroupCurrentMemberAssignmentValue record's State.
type memberState int8

const (
	memberUnrevokedPartitions  memberState = 0
	memberUnreleasedPartitions memberState = 1
	memberStable               memberState = 2
)

func (s memberState) String() string {
	switch s {
	case memberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	case memberStable:
		return "STABLE"
	default:
		return "UNKNOWN"
	}
}

// cgState is Kafka's ConsumerGroup.ConsumerGroupState, derived from the
// members and epochs (maybeUpdateGroupState).
type cgState int8

const (
	cgEmpty cgState = iota
	cgAssigning
	cgReconciling
	cgStable
)

func (s cgState) String() string {
	switch s {
	case cgEmpty:
		return "Empty"
	case cgAssigning:
		return "Assigning"
	case cgReconciling:
		return "Reconciling"
	default:
		return "Stable"
	}
}

// topicIDPartition is one partition by topic id, as the consumer protocol
// names them.
type topicIDPartition struct {
	id        partition.TopicID
	partition int32
}

func compareTIP(a, b topicIDPartition) int {
	if c := bytes.Compare(a.id[:], b.id[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

// partSet is a set of partitions.
type partSet map[topicIDPartition]struct{}

func (s partSet) sorted() []topicIDPartition {
	out := make([]topicIDPartition, 0, len(s))
	for tp := range s {
		out = append(out, tp)
	}
	slices.SortFunc(out, compareTIP)
	return out
}

func (s partSet) clone() partSet {
	out := make(partSet, len(s))
	for tp := range s {
		out[tp] = struct{}{}
	}
	return out
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for tp := range s {
		if _, ok := o[tp]; !ok {
			return false
		}
	}
	return true
}

// byTopic groups a set by topic id, topics and partitions sorted.
func (s partSet) byTopic() []topicPartitions {
	var out []topicPartitions
	for _, tp := range s.sorted() {
		if n := len(out); n == 0 || out[n-1].id != tp.id {
			out = append(out, topicPartitions{id: tp.id})
		}
		out[len(out)-1].partitions = append(out[len(out)-1].partitions, tp.partition)
	}
	return out
}

type topicPartitions struct {
	id         partition.TopicID
	partitions []int32
}

func partSetOf(ts []topicPartitions) partSet {
	s := partSet{}
	for _, t := range ts {
		for _, p := range t.partitions {
			s[topicIDPartition{t.id, p}] = struct{}{}
		}
	}
	return s
}

// cgMember is one member of a consumer group. Owned by the group's
// goroutine.
type cgMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	subscribedNames  []string // sorted
	regex            string   // "" for none
	serverAssignor   string   // "" for none
	rebalanceTimeout time.Duration

	epoch, previousEpoch int32
	state                memberState
	assigned             partSet
	pendingRevocation    partSet
	// assignedAt is the member epoch at which each assigned partition
	// was given to the member: an offset commit with an older epoch is
	// accepted for a partition the member has held since then (Kafka
	// 4.3's relaxed commit check, see validateCommit).
	assignedAt map[topicIDPartition]int32

	sessionDeadline    time.Time
	revocationDeadline time.Time // zero: no revocation outstanding

	// classic is set for a member speaking the classic protocol
	// (JoinGroup/SyncGroup/Heartbeat) in this consumer group
	// (consumer_classic.go).
	classic *classicMember
}

// consumerGroup is the KIP-848 state of a group.
type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of the target assignment
	members         map[string]*cgMember
	static          map[string]string  // instance id -> member id
	target          map[string]partSet // member id -> target assignment
	owner           map[topicIDPartition]string
	// subscriptionHash is over the subscribed topics' ids and partition
	// counts when the group epoch last moved: a change (a topic created,
	// deleted or grown) bumps the epoch, as Kafka's metadata hash.
	subscriptionHash uint64
	// subNames, subTopics and subHash cache subscriptionHash's input
	// and result; subNames nil: a subscription changed since.
	subNames   []string
	subTopics  []*partition.Topic
	subHash    uint64
	regexes    map[string]*resolvedRegex
	stateSince time.Time
	// written is the value last written for each record key of the group
	// (consumer_records.go), so unchanged records are not written again.
	written map[string][]byte
}

// resolvedRegex is one subscribed regular expression and the topics it
// matched at its last refresh.
type resolvedRegex struct {
	re          *regexp.Regexp
	topics      []string
	refreshedAt time.Time
}

func newConsumerGroup(now time.Time) *consumerGroup {
	return &consumerGroup{
		members:    map[string]*cgMember{},
		static:     map[string]string{},
		target:     map[string]partSet{},
		owner:      map[topicIDPartition]string{},
		regexes:    map[string]*resolvedRegex{},
		stateSince: now,
	}
}

// memberIDs are the members' ids, sorted.
func (cg *consumerGroup) memberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (cg *consumerGroup) state() cgState {
	if len(cg.members) == 0 {
		return cgEmpty
	}
	if cg.epoch != cg.assignmentEpoch {
		return cgAssigning
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return cgReconciling
		}
	}
	return cgStable
}

// heartbeatError is a ConsumerGroupHeartbeat failure: Kafka's error code
// and exception message.
type heartbeatError struct {
	code int16
	msg  string
}

func hbErr(e *kerr.Error, msg string) *heartbeatError { return &heartbeatError{e.Code, msg} }

// heartbeatRequest is a validated ConsumerGroupHeartbeat.
type heartbeatRequest struct {
	req    *kmsg.ConsumerGroupHeartbeatRequest
	client ClientInfo
	regex  *regexp.Regexp // compiled SubscribedTopicRegex, if non-empty
}

// consumerHeartbeat serves a ConsumerGroupHeartbeat on the group's
// goroutine. The group may be a classic one: an empty classic group is
// replaced by a consumer group (Kafka's maybeDeleteEmptyClassicGroup);
// another is not a consumer group.
func (g *group) consumerHeartbeat(hr heartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	req := hr.req
	if g.state == stateDead {
		return nil, hbErr(kerr.CoordinatorNotAvailable, "")
	}
	if g.stg != nil || g.sg != nil {
		return nil, hbErr(kerr.GroupIDNotFound, "Group "+g.id+" is not a consumer group.")
	}
	if g.cg == nil {
		create := req.MemberEpoch == 0
		if !create && (g.protocolType == "" || len(g.members) == 0) {
			return nil, hbErr(kerr.GroupIDNotFound, "Consumer group "+g.id+" not found.")
		}
		switch {
		case create && len(g.members) > 0:
			// KIP-848's online upgrade (consumer_classic.go).
			if why := g.upgradeRefusal(); why != "" {
				g.log.Info().Msg(why)
				return nil, hbErr(kerr.GroupIDNotFound, why)
			}
			if e := g.upgradeToConsumerGroup(); e != nil {
				return nil, e
			}
		case !create || len(g.pending) > 0:
			return nil, hbErr(kerr.GroupIDNotFound, "Group "+g.id+" is not a consumer group.")
		default:
			if err := g.becomeConsumerGroup(); err != nil {
				return nil, &heartbeatError{storeErrorCode(err), ""}
			}
		}
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == leaveStaticEpoch {
		return g.consumerLeave(req)
	}
	return g.consumerJoinOrHeartbeat(hr)
}

// becomeConsumerGroup turns an empty classic group (or a group that only
// has offsets) into a consumer group, keeping its offsets; a classic
// group's metadata record gets a tombstone.
func (g *group) becomeConsumerGroup() error {
	if g.generation > 0 || g.protocolType != "" {
		if err := g.append([]recordbatch.Record{g.groupRecord(true)}); err != nil {
			return err
		}
	}
	g.protocolType, g.protocol, g.leader, g.generation = "", "", "", 0
	g.cg = newConsumerGroup(g.c.clock.Now())
	g.log.Info().Msg("group is a consumer group (KIP-848)")
	return nil
}

func (g *group) consumerJoinOrHeartbeat(hr heartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	req := hr.req
	cg := g.cg
	now := g.c.clock.Now()
	// Kafka's throwIfConsumerGroupIsFull, before any member check; a
	// static member taking its instance's place is not a new member.
	_, known := cg.members[req.MemberID]
	instanceKnown := false
	if req.InstanceID != nil {
		_, instanceKnown = cg.static[*req.InstanceID]
	}
	if !known && !instanceKnown && len(cg.members) >= g.c.cfg.ConsumerMaxSize {
		return nil, hbErr(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of "+itoa(g.c.cfg.ConsumerMaxSize)+" members.")
	}
	var (
		old      *cgMember // the member before this request; nil: a new one
		m        *cgMember
		replaced *cgMember // a static member this one takes over from
	)
	if req.InstanceID != nil {
		existing := cg.members[cg.static[*req.InstanceID]]
		if req.MemberEpoch == 0 {
			if existing != nil && existing.id == req.MemberID && existing.epoch != leaveStaticEpoch {
				// The same member rejoining in place (it was fenced,
				// or lost our answer): it keeps its id and is given
				// its assignment again.
				old = existing
			} else if existing != nil {
				// Kafka's throwIfInstanceIdIsUnreleased: only an
				// instance that left with epoch -2 can be taken over.
				if existing.epoch != leaveStaticEpoch {
					return nil, hbErr(kerr.UnreleasedInstanceID, "Static member with instance id "+*req.InstanceID+" in group "+g.id+" is not released.")
				}
				replaced = existing
			} else {
				old = cg.members[req.MemberID] // Kafka's getOrMaybeCreateMember
			}
		} else {
			if existing == nil {
				return nil, hbErr(kerr.UnknownMemberID, "Instance id "+*req.InstanceID+" is unknown.")
			}
			if existing.id != req.MemberID {
				return nil, hbErr(kerr.FencedInstanceID, "Static member "+req.MemberID+" with instance id "+*req.InstanceID+" was fenced by member "+existing.id+".")
			}
			if e := checkMemberEpoch(existing, req); e != nil {
				return nil, e
			}
			old = existing
		}
	} else {
		existing := cg.members[req.MemberID]
		if req.MemberEpoch != 0 {
			if existing == nil {
				return nil, hbErr(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
			}
			if e := checkMemberEpoch(existing, req); e != nil {
				return nil, e
			}
		}
		old = existing
	}

	if old != nil && replaced == nil && g.steady(old, hr, now) {
		old.sessionDeadline = now.Add(g.c.cfg.ConsumerSessionTimeout)
		return g.heartbeatResponse(req, old, false), nil
	}
	// Nothing changes in memory unless the heartbeat's records are
	// written: a failed write reverts to this (Kafka's coordinator
	// reverts its timeline snapshot and fails the request).
	snap := cg.snapshot()
	bump := false
	switch {
	case replaced != nil:
		// KIP-345 under KIP-848: the new member id takes the old
		// instance's place and assignment; the group epoch stays.
		m = &cgMember{id: req.MemberID, assigned: replaced.assigned, assignedAt: replaced.assignedAt, pendingRevocation: partSet{}, state: memberStable}
		target := cg.target[replaced.id]
		g.removeCGMember(replaced, true)
		for tp := range m.assigned {
			cg.owner[tp] = m.id
		}
		cg.target[m.id] = target
		m.subscribedNames, m.regex, m.serverAssignor = replaced.subscribedNames, replaced.regex, replaced.serverAssignor
		g.log.Info().Str("member", m.id).Str("old_member", replaced.id).Str("instance_id", *req.InstanceID).Msg("static member rejoined with a new member id")
	case old == nil:
		m = &cgMember{id: req.MemberID, assigned: partSet{}, pendingRevocation: partSet{}, assignedAt: map[topicIDPartition]int32{}, state: memberStable}
		bump = true
		g.log.Info().Str("member", m.id).Str("client_id", hr.client.ClientID).Msg("member joined consumer group")
	default:
		m = old
		if req.MemberEpoch == 0 {
			// A known member rejoining abandoned its partitions.
			g.releaseAll(m)
			m.epoch, m.previousEpoch, m.state = 0, 0, memberStable
		}
	}
	before := memberSubscription{m.subscribedNames, m.regex, m.serverAssignor}
	m.classic = nil // a ConsumerGroupHeartbeat: the member speaks the consumer protocol now
	m.clientID, m.clientHost = hr.client.ClientID, hr.client.ClientHost
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.SubscribedTopicNames != nil {
		m.subscribedNames = slices.Sorted(slices.Values(req.SubscribedTopicNames))
		m.subscribedNames = slices.Compact(m.subscribedNames)
	}
	if req.SubscribedTopicRegex != nil {
		m.regex = *req.SubscribedTopicRegex
	}
	if req.ServerAssignor != nil {
		m.serverAssignor = *req.ServerAssignor
	}
	if !before.equal(memberSubscription{m.subscribedNames, m.regex, m.serverAssignor}) {
		bump = true
	}
	if bump {
		cg.subNames = nil // a new member or a new subscription
	}
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	if m.regex != "" {
		g.refreshRegex(m.regex, hr.regex, hr.client.DescribesTopic, now)
	}
	if h := g.subscriptionHash(); h != cg.subscriptionHash {
		cg.subscriptionHash = h
		bump = true
	}
	if bump {
		cg.epoch++
		g.log.Debug().Int32("group_epoch", cg.epoch).Str("member", m.id).Msg("bumped consumer group epoch")
	}
	var recs []recordbatch.Record
	if cg.epoch > cg.assignmentEpoch {
		recs = g.computeTargetAssignment()
	}
	var owned partSet
	if req.Topics != nil {
		owned = partSet{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				owned[topicIDPartition{t.TopicID, p}] = struct{}{}
			}
		}
	}
	prevAssigned := m.assigned.clone()
	prevEpoch, prevState := m.epoch, m.state
	g.reconcile(m, owned)
	m.sessionDeadline = now.Add(g.consumerSessionTimeout())
	if m.state == memberUnrevokedPartitions {
		if prevState != memberUnrevokedPartitions || prevEpoch != m.epoch || !prevAssigned.equal(m.assigned) || m.revocationDeadline.IsZero() {
			m.revocationDeadline = now.Add(m.rebalanceTimeout)
		}
	} else {
		m.revocationDeadline = time.Time{}
	}
	if err := g.writeConsumer(append(recs, g.consumerMemberRecords(m, replaced)...)); err != nil {
		return nil, g.revertConsumer(snap, m.id, err)
	}
	return g.heartbeatResponse(req, m, !prevAssigned.equal(m.assigned)), nil
}

// heartbeatResponse answers a member's heartbeat; the assignment is sent
// to a joining member, on a full request, and when it changed.
func (g *group) heartbeatResponse(req *kmsg.ConsumerGroupHeartbeatRequest, m *cgMember, changed bool) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := &kmsg.ConsumerGroupHeartbeatResponse{
		Version:                 req.Version,
		MemberEpoch:             m.epoch,
		HeartbeatIntervalMillis: int32(g.consumerHeartbeatInterval() / time.Millisecond),
	}
	id := m.id
	resp.MemberID = &id
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == 0 || full || changed {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, t := range m.assigned.byTopic() {
			a.Topics = append(a.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: t.id, Partitions: t.partitions})
		}
		resp.Assignment = &a
	}
	return resp
}

// steady reports whether a heartbeat changes nothing but the member's
// session: a known member, reconciled at the group's epoch, sending what
// we already have, with no regex due for a refresh and the subscribed
// topics unchanged. Such a heartbeat (nearly every one) is answered
// without the snapshot, the records and the reconciliation of the
// general path.
func (g *group) steady(m *cgMember, hr heartbeatRequest, now time.Time) bool {
	req, cg := hr.req, g.cg
	if req.MemberEpoch != m.epoch || m.epoch != cg.assignmentEpoch || cg.epoch != cg.assignmentEpoch || m.state != memberStable || m.classic != nil {
		return false
	}
	if m.clientID != hr.client.ClientID || m.clientHost != hr.client.ClientHost {
		return false
	}
	if (req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID)) ||
		(req.RackID != nil && (m.rackID == nil || *m.rackID != *req.RackID)) ||
		(req.RebalanceTimeoutMillis != -1 && time.Duration(req.RebalanceTimeoutMillis)*time.Millisecond != m.rebalanceTimeout) ||
		(req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex) ||
		(req.ServerAssignor != nil && *req.ServerAssignor != m.serverAssignor) {
		return false
	}
	// Names as we keep them (sorted, no duplicates) compare without a
	// copy; any other order takes the general path.
	if req.SubscribedTopicNames != nil && !slices.Equal(req.SubscribedTopicNames, m.subscribedNames) {
		return false
	}
	if m.regex != "" {
		if r := cg.regexes[m.regex]; r == nil || now.Sub(r.refreshedAt) >= g.c.cfg.ConsumerRegexRefreshInterval {
			return false
		}
	}
	return g.subscriptionHash() == cg.subscriptionHash
}

// memberSubscription is what of a member moves the group epoch when it
// changes.
type memberSubscription struct {
	names    []string
	regex    string
	assignor string
}

func (a memberSubscription) equal(b memberSubscription) bool {
	return slices.Equal(a.names, b.names) && a.regex == b.regex && a.assignor == b.assignor
}

// checkMemberEpoch is Kafka's throwIfMemberEpochIsInvalid: a member ahead
// of us is fenced; one behind is fenced too unless it is at its previous
// epoch and owns a subset of its assignment (our answer with the new
// epoch was lost).
func checkMemberEpoch(m *cgMember, req *kmsg.ConsumerGroupHeartbeatRequest) *heartbeatError {
	got := req.MemberEpoch
	switch {
	case got > m.epoch:
		return hbErr(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch ("+itoa(int(got))+") than the one known by the group coordinator ("+itoa(int(m.epoch))+"). The member must abandon all its partitions and rejoin.")
	case got < m.epoch:
		if got == m.previousEpoch && req.Topics != nil && ownedSubset(req.Topics, m.assigned) {
			return nil
		}
		return hbErr(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch ("+itoa(int(got))+") than the one known by the group coordinator ("+itoa(int(m.epoch))+"). The member must abandon all its partitions and rejoin.")
	}
	return nil
}

func ownedSubset(ts []kmsg.ConsumerGroupHeartbeatRequestTopic, assigned partSet) bool {
	for _, t := range ts {
		for _, p := range t.Partitions {
			if _, ok := assigned[topicIDPartition{t.TopicID, p}]; !ok {
				return false
			}
		}
	}
	return true
}

// consumerLeave is a heartbeat with epoch -1 (leave) or -2 (a static
// member leaving for now: it keeps its assignment for its session).
func (g *group) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, *heartbeatError) {
	cg := g.cg
	var m *cgMember
	if req.InstanceID != nil {
		m = cg.members[cg.static[*req.InstanceID]]
		if m == nil {
			return nil, hbErr(kerr.UnknownMemberID, "Instance id "+*req.InstanceID+" is unknown.")
		}
		if m.id != req.MemberID {
			return nil, hbErr(kerr.FencedInstanceID, "Static member "+req.MemberID+" with instance id "+*req.InstanceID+" was fenced by member "+m.id+".")
		}
	} else if m = cg.members[req.MemberID]; m == nil {
		return nil, hbErr(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
	}
	id := m.id
	resp := &kmsg.ConsumerGroupHeartbeatResponse{Version: req.Version, MemberID: &id, MemberEpoch: req.MemberEpoch,
		HeartbeatIntervalMillis: int32(g.consumerHeartbeatInterval() / time.Millisecond)}
	snap := cg.snapshot()
	if req.MemberEpoch == leaveStaticEpoch {
		m.previousEpoch, m.epoch = m.epoch, leaveStaticEpoch
		m.revocationDeadline = time.Time{}
		if err := g.writeConsumer(g.consumerMemberRecords(m, nil)); err != nil {
			return nil, g.revertConsumer(snap, id, err)
		}
		g.log.Info().Str("member", m.id).Str("instance_id", *m.instanceID).Msg("static member left consumer group temporarily")
		return resp, nil
	}
	if err := g.fenceCGMember(m); err != nil {
		return nil, g.revertConsumer(snap, id, err)
	}
	g.log.Info().Str("member", id).Msg("member left consumer group")
	return resp, nil
}

// revertConsumer puts back the group as it was before a change whose
// records could not be written, and is the heartbeat's error: Kafka's
// mapping of the write's error (NOT_COORDINATOR for a storage error,
// COORDINATOR_NOT_AVAILABLE when the log is gone).
func (g *group) revertConsumer(snap *consumerGroup, memberID string, err error) *heartbeatError {
	g.cg = snap
	g.log.Error().Err(err).Str("member", memberID).Msg("writing consumer group records failed; the change is not applied")
	return &heartbeatError{storeErrorCode(err), ""}
}

// fenceCGMember removes a member (left, session or revocation timeout):
// its partitions are free, the group epoch moves and the next heartbeat
// computes a new target assignment (Kafka's consumerGroupFenceMember).
// On an error the records were not written and the caller reverts.
func (g *group) fenceCGMember(m *cgMember) error {
	if g.downgradeFor(m) {
		return g.downgradeToClassic(m)
	}
	g.removeCGMember(m, true)
	g.cg.epoch++
	return g.storeConsumerRemoval(m)
}

// snapshot is a deep copy of the group's state: what a change whose
// records are not written reverts to. The written map is shared: it only
// changes when a write succeeds.
func (cg *consumerGroup) snapshot() *consumerGroup {
	s := *cg
	s.members = make(map[string]*cgMember, len(cg.members))
	for id, m := range cg.members {
		c := *m
		c.assigned, c.pendingRevocation = m.assigned.clone(), m.pendingRevocation.clone()
		c.assignedAt = maps.Clone(m.assignedAt)
		if m.classic != nil {
			cc := *m.classic
			c.classic = &cc
		}
		s.members[id] = &c
	}
	s.static = maps.Clone(cg.static)
	s.target = make(map[string]partSet, len(cg.target))
	for id, t := range cg.target {
		s.target[id] = t.clone()
	}
	s.owner = maps.Clone(cg.owner)
	s.regexes = make(map[string]*resolvedRegex, len(cg.regexes))
	for expr, r := range cg.regexes {
		c := *r
		c.topics = slices.Clone(r.topics)
		s.regexes[expr] = &c
	}
	return &s
}

// removeCGMember drops a member and frees its partitions; with target its
// target assignment goes too.
func (g *group) removeCGMember(m *cgMember, target bool) {
	cg := g.cg
	g.releaseAll(m)
	delete(cg.members, m.id)
	cg.subNames = nil
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	if target {
		delete(cg.target, m.id)
	}
}

// releaseAll frees every partition the member holds.
func (g *group) releaseAll(m *cgMember) {
	for tp := range m.assigned {
		g.release(m, tp)
	}
	for tp := range m.pendingRevocation {
		g.release(m, tp)
	}
	m.assigned, m.pendingRevocation = partSet{}, partSet{}
	m.assignedAt = map[topicIDPartition]int32{}
}

func (g *group) release(m *cgMember, tp topicIDPartition) {
	if g.cg.owner[tp] == m.id {
		delete(g.cg.owner, tp)
	}
}

// reconcile moves a member towards its target assignment with
// CurrentAssignmentBuilder's rules: partitions leave the member first
// (UNREVOKED_PARTITIONS, at its current epoch, until a heartbeat shows it
// no longer owns them); then it takes the target epoch and every target
// partition nobody else holds, waiting (UNRELEASED_PARTITIONS) for those
// another member has not released yet. A partition is never held by two
// members. owned is what the member reported (nil: not reported).
func (g *group) reconcile(m *cgMember, owned partSet) {
	cg := g.cg
	g.dropDeletedTopics(m)
	switch m.state {
	case memberStable:
		if m.epoch == cg.assignmentEpoch {
			return
		}
	case memberUnrevokedPartitions:
		if ownsAny(owned, m.pendingRevocation) {
			return
		}
	}
	target := cg.target[m.id]
	newAssigned := partSet{}
	revoke := partSet{}
	pending := partSet{}
	unreleased := false
	for tp := range m.assigned {
		if _, ok := target[tp]; ok {
			newAssigned[tp] = struct{}{}
		} else {
			revoke[tp] = struct{}{}
		}
	}
	for tp := range target {
		if _, ok := newAssigned[tp]; ok {
			continue
		}
		if o, held := cg.owner[tp]; held && o != m.id {
			unreleased = true
			continue
		}
		pending[tp] = struct{}{}
	}
	if len(revoke) > 0 && ownsAny(owned, revoke) {
		for tp := range m.pendingRevocation {
			if _, still := revoke[tp]; !still {
				g.release(m, tp)
			}
		}
		m.assigned, m.pendingRevocation = newAssigned, revoke
		m.state = memberUnrevokedPartitions
		m.previousEpoch = m.epoch // Kafka's updateMemberEpoch(current)
		return
	}
	// The member gave up what it had to revoke: those partitions are
	// free for others.
	for tp := range revoke {
		g.release(m, tp)
		delete(m.assignedAt, tp)
	}
	for tp := range m.pendingRevocation {
		g.release(m, tp)
		delete(m.assignedAt, tp)
	}
	m.pendingRevocation = partSet{}
	m.previousEpoch, m.epoch = m.epoch, cg.assignmentEpoch
	for tp := range pending {
		newAssigned[tp] = struct{}{}
		cg.owner[tp] = m.id
		m.assignedAt[tp] = m.epoch
	}
	m.assigned = newAssigned
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleasedPartitions
	}
}

// ownsAny is Kafka's ownsRevokedPartitions: unknown ownership (nil)
// counts as owning.
func ownsAny(owned, ps partSet) bool {
	if owned == nil {
		return len(ps) > 0
	}
	for tp := range ps {
		if _, ok := owned[tp]; ok {
			return true
		}
	}
	return false
}

// dropDeletedTopics forgets partitions of topics that no longer exist:
// nobody can be given them, so they need no revocation.
func (g *group) dropDeletedTopics(m *cgMember) {
	for _, s := range []partSet{m.assigned, m.pendingRevocation} {
		for tp := range s {
			if t := g.c.store.TopicByID(tp.id); t == nil || int(tp.partition) >= len(t.Partitions) {
				delete(s, tp)
				delete(m.assignedAt, tp)
				g.release(m, tp)
			}
		}
	}
}

// subscribedTopicsOf resolves the topics a member subscribes to (by
// name, or through its resolved regex) to those that exist.
func (g *group) subscribedTopicsOf(m *cgMember) []*partition.Topic {
	var out []*partition.Topic
	seen := map[string]bool{}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if t := g.c.store.Topic(name); t != nil {
			out = append(out, t)
		}
	}
	for _, n := range m.subscribedNames {
		add(n)
	}
	if r := g.cg.regexes[m.regex]; m.regex != "" && r != nil {
		for _, n := range r.topics {
			add(n)
		}
	}
	return out
}

// subscriptionHash hashes the ids and partition counts of every topic a
// member subscribes to. The union of the subscribed names is kept until a
// subscription or the membership changes (subNames nil: rebuild it), and
// the hash until one of those topics is created, deleted or grown (the
// store then holds another *Topic), so a steady heartbeat costs one
// lookup per subscribed topic.
func (g *group) subscriptionHash() uint64 {
	cg := g.cg
	if cg.subNames == nil {
		cg.subNames = g.subscribedNames()
		cg.subTopics = nil
	}
	if cg.subTopics != nil {
		same := true
		for i, n := range cg.subNames {
			if g.c.store.Topic(n) != cg.subTopics[i] {
				same = false
				break
			}
		}
		if same {
			return cg.subHash
		}
	}
	topics := make([]*partition.Topic, len(cg.subNames))
	h := fnv.New64a()
	for i, n := range cg.subNames {
		t := g.c.store.Topic(n)
		topics[i] = t
		if t == nil {
			continue
		}
		k := len(t.Partitions)
		h.Write([]byte(t.Name))
		h.Write(t.ID[:])
		h.Write([]byte{byte(k >> 24), byte(k >> 16), byte(k >> 8), byte(k), 0})
	}
	cg.subTopics, cg.subHash = topics, h.Sum64()
	return cg.subHash
}

// subscribedNames is the sorted union of the topic names the members
// subscribe to, by name or through their resolved regexes; never nil.
func (g *group) subscribedNames() []string {
	names := []string{}
	for _, m := range g.cg.members {
		names = append(names, m.subscribedNames...)
		if r := g.cg.regexes[m.regex]; m.regex != "" && r != nil {
			names = append(names, r.topics...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// refreshRegex resolves a regex when it is new to the group, and again at
// most every group.consumer.regex.refresh.interval.ms, as Kafka does, to
// the topics describes allows (nil: all). A resolution made without a
// request's principal (at load) is refreshed at the next heartbeat.
func (g *group) refreshRegex(expr string, re *regexp.Regexp, describes func(string) bool, now time.Time) {
	r := g.cg.regexes[expr]
	if r != nil && now.Sub(r.refreshedAt) < g.c.cfg.ConsumerRegexRefreshInterval {
		return
	}
	if r == nil {
		if re == nil {
			var err error
			if re, err = compileSubscriptionRegex(expr); err != nil {
				return
			}
		}
		r = &resolvedRegex{re: re}
		g.cg.regexes[expr] = r
	}
	r.topics = r.topics[:0]
	for _, t := range g.c.store.Topics() {
		if r.re.MatchString(t.Name) && (describes == nil || describes(t.Name)) {
			r.topics = append(r.topics, t.Name)
		}
	}
	sort.Strings(r.topics)
	r.refreshedAt = now
	g.cg.subNames = nil
}

// dropUnusedRegexes forgets regexes no member subscribes to any more.
func (g *group) dropUnusedRegexes() {
	used := map[string]bool{}
	for _, m := range g.cg.members {
		used[m.regex] = true
	}
	for expr := range g.cg.regexes {
		if !used[expr] {
			delete(g.cg.regexes, expr)
		}
	}
}

// compileSubscriptionRegex compiles a SubscribedTopicRegex; Kafka matches
// the whole topic name (RE2J's Pattern.matches).
func compileSubscriptionRegex(expr string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(expr); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?:" + expr + ")$")
}

// computeTargetAssignment runs the group's assignor over the members'
// subscriptions and makes the result the target at the group epoch; it
// returns the records to write.
func (g *group) computeTargetAssignment() []recordbatch.Record {
	cg := g.cg
	g.dropUnusedRegexes()
	name := g.preferredAssignor()
	a := assignorByName(name)
	in := assignmentInput{members: map[string]assignmentMember{}, topics: map[partition.TopicID]int32{}}
	for id, m := range cg.members {
		am := assignmentMember{current: cg.target[id], rack: m.rackID}
		for _, t := range g.subscribedTopicsOf(m) {
			am.topics = append(am.topics, t.ID)
			in.topics[t.ID] = int32(len(t.Partitions))
		}
		slices.SortFunc(am.topics, func(a, b partition.TopicID) int { return bytes.Compare(a[:], b[:]) })
		in.members[id] = am
	}
	out := a.assign(in)
	cg.target = map[string]partSet{}
	for id := range cg.members {
		cg.target[id] = out[id]
		if cg.target[id] == nil {
			cg.target[id] = partSet{}
		}
	}
	cg.assignmentEpoch = cg.epoch
	g.log.Info().Int32("group_epoch", cg.epoch).Str("assignor", name).Int("members", len(cg.members)).Msg("computed consumer group target assignment")
	return g.targetAssignmentRecords()
}

// preferredAssignor is Kafka's: the server assignor most members name
// (ties to the first in group.consumer.assignors), else the first
// configured.
func (g *group) preferredAssignor() string {
	votes := map[string]int{}
	for _, m := range g.cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best, bestVotes := g.c.cfg.ConsumerAssignors[0], 0
	for _, n := range g.c.cfg.ConsumerAssignors {
		if votes[n] > bestVotes {
			best, bestVotes = n, votes[n]
		}
	}
	return best
}

// cgDeadline is the earliest session or revocation deadline of the
// consumer group's members.
func (g *group) cgDeadline() time.Time {
	var at time.Time
	for _, m := range g.cg.members {
		for _, t := range []time.Time{m.sessionDeadline, m.revocationDeadline, m.joinDeadline(), m.syncDeadline()} {
			if !t.IsZero() && (at.IsZero() || t.Before(at)) {
				at = t
			}
		}
	}
	return at
}

// cgOnTimer fences members whose session expired, or that did not revoke
// their partitions within their rebalance timeout.
func (g *group) cgOnTimer(now time.Time) {
	var due []*cgMember
	isDue := func(t time.Time) bool { return !t.IsZero() && !t.After(now) }
	for _, m := range g.cg.members {
		if isDue(m.sessionDeadline) || isDue(m.revocationDeadline) || isDue(m.joinDeadline()) || isDue(m.syncDeadline()) {
			due = append(due, m)
		}
	}
	slices.SortFunc(due, func(a, b *cgMember) int { return cmp.Compare(a.id, b.id) })
	for _, d := range due {
		if g.cg == nil {
			return // downgraded to a classic group by the last fence
		}
		m := g.cg.members[d.id] // a revert below replaces the members
		revoking := isDue(m.revocationDeadline)
		switch {
		case revoking:
			g.log.Info().Str("member", m.id).Dur("rebalance_timeout", m.rebalanceTimeout).Msg("member did not revoke its partitions within the rebalance timeout; fencing it")
		case isDue(m.joinDeadline()):
			revoking = true // retried as a revocation: the session stays
			m.classic.joinDeadline = time.Time{}
			g.log.Info().Str("member", m.id).Dur("rebalance_timeout", m.rebalanceTimeout).Msg("classic member failed to rejoin within the rebalance timeout; fencing it")
		case isDue(m.syncDeadline()):
			revoking = true
			m.classic.syncDeadline = time.Time{}
			g.log.Info().Str("member", m.id).Dur("rebalance_timeout", m.rebalanceTimeout).Msg("classic member failed to sync within the rebalance timeout; fencing it")
		default:
			g.log.Info().Str("member", m.id).Dur("session_timeout", g.consumerSessionTimeout()).Msg("consumer group member session expired; fencing it")
		}
		snap := g.cg.snapshot()
		if err := g.fenceCGMember(m); err != nil {
			// Kept, and fenced again later (Kafka retries a failed
			// timer operation after a backoff).
			g.revertConsumer(snap, m.id, err)
			m = g.cg.members[m.id]
			if revoking {
				m.revocationDeadline = now.Add(fenceRetryBackoff)
			} else {
				m.sessionDeadline = now.Add(fenceRetryBackoff)
			}
		}
	}
}

// fenceRetryBackoff is how long a member whose removal could not be
// written is kept before it is fenced again (Kafka's coordinator timer
// retries after 500 ms).
const fenceRetryBackoff = 500 * time.Millisecond

func itoa(n int) string { return strconv.Itoa(n) }
