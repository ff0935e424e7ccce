package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// genRecord returns record i of a deterministic workload: keys and values of
// varying size (some null, some empty, some compressible, some random) and
// zero to three headers, one with a null value. partition is i mod nparts,
// so each partition's expected order is the order of i.
func genRecord(i int, nparts int32) *kgo.Record {
	rng := rand.New(rand.NewPCG(uint64(i), 0x6b636f6d))
	r := &kgo.Record{Partition: int32(i) % nparts}
	switch i % 7 {
	case 0: // null key
	case 1:
		r.Key = []byte{} // empty, not null
	default:
		r.Key = fmt.Appendf(nil, "key-%d", i)
	}
	switch i % 11 {
	case 0: // null value (a tombstone on a compacted topic)
	case 1:
		r.Value = []byte{}
	case 2, 3, 4: // compressible
		r.Value = bytes.Repeat(fmt.Appendf(nil, "value %d ", i), 1+rng.IntN(40))
	default: // incompressible
		r.Value = make([]byte, rng.IntN(600))
		for j := range r.Value {
			r.Value[j] = byte(rng.Uint32())
		}
	}
	for h := range i % 4 {
		hdr := kgo.RecordHeader{Key: fmt.Sprintf("h%d", h)}
		if h != 1 {
			hdr.Value = fmt.Appendf(nil, "header-%d-%d", i, h)
		}
		r.Headers = append(r.Headers, hdr)
	}
	return r
}

// sameRecord reports how got differs from want, byte for byte, telling null
// from empty.
func sameRecord(got, want *kgo.Record) error {
	if (got.Key == nil) != (want.Key == nil) || !bytes.Equal(got.Key, want.Key) {
		return fmt.Errorf("key %q (nil %v), want %q (nil %v)", got.Key, got.Key == nil, want.Key, want.Key == nil)
	}
	if (got.Value == nil) != (want.Value == nil) || !bytes.Equal(got.Value, want.Value) {
		return fmt.Errorf("value of %d bytes (nil %v), want %d bytes (nil %v)", len(got.Value), got.Value == nil, len(want.Value), want.Value == nil)
	}
	if len(got.Headers) != len(want.Headers) {
		return fmt.Errorf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		g, w := got.Headers[i], want.Headers[i]
		if g.Key != w.Key || (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value) {
			return fmt.Errorf("header %d = %q:%q, want %q:%q", i, g.Key, g.Value, w.Key, w.Value)
		}
	}
	return nil
}

// produceAll produces records 0..n-1 of the genRecord workload and fails the
// test on any error; it returns the records as sent.
func produceAll(t *testing.T, cl *kgo.Client, topic string, n int, nparts int32) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, n)
	var (
		mu       sync.Mutex
		firstErr error
	)
	for i := range n {
		r := genRecord(i, nparts)
		r.Topic = topic
		recs[i] = r
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("partition %d: %w", r.Partition, err)
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	return recs
}

// checkConsumed consumes the topic and checks that partition p holds exactly
// the records of sent with that partition, in order, at offsets 0, 1, 2...
func checkConsumed(t *testing.T, b *broker, topic string, sent []*kgo.Record, nparts int32) {
	t.Helper()
	want := map[int32][]*kgo.Record{}
	for _, r := range sent {
		want[r.Partition] = append(want[r.Partition], r)
	}
	ends := b.endOffsets(t, topic)
	for p := range nparts {
		if ends[p] != int64(len(want[p])) {
			t.Fatalf("partition %d: high watermark %d, want %d", p, ends[p], len(want[p]))
		}
	}
	got := b.consumeAll(t, topic, ends, 3*time.Minute)
	for p := range nparts {
		if len(got[p]) != len(want[p]) {
			t.Fatalf("partition %d: consumed %d records, want %d", p, len(got[p]), len(want[p]))
		}
		for i, g := range got[p] {
			if g.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", p, i, g.Offset)
			}
			if err := sameRecord(g, want[p][i]); err != nil {
				t.Fatalf("partition %d offset %d: %v", p, i, err)
			}
		}
	}
}

// TestRoundTripCodecs produces 100k records (20k under -race) over several
// partitions with each compression codec, with headers and null keys and
// values, consumes them back byte for byte and in order, then does the same
// after a clean restart and after a kill -9.
func TestRoundTripCodecs(t *testing.T) {
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	n := scale(100_000)
	const nparts = 6
	b := startBroker(t, "")
	sent := map[string][]*kgo.Record{}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "roundtrip-" + c.name
			b.createTopic(t, topic, nparts, nil)
			opts := append(b.producerOpts(t),
				kgo.ProducerBatchCompression(c.codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(5*time.Millisecond),
			)
			cl := b.newClient(t, opts...)
			sent[topic] = produceAll(t, cl, topic, n, nparts)
			checkConsumed(t, b, topic, sent[topic], nparts)
		})
	}
	if t.Failed() {
		return
	}
	b = b.restart(t)
	t.Run("after clean restart", func(t *testing.T) {
		for topic, recs := range sent {
			checkConsumed(t, b, topic, recs, nparts)
		}
	})
	b = b.crashRestart(t)
	t.Run("after kill -9", func(t *testing.T) {
		for topic, recs := range sent {
			checkConsumed(t, b, topic, recs, nparts)
		}
	})
}
