package protocol

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { versionChecks[kmsg.DeleteRecords.Int16()] = checkDeleteRecordsVersion }

func deleteRecordsReq(v int16, topic string, parts ...[2]int64) *kmsg.DeleteRecordsRequest {
	r := kmsg.NewPtrDeleteRecordsRequest()
	r.SetVersion(v)
	r.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = int32(p[0]), p[1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	return r
}

func checkDeleteRecordsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	del := fmt.Sprintf("delrec-v%d", v)
	b.createTopic(t, del, 2, nil)
	b.appendN(t, del, 0, 10)
	compact := fmt.Sprintf("delrec-compact-v%d", v)
	b.createTopic(t, compact, 1, map[string]string{"cleanup.policy": "compact"})
	b.appendN(t, compact, 0, 3)

	cases := []struct {
		name   string
		topic  string
		part   int64
		offset int64
		code   int16
		low    int64
	}{
		{"advance", del, 0, 4, 0, 4},
		{"lower is a no-op", del, 0, 2, 0, 4},
		{"past the high watermark", del, 0, 11, kerr.OffsetOutOfRange.Code, -1},
		{"below -1", del, 0, -2, kerr.OffsetOutOfRange.Code, -1},
		{"-1 is the high watermark", del, 0, -1, 0, 10},
		{"empty partition", del, 1, 0, 0, 0},
		{"unknown partition", del, 7, 0, kerr.UnknownTopicOrPartition.Code, -1},
		{"unknown topic", "no-such-topic", 0, 0, kerr.UnknownTopicOrPartition.Code, -1},
		{"compact-only", compact, 0, 1, kerr.PolicyViolation.Code, -1},
	}
	for _, c := range cases {
		resp := w.roundTrip(deleteRecordsReq(v, c.topic, [2]int64{c.part, c.offset})).(*kmsg.DeleteRecordsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("%s: response %+v", c.name, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != c.code || p.LowWatermark != c.low || p.Partition != int32(c.part) {
			t.Errorf("%s: error %s low watermark %d, want %s %d", c.name, codeName(p.ErrorCode), p.LowWatermark, codeName(c.code), c.low)
		}
		if resp.ThrottleMillis != 0 {
			t.Errorf("throttle %d", resp.ThrottleMillis)
		}
	}
	l, err := b.store.Log(del, 0)
	if err != nil {
		t.Fatal(err)
	}
	if o := l.Offsets(); o.LogStartOffset != 10 {
		t.Errorf("log start offset %d", o.LogStartOffset)
	}
}
