package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeToEnd reads partition 0 of topic from offset 0 until it has the
// record at end-1 (the last offset, which compaction never removes: it is
// in the active segment).
func (b *broker) consumeToEnd(t *testing.T, topic string, end int64) []*kgo.Record {
	t.Helper()
	cl, closeCl := b.tempClient(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: %v after %d records", topic, ctx.Err(), len(out))
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func describeRecords(rs []*kgo.Record) string {
	var sb strings.Builder
	for _, r := range rs {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		fmt.Fprintf(&sb, "%d:%s=%s ", r.Offset, r.Key, v)
	}
	return sb.String()
}

// A compacted topic with small segments, keys overwritten and deleted:
// once the cleaner has run, consuming from the start shows exactly the
// latest record of every key (tombstones included, as delete.retention.ms
// has not passed), at their original offsets, and the log start and end
// offsets are unchanged.
func TestCompactedTopicConsumedAfterCleaning(t *testing.T) {
	b := startBroker(t, "", "log.cleaner.backoff.ms=50")
	const topic = "compacted"
	b.createTopic(t, topic, 1, map[string]*string{
		"cleanup.policy":            strPtr("compact"),
		"internal.segment.bytes":    strPtr("1024"),
		"min.cleanable.dirty.ratio": strPtr("0.01"),
	})
	cl := b.newClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type kvPair struct {
		offset int64
		value  []byte
	}
	latest := map[string]kvPair{}
	var order []string
	n := scale(300)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("key-%02d", i%20)
		var value []byte
		if i%7 != 3 {
			value = []byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 40)))
		}
		r := &kgo.Record{Key: []byte(key), Value: value}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if _, ok := latest[key]; !ok {
			order = append(order, key)
		}
		latest[key] = kvPair{r.Offset, value}
	}
	// Unique keys push the workload out of the active segment, which is
	// never cleaned.
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("filler-%02d", i)
		r := &kgo.Record{Key: []byte(key), Value: []byte(strings.Repeat("f", 60))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		latest[key] = kvPair{r.Offset, r.Value}
	}
	end := b.endOffsets(t, topic)[0]
	want := map[int64]string{}
	for k, p := range latest {
		v := "<nil>"
		if p.value != nil {
			v = string(p.value)
		}
		want[p.offset] = k + "=" + v
	}

	// Bounded wait on observable state: the consumed log equals the
	// expected survivors.
	var got []*kgo.Record
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		got = b.consumeToEnd(t, topic, end)
		if len(got) == len(want) || time.Now().After(deadline) {
			break
		}
		<-tick.C
	}
	if len(got) != len(want) {
		t.Fatalf("after cleaning %d records, want %d survivors: %s", len(got), len(want), describeRecords(got))
	}
	for _, r := range got {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		if want[r.Offset] != string(r.Key)+"="+v {
			t.Fatalf("offset %d: got %s=%s, want %q", r.Offset, r.Key, v, want[r.Offset])
		}
	}

	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Offset != 0 {
		t.Fatalf("log start offset %d after compaction, want 0", s.Offset)
	}
	if e := b.endOffsets(t, topic)[0]; e != end {
		t.Fatalf("end offset %d after compaction, was %d", e, end)
	}

	// The cleaned log survives a restart unchanged.
	b = b.restart(t)
	if again := b.consumeToEnd(t, topic, end); describeRecords(again) != describeRecords(got) {
		t.Fatalf("after restart:\n%s\nwas\n%s", describeRecords(again), describeRecords(got))
	}
}

// DeleteRecords moves the log start offset (ListOffsets earliest and a
// consumer starting at the beginning follow it) and retention then removes
// the segments below it; retention.ms expires whole segments, the active
// one after a roll, keeping the log end offset.
func TestDeleteRecordsAndRetention(t *testing.T) {
	b := startBroker(t, "", "log.retention.check.interval.ms=50")
	const topic, expiring = "deleting", "expiring"
	b.createTopic(t, topic, 1, map[string]*string{"internal.segment.bytes": strPtr("1024"), "file.delete.delay.ms": strPtr("0")})
	b.createTopic(t, expiring, 1, map[string]*string{"internal.segment.bytes": strPtr("1024"), "retention.ms": strPtr("1000")})
	cl := b.newClient(t, append(b.producerOpts(t), kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 50; i++ {
		for _, tp := range []string{topic, expiring} {
			r := &kgo.Record{Topic: tp, Key: []byte(fmt.Sprint(i)), Value: []byte(strings.Repeat("v", 80))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var dos kadm.Offsets
	dos.Add(kadm.Offset{Topic: topic, Partition: 0, At: 20})
	dr, err := adm.DeleteRecords(ctx, dos)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 20 {
		t.Fatalf("DeleteRecords: %v, low watermark %d", r.Err, r.LowWatermark)
	}
	startOf := func(tp string) int64 {
		starts, err := adm.ListStartOffsets(ctx, tp)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := starts.Lookup(tp, 0)
		if s.Err != nil {
			t.Fatal(s.Err)
		}
		return s.Offset
	}
	if s := startOf(topic); s != 20 {
		t.Fatalf("earliest offset %d after DeleteRecords", s)
	}
	if got := b.consumeToEnd(t, topic, 50); got[0].Offset != 20 || len(got) != 30 {
		t.Fatalf("consumed from %d, %d records", got[0].Offset, len(got))
	}

	// Bounded waits on observable state.
	lowestSegment := func(tp string) int64 {
		entries, err := os.ReadDir(filepath.Join(b.dataDir, tp+"-0"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".log") {
				var base int64
				fmt.Sscanf(e.Name(), "%020d.log", &base)
				return base
			}
		}
		return -1
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for lowestSegment(topic) == 0 && time.Now().Before(deadline) {
		<-tick.C
	}
	if base := lowestSegment(topic); base == 0 || base > 20 {
		t.Fatalf("retention left the first segment at %d, log start 20", base)
	}
	for startOf(expiring) < 50 && time.Now().Before(deadline) {
		<-tick.C
	}
	if s := startOf(expiring); s != 50 {
		t.Fatalf("expired log starts at %d, want its end 50", s)
	}
	if e := b.endOffsets(t, expiring)[0]; e != 50 {
		t.Fatalf("expired log ends at %d", e)
	}
}
