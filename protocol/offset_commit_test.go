package protocol

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetCommitErrorOrder: unknown topics and partitions are answered
// by the handler; the group checks come before the metadata size, so a
// group error answers oversized partitions too (Kafka's
// handleOffsetCommitRequest, doCommitOffsets, then storeOffsets).
func TestOffsetCommitErrorOrder(t *testing.T) {
	b, w := groupBroker(t)
	b.createTopic(t, "t", 2, nil)
	m, gen := stable(t, w, "g")
	big := strings.Repeat("x", 4097)
	var (
		unknown  = kerr.UnknownTopicOrPartition
		tooLarge = kerr.OffsetMetadataTooLarge
		illegal  = kerr.IllegalGeneration
	)
	for _, tc := range []struct {
		name string
		gen  int32
		want []*kerr.Error // nope/0, t/0 (big), t/1, t/5
	}{
		{"wrong generation", gen + 1, []*kerr.Error{unknown, illegal, illegal, unknown}},
		{"valid member", gen, []*kerr.Error{unknown, tooLarge, nil, unknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.SetVersion(8)
			req.Group, req.Generation, req.MemberID = "g", tc.gen, m
			part := func(p int32, meta string) kmsg.OffsetCommitRequestTopicPartition {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.Metadata = p, 3, &meta
				return rp
			}
			req.Topics = []kmsg.OffsetCommitRequestTopic{
				{Topic: "nope", Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, "")}},
				{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, big), part(1, "ok"), part(5, "")}},
			}
			resp := w.roundTrip(req).(*kmsg.OffsetCommitResponse)
			var got []int16
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					got = append(got, rp.ErrorCode)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d partitions, want %d", len(got), len(tc.want))
			}
			for i := range got {
				expectErr(t, "partition", got[i], tc.want[i])
			}
		})
	}
	if o := fetchOffset(t, w, "g", "t"); o.Offset != -1 {
		t.Fatalf("oversized partition committed at %d", o.Offset)
	}
}
