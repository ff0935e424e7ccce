package coordinator

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InternalTopic is an internal topic of a streams topology the caller
// must create (Kafka's KafkaApis creates them after the heartbeat).
type InternalTopic = internalTopic

// StreamsGroupHeartbeat serves a StreamsGroupHeartbeat (KIP-1071): the
// request is validated as Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid,
// then handled on the group's goroutine. The internal topics returned are
// missing and must be created by the caller; the answer meanwhile carries
// MISSING_INTERNAL_TOPICS.
func (c *Coordinator) StreamsGroupHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest, client ClientInfo) (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic) {
	fail := func(e *heartbeatError) (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic) {
		r := &kmsg.StreamsGroupHeartbeatResponse{Version: req.Version, ErrorCode: e.code, AcceptableRecoveryLag: -1,
			Status: []kmsg.StreamsGroupHeartbeatResponseStatus{}}
		if e.msg != "" {
			msg := e.msg
			r.ErrorMessage = &msg
		}
		return r, nil
	}
	if c.cfg.StreamsDisabled {
		return fail(hbErr(kerr.UnsupportedVersion, ""))
	}
	if e := validateStreamsHeartbeat(req); e != nil {
		return fail(e)
	}
	var res streamsHeartbeatResult
	var e *heartbeatError
	if !c.onGroup(ctx, req.Group, req.MemberEpoch == 0, func(g *group) {
		res, e = g.streamsHeartbeat(streamsHeartbeatRequest{req: req, client: client})
	}) {
		if c.isClosed() {
			return fail(hbErr(kerr.CoordinatorNotAvailable, ""))
		}
		return fail(hbErr(kerr.GroupIDNotFound, "Streams group "+req.Group+" not found."))
	}
	if e != nil {
		return fail(e)
	}
	return res.resp, res.toCreate
}

func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) *heartbeatError {
	invalid := func(msg string) *heartbeatError { return hbErr(kerr.InvalidRequest, msg) }
	empty := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch {
	case empty(req.MemberID):
		return invalid("MemberId can't be empty.")
	case empty(req.Group):
		return hbErr(kerr.InvalidGroupID, "GroupId can't be empty.")
	case req.InstanceID != nil && empty(*req.InstanceID):
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && empty(*req.RackID):
		return invalid("RackId can't be empty.")
	}
	if req.Topology != nil {
		for _, s := range req.Topology.Subtopologies {
			if len(s.SourceTopicRegex) > 0 {
				return invalid("Regular expressions for source topics are not supported yet.")
			}
		}
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if len(req.ActiveTasks) > 0 {
			return invalid("ActiveTasks must be empty when (re-)joining.")
		}
		if len(req.StandbyTasks) > 0 {
			return invalid("StandbyTasks must be empty when (re-)joining.")
		}
		if len(req.WarmupTasks) > 0 {
			return invalid("WarmupTasks must be empty when (re-)joining.")
		}
		if req.Topology == nil {
			return invalid("Topology must be non-null when (re-)joining.")
		}
		if msg := validateTopology(req.Topology); msg != "" {
			return hbErr(kerr.StreamsInvalidTopology, msg)
		}
	case req.MemberEpoch == leaveStaticEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveStaticEpoch:
		return invalid(fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch))
	}
	if req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
			return invalid("If one task-type is non-null, all must be non-null.")
		}
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return invalid("Topology can only be provided when (re-)joining.")
	}
	return nil
}

// StreamsGroupDescribe describes one group for StreamsGroupDescribe:
// GROUP_ID_NOT_FOUND for a group we do not have or one of another type.
func (c *Coordinator) StreamsGroupDescribe(ctx context.Context, groupID string) kmsg.StreamsGroupDescribeResponseGroup {
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.Group, d.AuthorizedOperations = groupID, -2147483648
	if c.cfg.StreamsDisabled {
		d.ErrorCode = kerr.UnsupportedVersion.Code
		return d
	}
	found := c.onGroup(ctx, groupID, false, func(g *group) {
		if g.stg == nil || g.state == stateDead {
			return
		}
		d = g.describeStreams()
	})
	if code, msg := c.describeError(groupID, "streams", found, d.State != ""); code != 0 {
		d.ErrorCode, d.ErrorMessage = code, msg
	}
	return d
}

func (g *group) describeStreams() kmsg.StreamsGroupDescribeResponseGroup {
	sg := g.stg
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.Group = g.id
	d.State = sg.state().String()
	d.Epoch = sg.epoch
	d.AssignmentEpoch = sg.assignmentEpoch
	d.AuthorizedOperations = -2147483648
	if t := sg.topology; t != nil {
		topo := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		topo.Epoch = t.epoch
		for _, s := range t.subs {
			ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
			ds.SubtopologyID = s.id
			ds.SourceTopics = nonNilStrs(s.sources)
			ds.RepartitionSinkTopics = nonNilStrs(s.repartitionSinks)
			ds.StateChangelogTopics = describeTopicInfos(s.changelogs, sg.configured, s.id)
			ds.RepartitionSourceTopics = describeTopicInfos(s.repartitionSources, sg.configured, "")
			topo.Subtopologies = append(topo.Subtopologies, ds)
		}
		if topo.Subtopologies == nil {
			topo.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
		}
		d.Topology = &topo
	}
	d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, id := range sg.memberIDs() {
		m := sg.members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.MemberEpoch = m.epoch
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.TopologyEpoch = m.topologyEpoch
		dm.ProcessID = m.processID
		if m.endpoint != nil {
			ep := kmsg.NewStreamsGroupDescribeResponseGroupMemberUserEndpoint()
			ep.Host, ep.Port = m.endpoint.host, m.endpoint.port
			dm.UserEndpoint = &ep
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, t := range m.clientTags {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: t.key, Value: t.value})
		}
		dm.TaskOffsets = []kmsg.TaskOffset{}
		dm.TaskEndOffsets = []kmsg.TaskOffset{}
		dm.Assignment = streamsAssignment(m.assigned)
		target, ok := sg.target[id]
		if !ok {
			target = emptyTuple()
		}
		dm.TargetAssignment = streamsAssignment(target)
		dm.IsClassic = false
		d.Members = append(d.Members, dm)
	}
	return d
}

func nonNilStrs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// describeTopicInfos describes internal topics with the partition counts
// of the configured topology, as Kafka (a changelog has one per task of
// its subtopology sub; a repartition topic the count it was created with).
func describeTopicInfos(ts []stTopicInfo, ct *configuredTopology, sub string) []kmsg.TopicInfo {
	out := []kmsg.TopicInfo{}
	for _, t := range ts {
		ti := kmsg.NewTopicInfo()
		ti.Topic, ti.NumPartitions, ti.ReplicationFactor = t.name, t.partitions, t.replicationFactor
		if ct.ready() {
			if sub != "" {
				ti.NumPartitions = ct.tasks[sub]
			} else if n, ok := ct.internal[t.name]; ok {
				ti.NumPartitions = n
			}
		}
		ti.Configs = []kmsg.TopicInfoConfig{}
		for _, c := range t.configs {
			ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: c.key, Value: c.value})
		}
		out = append(out, ti)
	}
	return out
}

func streamsAssignment(t tasksTuple) kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = taskIDsOf(t.active), taskIDsOf(t.standby), taskIDsOf(t.warmup)
	return a
}
