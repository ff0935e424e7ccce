package coordinator

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator/sharefetch"
	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/partition"
)

// ShareFetcher is the share-fetch path (ShareFetch, ShareAcknowledge).
func (c *Coordinator) ShareFetcher() *sharefetch.Manager { return c.share }

// shareSettings are a share group's effective settings for the fetch path.
func (c *Coordinator) shareSettings(group string) sharefetch.Settings {
	cfg := c.cfg
	iso := partition.ReadUncommitted
	if c.GroupConfigString(group, ShareIsolationLevelConfig, "read_uncommitted") == "read_committed" {
		iso = partition.ReadCommitted
	}
	return sharefetch.Settings{
		LockDuration:    c.groupDuration(group, ShareRecordLockDurationConfig, cfg.ShareRecordLockDuration, cfg.ShareMinRecordLockDuration, cfg.ShareMaxRecordLockDuration),
		DeliveryLimit:   int16(c.GroupConfigInt(group, ShareDeliveryCountLimitConfig, int64(cfg.ShareDeliveryCountLimit), int64(cfg.ShareMinDeliveryCountLimit), int64(cfg.ShareMaxDeliveryCountLimit))),
		MaxRecordLocks:  int(c.GroupConfigInt(group, SharePartitionMaxRecordLocksCfg, int64(cfg.SharePartitionMaxRecordLocks), int64(cfg.ShareMinPartitionMaxRecordLocks), int64(cfg.ShareMaxPartitionMaxRecordLocks))),
		Isolation:       iso,
		AutoOffsetReset: c.GroupConfigString(group, ShareAutoOffsetResetConfig, "latest"),
		RenewEnabled:    c.GroupConfigString(group, ShareRenewAcknowledgeEnableConfig, "true") == "true",
	}
}

// ShareGroupHeartbeat serves a ShareGroupHeartbeat (v1: the member brings
// its id), validated as Kafka's throwIfShareGroupHeartbeatRequestIsInvalid.
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, client ClientInfo) *kmsg.ShareGroupHeartbeatResponse {
	fail := func(e *heartbeatError) *kmsg.ShareGroupHeartbeatResponse {
		r := &kmsg.ShareGroupHeartbeatResponse{Version: req.Version, ErrorCode: e.code}
		if e.msg != "" {
			msg := e.msg
			r.ErrorMessage = &msg
		}
		return r
	}
	invalid := func(msg string) *kmsg.ShareGroupHeartbeatResponse { return fail(hbErr(kerr.InvalidRequest, msg)) }
	switch {
	case !sharefetch.ValidMemberID(req.MemberID): // KafkaApis checks it first
		return invalid(sharefetch.InvalidMemberIDMessage)
	case strings.TrimSpace(req.GroupID) == "":
		return fail(hbErr(kerr.InvalidGroupID, "GroupId can't be empty."))
	case strings.TrimSpace(req.MemberID) == "":
		return invalid("MemberId can't be empty.")
	case req.RackID != nil && strings.TrimSpace(*req.RackID) == "":
		return invalid("RackId can't be empty.")
	case req.MemberEpoch < leaveEpoch:
		return invalid("MemberEpoch is invalid.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return invalid("SubscribedTopicNames must be set in first request.")
	}
	var resp *kmsg.ShareGroupHeartbeatResponse
	var e *heartbeatError
	if !c.onGroup(ctx, req.GroupID, req.MemberEpoch == 0, func(g *group) { resp, e = g.shareHeartbeat(req, client) }) {
		if c.isClosed() {
			return fail(hbErr(kerr.CoordinatorNotAvailable, ""))
		}
		return fail(hbErr(kerr.GroupIDNotFound, "Share group "+req.GroupID+" not found."))
	}
	if e != nil {
		return fail(e)
	}
	return resp
}

// ShareGroupDescribe describes one group for ShareGroupDescribe.
func (c *Coordinator) ShareGroupDescribe(ctx context.Context, groupID string) kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID, d.AuthorizedOperations = groupID, -2147483648
	isShare := false
	found := c.onGroup(ctx, groupID, false, func(g *group) {
		if g.sg == nil || g.state == stateDead {
			return
		}
		isShare = true
		d = g.describeShare()
	})
	if code, msg := c.describeError(groupID, "share", found, isShare); code != 0 {
		d.ErrorCode, d.ErrorMessage = code, msg
		if code == kerr.GroupIDNotFound.Code {
			d.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
		}
	}
	return d
}

// DescribeShareGroupOffsets answers one group of DescribeShareGroupOffsets:
// each partition's SPSO from the persister's summary, and (v1) its lag,
// the records from the SPSO to the high watermark not yet delivered to
// completion. Topics nil: every initialized share-partition.
func (c *Coordinator) DescribeShareGroupOffsets(ctx context.Context, version int16, rg kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	out.GroupID = rg.GroupID
	out.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
	var init partSet
	isShare := false
	found := c.onGroup(ctx, rg.GroupID, false, func(g *group) {
		if g.sg != nil && g.state != stateDead {
			isShare = true
			init = g.sg.initialized.clone()
		}
	})
	if !found || !isShare {
		switch {
		case c.isClosed():
			out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case found:
			msg := "Group " + rg.GroupID + " is not a share group."
			out.ErrorCode, out.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		}
		// A group we do not have has no share state: nothing to list, no
		// error (as Kafka 4.3 answers).
		return out
	}
	type req struct {
		name  string
		parts []int32
	}
	var reqs []req
	if rg.Topics == nil {
		for _, t := range init.byTopic() {
			if tt := c.store.TopicByID(t.id); tt != nil {
				reqs = append(reqs, req{tt.Name, t.partitions})
			}
		}
	} else {
		for _, t := range rg.Topics {
			reqs = append(reqs, req{t.Topic, t.Partitions})
		}
	}
	for _, r := range reqs {
		t := c.store.Topic(r.name)
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = r.name
		if t != nil {
			rt.TopicID = t.ID
		}
		for _, p := range r.parts {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
			if t == nil || p < 0 || int(p) >= len(t.Partitions) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			s, ok, err := c.persister.ReadSummary(sharestate.Key{GroupID: rg.GroupID, TopicID: t.ID, Partition: p})
			switch {
			case err != nil:
				rp.ErrorCode = persistErrorCode(err)
			case ok && s.StartOffset >= 0:
				rp.StartOffset, rp.LeaderEpoch = s.StartOffset, s.LeaderEpoch
				if version >= 1 {
					hw := t.Partitions[p].Offsets().HighWatermark
					complete := int64(max(s.DeliveryCompleteCount, 0))
					rp.Lag = max(hw-s.StartOffset-complete, 0)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

var unknownPartitionMsg = "This server does not host this topic-partition."

// persistErrorCode is the Kafka code of a persister failure.
func persistErrorCode(err error) int16 {
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// AlterShareGroupOffsets sets the SPSO of share-partitions of an empty
// share group (created if it does not exist, as Kafka's), initializing
// their state at the given offsets.
func (c *Coordinator) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	fail := func(code int16, msg string) *kmsg.AlterShareGroupOffsetsResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if strings.TrimSpace(req.GroupID) == "" {
		return fail(kerr.InvalidGroupID.Code, "")
	}
	var code int16
	var msg string
	if !c.onGroup(ctx, req.GroupID, true, func(g *group) { code, msg = g.alterShareOffsets(req, resp) }) {
		return fail(kerr.CoordinatorNotAvailable.Code, "")
	}
	if code != 0 {
		resp.Topics = nil
		return fail(code, msg)
	}
	if c.share != nil {
		c.share.Forget(req.GroupID)
	}
	return resp
}

func (g *group) alterShareOffsets(req *kmsg.AlterShareGroupOffsetsRequest, resp *kmsg.AlterShareGroupOffsetsResponse) (int16, string) {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code, ""
	}
	if g.sg == nil {
		if g.cg != nil || g.stg != nil || len(g.members) > 0 || g.protocolType != "" || len(g.offsets) > 0 {
			return kerr.GroupIDNotFound.Code, "Group " + g.id + " is not a share group."
		}
		g.sg = newShareGroup()
	}
	if len(g.sg.members) > 0 {
		return kerr.NonEmptyGroup.Code, "The group is not empty."
	}
	snap := g.sg.snapshot()
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		t := g.c.store.Topic(rt.Topic)
		if t != nil {
			ot.TopicID = t.ID
		}
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			op.Partition = rp.Partition
			switch {
			case t == nil || t.Internal || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
				op.ErrorCode, op.ErrorMessage = kerr.UnknownTopicOrPartition.Code, &unknownPartitionMsg
			case rp.StartOffset < -1:
				op.ErrorCode = kerr.InvalidRequest.Code
			default:
				k := sharestate.Key{GroupID: g.id, TopicID: t.ID, Partition: rp.Partition}
				epoch := int32(0)
				if s, ok, err := g.c.persister.ReadSummary(k); err == nil && ok {
					epoch = s.StateEpoch + 1
				}
				start := rp.StartOffset
				if start == -1 {
					start = sharefetch.ResetOffset(t.Partitions[rp.Partition], g.c.GroupConfigString(g.id, ShareAutoOffsetResetConfig, "latest"), g.c.clock.Now())
				}
				if err := g.c.persister.Initialize(k, epoch, start); err != nil {
					op.ErrorCode = persistErrorCode(err)
				} else {
					g.sg.initialized[topicIDPartition{t.ID, rp.Partition}] = struct{}{}
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if err := g.writeShare(g.shareRecords()); err != nil {
		g.sg = snap
		return storeErrorCode(err), ""
	}
	return 0, ""
}

// DeleteShareGroupOffsets deletes the share state of topics of an empty
// share group.
func (c *Coordinator) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	var code int16
	var msg string
	found := c.onGroup(ctx, req.GroupID, false, func(g *group) { code, msg = g.deleteShareOffsets(req, resp) })
	if !found {
		code, msg = kerr.GroupIDNotFound.Code, "Group "+req.GroupID+" not found."
		if c.isClosed() {
			code, msg = kerr.CoordinatorNotAvailable.Code, ""
		}
	}
	if code != 0 {
		resp.ErrorCode, resp.Topics = code, nil
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if c.share != nil {
		c.share.Forget(req.GroupID)
	}
	return resp
}

func (g *group) deleteShareOffsets(req *kmsg.DeleteShareGroupOffsetsRequest, resp *kmsg.DeleteShareGroupOffsetsResponse) (int16, string) {
	if g.sg == nil || g.state == stateDead {
		return kerr.GroupIDNotFound.Code, "Group " + g.id + " is not a share group."
	}
	if len(g.sg.members) > 0 {
		return kerr.NonEmptyGroup.Code, "The group is not empty."
	}
	snap := g.sg.snapshot()
	for _, rt := range req.Topics {
		ot := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		ot.Topic = rt.Topic
		t := g.c.store.Topic(rt.Topic)
		if t == nil {
			ot.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, ot)
			continue
		}
		ot.TopicID = t.ID
		for tp := range g.sg.initialized {
			if tp.id != t.ID {
				continue
			}
			if err := g.c.persister.Delete(sharestate.Key{GroupID: g.id, TopicID: t.ID, Partition: tp.partition}); err != nil {
				ot.ErrorCode = persistErrorCode(err)
				continue
			}
			delete(g.sg.initialized, tp)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	if err := g.writeShare(g.shareRecords()); err != nil {
		g.sg = snap
		return storeErrorCode(err), ""
	}
	return 0, ""
}

// deleteShareGroup is DeleteGroups for a share group: it must be empty;
// its share state goes, then its records.
func (g *group) deleteShareGroup() int16 {
	if len(g.sg.members) > 0 {
		return kerr.NonEmptyGroup.Code
	}
	parts := g.sg.initialized.sorted()
	for _, tp := range parts {
		// A deleted topic's share state is not the group's to delete
		// (Kafka builds the delete request from the topics its
		// metadata image still has): the partition is just dropped.
		if t := g.c.store.TopicByID(tp.id); t == nil || int(tp.partition) >= len(t.Partitions) {
			delete(g.sg.initialized, tp)
			continue
		}
		if err := g.c.persister.Delete(sharestate.Key{GroupID: g.id, TopicID: tp.id, Partition: tp.partition}); err != nil {
			return persistErrorCode(err)
		}
		delete(g.sg.initialized, tp)
	}
	recs := g.shareTombstones()
	for tp := range g.offsets {
		recs = append(recs, g.offsetRecord(tp, nil))
	}
	if err := g.append(recs); err != nil {
		return appendErrorCode(err)
	}
	g.offsets = map[topicPartition]offsetEntry{}
	if g.c.share != nil {
		g.c.share.Forget(g.id)
	}
	g.log.Info().Msg("share group deleted")
	g.setState(stateDead)
	return 0
}
