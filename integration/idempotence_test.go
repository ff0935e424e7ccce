package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/integration/harness"
)

// cutProxy forwards 127.0.0.1 connections to a broker and, for every
// cutEvery-th produce request, forwards the request but cuts the
// connection when the broker's response comes back, so the producer
// never learns that its batches were written and must retry them.
type cutProxy struct {
	ln       net.Listener
	target   string
	cutEvery int64
	produces atomic.Int64
	cuts     atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]bool
}

func startCutProxy(t *testing.T, ln net.Listener, target string, cutEvery int64) *cutProxy {
	p := &cutProxy{ln: ln, target: target, cutEvery: cutEvery, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = true
	p.mu.Unlock()
}

// readFrame reads one size-prefixed Kafka frame, bounded.
func readFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > 64<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, 4+n)
	copy(b, sz[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

func (p *cutProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client)
	p.track(server)
	defer client.Close()
	defer server.Close()
	var mu sync.Mutex
	cut := map[int32]bool{} // correlation ids whose response is never delivered
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer client.Close()
		for {
			f, err := readFrame(server)
			if err != nil {
				return
			}
			corr := int32(binary.BigEndian.Uint32(f[4:]))
			mu.Lock()
			drop := cut[corr]
			mu.Unlock()
			if drop {
				p.cuts.Add(1)
				return // the request was handled; its answer is lost
			}
			if _, err := client.Write(f); err != nil {
				return
			}
		}
	}()
	for {
		f, err := readFrame(client)
		if err != nil || len(f) < 12 {
			break
		}
		key := int16(binary.BigEndian.Uint16(f[4:]))
		corr := int32(binary.BigEndian.Uint32(f[8:]))
		if key == 0 && p.produces.Add(1)%p.cutEvery == 0 {
			mu.Lock()
			cut[corr] = true
			mu.Unlock()
		}
		if _, err := server.Write(f); err != nil {
			break
		}
	}
	server.Close()
	<-done
}

// TestIdempotentProducerRetriesWithoutDuplicates: a kgo idempotent
// producer whose connections are cut after the broker appended a batch
// but before the producer saw the answer retries those batches; the
// broker recognizes each retry as a duplicate of one of the producer's
// last five batches, so every record is in the log exactly once and in
// order.
func TestIdempotentProducerRetriesWithoutDuplicates(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	// Clients learn the proxy as the broker's address from Metadata.
	b := startBrokerWith(t, harness.Options{DataDir: t.TempDir(), Configs: []string{
		"advertised.listeners=PLAINTEXT://127.0.0.1:" + strconv.Itoa(port),
	}})
	if !b.supports(t, 22) {
		t.Skip("broker does not advertise InitProducerId")
	}
	proxy := startCutProxy(t, ln, b.Addr, 5)

	const topic, parts = "idem", 3
	admin := b.newClient(t)
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, parts, 1
	create.Topics = append(create.Topics, ct)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := create.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}

	prod := b.newClient(t, kgo.SeedBrokers(ln.Addr().String()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(1000), kgo.RecordRetries(100),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	n := scale(5000)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		if i%25 == 0 {
			// Waves of records make many produce requests, some cut.
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(1)
		r := &kgo.Record{Key: []byte(strconv.Itoa(i % 17)), Value: []byte(strconv.Itoa(i))}
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				t.Errorf("produce: %v", err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d records failed", failed.Load())
	}
	if proxy.cuts.Load() == 0 {
		t.Fatal("the proxy cut no connection after an append")
	}
	t.Logf("%d produce requests, %d answers cut", proxy.produces.Load(), proxy.cuts.Load())

	// Read everything back straight from the broker.
	cons := b.newClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	lastByKey := map[string]int{} // records of one key go to one partition, in order
	for total := 0; total < n; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", total, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			total++
			v := string(r.Value)
			seen[v]++
			i, _ := strconv.Atoi(v)
			if prev, ok := lastByKey[string(r.Key)]; ok && i <= prev {
				t.Errorf("key %s: record %d after %d", r.Key, i, prev)
			}
			lastByKey[string(r.Key)] = i
		})
	}
	for i := 0; i < n; i++ {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("record %d appears %d times", i, c)
		}
	}
	// Nothing beyond the n records: the high watermarks sum to n.
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for p := int32(0); p < parts; p++ {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	resp, err := lo.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, p := range resp.Topics[0].Partitions {
		sum += p.Offset
	}
	if sum != int64(n) {
		t.Fatalf("high watermarks sum to %d, want %d", sum, n)
	}

	// DescribeProducers: one producer per partition, its last sequence
	// the partition's record count - 1.
	dp := kmsg.NewPtrDescribeProducersRequest()
	dp.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: topic, Partitions: []int32{0, 1, 2}}}
	dresp, err := dp.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range dresp.Topics[0].Partitions {
		hw := resp.Topics[0].Partitions[i].Offset
		if p.ErrorCode != 0 || len(p.ActiveProducers) != 1 || int64(p.ActiveProducers[0].LastSequence) != hw-1 {
			t.Errorf("partition %d (HW %d): %+v", p.Partition, hw, p)
		}
	}
}
