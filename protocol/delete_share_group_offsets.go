package protocol

// DeleteShareGroupOffsets: v0
//
// Behavior: deletes the share state of the named topics' share-partitions
// of an empty share group (the next assignment initializes them again at
// share.auto.offset.reset); GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, and
// UNKNOWN_TOPIC_OR_PARTITION per topic.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.DeleteShareGroupOffsets.Int16(), 0, 0, handleDeleteShareGroupOffsets) }

func handleDeleteShareGroupOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	return s.groups.DeleteShareGroupOffsets(r.Ctx, req), nil
}
