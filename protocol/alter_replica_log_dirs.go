package protocol

// AlterReplicaLogDirs: v0-2 (Kafka 4 serves v1+: see api_versions.go)
//
// Behavior (Kafka's KafkaApis.handleAlterReplicaLogDirsRequest and
// ReplicaManager.alterReplicaLogDirs, for a broker with one log dir):
//   - ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every
//     partition, each dir's topics answered as the request lists them
//     (AlterReplicaLogDirsRequest.getErrorResponse).
//   - Otherwise one result per partition, a partition named under several
//     dirs taking the last (Kafka reads the request into a map), checked
//     in Kafka's order: INVALID_TOPIC_EXCEPTION when the name of the
//     partition's future dir would pass 255 chars (KAFKA-4893);
//     LOG_DIR_NOT_FOUND when the dir is not the data dir, which must be
//     named as DescribeLogDirs names it (Kafka compares absolute paths as
//     strings); KAFKA_STORAGE_ERROR when the data dir is offline;
//     UNKNOWN_TOPIC_OR_PARTITION when the partition does not exist; else
//     NONE: the replica is already in that dir, so nothing moves, as
//     Partition.maybeCreateFutureReplica skips the move.
//   - Topics are sorted by name and partitions by index (Kafka's order
//     comes from a hash map, which clients do not rely on).
//
// Version notes:
//   - v1: no schema change (throttle)
//   - v2: flexible

import (
	"sort"
	"strconv"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.AlterReplicaLogDirs.Int16(), 0, 2, handleAlterReplicaLogDirs) }

// maxLogDirName is the longest name a file system takes for a directory:
// Kafka refuses to move a partition whose future dir's name
// (UnifiedLog.logFutureDirName: topic-partition.<32 hex digits>-future)
// would be longer, rather than fail to create it (KAFKA-4893).
const maxLogDirName = 255

func handleAlterReplicaLogDirs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	if code := s.clusterAuthCode(r, authz.OpAlter); code != 0 {
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp, nil
	}

	dest := make(map[partition.TopicPartition]string)
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				dest[partition.TopicPartition{Topic: t.Topic, Partition: p}] = d.Dir
			}
		}
	}
	dataDir := s.logDirPath()
	byTopic := make(map[string][]kmsg.AlterReplicaLogDirsResponseTopicPartition)
	for tp, dir := range dest {
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.ErrorCode = s.alterReplicaLogDir(tp, dir, dataDir)
		byTopic[tp.Topic] = append(byTopic[tp.Topic], rp)
	}
	names := make([]string, 0, len(byTopic))
	for n := range byTopic {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
		rt.Topic, rt.Partitions = n, byTopic[n]
		sort.Slice(rt.Partitions, func(i, j int) bool { return rt.Partitions[i].Partition < rt.Partitions[j].Partition })
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// alterReplicaLogDir is the error code of moving tp's replica to dir on a
// broker whose one log dir is dataDir.
func (s *Server) alterReplicaLogDir(tp partition.TopicPartition, dir, dataDir string) int16 {
	// topic-partition, a dot, 32 hex digits and "-future", counted as
	// Java's String.length does: in UTF-16 code units.
	if len(utf16.Encode([]rune(tp.Topic)))+1+len(strconv.Itoa(int(tp.Partition)))+1+32+len("-future") > maxLogDirName {
		return kerr.InvalidTopicException.Code
	}
	if dir != dataDir {
		return kerr.LogDirNotFound.Code
	}
	if s.store.Offline() != nil {
		return kerr.KafkaStorageError.Code
	}
	t := s.store.Topic(tp.Topic)
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition.Code
	}
	if t.Partitions[tp.Partition].Deleted() {
		// Looked up just before DeleteTopic: gone, as Kafka would answer.
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}
