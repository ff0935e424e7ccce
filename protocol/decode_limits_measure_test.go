package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// bigRequests are legitimate large requests (what clients send for a
// consumer of 10,000 partitions or a Metadata of 20,000 topics), each at
// the highest version served.
func bigRequests() map[string]kmsg.Request {
	const topics, perTopic = 100, 100 // 10,000 partitions
	name := func(i int) string { return fmt.Sprintf("some-service.events-topic-%05d", i) }
	out := map[string]kmsg.Request{}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID = "a-consumer-group", 7, "consumer-1-0a1b2c3d-4e5f-6789-abcd-ef0123456789"
	for i := range topics {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = name(i)
		for p := range perTopic {
			tp := kmsg.NewOffsetCommitRequestTopicPartition()
			tp.Partition, tp.Offset, tp.LeaderEpoch = int32(p), 123456789, 5
			tp.Metadata = kmsg.StringPtr("")
			t.Partitions = append(t.Partitions, tp)
		}
		oc.Topics = append(oc.Topics, t)
	}
	out["OffsetCommit 10,000 partitions"] = oc

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	for i := range topics {
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = name(i)
		for p := range perTopic {
			tp := kmsg.NewListOffsetsRequestTopicPartition()
			tp.Partition, tp.Timestamp, tp.CurrentLeaderEpoch = int32(p), -1, 5
			t.Partitions = append(t.Partitions, tp)
		}
		lo.Topics = append(lo.Topics, t)
	}
	out["ListOffsets 10,000 partitions"] = lo

	md := kmsg.NewPtrMetadataRequest()
	for i := range 20000 {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name(i))
		md.Topics = append(md.Topics, t)
	}
	out["Metadata 20,000 topics"] = md

	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = -1, 500, 1, 50<<20
	for i := range topics {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = name(i)
		t.TopicID = [16]byte{byte(i), 1, 2, 3}
		for p := range perTopic {
			tp := kmsg.NewFetchRequestTopicPartition()
			tp.Partition, tp.FetchOffset, tp.CurrentLeaderEpoch, tp.PartitionMaxBytes = int32(p), 123456789, 5, 1<<20
			t.Partitions = append(t.Partitions, tp)
		}
		f.Topics = append(f.Topics, t)
	}
	out["Fetch 10,000 partitions"] = f

	of := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "a-consumer-group"
	for i := range topics {
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic = name(i)
		t.TopicID = [16]byte{byte(i), 1}
		for p := range perTopic {
			t.Partitions = append(t.Partitions, int32(p))
		}
		g.Topics = append(g.Topics, t)
	}
	of.Groups = []kmsg.OffsetFetchRequestGroup{g}
	for _, gt := range g.Topics { // v0-7: the one group's topics at the top
		of.Topics = append(of.Topics, kmsg.OffsetFetchRequestTopic{Topic: gt.Topic, Partitions: gt.Partitions})
	}
	of.Group = g.Group
	out["OffsetFetch 10,000 partitions"] = of

	dc := kmsg.NewPtrDescribeConfigsRequest()
	for i := range 10000 {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name(i)
		dc.Resources = append(dc.Resources, r)
	}
	out["DescribeConfigs 10,000 topics"] = dc
	return out
}

// TestBigLegitimateRequestsFit: each big request, at every version
// served, fits its frame limit with room to spare (a third more).
func TestBigLegitimateRequestsFit(t *testing.T) {
	for what, req := range bigRequests() {
		a := apis[req.Key()]
		for v := a.min; v <= a.max; v++ {
			req.SetVersion(v)
			n := len(req.AppendTo(nil))
			lim := frameLimit(req.Key(), v)
			t.Logf("%s v%d: %d bytes, limit %d", what, v, n, lim)
			if lim > 0 && n*3/2 > lim {
				t.Errorf("%s v%d: %d bytes, limit %d (not 1.5 times the request)", what, v, n, lim)
			}
		}
	}
}

// TestHostileFrameAtLimitBounded: a Fetch v18 frame just under its limit
// whose topic count is all the bytes left (kmsg allocates the topics
// before failing) stays within maxDecodedBytes.
func TestHostileFrameAtLimitBounded(t *testing.T) {
	lim := frameLimits()[kmsg.Fetch.Int16()][18]
	fetch := binary.BigEndian.AppendUint32(nil, 0)
	fetch = binary.BigEndian.AppendUint32(fetch, 1)
	fetch = binary.BigEndian.AppendUint32(fetch, 1<<20)
	fetch = append(fetch, 0)
	fetch = binary.BigEndian.AppendUint32(fetch, 0)
	fetch = binary.BigEndian.AppendUint32(fetch, 0xffffffff)
	fetch = binary.AppendUvarint(fetch, uint64((lim-64)/18)) // kmsg checks 18 bytes per topic at v13+
	fetch = append(fetch, make([]byte, lim-8-len(fetch))...)
	frame := requestFrame(1, 18, true, fetch)
	var err error
	got := allocated(func() { _, _, _, err = decodeRequest(apis, frame) })
	t.Logf("%d byte frame (limit %d): %d bytes allocated (%v)", len(frame), lim, got, err)
	if errors.Is(err, errDecodeBound) {
		t.Fatalf("refused under its limit: %v", err)
	}
	if got > maxDecodedBytes {
		t.Fatalf("allocated %d, bound %d", got, maxDecodedBytes)
	}
}
