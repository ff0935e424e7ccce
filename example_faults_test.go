package kcompatd_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd"
)

// A test makes the broker fail on purpose to see that the code under test
// recovers: here the next two produce requests are answered
// NOT_LEADER_OR_FOLLOWER, and the producer retries until one succeeds.
func ExampleBroker_InjectFault() {
	dir, _ := os.MkdirTemp("", "kcompatd-example-")
	defer os.RemoveAll(dir)
	cfg := kcompatd.DefaultConfig()
	cfg.LogDirs = dir
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	b, err := kcompatd.New(cfg, zerolog.Nop())
	if err != nil {
		panic(err)
	}
	defer b.Close()

	if _, err := b.InjectFault(kcompatd.FaultRule{
		APIKey:    kmsg.Produce.Int16(),
		Topic:     "orders",
		Action:    kcompatd.FaultError,
		ErrorCode: kerr.NotLeaderForPartition.Code,
		Count:     2,
	}); err != nil {
		panic(err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()),
		kgo.MetadataMinAge(10*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	if err != nil {
		panic(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		panic(err)
	}
	rec, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("order-1")}).First()
	if err != nil {
		panic(err)
	}
	fmt.Printf("produced at offset %d; rules left: %d\n", rec.Offset, len(b.Faults()))
	// Output: produced at offset 0; rules left: 0
}
