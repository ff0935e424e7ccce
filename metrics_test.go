package kcompatd

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcompatd/kcompatd/partition"
)

// series gathers g into "name{label=value,...}" -> value, labels sorted
// by name (as the registry sorts them); histograms give their count.
func series(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName()+"="+lp.GetValue())
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func metricsBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	all := map[string]string{"kcompatd.metrics.listener": "127.0.0.1:0", "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
	for k, v := range props {
		all[k] = v
	}
	return newTestBroker(t, "", all)
}

// The collectors read the store, the coordinators and the cleaner at
// scrape time: partition offsets and sizes, a group's committed offsets
// and lag, transactions by state, a cleaner pass.
func TestMetricsCollectors(t *testing.T) {
	// The cleaner thread must not clean "m" before CleanLog does.
	b := metricsBroker(t, map[string]string{"log.cleaner.backoff.ms": "3600000"})
	ctx := testContext(t)
	cl, adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"cleanup.policy": new("compact"), "internal.segment.bytes": new("200")}, "m"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		r := &kgo.Record{Topic: "m", Partition: 0, Key: []byte(fmt.Sprint("k", i%2)), Value: []byte(strings.Repeat("v", 50))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "m", Partition: 0, At: 4, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "g", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("m"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Partition: 1, Key: []byte("t"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	tp := partition.TopicPartition{Topic: "m", Partition: 0}
	if cleaned, err := b.cleaner.CleanLog(tp); err != nil || !cleaned {
		t.Fatalf("CleanLog: %v %v", cleaned, err)
	}

	got := series(t, b.Metrics())
	log0 := b.store.Topic("m").Partitions[0]
	o := log0.Offsets()
	for key, want := range map[string]float64{
		"kcompatd_partition_high_watermark{partition=0,topic=m}":       10,
		"kcompatd_partition_log_end_offset{partition=0,topic=m}":       10,
		"kcompatd_partition_last_stable_offset{partition=0,topic=m}":   10,
		"kcompatd_partition_log_start_offset{partition=0,topic=m}":     float64(o.LogStartOffset),
		"kcompatd_partition_size_bytes{partition=0,topic=m}":           float64(log0.Size()),
		"kcompatd_partition_high_watermark{partition=1,topic=m}":       2, // a record and the commit marker
		"kcompatd_topic_records_in_total{topic=m}":                     12,
		"kcompatd_group_state{group=g,state=Empty}":                    1,
		"kcompatd_groups{state=Empty}":                                 1,
		"kcompatd_groups{state=Stable}":                                0,
		"kcompatd_group_members{group=g}":                              0,
		"kcompatd_group_committed_offset{group=g,partition=0,topic=m}": 4,
		"kcompatd_group_lag{group=g,partition=0,topic=m}":              6,
		"kcompatd_transactions{state=CompleteCommit}":                  1,
		"kcompatd_transactions{state=Ongoing}":                         0,
		"kcompatd_cleaner_runs_total{}":                                1,
		"kcompatd_cleaner_dead_threads{}":                              0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	for _, key := range []string{"kcompatd_cleaner_bytes_read_total{}", "kcompatd_cleaner_bytes_written_total{}", "kcompatd_topic_bytes_in_total{topic=m}", "kcompatd_connections_opened_total{listener=PLAINTEXT}", "go_goroutines{}"} {
		if got[key] <= 0 {
			t.Errorf("%s = %v, want > 0", key, got[key])
		}
	}
	// A request is counted after its response is written, so the client
	// can be ahead of the count.
	endTxn := 0.0
	for deadline := time.Now().Add(10 * time.Second); ; got = series(t, b.Metrics()) {
		endTxn = 0
		for key, v := range got {
			if strings.HasPrefix(key, "kcompatd_requests_total{api=EndTxn,") {
				endTxn += v
			}
		}
		if endTxn >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if endTxn != 1 {
		t.Errorf("EndTxn requests %v, want 1", endTxn)
	}
	if _, ok := got["kcompatd_cleaner_dirty_ratio{partition=0,topic=m}"]; !ok {
		t.Error("no dirty ratio for the compacted partition")
	}

	// Served over HTTP too, in the text format.
	resp, err := http.Get("http://" + b.AdminAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `kcompatd_partition_high_watermark{partition="0",topic="m"} 10`) {
		t.Fatalf("GET /metrics: %d\n%s", resp.StatusCode, body)
	}
}

// Two brokers in one process keep registries of their own; a broker
// without the admin listener has no metrics at all.
func TestMetricsPerBroker(t *testing.T) {
	a, b := metricsBroker(t, nil), metricsBroker(t, nil)
	off := newTestBroker(t, "", nil)
	if off.Metrics() != nil || off.metrics != nil {
		t.Fatal("metrics on without the admin listener")
	}
	cl, adm := newAdmin(t, a)
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "only-a"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "only-a", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ga, gb := series(t, a.Metrics()), series(t, b.Metrics())
	if ga["kcompatd_topic_records_in_total{topic=only-a}"] != 1 {
		t.Errorf("broker a: records in %v", ga["kcompatd_topic_records_in_total{topic=only-a}"])
	}
	keys := func(m map[string]float64, prefix string) []string {
		var out []string
		for k := range m {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	if k := keys(gb, "kcompatd_topic_"); len(k) != 0 {
		t.Errorf("broker b counts broker a's topic: %v", k)
	}
	if k := keys(gb, "kcompatd_requests_total{api=Produce"); len(k) != 0 {
		t.Errorf("broker b counts broker a's requests: %v", k)
	}
}
