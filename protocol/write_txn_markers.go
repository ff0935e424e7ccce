package protocol

// WriteTxnMarkers: v0-2 (Kafka 4 advertises v1-2)
//
// Behavior (Kafka's KafkaApis.handleWriteTxnMarkersRequest,
// ReplicaManager.appendRecords with AppendOrigin.COORDINATOR and
// ProducerAppendInfo.appendEndTxnMarker): what a transaction coordinator
// sends a partition leader, and what Admin.abortTransaction
// (kafka-transactions.sh abort, KIP-664) sends to end a hanging
// transaction. For each marker, a COMMIT or ABORT control batch of the
// marker's producer id, epoch and coordinator epoch is appended to each
// listed partition (internal topics included), through the path the
// transaction coordinator's own markers take
// (coordinator.TxnCoordinator.WriteTxnMarker): the producer's open
// transaction there completes, the LSO moves past it, an abort enters the
// .txnindex, and on __consumer_offsets the producer's transactional
// offset commits are applied or dropped. A marker for a producer with no
// open transaction is written all the same. The coordinator's own
// metadata is not touched, as in Kafka.
//   - Authorization: ALTER or CLUSTER_ACTION on the cluster, else every
//     partition CLUSTER_AUTHORIZATION_FAILED.
//   - A marker of producer id -1 or producer epoch -1 naming an existing
//     partition (not of __consumer_offsets) fails every partition of the
//     request with UNKNOWN_SERVER_ERROR (Kafka cannot build it); on a
//     __consumer_offsets partition only that partition fails so.
//   - Per partition: UNKNOWN_TOPIC_OR_PARTITION for a topic or partition
//     that does not exist, or with the data dir offline (Kafka's
//     onlinePartition check); INVALID_PRODUCER_EPOCH for an epoch below the
//     producer's (v2 at TransactionVersion 2+: also the producer's own
//     epoch while its transaction is open, KIP-1228);
//     TRANSACTION_COORDINATOR_FENCED for a coordinator epoch below the
//     last marker's; UNKNOWN_SERVER_ERROR for TransactionVersion -1
//     (Kafka's TV_UNKNOWN, refused by appendEndTxnMarker); storage errors
//     as Produce answers them. min.insync.replicas never refuses: Kafka
//     caps it at the replica count, one here.
//   - The answer has one entry per producer id (markers of one id merge,
//     the later marker's result winning for a partition named twice) and
//     each partition once, grouped by topic, in request order. A request
//     failed whole (the two cases above) answers only the last marker of
//     each producer id, its partitions with the request's one code: Kafka
//     4.3.1 builds that answer with getErrorResponse, whose map by
//     producer id each marker replaces (asked directly: markers
//     (7: mt-0), (7: mt-1,2), (-1: mt-0) are answered 7: mt-1,2 and
//     -1: mt-0, all UNKNOWN_SERVER_ERROR). Kafka orders producer ids and
//     partitions as its hash maps iterate; we keep request order.
//
// Deliberate differences: a partition named twice in one marker is
// written once and answered; Kafka 4.3.1 writes it once and never
// answers the request (its count of pending partitions keeps the
// duplicate). A request failed by a marker of producer id or epoch -1
// writes nothing; Kafka has already written the markers before it.
//
// Version notes:
//   - v1: flexible
//   - v2: TransactionVersion per marker (KIP-1228); v0-1 mean 0
//   Kafka 4.0 dropped v0 (KIP-896); 3.9 serves it, so do we when
//   kcompatd.kafka.version names 3.x (api_versions.go).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.WriteTxnMarkers.Int16(), 0, 2, handleWriteTxnMarkers) }

// txnVersionUnknown is Kafka's TransactionVersion.TV_UNKNOWN.
const txnVersionUnknown = -1

func handleWriteTxnMarkers(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	out := newMarkerResults(resp)
	// Refused, or with a marker Kafka cannot build, every partition of
	// the request shares one code and nothing is written.
	whole := int16(0)
	switch {
	case !s.authorizeCluster(r, authz.OpAlter) && !s.authorizeCluster(r, authz.OpClusterAction):
		whole = kerr.ClusterAuthorizationFailed.Code
	case s.unbuildableMarker(req):
		whole = kerr.UnknownServerError.Code
	}
	// Kafka answers a failed request from the request alone
	// (WriteTxnMarkersRequest.getErrorResponse): a map by producer id
	// that each marker replaces, so only the last marker of an id is
	// answered.
	last := map[int64]int{}
	if whole != 0 {
		for i, m := range req.Markers {
			last[m.ProducerID] = i
		}
	}
	for i, m := range req.Markers {
		if whole != 0 && last[m.ProducerID] != i {
			continue
		}
		tv := int16(0)
		if r.Version >= 2 {
			tv = int16(m.TransactionVersion)
		}
		written := map[coordinator.TopicPartition]bool{}
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				tp := coordinator.TopicPartition{Topic: t.Topic, Partition: p}
				if whole != 0 {
					out.set(m.ProducerID, tp, whole)
					continue
				}
				if written[tp] {
					continue
				}
				written[tp] = true
				out.set(m.ProducerID, tp, s.writeTxnMarker(r, tp, m, tv))
			}
		}
	}
	return resp, nil
}

// unbuildableMarker reports whether a marker of req names a partition
// of a data topic (Kafka builds those markers itself; __consumer_offsets'
// go to the group coordinator) with producer id -1 or producer epoch -1:
// Kafka's MemoryRecordsBuilder throws on them, which fails the whole
// request with UNKNOWN_SERVER_ERROR.
func (s *Server) unbuildableMarker(req *kmsg.WriteTxnMarkersRequest) bool {
	if s.store.Offline() != nil {
		return false // no partition is online: none is built
	}
	for _, m := range req.Markers {
		if m.ProducerID != -1 && m.ProducerEpoch != -1 {
			continue
		}
		for _, t := range m.Topics {
			if t.Topic == coordinator.OffsetsTopic {
				continue
			}
			for _, p := range t.Partitions {
				if _, err := s.store.Log(t.Topic, p); err == nil {
					return true
				}
			}
		}
	}
	return false
}

// writeTxnMarker writes marker m to tp and returns the partition's code.
func (s *Server) writeTxnMarker(r *Request, tp coordinator.TopicPartition, m kmsg.WriteTxnMarkersRequestMarker, tv int16) int16 {
	// Kafka asks for an online partition first: with the log dir
	// offline, the partition is unknown (a write that fails on the way
	// is a storage error).
	if _, err := s.store.Log(tp.Topic, tp.Partition); err != nil || s.store.Offline() != nil {
		return kerr.UnknownTopicOrPartition.Code
	}
	// TV_UNKNOWN, and on __consumer_offsets (the others failed the whole
	// request) producer id or epoch -1: Kafka's builders throw.
	if tv == txnVersionUnknown || m.ProducerID == -1 || m.ProducerEpoch == -1 {
		return kerr.UnknownServerError.Code
	}
	err := s.txns.WriteTxnMarker(tp, partition.TxnMarker{
		ProducerID:         m.ProducerID,
		ProducerEpoch:      m.ProducerEpoch,
		CoordinatorEpoch:   m.CoordinatorEpoch,
		Commit:             m.Committed,
		TransactionVersion: tv,
	})
	if errors.Is(err, partition.ErrUnknownTopic) {
		return kerr.UnknownTopicOrPartition.Code // deleted meanwhile
	}
	code, _ := s.errorAnswer(r, err, tp.Topic, tp.Partition)
	return code
}

// markerResults builds the response: one entry per producer id, its
// partitions grouped by topic, each partition once, in first-seen order.
type markerResults struct {
	resp   *kmsg.WriteTxnMarkersResponse
	byPID  map[int64]int
	topics map[markerTopicKey]int
	parts  map[markerPartKey]int
}

type markerTopicKey struct {
	pid   int64
	topic string
}

type markerPartKey struct {
	pid int64
	tp  coordinator.TopicPartition
}

func newMarkerResults(resp *kmsg.WriteTxnMarkersResponse) *markerResults {
	return &markerResults{resp: resp, byPID: map[int64]int{}, topics: map[markerTopicKey]int{}, parts: map[markerPartKey]int{}}
}

// set records code for pid's tp, replacing an earlier one.
func (mr *markerResults) set(pid int64, tp coordinator.TopicPartition, code int16) {
	mi, ok := mr.byPID[pid]
	if !ok {
		m := kmsg.NewWriteTxnMarkersResponseMarker()
		m.ProducerID = pid
		mr.resp.Markers = append(mr.resp.Markers, m)
		mi = len(mr.resp.Markers) - 1
		mr.byPID[pid] = mi
	}
	marker := &mr.resp.Markers[mi]
	tk := markerTopicKey{pid, tp.Topic}
	ti, ok := mr.topics[tk]
	if !ok {
		t := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
		t.Topic = tp.Topic
		marker.Topics = append(marker.Topics, t)
		ti = len(marker.Topics) - 1
		mr.topics[tk] = ti
	}
	topic := &marker.Topics[ti]
	pk := markerPartKey{pid, tp}
	if pi, ok := mr.parts[pk]; ok {
		topic.Partitions[pi].ErrorCode = code
		return
	}
	p := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
	p.Partition, p.ErrorCode = tp.Partition, code
	topic.Partitions = append(topic.Partitions, p)
	mr.parts[pk] = len(topic.Partitions) - 1
}
