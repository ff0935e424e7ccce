package protocol

// DescribeLogDirs: v0-5 (Kafka 4 serves v1+: see api_versions.go)
//
// Behavior (Kafka's KafkaApis.handleDescribeLogDirsRequest and
// ReplicaManager.describeLogDirs):
//   - One result: the data dir (log.dirs) as an absolute path.
//   - Topics null means every partition; otherwise the partitions named,
//     and names that do not exist are left out (no error), as Kafka does.
//     Topics whose requested partitions all are missing are left out too.
//   - Each partition's size is the bytes of its .log segments; the offset
//     lag is the high watermark minus the log end offset, floored at 0,
//     which is 0 on a single broker. Nothing is ever a future replica.
//   - v4: the total and usable bytes of the data dir's volume, from statfs
//     (-1 when the file system cannot tell).
//   - Topics are sorted by name and partitions by index (Kafka's order
//     comes from a hash map, which clients do not rely on).
//   - A dir taken offline by an I/O error answers KAFKA_STORAGE_ERROR
//     in its result, with no topics and sizes -1.
//
// Version notes:
//   - v1: no schema change (throttle)
//   - v2: flexible
//   - v3: top-level ErrorCode
//   - v4: TotalBytes, UsableBytes (KIP-827)
//   - v5: IsCordoned (KIP-1066): always false, kcompatd never cordons
//     its log dir (Kafka does only when an operator asks)

import (
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { register(kmsg.DescribeLogDirs.Int16(), 0, 5, handleDescribeLogDirs) }

func handleDescribeLogDirs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if resp.ErrorCode = s.clusterAuthCode(r, authz.OpDescribe); resp.ErrorCode != 0 {
		return resp, nil // below v3, no results is all Kafka can say
	}

	var wanted map[string]map[int32]bool // nil: everything
	if req.Topics != nil {
		wanted = make(map[string]map[int32]bool, len(req.Topics))
		for _, t := range req.Topics {
			ps := wanted[t.Topic]
			if ps == nil {
				ps = make(map[int32]bool, len(t.Partitions))
				wanted[t.Topic] = ps
			}
			for _, p := range t.Partitions {
				ps[p] = true
			}
		}
	}

	res := kmsg.NewDescribeLogDirsResponseDir()
	res.Dir = s.logDirPath()
	if s.store.Offline() != nil {
		// An I/O error took the dir offline: Kafka's describeLogDirs
		// answers KAFKA_STORAGE_ERROR for it, without topics or sizes.
		res.ErrorCode = kerr.KafkaStorageError.Code
		resp.Dirs = []kmsg.DescribeLogDirsResponseDir{res}
		return resp, nil
	}
	res.TotalBytes, res.UsableBytes = s.store.VolumeBytes()
	var topics []*partition.Topic
	if wanted == nil {
		topics = s.store.Topics()
	} else {
		for _, t := range s.store.Topics() {
			if wanted[t.Name] != nil {
				topics = append(topics, t)
			}
		}
	}
	for _, t := range topics {
		rt := kmsg.NewDescribeLogDirsResponseDirTopic()
		rt.Topic = t.Name
		for i, l := range t.Partitions {
			if wanted != nil && !wanted[t.Name][int32(i)] {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = int32(i)
			rp.Size = l.Size()
			o := l.Offsets()
			rp.OffsetLag = max(o.HighWatermark-o.LogEndOffset, 0)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			res.Topics = append(res.Topics, rt)
		}
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{res}
	return resp, nil
}

// logDirPath is the data dir as the log-dir APIs name it: Kafka's
// getAbsolutePath of its log.dirs entry, which DescribeLogDirs reports and
// AlterReplicaLogDirs compares, as a string, with the dir it is sent.
func (s *Server) logDirPath() string {
	dir, err := filepath.Abs(s.store.Dir())
	if err != nil {
		return s.store.Dir()
	}
	return dir
}
