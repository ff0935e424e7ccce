package kcompatd

// Prometheus metrics, served at GET /metrics on the admin listener
// (kcompatd.metrics.listener) and on only when it is configured. Each
// broker has a registry of its own, so brokers in one process do not
// collide. What the hot paths count (requests, bytes, connections,
// fsyncs) is internal/metrics, told by the protocol and partition
// observers; everything else is read when scraped, by the collectors
// below, from the store, the coordinators and the cleaner through their
// public methods: nothing is kept up to date for it between scrapes.
// README's Metrics section lists every metric with its Kafka JMX
// counterpart.

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kcompatd/kcompatd/cleaner"
	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/internal/metrics"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol"
)

var (
	_ protocol.Observer  = (*metrics.Hot)(nil)
	_ partition.Observer = (*metrics.Hot)(nil)
)

// scrapeTimeout bounds the calls into the group coordinator a scrape makes
// (each goes through a group's goroutine).
const scrapeTimeout = 5 * time.Second

// brokerMetrics is one broker's registry and hot-path metrics.
type brokerMetrics struct {
	reg *prometheus.Registry
	hot *metrics.Hot
	// store is set by register, before the admin listener serves.
	store *partition.Store
}

// newBrokerMetrics makes the registry with the hot-path and Go runtime
// metrics; register adds the rest once the parts they read exist.
func newBrokerMetrics() *brokerMetrics {
	m := &brokerMetrics{reg: prometheus.NewRegistry()}
	m.hot = metrics.New(func(topic string) bool { return m.store == nil || m.store.Topic(topic) != nil })
	m.reg.MustRegister(m.hot, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// storeObserver is the partition observer: nil (no metrics) for a nil m.
func (m *brokerMetrics) storeObserver() partition.Observer {
	if m == nil {
		return nil
	}
	return m.hot
}

// serverObserver is the protocol observer: nil (no metrics) for a nil m.
func (m *brokerMetrics) serverObserver() protocol.Observer {
	if m == nil {
		return nil
	}
	return m.hot
}

// register adds the collectors read at scrape time. A nil m does nothing.
func (m *brokerMetrics) register(store *partition.Store, groups *coordinator.Coordinator, txns *coordinator.TxnCoordinator, cl *cleaner.Cleaner) {
	if m == nil {
		return
	}
	m.store = store
	m.reg.MustRegister(newPartitionCollector(store), newGroupCollector(groups, store), newTxnCollector(txns), newCleanerCollector(cl))
}

// Metrics is the broker's metrics registry (what GET /metrics serves), nil
// when the admin listener, and so metrics, are off.
func (b *Broker) Metrics() prometheus.Gatherer {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.reg
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(metrics.Namespace+"_"+name, help, labels, nil)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// describe sends descs, for the collectors' Describe.
func describe(ch chan<- *prometheus.Desc, descs ...*prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// partitionCollector reads each partition's offsets and size.
type partitionCollector struct {
	store                                      *partition.Store
	logStart, highWatermark, lso, logEnd, size *prometheus.Desc
}

func newPartitionCollector(store *partition.Store) *partitionCollector {
	l := []string{"topic", "partition"}
	return &partitionCollector{
		store:         store,
		logStart:      desc("partition_log_start_offset", "The partition's log start offset.", l...),
		highWatermark: desc("partition_high_watermark", "The partition's high watermark.", l...),
		lso:           desc("partition_last_stable_offset", "The partition's last stable offset (LSO).", l...),
		logEnd:        desc("partition_log_end_offset", "The partition's log end offset.", l...),
		size:          desc("partition_size_bytes", "Bytes of the partition's segments (.log files).", l...),
	}
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, c.logStart, c.highWatermark, c.lso, c.logEnd, c.size)
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, t := range c.store.Topics() {
		for i, l := range t.Partitions {
			if l == nil {
				continue
			}
			p := strconv.Itoa(i)
			o := l.Offsets()
			gauge(ch, c.logStart, float64(o.LogStartOffset), t.Name, p)
			gauge(ch, c.highWatermark, float64(o.HighWatermark), t.Name, p)
			gauge(ch, c.lso, float64(o.LastStableOffset), t.Name, p)
			gauge(ch, c.logEnd, float64(o.LogEndOffset), t.Name, p)
			gauge(ch, c.size, float64(l.Size()), t.Name, p)
		}
	}
}

// classicGroupStates are the states a classic group is listed in, each
// reported even when no group is in it (Kafka's NumGroups<State>).
var classicGroupStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Empty"}

// groupCollector reads the groups: state, members and, for each committed
// offset, the lag behind the partition's high watermark.
type groupCollector struct {
	groups                                *coordinator.Coordinator
	store                                 *partition.Store
	count, state, members, committed, lag *prometheus.Desc
}

func newGroupCollector(groups *coordinator.Coordinator, store *partition.Store) *groupCollector {
	gp := []string{"group", "topic", "partition"}
	return &groupCollector{
		groups:    groups,
		store:     store,
		count:     desc("groups", "Groups by state.", "state"),
		state:     desc("group_state", "1 for the group's current state.", "group", "state"),
		members:   desc("group_members", "The group's members.", "group"),
		committed: desc("group_committed_offset", "The group's committed offset of the partition.", gp...),
		lag:       desc("group_lag", "The partition's high watermark less the group's committed offset (0 at the least).", gp...),
	}
}

func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, c.count, c.state, c.members, c.committed, c.lag)
}

func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts := map[string]int{}
	for _, s := range classicGroupStates {
		counts[s] = 0
	}
	for _, g := range c.groups.ListGroups(nil, nil) {
		counts[g.State]++
		gauge(ch, c.state, 1, g.Group, g.State)
		if d, found := c.groups.DescribeGroup(ctx, g.Group, 5); found {
			gauge(ch, c.members, float64(len(d.Members)), g.Group)
		}
		offsets, code := c.groups.FetchOffsets(ctx, g.Group, nil)
		if code != 0 {
			continue
		}
		for _, o := range offsets {
			if o.Offset < 0 || o.ErrorCode != 0 {
				continue
			}
			p := strconv.Itoa(int(o.Partition))
			gauge(ch, c.committed, float64(o.Offset), g.Group, o.Topic, p)
			if l, err := c.store.Log(o.Topic, o.Partition); err == nil {
				gauge(ch, c.lag, float64(max(l.Offsets().HighWatermark-o.Offset, 0)), g.Group, o.Topic, p)
			}
		}
	}
	for s, n := range counts {
		gauge(ch, c.count, float64(n), s)
	}
}

// txnStates are the transaction states Kafka's TransactionState names,
// each reported even when no transaction is in it.
var txnStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "PrepareEpochFence"}

// txnCollector counts the transactional ids by state.
type txnCollector struct {
	txns  *coordinator.TxnCoordinator
	count *prometheus.Desc
}

func newTxnCollector(txns *coordinator.TxnCoordinator) *txnCollector {
	return &txnCollector{txns: txns, count: desc("transactions", "Transactional ids by the state of their transaction.", "state")}
}

func (c *txnCollector) Describe(ch chan<- *prometheus.Desc) { describe(ch, c.count) }

func (c *txnCollector) Collect(ch chan<- prometheus.Metric) {
	list, _, code := c.txns.ListTransactions(coordinator.ListFilter{DurationMs: -1})
	if code != 0 {
		return
	}
	counts := map[string]int{}
	for _, s := range txnStates {
		counts[s] = 0
	}
	for _, t := range list {
		counts[t.TransactionState]++
	}
	for s, n := range counts {
		gauge(ch, c.count, float64(n), s)
	}
}

// cleanerCollector reads the cleaner's totals and the logs' dirty ratios.
type cleanerCollector struct {
	cl                                                  *cleaner.Cleaner
	runs, bytesRead, bytesWritten, cleanTime, deleted   *prometheus.Desc
	dirtyRatio, maxDirtyRatio, uncleanable, deadThreads *prometheus.Desc
}

func newCleanerCollector(cl *cleaner.Cleaner) *cleanerCollector {
	return &cleanerCollector{
		cl:            cl,
		runs:          desc("cleaner_runs_total", "Cleaner passes that cleaned a log."),
		bytesRead:     desc("cleaner_bytes_read_total", "Bytes the cleaner read, to build offset maps and to copy segments."),
		bytesWritten:  desc("cleaner_bytes_written_total", "Bytes the cleaner wrote to cleaned segments."),
		cleanTime:     desc("cleaner_clean_seconds_total", "Time spent in cleaner passes that cleaned a log."),
		deleted:       desc("retention_deleted_segments_total", "Segments deleted by retention (time, size, or below the log start offset)."),
		dirtyRatio:    desc("cleaner_dirty_ratio", "A compacted partition's dirty ratio: cleanable bytes over clean and cleanable bytes.", "topic", "partition"),
		maxDirtyRatio: desc("cleaner_max_dirty_ratio", "The highest dirty ratio of the compacted partitions."),
		uncleanable:   desc("cleaner_uncleanable_partitions", "Partitions whose cleaning failed and waits for a retry."),
		deadThreads:   desc("cleaner_dead_threads", "Cleaner threads stopped by a failure."),
	}
}

func (c *cleanerCollector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, c.runs, c.bytesRead, c.bytesWritten, c.cleanTime, c.deleted, c.dirtyRatio, c.maxDirtyRatio, c.uncleanable, c.deadThreads)
}

func (c *cleanerCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.cl.Metrics()
	counter(ch, c.runs, float64(m.Passes))
	counter(ch, c.bytesRead, float64(m.BytesRead))
	counter(ch, c.bytesWritten, float64(m.BytesWritten))
	counter(ch, c.cleanTime, m.CleanTime.Seconds())
	counter(ch, c.deleted, float64(m.RetentionDeletedSegments))
	gauge(ch, c.uncleanable, float64(m.UncleanablePartitions))
	gauge(ch, c.deadThreads, float64(m.DeadThreads))
	highest := 0.0
	for tp, r := range c.cl.DirtyRatios() {
		highest = max(highest, r)
		gauge(ch, c.dirtyRatio, r, tp.Topic, strconv.Itoa(int(tp.Partition)))
	}
	gauge(ch, c.maxDirtyRatio, highest)
}
