package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcompatd/kcompatd/integration/harness"
)

// TestConsumeWhileProducing starts consumers before the producer, so every
// record reaches them through a long-polling Fetch woken by the append, and
// checks order and content as they arrive.
func TestConsumeWhileProducing(t *testing.T) {
	const (
		topic  = "live"
		nparts = 3
	)
	n := scale(30_000)
	b := startBroker(t, "")
	b.createTopic(t, topic, nparts, nil)

	offsets := map[int32]kgo.Offset{}
	for p := range int32(nparts) {
		offsets[p] = kgo.NewOffset().At(0)
	}
	cc := b.newClient(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(5*time.Second), // long polls must end on appends, not on this
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// One empty poll so the consumer is parked in a long poll first.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	if fs := cc.PollFetches(short); fs.NumRecords() != 0 {
		t.Fatalf("records in an empty topic: %d", fs.NumRecords())
	}
	cancelShort()

	pc := b.newClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	sent := make(chan []*kgo.Record, 1)
	go func() {
		recs := make([]*kgo.Record, n)
		for i := range n {
			r := genRecord(i, nparts)
			r.Topic = topic
			recs[i] = r
			pc.Produce(ctx, r, nil)
		}
		_ = pc.Flush(ctx)
		sent <- recs
	}()

	next := map[int32]int64{}
	var got []*kgo.Record
	for len(got) < n {
		fs := cc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("received %d of %d records", len(got), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			got = append(got, r)
		})
	}
	recs := <-sent
	want := map[int32][]*kgo.Record{}
	for _, r := range recs {
		want[r.Partition] = append(want[r.Partition], r)
	}
	for _, g := range got {
		if err := sameRecord(g, want[g.Partition][g.Offset]); err != nil {
			t.Fatalf("partition %d offset %d: %v", g.Partition, g.Offset, err)
		}
	}
}

// TestTopicConfigs checks topic-level configs a client can observe: a
// compression.type other than "producer" recompresses batches (records come
// back intact), and message.timestamp.type=LogAppendTime replaces the
// producer's timestamps with the broker's append time.
func TestTopicConfigs(t *testing.T) {
	b := startBroker(t, "")
	n := scale(5_000)
	str := func(s string) *string { return &s }

	t.Run("compression.type=zstd from gzip producer", func(t *testing.T) {
		const topic = "recompress"
		b.createTopic(t, topic, 2, map[string]*string{"compression.type": str("zstd")})
		cl := b.newClient(t, append(b.producerOpts(t),
			kgo.ProducerBatchCompression(kgo.GzipCompression()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
		sent := produceAll(t, cl, topic, n, 2)
		checkConsumed(t, b, topic, sent, 2)
	})

	t.Run("message.timestamp.type=LogAppendTime", func(t *testing.T) {
		const topic = "appendtime"
		b.createTopic(t, topic, 1, map[string]*string{"message.timestamp.type": str("LogAppendTime")})
		cl := b.newClient(t, b.producerOpts(t)...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		before := time.Now().Add(-time.Second) // clock granularity slack
		old := time.Unix(1_000_000, 0)         // 1970: surely not the append time
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v"), Timestamp: old})
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		after := time.Now().Add(time.Second)
		got := b.consumeAll(t, topic, map[int32]int64{0: 1}, time.Minute)[0]
		if len(got) != 1 {
			t.Fatalf("consumed %d records, want 1", len(got))
		}
		ts := got[0].Timestamp
		if ts.Before(before) || ts.After(after) || got[0].Attrs.TimestampType() != 1 {
			t.Errorf("timestamp %v (timestamp type %d), want the append time (type 1), within [%v, %v]",
				ts, got[0].Attrs.TimestampType(), before, after)
		}
	})
}

// TestTopicLifecycleAcrossRestarts creates topics, deletes one, restarts the
// broker and checks that the catalog came back as left: the deleted topic
// stays deleted, the other keeps its partitions and data, and a topic
// recreated under the deleted name starts empty.
func TestTopicLifecycleAcrossRestarts(t *testing.T) {
	b := startBroker(t, "")
	b.createTopic(t, "keep", 3, nil)
	b.createTopic(t, "drop", 2, nil)
	cl, closeCl := b.tempClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	keep := produceAll(t, cl, "keep", 300, 3)
	produceAll(t, cl, "drop", 200, 2)
	closeCl()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(b.newClient(t))
	resp, err := adm.DeleteTopics(ctx, "drop")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.On("drop", nil); r.Err != nil {
		t.Fatalf("delete: %v", r.Err)
	}

	b = b.restart(t)
	adm = kadm.NewClient(b.newClient(t))
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if td.Has("drop") {
		t.Error("deleted topic came back after a restart")
	}
	if !td.Has("keep") || len(td["keep"].Partitions) != 3 {
		t.Fatalf("topic keep after restart: %+v", td["keep"])
	}
	checkConsumed(t, b, "keep", keep, 3)

	b.createTopic(t, "drop", 1, nil)
	if end := b.endOffsets(t, "drop")[0]; end != 0 {
		t.Errorf("recreated topic has high watermark %d, want 0", end)
	}
}

// TestConfigFileAndAutoCreate starts the broker from a server.properties
// file (--config) and checks that its settings apply: a topic auto-created
// by a producer gets num.partitions partitions.
func TestConfigFileAndAutoCreate(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	const content = "# test broker\nnum.partitions=3\nauto.create.topics.enable=true\n"
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBrokerWith(t, harness.Options{
		DataDir: filepath.Join(dir, "data"),
		Args:    []string{"--config", props},
	})

	cl := b.newClient(t, append(b.producerOpts(t), kgo.AllowAutoTopicCreation())...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	td, err := kadm.NewClient(b.newClient(t)).ListTopics(ctx, "auto")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(td["auto"].Partitions); got != 3 {
		t.Errorf("auto-created topic has %d partitions, want num.partitions=3 from the file", got)
	}
}
