package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func produceResponse(codes ...[]int16) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(11)
	for i, topic := range codes {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = "t" + string(rune('a'+i))
		for p, c := range topic {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = int32(p), c
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// The walk finds every ErrorCode field at any depth: slices of structs,
// pointers to structs, the top level.
func TestWalkErrorCodes(t *testing.T) {
	count := func(resp kmsg.Response) map[int16]int {
		var acc codeCounts
		walkErrorCodes(resp, &acc)
		got := map[int16]int{}
		for i := range acc.n {
			got[acc.codes[i]] += acc.counts[i]
		}
		for c, n := range acc.overflow {
			got[c] += n
		}
		return got
	}
	nl := kerr.NotLeaderForPartition.Code
	if got := count(produceResponse([]int16{0, 0, nl}, []int16{nl})); len(got) != 2 || got[0] != 2 || got[nl] != 2 {
		t.Errorf("produce: %v", got)
	}

	md := kmsg.NewPtrMetadataResponse()
	mt := kmsg.NewMetadataResponseTopic()
	mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.ErrorCode = kerr.LeaderNotAvailable.Code
	mt.Partitions = append(mt.Partitions, mp, mp)
	md.Topics = append(md.Topics, mt)
	// Its top-level ErrorCode (v13+) is a NONE.
	if got := count(md); len(got) != 3 || got[0] != 1 || got[kerr.UnknownTopicOrPartition.Code] != 1 || got[kerr.LeaderNotAvailable.Code] != 2 {
		t.Errorf("metadata: %v", got)
	}

	jg := kmsg.NewPtrJoinGroupResponse() // one top-level code
	jg.ErrorCode = kerr.RebalanceInProgress.Code
	if got := count(jg); len(got) != 1 || got[kerr.RebalanceInProgress.Code] != 1 {
		t.Errorf("join group: %v", got)
	}

	// More distinct codes than the in-place slots.
	var many []int16
	for c := range int16(12) {
		many = append(many, c, c)
	}
	got := count(produceResponse(many))
	for c := range int16(12) {
		if got[c] != 2 {
			t.Errorf("overflow: code %d counted %d times, want 2", c, got[c])
		}
	}
}

func TestRequestDoneCounts(t *testing.T) {
	h := New(nil)
	nl := kerr.NotLeaderForPartition.Code
	h.RequestDone(kmsg.Produce.Int16(), 11, produceResponse([]int16{0, nl, nl}), 3*time.Millisecond)
	h.RequestDone(kmsg.Produce.Int16(), 11, nil, time.Millisecond) // acks=0
	h.RequestDone(kmsg.Produce.Int16(), 9, produceResponse([]int16{0}), time.Millisecond)
	if n := testutil.ToFloat64(h.requests.WithLabelValues("Produce", "11")); n != 2 {
		t.Errorf("Produce v11 requests %v, want 2", n)
	}
	if n := testutil.ToFloat64(h.requests.WithLabelValues("Produce", "9")); n != 1 {
		t.Errorf("Produce v9 requests %v, want 1", n)
	}
	if n := testutil.ToFloat64(h.codes.WithLabelValues("Produce", "NONE")); n != 2 {
		t.Errorf("NONE codes %v, want 2", n)
	}
	if n := testutil.ToFloat64(h.codes.WithLabelValues("Produce", "NOT_LEADER_FOR_PARTITION")); n != 2 {
		t.Errorf("NOT_LEADER_FOR_PARTITION codes %v, want 2", n)
	}
	want := `
# HELP kcompatd_request_duration_seconds Time from a decoded request to its response written, by API and version.
# TYPE kcompatd_request_duration_seconds histogram
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.0001"} 0
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.00025"} 0
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.0005"} 0
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.001"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.0025"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.005"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.01"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.025"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.05"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.1"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.25"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="0.5"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="1"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="2.5"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="5"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="10"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="30"} 1
kcompatd_request_duration_seconds_bucket{api="Produce",version="9",le="+Inf"} 1
kcompatd_request_duration_seconds_sum{api="Produce",version="9"} 0.001
kcompatd_request_duration_seconds_count{api="Produce",version="9"} 1
`
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h)
	h.latency.DeleteLabelValues("Produce", "11") // keep the expectation short
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kcompatd_request_duration_seconds"); err != nil {
		t.Error(err)
	}
}

// Topic counters sum appends and reads, and go away with their topic.
func TestTopicCounters(t *testing.T) {
	gone := map[string]bool{}
	h := New(func(topic string) bool { return !gone[topic] })
	h.Appended("a", 100, 3)
	h.Appended("a", 50, 1)
	h.Read("a", 120)
	h.Appended("b", 7, 1)
	want := func(topics string) string {
		var b strings.Builder
		b.WriteString("# HELP kcompatd_topic_bytes_in_total Bytes of record batches appended to the topic's partitions, as stored.\n# TYPE kcompatd_topic_bytes_in_total counter\n")
		if strings.Contains(topics, "a") {
			b.WriteString("kcompatd_topic_bytes_in_total{topic=\"a\"} 150\n")
		}
		if strings.Contains(topics, "b") {
			b.WriteString("kcompatd_topic_bytes_in_total{topic=\"b\"} 7\n")
		}
		b.WriteString("# HELP kcompatd_topic_records_in_total Records appended to the topic's partitions.\n# TYPE kcompatd_topic_records_in_total counter\n")
		if strings.Contains(topics, "a") {
			b.WriteString("kcompatd_topic_records_in_total{topic=\"a\"} 4\n")
		}
		if strings.Contains(topics, "b") {
			b.WriteString("kcompatd_topic_records_in_total{topic=\"b\"} 1\n")
		}
		b.WriteString("# HELP kcompatd_topic_bytes_out_total Bytes of record batches read from the topic's partitions for Fetch responses.\n# TYPE kcompatd_topic_bytes_out_total counter\n")
		if strings.Contains(topics, "a") {
			b.WriteString("kcompatd_topic_bytes_out_total{topic=\"a\"} 120\n")
		}
		if strings.Contains(topics, "b") {
			b.WriteString("kcompatd_topic_bytes_out_total{topic=\"b\"} 0\n")
		}
		return b.String()
	}
	names := []string{"kcompatd_topic_bytes_in_total", "kcompatd_topic_records_in_total", "kcompatd_topic_bytes_out_total"}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("ab")), names...); err != nil {
		t.Error(err)
	}
	gone["b"] = true
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want("a")), names...); err != nil {
		t.Error(err)
	}
}

func TestConnectionsAndFsync(t *testing.T) {
	h := New(nil)
	h.ConnectionOpened("PLAINTEXT")
	h.ConnectionOpened("PLAINTEXT")
	h.ConnectionClosed("PLAINTEXT")
	h.ConnectionOpened("SASL")
	for _, c := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{h.opened.WithLabelValues("PLAINTEXT"), 2},
		{h.closed.WithLabelValues("PLAINTEXT"), 1},
		{h.open.WithLabelValues("PLAINTEXT"), 1},
		{h.open.WithLabelValues("SASL"), 1},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%v: %v, want %v", c.c, got, c.want)
		}
	}
	h.Flushed(300 * time.Microsecond)
	if n := testutil.CollectAndCount(h.fsync); n != 1 {
		t.Errorf("fsync histogram: %d series", n)
	}
}

// Once its series exist, the hot path allocates nothing.
func TestHotPathAllocations(t *testing.T) {
	h := New(nil)
	resp := produceResponse([]int16{0, 0}, []int16{0})
	hot := func() {
		h.RequestDone(kmsg.Produce.Int16(), 11, resp, time.Millisecond)
		h.Appended("t", 1024, 16)
		h.Read("t", 1024)
		h.Flushed(time.Millisecond)
	}
	hot()
	if n := testing.AllocsPerRun(100, hot); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}

func TestErrorName(t *testing.T) {
	for code, want := range map[int16]string{0: "NONE", 6: "NOT_LEADER_FOR_PARTITION", -1: "UNKNOWN_SERVER_ERROR", 30000: "30000"} {
		if got := ErrorName(code); got != want {
			t.Errorf("ErrorName(%d) = %q, want %q", code, got, want)
		}
	}
}
