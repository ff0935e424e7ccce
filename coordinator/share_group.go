package coordinator

// Share groups (KIP-932), as Kafka 4.3's GroupMetadataManager serves
// them: members bring their own ids, the group epoch moves when the
// membership, a subscription or the subscribed topics change, the target
// assignment is computed by the share SimpleAssignor (a partition may go
// to several members) and becomes each member's assignment at once (share
// groups revoke nothing: records are acknowledged one by one, never
// owned). A share-partition's state is initialized through the persister
// when the partition is first assigned, at share.auto.offset.reset.

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator/sharefetch"
	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
)

// sgMember is one member of a share group; owned by the group's
// goroutine.
type sgMember struct {
	id              string
	rackID          *string
	clientID        string
	clientHost      string
	subscribedNames []string // sorted
	epoch, previous int32
	state           int8 // Kafka's MemberState: 0 stable
	assigned        partSet
	sessionDeadline time.Time
}

// shareGroup is the KIP-932 state of a group.
type shareGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*sgMember
	target          map[string]partSet
	// subscriptionHash is over the subscribed topics when the epoch last
	// moved (a created, deleted or grown topic moves it).
	subscriptionHash uint64
	// initialized are the share-partitions whose state was initialized
	// (ShareGroupStatePartitionMetadata's InitializedTopics).
	initialized partSet
	written     map[string][]byte
}

func newShareGroup() *shareGroup {
	return &shareGroup{members: map[string]*sgMember{}, target: map[string]partSet{}, initialized: partSet{}}
}

func (sg *shareGroup) state() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (sg *shareGroup) memberIDs() []string {
	ids := make([]string, 0, len(sg.members))
	for id := range sg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// shareSessionTimeout / shareHeartbeatInterval are the group's
// share.session.timeout.ms / share.heartbeat.interval.ms.
func (g *group) shareSessionTimeout() time.Duration {
	cfg := g.c.cfg
	return g.c.groupDuration(g.id, ShareSessionTimeoutConfig, cfg.ShareSessionTimeout, cfg.ShareMinSessionTimeout, cfg.ShareMaxSessionTimeout)
}

func (g *group) shareHeartbeatInterval() time.Duration {
	cfg := g.c.cfg
	return g.c.groupDuration(g.id, ShareHeartbeatIntervalConfig, cfg.ShareHeartbeatInterval, cfg.ShareMinHeartbeatInterval, cfg.ShareMaxHeartbeatInterval)
}

// shareHeartbeat serves a ShareGroupHeartbeat on the group's goroutine.
func (g *group) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, client ClientInfo) (*kmsg.ShareGroupHeartbeatResponse, *heartbeatError) {
	if g.state == stateDead {
		return nil, hbErr(kerr.CoordinatorNotAvailable, "")
	}
	if g.sg == nil {
		if req.MemberEpoch != 0 {
			return nil, hbErr(kerr.GroupIDNotFound, "Share group "+g.id+" not found.")
		}
		if g.cg != nil || g.stg != nil || len(g.members) > 0 || g.protocolType != "" || len(g.offsets) > 0 {
			return nil, hbErr(kerr.GroupIDNotFound, "Group "+g.id+" is not a share group.")
		}
		g.sg = newShareGroup()
		g.log.Info().Msg("group is a share group (KIP-932)")
	}
	sg := g.sg
	now := g.c.clock.Now()
	m := sg.members[req.MemberID]
	if req.MemberEpoch == leaveEpoch {
		if m == nil {
			return nil, hbErr(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		}
		if err := g.removeShareMember(m, "the member left"); err != nil {
			return nil, &heartbeatError{storeErrorCode(err), ""}
		}
		id := req.MemberID
		return &kmsg.ShareGroupHeartbeatResponse{Version: req.Version, MemberID: &id, MemberEpoch: leaveEpoch}, nil
	}
	if m == nil {
		if req.MemberEpoch != 0 {
			return nil, hbErr(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		}
		if len(sg.members) >= g.c.cfg.ShareMaxSize {
			return nil, hbErr(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of "+itoa(g.c.cfg.ShareMaxSize)+" members.")
		}
	} else if req.MemberEpoch != m.epoch && req.MemberEpoch != 0 {
		rel := "smaller"
		if req.MemberEpoch > m.epoch {
			rel = "greater"
		}
		return nil, hbErr(kerr.FencedMemberEpoch, "The share group member has a "+rel+" member epoch ("+itoa(int(req.MemberEpoch))+") than the one known by the group coordinator ("+itoa(int(m.epoch))+"). The member must abandon all its partitions and rejoin.")
	}
	snap := sg.snapshot()
	nm := &sgMember{id: req.MemberID, assigned: partSet{}}
	if m != nil {
		c := *m
		nm = &c
	}
	nm.clientID, nm.clientHost = client.ClientID, client.ClientHost
	if req.RackID != nil {
		nm.rackID = req.RackID
	}
	bump := m == nil
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, nm.subscribedNames) {
			nm.subscribedNames = names
			bump = true
		}
	}
	sg.members[nm.id] = nm
	if h := g.shareSubscriptionHash(); h != sg.subscriptionHash {
		sg.subscriptionHash = h
		bump = true
	}
	if bump {
		sg.epoch++
	}
	if sg.epoch > sg.assignmentEpoch {
		if err := g.computeShareAssignment(); err != nil {
			g.sg = snap
			return nil, &heartbeatError{storeErrorCode(err), ""}
		}
	}
	before := nm.assigned
	if nm.epoch != sg.assignmentEpoch {
		nm.previous, nm.epoch = nm.epoch, sg.assignmentEpoch
		nm.assigned = sg.target[nm.id].clone()
	}
	nm.sessionDeadline = now.Add(g.shareSessionTimeout())
	if err := g.writeShare(g.shareRecords()); err != nil {
		g.sg = snap
		return nil, &heartbeatError{storeErrorCode(err), ""}
	}
	id := nm.id
	resp := &kmsg.ShareGroupHeartbeatResponse{
		Version:                 req.Version,
		MemberID:                &id,
		MemberEpoch:             nm.epoch,
		HeartbeatIntervalMillis: int32(g.shareHeartbeatInterval() / time.Millisecond),
	}
	if req.MemberEpoch == 0 || !before.equal(nm.assigned) {
		a := &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}}
		for _, t := range nm.assigned.byTopic() {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: t.id, Partitions: t.partitions})
		}
		resp.Assignment = a
	}
	return resp, nil
}

// snapshot is a copy to go back to when a record write fails.
func (sg *shareGroup) snapshot() *shareGroup {
	c := *sg
	c.members = make(map[string]*sgMember, len(sg.members))
	for id, m := range sg.members {
		mm := *m
		c.members[id] = &mm
	}
	c.target = make(map[string]partSet, len(sg.target))
	for id, t := range sg.target {
		c.target[id] = t
	}
	c.initialized = sg.initialized.clone()
	return &c
}

// removeShareMember removes m, moves the epoch and assigns again; its
// records are released.
func (g *group) removeShareMember(m *sgMember, why string) error {
	sg := g.sg
	snap := sg.snapshot()
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	sg.epoch++
	if err := g.computeShareAssignment(); err != nil {
		g.sg = snap
		return err
	}
	// The others take the new target at their next heartbeat.
	if err := g.writeShare(g.shareRecords()); err != nil {
		g.sg = snap
		return err
	}
	g.log.Info().Str("member", m.id).Str("reason", why).Msg("share group member removed")
	if f := g.c.share; f != nil {
		f.ReleaseMember(g.id, m.id)
	}
	return nil
}

// shareSubscribed are the topics some member subscribes to that exist.
func (g *group) shareSubscribed() []*partition.Topic {
	seen := map[string]bool{}
	var out []*partition.Topic
	for _, m := range g.sg.members {
		for _, n := range m.subscribedNames {
			if seen[n] {
				continue
			}
			seen[n] = true
			if t := g.c.store.Topic(n); t != nil && !t.Internal {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b *partition.Topic) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func (g *group) shareSubscriptionHash() uint64 {
	h := uint64(14695981039346656037)
	for _, t := range g.shareSubscribed() {
		for _, b := range t.ID {
			h = (h ^ uint64(b)) * 1099511628211
		}
		h = (h ^ uint64(len(t.Partitions))) * 1099511628211
	}
	return h
}

// computeShareAssignment initializes the share state of the subscribed
// partitions not yet initialized and without state in the persister, then
// assigns (simpleShareAssign).
func (g *group) computeShareAssignment() error {
	sg := g.sg
	topics := g.shareSubscribed()
	now := g.c.clock.Now()
	reset := g.c.GroupConfigString(g.id, ShareAutoOffsetResetConfig, "latest")
	for _, t := range topics {
		for p, log := range t.Partitions {
			tp := topicIDPartition{t.ID, int32(p)}
			if _, ok := sg.initialized[tp]; ok {
				continue
			}
			// State the persister has is kept (a group rebuilt without
			// its records, or re-created): initializing it again would
			// drop the in-flight records.
			key := sharestate.Key{GroupID: g.id, TopicID: t.ID, Partition: int32(p)}
			_, found, err := g.c.persister.ReadSummary(key)
			if err != nil {
				return err
			}
			if !found {
				start := sharefetch.ResetOffset(log, reset, now)
				if err := g.c.persister.Initialize(key, 0, start); err != nil {
					return err
				}
			}
			sg.initialized[tp] = struct{}{}
		}
	}
	subs := map[string][]string{}
	for id, m := range sg.members {
		subs[id] = m.subscribedNames
	}
	sg.target = simpleShareAssign(subs, func(name string) (partition.TopicID, int, bool) {
		t := g.c.store.Topic(name)
		if t == nil || t.Internal {
			return partition.TopicID{}, 0, false
		}
		return t.ID, len(t.Partitions), true
	})
	sg.assignmentEpoch = sg.epoch
	return nil
}

// simpleShareAssign is the share SimpleAssignor of Kafka 4.3, per set of
// members with the same subscription: with no more members than
// partitions each partition goes to one member, spread evenly; with more
// members than partitions each member gets one partition, and the
// partitions are shared evenly among them.
func simpleShareAssign(subs map[string][]string, topic func(string) (partition.TopicID, int, bool)) map[string]partSet {
	bySub := map[string][]string{}
	for id, names := range subs {
		k := ""
		for _, n := range names {
			k += n + "\x00"
		}
		bySub[k] = append(bySub[k], id)
	}
	out := map[string]partSet{}
	for _, ids := range bySub {
		slices.Sort(ids)
		var parts []topicIDPartition
		for _, n := range subs[ids[0]] {
			id, np, ok := topic(n)
			if !ok {
				continue
			}
			for p := 0; p < np; p++ {
				parts = append(parts, topicIDPartition{id, int32(p)})
			}
		}
		slices.SortFunc(parts, compareTIP)
		for _, id := range ids {
			out[id] = partSet{}
		}
		if len(parts) == 0 {
			continue
		}
		if len(ids) <= len(parts) {
			for i, tp := range parts {
				out[ids[i%len(ids)]][tp] = struct{}{}
			}
		} else {
			for i, id := range ids {
				out[id][parts[i%len(parts)]] = struct{}{}
			}
		}
	}
	return out
}

// sgDeadline is the earliest session deadline of the share members.
func (g *group) sgDeadline() time.Time {
	var at time.Time
	for _, m := range g.sg.members {
		if t := m.sessionDeadline; !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// sgOnTimer removes the members whose session expired.
func (g *group) sgOnTimer(now time.Time) {
	for _, id := range g.sg.memberIDs() {
		m := g.sg.members[id]
		if m == nil || m.sessionDeadline.After(now) {
			continue
		}
		if err := g.removeShareMember(m, "session expired"); err != nil {
			if mm := g.sg.members[id]; mm != nil {
				mm.sessionDeadline = now.Add(fenceRetryBackoff)
			}
		}
	}
}

// describeShare is ShareGroupDescribe's answer.
func (g *group) describeShare() kmsg.ShareGroupDescribeResponseGroup {
	sg := g.sg
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = g.id
	d.GroupState = sg.state()
	d.GroupEpoch = sg.epoch
	d.AssignmentEpoch = sg.assignmentEpoch
	d.Assignor = "simple"
	d.AuthorizedOperations = -2147483648
	d.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
	for _, id := range sg.memberIDs() {
		m := sg.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopicNames = append([]string{}, m.subscribedNames...)
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, t := range m.assigned.byTopic() {
			name := ""
			if tt := g.c.store.TopicByID(t.id); tt != nil {
				name = tt.Name
			}
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{TopicID: t.id, Topic: name, Partitions: t.partitions})
		}
		d.Members = append(d.Members, dm)
	}
	return d
}
