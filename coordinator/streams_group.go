package coordinator

// KIP-1071 streams groups: the group epoch, the topology, the target
// assignment of tasks and each member's reconciliation towards it, as
// Kafka 4.3's GroupMetadataManager.streamsGroupHeartbeat, StreamsGroup,
// StreamsGroupMember and streams.CurrentAssignmentBuilder. A streams group
// lives on the same goroutine as a classic one (a *group with sg set).
//
// The group epoch moves when a member joins, leaves or is fenced, changes
// its process id, endpoint, client tags, rack or topology epoch, when the
// topics of the topology change (a hash over them), when the topology is
// first validated, and when the assignment configs change. A heartbeat
// that finds the group epoch ahead of the target assignment's runs the
// task assignor (streams_assignor.go); the target is empty while the
// topology is not ready (missing or wrongly partitioned topics). Each
// member then reconciles: tasks it must give up are revoked first
// (UNREVOKED_TASKS, at its old epoch) until a heartbeat shows it no longer
// owns them; then it takes the target epoch and every target task, an
// active task only once no other member holds it (UNRELEASED_TASKS until
// then). An active task is never held by two members.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// sgMemberState is Kafka's streams MemberState; the values are those of
// the StreamsGroupCurrentMemberAssignmentValue record's State.
type sgMemberState int8

const (
	sgStable          sgMemberState = 1
	sgUnrevokedTasks  sgMemberState = 2
	sgUnreleasedTasks sgMemberState = 3
)

func (s sgMemberState) String() string {
	switch s {
	case sgStable:
		return "STABLE"
	case sgUnrevokedTasks:
		return "UNREVOKED_TASKS"
	case sgUnreleasedTasks:
		return "UNRELEASED_TASKS"
	}
	return "UNKNOWN"
}

// sgEndpoint is a member's user endpoint (interactive queries).
type sgEndpoint struct {
	host string
	port uint16
}

// stgMember is one member of a streams group. Owned by the group's
// goroutine.
type stgMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	topologyEpoch    int32
	processID        string
	endpoint         *sgEndpoint
	clientTags       []stKV // sorted by key

	epoch, previousEpoch int32
	state                sgMemberState
	assigned             tasksTuple
	pendingRevocation    tasksTuple
	// activeAt is the member epoch at which each active task was given:
	// an offset commit with an older epoch is accepted for partitions of
	// tasks held since then (Kafka's AssignmentEpochs).
	activeAt map[taskID]int32

	sessionDeadline    time.Time
	revocationDeadline time.Time
}

// streamsGroup is the KIP-1071 state of a group.
type streamsGroup struct {
	epoch                  int32
	assignmentEpoch        int32
	metadataHash           int64
	validatedTopologyEpoch int32
	assignmentConfigs      map[string]string // last used (LastAssignmentConfigs)
	topology               *streamsTopology
	configured             *configuredTopology // not persisted: recomputed
	members                map[string]*stgMember
	target                 map[string]tasksTuple
	activeOwner            map[taskID]string // held or pending revocation
	endpointEpoch          int32
	shutdownRequester      string
	// delayUntil is the end of the initial rebalance delay, zero before
	// it started; while delayPending the target has no tasks.
	delayUntil   time.Time
	delayPending bool
	// written is the value last written for each record key
	// (streams_records.go), so unchanged records are not written again.
	written map[string][]byte
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{
		validatedTopologyEpoch: -1,
		members:                map[string]*stgMember{},
		target:                 map[string]tasksTuple{},
		activeOwner:            map[taskID]string{},
		written:                map[string][]byte{},
	}
}

// sgState is Kafka's StreamsGroupState.
type sgState int8

const (
	sgEmpty sgState = iota
	sgNotReady
	sgAssigning
	sgReconciling
	sgStableState
)

func (s sgState) String() string {
	switch s {
	case sgEmpty:
		return "Empty"
	case sgNotReady:
		return "NotReady"
	case sgAssigning:
		return "Assigning"
	case sgReconciling:
		return "Reconciling"
	}
	return "Stable"
}

func (sg *streamsGroup) state() sgState {
	switch {
	case len(sg.members) == 0:
		return sgEmpty
	case sg.topology == nil || !sg.configured.ready():
		return sgNotReady
	case sg.epoch != sg.assignmentEpoch:
		return sgAssigning
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignmentEpoch || m.state != sgStable {
			return sgReconciling
		}
	}
	return sgStableState
}

func (sg *streamsGroup) memberIDs() []string {
	return slices.Sorted(maps.Keys(sg.members))
}

// snapshot is a deep copy: what a change whose records are not written
// reverts to. written is shared; it only changes when a write succeeds.
func (sg *streamsGroup) snapshot() *streamsGroup {
	s := *sg
	s.members = make(map[string]*stgMember, len(sg.members))
	for id, m := range sg.members {
		c := *m
		c.assigned, c.pendingRevocation = m.assigned.clone(), m.pendingRevocation.clone()
		c.activeAt = maps.Clone(m.activeAt)
		s.members[id] = &c
	}
	s.target = make(map[string]tasksTuple, len(sg.target))
	for id, t := range sg.target {
		s.target[id] = t.clone()
	}
	s.activeOwner = maps.Clone(sg.activeOwner)
	s.assignmentConfigs = maps.Clone(sg.assignmentConfigs)
	return &s
}

// StreamsGroupConfig is a streams group's effective configuration.
type StreamsGroupConfig struct {
	SessionTimeout    time.Duration // streams.session.timeout.ms
	HeartbeatInterval time.Duration // streams.heartbeat.interval.ms
	NumStandbys       int           // streams.num.standby.replicas
	// InitialRebalanceDelay is streams.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration
}

// streamsGroupConfig is the configuration of groupID: its streams.*
// group configs (the GROUP config resource, validated against the
// broker's group.streams.min/max.* when set), else the broker's
// group.streams.* defaults; the only place that reads them.
func (c *Coordinator) streamsGroupConfig(groupID string) StreamsGroupConfig {
	const unbounded = math.MaxInt32
	return StreamsGroupConfig{
		SessionTimeout:        c.groupDuration(groupID, StreamsSessionTimeoutConfig, c.cfg.StreamsSessionTimeout, time.Millisecond, unbounded*time.Millisecond),
		HeartbeatInterval:     c.groupDuration(groupID, StreamsHeartbeatIntervalConfig, c.cfg.StreamsHeartbeatInterval, time.Millisecond, unbounded*time.Millisecond),
		NumStandbys:           int(c.GroupConfigInt(groupID, StreamsNumStandbyReplicasConfig, int64(c.cfg.StreamsNumStandbyReplicas), 0, unbounded)),
		InitialRebalanceDelay: c.groupDuration(groupID, StreamsInitialRebalanceDelayCfg, c.cfg.StreamsInitialRebalanceDelay, 0, unbounded*time.Millisecond),
	}
}

// assignmentConfigs are the configs the assignor ran with, as Kafka's
// streamsGroupAssignmentConfigs: a change triggers a new assignment.
func (sc StreamsGroupConfig) assignmentConfigs() map[string]string {
	return map[string]string{"num.standby.replicas": fmt.Sprint(sc.NumStandbys)}
}

// streamsHeartbeatRequest is a validated StreamsGroupHeartbeat.
type streamsHeartbeatRequest struct {
	req    *kmsg.StreamsGroupHeartbeatRequest
	client ClientInfo
}

// streamsHeartbeatResult is the answer and the internal topics the
// caller must create (Kafka's StreamsGroupHeartbeatResult).
type streamsHeartbeatResult struct {
	resp     *kmsg.StreamsGroupHeartbeatResponse
	toCreate []internalTopic
}

// streamsHeartbeat serves a StreamsGroupHeartbeat on the group's
// goroutine. An empty classic group (or one with offsets only) becomes a
// streams group on a join; a consumer group or a classic group with
// members is not a streams group.
func (g *group) streamsHeartbeat(hr streamsHeartbeatRequest) (streamsHeartbeatResult, *heartbeatError) {
	req := hr.req
	if g.state == stateDead {
		return streamsHeartbeatResult{}, hbErr(kerr.CoordinatorNotAvailable, "")
	}
	if g.stg == nil {
		if req.MemberEpoch != 0 {
			return streamsHeartbeatResult{}, hbErr(kerr.GroupIDNotFound, "Streams group "+g.id+" not found.")
		}
		if g.cg != nil || g.sg != nil || len(g.members) > 0 || len(g.pending) > 0 {
			return streamsHeartbeatResult{}, hbErr(kerr.GroupIDNotFound, "Group "+g.id+" is not a streams group.")
		}
		if g.generation > 0 || g.protocolType != "" {
			if err := g.append([]recordbatch.Record{g.groupRecord(true)}); err != nil {
				return streamsHeartbeatResult{}, &heartbeatError{storeErrorCode(err), ""}
			}
		}
		g.protocolType, g.protocol, g.leader, g.generation = "", "", "", 0
		g.stg = newStreamsGroup()
		g.log.Info().Msg("group is a streams group (KIP-1071)")
	}
	snap := g.stg.snapshot()
	var res streamsHeartbeatResult
	var e *heartbeatError
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == leaveStaticEpoch {
		res, e = g.streamsLeave(req)
	} else {
		res, e = g.streamsJoinOrHeartbeat(hr)
	}
	if e != nil {
		g.stg = snap
		return res, e
	}
	if err := g.writeStreams(); err != nil {
		g.stg = snap
		g.log.Error().Err(err).Str("member", req.MemberID).Msg("writing streams group records failed; the change is not applied")
		return streamsHeartbeatResult{}, &heartbeatError{storeErrorCode(err), ""}
	}
	return res, nil
}

func (g *group) streamsLeave(req *kmsg.StreamsGroupHeartbeatRequest) (streamsHeartbeatResult, *heartbeatError) {
	sg := g.stg
	m := sg.members[req.MemberID]
	if m == nil {
		return streamsHeartbeatResult{}, hbErr(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id))
	}
	g.fenceSGMember(m)
	g.log.Info().Str("member", m.id).Msg("member left streams group")
	// As Kafka: no heartbeat interval in the answer to a leave.
	return streamsHeartbeatResult{resp: &kmsg.StreamsGroupHeartbeatResponse{
		Version:               req.Version,
		MemberID:              m.id,
		MemberEpoch:           req.MemberEpoch,
		AcceptableRecoveryLag: -1,
		Status:                []kmsg.StreamsGroupHeartbeatResponseStatus{},
	}}, nil
}

// fenceSGMember removes a member: its tasks are free, and the group
// epoch moves so the next heartbeat computes a new target.
func (g *group) fenceSGMember(m *stgMember) {
	sg := g.stg
	g.releaseSGAll(m)
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	if sg.shutdownRequester == m.id && len(sg.members) == 0 {
		sg.shutdownRequester = ""
	}
	sg.epoch++
}

func (g *group) releaseSGAll(m *stgMember) {
	for t := range m.assigned.active {
		g.releaseActive(m, t)
	}
	for t := range m.pendingRevocation.active {
		g.releaseActive(m, t)
	}
	m.assigned, m.pendingRevocation = emptyTuple(), emptyTuple()
	m.activeAt = map[taskID]int32{}
}

func (g *group) releaseActive(m *stgMember, t taskID) {
	if g.stg.activeOwner[t] == m.id {
		delete(g.stg.activeOwner, t)
	}
}

// ownedTasks is what the request says the member owns; ok is false when
// it did not say (null: unchanged).
func ownedTasks(req *kmsg.StreamsGroupHeartbeatRequest) (tasksTuple, bool) {
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
		return tasksTuple{}, false
	}
	return tasksTuple{taskSetOf(req.ActiveTasks), taskSetOf(req.StandbyTasks), taskSetOf(req.WarmupTasks)}, true
}

func taskSetOf(ts []kmsg.TaskIDs) taskSet {
	s := taskSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			s[taskID{t.SubtopologyID, p}] = struct{}{}
		}
	}
	return s
}

func (s taskSet) subsetOf(o taskSet) bool {
	for t := range s {
		if _, ok := o[t]; !ok {
			return false
		}
	}
	return true
}

func (g *group) streamsJoinOrHeartbeat(hr streamsHeartbeatRequest) (streamsHeartbeatResult, *heartbeatError) {
	req := hr.req
	sg := g.stg
	now := g.c.clock.Now()
	cfg := g.c.streamsGroupConfig(g.id)
	if req.InstanceID != nil {
		// As Kafka 4.3 answers (UnsupportedOperationException).
		return streamsHeartbeatResult{}, hbErr(kerr.UnknownServerError, "Static members are not supported yet.")
	}
	m := sg.members[req.MemberID]
	joining := req.MemberEpoch == 0
	if m == nil && joining && len(sg.members) >= g.c.cfg.StreamsMaxSize {
		return streamsHeartbeatResult{}, hbErr(kerr.GroupMaxSizeReached, fmt.Sprintf("The streams group has reached its maximum capacity of %d members.", g.c.cfg.StreamsMaxSize))
	}
	owned, ownedKnown := ownedTasks(req)
	if !joining {
		if m == nil {
			return streamsHeartbeatResult{}, hbErr(kerr.UnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id))
		}
		if e := checkStreamsMemberEpoch(m, req.MemberEpoch, owned, ownedKnown); e != nil {
			return streamsHeartbeatResult{}, e
		}
	}
	bump := false
	var before stgMember
	if m == nil {
		m = &stgMember{id: req.MemberID, assigned: emptyTuple(), pendingRevocation: emptyTuple(), activeAt: map[taskID]int32{}, state: sgStable}
		sg.members[m.id] = m
		bump = true
		g.log.Info().Str("member", m.id).Str("client_id", hr.client.ClientID).Msg("member joined streams group")
	} else {
		before = *m
		if joining {
			// A known member rejoining abandoned its tasks.
			g.releaseSGAll(m)
			m.epoch, m.previousEpoch, m.state = 0, 0, sgStable
		}
	}
	prevAssigned := m.assigned.clone()
	m.clientID, m.clientHost = hr.client.ClientID, hr.client.ClientHost
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.Topology != nil {
		m.topologyEpoch = req.Topology.Epoch
	}
	if req.ProcessID != nil {
		m.processID = *req.ProcessID
	}
	if req.UserEndpoint != nil {
		m.endpoint = &sgEndpoint{req.UserEndpoint.Host, req.UserEndpoint.Port}
	}
	if req.ClientTags != nil {
		m.clientTags = m.clientTags[:0:0]
		for _, t := range req.ClientTags {
			m.clientTags = append(m.clientTags, stKV{t.Key, t.Value})
		}
		slices.SortFunc(m.clientTags, func(a, b stKV) int { return cmp.Compare(a.key, b.key) })
	}
	if before.id != "" && !sameStreamsMetadata(&before, m) {
		bump = true
	}

	status := []kmsg.StreamsGroupHeartbeatResponseStatus{}
	// The topology: the first member's initializes it; a later one at
	// the same epoch must be equal; an older epoch is stale.
	if req.Topology != nil {
		t := topologyFromRequest(req.Topology)
		switch {
		case sg.topology == nil:
			sg.topology = t
			sg.configured = nil
			g.log.Info().Str("member", m.id).Int32("topology_epoch", t.epoch).Msg("member initialized the streams group topology")
		case sg.topology.epoch > t.epoch:
		case !sg.topology.equal(t):
			return streamsHeartbeatResult{}, hbErr(kerr.InvalidRequest, "Topology updates are not supported yet.")
		}
	}
	if sg.topology == nil {
		return streamsHeartbeatResult{}, hbErr(kerr.InvalidRequest, "The topology is null and the group topology is also null.")
	}
	if m.topologyEpoch < sg.topology.epoch {
		status = append(status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, sg.topology.epoch)})
	}
	// The topics: a new hash (created, deleted or grown topics)
	// reconfigures the topology and moves the epoch.
	if h := g.streamsMetadataHash(sg.topology); h != sg.metadataHash || sg.configured == nil {
		if h != sg.metadataHash {
			sg.metadataHash = h
			bump = true
		}
		sg.configured = configureTopology(sg.topology, g.topicPartitionCount)
	}
	validated := int32(-1)
	if sg.configured.ready() {
		validated = sg.topology.epoch
		if ownedKnown {
			if e := invalidTasks(sg.configured, owned); e != nil {
				return streamsHeartbeatResult{}, e
			}
		}
	}
	if validated != sg.validatedTopologyEpoch {
		sg.validatedTopologyEpoch = validated
		bump = true
	}
	if ac := cfg.assignmentConfigs(); !maps.Equal(ac, sg.assignmentConfigs) {
		sg.assignmentConfigs = ac
		bump = true
	}
	if sg.delayPending && !now.Before(sg.delayUntil) {
		// The delay is over: a new epoch gets the real assignment.
		sg.delayPending = false
		bump = true
	}
	if bump {
		sg.epoch++
		g.log.Debug().Int32("group_epoch", sg.epoch).Str("member", m.id).Msg("bumped streams group epoch")
	}
	if sg.epoch > sg.assignmentEpoch {
		sg.startDelay(now, cfg)
		g.computeStreamsTarget(cfg)
	}
	if sg.delayPending {
		status = append(status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsAssignmentDelayed,
			StatusDetail: "Assignment delayed due to the configured initial rebalance delay."})
	}
	g.reconcileStreams(m, owned, ownedKnown)
	m.sessionDeadline = now.Add(cfg.SessionTimeout)
	if m.state == sgUnrevokedTasks {
		if m.revocationDeadline.IsZero() || before.state != sgUnrevokedTasks || before.epoch != m.epoch {
			m.revocationDeadline = now.Add(m.rebalanceTimeout)
		}
	} else {
		m.revocationDeadline = time.Time{}
	}
	if req.ShutdownApplication {
		sg.shutdownRequester = m.id
	}

	resp := &kmsg.StreamsGroupHeartbeatResponse{
		Version:                 req.Version,
		MemberID:                m.id,
		MemberEpoch:             m.epoch,
		HeartbeatIntervalMillis: int32(cfg.HeartbeatInterval / time.Millisecond),
		AcceptableRecoveryLag:   -1,
	}
	if joining || !prevAssigned.equal(m.assigned) {
		resp.ActiveTasks = taskIDsOf(m.assigned.active)
		resp.StandbyTasks = taskIDsOf(m.assigned.standby)
		resp.WarmupTasks = taskIDsOf(m.assigned.warmup)
		if m.endpoint != nil {
			sg.endpointEpoch++
		}
	}
	if sg.endpointEpoch != req.EndpointInformationEpoch {
		resp.PartitionsByUserEndpoint = g.partitionsByEndpoint()
	}
	resp.EndpointInformationEpoch = sg.endpointEpoch
	var res streamsHeartbeatResult
	if sg.configured.detail != "" {
		status = append(status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: sg.configured.status, StatusDetail: sg.configured.detail})
		res.toCreate = sg.configured.toCreate
	}
	if sg.shutdownRequester != "" {
		status = append(status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsShutdownApplication,
			StatusDetail: fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", sg.shutdownRequester)})
	}
	resp.Status = status
	res.resp = resp
	return res, nil
}

// sameStreamsMetadata is Kafka's hasStreamsMemberMetadataChanged (what
// moves the group epoch).
func sameStreamsMetadata(a, b *stgMember) bool {
	return ptrEq(a.rackID, b.rackID) && a.topologyEpoch == b.topologyEpoch && a.processID == b.processID &&
		((a.endpoint == nil) == (b.endpoint == nil) && (a.endpoint == nil || *a.endpoint == *b.endpoint)) &&
		slices.Equal(a.clientTags, b.clientTags)
}

func ptrEq(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// checkStreamsMemberEpoch is Kafka's throwIfStreamsMemberEpochIsInvalid.
func checkStreamsMemberEpoch(m *stgMember, epoch int32, owned tasksTuple, ownedKnown bool) *heartbeatError {
	switch {
	case epoch > m.epoch:
		return hbErr(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch))
	case epoch < m.epoch:
		if epoch != m.previousEpoch || !ownedKnown ||
			!owned.active.subsetOf(m.assigned.active) || !owned.standby.subsetOf(m.assigned.standby) || !owned.warmup.subsetOf(m.assigned.warmup) {
			return hbErr(kerr.FencedMemberEpoch, fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch))
		}
	}
	return nil
}

// invalidTasks is Kafka's throwIfRequestContainsInvalidTasks.
func invalidTasks(ct *configuredTopology, owned tasksTuple) *heartbeatError {
	for _, s := range []taskSet{owned.active, owned.standby, owned.warmup} {
		for t := range s {
			n, ok := ct.tasks[t.sub]
			if !ok || t.partition < 0 || t.partition >= n {
				return hbErr(kerr.StreamsInvalidTopology, fmt.Sprintf("Tasks for subtopology %s are invalid.", t.sub))
			}
		}
	}
	return nil
}

func taskIDsOf(s taskSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range s.sorted() {
		if n := len(out); n == 0 || out[n-1].SubtopologyID != t.sub {
			out = append(out, kmsg.TaskIDs{SubtopologyID: t.sub})
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, t.partition)
	}
	return out
}

// startDelay starts Kafka's initial rebalance delay of streams groups
// for a group that never had a target: for
// streams.initial.rebalance.delay.ms its targets carry no tasks (members
// still take the epoch), so that members starting together are assigned
// together (ASSIGNMENT_DELAYED meanwhile); the first heartbeat after it
// moves the epoch and assigns.
func (sg *streamsGroup) startDelay(now time.Time, cfg StreamsGroupConfig) {
	if sg.assignmentEpoch == 0 && sg.delayUntil.IsZero() && cfg.InitialRebalanceDelay > 0 {
		sg.delayUntil, sg.delayPending = now.Add(cfg.InitialRebalanceDelay), true
	}
}

// computeStreamsTarget runs the assignor and makes its result the target
// at the group epoch; an unready topology has no tasks.
func (g *group) computeStreamsTarget(cfg StreamsGroupConfig) {
	sg := g.stg
	var tasks map[string]int32
	if sg.configured.ready() && !sg.delayPending {
		tasks = sg.configured.tasks
	}
	var ms []assignMember
	for _, id := range sg.memberIDs() {
		m := sg.members[id]
		prev, ok := sg.target[id]
		if !ok {
			prev = m.assigned
		}
		ms = append(ms, assignMember{id: id, processID: m.processID, prev: prev})
	}
	sg.target = assignTasks(ms, tasks, cfg.NumStandbys)
	sg.assignmentEpoch = sg.epoch
}

// reconcileStreams moves a member towards its target (Kafka's streams
// CurrentAssignmentBuilder).
func (g *group) reconcileStreams(m *stgMember, owned tasksTuple, ownedKnown bool) {
	sg := g.stg
	target, ok := sg.target[m.id]
	if !ok {
		target = emptyTuple()
	}
	if m.state == sgUnrevokedTasks {
		// Still revoking until the member shows it owns none of them.
		if !ownedKnown || hasAny(owned.active, m.pendingRevocation.active) ||
			hasAny(owned.standby, m.pendingRevocation.standby) || hasAny(owned.warmup, m.pendingRevocation.warmup) {
			return
		}
		for t := range m.pendingRevocation.active {
			g.releaseActive(m, t)
		}
		m.pendingRevocation = emptyTuple()
		m.state = sgStable
	}
	if m.epoch == sg.assignmentEpoch && m.state == sgStable && m.assigned.equal(target) {
		return
	}
	revoke := m.assigned.minus(target)
	if !revoke.empty() {
		m.pendingRevocation = revoke
		m.assigned = tasksTuple{
			active:  m.assigned.active.minus(revoke.active),
			standby: m.assigned.standby.minus(revoke.standby),
			warmup:  m.assigned.warmup.minus(revoke.warmup),
		}
		m.state = sgUnrevokedTasks
		return
	}
	if m.epoch != sg.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, sg.assignmentEpoch
	}
	unreleased := false
	for t := range target.active {
		if _, has := m.assigned.active[t]; has {
			continue
		}
		if o, held := sg.activeOwner[t]; held && o != m.id {
			unreleased = true
			continue
		}
		m.assigned.active[t] = struct{}{}
		m.activeAt[t] = m.epoch
		sg.activeOwner[t] = m.id
	}
	for t := range target.standby {
		if _, held := sg.activeOwner[t]; held && sg.activeOwner[t] != m.id {
			// Not a standby while another member still runs it here.
			if o := sg.members[sg.activeOwner[t]]; o != nil && o.processID == m.processID {
				unreleased = true
				continue
			}
		}
		m.assigned.standby[t] = struct{}{}
	}
	for t := range target.warmup {
		m.assigned.warmup[t] = struct{}{}
	}
	for t := range m.activeAt {
		if _, has := m.assigned.active[t]; !has {
			delete(m.activeAt, t)
		}
	}
	if unreleased {
		m.state = sgUnreleasedTasks
	} else {
		m.state = sgStable
	}
}

func hasAny(a, b taskSet) bool {
	for t := range b {
		if _, ok := a[t]; ok {
			return true
		}
	}
	return false
}

// partitionsByEndpoint is the interactive-queries map: for every member
// with a user endpoint, the partitions of its active and standby tasks'
// source topics.
func (g *group) partitionsByEndpoint() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	sg := g.stg
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if !sg.configured.ready() {
		return out
	}
	for _, id := range sg.memberIDs() {
		m := sg.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.endpoint.host, m.endpoint.port
		for topic, ps := range g.taskPartitions(m.assigned.active) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: topic, Partitions: ps})
		}
		for topic, ps := range g.taskPartitions(m.assigned.standby) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: topic, Partitions: ps})
		}
		slices.SortFunc(e.ActivePartitions, func(a, b kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition) int {
			return cmp.Compare(a.Topic, b.Topic)
		})
		slices.SortFunc(e.StandbyPartitions, func(a, b kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition) int {
			return cmp.Compare(a.Topic, b.Topic)
		})
		if e.ActivePartitions == nil {
			e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		}
		if e.StandbyPartitions == nil {
			e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		}
		out = append(out, e)
	}
	return out
}

// taskPartitions maps tasks to the partitions of their source topics.
func (g *group) taskPartitions(s taskSet) map[string][]int32 {
	out := map[string][]int32{}
	for _, t := range s.sorted() {
		for _, topic := range g.stg.configured.sourcesOf[t.sub] {
			if t.partition < g.topicPartitionCount(topic) {
				out[topic] = append(out[topic], t.partition)
			}
		}
	}
	return out
}

// stgDeadline is the earliest session or revocation deadline.
func (g *group) stgDeadline() time.Time {
	var at time.Time
	for _, m := range g.stg.members {
		for _, t := range []time.Time{m.sessionDeadline, m.revocationDeadline} {
			if !t.IsZero() && (at.IsZero() || t.Before(at)) {
				at = t
			}
		}
	}
	return at
}

// stgOnTimer fences members whose session expired or that did not revoke
// their tasks within their rebalance timeout.
func (g *group) stgOnTimer(now time.Time) {
	due := func(t time.Time) bool { return !t.IsZero() && !t.After(now) }
	for _, id := range g.stg.memberIDs() {
		m := g.stg.members[id]
		if m == nil || (!due(m.sessionDeadline) && !due(m.revocationDeadline)) {
			continue
		}
		if due(m.revocationDeadline) {
			g.log.Info().Str("member", id).Dur("rebalance_timeout", m.rebalanceTimeout).Msg("member did not revoke its tasks within the rebalance timeout; fencing it")
		} else {
			g.log.Info().Str("member", id).Msg("streams group member session expired; fencing it")
		}
		snap := g.stg.snapshot()
		g.fenceSGMember(m)
		if err := g.writeStreams(); err != nil {
			g.stg = snap
			m = g.stg.members[id]
			m.sessionDeadline, m.revocationDeadline = now.Add(fenceRetryBackoff), time.Time{}
		}
	}
}

// validateStreamsCommit is Kafka's StreamsGroup.validateOffsetCommit:
// epoch -1 commits only while the group has no members; otherwise the
// member must exist, use OffsetCommit v9+ and bring its member epoch, or
// an older one for partitions of active tasks held since that epoch.
func (g *group) validateStreamsCommit(version int16, epoch int32, memberID string, parts []commitPart) int16 {
	sg := g.stg
	if epoch < 0 && len(sg.members) == 0 {
		return 0
	}
	m := sg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if version >= 0 && version < 9 {
		return kerr.UnsupportedVersion.Code
	}
	if epoch == m.epoch {
		return 0
	}
	if epoch > m.epoch || epoch < 0 || sg.topology == nil {
		return kerr.StaleMemberEpoch.Code
	}
	for _, p := range parts {
		ok := false
		for _, s := range sg.topology.subs {
			if !slices.Contains(s.sources, p.tp.topic) && !slices.ContainsFunc(s.repartitionSources, func(r stTopicInfo) bool { return r.name == p.tp.topic }) {
				continue
			}
			if at, held := m.activeAt[taskID{s.id, p.tp.partition}]; held && at <= epoch {
				ok = true
			}
		}
		if !ok {
			return kerr.StaleMemberEpoch.Code
		}
	}
	return 0
}

// streamsSubscribed are the source topics of a streams group (offsets of
// other topics expire by commit time).
func (g *group) streamsSubscribed() map[string]bool {
	out := map[string]bool{}
	if g.stg.topology != nil && len(g.stg.members) > 0 {
		for _, s := range g.stg.topology.subs {
			for _, t := range s.sources {
				out[t] = true
			}
			for _, r := range s.repartitionSources {
				out[r.name] = true
			}
		}
	}
	return out
}

// checkStreamsFetchMember is Kafka's StreamsGroup.validateOffsetFetch.
func (g *group) checkStreamsFetchMember(memberID string, epoch int32) int16 {
	m := g.stg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case m.epoch != epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}
