// Command bench measures kcompatd end to end with franz-go over loopback, as
// `make bench` runs it, and prints a table:
//
//   - produce and consume throughput (MB/s, records/s) of 1 KiB records over
//     8 partitions with acks=all (idempotent when the broker advertises
//     InitProducerId), and the broker's CPU seconds per GB, from
//     /proc/PID/stat utime+stime before and after;
//   - end-to-end latency (p50, p99) at a fixed 5k records/s, with the
//     default flush policy and with log.flush.interval.messages=1 (an fsync
//     per append, where group commit matters);
//   - start-up time from exec to a served Metadata with an empty data dir,
//     and resident memory when idle;
//   - with -measure memory, issue 15's memory bounds (memory.go).
//
// A SIGINT or SIGTERM stops every broker the bench started and removes its
// temp dir (interrupt.go).
//
// Each figure is the median over -runs runs, each on a fresh broker and data
// dir. With BENCH_PEERS=kafka,kfake the throughput and latency runs also go
// to Apache Kafka and kfake (peers.go), interleaved round by round, and a
// second table gives each peer's figures as ratios to kcompatd's. The numbers are for people and for the budget in
// shared/design/architecture.md; nothing here asserts on them.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/integration/harness"
)

var (
	flagSize       = flag.Int64("size", 1<<30, "bytes of record values to produce and consume per throughput run")
	flagRecordSize = flag.Int("record-size", 1024, "record value size in bytes")
	flagPartitions = flag.Int("partitions", 8, "partitions of the benchmark topic")
	flagRuns       = flag.Int("runs", 3, "runs per measurement; the median is printed")
	flagStarts     = flag.Int("starts", 11, "broker starts for the start-up time")
	flagRate       = flag.Int("rate", 5000, "records per second for the latency measurement")
	flagLatencyDur = flag.Duration("latency-duration", 10*time.Second, "how long each latency run produces")
	flagBinary     = flag.String("binary", "", "kcompatd binary to measure (default: build ./cmd/kcompatd)")
	flagVerbose    = flag.Bool("v", false, "print the broker's log")
	flagCodec      = flag.String("compression", "none", "producer compression for the throughput runs: none, gzip, snappy, lz4 or zstd; with a codec the values are compressible JSON-like text instead of random bytes")
	flagDebugAddr  = flag.String("debug-addr", "", "pass --debug-addr `ADDR` (a loopback host:port) to the throughput runs' broker, to take profiles from it while it runs")
	flagMeasure    = flag.String("measure", "startup,throughput,latency", "comma-separated measurements to run: startup, throughput, produce (throughput without the consume half), latency, fsync (many producers with and without log.flush.interval.messages=1: fsync.go), cleaner (one log cleaner pass in this process, cleaner.go), memory (memory.go; -mem picks its figures)")
)

func main() {
	flag.Parse()
	err := run()
	if interrupted() {
		select {} // the signal handler stops the brokers and exits
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	if *flagVerbose {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func run() error {
	tmp, err := os.MkdirTemp("", "kcompatd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	handleSignals(func() { os.RemoveAll(tmp) })
	bin := *flagBinary
	if bin == "" {
		progress("building kcompatd")
		if bin, err = harness.Build(tmp, false); err != nil {
			return err
		}
	}

	var rows [][]string
	add := func(cols ...string) { rows = append(rows, cols) }

	measure := map[string]bool{}
	for _, m := range strings.Split(*flagMeasure, ",") {
		switch m = strings.TrimSpace(m); m {
		case "startup", "throughput", "produce", "latency", "fsync", "cleaner", "memory":
			measure[m] = true
		default:
			return fmt.Errorf("unknown measurement %q", m)
		}
	}
	codec, ok := codecs[*flagCodec]
	if !ok {
		return fmt.Errorf("unknown compression %q", *flagCodec)
	}

	peers, err := peersFromEnv(bin, tmp)
	if err != nil {
		return err
	}

	// Start-up.
	if measure["startup"] {
		progress("measuring start-up (%d starts)", *flagStarts)
		var startups []time.Duration
		var rss []float64
		for range *flagStarts {
			d, r, err := measureStartup(bin, tmp)
			if err != nil {
				return err
			}
			startups = append(startups, d)
			rss = append(rss, float64(r))
		}
		add("start-up to served Metadata (empty data dir)", fmt.Sprintf("%.1f ms", ms(median(startups))), "", "", fmt.Sprintf("median of %d", len(startups)))
		add("resident memory when idle", fmt.Sprintf("%.1f MB", medianF(rss)/1e6), "", "", "after start-up, no topics")
	}

	// figures[peer][metric] holds one value per round; rounds interleave
	// the peers (kcompatd, kafka, kfake, kcompatd, ...) so that drift of the
	// machine falls on all of them alike.
	figures := map[string]map[string][]float64{}
	record := func(p peer, metric string, v float64) {
		if figures[p.name] == nil {
			figures[p.name] = map[string][]float64{}
		}
		figures[p.name][metric] = append(figures[p.name][metric], v)
	}
	var metrics []string // in the order of the table
	metric := func(m string) string {
		if !slices.Contains(metrics, m) {
			metrics = append(metrics, m)
		}
		return m
	}

	// Throughput.
	acks := "acks=all, not idempotent (broker lacks InitProducerId)"
	if measure["throughput"] || measure["produce"] {
		consume := measure["throughput"]
		var prod, cons []throughput
		idempotent := false
		for i := range *flagRuns {
			for _, p := range peers {
				progress("throughput round %d/%d, %s: %d MB", i+1, *flagRuns, p.name, *flagSize>>20)
				pt, ct, idem, err := measureThroughput(p, tmp, codec, consume)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				progress("%s: produce %.0f MB/s, %.2f CPU-s/GB", p.name, pt.mbps, pt.cpuPerGB)
				record(p, metric("produce MB/s"), pt.mbps)
				record(p, metric("produce CPU-s/GB"), pt.cpuPerGB)
				if consume {
					progress("%s: consume %.0f MB/s, %.2f CPU-s/GB", p.name, ct.mbps, ct.cpuPerGB)
					record(p, metric("consume MB/s"), ct.mbps)
					record(p, metric("consume CPU-s/GB"), ct.cpuPerGB)
				}
				if p.name == "kcompatd" {
					floorRound(tmp)
					idempotent = idem
					prod = append(prod, pt)
					cons = append(cons, ct)
				}
			}
		}
		if idempotent {
			acks = "acks=all, idempotent"
		}
		runs := []struct {
			name, cond string
			runs       []throughput
		}{{"produce", acks + ", compression " + *flagCodec, prod}}
		if consume {
			runs = append(runs, struct {
				name, cond string
				runs       []throughput
			}{"consume", "from the start of the produced log", cons})
		}
		for _, x := range runs {
			add(x.name+" throughput",
				fmt.Sprintf("%.0f MB/s", medianF(mapVals(x.runs, func(t throughput) float64 { return t.mbps }))),
				fmt.Sprintf("%.0f rec/s", medianF(mapVals(x.runs, func(t throughput) float64 { return t.rps }))),
				spread("%.2f", " CPU-s/GB", mapVals(x.runs, func(t throughput) float64 { return t.cpuPerGB })),
				fmt.Sprintf("%d B records, %d partitions, %s; median of %d", *flagRecordSize, *flagPartitions, x.cond, len(x.runs)))
		}
		if r := floorRow(); r != nil {
			add(r...)
		}
	}

	// Latency.
	for _, lc := range []struct {
		name    string
		configs []string
	}{
		{"default flush policy", nil},
		{"log.flush.interval.messages=1", []string{"log.flush.interval.messages=1"}},
	} {
		if !measure["latency"] {
			break
		}
		var p50s, p99s []time.Duration
		var latAcks string
		var floors []diskFloor // with an fsync per append: the disk's own, each round
		var commitP50s, commitP99s []float64
		for i := range *flagRuns {
			for _, p := range peers {
				progress("latency round %d/%d (%s), %s", i+1, *flagRuns, lc.name, p.name)
				p50, p99, idem, err := measureLatency(p, tmp, lc.configs)
				if err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
				progress("%s: p50 %.2f ms, p99 %.2f ms", p.name, ms(p50), ms(p99))
				record(p, metric("latency p50 ms, "+lc.name), ms(p50))
				record(p, metric("latency p99 ms, "+lc.name), ms(p99))
				if p.name == "kcompatd" {
					// The latency producer's own flavour: acks above is
					// only set when throughput was measured.
					latAcks = "acks=all, not idempotent (broker lacks InitProducerId)"
					if idem {
						latAcks = "acks=all, idempotent"
					}
					p50s = append(p50s, p50)
					p99s = append(p99s, p99)
				}
			}
			if lc.configs != nil {
				f, err := measureDiskFloor(tmp)
				if err != nil {
					return err
				}
				floors = append(floors, f)
				c50, c99, err := measureCommitFloor(tmp, *flagRate, *flagLatencyDur, *flagPartitions, *flagRecordSize)
				if err != nil {
					return err
				}
				progress("group-commit floor: p50 %.2f ms, p99 %.2f ms", ms(c50), ms(c99))
				commitP50s = append(commitP50s, ms(c50))
				commitP99s = append(commitP99s, ms(c99))
			}
		}
		add("end-to-end latency, "+lc.name,
			"p50 "+spread("%.2f", " ms", mapVals(p50s, ms)),
			"p99 "+spread("%.2f", " ms", mapVals(p99s, ms)), "",
			fmt.Sprintf("%d rec/s, linger 0, %s; median of %d", *flagRate, latAcks, len(p50s)))
		if len(floors) > 0 {
			add("  disk floor: the same appends, group-committed per file",
				"p50 "+spread("%.2f", " ms", commitP50s),
				"p99 "+spread("%.2f", " ms", commitP99s), "",
				fmt.Sprintf("no broker: %d files, a write then fsync loop each (commitfloor.go), right after each round; median of %d", *flagPartitions, len(commitP50s)))
			add(diskFloorRow(floors)...)
		}
	}
	if measure["fsync"] {
		if err := measureFsync(peers, tmp, add, func(p peer, m string, v float64) { record(p, metric(m), v) }); err != nil {
			return err
		}
	}
	if measure["cleaner"] {
		cr, err := measureCleaner(tmp, *flagRuns)
		if err != nil {
			return err
		}
		rows = append(rows, cr...)
	}
	if measure["memory"] {
		if err := measureMemory(bin, tmp, add); err != nil {
			return err
		}
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "measurement\tresult\t\t\tconditions")
	for _, r := range rows {
		for i, c := range r {
			if i > 0 {
				fmt.Fprint(w, "\t")
			}
			fmt.Fprint(w, c)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(peers) > 1 {
		fmt.Println()
		return printRatios(os.Stdout, peers, metrics, figures)
	}
	return nil
}

type throughput struct {
	mbps, rps, cpuPerGB float64
}

// mapVals is f of each of xs, in order: one figure of each round.
func mapVals[T any](xs []T, f func(T) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// spread is how the table prints a figure of several rounds: their median
// in verb, unit, then their lowest and highest in parentheses, as in
// "2.25 CPU-s/GB (2.19-2.31)". A range that reaches below zero is written
// "(-1.5 to 0.5)", so that a minus sign never reads as the dash.
func spread(verb, unit string, vs []float64) string {
	sep := "-"
	if slices.Min(vs) < 0 {
		sep = " to "
	}
	return fmt.Sprintf(verb+"%s ("+verb+sep+verb+")", medianF(vs), unit, slices.Min(vs), slices.Max(vs))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	return s[len(s)/2]
}

// startArgs is start with extra command-line arguments for the broker.
func startArgs(bin, tmp string, args []string, configs ...string) (*harness.Broker, string, error) {
	dir, err := os.MkdirTemp(tmp, "data-")
	if err != nil {
		return nil, "", err
	}
	b, err := startIn(bin, dir, args, configs...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return b, dir, nil
}

// startIn starts a broker on the data dir dir and registers it to be
// stopped on a signal (interrupt.go); stop or forget unregisters it.
func startIn(bin, dir string, args []string, configs ...string) (*harness.Broker, error) {
	return startOpts(harness.Options{Binary: bin, DataDir: dir, Configs: configs, Args: args, Logf: logf}, dir)
}

// startOpts is harness.Start, registered; a signal stops the broker and
// removes dataDir.
func startOpts(opts harness.Options, dataDir string) (*harness.Broker, error) {
	if err := starting(); err != nil {
		return nil, err
	}
	b, err := harness.Start(opts)
	if err != nil {
		started(nil, nil)
		return nil, err
	}
	started(b, func() { _ = b.Stop(30 * time.Second); os.RemoveAll(dataDir) })
	return b, nil
}

func stop(b *harness.Broker, dir string) {
	if err := b.Stop(30 * time.Second); err != nil {
		progress("broker shutdown: %v", err)
	}
	forget(b)
	os.RemoveAll(dir)
}

// measureStartup starts a broker on an empty data dir and returns the time
// from exec to the first Metadata response, and the idle RSS. A client
// dials the port from before the exec, so the log line plays no part.
func measureStartup(bin, tmp string) (time.Duration, int64, error) {
	dir, err := os.MkdirTemp(tmp, "start-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	port, err := harness.FreePort()
	if err != nil {
		return 0, 0, err
	}
	d, b, err := timeStart(bin, dir, port, nil)
	if err != nil {
		return 0, 0, err
	}
	defer stop(b, dir)
	rss, err := b.RSS()
	if err != nil {
		return 0, 0, err
	}
	return d, rss, nil
}

// timeStart starts a broker on dir listening on port and returns the time
// from exec to the first Metadata response; the caller stops the broker.
func timeStart(bin, dir string, port int, args []string, configs ...string) (time.Duration, *harness.Broker, error) {
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	type served struct {
		at  time.Time
		err error
	}
	done := make(chan struct{})
	servedCh := make(chan served, 1)
	go func() {
		// Bounded: 10 s of attempts, or until the start failed.
		deadline := time.Now().Add(10 * time.Second)
		for {
			at, err := metadataServedAt(addr)
			if err == nil || time.Now().After(deadline) {
				servedCh <- served{at, err}
				return
			}
			select {
			case <-done:
				servedCh <- served{err: err}
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	b, err := startOpts(harness.Options{Binary: bin, DataDir: dir, Configs: configs, Args: args, Logf: logf, Port: port}, dir)
	if err != nil {
		close(done)
		<-servedCh
		return 0, nil, err
	}
	s := <-servedCh
	if s.err != nil {
		stop(b, dir)
		return 0, nil, s.err
	}
	return s.at.Sub(b.StartedAt()), b, nil
}

// metadataServedAt sends a Metadata v1 request and returns when the answer
// arrived.
func metadataServedAt(addr string) (time.Time, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return time.Time{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		return time.Time{}, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return time.Time{}, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return time.Time{}, errors.New("metadata response size out of range")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return time.Time{}, err
	}
	at := time.Now()
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(1)
	if err := resp.ReadFrom(body[4:]); err != nil {
		return time.Time{}, fmt.Errorf("metadata response: %w", err)
	}
	return at, nil
}

func newClient(s server, opts ...kgo.Opt) (*kgo.Client, error) {
	return newClientAddr(s.addr(), opts...)
}

func newClientAddr(addr string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
}

// supportsIdempotence reports whether the broker advertises InitProducerId.
func supportsIdempotence(b server) (bool, error) {
	cl, err := newClient(b)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return false, err
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 22 {
			return true, nil
		}
	}
	return false, nil
}

func producerOpts(idempotent bool) []kgo.Opt {
	opts := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	return opts
}

func createTopic(b server, name string) error {
	cl, err := newClient(b)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(*flagPartitions), 1, nil, name)
	if err != nil {
		return err
	}
	return resp.Err
}

// codecs are the values of -compression.
var codecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

// measureThroughput produces -size bytes of values compressed with codec,
// then, if consume, consumes them back, on a fresh broker.
func measureThroughput(p peer, tmp string, codec kgo.CompressionCodec, consume bool) (prod, cons throughput, idempotent bool, err error) {
	b, err := p.start(tmp, nil)
	if err != nil {
		return prod, cons, false, err
	}
	defer b.stop()
	if idempotent, err = supportsIdempotence(b); err != nil {
		return prod, cons, false, err
	}
	const topic = "bench"
	if err := createTopic(b, topic); err != nil {
		return prod, cons, idempotent, err
	}
	n := int(*flagSize / int64(*flagRecordSize))
	bytesTotal := float64(n) * float64(*flagRecordSize)

	// A pool of values, not one value reused everywhere: random bytes
	// (incompressible) without compression, JSON-like text with it.
	values := make([][]byte, 64)
	keys := make([][]byte, 1024)
	compressed := *flagCodec != "none"
	for i := range values {
		if compressed {
			values[i] = eventValue(*flagRecordSize)
		} else {
			values[i] = make([]byte, *flagRecordSize)
			_, _ = rand.Read(values[i])
		}
	}
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user-%08d", i*7919%100000000)
	}

	cl, err := newClient(b, append(producerOpts(idempotent), kgo.MaxBufferedBytes(256<<20), kgo.ProducerBatchCompression(codec))...)
	if err != nil {
		return prod, cons, idempotent, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var failed atomic.Pointer[error]
	cpu0, err := b.cpuTime()
	if err != nil {
		cl.Close()
		return prod, cons, idempotent, err
	}
	t0 := time.Now()
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: values[i%len(values)]}
		if compressed {
			r.Key = keys[i%len(keys)]
		}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		cl.Close()
		return prod, cons, idempotent, err
	}
	wall := time.Since(t0)
	cpu1, err := b.cpuTime()
	cl.Close()
	if err != nil {
		return prod, cons, idempotent, err
	}
	if e := failed.Load(); e != nil {
		return prod, cons, idempotent, fmt.Errorf("produce: %w", *e)
	}
	prod = throughput{
		mbps:     bytesTotal / 1e6 / wall.Seconds(),
		rps:      float64(n) / wall.Seconds(),
		cpuPerGB: (cpu1 - cpu0).Seconds() / (bytesTotal / 1e9),
	}
	if !consume {
		return prod, cons, idempotent, nil
	}

	// Consume everything back.
	cc, err := newClient(b,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<20),
	)
	if err != nil {
		return prod, cons, idempotent, err
	}
	defer cc.Close()
	cpu0, err = b.cpuTime()
	if err != nil {
		return prod, cons, idempotent, err
	}
	t0 = time.Now()
	got := 0
	for got < n {
		fs := cc.PollFetches(ctx)
		if ctx.Err() != nil {
			return prod, cons, idempotent, fmt.Errorf("consumed %d of %d records before the deadline", got, n)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return prod, cons, idempotent, fmt.Errorf("fetch: %v", errs[0].Err)
		}
		got += fs.NumRecords()
	}
	wall = time.Since(t0)
	cpu1, err = b.cpuTime()
	if err != nil {
		return prod, cons, idempotent, err
	}
	cons = throughput{
		mbps:     bytesTotal / 1e6 / wall.Seconds(),
		rps:      float64(n) / wall.Seconds(),
		cpuPerGB: (cpu1 - cpu0).Seconds() / (bytesTotal / 1e9),
	}
	return prod, cons, idempotent, nil
}

// measureLatency produces at a fixed rate for -latency-duration, each record
// carrying its send time, and measures when a consumer sees it.
func measureLatency(p peer, tmp string, configs []string) (p50, p99 time.Duration, idempotent bool, err error) {
	b, err := p.start(tmp, configs)
	if err != nil {
		return 0, 0, idempotent, err
	}
	defer b.stop()
	idempotent, err = supportsIdempotence(b)
	if err != nil {
		return 0, 0, idempotent, err
	}
	const topic = "latency"
	if err := createTopic(b, topic); err != nil {
		return 0, 0, idempotent, err
	}
	n := int(float64(*flagRate) * flagLatencyDur.Seconds())

	cc, err := newClient(b,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return 0, 0, idempotent, err
	}
	defer cc.Close()
	// Let the consumer reach the (empty) partitions before timing starts.
	warm, cancelWarm := context.WithTimeout(context.Background(), 500*time.Millisecond)
	cc.PollFetches(warm)
	cancelWarm()

	pc, err := newClient(b, append(producerOpts(idempotent), kgo.ProducerLinger(0))...)
	if err != nil {
		return 0, 0, idempotent, err
	}
	defer pc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), *flagLatencyDur+2*time.Minute)
	defer cancel()
	// One record with a zero send time first, so that connections and
	// metadata are in place before timing starts; the consumer skips it.
	if err := pc.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: make([]byte, *flagRecordSize)}).FirstErr(); err != nil {
		return 0, 0, idempotent, fmt.Errorf("warm-up produce: %w", err)
	}
	lat := make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	wg.Add(1)
	var consumeErr error
	go func() {
		defer wg.Done()
		for len(lat) < n {
			f := cc.PollFetches(ctx)
			now := time.Now()
			if ctx.Err() != nil {
				consumeErr = fmt.Errorf("latency consumer saw %d of %d records", len(lat), n)
				return
			}
			if errs := f.Errors(); len(errs) > 0 {
				consumeErr = errs[0].Err
				return
			}
			f.EachRecord(func(r *kgo.Record) {
				sent := int64(binary.BigEndian.Uint64(r.Value))
				if sent != 0 {
					lat = append(lat, now.Sub(time.Unix(0, sent)))
				}
			})
		}
	}()

	var failed atomic.Pointer[error]
	interval := time.Second / time.Duration(*flagRate)
	t0 := time.Now()
	for i := range n {
		due := t0.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		v := make([]byte, *flagRecordSize)
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		pc.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := pc.Flush(ctx); err != nil {
		return 0, 0, idempotent, err
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return 0, 0, idempotent, fmt.Errorf("produce: %w", *e)
	}
	if consumeErr != nil {
		return 0, 0, idempotent, consumeErr
	}
	slices.Sort(lat)
	return lat[len(lat)*50/100], lat[len(lat)*99/100], idempotent, nil
}

// eventValue is n bytes of JSON-like event text, compressing about as logs
// and events do (3-4x with lz4 or zstd): repeated field names, words from a
// small vocabulary, random ids and numbers.
func eventValue(n int) []byte {
	words := []string{"checkout", "login", "search", "view", "cart", "payment", "shipped", "refund", "mobile", "desktop", "eu-west-1", "us-east-2"}
	var r [16]byte
	v := make([]byte, 0, n+128)
	for len(v) < n {
		_, _ = rand.Read(r[:])
		u := binary.BigEndian.Uint64(r[:])
		w := binary.BigEndian.Uint64(r[8:])
		v = fmt.Appendf(v, `{"id":"%016x","ts":%d,"event":"%s","device":"%s","amount":%d.%02d,"session":"%08x"},`,
			u, 1700000000000+w%1e9, words[w%uint64(len(words))], words[(w>>8)%uint64(len(words))], (w>>16)%1000, (w>>32)%100, uint32(u>>7))
	}
	return v[:n]
}
