package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// crashValue is the value of the seq-th record produced to partition p: it
// names both, so a record that surfaces at the wrong offset is recognised,
// and its length varies so batches end at varying file positions.
func crashValue(p int32, seq int64) []byte {
	v := fmt.Appendf(nil, "p%d-seq%d|", p, seq)
	n := int(seq*7919%1500) + 16
	for len(v) < n {
		v = append(v, byte('a'+(seq+int64(len(v)))%26))
	}
	return v
}

// TestKillDuringProduce kills the broker with SIGKILL while a producer runs
// and checks after restart that every acknowledged record is there at its
// acknowledged offset, that each partition is a gap-free prefix of what was
// sent (offsets contiguous, nothing out of order, no half-written batch
// visible), under the default flush policy and with an fsync per message. A
// killed process leaves the page cache behind, so whatever was written before
// the acknowledgement survives under either policy.
func TestKillDuringProduce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		codec   kgo.CompressionCodec
		configs []string
	}{
		{"default flush", kgo.NoCompression(), nil},
		{"flush every message", kgo.NoCompression(), []string{"log.flush.interval.messages=1"}},
		{"flush every 5 ms with zstd batches", kgo.ZstdCompression(), []string{"log.flush.interval.ms=5"}},
		{"default flush with lz4 batches", kgo.Lz4Compression(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testKillDuringProduce(t, tc.codec, tc.configs)
		})
	}
}

func testKillDuringProduce(t *testing.T, codec kgo.CompressionCodec, configs []string) {
	const (
		topic  = "crash"
		nparts = 4
	)
	killAfter := int64(scale(40_000)) // acknowledged records before the kill
	b := startBroker(t, "", configs...)
	b.createTopic(t, topic, nparts, nil)

	opts := append(b.producerOpts(t),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(20*time.Second),
	)
	cl, closeCl := b.tempClient(t, opts...)
	defer closeCl()

	var (
		mu       sync.Mutex
		acked    [nparts]map[int64]int64 // seq -> acknowledged offset
		nAcked   int64
		produced [nparts]int64 // records handed to Produce per partition
		reached  = make(chan struct{})
		wg       sync.WaitGroup // one per record until its promise ran
		badAck   error
	)
	for p := range acked {
		acked[p] = map[int64]int64{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		// Bounded: the kill comes long before this many records.
		for i := int64(0); i < 50*killAfter && ctx.Err() == nil; i++ {
			p := int32(i % nparts)
			seq := produced[p]
			produced[p]++
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{
				Topic:     topic,
				Partition: p,
				Key:       fmt.Appendf(nil, "%d", seq),
				Value:     crashValue(p, seq),
			}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				acked[r.Partition][seq] = r.Offset
				if r.Offset != seq && badAck == nil {
					badAck = fmt.Errorf("partition %d: record %d acknowledged at offset %d", r.Partition, seq, r.Offset)
				}
				nAcked++
				if nAcked == killAfter {
					close(reached)
				}
			})
		}
	}()

	select {
	case <-reached:
	case <-producerDone:
		t.Fatal("producer stopped before the kill point")
	case <-time.After(3 * time.Minute):
		mu.Lock()
		n := nAcked
		mu.Unlock()
		t.Fatalf("only %d records acknowledged in 3 minutes", n)
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	// No acknowledgement can come after this point except for responses
	// already sitting in the client's socket buffer, which are real ones.
	cancel()
	<-producerDone
	closeCl()
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("record promises did not all run after the client closed")
	}
	mu.Lock()
	defer mu.Unlock()
	if badAck != nil {
		t.Fatal(badAck)
	}
	t.Logf("killed pid %d after %d acknowledged records (%v produced)", b.PID(), nAcked, produced)

	b = startBroker(t, b.dataDir, configs...)
	if n, err := b.RecoveryBytesRead(); err == nil {
		t.Logf("recovery read %d bytes of segment data", n)
	}
	ends := b.endOffsets(t, topic)
	for p := range int32(nparts) {
		var maxAcked int64 = -1
		for seq := range acked[p] {
			maxAcked = max(maxAcked, seq)
		}
		if ends[p] <= maxAcked {
			t.Errorf("partition %d: high watermark %d after restart, but offset %d was acknowledged", p, ends[p], maxAcked)
		}
		if ends[p] > produced[p] {
			t.Errorf("partition %d: high watermark %d, but only %d records were ever sent", p, ends[p], produced[p])
		}
	}
	if t.Failed() {
		return
	}
	got := b.consumeAll(t, topic, ends, 3*time.Minute)
	for p := range int32(nparts) {
		recs := got[p]
		if int64(len(recs)) != ends[p] {
			t.Fatalf("partition %d: consumed %d records below high watermark %d", p, len(recs), ends[p])
		}
		for i, r := range recs {
			seq := int64(i)
			if r.Offset != seq {
				t.Fatalf("partition %d: record %d has offset %d (offsets must be contiguous from 0)", p, i, r.Offset)
			}
			if string(r.Key) != fmt.Sprint(seq) || string(r.Value) != string(crashValue(p, seq)) {
				t.Fatalf("partition %d offset %d: got key %q value %.40q..., want record %d", p, seq, r.Key, r.Value, seq)
			}
		}
		t.Logf("partition %d: %d acknowledged, %d visible, %d sent", p, len(acked[p]), len(recs), produced[p])
	}
}

// TestRecoveryReadsNoSegmentDataAfterCleanShutdown restarts the broker after
// a clean shutdown and checks, through the "broker started" log line's
// recovery_bytes_read field (partition.Store.RecoveryBytesRead), that
// recovery read no segment data; after a kill -9 with unflushed data it must
// read some (the tail past the recovery point), but never more than the logs
// hold.
func TestRecoveryReadsNoSegmentDataAfterCleanShutdown(t *testing.T) {
	const (
		topic  = "recovery"
		nparts = 4
	)
	// Small segments, so that there are rolled segments as well as active
	// ones.
	b := startBroker(t, "", "kcompatd.log.internal.segment.bytes=262144")
	if _, err := b.RecoveryBytesRead(); err != nil {
		t.Fatal(err)
	}
	b.createTopic(t, topic, nparts, nil)
	opts := append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(b *broker, n int) []*kgo.Record {
		cl, closeCl := b.tempClient(t, opts...)
		defer closeCl()
		return produceAll(t, cl, topic, n, nparts)
	}
	n := scale(20_000)
	sent := produce(b, n)

	b = b.restart(t)
	got, err := b.RecoveryBytesRead()
	if err != nil {
		t.Fatal(err)
	}
	if got != 0 {
		t.Errorf("recovery read %d bytes of segment data after a clean shutdown, want 0", got)
	}
	checkConsumed(t, b, topic, sent, nparts)

	// More data, then a crash: recovery must scan the unflushed tail.
	more := produce(b, n)
	b = b.crashRestart(t)
	got, err = b.RecoveryBytesRead()
	if err != nil {
		t.Fatal(err)
	}
	total := logBytes(t, b.dataDir)
	t.Logf("recovery after kill -9 read %d of %d bytes of segment data", got, total)
	if got <= 0 || got > total {
		t.Errorf("recovery after kill -9 read %d bytes, want between 1 and the %d bytes in .log files", got, total)
	}
	// produceAll numbers records from 0 again; the log holds both runs.
	all := append(append([]*kgo.Record{}, sent...), more...)
	checkConsumed(t, b, topic, all, nparts)
}

// logBytes sums the sizes of the .log files under dir.
func logBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".log") {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}
