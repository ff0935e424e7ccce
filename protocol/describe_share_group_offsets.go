package protocol

// DescribeShareGroupOffsets: v0-1
//
// Behavior: each share-partition's start offset (SPSO) and leader epoch
// from the share state persister's summary (-1 where there is no state),
// for the topics asked or, with Topics null, every share-partition the
// group initialized; GROUP_ID_NOT_FOUND for a group that is not a share
// group, UNKNOWN_TOPIC_OR_PARTITION per partition.
//
// Version notes: v1 adds Lag: the high watermark minus the SPSO minus the
// records above it whose delivery is complete (-1 without state).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(kmsg.DescribeShareGroupOffsets.Int16(), 0, 1, handleDescribeShareGroupOffsets) }

func handleDescribeShareGroupOffsets(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range req.Groups {
		resp.Groups = append(resp.Groups, s.groups.DescribeShareGroupOffsets(r.Ctx, r.Version, g))
	}
	return resp, nil
}
