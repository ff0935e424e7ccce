package integration

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cleanTxnWant is what the log holds at one offset: key=value.
type cleanTxnWant map[int64]string

func cleanTxnKV(r *kgo.Record) string { return string(r.Key) + "=" + string(r.Value) }

// latestByKey reduces records (in offset order) to the offset of the last
// record of every key, as a compacted log's reader sees the table.
func latestByKey(rs []*kgo.Record) cleanTxnWant {
	last := map[string]*kgo.Record{}
	for _, r := range rs {
		last[string(r.Key)] = r
	}
	out := cleanTxnWant{}
	for _, r := range last {
		out[r.Offset] = cleanTxnKV(r)
	}
	return out
}

func asWant(rs []*kgo.Record) cleanTxnWant {
	out := cleanTxnWant{}
	for _, r := range rs {
		out[r.Offset] = cleanTxnKV(r)
	}
	return out
}

func (w cleanTxnWant) String() string {
	offs := slices.Sorted(maps.Keys(w))
	var sb strings.Builder
	for _, o := range offs {
		fmt.Fprintf(&sb, "%d:%s ", o, w[o])
	}
	return sb.String()
}

// stopRestartSamePort stops the broker cleanly and starts it again on the
// same data dir and port, so that producers connected before keep their
// producer ids and sequences across the restart.
func (b *broker) stopRestartSamePort(t testing.TB) *broker {
	t.Helper()
	_, portStr, err := net.SplitHostPort(b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(30 * time.Second); err != nil {
		t.Fatalf("clean shutdown: %v", err)
	}
	opts := b.opts
	opts.Port = port
	return startBrokerWith(t, opts)
}

// Real transactional data through the log cleaner, as Kafka cleans it
// (cleaner-spec sections 8-12): a transactional producer commits and aborts
// transactions interleaved with an idempotent producer, later commits
// overwriting keys. Before and after cleaning read_committed shows exactly
// the latest committed or non-transactional value of every key; once the
// cleaner has been over the log, the aborted records are gone even at
// read_uncommitted, the survivors keep their offsets, and both producers go
// on (same producer id and epoch, no sequence error) through a clean restart
// that leaves the cleaned log as it was, and through a kill.
func TestCleanerTxnCompactsRealTransactions(t *testing.T) {
	b := txnBroker(t, false, "log.cleaner.backoff.ms=50")
	topic := "cleaner-txn-" + randSuffix()
	b.createTopic(t, topic, 1, map[string]*string{
		"cleanup.policy":            strPtr("compact"),
		"internal.segment.bytes":    strPtr("1024"),
		"segment.ms":                strPtr("1000"),
		"min.cleanable.dirty.ratio": strPtr("0.01"),
		"delete.retention.ms":       strPtr("100"),
	})
	txn, _ := b.txnClient(t, "cleaner-txn-"+randSuffix(), 20*time.Second, kgo.DefaultProduceTopic(topic))
	popts := append(b.producerOpts(t), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	idem := b.newClient(t, popts...)
	filler := b.newClient(t, popts...)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	want := cleanTxnWant{}        // latest committed or non-transactional record per key
	wantKey := map[string]int64{} // key -> its offset in want
	produced := cleanTxnWant{}    // every visible (committed or non-transactional) record
	aborted := map[int64]string{}
	txnEnds := 0 // EndTxn calls: with transaction.version 2 each bumps the epoch
	keep := func(rs []*kgo.Record) {
		for _, r := range rs {
			if o, ok := wantKey[string(r.Key)]; ok {
				delete(want, o)
			}
			want[r.Offset] = cleanTxnKV(r)
			wantKey[string(r.Key)] = r.Offset
			produced[r.Offset] = cleanTxnKV(r)
		}
	}
	inTxn := func(commit bool, kvs ...string) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatalf("begin transaction: %v", err)
		}
		var rs []*kgo.Record
		for i := 0; i < len(kvs); i += 2 {
			rs = append(rs, &kgo.Record{Key: []byte(kvs[i]), Value: []byte(kvs[i+1])})
		}
		produceSync(t, txn, rs...)
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit=%v): %v", commit, err)
		}
		txnEnds++
		if commit {
			keep(rs)
			return
		}
		for _, r := range rs {
			aborted[r.Offset] = cleanTxnKV(r)
		}
	}
	plain := func(cl *kgo.Client, key, value string) {
		t.Helper()
		keep(produceSync(t, cl, &kgo.Record{Key: []byte(key), Value: []byte(value)}))
	}

	pad := strings.Repeat("v", 24)
	const rounds = 24
	for i := 0; i < rounds; i++ {
		k := fmt.Sprintf("k%d", i%6)
		switch i % 3 {
		case 1:
			// An aborted write to a key with a committed value, and to a
			// key no committed record ever has.
			inTxn(false, k, fmt.Sprintf("aborted-%d-%s", i, pad), fmt.Sprintf("only-aborted-%d", i), "a"+pad)
		default:
			inTxn(true, k, fmt.Sprintf("committed-%d-%s", i, pad), "shared", fmt.Sprintf("txn-%d", i))
		}
		plain(idem, fmt.Sprintf("p%d", i%4), fmt.Sprintf("idem-%d-%s", i, pad))
		if i%5 == 0 {
			plain(idem, "shared", fmt.Sprintf("idem-%d", i))
		}
	}
	// The idempotent producer's last batch is overwritten by a commit, and
	// the transactional producer's last batch is aborted: the cleaner keeps
	// both batches' headers (producer state), but none of their records.
	plain(idem, "shared", "idem-last")
	inTxn(true, "shared", "txn-last")
	inTxn(false, "k0", "aborted-last", "only-aborted-last", "a")
	// Unique keys from a third producer push the workload out of the
	// active segment, which is never cleaned.
	for i := 0; i < 24; i++ {
		plain(filler, fmt.Sprintf("filler-%02d", i), strings.Repeat("f", 80))
	}
	hw := b.waitStable(t, topic, 30*time.Second)
	end := hw[0]
	ends := map[int32]int64{0: end}

	// checkRead checks records read from offset 0: no aborted record below
	// abortedBelow, every record as produced at its offset, and either
	// exactly want (exact) or want as the latest record of every key.
	checkRead := func(what string, rs []*kgo.Record, abortedBelow int64, exact bool) {
		t.Helper()
		var visible []*kgo.Record
		for _, r := range rs {
			if a, ok := aborted[r.Offset]; ok {
				if r.Offset < abortedBelow {
					t.Fatalf("%s: aborted record %d:%s delivered", what, r.Offset, a)
				}
				continue
			}
			if p, ok := produced[r.Offset]; !ok || p != cleanTxnKV(r) {
				t.Fatalf("%s: offset %d holds %s, produced %q", what, r.Offset, cleanTxnKV(r), p)
			}
			visible = append(visible, r)
		}
		got := latestByKey(visible)
		if exact {
			got = asWant(visible)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%s:\ngot  %v\nwant %v", what, got, want)
		}
	}
	const never = math.MaxInt64

	// (1) read_committed before (or while) the cleaner runs: the latest
	// committed value of every key.
	checkRead("read_committed before cleaning", b.readTopic(t, topic, ends, true, 30*time.Second)[0], never, false)

	// (2) Bounded wait on observable state: read_uncommitted shows exactly
	// the survivors, so aborted data and overwritten values are gone.
	var cleaned []*kgo.Record
	waitStart := time.Now()
	deadline := waitStart.Add(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		cleaned = b.readTopic(t, topic, ends, false, 30*time.Second)[0]
		if maps.Equal(asWant(cleaned), want) || time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	t.Logf("%d records up to offset %d, %d aborted, %d survivors; cleaned within %v",
		len(produced), end, len(aborted), len(want), time.Since(waitStart).Round(time.Millisecond))
	// (3) Exactly the survivors, at the offsets they were produced at.
	checkRead("read_uncommitted after cleaning", cleaned, never, true)
	checkRead("read_committed after cleaning", b.readTopic(t, topic, ends, true, 30*time.Second)[0], never, true)
	adm := kadm.NewClient(filler)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Err != nil || s.Offset != 0 {
		t.Fatalf("log start offset %d (%v) after cleaning, want 0", s.Offset, s.Err)
	}
	if e := b.endOffsets(t, topic)[0]; e != end {
		t.Fatalf("high watermark %d after cleaning, was %d", e, end)
	}

	// (4) Both producers go on with the producer id and epoch they had:
	// the transactional producer's epoch moves on by one per EndTxn
	// (transaction.version 2) and by nothing else (no fencing, no
	// re-initialization).
	txnID, txnEpoch := producerIDOf(t, txn)
	endsAtCapture := txnEnds
	idemID, idemEpoch := producerIDOf(t, idem)
	checkProducers := func(when string) {
		t.Helper()
		wantEpoch := txnEpoch + int16(txnEnds-endsAtCapture)
		if id, e := producerIDOf(t, txn); id != txnID || e != wantEpoch {
			t.Fatalf("%s: transactional producer is %d/%d, want %d/%d (%d transactions ended since %d/%d)", when, id, e, txnID, wantEpoch, txnEnds-endsAtCapture, txnID, txnEpoch)
		}
		if id, e := producerIDOf(t, idem); id != idemID || e != idemEpoch {
			t.Fatalf("%s: idempotent producer is %d/%d, was %d/%d (its sequence was refused)", when, id, e, idemID, idemEpoch)
		}
	}
	inTxn(true, "k1", "after-cleaning")
	inTxn(false, "k2", "aborted-after-cleaning")
	plain(idem, "p1", "idem-after-cleaning")
	plain(idem, "shared", "idem-after-cleaning")
	checkProducers("after cleaning")
	hw = b.waitStable(t, topic, 30*time.Second)
	checkRead("read_committed after producing on", b.readTopic(t, topic, hw, true, 30*time.Second)[0], never, false)

	// A clean restart on the same port: the cleaned log, the producers'
	// state and the aborted-transaction index come back as they were.
	b = b.stopRestartSamePort(t)
	inTxn(true, "k3", "after-restart")
	inTxn(false, "k4", "aborted-after-restart")
	plain(idem, "p2", "idem-after-restart")
	checkProducers("after restart")
	hw = b.waitStable(t, topic, 30*time.Second)
	checkRead("read_committed after restart", b.readTopic(t, topic, hw, true, 30*time.Second)[0], never, false)
	again := b.readTopic(t, topic, hw, false, 30*time.Second)[0]
	checkRead("read_uncommitted after restart", again, end, false)
	// Nothing the cleaner removed comes back, and nothing it kept is lost
	// unless a later value of its key replaced it.
	survived := asWant(cleaned)
	for o, kv := range asWant(again) {
		if o < end && survived[o] != kv {
			t.Fatalf("after restart offset %d holds %s, the cleaned log had %q", o, kv, survived[o])
		}
	}
	for o, kv := range survived {
		if _, ok := want[o]; ok && !slices.ContainsFunc(again, func(r *kgo.Record) bool { return r.Offset == o }) {
			t.Fatalf("after restart the latest value %d:%s is gone", o, kv)
		}
	}

	// And after SIGKILL: producer state is rebuilt from the cleaned log and
	// its snapshots, so both producers still go on.
	b = b.crashRestartSamePort(t)
	inTxn(true, "k5", "after-kill")
	inTxn(false, "k0", "aborted-after-kill")
	plain(idem, "p3", "idem-after-kill")
	checkProducers("after kill")
	hw = b.waitStable(t, topic, 30*time.Second)
	checkRead("read_committed after kill", b.readTopic(t, topic, hw, true, 30*time.Second)[0], never, false)
}
