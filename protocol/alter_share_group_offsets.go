package protocol

// AlterShareGroupOffsets: v0
//
// Behavior: sets the start offset of share-partitions of an empty share
// group (the group is created if it does not exist), initializing their
// share state there (in-flight state dropped, state epoch moved);
// NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND for a group of
// another type, UNKNOWN_TOPIC_OR_PARTITION per partition.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.AlterShareGroupOffsets.Int16(), 0, 0, handleAlterShareGroupOffsets) }

func handleAlterShareGroupOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	return s.groups.AlterShareGroupOffsets(r.Ctx, req), nil
}
