// Package integration holds the end-to-end tests: each one starts the real
// kcompatd binary (built once in TestMain, race-built when the tests are) on
// a free 127.0.0.1 port with its own data dir and talks to it with franz-go
// (kgo, kadm) or over a raw TCP connection.
package integration

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/integration/harness"
)

// kcompatdBinary is the kcompatd binary TestMain built.
var kcompatdBinary string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kcompatd-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kcompatdBinary, err = harness.Build(dir, raceEnabled)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// scale shrinks a workload under the race detector.
func scale(n int) int {
	if raceEnabled {
		return max(n/5, 1)
	}
	return n
}

// broker is a started kcompatd plus the test it belongs to.
type broker struct {
	*harness.Broker
	dataDir string
	configs []string
	opts    harness.Options // to start it again
}

// startBroker starts kcompatd on dataDir ("" means a new t.TempDir()) with
// the given extra properties; t.Cleanup kills it by PID and fails the test
// if the broker reported a data race or a panic.
func startBroker(t testing.TB, dataDir string, configs ...string) *broker {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	return startBrokerWith(t, harness.Options{DataDir: dataDir, Configs: configs})
}

// startBrokerWith is startBroker with every harness option; Binary and Logf
// are filled in.
func startBrokerWith(t testing.TB, opts harness.Options) *broker {
	t.Helper()
	opts.Binary = kcompatdBinary
	opts.Logf = t.Logf
	b, err := harness.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Kill(); err != nil {
			t.Errorf("killing broker pid %d: %v", b.PID(), err)
		}
		if s := b.Suspicious(); s != "" {
			t.Errorf("broker output contains %q", s)
		}
	})
	return &broker{Broker: b, dataDir: opts.DataDir, configs: opts.Configs, opts: opts}
}

// restart stops the broker cleanly (SIGTERM, expecting exit status 0) and
// starts a new one on the same data dir and properties.
func (b *broker) restart(t testing.TB) *broker {
	t.Helper()
	if err := b.Stop(30 * time.Second); err != nil {
		t.Fatalf("clean shutdown: %v", err)
	}
	return startBrokerWith(t, b.opts)
}

// crashRestart kills the broker with SIGKILL and starts a new one on the
// same data dir.
func (b *broker) crashRestart(t testing.TB) *broker {
	t.Helper()
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	return startBrokerWith(t, b.opts)
}

// testLogger sends kgo's log to the test log. It goes quiet once the test's
// cleanup closed the client, since t.Logf after a test ends panics and kgo
// may log from a goroutine that is still unwinding.
type testLogger struct {
	t     testing.TB
	level kgo.LogLevel
	done  *atomic.Bool
}

func (l testLogger) Level() kgo.LogLevel { return l.level }

func (l testLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	if l.done.Load() {
		return
	}
	l.t.Logf("kgo %s: %s %v", level, msg, keyvals)
}

// newClient returns a kgo client seeded with the broker, logging to the test
// log at Info, closed by t.Cleanup.
func (b *broker) newClient(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, closeFn := b.tempClient(t, opts...)
	t.Cleanup(closeFn)
	return cl
}

// tempClient is newClient for a client the caller closes with the returned
// function (before the test ends).
func (b *broker) tempClient(t testing.TB, opts ...kgo.Opt) (*kgo.Client, func()) {
	t.Helper()
	done := new(atomic.Bool)
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(b.Addr),
		kgo.WithLogger(testLogger{t: t, level: kgo.LogLevelInfo, done: done}),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	return cl, func() {
		once.Do(func() {
			cl.Close()
			done.Store(true)
		})
	}
}

// producerOpts returns kgo options for a producer with acks=all. kgo turns
// on idempotence by default, which needs InitProducerId (API key 22); when
// the broker does not advertise it yet, idempotence is disabled and at most
// one produce request is in flight per broker so that order still holds.
func (b *broker) producerOpts(t testing.TB) []kgo.Opt {
	t.Helper()
	if b.supports(t, 22) {
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	}
	t.Log("broker does not advertise InitProducerId: producing without idempotence (kgo.DisableIdempotentWrite)")
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(1),
	}
}

// supports reports whether the broker's ApiVersions lists the key.
func (b *broker) supports(t testing.TB, key int16) bool {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key {
			return true
		}
	}
	return false
}

// createTopic creates a topic with n partitions via kadm.
func (b *broker) createTopic(t testing.TB, name string, n int32, configs map[string]*string) {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, n, 1, configs, name)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if resp.Err != nil {
		t.Fatalf("create topic %s: %v (%s)", name, resp.Err, resp.ErrMessage)
	}
}

// endOffsets returns each partition's high watermark.
func (b *broker) endOffsets(t testing.TB, topic string) map[int32]int64 {
	t.Helper()
	cl, closeCl := b.tempClient(t)
	defer closeCl()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	out := map[int32]int64{}
	var lerr error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			lerr = fmt.Errorf("partition %d: %w", o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	if lerr != nil {
		t.Fatalf("list end offsets: %v", lerr)
	}
	return out
}

// consumeAll reads every partition of topic from offset 0 to the given end
// offsets and returns the records per partition, in the order fetched.
func (b *broker) consumeAll(t testing.TB, topic string, ends map[int32]int64, timeout time.Duration) map[int32][]*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	want := 0
	for p, end := range ends {
		offsets[p] = kgo.NewOffset().At(0)
		want += int(end)
	}
	cl, closeCl := b.tempClient(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	defer closeCl()
	out := map[int32][]*kgo.Record{}
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s before the deadline", got, want, topic)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("fetch %s/%d: %v", topic, p, err)
		})
		if t.Failed() {
			t.FailNow()
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				out[r.Partition] = append(out[r.Partition], r)
				got++
			}
		})
	}
	return out
}
