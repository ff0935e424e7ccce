// Command gen produces the records whose segments, written by Apache Kafka
// 4.3.1, are the golden inputs of dumplog's Kafka comparison test. It is
// run once by hand against a Kafka broker on 127.0.0.1 (see ../README.md);
// it is under testdata so that go test ./... never builds it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	broker := flag.String("broker", "127.0.0.1:19192", "Kafka broker `host:port`")
	flag.Parse()
	ctx := context.Background()

	admin, err := kgo.NewClient(kgo.SeedBrokers(*broker))
	check(err)
	adm := kadm.NewClient(admin)
	compact := "compact"
	segMs := "100"
	dirty := "0.01"
	interval := "1"
	for _, t := range []struct {
		name    string
		configs map[string]*string
	}{
		{"codecs", nil},
		{"txn", nil},
		{"compacted", map[string]*string{"cleanup.policy": &compact, "segment.ms": &segMs, "min.cleanable.dirty.ratio": &dirty}},
		{"indexed", map[string]*string{"index.interval.bytes": &interval}},
	} {
		_, err := adm.CreateTopic(ctx, 1, 1, t.configs, t.name)
		check(err)
	}

	// One client per codec: a batch's codec is the client's choice.
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	for i, c := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(*broker), kgo.ProducerBatchCompression(c), kgo.ProducerLinger(50*time.Millisecond))
		check(err)
		var recs []*kgo.Record
		for j := 0; j < 3; j++ {
			r := &kgo.Record{Topic: "codecs", Value: fmt.Appendf(nil, "value-%d-%d-%s", i, j, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")}
			if j != 1 {
				r.Key = fmt.Appendf(nil, "key-%d-%d", i, j)
			}
			if j == 2 {
				r.Headers = []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2"}}
			}
			recs = append(recs, r)
		}
		check(cl.ProduceSync(ctx, recs...).FirstErr())
		cl.Close()
	}

	// A committed and an aborted transaction.
	tx, err := kgo.NewClient(kgo.SeedBrokers(*broker), kgo.TransactionalID("golden-txn"))
	check(err)
	for _, commit := range []bool{true, false} {
		check(tx.BeginTransaction())
		for j := 0; j < 2; j++ {
			tx.Produce(ctx, &kgo.Record{Topic: "txn", Key: []byte("tk"), Value: fmt.Appendf(nil, "txn-%v-%d", commit, j)}, nil)
		}
		check(tx.Flush(ctx))
		check(tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	tx.Close()

	// A compacted topic: each produce after segment.ms rolls a segment, so
	// the cleaner has closed segments with superseded keys and a tombstone.
	cp, err := kgo.NewClient(kgo.SeedBrokers(*broker))
	check(err)
	for round := 0; round < 4; round++ {
		var recs []*kgo.Record
		for _, k := range []string{"a", "b", "c"} {
			r := &kgo.Record{Topic: "compacted", Key: []byte(k), Value: fmt.Appendf(nil, "%s-%d", k, round)}
			if round == 2 && k == "b" {
				r.Value = nil
			}
			recs = append(recs, r)
		}
		check(cp.ProduceSync(ctx, recs...).FirstErr())
		time.Sleep(300 * time.Millisecond)
	}
	cp.Close()

	// An index entry for every batch.
	ix, err := kgo.NewClient(kgo.SeedBrokers(*broker), kgo.ProducerBatchCompression(kgo.NoCompression()))
	check(err)
	for j := 0; j < 4; j++ {
		check(ix.ProduceSync(ctx, &kgo.Record{Topic: "indexed", Key: fmt.Appendf(nil, "i%d", j), Value: []byte("indexed")}).FirstErr())
	}
	ix.Close()

	// A consumer group commits its offsets: __consumer_offsets gets group
	// metadata and offset commits.
	cons, err := kgo.NewClient(kgo.SeedBrokers(*broker), kgo.ConsumerGroup("golden-group"), kgo.ConsumeTopics("codecs"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	check(err)
	got := 0
	for got < 15 {
		fs := cons.PollFetches(ctx)
		check(fs.Err())
		got += fs.NumRecords()
	}
	check(cons.CommitUncommittedOffsets(ctx))
	cons.Close()
	admin.Close()
	log.Printf("done; wait for the cleaner, then stop the broker")
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
