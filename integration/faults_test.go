package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fault injection over the wire, as a test in any language would use it:
// rules POSTed to the admin listener of the binary make a kgo producer
// and a consumer group go through NOT_LEADER_OR_FOLLOWER on Produce, a
// dropped connection on Fetch and a delayed JoinGroup, and both recover
// with every record delivered.
func TestFaultInjectionOverHTTP(t *testing.T) {
	b := startBroker(t, "", "kcompatd.metrics.listener=127.0.0.1:0")
	admin, ok := b.StartedField("admin")
	if !ok {
		t.Fatal("no admin address in the start-up line")
	}
	base := fmt.Sprintf("http://%s", admin)
	post := func(rule map[string]any) {
		t.Helper()
		body, _ := json.Marshal(rule)
		resp, err := http.Post(base+"/faults", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /faults %s: %d", body, resp.StatusCode)
		}
	}
	b.createTopic(t, "faulty", 2, nil)
	post(map[string]any{"api_key": kmsg.Produce.Int16(), "topic": "faulty", "partition": 1, "action": "error", "error_code": kerr.NotLeaderForPartition.Code, "count": 2})
	fast := []kgo.Opt{kgo.MetadataMinAge(10 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond })}
	producer := b.newClient(t, append(fast, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; i < 20; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "faulty", Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	post(map[string]any{"api_key": kmsg.Fetch.Int16(), "action": "drop", "count": 1})
	post(map[string]any{"api_key": kmsg.JoinGroup.Int16(), "action": "delay", "delay": int64(300 * time.Millisecond), "count": 1})
	consumer := b.newClient(t, append(fast, kgo.ConsumeTopics("faulty"), kgo.ConsumerGroup("faulty-g"), kgo.FetchMaxWait(100*time.Millisecond))...)
	seen := 0
	for seen < 20 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 20: %v", seen, err)
		}
		fs.EachRecord(func(*kgo.Record) { seen++ })
	}
	resp, err := http.Get(base + "/faults")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var left []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&left); err != nil || len(left) != 0 {
		t.Fatalf("rules left: %v %v", left, err)
	}
}
