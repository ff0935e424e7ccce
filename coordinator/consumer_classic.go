package coordinator

// Classic and consumer members in one group: KIP-848's online migration,
// as Kafka 4.3's GroupMetadataManager does it.
//
//   - Upgrade: a ConsumerGroupHeartbeat joining a classic group with
//     members makes it a consumer group (convertToConsumerGroup) when the
//     policy allows upgrades, the group uses the consumer embedded
//     protocol and fits group.consumer.max.size. Its members keep their
//     ids, assignments and the generation as their epoch, and keep
//     speaking the classic protocol.
//   - Classic members of a consumer group: JoinGroup updates the member
//     (its subscription from the embedded protocol's metadata),
//     computes the target assignment and reconciles at once, answering
//     with the member epoch as the generation and no leader; SyncGroup
//     returns the member's assigned partitions; Heartbeat answers
//     REBALANCE_IN_PROGRESS when the member must rejoin to move on
//     (behind the group epoch, revoking, or its unreleased partitions
//     are free); LeaveGroup removes the member. A classic member is
//     fenced when it does not rejoin or sync within its rebalance
//     timeout, or its classic session times out.
//   - Downgrade: when the last consumer-protocol member is fenced or
//     leaves a group whose other members all speak the classic
//     protocol, the group becomes a classic group again (convertToClassicGroup):
//     Stable at the group epoch, each member holding its target
//     assignment, then a rebalance; and when a classic static member
//     takes the place of the last consumer-protocol member, at once and
//     without a rebalance.
//
// group.consumer.migration.policy picks which way is allowed; with
// "disabled" a classic member cannot join a consumer group with members
// (INCONSISTENT_GROUP_PROTOCOL) nor a consumer member a classic one with
// members (GROUP_ID_NOT_FOUND). Empty groups convert either way always.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// Values of group.consumer.migration.policy (Kafka's
// ConsumerGroupMigrationPolicy).
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// consumerProtocolType is the classic protocol type of consumers, the one
// a group must use to migrate (ConsumerProtocol.PROTOCOL_TYPE).
const consumerProtocolType = "consumer"

// classicMember is what a consumer group keeps of a member that speaks
// the classic protocol (Kafka's ClassicMemberMetadata, plus its join and
// sync timers).
type classicMember struct {
	sessionTimeout time.Duration
	protocols      []protocol
	// joinDeadline is set when the member was told to rejoin
	// (REBALANCE_IN_PROGRESS) and syncDeadline when it joined: it is
	// fenced if it does not rejoin or sync within its rebalance timeout.
	joinDeadline, syncDeadline time.Time
}

func (c Config) upgradeEnabled() bool {
	return c.ConsumerMigrationPolicy == MigrationBidirectional || c.ConsumerMigrationPolicy == MigrationUpgrade
}

func (c Config) downgradeEnabled() bool {
	return c.ConsumerMigrationPolicy == MigrationBidirectional || c.ConsumerMigrationPolicy == MigrationDowngrade
}

// upgradeRefusal is why the classic group cannot become a consumer group
// now (Kafka's validateOnlineUpgrade); "" if it can.
func (g *group) upgradeRefusal() string {
	switch {
	case !g.c.cfg.upgradeEnabled():
		return "Cannot upgrade classic group " + g.id + " to consumer group because online upgrade is disabled."
	case g.protocolType != consumerProtocolType:
		return "Cannot upgrade classic group " + g.id + " to consumer group because the group does not use the consumer embedded protocol."
	case len(g.members) > g.c.cfg.ConsumerMaxSize:
		return "Cannot upgrade classic group " + g.id + " to consumer group because the group size exceeds the consumer group maximum size."
	}
	return ""
}

// upgradeToConsumerGroup converts the classic group with members into a
// consumer group (Kafka's convertToConsumerGroup and
// ConsumerGroup.fromClassicGroup): waiting joins and syncs are told
// REBALANCE_IN_PROGRESS, the classic record gets a tombstone and the
// consumer group's records are written.
func (g *group) upgradeToConsumerGroup() *heartbeatError {
	now := g.c.clock.Now()
	cg := newConsumerGroup(now)
	cg.epoch, cg.assignmentEpoch = g.generation, g.generation
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	malformed := hbErr(kerr.GroupIDNotFound, "Cannot upgrade the classic group "+g.id+" to consumer group because the embedded consumer protocol is malformed.")
	for _, id := range ids {
		m := g.members[id]
		meta := m.metadataFor(g.protocol)
		if g.protocol == "" && len(m.protocols) > 0 {
			meta = m.protocols[0].metadata
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(meta); err != nil {
			return malformed
		}
		assigned := partSet{}
		if len(m.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(m.assignment); err != nil {
				return malformed
			}
			if len(a.UserData) > 0 {
				return hbErr(kerr.GroupIDNotFound, "Cannot upgrade classic group "+g.id+" to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.")
			}
			for _, t := range a.Topics {
				tt := g.c.store.Topic(t.Topic)
				if tt == nil {
					continue
				}
				for _, p := range t.Partitions {
					tp := topicIDPartition{tt.ID, p}
					if _, taken := cg.owner[tp]; p >= 0 && int(p) < len(tt.Partitions) && !taken {
						assigned[tp] = struct{}{}
						cg.owner[tp] = id
					}
				}
			}
		}
		cm := &cgMember{
			id: id, instanceID: m.instanceID, rackID: sub.Rack, clientID: m.clientID, clientHost: m.clientHost,
			subscribedNames:  slices.Compact(slices.Sorted(slices.Values(sub.Topics))),
			rebalanceTimeout: m.rebalanceTimeout,
			epoch:            g.generation, previousEpoch: g.generation, state: memberStable,
			assigned: assigned, pendingRevocation: partSet{}, assignedAt: map[topicIDPartition]int32{},
			sessionDeadline: now.Add(m.sessionTimeout),
			classic:         &classicMember{sessionTimeout: m.sessionTimeout, protocols: m.protocols},
		}
		for tp := range assigned {
			cm.assignedAt[tp] = g.generation
		}
		cg.members[id] = cm
		if cm.instanceID != nil {
			cg.static[*cm.instanceID] = id
		}
		cg.target[id] = assigned.clone()
	}
	g.failWaiters(kerr.RebalanceInProgress.Code)
	prev := g.cg
	g.cg = cg
	cg.subscriptionHash = g.subscriptionHash()
	recs := []recordbatch.Record{g.groupRecord(true)}
	for _, id := range ids {
		recs = append(recs, g.cgMemberRecords(cg.members[id])[0])
	}
	recs = append(recs, g.cgMetadataRecord())
	recs = append(recs, g.cgTargetRecords()...)
	for _, id := range ids {
		recs = append(recs, g.cgMemberRecords(cg.members[id])[1])
	}
	if err := g.writeConsumer(recs); err != nil {
		g.cg = prev
		g.log.Error().Err(err).Msg("writing the upgraded consumer group failed; the group stays classic")
		return &heartbeatError{storeErrorCode(err), ""}
	}
	g.members, g.static, g.pending, g.pendingSync = map[string]*member{}, map[string]string{}, map[string]time.Time{}, nil
	g.protocolType, g.protocol, g.leader, g.generation = "", "", "", 0
	g.setState(stateEmpty)
	g.log.Info().Int32("group_epoch", cg.epoch).Int("members", len(cg.members)).Msg("converted the classic group to a consumer group (KIP-848 online upgrade)")
	return nil
}

// downgradeFor reports whether fencing m, the last member speaking the
// consumer protocol, turns the group back into a classic one (Kafka's
// validateOnlineDowngradeWithFencedMember).
func (g *group) downgradeFor(m *cgMember) bool {
	if m.classic != nil || len(g.cg.members) <= 1 || !g.allClassic(m) {
		return false
	}
	return g.downgradeAllowed(len(g.cg.members) - 1)
}

// allClassic reports whether every member but except speaks the classic
// protocol.
func (g *group) allClassic(except *cgMember) bool {
	for _, o := range g.cg.members {
		if o != except && o.classic == nil {
			return false
		}
	}
	return true
}

// downgradeAllowed is the policy and size part of Kafka's downgrade
// checks, for a classic group of n members.
func (g *group) downgradeAllowed(n int) bool {
	if !g.c.cfg.downgradeEnabled() {
		g.log.Info().Msg("cannot downgrade the consumer group to a classic group: the online downgrade is disabled")
		return false
	}
	if n > g.c.cfg.MaxGroupSize {
		g.log.Info().Msg("cannot downgrade the consumer group to a classic group: it has more members than group.max.size")
		return false
	}
	return true
}

// downgradeToClassic turns the consumer group into a classic group
// without the leaving member (Kafka's convertToClassicGroup and
// ClassicGroup.fromConsumerGroup): Stable at the group epoch, each member
// holding its target assignment in its own consumer protocol version,
// then a rebalance; with leaving nil (a classic static member replaced
// the last consumer-protocol one, and holds its assignment) no rebalance.
// On an error nothing changed.
func (g *group) downgradeToClassic(leaving *cgMember) error {
	cg := g.cg
	now := g.c.clock.Now()
	members := map[string]*member{}
	static := map[string]string{}
	ids := cg.memberIDs()
	leader := ""
	for _, id := range ids {
		m := cg.members[id]
		if m == leaving {
			continue
		}
		if leader == "" {
			leader = id
		}
		members[id] = &member{
			id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeout: m.rebalanceTimeout, sessionTimeout: m.classic.sessionTimeout,
			protocolType: consumerProtocolType, protocols: m.classic.protocols,
			deadline: now.Add(m.classic.sessionTimeout),
		}
		if m.instanceID != nil {
			static[*m.instanceID] = id
		}
	}
	recs := g.cgTombstones()
	// The classic fields are Empty while the group is a consumer group:
	// on a failed write they go back to that.
	g.members, g.static, g.pending, g.pendingSync = members, static, map[string]time.Time{}, nil
	g.protocolType, g.generation, g.leader = consumerProtocolType, cg.epoch, leader
	g.protocol = g.selectProtocol()
	for id, m := range members {
		m.assignment = g.classicAssignment(cg.target[id], m.metadataFor(g.protocol))
	}
	state, since := g.state, g.stateSince
	g.state, g.stateSince = stateStable, now
	if err := g.append(append(recs, g.groupRecord(false))); err != nil {
		g.members, g.static = map[string]*member{}, map[string]string{}
		g.protocolType, g.protocol, g.generation, g.leader = "", "", 0, ""
		g.state, g.stateSince = state, since
		return err
	}
	g.cg = nil
	if leaving == nil {
		g.log.Info().Int32("generation", g.generation).Int("members", len(members)).Msg("converted the consumer group to a classic group (KIP-848 online downgrade: a classic static member replaced the last consumer-protocol member)")
		return nil
	}
	g.log.Info().Int32("generation", g.generation).Int("members", len(members)).Str("leaving_member", leaving.id).Msg("converted the consumer group to a classic group (KIP-848 online downgrade)")
	g.prepareRebalance("Downgrade group " + g.id + " from consumer to classic.")
	return nil
}

// classicAssignment encodes partitions in the consumer protocol's
// assignment, at the version of the member's subscription metadata (as
// Kafka's ConsumerProtocol.deserializeVersion picks it).
func (g *group) classicAssignment(ps partSet, metadata []byte) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	if len(metadata) >= 2 {
		a.Version = min(max(int16(metadata[0])<<8|int16(metadata[1]), 0), 3)
	}
	for _, t := range ps.byTopic() {
		if tt := g.c.store.TopicByID(t.id); tt != nil {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tt.Name, Partitions: t.partitions})
		}
	}
	return a.AppendTo(nil)
}

// classicJoin serves a JoinGroup to a consumer group with members (Kafka's
// classicGroupJoinToConsumerGroup); the answer is immediate.
func (g *group) classicJoin(req *kmsg.JoinGroupRequest, client ClientInfo) *kmsg.JoinGroupResponse {
	v := req.Version
	cg := g.cg
	now := g.c.clock.Now()
	fail := func(id string, code int16) *kmsg.JoinGroupResponse { return g.joinError(v, id, code) }
	if g.c.cfg.ConsumerMigrationPolicy == MigrationDisabled {
		g.log.Info().Msg("cannot join the consumer group with the classic protocol: the group migration is disabled")
		return fail(req.MemberID, kerr.InconsistentGroupProtocol.Code)
	}
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = newMemberID(client.ClientID)
	}
	_, known := cg.members[memberID]
	if !known && (req.InstanceID == nil || cg.static[*req.InstanceID] == "") && len(cg.members) >= g.c.cfg.ConsumerMaxSize {
		return fail(memberID, kerr.GroupMaxSizeReached.Code)
	}
	ps := make([]protocol, len(req.Protocols))
	names := make([]string, len(req.Protocols))
	for i, p := range req.Protocols {
		ps[i] = protocol{name: p.Name, metadata: p.Metadata}
		names[i] = p.Name
	}
	if !g.supportsClassicProtocols(req.ProtocolType, names) {
		return fail(memberID, kerr.InconsistentGroupProtocol.Code)
	}
	if unknown && req.InstanceID == nil && v >= 4 {
		// KIP-394; the id is not kept: the next join creates the member.
		return fail(memberID, kerr.MemberIDRequired.Code)
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(ps[0].metadata); err != nil {
		return fail(memberID, kerr.InconsistentGroupProtocol.Code)
	}

	snap := cg.snapshot()
	var (
		m, replaced *cgMember
	)
	if req.InstanceID != nil {
		existing := cg.members[cg.static[*req.InstanceID]]
		switch {
		case unknown && existing != nil:
			// A static member restarting with the classic protocol
			// takes the instance's place whatever the old one spoke
			// (Kafka checks the release only between two members of
			// the consumer protocol).
			replaced = existing
			m = &cgMember{id: memberID, assigned: partSet{}, pendingRevocation: partSet{}, assignedAt: map[topicIDPartition]int32{}, state: memberStable}
			m.subscribedNames, m.regex, m.serverAssignor = existing.subscribedNames, existing.regex, existing.serverAssignor
			target := cg.target[existing.id]
			g.removeCGMember(existing, true)
			cg.target[m.id] = target
		case unknown:
			m = &cgMember{id: memberID, assigned: partSet{}, pendingRevocation: partSet{}, assignedAt: map[topicIDPartition]int32{}, state: memberStable}
		case existing == nil:
			return fail(memberID, kerr.UnknownMemberID.Code)
		case existing.id != memberID:
			return fail(memberID, kerr.FencedInstanceID.Code)
		default:
			m = existing
		}
	} else if m = cg.members[memberID]; m == nil {
		m = &cgMember{id: memberID, assigned: partSet{}, pendingRevocation: partSet{}, assignedAt: map[topicIDPartition]int32{}, state: memberStable}
	} else if m.classic == nil {
		return fail(memberID, kerr.UnknownMemberID.Code)
	}
	_, wasMember := cg.members[m.id]
	before := memberSubscription{m.subscribedNames, m.regex, m.serverAssignor}
	m.instanceID = req.InstanceID
	if sub.Rack != nil {
		m.rackID = sub.Rack
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	} else if v == 0 || m.rebalanceTimeout == 0 {
		m.rebalanceTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	}
	m.subscribedNames = slices.Compact(slices.Sorted(slices.Values(sub.Topics)))
	m.clientID, m.clientHost = client.ClientID, client.ClientHost
	m.classic = &classicMember{sessionTimeout: time.Duration(req.SessionTimeoutMillis) * time.Millisecond, protocols: ps}
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	bump := !wasMember && replaced == nil || !before.equal(memberSubscription{m.subscribedNames, m.regex, m.serverAssignor})
	if bump {
		cg.subNames = nil
	}
	if h := g.subscriptionHash(); h != cg.subscriptionHash {
		cg.subscriptionHash = h
		bump = true
	}
	if bump {
		cg.epoch++
	}
	var recs []recordbatch.Record
	if cg.epoch > cg.assignmentEpoch {
		recs = g.computeTargetAssignment()
	}
	owned := partSet{}
	for _, t := range sub.OwnedPartitions {
		if tt := g.c.store.Topic(t.Topic); tt != nil {
			for _, p := range t.Partitions {
				owned[topicIDPartition{tt.ID, p}] = struct{}{}
			}
		}
	}
	g.reconcile(m, owned)
	m.revocationDeadline = time.Time{} // classic members have join and sync timers instead
	m.classic.joinDeadline = time.Time{}
	m.classic.syncDeadline = now.Add(m.rebalanceTimeout)
	m.sessionDeadline = now.Add(m.classic.sessionTimeout)
	name := ps[0].name
	resp := &kmsg.JoinGroupResponse{
		Version: v, Generation: m.epoch, MemberID: m.id,
		ProtocolType: kmsg.StringPtr(consumerProtocolType), Protocol: &name,
	}
	if replaced != nil && replaced.classic == nil && g.allClassic(nil) && g.downgradeAllowed(len(cg.members)) {
		// The last consumer-protocol member was replaced by a classic
		// static member (Kafka's
		// validateOnlineDowngradeWithReplacedMemberId): classic again,
		// the new member holding the old one's assignment.
		if err := g.downgradeToClassic(nil); err != nil {
			return fail(memberID, g.revertConsumer(snap, m.id, err).code)
		}
		return resp
	}
	if err := g.writeConsumer(append(recs, g.consumerMemberRecords(m, replaced)...)); err != nil {
		return fail(memberID, g.revertConsumer(snap, m.id, err).code)
	}
	g.log.Info().Str("member", m.id).Int32("member_epoch", m.epoch).Str("state", m.state.String()).Msg("classic member joined consumer group")
	return resp
}

// supportsClassicProtocols is Kafka's ConsumerGroup.supportsClassicProtocols:
// the consumer protocol type, and a protocol every classic member of the
// group supports.
func (g *group) supportsClassicProtocols(protocolType string, names []string) bool {
	if protocolType != consumerProtocolType || len(names) == 0 {
		return false
	}
	for _, n := range names {
		all := true
		for _, m := range g.cg.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(p protocol) bool { return p.name == n }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// classicMemberOf is Kafka's validateConsumerGroupMember plus
// throwIfMemberDoesNotUseClassicProtocol.
func (g *group) classicMemberOf(memberID string, instanceID *string) (*cgMember, int16) {
	cg := g.cg
	var m *cgMember
	if instanceID != nil {
		if m = cg.members[cg.static[*instanceID]]; m == nil {
			return nil, kerr.UnknownMemberID.Code
		}
		if m.id != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	} else if m = cg.members[memberID]; m == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	if m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// mustRejoin schedules the member's join timeout (if none is running)
// and is REBALANCE_IN_PROGRESS.
func (g *group) mustRejoin(m *cgMember) int16 {
	if m.classic.joinDeadline.IsZero() {
		m.classic.joinDeadline = g.c.clock.Now().Add(m.rebalanceTimeout)
	}
	return kerr.RebalanceInProgress.Code
}

// classicSync serves a SyncGroup to a consumer group (Kafka's
// classicGroupSyncToConsumerGroup).
func (g *group) classicSync(req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	v := req.Version
	fail := func(code int16) *kmsg.SyncGroupResponse { return &kmsg.SyncGroupResponse{Version: v, ErrorCode: code} }
	m, code := g.classicMemberOf(req.MemberID, req.InstanceID)
	if code != 0 {
		return fail(code)
	}
	if req.Generation != m.epoch {
		return fail(kerr.IllegalGeneration.Code)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType) ||
		(req.Protocol != nil && (len(m.classic.protocols) == 0 || *req.Protocol != m.classic.protocols[0].name)) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	if g.cg.epoch > m.epoch && m.state != memberUnrevokedPartitions {
		return fail(g.mustRejoin(m))
	}
	m.classic.syncDeadline = time.Time{}
	m.sessionDeadline = g.c.clock.Now().Add(m.classic.sessionTimeout)
	var meta []byte
	if len(m.classic.protocols) > 0 {
		meta = m.classic.protocols[0].metadata
	}
	return &kmsg.SyncGroupResponse{Version: v, ProtocolType: req.ProtocolType, Protocol: req.Protocol, MemberAssignment: g.classicAssignment(m.assigned, meta)}
}

// classicHeartbeat serves a Heartbeat to a consumer group (Kafka's
// classicGroupHeartbeatToConsumerGroup).
func (g *group) classicHeartbeat(req *kmsg.HeartbeatRequest) int16 {
	m, code := g.classicMemberOf(req.MemberID, req.InstanceID)
	if code != 0 {
		return code
	}
	if req.Generation != m.epoch {
		return kerr.IllegalGeneration.Code
	}
	m.sessionDeadline = g.c.clock.Now().Add(m.classic.sessionTimeout)
	if m.epoch < g.cg.epoch || m.state == memberUnrevokedPartitions ||
		(m.state == memberUnreleasedPartitions && !g.waitingOnUnreleased(m)) {
		return g.mustRejoin(m)
	}
	return 0
}

// waitingOnUnreleased reports whether a partition of the member's target
// is still held by another member (Kafka's waitingOnUnreleasedPartition).
func (g *group) waitingOnUnreleased(m *cgMember) bool {
	for tp := range g.cg.target[m.id] {
		if _, mine := m.assigned[tp]; mine {
			continue
		}
		if o, held := g.cg.owner[tp]; held && o != m.id {
			return true
		}
	}
	return false
}

// classicLeave serves a LeaveGroup to a consumer group (Kafka's
// classicGroupLeaveToConsumerGroup): each classic member named leaves,
// and the group epoch moves once.
func (g *group) classicLeave(members []kmsg.LeaveGroupRequestMember) []int16 {
	cg := g.cg
	codes := make([]int16, len(members))
	snap := cg.snapshot()
	var left []*cgMember
	for i, lm := range members {
		var m *cgMember
		if lm.InstanceID != nil {
			m = cg.members[cg.static[*lm.InstanceID]]
			switch {
			case m == nil:
				codes[i] = kerr.UnknownMemberID.Code
				continue
			case lm.MemberID != "" && lm.MemberID != m.id:
				codes[i] = kerr.FencedInstanceID.Code
				continue
			}
		} else if m = cg.members[lm.MemberID]; m == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		if m.classic == nil {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		g.removeCGMember(m, true)
		left = append(left, m)
		g.log.Info().Str("member", m.id).Msg("classic member left consumer group")
	}
	if len(left) == 0 {
		return codes
	}
	cg.epoch++
	var recs []recordbatch.Record
	for _, m := range left {
		recs = append(recs, g.cgMemberTombstones(m.id)...)
	}
	if err := g.writeConsumer(append(recs, g.cgMetadataRecord())); err != nil {
		code := g.revertConsumer(snap, "", err).code
		for i := range codes {
			if codes[i] == 0 {
				codes[i] = code
			}
		}
	}
	return codes
}

// joinDeadline and syncDeadline are a classic member's timers; zero for
// a member of the consumer protocol.
func (m *cgMember) joinDeadline() time.Time {
	if m.classic == nil {
		return time.Time{}
	}
	return m.classic.joinDeadline
}

func (m *cgMember) syncDeadline() time.Time {
	if m.classic == nil {
		return time.Time{}
	}
	return m.classic.syncDeadline
}
