package protocol

import (
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// barrierFS holds every fsync of a .log file until want of them are
// running at once (or gives up after a while, so that a serial flusher
// fails the test instead of hanging it).
type barrierFS struct {
	vfs.FS
	mu      sync.Mutex
	want    int
	arrived int
	all     chan struct{}
	syncs   int          // fsyncs of .log files
	onWrite func() error // if set, runs before each write to a .log file
	onSync  func()       // if set, runs before each fsync of a .log file
}

func (b *barrierFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := b.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &barrierFile{File: f, fs: b}, nil
}

type barrierFile struct {
	vfs.File
	fs *barrierFS
}

func (f *barrierFile) Sync() error {
	b := f.fs
	b.mu.Lock()
	b.syncs++
	all, hook := b.all, b.onSync
	if all != nil {
		b.arrived++
		if b.arrived == b.want {
			close(all)
			b.all = nil
		}
	}
	b.mu.Unlock()
	if hook != nil {
		hook()
	}
	if all != nil {
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
	}
	return f.File.Sync()
}

func (f *barrierFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	h := f.fs.onWrite
	f.fs.mu.Unlock()
	if h != nil {
		if err := h(); err != nil {
			return 0, err
		}
	}
	return f.File.WriteAt(p, off)
}

// fsyncServer serves a store on fsys with topic a of n partitions and
// flush.messages=1.
func fsyncServer(t *testing.T, fsys vfs.FS, n int32) (*Server, *partition.Topic, *wire) {
	t.Helper()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store, err := partition.Open(partition.Config{Dir: "/data", NodeID: 1, FS: fsys, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := store.CreateTopic("a", n, map[string]string{"flush.messages": "1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	b := startBrokerOn(t, store, clk, zerolog.Nop(), nil, nil, nil)
	return b.s, tp, dialWire(t, b.addr)
}

// produceToA is a Produce (acks=all) of one one-record batch to each of
// topic a's partitions parts.
func produceToA(t *testing.T, parts ...int32) *kmsg.ProduceRequest {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "a"
	for _, p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = oneRecordBatch(t)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestProduceFsyncsPartitionsAtOnce: under flush.messages=1 a Produce of
// n partitions runs their n fsyncs at the same time, not one after the
// other: each fsync is held until all n have started, which a serial
// flusher never reaches. Every partition is then answered, and readable.
func TestProduceFsyncsPartitionsAtOnce(t *testing.T) {
	const n = 8
	bfs := &barrierFS{FS: memfs.New()}
	_, tp, w := fsyncServer(t, bfs, n)
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	produce := func() *kmsg.ProduceResponse {
		return w.roundTrip(produceToA(t, parts...)).(*kmsg.ProduceResponse)
	}
	// The first produce to each partition writes its leader-epoch
	// checkpoint too; the barrier is for the second.
	produce()
	bfs.mu.Lock()
	bfs.want, bfs.all = n, make(chan struct{})
	bfs.mu.Unlock()
	resp := produce()
	bfs.mu.Lock()
	arrived, pending := bfs.arrived, bfs.all != nil
	bfs.mu.Unlock()
	if pending {
		t.Fatalf("only %d of %d partition fsyncs ran at once", arrived, n)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != n {
		t.Fatalf("response %+v", resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.BaseOffset != 1 {
			t.Fatalf("partition %d: code %d, base offset %d", p.Partition, p.ErrorCode, p.BaseOffset)
		}
		if hw := tp.Partitions[p.Partition].Offsets().HighWatermark; hw != 2 {
			t.Fatalf("partition %d: high watermark %d, want 2", p.Partition, hw)
		}
	}
}

// TestProduceAnswersHeldForOneFsync: Produce requests pipelined on one
// connection share fsyncs. The first request's fsync is held; the
// connection writes the other three requests' batches while it runs, and
// the log's next fsync covers all three. All four requests are answered,
// in order, each with its own offset, with two fsyncs, and an ApiVersions
// sent after them is answered after them.
func TestProduceAnswersHeldForOneFsync(t *testing.T) {
	bfs := &barrierFS{FS: memfs.New()}
	_, tp, w := fsyncServer(t, bfs, 1)
	w.roundTrip(produceToA(t, 0)) // writes the leader-epoch checkpoint

	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	bfs.mu.Lock()
	bfs.syncs = 0
	bfs.onSync = func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	bfs.mu.Unlock()

	const n = 4
	reqs := make([]*kmsg.ProduceRequest, n)
	var frames []byte
	id := "kcompatd-test"
	for i := range reqs {
		reqs[i] = produceToA(t, 0)
		w.corr++
		frames = append(frames, encodeRequest(reqs[i], w.corr, &id)...)
	}
	first := w.corr - n + 1
	// Then a request that is not a Produce: answered after them all.
	av := apiVersionsReq(3)
	w.corr++
	frames = append(frames, encodeRequest(av, w.corr, &id)...)
	w.writeRaw(frames)
	<-entered // the first request's fsync runs, blocked
	// The other requests are written while it runs (the connection does
	// not wait for it), so that one more fsync covers them all.
	l := tp.Partitions[0]
	waitWrittenDuringFsync(t, l, 1+n, release)
	close(release)
	for i := range reqs {
		resp, err := w.recv(reqs[i].Key(), reqs[i].GetVersion(), first+int32(i))
		if err != nil {
			t.Fatal(err)
		}
		p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(1+i) {
			t.Fatalf("request %d: code %d, base offset %d", i, p.ErrorCode, p.BaseOffset)
		}
	}
	if _, err := w.recv(av.Key(), av.GetVersion(), first+n); err != nil {
		t.Fatal(err)
	}
	bfs.mu.Lock()
	syncs := bfs.syncs
	bfs.mu.Unlock()
	if syncs > 2 {
		t.Fatalf("%d fsyncs for %d pipelined requests, want the first and one more for the rest", syncs, n)
	}
	if o := tp.Partitions[0].Offsets(); o.HighWatermark != 1+n || tp.Partitions[0].RecoveryPoint() != 1+n {
		t.Fatalf("offsets %+v, recovery point %d", o, tp.Partitions[0].RecoveryPoint())
	}
}

// oneRecordBatch is a batch of one record, without a producer id.
func oneRecordBatch(t *testing.T) []byte {
	t.Helper()
	b, err := recordbatch.Build(recordbatch.BatchSpec{
		ProducerID: recordbatch.NoProducerID, ProducerEpoch: recordbatch.NoProducerEpoch,
		BaseSequence: recordbatch.NoSequence, BaseTimestamp: 1_700_000_000_000,
	}, []recordbatch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProduceHeldAnswerBeforeAcksZero: a Produce with acks=all followed,
// pipelined, by one with acks=0 (librdkafka sets acks per topic, so one
// connection may carry both): the first's answer is held while the second
// is read, and must be written without the client sending anything more.
func TestProduceHeldAnswerBeforeAcksZero(t *testing.T) {
	bfs := &barrierFS{FS: memfs.New()}
	s, _, w := fsyncServer(t, bfs, 1)
	w.roundTrip(produceToA(t, 0))

	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	bfs.mu.Lock()
	bfs.onWrite = func() error {
		once.Do(func() { close(entered); <-release })
		return nil
	}
	bfs.mu.Unlock()
	id := "kcompatd-test"
	first, second := produceToA(t, 0), produceToA(t, 0)
	second.Acks = 0
	w.corr++
	firstCorr := w.corr
	frames := encodeRequest(first, w.corr, &id)
	w.corr++
	frames = append(frames, encodeRequest(second, w.corr, &id)...)
	w.writeRaw(frames)
	<-entered // the first's batch is being written
	// Bounded: both frames read (counted in the request memory) before
	// the first's write goes on, so its answer is held.
	frameLen := int64(len(encodeRequest(first, 0, &id))) - 4
	deadline := time.After(10 * time.Second)
	for s.reqMem.used.Load() < 2*frameLen {
		select {
		case <-deadline:
			t.Fatal("the second request was not read")
		default:
			runtime.Gosched()
		}
	}
	close(release)
	if _, err := w.recv(first.Key(), first.GetVersion(), firstCorr); err != nil {
		t.Fatalf("answer to the acks=all Produce: %v", err)
	}
}

// TestProduceServedWhileEarlierFsyncRuns: a Produce that arrives while the
// fsync of the one before it on the same connection runs is written at
// once (the connection does not wait for that fsync first), so the next
// fsync covers it; both are answered, in order, once durable, and neither
// is visible before its fsync.
func TestProduceServedWhileEarlierFsyncRuns(t *testing.T) {
	bfs := &barrierFS{FS: memfs.New()}
	_, tp, w := fsyncServer(t, bfs, 1)
	w.roundTrip(produceToA(t, 0)) // writes the leader-epoch checkpoint
	l := tp.Partitions[0]

	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	bfs.mu.Lock()
	bfs.onSync = func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	bfs.mu.Unlock()

	id := "kcompatd-test"
	reqs := []*kmsg.ProduceRequest{produceToA(t, 0), produceToA(t, 0)}
	w.corr++
	w.writeRaw(encodeRequest(reqs[0], w.corr, &id))
	first := w.corr
	<-entered // the first request's fsync runs, blocked
	w.corr++
	w.writeRaw(encodeRequest(reqs[1], w.corr, &id))
	waitWrittenDuringFsync(t, l, 3, release)
	if hw := l.Offsets().HighWatermark; hw != 1 {
		t.Fatalf("high watermark %d before any fsync returned", hw)
	}
	close(release)
	for i := range reqs {
		resp, err := w.recv(reqs[i].Key(), reqs[i].GetVersion(), first+int32(i))
		if err != nil {
			t.Fatal(err)
		}
		p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(1+i) {
			t.Fatalf("request %d: code %d, base offset %d", i, p.ErrorCode, p.BaseOffset)
		}
	}
	if o := l.Offsets(); o.HighWatermark != 3 || l.RecoveryPoint() != 3 {
		t.Fatalf("offsets %+v, recovery point %d", o, l.RecoveryPoint())
	}
}

// waitWrittenDuringFsync waits until l's log end offset is want while an
// fsync is held; on failure it lets the held fsync go (release) first, so
// that the server can stop.
func waitWrittenDuringFsync(t *testing.T, l *partition.Log, want int64, release chan struct{}) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for l.Offsets().LogEndOffset != want {
		select {
		case <-deadline:
			close(release)
			t.Fatalf("batches not written while an earlier fsync ran: %+v", l.Offsets())
		default:
			runtime.Gosched()
		}
	}
}
