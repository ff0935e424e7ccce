package integration

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcompatd/kcompatd/integration/harness"
)

// The load test's size: `make test` runs the short defaults, `make soak`
// the 50 producers and 50 consumers for a minute.
var (
	loadDuration  = flag.Duration("load.duration", 4*time.Second, "TestLoad: how long the producers run")
	loadProducers = flag.Int("load.producers", 6, "TestLoad: producer clients")
	loadConsumers = flag.Int("load.consumers", 6, "TestLoad: consumer clients, in groups of up to 25")
)

const (
	loadTopic      = "load"
	loadPartitions = 32
	loadGroupSize  = 25 // consumers per group at most
	loadValueSize  = 200
)

// loadValue is producer id's seq-th record: it names both and is padded to
// loadValueSize with bytes that depend on them.
func loadValue(id, seq int) []byte {
	v := fmt.Appendf(make([]byte, 0, loadValueSize), "%d-%d|", id, seq)
	for len(v) < loadValueSize {
		v = append(v, byte('a'+(id+seq+len(v))%26))
	}
	return v
}

func parseLoadValue(v []byte) (id, seq int, ok bool) {
	head, _, found := bytes.Cut(v, []byte("|"))
	if !found {
		return 0, 0, false
	}
	a, b, found := bytes.Cut(head, []byte("-"))
	if !found {
		return 0, 0, false
	}
	id, err1 := strconv.Atoi(string(a))
	seq, err2 := strconv.Atoi(string(b))
	if err1 != nil || err2 != nil || !bytes.Equal(v, loadValue(id, seq)) {
		return 0, 0, false
	}
	return id, seq, true
}

// seenSet records which of each producer's records a group consumed.
type seenSet struct {
	mu    sync.Mutex
	seen  map[int][]bool
	count int // distinct records
	dups  int // records consumed more than once (a rebalance replays)
	// reached[p] is one past the highest offset of p consumed.
	reached map[int32]int64
}

// caughtUp reports whether the group consumed up to ends in every partition.
func (s *seenSet) caughtUp(ends map[int32]int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, end := range ends {
		if s.reached[p] < end {
			return false
		}
	}
	return true
}

func (s *seenSet) mark(p int32, offset int64, id, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reached[p] = max(s.reached[p], offset+1)
	bits := s.seen[id]
	for len(bits) <= seq {
		bits = append(bits, false)
	}
	if bits[seq] {
		s.dups++
	} else {
		bits[seq] = true
		s.count++
	}
	s.seen[id] = bits
}

// TestLoad runs producers and consumer groups against one broker at once on
// loopback: every acknowledged record is consumed by every group (at least
// once: a rebalance may replay from the last commit), and the log holds each
// producer's records exactly once and in order; afterwards the broker is
// back to the goroutines and file descriptors it had before (no leak), and
// its resident memory, sampled every second, is reported with the
// throughput. The goroutines are counted through the broker's --debug-addr
// listener (Go's goroutine profile).
func TestLoad(t *testing.T) {
	nprod, ncons, dur := *loadProducers, *loadConsumers, *loadDuration
	ngroups := max(1, (ncons+loadGroupSize-1)/loadGroupSize)
	debugPort, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	debugAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(debugPort))
	b := startBrokerWith(t, harness.Options{
		DataDir: t.TempDir(),
		Args:    []string{"--debug-addr", debugAddr},
		Configs: groupConfigs,
	})
	b.createTopic(t, loadTopic, loadPartitions, nil)
	groups := make([]string, ngroups)
	for g := range groups {
		groups[g] = fmt.Sprintf("load-%d", g)
	}

	// Warm up: the offsets topic, every group and a connection of each
	// kind exist before the baseline is taken.
	func() {
		cl, closeCl := b.quietClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(loadTopic))...)
		defer closeCl()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("warm-up"), Value: []byte("warm-up")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			c, closeC := b.quietClient(t, groupOpts(g, loadTopic)...)
			for {
				fs := c.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("warm-up of group %s: nothing consumed", g)
				}
				if fs.NumRecords() > 0 {
					break
				}
			}
			if err := c.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
			closeC()
		}
	}()
	baseG, baseS, baseF := settle(t, b, debugAddr, -1, -1, -1)
	t.Logf("baseline: %d goroutines, %d sockets, %d other fds", baseG, baseS, baseF)

	// Memory, sampled every second until the end.
	var (
		rssMu   sync.Mutex
		rssPeak int64
		rssLast int64
		rssLog  []int64
	)
	stopSampling := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			rss, err := b.RSS()
			if err != nil {
				continue
			}
			rssMu.Lock()
			rssPeak, rssLast = max(rssPeak, rss), rss
			rssLog = append(rssLog, rss>>20)
			rssMu.Unlock()
		}
	}()

	// Consumers first, so that the groups are forming while the
	// producers start.
	seen := make([]*seenSet, ngroups)
	for g := range seen {
		seen[g] = &seenSet{seen: map[int][]bool{}, reached: map[int32]int64{}}
	}
	// The warm-up consumed and committed the warm-up record: the groups
	// resume after it.
	for p, end := range b.endOffsets(t, loadTopic) {
		for g := range seen {
			seen[g].reached[p] = end
		}
	}
	consCtx, stopConsumers := context.WithCancel(context.Background())
	defer stopConsumers()
	var consWG sync.WaitGroup
	var badRecord atomic.Value
	var consumed atomic.Int64
	for i := range ncons {
		g := i % ngroups
		// Sessions long enough for a race-built broker and 100 clients
		// on two cores: an eviction only replays records, but slows the
		// run down.
		cl, closeCl := b.quietClient(t, append(groupOpts(groups[g], loadTopic),
			kgo.FetchMaxWait(100*time.Millisecond),
			kgo.FetchMaxBytes(4<<20), // 50 clients' buffers stay bounded
			kgo.SessionTimeout(30*time.Second),
			kgo.HeartbeatInterval(2*time.Second),
			kgo.RebalanceTimeout(60*time.Second),
		)...)
		consWG.Add(1)
		go func() {
			defer consWG.Done()
			defer closeCl()
			for consCtx.Err() == nil {
				fs := cl.PollFetches(consCtx)
				fs.EachRecord(func(r *kgo.Record) {
					if string(r.Key) == "warm-up" {
						seen[g].mark(r.Partition, r.Offset, -1, 0)
						return
					}
					id, seq, ok := parseLoadValue(r.Value)
					if !ok {
						badRecord.CompareAndSwap(nil, fmt.Sprintf("partition %d offset %d: value %.60q", r.Partition, r.Offset, r.Value))
						return
					}
					seen[g].mark(r.Partition, r.Offset, id, seq)
					consumed.Add(1)
				})
			}
		}()
	}

	// Producers: each keys all its records with its id, so they go to
	// one partition, in order.
	acked := make([]atomic.Int64, nprod)
	var prodErr atomic.Value
	prodCtx, stopProducers := context.WithTimeout(context.Background(), dur)
	defer stopProducers()
	var prodWG sync.WaitGroup
	start := time.Now()
	popts := b.producerOpts(t)
	for id := range nprod {
		cl, closeCl := b.quietClient(t, append(popts[:len(popts):len(popts)],
			kgo.DefaultProduceTopic(loadTopic),
			kgo.ProducerLinger(2*time.Millisecond),
			kgo.MaxBufferedRecords(2000),
		)...)
		prodWG.Add(1)
		go func() {
			defer prodWG.Done()
			key := fmt.Appendf(nil, "producer-%d", id)
			var promises sync.WaitGroup
			for seq := 0; prodCtx.Err() == nil; seq++ {
				promises.Add(1)
				cl.Produce(prodCtx, &kgo.Record{Key: key, Value: loadValue(id, seq)}, func(_ *kgo.Record, err error) {
					defer promises.Done()
					if err == nil {
						acked[id].Add(1)
					} else if prodCtx.Err() == nil {
						prodErr.CompareAndSwap(nil, fmt.Sprintf("producer %d record %d: %v", id, seq, err))
					}
				})
			}
			// Records still buffered when the time is up fail with the
			// context's error; the ones already sent finish.
			promises.Wait()
			closeCl()
		}()
	}
	prodWG.Wait()
	elapsed := time.Since(start)
	if v := prodErr.Load(); v != nil {
		t.Errorf("produce failed: %s", v)
	}

	// The acknowledged counts are a prefix of each producer's sequence
	// unless a record in the middle failed (reported above). Records
	// failed by the deadline after an acknowledged one could leave holes;
	// the log check below finds each producer's real sequence.
	var total int64
	for id := range acked {
		total += acked[id].Load()
	}
	mb := float64(total*loadValueSize) / (1 << 20)
	t.Logf("produced %d records (%.1f MB of values) in %v: %.0f records/s, %.1f MB/s, %d producers",
		total, mb, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), mb/elapsed.Seconds(), nprod)

	// Every group consumes up to the end of every partition; then the
	// consumers stop, and the log is read and checked on its own.
	ends := b.endOffsets(t, loadTopic)
	deadline := time.Now().Add(5 * time.Minute)
	for g := range seen {
		for !seen[g].caughtUp(ends) {
			if time.Now().After(deadline) {
				seen[g].mu.Lock()
				t.Errorf("group %s did not consume to the end offsets %v in 5 minutes; reached %v", groups[g], ends, seen[g].reached)
				seen[g].mu.Unlock()
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	stopConsumers()
	consWG.Wait()
	if v := badRecord.Load(); v != nil {
		t.Errorf("consumed a corrupt record: %s", v)
	}

	perProducer := b.loadLogCheck(t, ends)
	var inLog int64
	for _, n := range perProducer {
		inLog += int64(n)
	}
	if inLog < total {
		t.Errorf("the log holds %d producer records, but %d were acknowledged", inLog, total)
	}
	for id := range nprod {
		if int64(perProducer[id]) < acked[id].Load() {
			t.Errorf("producer %d: %d records acknowledged, %d in the log", id, acked[id].Load(), perProducer[id])
		}
	}
	for g, s := range seen {
		for id, n := range perProducer {
			bits := s.seen[id]
			for seq := range n {
				if seq >= len(bits) || !bits[seq] {
					t.Errorf("group %s never consumed producer %d's record %d", groups[g], id, seq)
					break
				}
			}
		}
		t.Logf("group %s: %d records, %d consumed again after a rebalance", groups[g], s.count, s.dups)
	}
	t.Logf("consumers: %d records in total over %d groups of %d clients", consumed.Load(), ngroups, ncons)

	close(stopSampling)
	<-samplerDone
	rssMu.Lock()
	step := max(1, len(rssLog)/20) // at most about 20 samples in the log
	var shown []int64
	for i := 0; i < len(rssLog); i += step {
		shown = append(shown, rssLog[i])
	}
	t.Logf("broker RSS: peak %d MiB, final %d MiB; every %d s (MiB): %v", rssPeak>>20, rssLast>>20, step, shown)
	rssMu.Unlock()

	// Every client is closed: the broker must drop back to the baseline.
	g, s, f := settle(t, b, debugAddr, baseG, baseS, baseF)
	t.Logf("after: %d goroutines (baseline %d), %d sockets (baseline %d), %d other fds (baseline %d)", g, baseG, s, baseS, f, baseF)
	if g > baseG || s > baseS || f > baseF {
		profile, _ := harness.GoroutineProfile(debugAddr)
		t.Errorf("broker leaked: %d goroutines (baseline %d), %d sockets (baseline %d), %d other fds (baseline %d); goroutines:\n%s",
			g, baseG, s, baseS, f, baseF, profile)
	}
}

// settle polls the broker's goroutine and descriptor counts until they are
// at or below the given ones and returns the last sample, giving up after
// 30 s; with -1s it returns the lowest of each over three samples a second
// apart (a closing connection can linger in one sample; a leak only adds).
func settle(t *testing.T, b *broker, debugAddr string, wantG, wantS, wantF int) (g, s, f int) {
	t.Helper()
	sample := func() (int, int, int) {
		g, err := harness.Goroutines(debugAddr)
		if err != nil {
			t.Fatalf("goroutine count: %v", err)
		}
		s, f, err := b.FDs()
		if err != nil {
			t.Fatalf("fd count: %v", err)
		}
		return g, s, f
	}
	g, s, f = sample()
	if wantG < 0 {
		for range 2 {
			time.Sleep(time.Second)
			g2, s2, f2 := sample()
			g, s, f = min(g, g2), min(s, s2), min(f, f2)
		}
		return g, s, f
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && (g > wantG || s > wantS || f > wantF) {
		time.Sleep(time.Second)
		g, s, f = sample()
	}
	return g, s, f
}

// loadLogCheck reads the whole load topic and checks each producer's
// records: all in one partition, sequence numbers 0, 1, 2... with no gap,
// repeat or reordering. It returns each producer's record count.
func (b *broker) loadLogCheck(t *testing.T, ends map[int32]int64) map[int]int {
	t.Helper()
	from := map[int32]int64{}
	for p := range ends {
		from[p] = 0
	}
	got := readRange(t, b, loadTopic, from, ends, false)
	next := map[int]int{}
	where := map[int]int32{}
	for p, rs := range got {
		for _, r := range rs {
			if string(r.Key) == "warm-up" {
				continue
			}
			id, seq, ok := parseLoadValue(r.Value)
			if !ok {
				t.Fatalf("%s/%d offset %d: corrupt value %.60q", loadTopic, p, r.Offset, r.Value)
			}
			if w, ok := where[id]; ok && w != p {
				t.Fatalf("producer %d's records are in partitions %d and %d", id, w, p)
			}
			where[id] = p
			if seq != next[id] {
				t.Fatalf("%s/%d offset %d: producer %d's record %d, want %d (gap, repeat or reordering)", loadTopic, p, r.Offset, id, seq, next[id])
			}
			next[id]++
		}
	}
	return next
}
