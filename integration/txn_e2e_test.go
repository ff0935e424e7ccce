package integration

// End-to-end tests of idempotent producers and transactions (issue 4's
// "Done when"): exactly-once consume-transform-produce with kgo's
// GroupTransactSession across member restarts, read_committed versus
// read_uncommitted visibility of aborted records, transactions across a
// kill -9 of the broker, and timed-out or zombie producers being fenced.
// Each is bounded to a few minutes through short transaction and session
// timeouts (txnConfigs).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// eosTransform is the "transform" of the consume-transform-produce loop.
func eosTransform(v []byte) []byte { return append([]byte("t:"), v...) }

// eosRun is one consume-transform-produce run: members move records from in
// to out, each input partition's records to the same output partition.
type eosRun struct {
	t          *testing.T
	b          *broker
	in, out    string
	group      string
	n          int64         // records to move
	txnTimeout time.Duration // members' transaction.timeout.ms

	committed atomic.Int64 // records in committed transactions
	commits   atomic.Int64
	aborts    atomic.Int64
	abandoned atomic.Int64 // records left in transactions that were never ended
	abandons  atomic.Int32 // transactions abandoned
	// allowed holds members back (they stop polling) once this many
	// records are committed, so that the planned restarts happen at
	// their points of the run however fast the broker is.
	allowed     atomic.Int64
	done        chan struct{}
	doneOnce    sync.Once
	errs        failures
	memberCount atomic.Int32
	// tolerant: a member whose transaction fails (the broker was killed
	// under it) logs the error and exits, marked failed, instead of
	// failing the test; the test replaces it.
	tolerant bool
	failed   atomic.Int32 // members that exited failing, in tolerant mode

	// Kills under the members (TestTxnGroupTransactSessionAcrossBrokerKill):
	// killMid makes the next member that has written a transaction's
	// records ask for a kill on killReq (and wait for the restart) before
	// ending it; killOnEndTxn makes the next EndTxn written kill the broker
	// (brokerPID) from kgo's hook. midTxnOutcome reports how the
	// transaction that spanned a killMid kill ended.
	killMid       atomic.Bool
	killReq       chan chan struct{}
	killOnEndTxn  atomic.Bool
	brokerPID     atomic.Int64
	midTxnOutcome chan string
	// explicitAdds counts AddPartitionsToTxn and AddOffsetsToTxn written:
	// none under transaction.version 2, whose Produce v12+ and
	// TxnOffsetCommit v5 add implicitly.
	explicitAdds atomic.Int64
}

// OnBrokerWrite implements kgo.HookBrokerWrite for killOnEndTxn.
func (r *eosRun) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.AddPartitionsToTxn) || key == int16(kmsg.AddOffsetsToTxn) {
		r.explicitAdds.Add(1)
	}
	if key == int16(kmsg.EndTxn) && err == nil && r.killOnEndTxn.CompareAndSwap(true, false) {
		_ = syscall.Kill(int(r.brokerPID.Load()), syscall.SIGKILL)
	}
}

// eosMember is one GroupTransactSession member.
type eosMember struct {
	name   string
	txnID  string
	quit   chan string   // "stop": leave after the current transaction; "abandon": leave in the middle of the next one
	exited chan struct{} // closed when the member has closed its client
	failed bool          // exited on an error, in tolerant mode (valid once exited is closed)
}

// memberErr handles an error of a member's transaction: in tolerant mode it
// is logged and the member exits failed (the caller returns), else it
// fails the test.
func (r *eosRun) memberErr(m *eosMember, err error) {
	if r.tolerant {
		r.t.Logf("%s (%s): %v; exiting", m.name, m.txnID, err)
		m.failed = true
		r.failed.Add(1)
		return
	}
	r.errs.add(fmt.Errorf("%s: %w", m.name, err))
}

func (r *eosRun) finish() { r.doneOnce.Do(func() { close(r.done) }) }

// startMember starts a member with the given transactional id.
func (r *eosRun) startMember(txnID string) *eosMember {
	m := &eosMember{
		name:   fmt.Sprintf("member-%d", r.memberCount.Add(1)),
		txnID:  txnID,
		quit:   make(chan string, 1),
		exited: make(chan struct{}),
	}
	done := new(atomic.Bool)
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(r.b.Addr),
		kgo.WithLogger(testLogger{t: r.t, level: kgo.LogLevelInfo, done: done}),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(r.txnTimeout),
		kgo.ConsumerGroup(r.group),
		kgo.ConsumeTopics(r.in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithHooks(r),
	)
	if err != nil {
		r.t.Fatal(err)
	}
	var closeOnce sync.Once
	closeSess := func() {
		closeOnce.Do(func() {
			sess.Close()
			done.Store(true)
		})
	}
	r.t.Cleanup(closeSess)
	go func() {
		defer close(m.exited)
		defer closeSess()
		r.loop(m, sess)
	}()
	return m
}

// loop polls, transforms and produces in one transaction per poll until the
// run is done or the member is told to quit.
func (r *eosRun) loop(m *eosMember, sess *kgo.GroupTransactSession) {
	mode := ""
	var modeAt time.Time
	for {
		select {
		case <-r.done:
			return
		case mode = <-m.quit:
			modeAt = time.Now()
			r.t.Logf("%s (%s): told to %s", m.name, m.txnID, mode)
		default:
		}
		if mode == "stop" {
			return
		}
		if mode == "" && r.committed.Load() >= r.allowed.Load() && !r.killMid.Load() && !r.killOnEndTxn.Load() {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		fs := sess.PollRecords(ctx, 2000)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if r.tolerant {
				r.t.Logf("%s: fetch %s/%d: %v", m.name, topic, p, err)
				return
			}
			r.errs.add(fmt.Errorf("%s: fetch %s/%d: %w", m.name, topic, p, err))
		})
		if fs.NumRecords() == 0 {
			if mode == "abandon" && time.Since(modeAt) > 3*time.Second {
				// This member's partitions are drained (the others are
				// held back at the run's mark, or a rebalance left it
				// little): it dies in a transaction of records of its
				// own instead, which is fenced or timed out the same way.
				r.abandonSynthetic(m, sess)
				return
			}
			continue
		}
		if err := sess.Begin(); err != nil {
			r.memberErr(m, fmt.Errorf("begin: %w", err))
			return
		}
		n := int64(0)
		var produceErr atomic.Pointer[error]
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			sess.Produce(context.Background(), &kgo.Record{
				Topic:     r.out,
				Partition: rec.Partition,
				Key:       slices.Clone(rec.Key),
				Value:     eosTransform(rec.Value),
			}, func(_ *kgo.Record, err error) {
				if err != nil && !errors.Is(err, kgo.ErrAborting) {
					produceErr.CompareAndSwap(nil, &err)
				}
			})
		})
		if mode == "abandon" {
			// A member that dies in the middle of a transaction: its
			// records are written, but neither its offsets nor an
			// EndTxn are ever sent. Close (deferred) leaves the group.
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := sess.Client().Flush(ctx)
			cancel()
			if err != nil {
				r.errs.add(fmt.Errorf("%s: flush before abandoning: %w", m.name, err))
			}
			r.abandoned.Add(n)
			r.abandons.Add(1)
			r.t.Logf("%s (%s): abandoned a transaction of %d records", m.name, m.txnID, n)
			return
		}
		// kgo commits what was produced even if a record failed (Java
		// refuses): flush first and abort if anything failed, so that no
		// input record is committed without its output.
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
		flushErr := sess.Client().Flush(ctx)
		try := kgo.TryCommit
		if perr := produceErr.Load(); perr != nil || flushErr != nil {
			err := flushErr
			if perr != nil {
				err = *perr
			}
			if !r.tolerant {
				cancel()
				r.errs.add(fmt.Errorf("%s: transactional produce: %w", m.name, err))
				return
			}
			r.t.Logf("%s (%s): transactional produce: %v; aborting", m.name, m.txnID, err)
			try = kgo.TryAbort
		}
		spanned := false
		if try == kgo.TryCommit && r.killMid.CompareAndSwap(true, false) {
			// The transaction's records are written: kill the broker
			// under it, then end it on the restarted one.
			ack := make(chan struct{})
			r.killReq <- ack
			<-ack
			spanned = true
		}
		committed, err := sess.End(ctx, try)
		cancel()
		if spanned {
			r.midTxnOutcome <- fmt.Sprintf("committed %v, error %v", committed, err)
		}
		if err != nil {
			r.memberErr(m, fmt.Errorf("end: %w", err))
			return
		}
		if !committed {
			r.aborts.Add(1)
			continue
		}
		r.commits.Add(1)
		if r.committed.Add(n) >= r.n {
			r.finish()
		}
	}
}

// abandonSynthetic leaves a transaction of records made up here (not
// transformed input) open on the output topic, as a member dying in the
// middle of it would: written, never ended.
func (r *eosRun) abandonSynthetic(m *eosMember, sess *kgo.GroupTransactSession) {
	if err := sess.Begin(); err != nil {
		r.memberErr(m, fmt.Errorf("begin: %w", err))
		return
	}
	const k = 10
	for i := 0; i < k; i++ {
		sess.Produce(context.Background(), &kgo.Record{
			Topic:     r.out,
			Partition: 0,
			Key:       []byte(fmt.Sprintf("abandoned-%s-%d", m.name, i)),
			Value:     []byte("never committed"),
		}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sess.Client().Flush(ctx); err != nil {
		r.errs.add(fmt.Errorf("%s: flush before abandoning: %w", m.name, err))
	}
	r.abandoned.Add(k)
	r.abandons.Add(1)
	r.t.Logf("%s (%s): abandoned a transaction of %d made-up records (no input left to poll)", m.name, m.txnID, k)
}

// produceInput writes the run's n input records round robin over the
// input partitions with an idempotent producer: key "k<i>", value "v<i>".
func (r *eosRun) produceInput(parts int32) {
	t, b, n := r.t, r.b, int(r.n)
	start := time.Now()
	pcl := b.newClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))...)
	var perr failures
	for i := 0; i < n; i++ {
		pcl.Produce(context.Background(), &kgo.Record{
			Topic:     r.in,
			Partition: int32(i) % parts,
			Key:       []byte(fmt.Sprintf("k%06d", i)),
			Value:     []byte(fmt.Sprintf("v%06d", i)),
		}, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.add(err)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pcl.Flush(ctx); err != nil {
		t.Fatalf("flush input: %v", err)
	}
	perr.check(t)
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("produced %d input records in %v", n, time.Since(start).Round(time.Millisecond))
}

// verify waits for every transaction on the output to end (abandoned ones
// by fencing or timeout), then checks that read_committed finds each input
// partition's records exactly once, in order, transformed, in the same
// output partition; that the abandoned transactions' records are in the log
// (aborted); and that the group's committed offsets are at the input's end.
func (r *eosRun) verify(b *broker, parts int32) {
	t, n := r.t, int(r.n)
	outEnds := b.waitStable(t, r.out, r.txnTimeout+60*time.Second)
	inEnds := b.endOffsets(t, r.in)
	input := b.consumeAll(t, r.in, inEnds, 60*time.Second)
	committedOut := b.readTopic(t, r.out, outEnds, true, 60*time.Second)
	uncommittedOut := b.readTopic(t, r.out, outEnds, false, 60*time.Second)

	total, totalUncommitted := 0, 0
	for p := int32(0); p < parts; p++ {
		in, out := input[p], committedOut[p]
		total += len(out)
		totalUncommitted += len(uncommittedOut[p])
		if len(out) != len(in) {
			t.Errorf("partition %d: %d input records, %d committed output records", p, len(in), len(out))
		}
		for i := 0; i < min(len(in), len(out)); i++ {
			if string(out[i].Key) != string(in[i].Key) || string(out[i].Value) != string(eosTransform(in[i].Value)) {
				t.Errorf("partition %d: output record %d (offset %d) is %s=%s, want %s=%s (duplicated, lost or reordered)",
					p, i, out[i].Offset, out[i].Key, out[i].Value, in[i].Key, eosTransform(in[i].Value))
				break
			}
		}
	}
	if total != n {
		t.Errorf("read_committed sees %d output records, want %d", total, n)
	}
	// The abandoned transactions' records are in the log, aborted.
	if want := n + int(r.abandoned.Load()); totalUncommitted < want {
		t.Errorf("read_uncommitted sees %d output records, want at least %d (input plus the abandoned transactions)", totalUncommitted, want)
	}
	t.Logf("output: %d records committed, %d in the log (aborted: %d)", total, totalUncommitted, totalUncommitted-total)

	// The group's committed offsets are at the input's end.
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetched, err := kadm.NewClient(cl).FetchOffsets(ctx, r.group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	for p := int32(0); p < parts; p++ {
		o, ok := fetched.Lookup(r.in, p)
		if !ok || o.Err != nil || o.At != inEnds[p] {
			t.Errorf("group offset of %s/%d: %+v (found %v), want %d", r.in, p, o, ok, inEnds[p])
		}
	}
}

// TestTxnGroupTransactSessionExactlyOnce moves 100k records from an input
// topic to an output topic with kgo's GroupTransactSession (read_committed
// input, transactional output, offsets committed in the transaction) while
// members restart: one leaves cleanly, one dies in the middle of a
// transaction and is replaced under the same transactional.id (which fences
// it and aborts its transaction), one dies in the middle of a transaction
// and is replaced under a new id (the broker aborts the transaction when it
// times out). A read_committed reader then finds every input partition's
// records exactly once, in order, in the same output partition, and the
// group's committed offsets at the input's end.
func TestTxnGroupTransactSessionExactlyOnce(t *testing.T) {
	b := txnBroker(t, true)
	const parts = int32(6)
	const n = 100_000
	r := &eosRun{
		t:          t,
		b:          b,
		in:         "eos-in-" + randSuffix(),
		out:        "eos-out-" + randSuffix(),
		group:      "eos-" + randSuffix(),
		n:          n,
		txnTimeout: 15 * time.Second,
		done:       make(chan struct{}),
	}
	b.createTopic(t, r.in, parts, nil)
	b.createTopic(t, r.out, parts, nil)

	r.produceInput(parts)

	start := time.Now()
	r.allowed.Store(n * 15 / 100)
	m1 := r.startMember("eos-txn-a-" + randSuffix())
	m2 := r.startMember("eos-txn-b-" + randSuffix())
	m3 := r.startMember("eos-txn-c-" + randSuffix())
	members := []*eosMember{m1, m2, m3}

	// The restarts, at 15%, 40% and 65% of the records committed.
	runDeadline := time.Now().Add(3 * time.Minute)
	waitFor := func(frac float64) bool {
		for r.committed.Load() < int64(frac*n) {
			select {
			case <-r.done:
				return false
			case <-time.After(20 * time.Millisecond):
			}
			if r.errs.n.Load() > 0 {
				return false
			}
			if time.Now().After(runDeadline) {
				r.errs.add(fmt.Errorf("only %d of %d records committed within the deadline", r.committed.Load(), n))
				return false
			}
		}
		return true
	}
	waitExit := func(m *eosMember) bool {
		select {
		case <-m.exited:
			return true
		case <-time.After(90 * time.Second):
			r.errs.add(fmt.Errorf("%s did not exit within 90 s of being told to", m.name))
			return false
		}
	}
	restarts := 0
	func() {
		if !waitFor(0.15) {
			return
		}
		m1.quit <- "stop" // a clean restart between transactions
		if !waitExit(m1) {
			return
		}
		members = append(members, r.startMember("eos-txn-d-"+randSuffix()))
		restarts++
		r.allowed.Store(n * 40 / 100)
		if !waitFor(0.40) {
			return
		}
		m2.quit <- "abandon" // dies mid-transaction; its successor reuses its transactional.id
		if !waitExit(m2) {
			return
		}
		members = append(members, r.startMember(m2.txnID))
		restarts++
		r.allowed.Store(n * 65 / 100)
		if !waitFor(0.65) {
			return
		}
		m3.quit <- "abandon" // dies mid-transaction; the broker times the transaction out
		if !waitExit(m3) {
			return
		}
		members = append(members, r.startMember("eos-txn-f-"+randSuffix()))
		restarts++
		r.allowed.Store(n)
	}()

	for r.committed.Load() < n && r.errs.n.Load() == 0 {
		select {
		case <-r.done:
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(runDeadline) {
			r.errs.add(fmt.Errorf("only %d of %d records committed within the deadline", r.committed.Load(), n))
		}
	}
	r.finish()
	for _, m := range members {
		waitExit(m)
	}
	t.Logf("ETL: %d records in %d committed and %d aborted transactions, %d records abandoned, %d restarts, in %v",
		r.committed.Load(), r.commits.Load(), r.aborts.Load(), r.abandoned.Load(), restarts, time.Since(start).Round(time.Millisecond))
	r.errs.check(t)
	if t.Failed() {
		t.FailNow()
	}
	if restarts != 3 || r.abandons.Load() != 2 {
		t.Fatalf("the run ended after %d of 3 member restarts, %d of 2 abandoned transactions", restarts, r.abandons.Load())
	}

	r.verify(b, parts)
}

// TestTxnGroupTransactSessionAcrossBrokerKill runs the consume-transform-
// produce loop of TestTxnGroupTransactSessionExactlyOnce (30k records, two
// members) and kills the broker with SIGKILL under it twice, restarting it
// on the same port: at 30% of the records, after a member wrote a
// transaction's records and before it ends it (the transaction survives
// the restart, as in Kafka: the member then ends it on the restarted
// broker), and at 60%, as an EndTxn reaches the broker. A member whose
// transaction fails across a kill (kgo reports an EndTxn whose outcome it
// cannot know) exits and is replaced under the same transactional.id, as an
// application would do; the transaction ends by the replacement's
// InitProducerId, and transactional offset commits pending at the kill end
// with it. Exactly once still holds.
func TestTxnGroupTransactSessionAcrossBrokerKill(t *testing.T) {
	b := txnBroker(t, false)
	const parts = int32(4)
	const n = 30_000
	r := &eosRun{
		t:             t,
		b:             b,
		in:            "eoskill-in-" + randSuffix(),
		out:           "eoskill-out-" + randSuffix(),
		group:         "eoskill-" + randSuffix(),
		n:             n,
		txnTimeout:    10 * time.Second,
		done:          make(chan struct{}),
		tolerant:      true,
		killReq:       make(chan chan struct{}),
		midTxnOutcome: make(chan string, 1),
	}
	r.brokerPID.Store(int64(b.PID()))
	b.createTopic(t, r.in, parts, nil)
	b.createTopic(t, r.out, parts, nil)
	r.produceInput(parts)

	restart := func(how string) {
		b = b.crashRestartSamePort(t)
		r.b = b
		r.brokerPID.Store(int64(b.PID()))
		t.Logf("killed the broker %s at %d records committed; restarted", how, r.committed.Load())
	}
	// Members hold back at allowed unless a kill is armed, so that the
	// kills come at their points of the run.
	r.allowed.Store(n * 30 / 100)
	start := time.Now()
	members := []*eosMember{r.startMember("eoskill-a-" + randSuffix()), r.startMember("eoskill-b-" + randSuffix())}
	deadline := time.Now().Add(3 * time.Minute)
	kills, replacements := 0, 0
	for r.committed.Load() < n && r.errs.n.Load() == 0 {
		if time.Now().After(deadline) {
			r.errs.add(fmt.Errorf("only %d of %d records committed within the deadline (%d kills)", r.committed.Load(), n, kills))
			break
		}
		for i, m := range members {
			select {
			case <-m.exited:
			default:
				continue
			}
			if !m.failed {
				continue // the run is done
			}
			if replacements++; replacements > 20 {
				r.errs.add(fmt.Errorf("members failed %d times; giving up", replacements))
				break
			}
			members[i] = r.startMember(m.txnID)
		}
		switch {
		case kills == 0 && r.committed.Load() >= n*30/100:
			r.killMid.Store(true)
			kills++
		case kills == 1 && !r.killMid.Load() && r.committed.Load() >= n*60/100:
			r.killOnEndTxn.Store(true)
			kills++
		case kills == 2 && !r.killOnEndTxn.Load():
			r.allowed.Store(n)
		case kills == 1:
			r.allowed.Store(n * 60 / 100)
		}
		select {
		case ack := <-r.killReq:
			restart("in the middle of a transaction")
			close(ack)
		case <-b.Exited():
			restart("as an EndTxn reached it")
		case <-time.After(10 * time.Millisecond):
		}
	}
	r.finish()
	for _, m := range members {
		select {
		case <-m.exited:
		case <-time.After(90 * time.Second):
			r.errs.add(fmt.Errorf("%s did not exit within 90 s of the end of the run", m.name))
		}
	}
	t.Logf("ETL: %d records in %d committed and %d aborted transactions, %d member replacements, in %v",
		r.committed.Load(), r.commits.Load(), r.aborts.Load(), replacements, time.Since(start).Round(time.Millisecond))
	select {
	case o := <-r.midTxnOutcome:
		t.Logf("the transaction that spanned the first kill ended: %s", o)
	default:
		t.Errorf("no transaction spanned the first kill")
	}
	r.errs.check(t)
	if t.Failed() {
		t.FailNow()
	}
	if kills != 2 || r.killMid.Load() || r.killOnEndTxn.Load() {
		t.Fatalf("the run ended before both kills happened")
	}
	// kgo ran transaction.version 2 (finalized by the broker) throughout,
	// before and after each kill -9.
	if n := r.explicitAdds.Load(); n != 0 {
		t.Errorf("%d AddPartitionsToTxn/AddOffsetsToTxn written: the members did not run transaction.version 2", n)
	}
	r.verify(b, parts)
}

// TestTxnAbortedRecordsInvisibleToReadCommitted interleaves two
// transactional producers (committed and aborted transactions, open at the
// same time on the same partitions) and a non-transactional idempotent
// producer over three partitions. While a transaction is open, the last
// stable offset stays at its first offset; at the end, read_committed
// consumers see exactly the committed and non-transactional records in
// offset order, read_uncommitted ones see every record, and a raw
// read_committed Fetch lists each aborted transaction (producer id, first
// offset) of each partition.
func TestTxnAbortedRecordsInvisibleToReadCommitted(t *testing.T) {
	b := txnBroker(t, true)
	topic := "mix-" + randSuffix()
	const parts = int32(3)
	b.createTopic(t, topic, parts, nil)

	p1, _ := b.txnClient(t, "mix-1-"+randSuffix(), 30*time.Second)
	p2, _ := b.txnClient(t, "mix-2-"+randSuffix(), 30*time.Second)
	plain := b.newClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)

	type sent struct {
		rec  *kgo.Record
		txn  string // "" for non-transactional records
		pid  int64
		kept bool // visible to read_committed
	}
	var all []*sent
	open := map[string][]*sent{} // records of each open transaction
	produce := func(cl *kgo.Client, txn string, p int32, tag string, n int) {
		t.Helper()
		var pid int64 = -1
		if txn != "" {
			pid, _ = producerIDOf(t, cl)
		}
		for _, r := range produceSync(t, cl, recs(topic, p, tag, n)...) {
			s := &sent{rec: r, txn: txn, pid: pid, kept: txn == ""}
			all = append(all, s)
			if txn != "" {
				open[txn] = append(open[txn], s)
			}
		}
	}
	begin := func(cl *kgo.Client) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
	}
	end := func(cl *kgo.Client, txn string, commit bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
		for _, s := range open[txn] {
			s.kept = commit
		}
		delete(open, txn)
	}
	// expectLSO is the first offset of the oldest open transaction of each
	// partition, else its high watermark.
	expectLSO := func(hw map[int32]int64) map[int32]int64 {
		out := map[int32]int64{}
		for p, h := range hw {
			out[p] = h
		}
		for _, ss := range open {
			for _, s := range ss {
				if s.rec.Offset < out[s.rec.Partition] {
					out[s.rec.Partition] = s.rec.Offset
				}
			}
		}
		return out
	}
	// checkLSO waits for the last stable offsets to reach what the open
	// transactions imply: EndTxn is answered once the outcome is logged,
	// and the markers that move the LSO follow (as in Kafka). Until then
	// the LSO must not be past that.
	checkLSO := func(when string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			hw, lso := b.offsetsOf(t, topic)
			want := expectLSO(hw)
			if mapsEqual(lso, want) {
				return
			}
			for p, o := range lso {
				if o > want[p] {
					t.Fatalf("%s: partition %d has its last stable offset at %d, past %d (high watermarks %v)", when, p, o, want[p], hw)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last stable offsets %v, want %v (high watermarks %v)", when, lso, want, hw)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	begin(p1)
	produce(p1, "p1a", 0, "c1-p0", 3)
	produce(p1, "p1a", 1, "c1-p1", 2)
	produce(plain, "", 0, "n1-p0", 2)
	produce(plain, "", 1, "n1-p1", 2)
	produce(plain, "", 2, "n1-p2", 2)
	begin(p2)
	produce(p2, "p2a", 1, "a2-p1", 3)
	produce(p2, "p2a", 2, "a2-p2", 2)
	checkLSO("two transactions open")
	// read_committed stops at the LSO: on partition 2 only n1's two
	// records are below it.
	if got := keysOf(b.readTopic(t, topic, map[int32]int64{2: 2}, true, 30*time.Second)[2]); !slices.Equal(got, []string{"n1-p2-0", "n1-p2-1"}) {
		t.Errorf("read_committed below the LSO of partition 2: %v", got)
	}
	produce(p1, "p1a", 2, "c1-p2", 1)
	end(p1, "p1a", true)
	checkLSO("after the first commit")
	produce(plain, "", 0, "n2-p0", 1)
	produce(plain, "", 1, "n2-p1", 1)
	produce(plain, "", 2, "n2-p2", 1)
	produce(p2, "p2a", 0, "a2-p0", 2)
	end(p2, "p2a", false)
	checkLSO("after the first abort")

	begin(p1)
	for p := int32(0); p < parts; p++ {
		produce(p1, "p1b", p, fmt.Sprintf("a3-p%d", p), 2)
	}
	end(p1, "p1b", false)
	begin(p2)
	produce(p2, "p2b", 0, "c4-p0", 2)
	produce(plain, "", 0, "n3-p0", 1)
	checkLSO("one transaction open")
	produce(p2, "p2b", 2, "c4-p2", 1)
	end(p2, "p2b", true)

	hw := b.waitStable(t, topic, 30*time.Second)
	committed := b.readTopic(t, topic, hw, true, 30*time.Second)
	uncommitted := b.readTopic(t, topic, hw, false, 30*time.Second)
	slices.SortFunc(all, func(a, b *sent) int {
		if a.rec.Partition != b.rec.Partition {
			return int(a.rec.Partition - b.rec.Partition)
		}
		return int(a.rec.Offset - b.rec.Offset)
	})
	for p := int32(0); p < parts; p++ {
		var wantCommitted, wantAll []string
		for _, s := range all {
			if s.rec.Partition != p {
				continue
			}
			wantAll = append(wantAll, string(s.rec.Key))
			if s.kept {
				wantCommitted = append(wantCommitted, string(s.rec.Key))
			}
		}
		if got := keysOf(committed[p]); !slices.Equal(got, wantCommitted) {
			t.Errorf("partition %d read_committed:\n got %v\nwant %v", p, got, wantCommitted)
		}
		if got := keysOf(uncommitted[p]); !slices.Equal(got, wantAll) {
			t.Errorf("partition %d read_uncommitted:\n got %v\nwant %v", p, got, wantAll)
		}
	}

	// The aborted transactions a read_committed Fetch from offset 0
	// reports: every aborted transaction's producer id and first offset.
	wantAborted := map[int32][]abortedTxn{}
	firstOf := map[string]map[int32]int64{} // aborted transaction tag -> partition -> first offset
	pidOf := map[string]int64{}
	for _, s := range all {
		if s.txn == "" || s.kept {
			continue
		}
		if firstOf[s.txn] == nil {
			firstOf[s.txn] = map[int32]int64{}
		}
		if f, ok := firstOf[s.txn][s.rec.Partition]; !ok || s.rec.Offset < f {
			firstOf[s.txn][s.rec.Partition] = s.rec.Offset
		}
		pidOf[s.txn] = s.pid
	}
	for txn, byPart := range firstOf {
		for p, f := range byPart {
			wantAborted[p] = append(wantAborted[p], abortedTxn{ProducerID: pidOf[txn], FirstOffset: f})
		}
	}
	lso, aborted := b.rawFetchCommitted(t, topic, parts)
	for p := int32(0); p < parts; p++ {
		want := wantAborted[p]
		slices.SortFunc(want, func(a, b abortedTxn) int { return int(a.FirstOffset - b.FirstOffset) })
		if !slices.Equal(aborted[p], want) {
			t.Errorf("partition %d: Fetch read_committed aborted transactions %+v, want %+v", p, aborted[p], want)
		}
		if lso[p] != hw[p] {
			t.Errorf("partition %d: Fetch last stable offset %d, want the high watermark %d", p, lso[p], hw[p])
		}
	}
}

// TestTxnCommitSurvivesKill commits a transaction and kills the broker with
// SIGKILL as soon as EndTxn is acknowledged, three times: after each
// restart the transaction is committed (its markers written, by the
// restarted coordinator if the kill came first), the next InitProducerId
// for the transactional.id keeps the producer id and bumps the epoch, and a
// new idempotent producer gets a producer id never handed out before.
func TestTxnCommitSurvivesKill(t *testing.T) {
	b := txnBroker(t, false)
	topic := "killcommit-" + randSuffix()
	const parts = int32(3)
	b.createTopic(t, topic, parts, nil)
	txnID := "killcommit-" + randSuffix()

	idem := b.newClient(t, b.producerOpts(t)...)
	idemPID, _ := producerIDOf(t, idem)
	seen := map[int64]bool{idemPID: true}

	var want [parts][]string
	var lastPID int64 = -1
	var lastEpoch int16 = -1
	for round := 0; round < 3; round++ {
		cl, closeCl := b.txnClient(t, txnID, 30*time.Second)
		pid, epoch := producerIDOf(t, cl)
		if round == 0 {
			if seen[pid] {
				t.Fatalf("transactional producer id %d was already handed out", pid)
			}
			seen[pid] = true
		} else if pid != lastPID || epoch <= lastEpoch {
			t.Errorf("round %d: InitProducerId after a restart gave producer id %d epoch %d, want id %d with an epoch above %d", round, pid, epoch, lastPID, lastEpoch)
		}
		lastPID, lastEpoch = pid, epoch
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < parts; p++ {
			rs := produceSync(t, cl, recs(topic, p, fmt.Sprintf("r%d-p%d", round, p), 10)...)
			want[p] = append(want[p], keysOf(rs)...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := cl.EndTransaction(ctx, kgo.TryCommit)
		cancel()
		if err != nil {
			t.Fatalf("round %d: commit: %v", round, err)
		}
		b = b.crashRestartSamePort(t) // right after the acknowledgement
		closeCl()

		hw, lso := b.offsetsOf(t, topic)
		if !mapsEqual(hw, lso) {
			t.Logf("round %d: after the restart the markers were still to be written (LSO %v, HW %v)", round, lso, hw)
		}
		hw = b.waitStable(t, topic, 30*time.Second)
		got := b.readTopic(t, topic, hw, true, 30*time.Second)
		for p := int32(0); p < parts; p++ {
			if keys := keysOf(got[p]); !slices.Equal(keys, want[p]) {
				t.Fatalf("round %d partition %d: read_committed after the restart:\n got %v\nwant %v", round, p, keys, want[p])
			}
		}
		if d := b.describeTxn(t, txnID); d.State != "CompleteCommit" || d.ProducerID != pid {
			t.Errorf("round %d: DescribeTransactions after the restart: state %s producer %d/%d, want CompleteCommit with producer id %d", round, d.State, d.ProducerID, d.ProducerEpoch, pid)
		}
	}

	// Producer id blocks survive restarts: a new idempotent producer
	// gets an id never handed out before.
	idem2 := b.newClient(t, b.producerOpts(t)...)
	if pid, _ := producerIDOf(t, idem2); seen[pid] {
		t.Errorf("after the restarts a new idempotent producer got producer id %d, already handed out (%v)", pid, seen)
	}
}

// killOnEndTxn is a kgo hook that, once an EndTxn request has been written
// to the broker's connection, waits delay (spinning: sleeps are too coarse)
// and kills the broker with SIGKILL, then signals killed.
type killOnEndTxn struct {
	pid    int
	delay  time.Duration
	once   *sync.Once
	killed chan struct{}
}

func (h killOnEndTxn) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.EndTxn) || err != nil {
		return
	}
	h.once.Do(func() {
		for start := time.Now(); time.Since(start) < h.delay; {
		}
		_ = syscall.Kill(h.pid, syscall.SIGKILL)
		close(h.killed)
	})
}

// TestTxnKillDuringEndTxn kills the broker with SIGKILL while it handles
// EndTxn(commit) of a transaction over 12 partitions, from right after the
// request was written to 300 µs later, so that kills land before the
// PrepareCommit is logged, between it and the markers, between markers, and
// after (the test logs how many restarts found the transaction prepared). After each
// restart the next InitProducerId for the transactional.id settles the
// transaction (aborting it if it was still Ongoing, completing it if it was
// prepared): its records are then visible on every partition or on none, and
// on every partition if EndTxn was acknowledged.
func TestTxnKillDuringEndTxn(t *testing.T) {
	b := txnBroker(t, false)
	topic := "killend-" + randSuffix()
	const parts = int32(12)
	b.createTopic(t, topic, parts, nil)
	txnID := "killend-" + randSuffix()

	type round struct {
		keys  []string
		acked bool
	}
	var rounds []round
	const n = 16
	prepared := 0
	for i := 0; i < n; i++ {
		// Spread the kills over the handling of the request: 0 to 300 µs
		// after it was written.
		hook := killOnEndTxn{pid: b.PID(), delay: time.Duration(i) * 20 * time.Microsecond, once: new(sync.Once), killed: make(chan struct{})}
		cl, closeCl := b.txnClient(t, txnID, 20*time.Second, kgo.WithHooks(hook))
		producerIDOf(t, cl) // settles the previous round's transaction
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var r round
		for p := int32(0); p < parts; p++ {
			r.keys = append(r.keys, keysOf(produceSync(t, cl, recs(topic, p, fmt.Sprintf("r%d-p%d", i, p), 5)...))...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.EndTransaction(ctx, kgo.TryCommit)
		cancel()
		select {
		case <-hook.killed:
		default:
			t.Fatalf("round %d: EndTxn ended (%v) without its request being written", i, err)
		}
		b = b.crashRestartSamePort(t)
		if strings.Contains(b.Output(), `"completing":1`) {
			// The coordinator's start-up log: the kill came between
			// the PrepareCommit and the end of the markers.
			prepared++
		}
		r.acked = err == nil
		closeCl()
		rounds = append(rounds, r)
	}
	last, _ := b.txnClient(t, txnID, 20*time.Second)
	producerIDOf(t, last) // settles the last round's transaction

	hw := b.waitStable(t, topic, 60*time.Second)
	visible := map[string]bool{}
	for _, rs := range b.readTopic(t, topic, hw, true, 30*time.Second) {
		for _, k := range keysOf(rs) {
			visible[k] = true
		}
	}
	inLog := 0
	for _, rs := range b.readTopic(t, topic, hw, false, 30*time.Second) {
		inLog += len(rs)
	}
	if inLog != n*int(parts)*5 {
		t.Errorf("read_uncommitted sees %d records, want every produced one (%d)", inLog, n*int(parts)*5)
	}
	outcomes := map[string]int{}
	for i, r := range rounds {
		seen := 0
		for _, k := range r.keys {
			if visible[k] {
				seen++
			}
		}
		switch {
		case seen != 0 && seen != len(r.keys):
			t.Errorf("round %d: %d of the transaction's %d records are visible to read_committed: a partial commit", i, seen, len(r.keys))
		case r.acked && seen == 0:
			t.Errorf("round %d: EndTxn(commit) was acknowledged but the transaction's records are not visible", i)
		case r.acked:
			outcomes["acknowledged and committed"]++
		case seen > 0:
			outcomes["committed, acknowledgement lost"]++
		default:
			outcomes["aborted"]++
		}
	}
	t.Logf("outcomes of %d kills during EndTxn: %v; %d restarts found the transaction prepared", n, outcomes, prepared)
}

// TestTxnOpenTransactionAbortedAfterKill kills the broker with SIGKILL while
// a transaction is open (records written, no EndTxn), with
// non-transactional records after it on the same partitions. After the
// restart the last stable offset is still held at the transaction's first
// offset until transaction.timeout.ms expires; then the coordinator aborts
// it: read_committed consumers get past it and see only the
// non-transactional records, the producer's EndTxn is refused with
// PRODUCER_FENCED, and its transactional.id can be used again.
func TestTxnOpenTransactionAbortedAfterKill(t *testing.T) {
	b := txnBroker(t, false)
	topic := "killopen-" + randSuffix()
	const parts = int32(2)
	b.createTopic(t, topic, parts, nil)
	txnID := "killopen-" + randSuffix()
	const timeout = 8 * time.Second

	plain := b.newClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	txn, _ := b.txnClient(t, txnID, timeout)
	_, epoch := producerIDOf(t, txn)

	var wantCommitted, wantAll [parts][]string
	first := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		rs := produceSync(t, plain, recs(topic, p, fmt.Sprintf("before-p%d", p), 2)...)
		wantCommitted[p] = append(wantCommitted[p], keysOf(rs)...)
		wantAll[p] = append(wantAll[p], keysOf(rs)...)
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for p := int32(0); p < parts; p++ {
		rs := produceSync(t, txn, recs(topic, p, fmt.Sprintf("open-p%d", p), 3)...)
		first[p] = rs[0].Offset
		wantAll[p] = append(wantAll[p], keysOf(rs)...)
	}
	for p := int32(0); p < parts; p++ {
		rs := produceSync(t, plain, recs(topic, p, fmt.Sprintf("after-p%d", p), 2)...)
		wantCommitted[p] = append(wantCommitted[p], keysOf(rs)...)
		wantAll[p] = append(wantAll[p], keysOf(rs)...)
	}
	if _, lso := b.offsetsOf(t, topic); !mapsEqual(lso, first) {
		t.Errorf("before the kill: last stable offsets %v, want the open transaction's first offsets %v", lso, first)
	}

	b = b.crashRestartSamePort(t)
	// A read_committed consumer waiting at the LSO from before the abort
	// must get past the transaction once it is aborted.
	live := b.startReader(t, topic, parts, true)
	_, lso := b.offsetsOf(t, topic)
	if time.Since(began) < timeout-time.Second {
		// Recovery rebuilt the open transaction from the log.
		if !mapsEqual(lso, first) {
			t.Errorf("after the restart, %v into the transaction: last stable offsets %v, want its first offsets %v", time.Since(began).Round(time.Millisecond), lso, first)
		}
	} else {
		t.Logf("the restart took until %v into the transaction; not checking the LSO before its timeout", time.Since(began).Round(time.Millisecond))
	}
	for p := int32(0); p < parts; p++ {
		rs := produceSync(t, plain, recs(topic, p, fmt.Sprintf("restarted-p%d", p), 2)...)
		wantCommitted[p] = append(wantCommitted[p], keysOf(rs)...)
		wantAll[p] = append(wantAll[p], keysOf(rs)...)
	}

	hw := b.waitStable(t, topic, timeout+60*time.Second)
	live.waitFor(t, wantCommitted[:], 30*time.Second)
	if d := time.Since(began); d < timeout {
		t.Errorf("the transaction was aborted %v after it began, before its timeout of %v", d.Round(time.Millisecond), timeout)
	}
	committed := b.readTopic(t, topic, hw, true, 30*time.Second)
	uncommitted := b.readTopic(t, topic, hw, false, 30*time.Second)
	for p := int32(0); p < parts; p++ {
		if got := keysOf(committed[p]); !slices.Equal(got, wantCommitted[p]) {
			t.Errorf("partition %d read_committed:\n got %v\nwant %v", p, got, wantCommitted[p])
		}
		if got := keysOf(uncommitted[p]); !slices.Equal(got, wantAll[p]) {
			t.Errorf("partition %d read_uncommitted:\n got %v\nwant %v", p, got, wantAll[p])
		}
	}
	if d := b.describeTxn(t, txnID); d.State != "CompleteAbort" || d.ProducerEpoch <= epoch {
		t.Errorf("DescribeTransactions: state %s epoch %d, want CompleteAbort with the epoch bumped past %d", d.State, d.ProducerEpoch, epoch)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// kgo is a transaction.version 2 client here: to Kafka 4.3.1 its
	// EndTxn v5 commit one epoch below the abort's is a commit retrying
	// a completed abort (see TestTxnTimedOutIsAbortedAndFenced).
	if err := txn.EndTransaction(ctx, kgo.TryCommit); !errors.Is(err, kerr.InvalidTxnState) {
		t.Errorf("EndTxn(commit) of the producer whose transaction timed out: %v, want INVALID_TXN_STATE", err)
	}
	again, _ := b.txnClient(t, txnID, timeout)
	if _, e := producerIDOf(t, again); e <= epoch {
		t.Errorf("InitProducerId after the abort: epoch %d, want above %d", e, epoch)
	}
	if err := again.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(t, again, recs(topic, 0, "again", 1)...)
	if err := again.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit with the transactional.id again: %v", err)
	}
}

// TestTxnTimedOutIsAbortedAndFenced lets transactions run past
// transaction.timeout.ms. The coordinator aborts each (bumping the producer
// epoch): read_committed consumers never see its records, read_uncommitted
// ones see them followed by an ABORT marker. The fenced producer is then
// answered as Kafka 4.3.1 answers it (measured against it, formatted with
// transaction.version 2), for a client of either transaction.version:
//   - transaction.version 1 (kgo capped below Produce v12 and EndTxn v5):
//     EndTxn(commit) gets PRODUCER_FENCED; a produce to a partition of the
//     aborted transaction INVALID_PRODUCER_EPOCH, and re-initializing with
//     the old epoch PRODUCER_FENCED, so the next transaction never starts.
//   - transaction.version 2 (kgo's default against a TV2 broker): the
//     abort bumped the epoch by one, which is what a retry of the
//     client's EndTxn v5 looks like, so EndTxn(commit) gets
//     INVALID_TXN_STATE (a commit retrying a completed abort), and after
//     INVALID_PRODUCER_EPOCH its EndTxn(abort) is that retry, answered NONE
//     with the bumped epoch: the next transaction commits.
func TestTxnTimedOutIsAbortedAndFenced(t *testing.T) {
	for _, tv := range []int{1, 2} {
		t.Run(fmt.Sprintf("transaction.version %d", tv), func(t *testing.T) { testTxnTimedOutIsAbortedAndFenced(t, tv) })
	}
}

func testTxnTimedOutIsAbortedAndFenced(t *testing.T, tv int) {
	var opts []kgo.Opt
	if tv == 1 {
		// Kafka 3.9's versions: no Produce v12, EndTxn v5, TxnOffsetCommit v5.
		opts = append(opts, kgo.MaxVersions(kversion.V3_9_0()))
	}
	b := txnBroker(t, true)
	topic := "timeout-" + randSuffix()
	const parts = int32(2)
	b.createTopic(t, topic, parts, nil)
	const timeout = 3 * time.Second

	// EndTxn after the timeout.
	txnID := "timeout-end-" + randSuffix()
	p, _ := b.txnClient(t, txnID, timeout, opts...)
	pid, epoch := producerIDOf(t, p)
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	timedOut := keysOf(produceSync(t, p, recs(topic, 0, "timedout", 3)...))
	hw := b.waitStable(t, topic, timeout+30*time.Second)
	if d := time.Since(began); d < timeout {
		t.Errorf("the transaction was aborted %v after it began, before its timeout of %v", d.Round(time.Millisecond), timeout)
	}
	if d := b.describeTxn(t, txnID); d.State != "CompleteAbort" || d.ProducerID != pid || d.ProducerEpoch <= epoch {
		t.Errorf("DescribeTransactions: state %s producer %d/%d, want CompleteAbort with producer id %d and the epoch bumped past %d", d.State, d.ProducerID, d.ProducerEpoch, pid, epoch)
	}
	if got := keysOf(b.readTopic(t, topic, hw, true, 30*time.Second)[0]); len(got) != 0 {
		t.Errorf("read_committed sees the timed-out transaction's records: %v", got)
	}
	if got := keysOf(b.readTopic(t, topic, hw, false, 30*time.Second)[0]); !slices.Equal(got, timedOut) {
		t.Errorf("read_uncommitted: %v, want %v", got, timedOut)
	}
	checkAbortMarker(t, b, topic, 0, hw[0]-1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wantEnd := kerr.ProducerFenced
	if tv == 2 {
		wantEnd = kerr.InvalidTxnState
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); !errors.Is(err, wantEnd) {
		t.Errorf("EndTxn(commit) after the timeout: %v, want %v", err, wantEnd)
	}

	// Produce after the timeout, to a partition already in the
	// transaction.
	q, _ := b.txnClient(t, "timeout-produce-"+randSuffix(), timeout, opts...)
	if err := q.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(t, q, recs(topic, 1, "q-timedout", 2)...)
	b.waitStable(t, topic, timeout+30*time.Second)
	err := q.ProduceSync(ctx, recs(topic, 1, "q-late", 1)...).FirstErr()
	if !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Errorf("produce after the timeout: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	// Kafka then refuses the producer: aborting is allowed, but its next
	// InitProducerId (with its old epoch, KIP-588) is PRODUCER_FENCED, so
	// the next transaction never starts.
	err = q.EndTransaction(ctx, kgo.TryAbort)
	if err == nil {
		err = q.BeginTransaction()
	}
	if err == nil {
		err = q.ProduceSync(ctx, recs(topic, 1, "q-next", 1)...).FirstErr()
	}
	if err == nil {
		err = q.EndTransaction(ctx, kgo.TryCommit)
	}
	var wantCommitted []string
	if tv == 1 && !errors.Is(err, kerr.ProducerFenced) {
		t.Errorf("the next transaction of the producer that got INVALID_PRODUCER_EPOCH: %v, want PRODUCER_FENCED", err)
	}
	if tv == 2 {
		if err != nil {
			t.Errorf("the next transaction of the producer that got INVALID_PRODUCER_EPOCH: %v, want it committed", err)
		}
		wantCommitted = []string{"q-next-0"}
	}
	hw = b.waitStable(t, topic, 30*time.Second)
	if got := keysOf(b.readTopic(t, topic, hw, true, 30*time.Second)[1]); !slices.Equal(got, wantCommitted) {
		t.Errorf("partition 1 read_committed: %v, want %v", got, wantCommitted)
	}
}

// TestTxnZombieFenced: a second producer with the same transactional.id
// fences the first while its transaction is open. The zombie's transaction
// is aborted, its EndTxn gets PRODUCER_FENCED, and only the new producer's
// transaction is visible to read_committed consumers.
func TestTxnZombieFenced(t *testing.T) {
	b := txnBroker(t, true)
	topic := "zombie-" + randSuffix()
	b.createTopic(t, topic, 1, nil)
	txnID := "zombie-" + randSuffix()

	zombie, _ := b.txnClient(t, txnID, 30*time.Second)
	_, zEpoch := producerIDOf(t, zombie)
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	zKeys := keysOf(produceSync(t, zombie, recs(topic, 0, "zombie", 3)...))

	fresh, _ := b.txnClient(t, txnID, 30*time.Second)
	if _, e := producerIDOf(t, fresh); e <= zEpoch {
		t.Errorf("the new producer's epoch %d is not above the zombie's %d", e, zEpoch)
	}
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	fKeys := keysOf(produceSync(t, fresh, recs(topic, 0, "fresh", 2)...))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); !errors.Is(err, kerr.ProducerFenced) {
		t.Errorf("the zombie's EndTxn(commit): %v, want PRODUCER_FENCED", err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("the new producer's commit: %v", err)
	}
	hw := b.waitStable(t, topic, 30*time.Second)
	if got := keysOf(b.readTopic(t, topic, hw, true, 30*time.Second)[0]); !slices.Equal(got, fKeys) {
		t.Errorf("read_committed: %v, want %v", got, fKeys)
	}
	if got := keysOf(b.readTopic(t, topic, hw, false, 30*time.Second)[0]); !slices.Equal(got, append(slices.Clone(zKeys), fKeys...)) {
		t.Errorf("read_uncommitted: %v, want %v then %v", got, zKeys, fKeys)
	}
}

// checkAbortMarker reads the record at offset of topic/partition with
// control records kept and checks that it is an ABORT marker.
func checkAbortMarker(t testing.TB, b *broker, topic string, p int32, offset int64) {
	t.Helper()
	cl, closeCl := b.tempClient(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(offset)}}),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no record at %s/%d offset %d", topic, p, offset)
		}
		var found *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == offset {
				found = r
			}
		})
		if found == nil {
			continue
		}
		// A control record's key is version int16 then type int16: 0
		// is ABORT, 1 is COMMIT.
		if !found.Attrs.IsControl() || len(found.Key) < 4 || found.Key[2] != 0 || found.Key[3] != 0 {
			t.Errorf("%s/%d offset %d: control %v key %x, want an ABORT marker", topic, p, offset, found.Attrs.IsControl(), found.Key)
		}
		return
	}
}

// mapsEqual compares two offset maps.
func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// randSuffix makes topic, group and transactional ids unique, so that the
// tests can run against one external broker repeatedly.
func randSuffix() string {
	return fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)
}
