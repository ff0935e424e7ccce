package integration

// The transaction coordinator against a kgo transactional producer: commit,
// abort, fencing by a second producer with the same transactional.id, and
// a timed-out transaction aborted by the broker with its producer fenced.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnBasicConfigs make the broker look for timed-out transactions every
// 200 ms (Kafka: 10 s), so a short transaction.timeout.ms aborts quickly.
var txnBasicConfigs = []string{
	"transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
	"transaction.state.log.num.partitions=3",
	"group.initial.rebalance.delay.ms=0",
}

// basicTxnProducer returns a transactional kgo producer on topic.
func basicTxnProducer(t *testing.T, b *broker, id, topic string, timeout time.Duration) *kgo.Client {
	t.Helper()
	return b.newClient(t,
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(timeout),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
}

// basicProduceInTxn begins a transaction and produces the values synchronously.
func basicProduceInTxn(t *testing.T, ctx context.Context, cl *kgo.Client, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
}

// basicConsume writes a non-transactional sentinel to each of topic's
// parts partitions (visible to read_committed once every transaction
// before it ended), then reads from the start with the isolation level
// until every sentinel is seen, and returns the other values.
func basicConsume(t *testing.T, b *broker, topic string, parts int32, level kgo.IsolationLevel) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sentinel := fmt.Sprintf("sentinel-%d", time.Now().UnixNano())
	plain := b.newClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	for p := int32(0); p < parts; p++ {
		if err := plain.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(sentinel)}).FirstErr(); err != nil {
			t.Fatalf("sentinel: %v", err)
		}
	}
	cl := b.newClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level))
	var out []string
	seen := map[int32]bool{}
	for int32(len(seen)) < parts {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v; sentinels seen on %v", out, seen)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			switch v := string(r.Value); {
			case v == sentinel:
				seen[r.Partition] = true
			case strings.HasPrefix(v, "sentinel-"):
			default:
				out = append(out, v)
			}
		})
	}
	return out
}

// basicTxnState describes one transactional id through kadm.
func basicTxnState(t *testing.T, b *broker, id string) kadm.DescribedTransaction {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := kadm.NewClient(b.newClient(t))
	d, err := adm.DescribeTransactions(ctx, id)
	if err != nil {
		t.Fatalf("DescribeTransactions: %v", err)
	}
	got, ok := d[id]
	if !ok || got.Err != nil {
		t.Fatalf("DescribeTransactions %s: %+v", id, got)
	}
	return got
}

func TestTxnBasic(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "", txnBasicConfigs...)

	t.Run("commit and abort", func(t *testing.T) {
		const topic = "txn-basic-commit"
		b.createTopic(t, topic, 2, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p := basicTxnProducer(t, b, "basic-commit", topic, 30*time.Second)
		basicProduceInTxn(t, ctx, p, "c0", "c1", "c2", "c3")
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit: %v", err)
		}
		if s := basicTxnState(t, b, "basic-commit"); s.State != "CompleteCommit" {
			t.Fatalf("after commit: %+v", s)
		}
		basicProduceInTxn(t, ctx, p, "a0", "a1")
		if s := basicTxnState(t, b, "basic-commit"); s.State != "Ongoing" || len(s.Topics[topic]) == 0 {
			t.Fatalf("during the transaction: %+v", s)
		}
		if err := p.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Fatalf("abort: %v", err)
		}
		if s := basicTxnState(t, b, "basic-commit"); s.State != "CompleteAbort" {
			t.Fatalf("after abort: %+v", s)
		}
		if got := basicConsume(t, b, topic, 2, kgo.ReadCommitted()); len(got) != 4 {
			t.Fatalf("read_committed saw %v, want the 4 committed values", got)
		}
		if got := basicConsume(t, b, topic, 2, kgo.ReadUncommitted()); len(got) != 6 {
			t.Fatalf("read_uncommitted saw %v, want all 6 values", got)
		}
	})

	t.Run("second producer fences the first", func(t *testing.T) {
		const topic = "txn-basic-fence"
		b.createTopic(t, topic, 1, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		first := basicTxnProducer(t, b, "basic-fence", topic, 30*time.Second)
		basicProduceInTxn(t, ctx, first, "zombie")
		before := basicTxnState(t, b, "basic-fence")

		// The second producer's InitProducerId aborts the first one's
		// transaction (CONCURRENT_TRANSACTIONS, retried by kgo) and bumps
		// the epoch.
		second := basicTxnProducer(t, b, "basic-fence", topic, 30*time.Second)
		basicProduceInTxn(t, ctx, second, "winner")
		after := basicTxnState(t, b, "basic-fence")
		if after.ProducerID != before.ProducerID || after.ProducerEpoch != before.ProducerEpoch+2 {
			t.Fatalf("epoch before %d, after %d: want a bump for the fence and one for the new producer", before.ProducerEpoch, after.ProducerEpoch)
		}
		if err := first.EndTransaction(ctx, kgo.TryCommit); err == nil {
			t.Fatal("the fenced producer committed")
		}
		if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("second commit: %v", err)
		}
		got := basicConsume(t, b, topic, 1, kgo.ReadCommitted())
		if len(got) != 1 || got[0] != "winner" {
			t.Fatalf("read_committed saw %v, want only the second producer's record", got)
		}
	})

	t.Run("timed out transaction is aborted", func(t *testing.T) {
		const topic = "txn-basic-timeout"
		b.createTopic(t, topic, 1, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p := basicTxnProducer(t, b, "basic-timeout", topic, 1500*time.Millisecond)
		basicProduceInTxn(t, ctx, p, "late")
		started := basicTxnState(t, b, "basic-timeout")
		// The broker aborts it on its own within a check interval of the
		// timeout; wait for that, bounded.
		deadline := time.Now().Add(30 * time.Second)
		var s kadm.DescribedTransaction
		for s = basicTxnState(t, b, "basic-timeout"); s.State != "CompleteAbort"; s = basicTxnState(t, b, "basic-timeout") {
			if time.Now().After(deadline) {
				t.Fatalf("transaction not aborted after its timeout: %+v", s)
			}
			time.Sleep(100 * time.Millisecond) // waits on the broker's clock, not ours
		}
		if s.ProducerEpoch != started.ProducerEpoch+1 {
			t.Fatalf("epoch %d after the abort, want %d (the producer fenced)", s.ProducerEpoch, started.ProducerEpoch+1)
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err == nil {
			t.Fatal("the timed-out producer committed")
		}
		if got := basicConsume(t, b, topic, 1, kgo.ReadCommitted()); len(got) != 0 {
			t.Fatalf("read_committed saw %v of an aborted transaction", got)
		}
		if got := basicConsume(t, b, topic, 1, kgo.ReadUncommitted()); len(got) != 1 {
			t.Fatalf("read_uncommitted saw %v, want the aborted record", got)
		}
	})

	t.Run("state and producer ids survive kill -9", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		before := basicTxnState(t, b, "basic-commit")
		b = b.crashRestart(t)
		if s := basicTxnState(t, b, "basic-commit"); s.ProducerID != before.ProducerID || s.ProducerEpoch != before.ProducerEpoch || s.State != "CompleteAbort" {
			t.Fatalf("after kill -9: %+v, before %+v", s, before)
		}
		// Ids handed out before the crash came from the first block; a
		// new one comes from a block past it.
		p := basicTxnProducer(t, b, "basic-after-restart", "txn-basic-commit", 30*time.Second)
		basicProduceInTxn(t, ctx, p, "r0")
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatalf("commit after restart: %v", err)
		}
		if s := basicTxnState(t, b, "basic-after-restart"); s.ProducerID < 1000 {
			t.Fatalf("producer id %d after restart: reused from the block before the crash", s.ProducerID)
		}
		if got := basicConsume(t, b, "txn-basic-commit", 2, kgo.ReadCommitted()); len(got) != 5 {
			t.Fatalf("read_committed after restart saw %v", got)
		}
	})
}
