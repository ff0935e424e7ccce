package protocol

// ListOffsets: v0-11 (Kafka 4 serves v1+: see api_versions.go)
//
// Behavior (Kafka's KafkaApis.handleListOffsetRequest, Partition and
// UnifiedLog.fetchOffsetByTimestamp):
//   - -1 (latest): the high watermark, or the LSO for read_committed
//     (v2+); the log end offset for a follower or debug replica id.
//   - -2 (earliest) and -4 (earliest local, v8+): the log start offset.
//   - -3 (max timestamp, v7+): the record with the largest timestamp.
//   - -5 (latest tiered, v9+) and -6 (earliest pending upload, v11+): no
//     tiered storage, so offset -1 with leader epoch -1, as Kafka answers
//     for a topic without remote storage.
//   - A special timestamp below its version (-3 before v7, -4 before v8,
//     -5 before v9, -6 before v11) and any other negative timestamp but
//     -1 and -2 is UNSUPPORTED_VERSION for the partition, as Kafka 4.3.1
//     answers.
//   - other timestamps: the first record with timestamp >= target. A
//     result at or past the last fetchable offset (HW, or LSO) is not
//     returned: offset and timestamp -1 with no error.
//   - A partition asked for twice is INVALID_REQUEST; a current leader
//     epoch (v4+) older than ours FENCED_LEADER_EPOCH, newer
//     UNKNOWN_LEADER_EPOCH.
//   - v0 (old-style offsets, MaxNumOffsets): Kafka's legacy answer lists
//     segment base offsets; we answer as for a log of one segment: latest
//     gives [HW, log start] (log start only when different), earliest
//     [log start], and a timestamp the same as latest if it is not before
//     now, else [log start]; trimmed to MaxNumOffsets. Negative
//     timestamps other than -1, -2 are UNSUPPORTED_VERSION at v0.
//
// Version notes:
//   - v1: single Timestamp/Offset instead of old-style offsets
//   - v2: IsolationLevel, throttle
//   - v3: no schema change
//   - v4: CurrentLeaderEpoch, LeaderEpoch in the response
//   - v5: no schema change (OFFSET_NOT_AVAILABLE)
//   - v6: flexible
//   - v7: -3 max timestamp (KIP-734)
//   - v8: -4 earliest local (KIP-405)
//   - v9: -5 latest tiered (KIP-1005)
//   - v10: TimeoutMillis (KIP-1075), irrelevant without remote storage
//   - v11: -6 earliest pending upload (KIP-1023)

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.ListOffsets.Int16(), 0, 11, handleListOffsets) }

// Special ListOffsets timestamps.
const (
	listLatest         = -1
	listEarliest       = -2
	listMaxTimestamp   = -3
	listEarliestLocal  = -4
	listLatestTiered   = -5
	listPendingUpload  = -6
	consumerReplicaID  = -1
	isolationCommitted = 1
)

func handleListOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)

	type tp struct {
		topic string
		part  int32
	}
	count := make(map[tp]int)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			count[tp{t.Topic, p.Partition}]++
		}
	}

	for _, rt := range req.Topics {
		topic := s.store.Topic(rt.Topic)
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset = -1, -1
			switch {
			case !s.authorizeTopic(r, authz.OpDescribe, rt.Topic):
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case r.Version > 0 && count[tp{rt.Topic, rp.Partition}] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case topic == nil || rp.Partition < 0 || int(rp.Partition) >= len(topic.Partitions):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case topic.Partitions[rp.Partition].Offline() != nil:
				// The log dir is offline (Kafka: the partition is
				// HostedPartition.Offline).
				sp.ErrorCode = kerr.KafkaStorageError.Code
			case r.Version == 0:
				s.listOffsetsV0(topic.Partitions[rp.Partition], &rp, &sp)
			case rp.Timestamp < listEarliest && r.Version < listTimestampMinVersion(rp.Timestamp):
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				s.listOffsets(req, topic.Partitions[rp.Partition], &rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) listOffsets(req *kmsg.ListOffsetsRequest, l *partition.Log, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
	epoch := l.LeaderEpoch()
	if rp.CurrentLeaderEpoch != -1 && req.Version >= 4 {
		switch {
		case rp.CurrentLeaderEpoch < epoch:
			sp.ErrorCode = kerr.FencedLeaderEpoch.Code
			return
		case rp.CurrentLeaderEpoch > epoch:
			sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			return
		}
	}
	o := l.Offsets()
	lastFetchable := o.LogEndOffset
	if req.ReplicaID == consumerReplicaID {
		lastFetchable = o.HighWatermark
		if req.IsolationLevel == isolationCommitted {
			lastFetchable = o.LastStableOffset
		}
	}
	found := func(ts, off int64, ep int32) {
		sp.Timestamp, sp.Offset, sp.LeaderEpoch = ts, off, ep
	}
	switch rp.Timestamp {
	case listLatest:
		found(-1, lastFetchable, epoch)
	case listEarliest, listEarliestLocal:
		found(-1, o.LogStartOffset, epoch)
	case listLatestTiered, listPendingUpload:
		found(-1, -1, -1)
	case listMaxTimestamp:
		ts, off, ok, err := l.MaxTimestamp()
		if err != nil {
			sp.ErrorCode = s.errorCode(err)
			return
		}
		if ok && off < lastFetchable {
			found(ts, off, epoch)
		}
	default:
		off, ts, ok, err := l.OffsetForTimestamp(rp.Timestamp)
		if err != nil {
			sp.ErrorCode = s.errorCode(err)
			return
		}
		if ok && off < lastFetchable {
			found(ts, off, epoch)
		}
	}
}

// listTimestampMinVersion is the first version that knows the special
// timestamp ts (below -2); math.MaxInt16 for one no version knows.
func listTimestampMinVersion(ts int64) int16 {
	switch ts {
	case listMaxTimestamp:
		return 7
	case listEarliestLocal:
		return 8
	case listLatestTiered:
		return 9
	case listPendingUpload:
		return 11
	}
	return math.MaxInt16
}

// listOffsetsV0 answers the legacy old-style offsets for a log of one
// segment (see the file comment).
func (s *Server) listOffsetsV0(l *partition.Log, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
	if rp.Timestamp < listEarliest {
		sp.ErrorCode = kerr.UnsupportedVersion.Code
		return
	}
	o := l.Offsets()
	var offs []int64
	latest := func() {
		offs = append(offs, o.HighWatermark)
		if o.LogStartOffset != o.HighWatermark {
			offs = append(offs, o.LogStartOffset)
		}
	}
	switch {
	case rp.Timestamp == listLatest:
		latest()
	case rp.Timestamp == listEarliest:
		offs = append(offs, o.LogStartOffset)
	case rp.Timestamp >= s.clock.Now().UnixMilli():
		latest()
	default:
		offs = append(offs, o.LogStartOffset)
	}
	if rp.MaxNumOffsets >= 0 && int(rp.MaxNumOffsets) < len(offs) {
		offs = offs[:rp.MaxNumOffsets]
	}
	sp.OldStyleOffsets = offs
}
