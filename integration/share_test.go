package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareConfigs start a broker whose share groups time sessions out after
// 2 s and lock acquired records for 2 s, so a crashed member's records come
// back in seconds.
var shareConfigs = []string{
	"group.share.min.heartbeat.interval.ms=100",
	"group.share.heartbeat.interval.ms=250",
	"group.share.min.session.timeout.ms=1000",
	"group.share.session.timeout.ms=2000",
	"group.share.min.record.lock.duration.ms=1000",
	"group.share.record.lock.duration.ms=2000",
}

// crashDialer dials normally until crash, which cuts every connection it
// made and refuses new ones: to the broker the client is gone without a
// word (no leave, no acknowledgement, no session close).
type crashDialer struct {
	mu      sync.Mutex
	conns   []net.Conn
	crashed bool
}

func (d *crashDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return nil, fmt.Errorf("crashed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *crashDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	for _, c := range d.conns {
		c.Close()
	}
}

func setGroupConfig(t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs %s=%s: %v %+v", name, value, err, resp)
	}
}

// TestShareGroupConsumerCrash: a share consumer acquires records and
// crashes holding them; once their locks time out another member gets
// them again (delivery count 2), and every record is acknowledged exactly
// once, none lost: the share-partition start offsets end at the log end.
func TestShareGroupConsumerCrash(t *testing.T) {
	b := startBroker(t, "", shareConfigs...)
	const topic, group = "share-crash", "share-crash-group"
	n := scale(2000)
	produceShareKeys(t, b, topic, group, n, n)

	// A acquires a first batch and crashes without acknowledging it.
	var d crashDialer
	a, closeA := b.tempClient(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.Dialer(d.DialContext),
		kgo.WithLogger(kgo.BasicLogger(io.Discard, kgo.LogLevelNone, nil))) // it may outlive the test
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held := map[string]bool{}
	for len(held) == 0 && ctx.Err() == nil {
		for _, r := range a.PollFetches(ctx).Records() {
			held[string(r.Key)] = true
		}
	}
	if len(held) == 0 {
		t.Fatal("the first consumer got nothing")
	}
	d.crash()
	go closeA() // its leave and acknowledgements cannot reach the broker

	// B acknowledges everything, each record once.
	cl := b.newClient(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	accepted := map[string]int{}
	redelivered := 0
	for len(accepted) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, r := range fs.Records() {
			accepted[string(r.Key)]++
			if r.DeliveryCount() > 1 {
				redelivered++
				if !held[string(r.Key)] {
					t.Errorf("record %s redelivered but never held by the crashed member", r.Key)
				}
			}
			r.Ack(kgo.AckAccept)
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("acknowledging: %v", err)
		}
	}
	if len(accepted) != n {
		t.Fatalf("%d of %d records accepted", len(accepted), n)
	}
	for k, c := range accepted {
		if c != 1 {
			t.Errorf("record %s delivered to the live consumer %d times", k, c)
		}
	}
	if redelivered != len(held) {
		t.Errorf("%d records redelivered, the crashed member held %d", redelivered, len(held))
	}

	// Nothing is left: every acknowledgement was answered, so each
	// share-partition's start offset is at its end.
	checkShareStartsAtEnd(ctx, t, cl, group, b.endOffsets(t, topic))
}

// produceShareKeys creates topic with 2 partitions, produces keys 0..n-1
// round-robin over them in batches of at most batch records, and makes
// group start at the earliest offset.
func produceShareKeys(t *testing.T, b *broker, topic, group string, n, batch int) *kgo.Client {
	t.Helper()
	b.createTopic(t, topic, 2, nil)
	prod := b.newClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(topic))...)
	for i := 0; i < n; i++ {
		prod.Produce(context.Background(), &kgo.Record{Key: []byte(strconv.Itoa(i)), Partition: int32(i % 2)}, nil)
		if (i+1)%batch == 0 || i == n-1 {
			if err := prod.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	setGroupConfig(t, prod, group, "share.auto.offset.reset", "earliest")
	return prod
}

// checkShareStartsAtEnd: nothing is left of group's 2 share-partitions,
// every start offset is at the log end and the lag 0.
func checkShareStartsAtEnd(ctx context.Context, t *testing.T, cl *kgo.Client, group string, ends map[int32]int64) {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.SetVersion(1)
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 2 {
		t.Fatalf("share group offsets %+v (%v)", resp.Groups, kerr.ErrorForCode(resp.Groups[0].ErrorCode))
	}
	for _, p := range resp.Groups[0].Topics[0].Partitions {
		if p.ErrorCode != 0 || p.StartOffset != ends[p.Partition] || p.Lag != 0 {
			t.Errorf("partition %d: %+v, log end %d", p.Partition, p, ends[p.Partition])
		}
	}
}

// TestShareGroupPoisonRecordArchived: a record released at every delivery
// is archived after share.delivery.count.limit deliveries; the records
// after it are delivered and the share-partition start offset passes it.
func TestShareGroupPoisonRecordArchived(t *testing.T) {
	b := startBroker(t, "", shareConfigs...)
	const topic, group = "share-poison", "share-poison-group"
	b.createTopic(t, topic, 1, nil)
	prod := b.newClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(topic))...)
	for _, k := range []string{"poison", "good"} {
		if err := prod.ProduceSync(context.Background(), &kgo.Record{Key: []byte(k)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setGroupConfig(t, prod, group, "share.auto.offset.reset", "earliest")
	setGroupConfig(t, prod, group, "share.delivery.count.limit", "3")
	cl := b.newClient(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var poisonCounts []int32
	good := false
	for !good && ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			if string(r.Key) == "poison" {
				poisonCounts = append(poisonCounts, r.DeliveryCount())
				r.Ack(kgo.AckRelease)
				continue
			}
			// Keep the good record until the poison one is archived, so
			// the start offset can only move past both at once.
			if len(poisonCounts) < 3 {
				r.Ack(kgo.AckRelease)
				continue
			}
			good = true
			r.Ack(kgo.AckAccept)
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !good || len(poisonCounts) != 3 || poisonCounts[0] != 1 || poisonCounts[2] != 3 {
		t.Fatalf("good delivered %v; poison deliveries %v, want counts 1..3", good, poisonCounts)
	}
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.SetVersion(1)
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Groups[0].Topics[0].Partitions[0]; p.StartOffset != 2 || p.Lag != 0 {
		t.Fatalf("share-partition %+v, want start offset 2, lag 0", p)
	}
}

// TestShareGroupBrokerKill: a share consumer accepts a first set of records
// (every acknowledgement answered), then holds a second batch
// unacknowledged when the broker is killed with SIGKILL. After the restart
// on the same data dir a new consumer reads to the end: nothing accepted
// before the kill comes again, every other record is delivered and accepted
// once, the records that were in flight come back (with delivery count 1,
// as from Kafka 4.3.1: acquisitions are not persisted), and the
// share-partition start offsets end at the log end.
func TestShareGroupBrokerKill(t *testing.T) {
	b := startBroker(t, "", shareConfigs...)
	const topic, group = "share-kill", "share-kill-group"
	n := scale(400)
	produceShareKeys(t, b, topic, group, n, 10) // small batches: a poll acquires a part of the log
	ends := b.endOffsets(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var ackMu sync.Mutex
	var ackErrs []error
	var a *kgo.Client
	aGone := false // A's release of the held records cannot reach the broker
	onAck := kgo.ShareAckCallback(func(c *kgo.Client, rs kgo.ShareAckResults) {
		ackMu.Lock()
		defer ackMu.Unlock()
		if c == a && aGone {
			return
		}
		for _, r := range rs {
			if r.Err != nil {
				ackErrs = append(ackErrs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, r.Err))
			}
		}
	})
	checkAcks := func(when string) {
		t.Helper()
		ackMu.Lock()
		defer ackMu.Unlock()
		if len(ackErrs) > 0 {
			t.Fatalf("%s: acknowledgements failed: %v", when, ackErrs)
		}
	}

	// A accepts a first set, then holds one more batch.
	var d crashDialer
	var closeA func()
	ackMu.Lock()
	a, closeA = b.tempClient(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.ShareMaxRecords(20), onAck,
		kgo.Dialer(d.DialContext), kgo.WithLogger(kgo.BasicLogger(io.Discard, kgo.LogLevelNone, nil))) // it may outlive the test
	ackMu.Unlock()
	acceptedBefore := map[string]bool{}
	for len(acceptedBefore) < n/4 && ctx.Err() == nil {
		for _, r := range a.PollFetches(ctx).Records() {
			acceptedBefore[string(r.Key)] = true
			r.Ack(kgo.AckAccept)
		}
		if err := a.FlushAcks(ctx); err != nil {
			t.Fatalf("acknowledging: %v", err)
		}
	}
	checkAcks("before the kill")
	held := map[string]bool{}
	for len(held) == 0 && ctx.Err() == nil {
		for _, r := range a.PollFetches(ctx).Records() {
			if acceptedBefore[string(r.Key)] {
				t.Fatalf("record %s delivered again after it was accepted", r.Key)
			}
			held[string(r.Key)] = true
		}
	}
	if len(acceptedBefore) < n/4 || len(held) == 0 || len(acceptedBefore)+len(held) >= n {
		t.Fatalf("before the kill: %d accepted, %d held of %d", len(acceptedBefore), len(held), n)
	}

	ackMu.Lock()
	aGone = true
	ackMu.Unlock()
	b = b.crashRestart(t)
	d.crash()
	go closeA() // the broker it knew is gone

	// B reads everything not accepted before the kill, each record once.
	cl := b.newClient(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), onAck)
	accepted := map[string]int{}
	counts := map[string]int32{}
	for len(accepted) < n-len(acceptedBefore) && ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			k := string(r.Key)
			if acceptedBefore[k] {
				t.Errorf("record %s accepted before the kill delivered again (delivery count %d)", k, r.DeliveryCount())
			}
			accepted[k]++
			counts[k] = r.DeliveryCount()
			r.Ack(kgo.AckAccept)
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("acknowledging after the restart: %v", err)
		}
	}
	checkAcks("after the restart")
	if len(accepted) != n-len(acceptedBefore) {
		t.Fatalf("after the restart %d of %d records accepted", len(accepted), n-len(acceptedBefore))
	}
	for k, c := range accepted {
		if c != 1 {
			t.Errorf("record %s delivered %d times after the restart", k, c)
		}
	}
	// The acquisition of the held records was never written to the share
	// state (Kafka writes it at acknowledgement, release and lock
	// timeout), so after the kill they come back as first deliveries:
	// Kafka 4.3.1 answers delivery count 1 for them in this same sequence.
	for k := range held {
		if accepted[k] != 1 || counts[k] != 1 {
			t.Errorf("record %s was in flight at the kill: accepted %d times after it, delivery count %d (Kafka 4.3.1: 1)", k, accepted[k], counts[k])
		}
	}

	checkShareStartsAtEnd(ctx, t, cl, group, ends)
}
