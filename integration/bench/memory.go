package main

// The memory measurement (-measure memory): issue 15's bounds on memory.
// Each figure is the median of -runs rounds, with their lowest and highest
// (spread); the rounds interleave the figures (rss, heap, partitions,
// connections, rss, ...) so that drift of the machine falls on all alike.
// Each round is on a fresh broker and data dir, with its admin listener
// on, so that the broker's Go heap can be read from /metrics
// (go_memstats_heap_inuse_bytes), and is bounded by -mem-round-timeout:
//
//   - rss: -mem-stream bytes produced and consumed at once through a topic
//     whose retention deletes old segments while it runs (so the disk holds
//     a few GB, not all of it); the producer waits whenever it is more than
//     memLag ahead of the consumer, so retention never deletes what the
//     consumer has not read, and the consumer checks that it saw every
//     offset. RSS after (and the peak sampled while it ran).
//   - heap: a -mem-log byte log is produced, then one consumer reads it from
//     the start: heap in use before, the peak sampled while it reads, after.
//   - partitions: -mem-topics topics of -mem-topic-partitions partitions,
//     one record in each; the broker is stopped and started again on that
//     data dir: the time from exec to a served Metadata, and RSS when idle.
//   - connections: RSS with -mem-conns idle connections (each has done
//     ApiVersions and Metadata) minus RSS without.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/integration/harness"
	"github.com/kcompatd/kcompatd/partition"
)

var (
	flagMemParts      = flag.String("mem", "rss,heap,partitions,connections", "with -measure memory: which memory figures to measure (rss, heap, partitions, connections)")
	flagMemStream     = flag.Int64("mem-stream", 20<<30, "with -measure memory: bytes of values produced and consumed for the RSS figure")
	flagMemLog        = flag.Int64("mem-log", 10<<30, "with -measure memory: bytes of values in the log the heap figure's consumer reads from the start")
	flagMemTopics     = flag.Int("mem-topics", 100, "with -measure memory: topics for the partitions figure")
	flagMemTopicParts = flag.Int("mem-topic-partitions", 100, "with -measure memory: partitions per topic for the partitions figure")
	flagMemConns      = flag.Int("mem-conns", 1000, "with -measure memory: idle connections for the connections figure")
	flagMemTimeout    = flag.Duration("mem-round-timeout", 30*time.Minute, "with -measure memory: the longest one round of one figure may take before the bench fails (the broker's start and stop, bounded apart, aside)")
	flagMemProfiles   = flag.String("mem-profiles", "", "with -measure memory: a `DIR` to save the broker's heap profile into at each live-heap reading (heap-N.pprof)")
)

// The rss figure's topic: segments of memSegment bytes, memRetention bytes
// kept per partition, and the producer at most memLag ahead of the consumer
// (under what retention keeps of a partition, even if every lagging record
// were in one).
const (
	memSegment   = 128 << 20
	memRetention = 512 << 20
	memLag       = 256 << 20
)

// memBroker is a kcompatd started for a memory figure, with its metrics URL.
type memBroker struct {
	b       *harness.Broker
	dir     string
	metrics string
	debug   string // --debug-addr
}

func startMem(bin, tmp, dir string, configs ...string) (*memBroker, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	debug := *flagDebugAddr
	if debug == "" {
		dport, err := harness.FreePort()
		if err != nil {
			return nil, err
		}
		debug = fmt.Sprintf("127.0.0.1:%d", dport)
	}
	args := []string{"--debug-addr", debug}
	configs = append(configs, fmt.Sprintf("kcompatd.metrics.listener=127.0.0.1:%d", port))
	var b *harness.Broker
	if dir == "" {
		b, dir, err = startArgs(bin, tmp, args, configs...)
	} else {
		b, err = startIn(bin, dir, args, configs...)
	}
	if err != nil {
		return nil, err
	}
	return &memBroker{b: b, dir: dir, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), debug: debug}, nil
}

// metric reads one unlabelled sample of the broker's /metrics.
func (m *memBroker) metric(name string) (float64, error) {
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(m.metrics)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", m.metrics, resp.Status)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no sample of %s", m.metrics, name)
}

func (m *memBroker) heap() (float64, error) { return m.metric("go_memstats_heap_inuse_bytes") }

var profileSeq atomic.Int64

// liveHeap is the heap in use right after a garbage collection, which the
// debug listener's heap profile with gc=1 runs: what the broker holds, not
// the garbage a GC cycle has yet to free.
func (m *memBroker) liveHeap() (float64, error) {
	seq := profileSeq.Add(1)
	progress("memory: live heap reading %d", seq)
	cl := &http.Client{Timeout: 30 * time.Second}
	resp, err := cl.Get("http://" + m.debug + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, err
	}
	var out io.Writer = io.Discard
	if *flagMemProfiles != "" {
		f, err := os.Create(filepath.Join(*flagMemProfiles, fmt.Sprintf("heap-%d.pprof", seq)))
		if err != nil {
			resp.Body.Close()
			return 0, err
		}
		defer f.Close()
		out = f
	}
	_, err = io.Copy(out, io.LimitReader(resp.Body, 64<<20))
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("heap profile: %s", resp.Status)
	}
	return m.heap()
}

// sampler records the peak of RSS and heap every 250 ms until stopped.
type sampler struct {
	stopc      chan struct{}
	done       chan struct{}
	rss, heap  float64
	lastErrMsg string
}

func (m *memBroker) sample() *sampler {
	s := &sampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			if r, err := m.b.RSS(); err == nil {
				s.rss = max(s.rss, float64(r))
			}
			if h, err := m.heap(); err == nil {
				s.heap = max(s.heap, h)
			} else {
				s.lastErrMsg = err.Error()
			}
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() { close(s.stopc); <-s.done }

// settle lets the broker's GC return memory after a run: two scavenger
// periods, or until a signal stops the bench.
func settle() {
	select {
	case <-time.After(5 * time.Second):
	case <-interruptCtx.Done():
	}
}

// settled is the broker's RSS and live heap after settle.
func (m *memBroker) settled() (rss, heap float64, err error) {
	settle()
	r, err := m.b.RSS()
	if err != nil {
		return 0, 0, err
	}
	heap, err = m.liveHeap()
	return float64(r), heap, err
}

func mb(v float64) string { return fmt.Sprintf("%.1f MB", v/1e6) }

// gbs is a size in GiB, or MiB below one GiB (the flags' units).
func gbs(n int64) string {
	if n < 1<<30 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%.4g GB", float64(n)/(1<<30))
}

// memFigure is one of -mem's figures: round measures it once, on a fresh
// broker and data dir, within ctx, and keeps what it measured; rows are
// the table's rows of all its rounds.
type memFigure interface {
	round(ctx context.Context, bin, tmp string) error
	rows() [][]string
}

// measureMemory runs -runs rounds of the figures -mem asks for, the
// figures interleaved in each round, and adds their rows.
func measureMemory(bin, tmp string, addRow func(cols ...string)) error {
	var names []string
	var figs []memFigure
	for _, part := range strings.Split(*flagMemParts, ",") {
		var f memFigure
		switch part = strings.TrimSpace(part); part {
		case "rss":
			f = &memStream{}
		case "heap":
			f = &memHeap{}
		case "partitions":
			f = &memPartitions{}
		case "connections":
			f = &memConnections{}
		default:
			return fmt.Errorf("-mem: unknown figure %q (rss, heap, partitions, connections)", part)
		}
		names, figs = append(names, part), append(figs, f)
	}
	runs := max(*flagRuns, 1)
	for i := range runs {
		for fi, f := range figs {
			progress("memory round %d/%d: %s", i+1, runs, names[fi])
			ctx, cancel := context.WithTimeout(interruptCtx, *flagMemTimeout)
			err := f.round(ctx, bin, tmp)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				err = fmt.Errorf("over -mem-round-timeout %v: %w", *flagMemTimeout, err)
			}
			cancel()
			if err != nil {
				return fmt.Errorf("memory %s, round %d: %w", names[fi], i+1, err)
			}
		}
	}
	for _, f := range figs {
		for _, r := range f.rows() {
			addRow(r...)
		}
	}
	return nil
}

// mbSpread is prefix and spread of byte counts vs in MB.
func mbSpread(prefix string, vs []float64) string {
	return prefix + spread("%.1f", " MB", mapVals(vs, func(v float64) float64 { return v / 1e6 }))
}

func randomValues() [][]byte {
	values := make([][]byte, 64)
	for i := range values {
		values[i] = make([]byte, *flagRecordSize)
		_, _ = rand.Read(values[i])
	}
	return values
}

// memTopicBroker starts a broker with brokerConfigs and creates topic
// with -partitions partitions and topicConfigs; the caller stops it. It
// reports whether the broker takes idempotent produce.
func memTopicBroker(bin, tmp, topic string, topicConfigs map[string]*string, brokerConfigs ...string) (*memBroker, bool, error) {
	m, err := startMem(bin, tmp, "", brokerConfigs...)
	if err != nil {
		return nil, false, err
	}
	idempotent, err := supportsIdempotence(&kcompatdServer{m.b, m.dir})
	if err == nil {
		err = createTopicConfigs(m.b.Addr, topic, int32(*flagPartitions), topicConfigs)
	}
	if err != nil {
		stop(m.b, m.dir)
		return nil, false, err
	}
	return m, idempotent, nil
}

// produceN produces n records of random values to topic; before record i
// it calls wait(i), which may hold the producer back or fail the run.
func produceN(ctx context.Context, addr, topic string, n int64, idempotent bool, wait func(i int64) error) error {
	pc, err := newClientAddr(addr, append(producerOpts(idempotent), kgo.MaxBufferedBytes(64<<20))...)
	if err != nil {
		return err
	}
	defer pc.Close()
	var failed atomic.Pointer[error]
	values := randomValues()
	for i := int64(0); i < n && ctx.Err() == nil; i++ {
		if err := wait(i); err != nil {
			return err
		}
		pc.Produce(ctx, &kgo.Record{Topic: topic, Value: values[i%int64(len(values))]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	err = pc.Flush(ctx)
	if e := failed.Load(); e != nil {
		return fmt.Errorf("produce: %w", *e)
	}
	return err
}

// memStream is the rss figure: -mem-stream bytes produced and consumed at
// once, per round.
type memStream struct{ rss, peak, heap, idle, mbps []float64 }

func (f *memStream) round(ctx context.Context, bin, tmp string) error {
	const topic = "mem-stream"
	m, idempotent, err := memTopicBroker(bin, tmp, topic, map[string]*string{
		partition.SegmentBytesConfig:   kadm.StringPtr(strconv.Itoa(memSegment)),
		partition.RetentionBytesConfig: kadm.StringPtr(strconv.Itoa(memRetention)),
	}, "log.retention.check.interval.ms=1000")
	if err != nil {
		return err
	}
	defer stop(m.b, m.dir)
	n := int64(*flagMemStream / int64(*flagRecordSize))
	progress("memory rss: producing and consuming %d MB at once", n*int64(*flagRecordSize)>>20)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rss0, err := m.b.RSS()
	if err != nil {
		return err
	}
	smp := m.sample()

	var consumed atomic.Int64
	lagRecords := int64(memLag / *flagRecordSize)
	consErr := make(chan error, 1)
	go func() { consErr <- consumeAll(ctx, m.b.Addr, topic, n, &consumed) }()

	t0 := time.Now()
	consumerDone := false
	perr := produceN(ctx, m.b.Addr, topic, n, idempotent, func(i int64) error {
		// Bounded: the consumer advances or fails (then ctx ends).
		for i-consumed.Load() > lagRecords && ctx.Err() == nil {
			select {
			case err := <-consErr:
				consumerDone = true
				if err == nil {
					err = errors.New("consumer ended early")
				}
				return err
			case <-time.After(time.Millisecond):
			}
		}
		return nil
	})
	var cerr error
	if !consumerDone {
		if perr != nil {
			cancel() // the consumer would wait for records that never come
		}
		cerr = <-consErr
	}
	wall := time.Since(t0)
	smp.stop()
	if err := errors.Join(perr, cerr); err != nil {
		return err
	}
	rss1, heap1, err := m.settled()
	if err != nil {
		return err
	}
	mbps := float64(n) * float64(*flagRecordSize) / 1e6 / wall.Seconds()
	progress("memory rss: RSS after %s, peak %s, live heap %s; %.0f MB/s", mb(rss1), mb(smp.rss), mb(heap1), mbps)
	f.rss, f.peak, f.heap = append(f.rss, rss1), append(f.peak, smp.rss), append(f.heap, heap1)
	f.idle, f.mbps = append(f.idle, float64(rss0)), append(f.mbps, mbps)
	return nil
}

func (f *memStream) rows() [][]string {
	return [][]string{{fmt.Sprintf("RSS after %s produced and consumed", gbs(*flagMemStream)), mbSpread("", f.rss),
		mbSpread("peak ", f.peak), mbSpread("live heap ", f.heap),
		fmt.Sprintf("target 150 MB; idle before %s; at once, %s, producer at most %d MB ahead; %d partitions, segment.bytes %d MB, retention.bytes %d MB; every offset consumed; median of %d",
			mbSpread("", f.idle), spread("%.0f", " MB/s", f.mbps), memLag>>20, *flagPartitions, memSegment>>20, memRetention>>20, len(f.rss))}}
}

// consumeAll reads n records of topic from the start, counting them in
// count, and fails if an offset is skipped (deleted before it was read).
func consumeAll(ctx context.Context, addr, topic string, n int64, count *atomic.Int64) error {
	cc, err := newClientAddr(addr,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<20),
	)
	if err != nil {
		return err
	}
	defer cc.Close()
	next := map[int32]int64{}
	for count.Load() < n {
		fs := cc.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("consumed %d of %d records: %w", count.Load(), n, ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return fmt.Errorf("fetch: %v", errs[0].Err)
		}
		var gap error
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] && gap == nil {
				gap = fmt.Errorf("partition %d: offset %d after %d: records deleted before they were read", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
		})
		if gap != nil {
			return gap
		}
		count.Add(int64(fs.NumRecords()))
	}
	return nil
}

// memHeap is the heap figure: per round, a -mem-log byte log is produced,
// then read from the start.
type memHeap struct {
	before, peak, after     []float64 // live heap, sampled heap
	rssBefore, rssPeak, rss []float64
}

func (f *memHeap) round(ctx context.Context, bin, tmp string) error {
	const topic = "mem-log"
	m, idempotent, err := memTopicBroker(bin, tmp, topic, nil)
	if err != nil {
		return err
	}
	defer stop(m.b, m.dir)
	n := int64(*flagMemLog / int64(*flagRecordSize))
	progress("memory heap: producing a %d MB log", n*int64(*flagRecordSize)>>20)
	if err := produceN(ctx, m.b.Addr, topic, n, idempotent, func(int64) error { return nil }); err != nil {
		return err
	}
	settle()
	before, err := m.liveHeap()
	if err != nil {
		return err
	}
	rssBefore, err := m.b.RSS()
	if err != nil {
		return err
	}
	progress("memory heap: consuming it from the start")
	smp := m.sample()
	var count atomic.Int64
	err = consumeAll(ctx, m.b.Addr, topic, n, &count)
	smp.stop()
	if err != nil {
		return err
	}
	rssAfter, after, err := m.settled()
	if err != nil {
		return err
	}
	progress("memory heap: live heap before %s, peak %s, after %s", mb(before), mb(smp.heap), mb(after))
	f.before, f.peak, f.after = append(f.before, before), append(f.peak, smp.heap), append(f.after, after)
	f.rssBefore, f.rssPeak, f.rss = append(f.rssBefore, float64(rssBefore)), append(f.rssPeak, smp.rss), append(f.rss, rssAfter)
	return nil
}

func (f *memHeap) rows() [][]string {
	growth := make([]float64, len(f.after))
	for i := range growth {
		growth[i] = f.after[i] - f.before[i]
	}
	return [][]string{{fmt.Sprintf("heap while a consumer reads a %s log from the start", gbs(*flagMemLog)),
		mbSpread("before ", f.before), mbSpread("peak ", f.peak), mbSpread("after ", f.after),
		fmt.Sprintf("target: no growth; after minus before, per round: %s; go_memstats_heap_inuse_bytes: before and after right after a forced GC (live heap), peak sampled every 250 ms (GOGC lets garbage reach about the live heap); RSS before %s, peak %s, after %s; fetch.max.bytes 64 MB, %d partitions; median of %d",
			mbSpread("", growth), mbSpread("", f.rssBefore), mbSpread("", f.rssPeak), mbSpread("", f.rss), *flagPartitions, len(f.before))}}
}

// memPartitions is the partitions figure: per round, a fresh data dir is
// filled with -mem-topics x -mem-topic-partitions partitions, and the
// broker is started again on it.
type memPartitions struct {
	nofile uint64
	rounds []startFigures
}

func (f *memPartitions) round(ctx context.Context, bin, tmp string) error {
	total := *flagMemTopics * *flagMemTopicParts
	nofile, err := raiseFileLimit(total)
	if err != nil {
		return err
	}
	f.nofile = nofile
	m, err := startMem(bin, tmp, "")
	if err != nil {
		return err
	}
	dir := m.dir
	defer os.RemoveAll(dir)
	progress("memory partitions: creating %d topics x %d partitions", *flagMemTopics, *flagMemTopicParts)
	err = fillPartitions(ctx, m.b.Addr)
	// Stopped cleanly, so that the start below finds a clean shutdown.
	serr := m.b.Stop(2 * time.Minute)
	forget(m.b)
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("stopping the broker that filled the data dir: %w", serr)
	}
	progress("memory partitions: starting on %d partitions", total)
	s, err := startOnExisting(bin, dir)
	if err != nil {
		return err
	}
	progress("memory partitions: served Metadata after %.0f ms (CPU %.0f ms), idle RSS %s, live heap %s", ms(s.served), ms(s.cpu), mb(s.rss), mb(s.heap))
	f.rounds = append(f.rounds, s)
	return nil
}

func (f *memPartitions) rows() [][]string {
	total := *flagMemTopics * *flagMemTopicParts
	r := f.rounds
	return [][]string{
		{fmt.Sprintf("start-up with %d partitions", total),
			spread("%.0f", " ms", mapVals(r, func(s startFigures) float64 { return ms(s.served) })),
			"CPU " + spread("%.0f", " ms", mapVals(r, func(s startFigures) float64 { return ms(s.cpu) })), "",
			fmt.Sprintf("target 2 s; exec to a served Metadata (CPU: the broker's utime+stime then) on an existing data dir (%d topics x %d, one record each, clean shutdown), fresh each round; median of %d", *flagMemTopics, *flagMemTopicParts, len(r))},
		{fmt.Sprintf("idle RSS with %d partitions", total),
			mbSpread("", mapVals(r, func(s startFigures) float64 { return s.rss })),
			mbSpread("live heap ", mapVals(r, func(s startFigures) float64 { return s.heap })), "",
			fmt.Sprintf("target 300 MB; 5 s after the served Metadata; RLIMIT_NOFILE %d; median of %d", f.nofile, len(r))},
	}
}

// fillPartitions creates the topics and writes one record to each partition.
func fillPartitions(ctx context.Context, addr string) error {
	cl, err := newClientAddr(addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const perRequest = 20
	for t := 0; t < *flagMemTopics; t += perRequest {
		var names []string
		for i := t; i < min(t+perRequest, *flagMemTopics); i++ {
			names = append(names, memTopic(i))
		}
		resp, err := adm.CreateTopics(ctx, int32(*flagMemTopicParts), 1, nil, names...)
		if err != nil {
			return err
		}
		if err := resp.Error(); err != nil {
			return err
		}
	}
	var failed atomic.Pointer[error]
	value := make([]byte, *flagRecordSize)
	for t := range *flagMemTopics {
		for p := range *flagMemTopicParts {
			cl.Produce(ctx, &kgo.Record{Topic: memTopic(t), Partition: int32(p), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e := failed.Load(); e != nil {
		return fmt.Errorf("produce: %w", *e)
	}
	return nil
}

func memTopic(i int) string { return fmt.Sprintf("mem-%04d", i) }

// startFigures are a start's: time from exec to a served Metadata, the
// broker's CPU time then, and its RSS and live heap 5 s later.
type startFigures struct {
	served, cpu time.Duration
	rss, heap   float64
}

// startOnExisting starts a broker on dir; it stops the broker and keeps
// dir.
func startOnExisting(bin, dir string) (f startFigures, err error) {
	port, err0 := harness.FreePort()
	mport, err1 := harness.FreePort()
	dport, err2 := harness.FreePort()
	if err := errors.Join(err0, err1, err2); err != nil {
		return f, err
	}
	debug := fmt.Sprintf("127.0.0.1:%d", dport)
	d, b, err := timeStart(bin, dir, port, []string{"--debug-addr", debug}, fmt.Sprintf("kcompatd.metrics.listener=127.0.0.1:%d", mport))
	if err != nil {
		return f, err
	}
	f.served = d
	cpu, cerr := b.CPUTime()
	defer func() {
		if err := b.Stop(2 * time.Minute); err != nil {
			progress("broker shutdown: %v", err)
		}
		forget(b)
	}()
	if cerr != nil {
		return f, cerr
	}
	f.cpu = cpu
	settle()
	rss, err := b.RSS()
	if err != nil {
		return f, err
	}
	f.rss = float64(rss)
	mbk := &memBroker{b: b, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", mport), debug: debug}
	f.heap, err = mbk.liveHeap()
	return f, err
}

// memConnections is the connections figure: per round, RSS and live heap
// with -mem-conns idle connections and without.
type memConnections struct{ rss0, rss1, heap0, heap1 []float64 }

func (f *memConnections) round(ctx context.Context, bin, tmp string) error {
	m, err := startMem(bin, tmp, "", fmt.Sprintf("max.connections.per.ip=%d", *flagMemConns+100))
	if err != nil {
		return err
	}
	defer stop(m.b, m.dir)
	rss0, heap0, err := m.settled()
	if err != nil {
		return err
	}
	progress("memory connections: opening %d connections", *flagMemConns)
	conns := make([]net.Conn, 0, *flagMemConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var d net.Dialer
	for range *flagMemConns {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := d.DialContext(dctx, "tcp", m.b.Addr)
		cancel()
		if err != nil {
			return err
		}
		conns = append(conns, c)
		if err := greet(c); err != nil {
			return err
		}
	}
	rss1, heap1, err := m.settled()
	if err != nil {
		return err
	}
	progress("memory connections: RSS %s with them, %s without; live heap %s, %s", mb(rss1), mb(rss0), mb(heap1), mb(heap0))
	f.rss0, f.rss1, f.heap0, f.heap1 = append(f.rss0, rss0), append(f.rss1, rss1), append(f.heap0, heap0), append(f.heap1, heap1)
	return nil
}

func (f *memConnections) rows() [][]string {
	n := float64(*flagMemConns)
	rss := make([]float64, len(f.rss1))
	heap := make([]float64, len(f.rss1))
	for i := range rss {
		rss[i], heap[i] = f.rss1[i]-f.rss0[i], f.heap1[i]-f.heap0[i]
	}
	return [][]string{{fmt.Sprintf("%d idle connections", *flagMemConns), mbSpread("", rss),
		spread("%.1f", " KB each", mapVals(rss, func(v float64) float64 { return v / n / 1e3 })), mbSpread("live heap ", heap),
		fmt.Sprintf("target 100 MB; RSS with them, %s, minus without, %s, per round; each did ApiVersions v3 and Metadata v12; median of %d",
			mbSpread("", f.rss1), mbSpread("", f.rss0), len(rss))}}
}

// greet sends ApiVersions and Metadata on c and reads both answers, as a
// client does when it connects.
func greet(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "bench", "1"
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
	for i, req := range []kmsg.Request{av, md} {
		if _, err := c.Write(f.AppendRequest(nil, req, int32(i+1))); err != nil {
			return err
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n < 4 || n > 16<<20 {
			return errors.New("response size out of range")
		}
		if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
			return err
		}
	}
	return nil
}

// createTopicConfigs creates topic with partitions and topic configs.
func createTopicConfigs(addr, topic string, partitions int32, configs map[string]*string) error {
	cl, err := newClientAddr(addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(interruptCtx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

// raiseFileLimit raises the bench's RLIMIT_NOFILE, which the brokers it
// starts inherit, to what partitions partitions need: the store refuses
// partitions past (limit/2 - 3 x 128) x 8 / 4, that is about one per
// descriptor (partition/partition_limits.go). Raising the hard limit
// needs root.
func raiseFileLimit(partitions int) (uint64, error) {
	want := uint64(partitions) + 1024
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, err
	}
	if r.Cur >= want {
		return r.Cur, nil
	}
	n := syscall.Rlimit{Cur: want, Max: max(r.Max, want)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n); err != nil {
		return 0, fmt.Errorf("%d partitions need RLIMIT_NOFILE %d (the limit is %d, hard %d, enough for %d partitions; run as a user who may raise it, or with fewer -mem-topics): %w",
			partitions, want, r.Cur, r.Max, r.Max-1024, err)
	}
	return want, nil
}
