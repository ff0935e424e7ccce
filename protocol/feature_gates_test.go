package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareStreamsFeatureGates: at share.version 0 every share API, and
// at streams.version 0 every streams API, answers UNSUPPORTED_VERSION
// (still advertised, as Kafka 4.3.1); back at 1 they are served.
func TestShareStreamsFeatureGates(t *testing.T) {
	b, w := groupBroker(t)
	b.createTopic(t, "in", 1, nil)
	update := func(name string, level int16, typ int8) {
		t.Helper()
		resp := w.roundTrip(updateFeaturesReq(1, featureUpdate(name, level, typ))).(*kmsg.UpdateFeaturesResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("update %s to %d: %s %v", name, level, codeName(resp.ErrorCode), resp.ErrorMessage)
		}
	}
	group, member := "sg", "m0123456789012345678901"
	share := map[string]func() int16{
		"ShareGroupHeartbeat": func() int16 {
			r := kmsg.NewPtrShareGroupHeartbeatRequest()
			r.SetVersion(1)
			r.GroupID, r.MemberID, r.SubscribedTopicNames = group, member, []string{"in"}
			return w.roundTrip(r).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
		},
		"ShareGroupDescribe": func() int16 {
			r := kmsg.NewPtrShareGroupDescribeRequest()
			r.SetVersion(1)
			r.GroupIDs = []string{group}
			return w.roundTrip(r).(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode
		},
		"ShareFetch": func() int16 {
			r := kmsg.NewPtrShareFetchRequest()
			r.SetVersion(1)
			r.GroupID, r.MemberID, r.ShareSessionEpoch, r.MaxBytes, r.MaxRecords, r.BatchSize = &group, &member, -1, 1, 1, 1
			return w.roundTrip(r).(*kmsg.ShareFetchResponse).ErrorCode
		},
		"ShareAcknowledge": func() int16 {
			r := kmsg.NewPtrShareAcknowledgeRequest()
			r.SetVersion(1)
			r.GroupID, r.MemberID, r.ShareSessionEpoch = &group, &member, -1
			return w.roundTrip(r).(*kmsg.ShareAcknowledgeResponse).ErrorCode
		},
		"DescribeShareGroupOffsets": func() int16 {
			r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
			return w.roundTrip(r).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode
		},
		"AlterShareGroupOffsets": func() int16 {
			r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
			r.GroupID = group
			return w.roundTrip(r).(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode
		},
		"DeleteShareGroupOffsets": func() int16 {
			r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			r.GroupID = group
			return w.roundTrip(r).(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode
		},
	}
	streams := map[string]func() int16{
		"StreamsGroupHeartbeat": func() int16 {
			return w.roundTrip(sgJoin(t, w, 0, "g", "m1")).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode
		},
		"StreamsGroupDescribe": func() int16 {
			r := kmsg.NewPtrStreamsGroupDescribeRequest()
			r.Groups = []string{"g"}
			return w.roundTrip(r).(*kmsg.StreamsGroupDescribeResponse).Groups[0].ErrorCode
		},
	}
	check := func(apis map[string]func() int16, off bool) {
		t.Helper()
		for name, call := range apis {
			if got := call(); (got == kerr.UnsupportedVersion.Code) != off {
				t.Errorf("%s (off %v): %s", name, off, codeName(got))
			}
		}
	}
	advertised := func(key int16) bool {
		for _, k := range w.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ApiKeys {
			if k.ApiKey == key {
				return true
			}
		}
		return false
	}
	check(share, false)
	check(streams, false)
	update("share.version", 0, upgradeTypeSafeDowngrade)
	update("streams.version", 0, upgradeTypeSafeDowngrade)
	check(share, true)
	check(streams, true)
	if !advertised(kmsg.ShareFetch.Int16()) || !advertised(kmsg.StreamsGroupHeartbeat.Int16()) {
		t.Error("share or streams APIs left out of ApiVersions at level 0; Kafka 4.3.1 keeps them")
	}
	update("share.version", 1, upgradeTypeUpgrade)
	update("streams.version", 1, upgradeTypeUpgrade)
	check(share, false)
	check(streams, false)
}
