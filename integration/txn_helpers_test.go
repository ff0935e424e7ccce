package integration

// Helpers for the idempotence and transaction tests (txn_e2e_test.go).

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/integration/harness"
)

// txnConfigs start a broker for transaction tests: groups rebalance at once,
// short session timeouts are accepted, and timed-out transactions are looked
// for every 500 ms instead of Kafka's 10 s, so a transaction.timeout.ms of a
// few seconds aborts within a second of expiring.
var txnConfigs = append(slices.Clone(groupConfigs),
	"transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
	"transaction.state.log.num.partitions=5",
)

// envTxnBootstrap, when set to host:port, runs the transaction tests that do
// not restart the broker against that broker instead of a kcompatd they
// start: `KCOMPATD_TXN_BOOTSTRAP=127.0.0.1:9092 go test -run TestTxn` checks
// the tests' expectations against Apache Kafka (started with
// group.initial.rebalance.delay.ms=0, group.min.session.timeout.ms<=1000,
// transaction.abort.timed.out.transaction.cleanup.interval.ms=500 and
// transaction.version=1, which kcompatd serves).
const envTxnBootstrap = "KCOMPATD_TXN_BOOTSTRAP"

// external reports whether b is a broker the test did not start.
func (b *broker) external() bool { return b.opts.Binary == "" }

// txnBroker starts kcompatd with txnConfigs (plus extra), or returns the
// external broker of KCOMPATD_TXN_BOOTSTRAP when the test allows it.
func txnBroker(t testing.TB, allowExternal bool, extra ...string) *broker {
	t.Helper()
	if addr := os.Getenv(envTxnBootstrap); addr != "" {
		if !allowExternal {
			t.Skipf("%s is set and this test restarts its broker", envTxnBootstrap)
		}
		return &broker{Broker: &harness.Broker{Addr: addr}}
	}
	b := startBroker(t, "", append(slices.Clone(txnConfigs), extra...)...)
	b.requireTxnAPIs(t)
	return b
}

// requireTxnAPIs fails the test at once, instead of after a client's
// retries, when the broker does not advertise an API transactions need.
func (b *broker) requireTxnAPIs(t testing.TB) {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	have := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = true
	}
	var missing []string
	for _, k := range []int16{22, 24, 25, 26, 28} { // InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit
		if !have[k] {
			missing = append(missing, kmsg.NameForKey(k))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("the broker does not advertise %s: transactions are not served", strings.Join(missing, ", "))
	}
}

// crashRestartSamePort kills the broker with SIGKILL and starts a new one on
// the same data dir and the same port, so that clients connected before the
// crash reconnect to it as they would to a restarted Kafka broker.
func (b *broker) crashRestartSamePort(t testing.TB) *broker {
	t.Helper()
	_, portStr, err := net.SplitHostPort(b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	opts := b.opts
	opts.Port = port
	return startBrokerWith(t, opts)
}

// txnClient returns a transactional producer (ManualPartitioner) closed by
// the returned function or at the end of the test.
func (b *broker) txnClient(t testing.TB, txnID string, timeout time.Duration, opts ...kgo.Opt) (*kgo.Client, func()) {
	t.Helper()
	cl, closeCl := b.tempClient(t, append([]kgo.Opt{
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(timeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	t.Cleanup(closeCl)
	return cl, closeCl
}

// offsetsOf returns the high watermark and the last stable offset of every
// partition of topic (ListOffsets latest at read_uncommitted and at
// read_committed).
func (b *broker) offsetsOf(t testing.TB, topic string) (hw, lso map[int32]int64) {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	collect := func(what string, lo kadm.ListedOffsets, err error) map[int32]int64 {
		if err != nil {
			t.Fatalf("list %s offsets of %s: %v", what, topic, err)
		}
		out := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				t.Fatalf("list %s offsets of %s/%d: %v", what, topic, o.Partition, o.Err)
			}
			out[o.Partition] = o.Offset
		})
		return out
	}
	lo, err := adm.ListEndOffsets(ctx, topic)
	hw = collect("end", lo, err)
	lo, err = adm.ListCommittedOffsets(ctx, topic)
	lso = collect("read_committed end", lo, err)
	return hw, lso
}

// waitStable polls until every partition of topic has its last stable offset
// at its high watermark (no open transaction) and returns the high
// watermarks.
func (b *broker) waitStable(t testing.TB, topic string, timeout time.Duration) map[int32]int64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		hw, lso := b.offsetsOf(t, topic)
		stable := true
		for p, h := range hw {
			if lso[p] != h {
				stable = false
			}
		}
		if stable {
			return hw
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: last stable offsets %v never reached the high watermarks %v within %v (a transaction stayed open)", topic, lso, hw, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readTopic consumes every partition of topic from offset 0 at the given
// isolation level until each partition has delivered its record at offset
// ends[p]-1 (control records are kept for that and then dropped) and returns
// the data records per partition, in offset order. For read_committed, ends
// must not be past the last stable offsets.
func (b *broker) readTopic(t testing.TB, topic string, ends map[int32]int64, committed bool, timeout time.Duration) map[int32][]*kgo.Record {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	offsets := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p, end := range ends {
		if end > 0 {
			offsets[p] = kgo.NewOffset().At(0)
		}
	}
	out := map[int32][]*kgo.Record{}
	if len(offsets) == 0 {
		return out
	}
	cl, closeCl := b.tempClient(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(iso),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := func() bool {
		for p, end := range ends {
			if end > 0 && next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s (committed=%v): reached %v of %v before the deadline", topic, committed, next, ends)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			if r.Offset < next[r.Partition] {
				t.Fatalf("%s/%d: offset %d delivered after %d", topic, r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], r)
			}
		})
	}
	return out
}

// keysOf lists the keys of records, in order.
func keysOf(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Key)
	}
	return out
}

// abortedTxn is one aborted transaction of a Fetch response.
type abortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// rawFetchCommitted sends one Fetch at read_committed from offset 0 for
// every partition of topic and returns, per partition, the last stable
// offset and the aborted transactions the broker reported.
func (b *broker) rawFetchCommitted(t testing.TB, topic string, parts int32) (map[int32]int64, map[int32][]abortedTxn) {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	details, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, details[topic].Err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 64 << 20
	req.IsolationLevel = 1
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic // up to v12
	rt.TopicID = [16]byte(details[topic].ID)
	for p := int32(0); p < parts; p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.CurrentLeaderEpoch = -1
		rp.LastFetchedEpoch = -1
		rp.FetchOffset = 0
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = 16 << 20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	lso := map[int32]int64{}
	aborted := map[int32][]abortedTxn{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("fetch %s/%d: error code %d", topic, rp.Partition, rp.ErrorCode)
			}
			lso[rp.Partition] = rp.LastStableOffset
			var a []abortedTxn
			for _, at := range rp.AbortedTransactions {
				a = append(a, abortedTxn{ProducerID: at.ProducerID, FirstOffset: at.FirstOffset})
			}
			sort.Slice(a, func(i, j int) bool { return a[i].FirstOffset < a[j].FirstOffset })
			aborted[rp.Partition] = a
		}
	}
	return lso, aborted
}

// producerIDOf returns the producer id and epoch cl uses, initializing them
// (InitProducerId) if needed.
func producerIDOf(t testing.TB, cl *kgo.Client) (int64, int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("producer id: %v", err)
	}
	return id, epoch
}

// describeTxn describes one transactional id through kadm.
func (b *broker) describeTxn(t testing.TB, txnID string) kadm.DescribedTransaction {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := kadm.NewClient(cl).DescribeTransactions(ctx, txnID)
	if err != nil {
		t.Fatalf("describe transactions %s: %v", txnID, err)
	}
	dt, ok := d[txnID]
	if !ok {
		t.Fatalf("describe transactions: %s missing from %v", txnID, d)
	}
	if dt.Err != nil {
		t.Fatalf("describe transactions %s: %v", txnID, dt.Err)
	}
	return dt
}

// produceSync produces records and fails the test on any error, returning
// them with their offsets.
func produceSync(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return recs
}

// recs builds n records for topic/partition keyed "<tag>-<i>".
func recs(topic string, p int32, tag string, n int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("%s-%d", tag, i)), Value: []byte(tag)}
	}
	return out
}

// failures collects errors from goroutines; the test checks them at the end.
type failures struct {
	mu   sync.Mutex
	errs []error
	n    atomic.Int32
}

func (f *failures) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n.Add(1)
	if len(f.errs) < 20 {
		f.errs = append(f.errs, err)
	}
}

func (f *failures) check(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, err := range f.errs {
		t.Error(err)
	}
	if n := int(f.n.Load()); n > len(f.errs) {
		t.Errorf("... and %d more errors", n-len(f.errs))
	}
}

// reader is a consumer running in the background from offset 0 of every
// partition of a topic, collecting the keys of data records.
type reader struct {
	mu   sync.Mutex
	keys map[int32][]string
	errs failures
}

// startReader starts a reader at read_committed (committed) or
// read_uncommitted; it stops at the end of the test.
func (b *broker) startReader(t testing.TB, topic string, parts int32, committed bool) *reader {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < parts; p++ {
		offsets[p] = kgo.NewOffset().At(0)
	}
	cl, closeCl := b.tempClient(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(time.Second),
	)
	r := &reader{keys: map[int32][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) {
				if ctx.Err() == nil {
					r.errs.add(fmt.Errorf("reader: fetch %s/%d: %w", topic, p, err))
				}
			})
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) {
				r.keys[rec.Partition] = append(r.keys[rec.Partition], string(rec.Key))
			})
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		closeCl()
	})
	return r
}

// waitFor waits until the reader has exactly want[p] on every partition p,
// failing the test if it got something else or nothing more within timeout.
func (r *reader) waitFor(t testing.TB, want [][]string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r.errs.check(t)
		r.mu.Lock()
		same := true
		for p, w := range want {
			got := r.keys[int32(p)]
			if len(got) > len(w) || !slices.Equal(got, w[:len(got)]) {
				r.mu.Unlock()
				t.Fatalf("the live reader got %v on partition %d, want %v", got, p, w)
			}
			if len(got) < len(w) {
				same = false
			}
		}
		got := fmt.Sprint(r.keys)
		r.mu.Unlock()
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live reader got %s within %v, want %v", got, timeout, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
