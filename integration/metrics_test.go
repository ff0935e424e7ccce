package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scraper reads the binary's /metrics.
type scraper struct{ url string }

func newScraper(t *testing.T, b *broker) scraper {
	t.Helper()
	admin, ok := b.StartedField("admin")
	if !ok {
		t.Fatal("no admin address in the start-up line")
	}
	return scraper{url: fmt.Sprintf("http://%s/metrics", admin)}
}

func (s scraper) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", s.url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metricValue is the value of the series of name whose labels include
// labels ("k", "v", ...); found is false without one.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, found bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.GetMetric() {
		n := 0
		for _, lp := range m.GetLabel() {
			if w, ok := want[lp.GetName()]; ok {
				if w != lp.GetValue() {
					continue next
				}
				n++
			}
		}
		if n != len(want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// waitMetrics scrapes until ok holds of a scrape, or fails after timeout
// with what the last scrape said.
func (s scraper) waitMetrics(t *testing.T, what string, timeout time.Duration, ok func(map[string]*dto.MetricFamily) (bool, string)) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		fams := s.scrape(t)
		done, state := ok(fams)
		if done {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", what, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// producedBatches sums, from the producer's side, the batches a kgo
// client wrote: their size as the broker stores them (the 61-byte v2
// batch header and the records as sent) and their records.
type producedBatches struct {
	mu             sync.Mutex
	bytes, records map[string]int
}

func (p *producedBatches) OnProduceBatchWritten(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.ProduceBatchMetrics) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes[topic] += 61 + m.CompressedBytes
	p.records[topic] += m.NumRecords
}

// TestMetricsScraped starts the binary with the admin listener, produces,
// consumes in a group that rebalances, compacts a topic, and checks what
// GET /metrics says: bytes and records in equal what the producer wrote,
// the partitions' offsets and sizes, the requests per API, the group's
// members and its lag reaching 0 once it committed, connections, fsyncs,
// and a counted cleaner run.
func TestMetricsScraped(t *testing.T) {
	b := startBroker(t, "", append([]string{
		"kcompatd.metrics.listener=127.0.0.1:0",
		"log.cleaner.backoff.ms=50",
		"log.flush.interval.messages=1",
	}, groupConfigs...)...)
	s := newScraper(t, b)
	const topic, parts, perPart = "metered", 2, 200
	b.createTopic(t, topic, parts, nil)

	produced := &producedBatches{bytes: map[string]int{}, records: map[string]int{}}
	b.produceWith(t, topic, parts, perPart, kgo.WithHooks(produced), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var wantBytes, wantRecords int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// kgo calls the hook on a goroutine of its own, after the
		// records' promises.
		produced.mu.Lock()
		wantBytes, wantRecords = produced.bytes[topic], produced.records[topic]
		produced.mu.Unlock()
		if wantRecords == parts*perPart {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("producer hook saw %d records, produced %d", wantRecords, parts*perPart)
		}
	}

	// A request is counted once its response is written, which the
	// client may see first: scrape until the last Produce is counted.
	fams := s.scrape(t)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, _ := metricValue(fams, "kcompatd_response_error_codes_total", "api", "Produce", "error", "NONE"); n >= parts {
			break
		}
		fams = s.scrape(t)
	}
	check := func(name string, want float64, labels ...string) {
		t.Helper()
		if got, ok := metricValue(fams, name, labels...); !ok || got != want {
			t.Errorf("%s%v = %v (found %v), want %v", name, labels, got, ok, want)
		}
	}
	check("kcompatd_topic_bytes_in_total", float64(wantBytes), "topic", topic)
	check("kcompatd_topic_records_in_total", float64(wantRecords), "topic", topic)
	var size float64
	for p := range parts {
		ps := fmt.Sprint(p)
		check("kcompatd_partition_high_watermark", perPart, "topic", topic, "partition", ps)
		check("kcompatd_partition_log_end_offset", perPart, "topic", topic, "partition", ps)
		check("kcompatd_partition_last_stable_offset", perPart, "topic", topic, "partition", ps)
		check("kcompatd_partition_log_start_offset", 0, "topic", topic, "partition", ps)
		v, _ := metricValue(fams, "kcompatd_partition_size_bytes", "topic", topic, "partition", ps)
		size += v
	}
	if size != float64(wantBytes) {
		t.Errorf("partition sizes sum to %v, produced %d bytes", size, wantBytes)
	}
	if n, _ := metricValue(fams, "kcompatd_requests_total", "api", "Produce"); n < 1 {
		t.Errorf("no Produce request counted")
	}
	if n, _ := metricValue(fams, "kcompatd_response_error_codes_total", "api", "Produce", "error", "NONE"); n < parts {
		t.Errorf("Produce's NONE error codes: %v, want at least %d", n, parts)
	}
	if n, _ := metricValue(fams, "kcompatd_request_duration_seconds", "api", "Produce"); n < 1 {
		t.Errorf("no Produce latency observed")
	}
	if n, _ := metricValue(fams, "kcompatd_connections_opened_total", "listener", "PLAINTEXT"); n < 1 {
		t.Errorf("no connection counted")
	}
	if n, _ := metricValue(fams, "kcompatd_log_flush_duration_seconds"); n < 1 {
		t.Errorf("no fsync observed with log.flush.interval.messages=1")
	}
	if _, ok := metricValue(fams, "go_goroutines"); !ok {
		t.Errorf("no Go runtime metrics")
	}

	// A group: one member consumes everything and commits, a second
	// joins (a rebalance), and the lag is 0 on both partitions.
	const group = "metered-g"
	opts := append(groupOpts(group, topic), kgo.DisableAutoCommit())
	first := b.newClient(t, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for seen := 0; seen < parts*perPart; {
		fs := first.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", seen, parts*perPart, err)
		}
		seen += fs.NumRecords()
	}
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	second := b.newClient(t, opts...)
	for _, c := range []*kgo.Client{first, second} {
		go func() { // keeps both members polling, so they rejoin
			for ctx.Err() == nil && !c.PollFetches(ctx).IsClientClosed() {
			}
		}()
	}
	fams = s.waitMetrics(t, "two members, Stable, lag 0", 60*time.Second, func(f map[string]*dto.MetricFamily) (bool, string) {
		members, _ := metricValue(f, "kcompatd_group_members", "group", group)
		stable, _ := metricValue(f, "kcompatd_group_state", "group", group, "state", "Stable")
		var lags []float64
		for p := range parts {
			lag, ok := metricValue(f, "kcompatd_group_lag", "group", group, "topic", topic, "partition", fmt.Sprint(p))
			if !ok {
				lag = -1
			}
			lags = append(lags, lag)
		}
		ok := members == 2 && stable == 1 && lags[0] == 0 && lags[1] == 0
		return ok, fmt.Sprintf("members %v, stable %v, lags %v", members, stable, lags)
	})
	check("kcompatd_group_committed_offset", perPart, "group", group, "topic", topic, "partition", "0")
	if n, _ := metricValue(fams, "kcompatd_requests_total", "api", "JoinGroup"); n < 2 {
		t.Errorf("JoinGroup requests %v, want at least 2 (a rebalance)", n)
	}
	if n, _ := metricValue(fams, "kcompatd_topic_bytes_out_total", "topic", topic); n < float64(wantBytes) {
		t.Errorf("bytes out %v, want at least the %d bytes consumed", n, wantBytes)
	}
	if n, _ := metricValue(fams, "kcompatd_groups", "state", "Stable"); n < 1 {
		t.Errorf("no Stable group counted")
	}

	// A compacted topic with small segments: a cleaner run is counted.
	const compacted = "metered-compacted"
	b.createTopic(t, compacted, 1, map[string]*string{
		"cleanup.policy":            strPtr("compact"),
		"internal.segment.bytes":    strPtr("1024"),
		"min.cleanable.dirty.ratio": strPtr("0.01"),
	})
	cl := b.newClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(compacted))...)
	for i := range 300 {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("key-%02d", i%20)), Value: []byte(strings.Repeat("v", 40))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s.waitMetrics(t, "a cleaner run", 60*time.Second, func(f map[string]*dto.MetricFamily) (bool, string) {
		runs, _ := metricValue(f, "kcompatd_cleaner_runs_total")
		read, _ := metricValue(f, "kcompatd_cleaner_bytes_read_total")
		written, _ := metricValue(f, "kcompatd_cleaner_bytes_written_total")
		_, ratio := metricValue(f, "kcompatd_cleaner_dirty_ratio", "topic", compacted, "partition", "0")
		return runs >= 1 && read > 0 && written > 0 && ratio, fmt.Sprintf("runs %v, read %v, written %v, dirty ratio reported %v", runs, read, written, ratio)
	})
}

// produceWith is produceN with the producer's extra options and records
// that carry a value.
func (b *broker) produceWith(t testing.TB, topic string, parts int32, n int, opts ...kgo.Opt) {
	t.Helper()
	cl := b.newClient(t, append(append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner())), opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		for p := range parts {
			r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("p%d-%d", p, i)), Value: []byte(strings.Repeat("m", 100))}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
