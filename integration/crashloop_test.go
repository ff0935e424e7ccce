package integration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
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

// The crash loop's size. `make test` runs the defaults (10 kills under each
// of two flush policies); `make soak` passes hundreds.
var (
	crashKills = flag.Int("crashloop.kills", 10, "TestCrashLoop: kill -9s per flush policy (including those during start-up)")
	crashTime  = flag.Duration("crashloop.time", 50*time.Second, "TestCrashLoop: time budget per flush policy; the loop stops early when it is spent")
	crashSeed  = flag.Uint64("crashloop.seed", 0, "TestCrashLoop: random seed (0 picks one from the clock; the test logs it)")
)

// Crash loop topics. plain is a delete-policy topic whose offsets must stay
// contiguous; compacted is cleaned continuously, so that kills land during
// the cleaner's swap; txn gets transactions when the broker supports them.
const (
	clPlain     = "plain"
	clCompacted = "compacted"
	clTxn       = "txn"
	clEOS       = "eos-out" // consume-transform-produce output
	clEOSGroup  = "crashloop-eos"
	clGroup     = "crashloop-group"
	clPlainN    = 4
	clCompactN  = 3
	clTxnN      = 2
	clKeys      = 30 // distinct keys per compacted partition
)

// crashLoopConfigs make segments roll every few hundred records, index
// entries frequent, and the cleaner run almost without pause.
var crashLoopConfigs = []string{
	"kcompatd.log.internal.segment.bytes=65536",
	"log.index.interval.bytes=512",
	"log.cleaner.backoff.ms=20",
	"group.initial.rebalance.delay.ms=0",
	"group.min.session.timeout.ms=1000",
	"offsets.topic.num.partitions=3",
}

// TestCrashLoop produces with acks=all to plain and compacted topics, commits
// group offsets and (when the broker advertises the transaction APIs) runs
// transactions, kills the broker with SIGKILL at a random instant, restarts
// it on the same data dir and verifies: the broker starts and answers; every
// acknowledged record is readable at its acknowledged offset with its key and
// value, or, on the compacted topic, compacted away behind a later record
// with the same key; the plain topic's offsets are contiguous and hold only
// records that were sent; the group's committed offsets are the last
// acknowledged commit (or one whose answer the kill cut off); no transaction
// is partly visible to read_committed, an acknowledged commit is wholly
// visible and an acknowledged abort not at all. A killed process leaves the
// page cache behind, so this holds under the default flush policy as well as
// with an fsync per message. The random seed is logged; -crashloop.seed
// replays a run's kill instants (the broker's own timing still varies).
func TestCrashLoop(t *testing.T) {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("crash loop seed %d (replay with -crashloop.seed=%d)", seed, seed)
	var total crashStats
	for i, tc := range []struct {
		name    string
		configs []string
	}{
		{"default flush", nil},
		{"flush every message", []string{"log.flush.interval.messages=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCrashLoop(t, seed+uint64(i), append(append([]string{}, crashLoopConfigs...), tc.configs...))
			cl.run(t, *crashKills, *crashTime)
			total.add(cl.stats)
			t.Logf("crash loop %q: %s", tc.name, cl.stats)
		})
	}
	t.Logf("crash loop total: %s", total)
}

type crashStats struct {
	kills, records, commits, txns int64
	eosRecords                    int64 // consume-transform-produce copies checked
	startupKills                  int64 // kills before the broker served (during recovery)
	plainAcked, compactedAcked    int64
}

func (s *crashStats) add(o crashStats) {
	s.kills += o.kills
	s.records += o.records
	s.commits += o.commits
	s.txns += o.txns
	s.eosRecords += o.eosRecords
	s.startupKills += o.startupKills
	s.plainAcked += o.plainAcked
	s.compactedAcked += o.compactedAcked
}

func (s crashStats) String() string {
	return fmt.Sprintf("%d kills survived (%d of them during start-up), %d record checks (of %d acknowledged plain and %d acknowledged compacted records), %d group commits verified, %d transactions verified, %d exactly-once copies checked",
		s.kills, s.startupKills, s.records, s.plainAcked, s.compactedAcked, s.commits, s.txns, s.eosRecords)
}

// crashLoop is the state that outlives broker processes: what was
// acknowledged, and what was sent without an answer.
type crashLoop struct {
	rng     *rand.Rand
	configs []string
	dataDir string
	stats   crashStats
	txnOK   bool // the broker advertises the transaction APIs

	// plainAcked[p][offset] is the key acknowledged at offset.
	plainAcked [clPlainN]map[int64]string
	// plainVerified[p] is the high watermark the last check read up to.
	plainVerified [clPlainN]int64
	// compactedAcked[p][offset] is the value acknowledged at offset.
	compactedAcked [clCompactN]map[int64]string
	// lastCommit[p] is the last acknowledged committed offset (-1: none);
	// maybeCommit[p] holds commits sent since whose answer never came.
	lastCommit  [clPlainN]int64
	maybeCommit [clPlainN][]int64
	// txns are the transactions run so far, by id.
	txns []txnRecord
	// eosCommitted[p] is the EOS group's committed offset for plain/p at
	// the last check.
	eosCommitted [clPlainN]int64
	// txnFrom and eosFrom are, per partition, the offset after the last
	// check's sentinel: an incremental check reads from there. txnChecked
	// is the number of transactions settled by the last check.
	txnFrom, eosFrom [clTxnN]int64
	txnChecked       int
	version          atomic.Int64 // compacted values' counter, unique across runs
}

type txnOutcome int

const (
	txnOpen        txnOutcome = iota // EndTxn never sent: must be aborted
	txnCommitted                     // EndTxn(commit) acknowledged
	txnAborted                       // EndTxn(abort) acknowledged
	txnUnknown                       // EndTxn sent, no answer: all or nothing
	txnAbortUnsure                   // EndTxn(abort) sent, no answer
)

type txnRecord struct {
	records int // records produced in it (sent, acknowledged or not)
	outcome txnOutcome
}

func newCrashLoop(t *testing.T, seed uint64, configs []string) *crashLoop {
	c := &crashLoop{
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		configs: configs,
		dataDir: t.TempDir(),
	}
	for p := range c.plainAcked {
		c.plainAcked[p] = map[int64]string{}
		c.lastCommit[p] = -1
	}
	for p := range c.compactedAcked {
		c.compactedAcked[p] = map[int64]string{}
	}
	return c
}

// quietClient is tempClient logging only kgo's errors: kills make the
// clients' warnings a flood.
func (b *broker) quietClient(t testing.TB, opts ...kgo.Opt) (*kgo.Client, func()) {
	t.Helper()
	done := new(atomic.Bool)
	opts = append(opts,
		kgo.WithLogger(testLogger{t: t, level: kgo.LogLevelError, done: done}),
		kgo.RetryTimeout(5*time.Second),
	)
	cl, closeFn := b.tempClient(t, opts...)
	return cl, func() { closeFn(); done.Store(true) }
}

func (c *crashLoop) run(t *testing.T, kills int, budget time.Duration) {
	deadline := time.Now().Add(budget)
	b := startBroker(t, c.dataDir, c.configs...)
	b.createTopic(t, clPlain, clPlainN, nil)
	b.createTopic(t, clCompacted, clCompactN, map[string]*string{
		"cleanup.policy":            strPtr("compact"),
		"internal.segment.bytes":    strPtr("16384"),
		"segment.ms":                strPtr("200"),
		"min.cleanable.dirty.ratio": strPtr("0.01"),
	})
	c.txnOK = b.supportsAll(t, 22, 24, 25, 26, 28)
	if c.txnOK {
		b.createTopic(t, clTxn, clTxnN, nil)
		b.createTopic(t, clEOS, clTxnN, nil)
		t.Log("broker advertises InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit: running transactions")
	} else {
		t.Log("broker does not advertise the transaction APIs: no transactions in this run")
	}
	for k := 1; c.stats.kills < int64(kills); k++ {
		if time.Now().After(deadline) {
			t.Logf("time budget of %v spent after %d kills", budget, c.stats.kills)
			break
		}
		// Kill instants: mostly within the first second (recovery just
		// done, segments rolling), some later, when the cleaner has had
		// time to start on the new dirty segments.
		var delay time.Duration
		switch c.rng.IntN(4) {
		case 0:
			delay = time.Duration(c.rng.IntN(100)) * time.Millisecond
		case 1, 2:
			delay = time.Duration(100+c.rng.IntN(900)) * time.Millisecond
		default:
			delay = time.Duration(1000+c.rng.IntN(2000)) * time.Millisecond
		}
		c.work(t, b, delay)
		pid := b.PID()
		if s := b.Suspicious(); s != "" {
			t.Fatalf("kill %d: broker output contains %q before the kill:\n%s", k, s, b.Output())
		}
		c.stats.kills++
		// Now and then a second kill lands while the broker recovers
		// (before it serves): recovery itself must be crash-safe.
		if c.rng.IntN(4) == 0 && c.stats.kills < int64(kills) {
			c.killDuringStartup(t, time.Duration(5+c.rng.IntN(150))*time.Millisecond)
		}
		b = startBroker(t, c.dataDir, c.configs...)
		full := k%25 == 0 || c.stats.kills >= int64(kills) || time.Now().After(deadline)
		c.verify(t, b, full)
		if t.Failed() {
			t.Fatalf("kill %d (pid %d, %v after start) lost or corrupted data; seed above", k, pid, delay)
		}
	}
	// A last full check after a clean shutdown and restart.
	b = b.restart(t)
	c.verify(t, b, true)
	for p := range c.plainAcked {
		c.stats.plainAcked += int64(len(c.plainAcked[p]))
	}
	for p := range c.compactedAcked {
		c.stats.compactedAcked += int64(len(c.compactedAcked[p]))
	}
	if err := b.Stop(30 * time.Second); err != nil {
		t.Errorf("clean shutdown after the loop: %v", err)
	}
}

// killDuringStartup starts the broker on the loop's data dir and kills it
// after wait, whether or not it serves by then (harness.Start kills a broker
// that has not served within StartTimeout).
func (c *crashLoop) killDuringStartup(t *testing.T, wait time.Duration) {
	t.Helper()
	hb, err := harness.Start(harness.Options{
		Binary:       kcompatdBinary,
		DataDir:      c.dataDir,
		Configs:      c.configs,
		Logf:         t.Logf,
		StartTimeout: wait,
	})
	if err == nil {
		// It served within wait: kill it at once.
		if err := hb.Kill(); err != nil {
			t.Fatal(err)
		}
		if s := hb.Suspicious(); s != "" {
			t.Fatalf("broker output contains %q:\n%s", s, hb.Output())
		}
		c.stats.kills++
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, "did not log") {
		t.Fatalf("broker failed to start (not killed by the test): %v", err)
	}
	for _, s := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
		if strings.Contains(msg, s) {
			t.Fatalf("broker output contains %q: %v", s, err)
		}
	}
	c.stats.kills++
	c.stats.startupKills++
}

// supportsAll reports whether ApiVersions lists every key.
func (b *broker) supportsAll(t testing.TB, keys ...int16) bool {
	t.Helper()
	for _, k := range keys {
		if !b.supports(t, k) {
			return false
		}
	}
	return true
}

// work runs the producers, the group consumer and the transactions for
// delay, then kills the broker and waits until every client has given up.
func (c *crashLoop) work(t *testing.T, b *broker, delay time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var closers []func()
	var mu sync.Mutex // guards c's maps while the goroutines run
	// Producers pace themselves (a burst, then a pause) so that they are
	// still producing when the kill comes, up to a few seconds in, while
	// the data a run adds stays bounded.
	limit := scale(4000)
	pace := func(i int) {
		if i%20 == 19 {
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Plain topic: keys name the run, partition and sequence number; the
	// value follows from the key.
	prodOpts := append(b.producerOpts(t),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(500),
	)
	run := c.stats.kills
	plain, closePlain := b.quietClient(t, prodOpts...)
	closers = append(closers, closePlain)
	var promises sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < limit && ctx.Err() == nil; i++ {
			p := int32(i % clPlainN)
			key := fmt.Sprintf("r%d-p%d-s%d", run, p, i)
			pace(i)
			promises.Add(1)
			plain.Produce(ctx, &kgo.Record{Topic: clPlain, Partition: p, Key: []byte(key), Value: plainValue(key)},
				func(r *kgo.Record, err error) {
					defer promises.Done()
					if err != nil {
						return
					}
					mu.Lock()
					c.plainAcked[r.Partition][r.Offset] = key
					mu.Unlock()
				})
		}
	}()

	// Compacted topic: few keys, each value unique.
	compacted, closeCompacted := b.quietClient(t, prodOpts...)
	closers = append(closers, closeCompacted)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < limit && ctx.Err() == nil; i++ {
			p := int32(i % clCompactN)
			v := c.version.Add(1)
			pace(i)
			key := fmt.Sprintf("k%02d", (i/clCompactN*7+int(v))%clKeys)
			val := compactedValue(key, v)
			promises.Add(1)
			compacted.Produce(ctx, &kgo.Record{Topic: clCompacted, Partition: p, Key: []byte(key), Value: []byte(val)},
				func(r *kgo.Record, err error) {
					defer promises.Done()
					if err != nil {
						return
					}
					mu.Lock()
					c.compactedAcked[r.Partition][r.Offset] = val
					mu.Unlock()
				})
		}
	}()

	// A group member reading the plain topic, committing after each poll.
	// A static member: the restarted broker's group still lists the
	// killed run's member, which the same instance id replaces at once
	// (a new dynamic member would wait out its session timeout).
	consumer, closeConsumer := b.quietClient(t, append(groupOpts(clGroup, clPlain),
		kgo.InstanceID("crashloop-member"),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))...)
	closers = append(closers, closeConsumer)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			fs := consumer.PollFetches(ctx)
			offsets := map[int32]kgo.EpochOffset{}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Topic == clPlain {
					offsets[r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
				}
			})
			if len(offsets) == 0 || ctx.Err() != nil {
				continue
			}
			mu.Lock()
			for p, o := range offsets {
				c.maybeCommit[p] = append(c.maybeCommit[p], o.Offset)
			}
			mu.Unlock()
			consumer.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{clPlain: offsets},
				func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
					if err != nil {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					for _, rt := range resp.Topics {
						for _, rp := range rt.Partitions {
							if rp.ErrorCode != 0 || rt.Topic != clPlain {
								continue
							}
							o, ok := offsets[rp.Partition]
							if !ok {
								continue
							}
							// Acknowledged: earlier unanswered commits
							// are superseded.
							c.lastCommit[rp.Partition] = o.Offset
							c.maybeCommit[rp.Partition] = nil
						}
					}
				})
		}
	}()

	if c.txnOK {
		txn, closeTxn := b.quietClient(t, c.txnOpts()...)
		closers = append(closers, closeTxn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < limit/20 && ctx.Err() == nil; n++ {
				c.runTxn(ctx, txn, &mu)
			}
		}()
		eos, err := kgo.NewGroupTransactSession(append(c.eosOpts(b),
			kgo.ConsumerGroup(clEOSGroup),
			kgo.ConsumeTopics(clPlain),
			kgo.InstanceID("crashloop-eos-member"),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.SessionTimeout(6*time.Second),
			kgo.RebalanceTimeout(10*time.Second),
			kgo.FetchMaxWait(100*time.Millisecond),
			kgo.FetchMaxBytes(64<<10),
		)...)
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, eos.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			runEOS(ctx, eos)
		}()
	}

	time.Sleep(delay)
	select {
	case <-b.Exited():
		t.Fatalf("the broker exited on its own before the kill:\n%s", b.Output())
	default:
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	// Answers already in the clients' socket buffers are real ones; none
	// can come after this point.
	cancel()
	// Closing fails what the clients still buffer: a transactional
	// producer ignores its records' contexts, so only this ends its
	// ProduceSync. The clients close in parallel, each retrying against
	// the dead broker for at most its retry timeout.
	var closing sync.WaitGroup
	for _, f := range closers {
		closing.Go(f)
	}
	closing.Wait()
	wg.Wait()
	done := make(chan struct{})
	go func() { promises.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("record promises did not all run after the clients closed")
	}
}

// plainValue is the value stored under a plain topic key: derived from it,
// with a length that varies so that batches end at varying file positions.
func plainValue(key string) []byte {
	h := 0
	for _, c := range key {
		h = h*31 + int(c)
	}
	n := 40 + (h&0x7fffffff)%400
	v := make([]byte, 0, n)
	v = append(v, key...)
	v = append(v, '|')
	for len(v) < n {
		v = append(v, byte('a'+len(v)%26))
	}
	return v
}

func compactedValue(key string, version int64) string {
	return fmt.Sprintf("%s|v%d|%s", key, version, strings.Repeat("c", int(version%200)))
}

func (c *crashLoop) txnOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID("crashloop-txn"),
		kgo.TransactionTimeout(10 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(clTxn),
	}
}

// eosOpts are the options of the consume-transform-produce client.
func (c *crashLoop) eosOpts(b *broker) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.TransactionalID("crashloop-eos"),
		kgo.TransactionTimeout(10 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(clEOS),
		kgo.RetryTimeout(5 * time.Second),
	}
}

// runEOS copies the plain topic to eos-out in transactions that also
// commit the group's offsets (TxnOffsetCommit): a copy's key is the input
// partition and offset, its value the input key.
func runEOS(ctx context.Context, s *kgo.GroupTransactSession) {
	for ctx.Err() == nil {
		fs := s.PollFetches(ctx)
		if fs.NumRecords() == 0 || ctx.Err() != nil {
			continue
		}
		if err := s.Begin(); err != nil {
			return
		}
		var out []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, &kgo.Record{
				Partition: r.Partition % clTxnN,
				Key:       fmt.Appendf(nil, "%d:%d", r.Partition, r.Offset),
				Value:     r.Key,
			})
		})
		s.ProduceSync(ctx, out...) // a failure makes End abort
		if _, err := s.End(ctx, kgo.TryCommit); err != nil {
			return
		}
	}
}

// runTxn runs one transaction of a few records over both txn partitions,
// committing or aborting it at random, and records what was acknowledged.
// Values are "t<id>-<i>/<n>".
func (c *crashLoop) runTxn(ctx context.Context, cl *kgo.Client, mu *sync.Mutex) {
	mu.Lock()
	id := len(c.txns)
	n := 1 + c.rng.IntN(8)
	commit := c.rng.IntN(3) != 0
	c.txns = append(c.txns, txnRecord{records: n, outcome: txnOpen})
	mu.Unlock()
	set := func(o txnOutcome) {
		mu.Lock()
		c.txns[id].outcome = o
		mu.Unlock()
	}
	if err := cl.BeginTransaction(); err != nil {
		return
	}
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Partition: int32(i % clTxnN), Value: fmt.Appendf(nil, "t%d-%d/%d", id, i, n)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		commit = false
	}
	want, unsure := txnCommitted, txnUnknown
	how := kgo.TryCommit
	if !commit {
		want, unsure, how = txnAborted, txnAbortUnsure, kgo.TryAbort
	}
	set(unsure)
	if err := cl.EndTransaction(ctx, how); err != nil {
		return
	}
	set(want)
}

// verify checks the restarted broker against everything acknowledged; full
// reads the plain topic from offset 0, otherwise from where the last check
// ended.
func (c *crashLoop) verify(t *testing.T, b *broker, full bool) {
	t.Helper()
	c.verifyPlain(t, b, full)
	c.verifyCompacted(t, b)
	c.verifyCommits(t, b)
	if c.txnOK {
		c.verifyTxns(t, b, full)
		c.verifyEOS(t, b, full)
	}
}

// verifyEOS fences the consume-transform-produce transactional id (which
// aborts a transaction the kill left open), commits a sentinel to each
// eos-out partition, and checks exactly once: the copies visible to
// read_committed are exactly the plain records below the group's committed
// offsets, each once.
func (c *crashLoop) verifyEOS(t *testing.T, b *broker, full bool) {
	t.Helper()
	cl, closeCl := b.quietClient(t, c.eosOpts(b)...)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Errorf("eos sentinel: begin: %v", err)
		return
	}
	var recs []*kgo.Record
	for i := range clTxnN {
		recs = append(recs, &kgo.Record{Partition: int32(i), Key: []byte("sentinel")})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Errorf("eos sentinel: produce: %v", err)
		return
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Errorf("eos sentinel: commit: %v", err)
		return
	}
	committed, err := kadm.NewClient(cl).FetchOffsets(ctx, clEOSGroup)
	if err != nil {
		t.Errorf("fetch offsets of %s: %v", clEOSGroup, err)
		return
	}
	// An incremental check reads the copies after the last check's
	// sentinels: exactly the input records between the committed offsets
	// then and now.
	var upTo, since [clPlainN]int64
	for p := range int32(clPlainN) {
		if !full {
			since[p] = c.eosCommitted[p]
		}
		if o, ok := committed.Lookup(clPlain, p); ok && o.Err == nil && o.At >= 0 {
			upTo[p] = o.At
		}
		if upTo[p] < c.eosCommitted[p] {
			t.Errorf("group %s, %s/%d: committed offset went back from %d to %d", clEOSGroup, clPlain, p, c.eosCommitted[p], upTo[p])
		}
		c.eosCommitted[p] = upTo[p]
	}
	from, to := map[int32]int64{}, map[int32]int64{}
	for _, r := range recs {
		from[r.Partition], to[r.Partition] = c.eosFrom[r.Partition], r.Offset+1
		if full {
			from[r.Partition] = 0
		}
	}
	got := readRange(t, b, clEOS, from, to, true)
	for p, o := range to {
		c.eosFrom[p] = o
	}
	var copies [clPlainN]map[int64]int
	for p := range copies {
		copies[p] = map[int64]int{}
	}
	for _, rs := range got {
		for _, r := range rs {
			if string(r.Key) == "sentinel" {
				continue
			}
			var ip int32
			var io int64
			if _, err := fmt.Sscanf(string(r.Key), "%d:%d", &ip, &io); err != nil || ip < 0 || ip >= clPlainN {
				t.Errorf("%s/%d offset %d: unexpected key %q", clEOS, r.Partition, r.Offset, r.Key)
				return
			}
			copies[ip][io]++
			if want, ok := c.plainAcked[ip][io]; ok && want != string(r.Value) {
				t.Errorf("%s/%d offset %d: copy of %s/%d offset %d holds %q, but %q was acknowledged there", clEOS, r.Partition, r.Offset, clPlain, ip, io, r.Value, want)
			}
		}
	}
	for p := range int32(clPlainN) {
		for o, n := range copies[p] {
			if o >= upTo[p] {
				t.Errorf("exactly once: %s/%d offset %d was copied (visible to read_committed) but the group's committed offset is %d", clPlain, p, o, upTo[p])
			} else if o < since[p] {
				t.Errorf("exactly once: %s/%d offset %d was copied again after the committed offset passed it (%d at the last check)", clPlain, p, o, since[p])
			} else if n != 1 {
				t.Errorf("exactly once: %s/%d offset %d was copied %d times", clPlain, p, o, n)
			}
		}
		if int64(len(copies[p])) != upTo[p]-since[p] {
			for o := since[p]; o < upTo[p]; o++ {
				if copies[p][o] == 0 {
					t.Errorf("exactly once: %s/%d offset %d is below the committed offset %d but was never copied", clPlain, p, o, upTo[p])
					break
				}
			}
		}
		c.stats.eosRecords += int64(len(copies[p]))
	}
}

func (c *crashLoop) verifyPlain(t *testing.T, b *broker, full bool) {
	t.Helper()
	ends := b.endOffsets(t, clPlain)
	from, to := map[int32]int64{}, map[int32]int64{}
	for p := range int32(clPlainN) {
		var maxAcked int64 = -1
		for o := range c.plainAcked[p] {
			maxAcked = max(maxAcked, o)
		}
		if ends[p] <= maxAcked {
			t.Errorf("%s/%d: high watermark %d after restart, but offset %d was acknowledged", clPlain, p, ends[p], maxAcked)
		}
		if ends[p] < c.plainVerified[p] {
			t.Errorf("%s/%d: high watermark %d after restart, below the %d already verified", clPlain, p, ends[p], c.plainVerified[p])
		}
		from[p], to[p] = c.plainVerified[p], ends[p]
		if full {
			from[p] = 0
		}
	}
	if t.Failed() {
		return
	}
	got := readRange(t, b, clPlain, from, to, false)
	// With idempotence (the broker advertises InitProducerId), a key is
	// never written twice: a retried batch is deduplicated. Keys name
	// their run, and a run's records all lie in the range read.
	idempotent := c.txnOK || b.supports(t, 22)
	for p := range int32(clPlainN) {
		next := from[p]
		keys := map[string]int64{}
		for _, r := range got[p] {
			if r.Offset != next {
				t.Errorf("%s/%d: offset %d follows %d (offsets must be contiguous)", clPlain, p, r.Offset, next-1)
				return
			}
			next++
			key := string(r.Key)
			if string(r.Value) != string(plainValue(key)) {
				t.Errorf("%s/%d offset %d: key %q with value %.60q..., which is not that key's value", clPlain, p, r.Offset, key, r.Value)
				return
			}
			if !strings.Contains(key, fmt.Sprintf("-p%d-", p)) {
				t.Errorf("%s/%d offset %d: key %q was sent to another partition", clPlain, p, r.Offset, key)
				return
			}
			if o, dup := keys[key]; dup && idempotent {
				t.Errorf("%s/%d: key %q at offsets %d and %d: an idempotent producer's record was written twice", clPlain, p, key, o, r.Offset)
				return
			}
			keys[key] = r.Offset
			if want, ok := c.plainAcked[p][r.Offset]; ok {
				if want != key {
					t.Errorf("%s/%d offset %d: key %q, but %q was acknowledged there", clPlain, p, r.Offset, key, want)
					return
				}
				c.stats.records++
			}
		}
		if next != to[p] {
			t.Errorf("%s/%d: read up to offset %d, high watermark %d", clPlain, p, next, to[p])
		}
		c.plainVerified[p] = to[p]
	}
}

func (c *crashLoop) verifyCompacted(t *testing.T, b *broker) {
	t.Helper()
	ends := b.endOffsets(t, clCompacted)
	from := map[int32]int64{}
	for p := range int32(clCompactN) {
		from[p] = 0
		var maxAcked int64 = -1
		for o := range c.compactedAcked[p] {
			maxAcked = max(maxAcked, o)
		}
		if ends[p] <= maxAcked {
			t.Errorf("%s/%d: high watermark %d after restart, but offset %d was acknowledged", clCompacted, p, ends[p], maxAcked)
		}
	}
	if t.Failed() {
		return
	}
	got := readRange(t, b, clCompacted, from, ends, false)
	for p := range int32(clCompactN) {
		at := map[int64]string{}
		lastOfKey := map[string]int64{}
		prev := int64(-1)
		for _, r := range got[p] {
			if r.Offset <= prev {
				t.Errorf("%s/%d: offset %d after %d", clCompacted, p, r.Offset, prev)
				return
			}
			prev = r.Offset
			key, val := string(r.Key), string(r.Value)
			if !strings.HasPrefix(val, key+"|v") {
				t.Errorf("%s/%d offset %d: key %q with value %.60q", clCompacted, p, r.Offset, key, val)
				return
			}
			at[r.Offset] = val
			lastOfKey[key] = r.Offset
		}
		for o, want := range c.compactedAcked[p] {
			c.stats.records++
			if v, ok := at[o]; ok {
				if v != want {
					t.Errorf("%s/%d offset %d: value %.60q, but %.60q was acknowledged there", clCompacted, p, o, v, want)
				}
				continue
			}
			key, _, _ := strings.Cut(want, "|")
			if lastOfKey[key] <= o {
				t.Errorf("%s/%d: acknowledged offset %d (key %s) is gone and no later record of its key is left (latest at %d)", clCompacted, p, o, key, lastOfKey[key])
			}
		}
	}
}

func (c *crashLoop) verifyCommits(t *testing.T, b *broker) {
	t.Helper()
	cl, closeCl := b.quietClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).FetchOffsets(ctx, clGroup)
	if err != nil {
		t.Errorf("fetch offsets of %s: %v", clGroup, err)
		return
	}
	for p := range int32(clPlainN) {
		got := int64(-1)
		if o, ok := resp.Lookup(clPlain, p); ok {
			if o.Err != nil {
				t.Errorf("fetch offsets %s/%d: %v", clPlain, p, o.Err)
				continue
			}
			got = o.At
		}
		ok := got == c.lastCommit[p]
		for _, m := range c.maybeCommit[p] {
			ok = ok || got == m
		}
		if !ok {
			t.Errorf("group %s, %s/%d: committed offset %d after restart, but the last acknowledged commit was %d (unanswered since: %v)",
				clGroup, clPlain, p, got, c.lastCommit[p], c.maybeCommit[p])
			continue
		}
		if c.lastCommit[p] >= 0 || len(c.maybeCommit[p]) > 0 {
			c.stats.commits++
		}
		c.lastCommit[p] = got
		c.maybeCommit[p] = nil
	}
}

// verifyTxns starts a new transactional producer with the same
// transactional id, which fences (and so aborts) a transaction the kill left
// open, commits a sentinel transaction, and reads the txn topic with
// read_committed up to the sentinels.
func (c *crashLoop) verifyTxns(t *testing.T, b *broker, full bool) {
	t.Helper()
	cl, closeCl := b.quietClient(t, c.txnOpts()...)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := len(c.txns)
	c.txns = append(c.txns, txnRecord{records: clTxnN, outcome: txnUnknown})
	if err := cl.BeginTransaction(); err != nil {
		t.Errorf("sentinel transaction: begin: %v", err)
		return
	}
	var recs []*kgo.Record
	for i := range clTxnN {
		recs = append(recs, &kgo.Record{Partition: int32(i), Value: fmt.Appendf(nil, "t%d-%d/%d", id, i, clTxnN)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Errorf("sentinel transaction: produce: %v", err)
		return
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Errorf("sentinel transaction: commit: %v", err)
		return
	}
	c.txns[id].outcome = txnCommitted
	// Transactions settled by an earlier check have their records before
	// that check's sentinels; an incremental check reads what follows.
	from, to := map[int32]int64{}, map[int32]int64{}
	firstTxn := c.txnChecked
	for _, r := range recs {
		from[r.Partition], to[r.Partition] = c.txnFrom[r.Partition], r.Offset+1
		if full {
			from[r.Partition] = 0
		}
	}
	if full {
		firstTxn = 0
	}
	got := readRange(t, b, clTxn, from, to, true)
	seen := make([]int, len(c.txns))
	for _, rs := range got {
		for _, r := range rs {
			tid, ok := parseTxnValue(r.Value)
			if !ok || tid >= len(c.txns) {
				t.Errorf("%s/%d offset %d: unexpected value %q", clTxn, r.Partition, r.Offset, r.Value)
				return
			}
			seen[tid]++
		}
	}
	for tid, tx := range c.txns {
		if tid < firstTxn {
			if seen[tid] != 0 {
				t.Errorf("transaction %d, settled at an earlier check, has %d records after that check's sentinel", tid, seen[tid])
			}
			continue
		}
		n := seen[tid]
		switch {
		case tx.outcome == txnCommitted && n != tx.records:
			t.Errorf("transaction %d: commit acknowledged, but %d of its %d records are visible to read_committed", tid, n, tx.records)
		case (tx.outcome == txnAborted || tx.outcome == txnOpen || tx.outcome == txnAbortUnsure) && n != 0:
			t.Errorf("transaction %d (outcome %d: aborted or never committed): %d of its %d records are visible to read_committed", tid, tx.outcome, n, tx.records)
		case tx.outcome == txnUnknown && n != 0 && n != tx.records:
			t.Errorf("transaction %d: %d of its %d records are visible to read_committed (half-visible)", tid, n, tx.records)
		}
		// An unanswered commit is settled now: later checks expect the
		// same answer.
		if tx.outcome == txnUnknown {
			if n == 0 {
				c.txns[tid].outcome = txnAborted
			} else {
				c.txns[tid].outcome = txnCommitted
			}
		}
		if tx.outcome == txnOpen || tx.outcome == txnAbortUnsure {
			c.txns[tid].outcome = txnAborted
		}
	}
	c.stats.txns = int64(len(c.txns))
	c.txnChecked = len(c.txns)
	for p, o := range to {
		c.txnFrom[p] = o
	}
}

func parseTxnValue(v []byte) (int, bool) {
	s, ok := strings.CutPrefix(string(v), "t")
	if !ok {
		return 0, false
	}
	s, _, ok = strings.Cut(s, "-")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(s)
	return id, err == nil
}

// readRange reads each partition of topic from from[p] until it has seen
// offset to[p]-1 (which must exist: the last offset of a plain or compacted
// partition, a sentinel in the txn topic) and returns the records below
// to[p], in order.
func readRange(t *testing.T, b *broker, topic string, from, to map[int32]int64, readCommitted bool) map[int32][]*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p, f := range from {
		if f < to[p] {
			offsets[p] = kgo.NewOffset().At(f)
		}
	}
	out := map[int32][]*kgo.Record{}
	if len(offsets) == 0 {
		return out
	}
	opts := []kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}
	if readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, closeCl := b.quietClient(t, opts...)
	defer closeCl()
	// Bounded by progress: a minute without a record fails, whatever the
	// size of the log.
	pending := len(offsets)
	last := map[int32]int64{}
	for pending > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		fs := cl.PollFetches(ctx)
		cancel()
		if ctx.Err() != nil && fs.NumRecords() == 0 {
			t.Fatalf("reading %s: no record for a minute; read up to %v, want up to %v", topic, last, to)
		}
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("fetch %s/%d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			t.Fatal(ferr)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end := to[r.Partition]
			if r.Offset >= end {
				return
			}
			out[r.Partition] = append(out[r.Partition], r)
			last[r.Partition] = r.Offset
			if r.Offset == end-1 {
				pending--
			}
		})
	}
	return out
}
