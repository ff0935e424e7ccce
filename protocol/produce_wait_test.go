package protocol

import (
	"io/fs"
	"net"
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
	all := b.all
	if all != nil {
		b.arrived++
		if b.arrived == b.want {
			close(all)
			b.all = nil
		}
	}
	b.mu.Unlock()
	if all != nil {
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
	}
	return f.File.Sync()
}

// TestProduceFsyncsPartitionsAtOnce: under flush.messages=1 a Produce of
// n partitions runs their n fsyncs at the same time, not one after the
// other: each fsync is held until all n have started, which a serial
// flusher never reaches. Every partition is then answered, and readable.
func TestProduceFsyncsPartitionsAtOnce(t *testing.T) {
	const n = 8
	bfs := &barrierFS{FS: memfs.New()}
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store, err := partition.Open(partition.Config{Dir: "/data", NodeID: 1, FS: bfs, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := store.CreateTopic("a", n, map[string]string{"flush.messages": "1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID = 1
	cfg.AdvertisedHost = "127.0.0.1"
	cfg.AdvertisedPort = int32(ln.Addr().(*net.TCPAddr).Port)
	cfg.Logger = zerolog.Nop()
	cfg.Clock = clk
	t.Cleanup(func() { store.Close() })
	startCoordinators(t, &cfg, store, nil)
	s := mustNewServer(t, cfg, store)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	w := dialWire(t, ln.Addr().String())

	produce := func() *kmsg.ProduceResponse {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "a"
		for p := int32(0); p < n; p++ {
			b, err := recordbatch.Build(recordbatch.BatchSpec{
				ProducerID: recordbatch.NoProducerID, ProducerEpoch: recordbatch.NoProducerEpoch,
				BaseSequence: recordbatch.NoSequence, BaseTimestamp: 1_700_000_000_000,
			}, []recordbatch.Record{{Value: []byte("v")}})
			if err != nil {
				t.Fatal(err)
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rp.Records = b
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return w.roundTrip(req).(*kmsg.ProduceResponse)
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
