package protocol

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzAdminHandlers decodes arbitrary request frames of the admin APIs of
// issue 7 (other than configs) and runs their handlers against a broker
// with a few topics. Requests that would change state are made
// validate-only so that runs stay bounded (CreatePartitions could ask for
// 65536 partitions), and ip names never reach a resolver.
//
// Invariants: no handler panics or fails; each response encodes and
// decodes again at the request's version.
func FuzzAdminHandlers(f *testing.F) {
	id := "fuzz"
	seed := func(req kmsg.Request, v int16) {
		req.SetVersion(v)
		f.Add(encodeRequest(req, 1, &id))
	}
	for v := int16(0); v <= 4; v++ {
		seed(offsetForLeaderEpochReq(v, "t", [2]int32{0, 0}, [2]int32{3, -4}), v)
		seed(describeLogDirsReq(v, map[string][]int32{"t": {0, 9}}), v)
	}
	for v := int16(0); v <= 3; v++ {
		seed(createPartitionsReq(v, true, cpTopic("t", 3, []int32{1}), cpTopic("t", 1)), v)
	}
	for v := int16(0); v <= 2; v++ {
		seed(electReq(v, 1, map[string][]int32{"el": {0, -1}}), v)
		seed(updateFeaturesReq(v, featureUpdate("group.version", 0, upgradeTypeSafeDowngrade)), v)
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.EndpointType = 2
		seed(dc, v)
	}
	for v := int16(0); v <= 1; v++ {
		seed(alterReassignReq(v, false, "t", map[int32][]int32{0: {1, 1}}, 0), v)
		alice := kmsg.StringPtr("alice")
		seed(alterQuotasReq(v, true, kmsg.AlterClientQuotasRequestEntry{
			Entity: quotaEntityOf(kmsg.StringPtr("user"), alice),
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 1.5)},
		}), v)
		seed(describeQuotasReq(v, true, kmsg.DescribeClientQuotasRequestComponent{EntityType: "user", MatchType: quotaMatchSpecified}), v)
	}
	for v := int16(0); v <= 2; v++ {
		seed(markerReq(v, 1, 0, false, 0, 2, "t", 0, 9), v)
	}
	for v := int16(0); v <= 1; v++ {
		lcr := kmsg.NewPtrListConfigResourcesRequest()
		lcr.ResourceTypes = []int8{2, 7}
		seed(lcr, v)
	}
	seed(dtpReq(1, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "t", Partition: 1}, "t", "u"), 0)
	lp := kmsg.NewPtrListPartitionReassignmentsRequest()
	seed(lp, 0)

	b := startBroker(f, func(c *Config) {
		c.QuotaLookupHost = func(context.Context, string) ([]string, error) {
			return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
		}
	})
	b.createTopic(f, "t", 2, nil)
	b.createTopic(f, "el", 1, nil)
	b.appendN(f, "t", 0, 3)
	table := servedVersions(nil)
	mine := map[int16]bool{23: true, 27: true, 35: true, 37: true, 43: true, 45: true, 46: true, 48: true, 49: true, 57: true, 60: true, 74: true, 75: true}

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		h, a, req, err := decodeRequest(table, in[4:])
		if err != nil || !mine[h.key] {
			return
		}
		switch r := req.(type) {
		case *kmsg.CreatePartitionsRequest:
			r.ValidateOnly = true
		case *kmsg.AlterClientQuotasRequest:
			r.ValidateOnly = true
		case *kmsg.UpdateFeaturesRequest:
			r.ValidateOnly = true
		}
		resp, err := a.handle(b.s, &Request{Ctx: context.Background(), Version: h.version, Body: req})
		if err != nil || resp == nil {
			t.Fatalf("key %d v%d: %v %v", h.key, h.version, resp, err)
		}
		resp.SetVersion(h.version)
		again := kmsg.ResponseForKey(h.key)
		again.SetVersion(h.version)
		if err := again.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("key %d v%d: response does not decode: %v", h.key, h.version, err)
		}
	})
}
