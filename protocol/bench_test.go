package protocol

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// BenchmarkProduce measures the server's produce path over loopback: one
// connection, acks=-1, 16 records of 1 KiB per uncompressed batch. The
// server's CPU per byte is what the performance budget is about; compare
// runs with -cpuprofile.
func BenchmarkProduce(b *testing.B) {
	b.Run("defaults", func(b *testing.B) { benchmarkProduce(b, nil) })
	// Timestamp bounds set on the topic: the produce path must read them
	// from the log's config snapshot, not parse the overrides.
	b.Run("timestamp-bounds", func(b *testing.B) {
		benchmarkProduce(b, map[string]string{"message.timestamp.before.max.ms": "86400000", "message.timestamp.after.max.ms": "3600000"})
	})
	// defaults with metrics on (observer_test.go).
	b.Run("metrics", func(b *testing.B) { benchmarkProduceOn(b, startObservedBroker(b), nil) })
}

func benchmarkProduce(b *testing.B, topicConfigs map[string]string) {
	benchmarkProduceOn(b, startBroker(b, nil), topicConfigs)
}

func benchmarkProduceOn(b *testing.B, br *testBroker, topicConfigs map[string]string) {
	br.createTopic(b, "bench", 1, topicConfigs)
	var recs []recordbatch.Record
	for range 16 {
		recs = append(recs, recordbatch.Record{Key: []byte("key"), Value: make([]byte, 1024)})
	}
	batch := testBatch(b, recordbatch.None, br.nowMs(), recs...)
	w := dialWire(b, br.addr)
	b.SetBytes(int64(len(batch)))
	produceLoop(b, w, batch)
}

// BenchmarkProduceLarge is BenchmarkProduce with requests shaped like a
// throughput producer's: 8 partitions of one 256 KiB batch each per
// request. The request is encoded once; the client only writes it.
func BenchmarkProduceLarge(b *testing.B) {
	br := startBroker(b, nil)
	br.createTopic(b, "bench", 8, nil)
	var recs []recordbatch.Record
	for range 256 {
		recs = append(recs, recordbatch.Record{Value: make([]byte, 1024)})
	}
	batch := testBatch(b, recordbatch.None, br.nowMs(), recs...)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(11)
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	for p := range int32(8) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	frame := encodeRequest(req, 1, strp("bench"))
	w := dialWire(b, br.addr)
	b.SetBytes(8 * int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		w.writeRaw(frame)
		resp, err := w.recv(kmsg.Produce.Int16(), 11, 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, sp := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
			if sp.ErrorCode != 0 {
				b.Fatalf("error %d", sp.ErrorCode)
			}
		}
	}
}

// BenchmarkFetch measures the server's fetch path over loopback: one
// connection reading 8 partitions of 256 KiB batches from the start, up to
// 1 MiB per partition per request, as a consumer catching up does.
func BenchmarkFetch(b *testing.B) {
	br := startBroker(b, nil)
	tp := br.createTopic(b, "bench", 8, nil)
	var recs []recordbatch.Record
	for range 256 {
		recs = append(recs, recordbatch.Record{Value: make([]byte, 1024)})
	}
	batch := testBatch(b, recordbatch.None, br.nowMs(), recs...)
	for _, l := range tp.Partitions {
		for range 64 { // 16 MiB per partition
			if _, err := l.Append(cloneBytes(batch)); err != nil {
				b.Fatal(err)
			}
		}
	}
	hw := tp.Partitions[0].Offsets().HighWatermark
	next := make([]int64, 8)
	w := dialWire(b, br.addr)
	var total int64
	b.ResetTimer()
	for range b.N {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(13)
		req.MaxBytes = 50 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = tp.ID
		for p := range int32(8) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, next[p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := w.roundTrip(req).(*kmsg.FetchResponse)
		for _, rp := range resp.Topics[0].Partitions {
			if rp.ErrorCode != 0 || len(rp.RecordBatches) == 0 {
				b.Fatalf("partition %d: error %d, %d bytes", rp.Partition, rp.ErrorCode, len(rp.RecordBatches))
			}
			total += int64(len(rp.RecordBatches))
			next[rp.Partition] += int64(len(rp.RecordBatches)/len(batch)) * 256
			if next[rp.Partition] >= hw {
				next[rp.Partition] = 0
			}
		}
	}
	b.SetBytes(total / int64(b.N))
}

// BenchmarkProduceCodec is BenchmarkProduce per producer codec, with
// batches shaped like a producer's under load: 64 records of realistic
// keys and 1 KiB JSON-like values that compress about as logs and events
// do. Bytes are the uncompressed values, the unit of the budget's
// CPU-s/GB. "zstd-to-lz4" is a topic whose compression.type makes the
// broker recompress.
func BenchmarkProduceCodec(b *testing.B) {
	for _, c := range []struct {
		name     string
		codec    recordbatch.Codec
		topicCfg map[string]string
	}{
		{"none", recordbatch.None, nil},
		{"gzip", recordbatch.Gzip, nil},
		{"snappy", recordbatch.Snappy, nil},
		{"lz4", recordbatch.LZ4, nil},
		{"zstd", recordbatch.Zstd, nil},
		{"zstd-to-lz4", recordbatch.Zstd, map[string]string{"compression.type": "lz4"}},
	} {
		b.Run(c.name, func(b *testing.B) { benchmarkProduceCodec(b, c.codec, c.topicCfg) })
	}
}

func benchmarkProduceCodec(b *testing.B, codec recordbatch.Codec, topicCfg map[string]string) {
	br := startBroker(b, nil)
	br.createTopic(b, "bench", 1, topicCfg)
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []recordbatch.Record
	values := 0
	for range 64 {
		v := benchValue(rng, 1024)
		values += len(v)
		recs = append(recs, recordbatch.Record{Key: fmt.Appendf(nil, "user-%08d", rng.IntN(1e8)), Value: v})
	}
	batch := testBatch(b, codec, br.nowMs(), recs...)
	w := dialWire(b, br.addr)
	b.SetBytes(int64(values))
	b.ReportAllocs()
	produceLoop(b, w, batch)
}

// benchValue is about n bytes of JSON-like event text: repeated field
// names, a few words from a small vocabulary, random ids and numbers.
func benchValue(rng *rand.Rand, n int) []byte {
	words := []string{"checkout", "login", "search", "view", "cart", "payment", "shipped", "refund", "mobile", "desktop", "eu-west-1", "us-east-2"}
	v := make([]byte, 0, n+128)
	for len(v) < n {
		v = fmt.Appendf(v, `{"id":"%016x","ts":%d,"event":"%s","device":"%s","amount":%d.%02d,"session":"%08x"},`,
			rng.Uint64(), 1700000000000+rng.IntN(1e9), words[rng.IntN(len(words))], words[rng.IntN(len(words))],
			rng.IntN(1000), rng.IntN(100), rng.Uint32())
	}
	return v[:n]
}

// produceLoop produces batch to partition 0 of "bench" b.N times. Besides
// wall time it reports the process's CPU time per produce (client and
// server, from getrusage), which other load on a shared machine disturbs
// far less.
func produceLoop(b *testing.B, w *wire, batch []byte) {
	cpu0 := processCPU(b)
	b.ResetTimer()
	defer func() {
		b.StopTimer()
		b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}()
	for range b.N {
		req := produceReq(11, "bench", [16]byte{}, 0, batch)
		sp := onlyProducePartition(b, w.roundTrip(req))
		if sp.ErrorCode != 0 {
			b.Fatalf("error %d", sp.ErrorCode)
		}
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
