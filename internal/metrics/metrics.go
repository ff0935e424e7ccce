// Package metrics holds what kcompatd's hot paths count when metrics are
// on (the admin listener is configured): requests, their latency and the
// error codes of their responses per API, bytes and records per topic,
// connections per listener, and fsync latency. It implements the
// observer interfaces of protocol (protocol.Observer) and partition
// (partition.Observer) by their method sets, without importing them, so
// that any package may use it; what is read at scrape time (offsets,
// groups, the cleaner) is the root package's metrics.go.
//
// Costs: when metrics are off the observers are nil and nothing here
// runs. When on, a request costs an atomic add, a histogram observation
// and a walk over its response's error codes (reflect over a plan cached
// per response type), an append or a read an RLock and atomic adds, with
// no allocation once a series exists.
package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Namespace prefixes every metric name.
const Namespace = "kcompatd"

// Bucket bounds, in seconds.
var (
	// RequestBuckets span a metadata answer (0.1 ms) to a long poll or
	// a rebalance (30 s).
	RequestBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// FsyncBuckets span a page-cache-only fsync (50 µs) to a stalled
	// disk (5 s).
	FsyncBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5}
)

// The series cache covers API keys below maxKeys and versions below
// maxVersions; anything else takes the slow path (a label lookup).
const (
	maxKeys     = 128
	maxVersions = 32
)

// Hot is the hot-path metrics of one broker. Register it with the
// broker's own registry (it is a prometheus.Collector), never the global
// one, so that two brokers in one process do not collide.
type Hot struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	codes    *prometheus.CounterVec
	opened   *prometheus.CounterVec
	closed   *prometheus.CounterVec
	open     *prometheus.GaugeVec
	fsync    prometheus.Histogram

	// series caches the request counter and histogram of each API key
	// and version.
	series [maxKeys][maxVersions]atomic.Pointer[requestSeries]

	codeMu     sync.RWMutex
	codeSeries map[uint32]prometheus.Counter // key<<16 | uint16(code); guarded by codeMu

	topicMu sync.RWMutex
	topics  map[string]*topicCounters // guarded by topicMu

	// keepTopic, if set, says whether a topic still exists; Collect
	// drops the counters of the others (a deleted topic's metrics go
	// away, as Kafka removes its BrokerTopicMetrics).
	keepTopic func(topic string) bool

	bytesInDesc, recordsInDesc, bytesOutDesc *prometheus.Desc
}

type requestSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// topicCounters are one topic's totals.
type topicCounters struct {
	bytesIn, recordsIn, bytesOut atomic.Int64
}

// New returns the hot-path metrics. keepTopic (nil: keep all) tells
// which topics still exist when metrics are collected.
func New(keepTopic func(topic string) bool) *Hot {
	apiLabels := []string{"api", "version"}
	return &Hot{
		requests: counterVec("requests_total", "Requests served, by API and version.", apiLabels...),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "request_duration_seconds",
			Help:    "Time from a decoded request to its response written, by API and version.",
			Buckets: RequestBuckets,
		}, apiLabels),
		codes: counterVec("response_error_codes_total",
			"Error codes in responses (each ErrorCode field, NONE included, as Kafka's ErrorsPerSec), by API and error.", "api", "error"),
		opened: counterVec("connections_opened_total", "Client connections accepted, by listener.", "listener"),
		closed: counterVec("connections_closed_total", "Client connections closed, by listener.", "listener"),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "connections", Help: "Client connections open, by listener.",
		}, []string{"listener"}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "log_flush_duration_seconds",
			Help:    "Time of one fsync of a partition log (its segments, indexes and directory as needed).",
			Buckets: FsyncBuckets,
		}),
		codeSeries: map[uint32]prometheus.Counter{},
		topics:     map[string]*topicCounters{},
		keepTopic:  keepTopic,
		bytesInDesc: prometheus.NewDesc(Namespace+"_topic_bytes_in_total",
			"Bytes of record batches appended to the topic's partitions, as stored.", []string{"topic"}, nil),
		recordsInDesc: prometheus.NewDesc(Namespace+"_topic_records_in_total",
			"Records appended to the topic's partitions.", []string{"topic"}, nil),
		bytesOutDesc: prometheus.NewDesc(Namespace+"_topic_bytes_out_total",
			"Bytes of record batches read from the topic's partitions for Fetch responses.", []string{"topic"}, nil),
	}
}

// vecs are the metrics kept by client_golang's own types.
func (h *Hot) vecs() []prometheus.Collector {
	return []prometheus.Collector{h.requests, h.latency, h.codes, h.opened, h.closed, h.open, h.fsync}
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

// Describe implements prometheus.Collector.
func (h *Hot) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range h.vecs() {
		c.Describe(ch)
	}
	ch <- h.bytesInDesc
	ch <- h.recordsInDesc
	ch <- h.bytesOutDesc
}

// Collect implements prometheus.Collector.
func (h *Hot) Collect(ch chan<- prometheus.Metric) {
	for _, c := range h.vecs() {
		c.Collect(ch)
	}
	type topicTotals struct {
		name                         string
		bytesIn, recordsIn, bytesOut int64
	}
	// Copied under the lock and sent without it: appenders wait for the
	// copy, not for the scrape.
	h.topicMu.Lock()
	totals := make([]topicTotals, 0, len(h.topics))
	for name, tc := range h.topics {
		if h.keepTopic != nil && !h.keepTopic(name) {
			delete(h.topics, name)
			continue
		}
		totals = append(totals, topicTotals{name, tc.bytesIn.Load(), tc.recordsIn.Load(), tc.bytesOut.Load()})
	}
	h.topicMu.Unlock()
	for _, t := range totals {
		ch <- prometheus.MustNewConstMetric(h.bytesInDesc, prometheus.CounterValue, float64(t.bytesIn), t.name)
		ch <- prometheus.MustNewConstMetric(h.recordsInDesc, prometheus.CounterValue, float64(t.recordsIn), t.name)
		ch <- prometheus.MustNewConstMetric(h.bytesOutDesc, prometheus.CounterValue, float64(t.bytesOut), t.name)
	}
}

var _ prometheus.Collector = (*Hot)(nil)

// RequestDone counts a served request: its latency d and the error codes
// of resp (nil: the request has no response, acks=0).
func (h *Hot) RequestDone(key, version int16, resp kmsg.Response, d time.Duration) {
	s := h.requestSeries(key, version)
	s.requests.Inc()
	s.latency.Observe(d.Seconds())
	if resp != nil {
		var acc codeCounts
		walkErrorCodes(resp, &acc)
		for i := range acc.n {
			h.codeCounter(key, acc.codes[i]).Add(float64(acc.counts[i]))
		}
		for code, n := range acc.overflow {
			h.codeCounter(key, code).Add(float64(n))
		}
	}
}

func (h *Hot) requestSeries(key, version int16) *requestSeries {
	inRange := key >= 0 && key < maxKeys && version >= 0 && version < maxVersions
	if inRange {
		if s := h.series[key][version].Load(); s != nil {
			return s
		}
	}
	labels := []string{apiName(key), strconv.Itoa(int(version))}
	s := &requestSeries{requests: h.requests.WithLabelValues(labels...), latency: h.latency.WithLabelValues(labels...)}
	if inRange {
		h.series[key][version].Store(s)
	}
	return s
}

func (h *Hot) codeCounter(key, code int16) prometheus.Counter {
	k := uint32(uint16(key))<<16 | uint32(uint16(code))
	h.codeMu.RLock()
	c, ok := h.codeSeries[k]
	h.codeMu.RUnlock()
	if ok {
		return c
	}
	h.codeMu.Lock()
	defer h.codeMu.Unlock()
	if c, ok = h.codeSeries[k]; !ok {
		c = h.codes.WithLabelValues(apiName(key), ErrorName(code))
		h.codeSeries[k] = c
	}
	return c
}

// apiName is Kafka's name of an API key ("Produce"), or the number.
func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" && n != "Unknown" {
		return n
	}
	return strconv.Itoa(int(key))
}

// ErrorName is Kafka's name of an error code: NONE for 0, the number for
// one kerr does not know.
func ErrorName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Code == code {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

// ConnectionOpened counts a connection accepted on listener.
func (h *Hot) ConnectionOpened(listener string) {
	h.opened.WithLabelValues(listener).Inc()
	h.open.WithLabelValues(listener).Inc()
}

// ConnectionClosed counts a connection of listener that ended.
func (h *Hot) ConnectionClosed(listener string) {
	h.closed.WithLabelValues(listener).Inc()
	h.open.WithLabelValues(listener).Dec()
}

// Appended counts a batch of records records and bytes bytes appended to
// a partition of topic.
func (h *Hot) Appended(topic string, bytes, records int) {
	tc := h.topic(topic)
	tc.bytesIn.Add(int64(bytes))
	tc.recordsIn.Add(int64(records))
}

// Read counts bytes of batches read from a partition of topic for a
// Fetch.
func (h *Hot) Read(topic string, bytes int) {
	h.topic(topic).bytesOut.Add(int64(bytes))
}

// Flushed observes one fsync of a log that took d.
func (h *Hot) Flushed(d time.Duration) { h.fsync.Observe(d.Seconds()) }

func (h *Hot) topic(name string) *topicCounters {
	h.topicMu.RLock()
	tc := h.topics[name]
	h.topicMu.RUnlock()
	if tc != nil {
		return tc
	}
	h.topicMu.Lock()
	defer h.topicMu.Unlock()
	if tc = h.topics[name]; tc == nil {
		tc = &topicCounters{}
		h.topics[name] = tc
	}
	return tc
}
