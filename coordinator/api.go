package coordinator

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClientInfo is who sent a request: JoinGroup records it on the member
// (DescribeGroups shows it) and builds the member id from the client id.
type ClientInfo struct {
	ClientID   string
	ClientHost string
	// DescribesTopic reports whether the client's principal may DESCRIBE
	// a topic (nil: every topic, no authorizer). A heartbeat's regex
	// subscription resolves to the topics it may describe, as Kafka's
	// refreshRegularExpressions filters with the triggering request's
	// context.
	DescribesTopic func(topic string) bool
}

// retries bounds how often a request follows a group that went Dead
// under it to its replacement.
const retries = 3

// onGroup runs f on the group's goroutine (creating the group when create
// is set) and waits for it; false if the group does not exist, it went
// away and no replacement could be reached, or its goroutine ended in f.
func (c *Coordinator) onGroup(ctx context.Context, id string, create bool, f func(g *group)) bool {
	for i := 0; i < retries; i++ {
		g := c.lookup(id, create)
		if g == nil {
			return false
		}
		done := make(chan struct{})
		// Published before the answer, so a ListGroups sent after it
		// sees what it did (the goroutine publishes again after f).
		if !g.do(ctx, func() { f(g); g.publish(); close(done) }) {
			continue // the group went Dead under us: follow its replacement
		}
		select {
		case <-done:
			return true
		case <-g.done:
			// f panicked (recoverPanic replaced the group): answered as
			// a group we do not have, not run again on the replacement,
			// since what it did before the panic cannot be known.
			select {
			case <-done:
				return true
			default:
				return false
			}
		}
	}
	return false
}

// JoinGroup serves a JoinGroup; it blocks until the join phase ends. A nil
// answer means ctx ended first (the connection is closing).
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, client ClientInfo) *kmsg.JoinGroupResponse {
	ch, g, r := c.startJoin(ctx, req, client)
	if r != nil || ch == nil {
		return r
	}
	return await(ctx, ch, g, func() *kmsg.JoinGroupResponse {
		return (&group{}).joinError(req.Version, req.MemberID, kerr.CoordinatorNotAvailable.Code)
	})
}

// startJoin hands a JoinGroup to its group and returns where the answer
// will arrive, or the answer itself when it is immediate; (nil, nil, nil)
// if ctx ended.
func (c *Coordinator) startJoin(ctx context.Context, req *kmsg.JoinGroupRequest, client ClientInfo) (chan *kmsg.JoinGroupResponse, *group, *kmsg.JoinGroupResponse) {
	fail := func(code int16) (chan *kmsg.JoinGroupResponse, *group, *kmsg.JoinGroupResponse) {
		return nil, nil, (&group{}).joinError(req.Version, req.MemberID, code)
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout.Code)
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	var g *group
	ok := c.onGroup(ctx, req.Group, req.MemberID == "", func(gg *group) {
		g = gg
		gg.join(req, client, ch)
	})
	if !ok {
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		if req.MemberID != "" && !c.isClosed() {
			return fail(kerr.UnknownMemberID.Code)
		}
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	return ch, g, nil
}

// await waits for a group's answer on ch; nil if ctx ends first, and
// gone() if the group went away without answering.
func await[T any](ctx context.Context, ch chan *T, g *group, gone func() *T) *T {
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		return nil
	case <-g.done:
		select {
		case r := <-ch:
			return r
		default:
			return gone()
		}
	}
}

func (c *Coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// SyncGroup serves a SyncGroup; a follower blocks until the leader's
// assignment arrives. nil: ctx ended first.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	ch, g, r := c.startSync(ctx, req)
	if r != nil || ch == nil {
		return r
	}
	return await(ctx, ch, g, func() *kmsg.SyncGroupResponse {
		return &kmsg.SyncGroupResponse{Version: req.Version, ErrorCode: kerr.CoordinatorNotAvailable.Code}
	})
}

// startSync is startJoin for SyncGroup.
func (c *Coordinator) startSync(ctx context.Context, req *kmsg.SyncGroupRequest) (chan *kmsg.SyncGroupResponse, *group, *kmsg.SyncGroupResponse) {
	fail := func(code int16) (chan *kmsg.SyncGroupResponse, *group, *kmsg.SyncGroupResponse) {
		return nil, nil, &kmsg.SyncGroupResponse{Version: req.Version, ErrorCode: code}
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	var g *group
	if !c.onGroup(ctx, req.Group, false, func(gg *group) { g = gg; gg.sync(req, ch) }) {
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		return fail(c.missingGroupCode())
	}
	return ch, g, nil
}

// missingGroupCode is the answer for a member of a group we do not have:
// UNKNOWN_MEMBER_ID, or COORDINATOR_NOT_AVAILABLE while shutting down.
func (c *Coordinator) missingGroupCode() int16 {
	if c.isClosed() {
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.UnknownMemberID.Code
}

// Heartbeat serves a Heartbeat and returns its error code.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	var code int16
	if !c.onGroup(ctx, req.Group, false, func(g *group) { code = g.heartbeatReq(req) }) {
		return c.missingGroupCode()
	}
	return code
}

// LeaveGroup serves a LeaveGroup: a top-level code and one per member.
func (c *Coordinator) LeaveGroup(ctx context.Context, groupID string, members []kmsg.LeaveGroupRequestMember) (int16, []int16) {
	if groupID == "" {
		return kerr.InvalidGroupID.Code, nil
	}
	var codes []int16
	if !c.onGroup(ctx, groupID, false, func(g *group) { codes = g.leave(members) }) {
		if c.isClosed() {
			return kerr.CoordinatorNotAvailable.Code, nil
		}
		codes = make([]int16, len(members))
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
	}
	return 0, codes
}

// CommitPartition is one partition of an OffsetCommit that the caller
// checked exists. Its metadata is checked against offset.metadata.max.bytes
// here, after the group checks, as Kafka does.
type CommitPartition struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// CommitTimestamp and ExpireTimestamp in ms; ExpireTimestamp -1:
	// none.
	CommitTimestamp, ExpireTimestamp int64
}

// Now is the coordinator's clock, in ms, for commit timestamps.
func (c *Coordinator) Now() int64 { return c.clock.Now().UnixMilli() }

// CommitOffsets validates the committer and writes the offsets; codes[i]
// is the answer for parts[i]. A group error (unknown member, generation,
// rebalance in progress) answers every partition; otherwise a partition
// with metadata over offset.metadata.max.bytes gets
// OFFSET_METADATA_TOO_LARGE and the others are written.
func (c *Coordinator) CommitOffsets(ctx context.Context, version int16, groupID string, generation int32, memberID string, instanceID *string, parts []CommitPartition) []int16 {
	if len(parts) == 0 {
		// Kafka validates nothing for an empty commit either.
		return nil
	}
	ps := commitParts(parts)
	var codes []int16
	ok := c.onGroup(ctx, groupID, generation < 0, func(g *group) {
		codes = g.commit(version, generation, memberID, instanceID, ps)
	})
	if ok {
		return codes
	}
	code := kerr.CoordinatorNotAvailable.Code
	if !c.isClosed() && ctx.Err() == nil {
		// A member of a group we do not have: the group was removed or
		// the member is from another generation. Kafka answers
		// GROUP_ID_NOT_FOUND from OffsetCommit v9, ILLEGAL_GENERATION
		// before.
		code = kerr.IllegalGeneration.Code
		if version >= 9 {
			code = kerr.GroupIDNotFound.Code
		}
	}
	codes = make([]int16, len(parts))
	for i := range codes {
		codes[i] = code
	}
	return codes
}

// Offset is one committed offset as OffsetFetch returns it.
type Offset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// ErrorCode is UNSTABLE_OFFSET_COMMIT (offset -1) for a partition with
	// a pending transactional commit when stable offsets were asked for.
	ErrorCode int16
}

// FetchOffsets returns a group's committed offsets: of the given
// partitions (-1 for those without one), or all when topics is nil, sorted
// by topic and partition.
func (c *Coordinator) FetchOffsets(ctx context.Context, groupID string, topics map[string][]int32) ([]Offset, int16) {
	return c.FetchOffsetsStable(ctx, groupID, topics, false)
}

// FetchOffsetsStable is FetchOffsets with OffsetFetch's require_stable
// (v7+, KIP-447): with it, a partition for which an open transaction holds
// an offset is answered UNSTABLE_OFFSET_COMMIT, as Kafka does, so the
// consumer retries once the transaction ended. When all offsets are asked
// for, only partitions with a committed offset are listed, as in Kafka.
func (c *Coordinator) FetchOffsetsStable(ctx context.Context, groupID string, topics map[string][]int32, requireStable bool) ([]Offset, int16) {
	var out []Offset
	var code int16
	found := c.onGroup(ctx, groupID, false, func(g *group) {
		if g.state == stateDead {
			return
		}
		if g.sg != nil {
			// ShareGroup.validateOffsetFetch: not a consumer group.
			code = kerr.GroupIDNotFound.Code
			return
		}
		unstable := func(tp topicPartition) bool { return requireStable && g.hasPendingTxnOffset(tp) }
		if topics == nil {
			for tp, e := range g.offsets {
				if unstable(tp) {
					out = append(out, Offset{tp.topic, tp.partition, -1, -1, "", kerr.UnstableOffsetCommit.Code})
					continue
				}
				out = append(out, Offset{tp.topic, tp.partition, e.offset, e.leaderEpoch, e.metadata, 0})
			}
			return
		}
		for t, ps := range topics {
			for _, p := range ps {
				tp := topicPartition{t, p}
				o := Offset{t, p, -1, -1, "", 0}
				if unstable(tp) {
					o.ErrorCode = kerr.UnstableOffsetCommit.Code
				} else if e, ok := g.offsets[tp]; ok {
					o = Offset{t, p, e.offset, e.leaderEpoch, e.metadata, 0}
				}
				out = append(out, o)
			}
		}
	})
	if code != 0 {
		return nil, code
	}
	if !found {
		if c.isClosed() {
			return nil, kerr.CoordinatorNotAvailable.Code
		}
		for t, ps := range topics {
			for _, p := range ps {
				out = append(out, Offset{t, p, -1, -1, "", 0})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, 0
}

// describeError is the error of describing groupID as a kind ("consumer",
// "share", "streams") group, as Kafka's describe APIs answer:
// COORDINATOR_NOT_AVAILABLE once closed, GROUP_ID_NOT_FOUND with Kafka's
// message for a group we do not have (found false) or one of another kind
// (ofKind false); 0 when it was described.
func (c *Coordinator) describeError(groupID, kind string, found, ofKind bool) (int16, *string) {
	var msg string
	switch {
	case !found && c.isClosed():
		return kerr.CoordinatorNotAvailable.Code, nil
	case !found:
		msg = "Group " + groupID + " not found."
	case !ofKind:
		msg = "Group " + groupID + " is not a " + kind + " group."
	default:
		return 0, nil
	}
	return kerr.GroupIDNotFound.Code, &msg
}

// DescribeGroup describes one group; found is false for a group we do not
// have.
func (c *Coordinator) DescribeGroup(ctx context.Context, groupID string, version int16) (kmsg.DescribeGroupsResponseGroup, bool) {
	var d kmsg.DescribeGroupsResponseGroup
	found := c.onGroup(ctx, groupID, false, func(g *group) { d = g.describe(version) })
	if !found || d.State == stateDead.String() {
		// A group of another type keeps its message (v6+).
		return kmsg.DescribeGroupsResponseGroup{Group: groupID, State: stateDead.String(), ErrorMessage: d.ErrorMessage, Members: []kmsg.DescribeGroupsResponseGroupMember{}}, false
	}
	return d, true
}

// GroupListing is one ListGroups entry; Type is "classic" or "consumer"
// (KIP-848).
type GroupListing struct {
	Group, ProtocolType, State, Type string
}

// ListGroups lists the groups whose state is among states and whose type
// among types (empty filters match everything; matching ignores case, as
// Kafka's does). A consumer group lists its KIP-848 state (Empty,
// Assigning, Reconciling, Stable) and protocol type "consumer".
func (c *Coordinator) ListGroups(states, types []string) []GroupListing {
	match := func(v string, filter []string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	var out []GroupListing
	for _, g := range c.allGroups() {
		s := g.sum.Load()
		if s == nil || s.state == stateDead {
			continue
		}
		l := GroupListing{Group: g.id, ProtocolType: s.protocolType, State: s.state.String(), Type: "classic"}
		if s.consumer != "" {
			l.ProtocolType, l.State, l.Type = "consumer", s.consumer, "consumer"
		}
		if s.share != "" {
			l.ProtocolType, l.State, l.Type = "share", s.share, "share"
		}
		if s.streams != "" {
			l.ProtocolType, l.State, l.Type = "streams", s.streams, "streams"
		}
		if !match(l.State, states) || !match(l.Type, types) {
			continue
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

// DeleteGroup deletes an Empty group and its offsets.
func (c *Coordinator) DeleteGroup(ctx context.Context, groupID string) int16 {
	var code int16
	if !c.onGroup(ctx, groupID, false, func(g *group) { code = g.deleteGroup() }) {
		if c.isClosed() {
			return kerr.CoordinatorNotAvailable.Code
		}
		return kerr.GroupIDNotFound.Code
	}
	return code
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// DeleteOffsets is OffsetDelete: a top-level code and one per partition.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, parts []TopicPartition) (int16, []int16) {
	tps := make([]topicPartition, len(parts))
	for i, p := range parts {
		tps[i] = topicPartition{p.Topic, p.Partition}
	}
	var code int16
	var codes []int16
	if !c.onGroup(ctx, groupID, false, func(g *group) { code, codes = g.deleteOffsets(tps) }) {
		if c.isClosed() {
			return kerr.CoordinatorNotAvailable.Code, nil
		}
		return kerr.GroupIDNotFound.Code, nil
	}
	return code, codes
}

// TopicDeleted drops every group's committed offsets of a deleted topic,
// writing tombstones, as Kafka's onPartitionsDeleted does. The deletion
// of __consumer_offsets itself unloads every group instead, as Kafka's
// group coordinator resigns the partitions of a deleted offsets topic
// (BrokerMetadataPublisher.updateCoordinator -> onResignation): groups
// and their committed offsets are gone, a waiting JoinGroup or SyncGroup
// is answered NOT_COORDINATOR so its client finds the coordinator again,
// and the topic comes back, empty, on its next use.
func (c *Coordinator) TopicDeleted(ctx context.Context, topic string) {
	if topic == OffsetsTopic {
		c.eachGroup(ctx, (*group).unload)
		return
	}
	c.eachGroup(ctx, func(g *group) { g.dropTopic(topic) })
}

// eachGroup runs f on the goroutine of every live group in turn, waiting
// for each.
func (c *Coordinator) eachGroup(ctx context.Context, f func(*group)) {
	for _, g := range c.allGroups() {
		done := make(chan struct{})
		if g.do(ctx, func() { f(g); close(done) }) {
			select {
			case <-done:
			case <-g.done:
			}
		}
	}
}

// commitParts is what a group stores for each partition of a commit.
func commitParts(parts []CommitPartition) []commitPart {
	ps := make([]commitPart, len(parts))
	for i, p := range parts {
		ps[i] = commitPart{
			tp: topicPartition{p.Topic, p.Partition},
			entry: offsetEntry{
				offset: p.Offset, leaderEpoch: p.LeaderEpoch, metadata: p.Metadata,
				commitTimestamp: p.CommitTimestamp, expireTimestamp: p.ExpireTimestamp,
			},
		}
	}
	return ps
}
