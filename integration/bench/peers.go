package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/integration/harness"
)

// A peer is a broker implementation the same workloads run against: kcompatd
// always, Apache Kafka and kfake when BENCH_PEERS asks.
type peer struct {
	name string
	// start runs a fresh broker on a fresh data dir under tmp; configs are
	// broker properties (only log.flush.interval.messages=1 is used).
	start func(tmp string, configs []string) (server, error)
}

// A server is one running broker the bench started.
type server interface {
	addr() string
	// cpuTime is the broker process's utime+stime so far.
	cpuTime() (time.Duration, error)
	stop()
}

func kcompatdPeer(bin string) peer {
	return peer{name: "kcompatd", start: func(tmp string, configs []string) (server, error) {
		var args []string
		if *flagDebugAddr != "" {
			args = []string{"--debug-addr", *flagDebugAddr}
		}
		b, dir, err := startArgs(bin, tmp, args, configs...)
		if err != nil {
			return nil, err
		}
		return &kcompatdServer{b, dir}, nil
	}}
}

type kcompatdServer struct {
	b   *harness.Broker
	dir string
}

func (s *kcompatdServer) addr() string                    { return s.b.Addr }
func (s *kcompatdServer) cpuTime() (time.Duration, error) { return s.b.CPUTime() }
func (s *kcompatdServer) stop()                           { stop(s.b, s.dir) }

// procServer is a broker child process other than kcompatd.
type procServer struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	port   int
	dir    string
	log    string
}

func (s *procServer) addr() string                    { return fmt.Sprintf("127.0.0.1:%d", s.port) }
func (s *procServer) cpuTime() (time.Duration, error) { return harness.ProcCPUTime(s.cmd.Process.Pid) }

// stop sends SIGTERM to the process started, waits up to 60 s, then kills it.
func (s *procServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		progress("%s (pid %d) did not stop within 60 s; killing it", s.name, s.cmd.Process.Pid)
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	forget(s)
	os.RemoveAll(s.dir)
}

// launch starts cmd with its output in dir/NAME.log and waits (bounded by
// timeout) until a Metadata request lists a broker. The process is
// registered to be stopped on a signal (interrupt.go).
func launch(name string, cmd *exec.Cmd, port int, dir string, timeout time.Duration) (*procServer, error) {
	if err := starting(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	log := filepath.Join(dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		started(nil, nil)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		started(nil, nil)
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &procServer{name: name, cmd: cmd, exited: make(chan struct{}), port: port, dir: dir, log: log}
	go func() { _ = cmd.Wait(); f.Close(); close(s.exited) }()
	started(s, s.stop)
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.exited:
			out, _ := os.ReadFile(log)
			forget(s)
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%s exited during start-up; its output:\n%s", name, tail(out, 4000))
		default:
		}
		if n, err := metadataBrokers(s.addr()); err == nil && n > 0 {
			return s, nil
		}
		if interrupted() {
			s.stop()
			return nil, interruptCtx.Err()
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log)
			s.stop()
			return nil, fmt.Errorf("%s did not serve Metadata within %v; its output:\n%s", name, timeout, tail(out, 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// metadataBrokers sends a Metadata request and returns how many brokers the
// answer lists (Kafka answers with none until its broker is registered).
func metadataBrokers(addr string) (int, error) {
	ctx, cancel := contextTimeout(5 * time.Second)
	defer cancel()
	cl, err := newClientAddr(addr)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	return len(resp.Brokers), nil
}

// kafkaPeer runs Apache Kafka from its jars as a KRaft combined node.
func kafkaPeer(classpath string) (peer, error) {
	// A classpath of one entry or one glob, as java takes it.
	jars, _ := filepath.Glob(classpath)
	if len(jars) == 0 {
		return peer{}, fmt.Errorf("kafka peer: no jars at %q (set BENCH_KAFKA_CLASSPATH to Apache Kafka 4.3.1's libs/*)", classpath)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return peer{}, errors.New("kafka peer: java not on PATH")
	}
	return peer{name: "kafka", start: func(tmp string, configs []string) (server, error) {
		dir, err := os.MkdirTemp(tmp, "kafka-")
		if err != nil {
			return nil, err
		}
		port, err1 := harness.FreePort()
		cport, err2 := harness.FreePort()
		if err := errors.Join(err1, err2); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		props := []string{
			"process.roles=broker,controller",
			"node.id=1",
			fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", cport),
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport),
			fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", port),
			"controller.listener.names=CONTROLLER",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"log.dirs=" + filepath.Join(dir, "data"),
			"offsets.topic.replication.factor=1",
			"transaction.state.log.replication.factor=1",
			"transaction.state.log.min.isr=1",
			"group.initial.rebalance.delay.ms=0",
		}
		props = append(props, configs...)
		propsFile := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(propsFile, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		ctx, cancel := context.WithTimeout(interruptCtx, 2*time.Minute)
		defer cancel()
		format := exec.CommandContext(ctx, java, "-cp", classpath, "kafka.tools.StorageTool", "format",
			"-t", clusterID(), "-c", propsFile)
		if out, err := format.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("kafka storage format: %v\n%s", err, tail(out, 4000))
		}
		// The heap kafka-server-start.sh gives it.
		cmd := exec.Command(java, "-Xmx1G", "-Xms1G", "-cp", classpath, "kafka.Kafka", propsFile)
		return launch("kafka", cmd, port, dir, 2*time.Minute)
	}}, nil
}

// kfakePeer runs kfake as a child process (integration/bench/kfake, its own
// module), with a data dir.
func kfakePeer(tmp string) (peer, error) {
	root, err := harness.ModuleRoot()
	if err != nil {
		return peer{}, err
	}
	bin := filepath.Join(tmp, "kfake")
	progress("building kfake")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(root, "integration", "bench", "kfake")
	if out, err := build.CombinedOutput(); err != nil {
		return peer{}, fmt.Errorf("building kfake: %v\n%s", err, out)
	}
	return peer{name: "kfake", start: func(tmp string, configs []string) (server, error) {
		dir, err := os.MkdirTemp(tmp, "kfake-")
		if err != nil {
			return nil, err
		}
		port, err := harness.FreePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		args := []string{"-port", fmt.Sprint(port), "-data-dir", filepath.Join(dir, "data")}
		for _, c := range configs {
			switch c {
			case "log.flush.interval.messages=1":
				args = append(args, "-sync-writes")
			default:
				os.RemoveAll(dir)
				return nil, fmt.Errorf("kfake peer: no equivalent of %s", c)
			}
		}
		return launch("kfake", exec.Command(bin, args...), port, dir, 30*time.Second)
	}}, nil
}

// peersFromEnv is kcompatd followed by the peers BENCH_PEERS names.
func peersFromEnv(bin, tmp string) ([]peer, error) {
	ps := []peer{kcompatdPeer(bin)}
	for _, name := range strings.Split(os.Getenv("BENCH_PEERS"), ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case "kafka":
			cp := os.Getenv("BENCH_KAFKA_CLASSPATH")
			if cp == "" {
				cp = "/work/kafka-ref/*"
			}
			p, err := kafkaPeer(cp)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		case "kfake":
			p, err := kfakePeer(tmp)
			if err != nil {
				return nil, err
			}
			ps = append(ps, p)
		default:
			return nil, fmt.Errorf("BENCH_PEERS: unknown peer %q (kafka, kfake)", name)
		}
	}
	return ps, nil
}

// clusterID is a random Kafka Uuid in its base64 form, for StorageTool.
func clusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		b[6] = b[6]&0x0f | 0x40 // a version-4 UUID, as Kafka's random-uuid makes
		b[8] = b[8]&0x3f | 0x80
		// Kafka's Uuid.randomUuid draws again for an id starting with
		// '-': the storage tool would read it as an option (a bench run
		// failed on one, 1 in 64).
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

func contextTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// printRatios prints, for each peer other than kcompatd and each metric, the
// peer's median and the median over rounds of peer/kcompatd (each round's
// figures divided, so the ratio is of brokers measured side by side), with
// the lowest and highest round's ratio.
func printRatios(out io.Writer, peers []peer, metrics []string, figures map[string]map[string][]float64) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "peer\tmeasurement\tkcompatd\tpeer\tpeer/kcompatd (spread)")
	base := figures[peers[0].name]
	for _, p := range peers[1:] {
		for _, m := range metrics {
			kc, pv := base[m], figures[p.name][m]
			if len(kc) == 0 || len(pv) != len(kc) {
				continue
			}
			ratios := make([]float64, len(kc))
			for i := range kc {
				ratios[i] = pv[i] / kc[i]
			}
			fmt.Fprintf(w, "%s\t%s\t%.2f\t%.2f\t%.2fx (%.2f-%.2f)\n", p.name, m, medianF(kc), medianF(pv),
				medianF(ratios), slices.Min(ratios), slices.Max(ratios))
		}
	}
	fmt.Fprintf(w, "\nmedians of %d interleaved rounds; CPU is each broker process's utime+stime from /proc/PID/stat\n", *flagRuns)
	return w.Flush()
}
