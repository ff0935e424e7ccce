package protocol

// DescribeProducers: v0
//
// Behavior (Kafka's KafkaApis.handleDescribeProducersRequest and
// ReplicaManager.activeProducerState):
//   - Each named partition lists the producers its producer state knows
//     (partition/producer_state.go): producer id and epoch, last sequence,
//     last batch timestamp, coordinator epoch of the last marker (-1 if
//     none), and the first offset of the open transaction (-1 if none).
//   - An unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION; with
//     the data dir offline, KAFKA_STORAGE_ERROR.
//   - Partitions are answered in request order, grouped by topic as asked.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeProducers.Int16(), 0, 0, handleDescribeProducers) }

func handleDescribeProducers(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		topic := s.store.Topic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			rp.ActiveProducers = []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
			if rp.ErrorCode = s.topicAuthCode(r, authz.OpRead, t.Topic); rp.ErrorCode != 0 {
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if topic == nil || p < 0 || int(p) >= len(topic.Partitions) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			log := topic.Partitions[p]
			if err := s.store.Offline(); err != nil {
				rp.ErrorCode = s.errorCode(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			for _, pi := range log.Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID = pi.ProducerID
				ap.ProducerEpoch = int32(pi.ProducerEpoch)
				ap.LastSequence = pi.LastSequence
				ap.LastTimestamp = pi.LastTimestamp
				ap.CoordinatorEpoch = pi.CoordinatorEpoch
				ap.CurrentTxnStartOffset = pi.CurrentTxnStartOffset
				rp.ActiveProducers = append(rp.ActiveProducers, ap)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
