package protocol

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/coordinator"
)

// TestFranzGoClient drives the server with franz-go's own client and admin
// client: topic admin, produce with every codec, offsets, consume.
func TestFranzGoClient(t *testing.T) {
	b := startBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	adm, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	admin := kadm.NewClient(adm)

	created, err := admin.CreateTopics(ctx, 3, 1, nil, "events")
	if err != nil || created["events"].Err != nil {
		t.Fatalf("create: %v %v", err, created["events"].Err)
	}
	if dup, _ := admin.CreateTopics(ctx, 1, 1, nil, "events"); dup["events"].Err != kerr.TopicAlreadyExists {
		t.Fatalf("second create: %v", dup["events"].Err)
	}
	if bad, _ := admin.CreateTopics(ctx, 1, 3, nil, "rf3"); bad["rf3"].Err != kerr.InvalidReplicationFactor {
		t.Fatalf("rf 3: %v", bad["rf3"].Err)
	}

	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	const perCodec = 20
	for i, codec := range codecs {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic("events"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
		if err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for j := range perCodec {
			recs = append(recs, &kgo.Record{Partition: int32(i % 3), Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("codec %d record %d", i, j))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("codec %d: %v", i, err)
		}
		cl.Close()
	}

	ends, err := admin.ListEndOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("end offset %d: %v", o.Partition, o.Err)
		}
		total += o.Offset
	})
	if total != int64(len(codecs)*perCodec) {
		t.Fatalf("end offsets sum to %d", total)
	}
	starts, err := admin.ListStartOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 {
			t.Errorf("start offset %d: %d", o.Partition, o.Offset)
		}
	})

	// Auto-creation through a producer's metadata request.
	auto, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic("auto-created"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	if err := auto.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to auto-created topic: %v", err)
	}
	auto.Close()

	// Consume everything back (Fetch is served by fetch.go).
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < len(codecs)*perCodec {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records: %v", got, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}

	deleted, err := admin.DeleteTopics(ctx, "events", "auto-created")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deleted {
		if d.Err != nil {
			t.Errorf("delete %s: %v", d.Topic, d.Err)
		}
	}
	if b.store.Topic("events") != nil {
		t.Fatal("topic still there")
	}
}

func TestCreateTopicsErrors(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "exists", 1, nil)
	topic := func(name string, parts int32, rf int16) kmsg.CreateTopicsRequestTopic {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, parts, rf
		return ct
	}
	withAssign := func(ct kmsg.CreateTopicsRequestTopic, as ...[]int32) kmsg.CreateTopicsRequestTopic {
		for i, a := range as {
			ct.ReplicaAssignment = append(ct.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: a})
		}
		return ct
	}
	withConfig := func(ct kmsg.CreateTopicsRequestTopic, k string, v *string) kmsg.CreateTopicsRequestTopic {
		ct.Configs = append(ct.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: v})
		return ct
	}
	cases := []struct {
		topic kmsg.CreateTopicsRequestTopic
		want  *kerr.Error
	}{
		{topic("ok-default", -1, -1), nil},
		{topic("exists", 1, 1), kerr.TopicAlreadyExists},
		{topic("bad name!", 1, 1), kerr.InvalidTopicException},
		{topic("", 1, 1), kerr.InvalidTopicException},
		{topic("zero-parts", 0, 1), kerr.InvalidPartitions},
		{topic("neg-parts", -2, 1), kerr.InvalidPartitions},
		{topic("zero-rf", 1, 0), kerr.InvalidReplicationFactor},
		{topic("rf2", 1, 2), kerr.InvalidReplicationFactor},
		{withConfig(topic("bad-config", 1, 1), "retention.ms", strp("soon")), kerr.InvalidConfig},
		{withConfig(topic("unknown-config", 1, 1), "no.such.config", strp("1")), kerr.InvalidConfig},
		{withConfig(topic("null-config", 1, 1), "retention.ms", nil), kerr.InvalidConfig},
		{withAssign(topic("assigned", -1, -1), []int32{1}, []int32{1}), nil},
		{withAssign(topic("assigned-rf", -1, 1), []int32{1}), kerr.InvalidRequest},
		{withAssign(topic("assigned-other-broker", -1, -1), []int32{2}), kerr.InvalidReplicaAssignment},
		{withAssign(topic("assigned-twice", -1, -1), []int32{1, 1}), kerr.InvalidReplicaAssignment},
		{withAssign(topic("assigned-empty", -1, -1), []int32{}), kerr.InvalidReplicaAssignment},
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	for _, c := range cases {
		req.Topics = append(req.Topics, c.topic)
	}
	req.Topics = append(req.Topics, topic("dup", 1, 1), topic("dup", 1, 1))
	w := dialWire(t, b.addr)
	resp := w.roundTrip(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != len(cases)+1 {
		t.Fatalf("%d results for %d topics", len(resp.Topics), len(cases)+1)
	}
	for i, c := range cases {
		got := resp.Topics[i]
		if got.Topic != c.topic.Topic {
			t.Fatalf("result %d is %q, want %q", i, got.Topic, c.topic.Topic)
		}
		if err := kerr.ErrorForCode(got.ErrorCode); err != c.want && !(c.want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", c.topic.Topic, err, c.want)
		}
		if c.want != nil && (got.ErrorMessage == nil || got.NumPartitions != -1) {
			t.Errorf("%s: message %v, partitions %d", c.topic.Topic, got.ErrorMessage, got.NumPartitions)
		}
	}
	if last := resp.Topics[len(cases)]; last.Topic != "dup" || last.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("duplicate: %+v", last)
	}
	if tp := b.store.Topic("assigned"); tp == nil || len(tp.Partitions) != 2 {
		t.Errorf("manual assignment not created with 2 partitions")
	}
	if b.store.Topic("dup") != nil {
		t.Errorf("duplicate name created")
	}
}

func TestDeleteTopicsDisabled(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.DeleteTopicEnable = false })
	b.createTopic(t, "keep", 1, nil)
	w := dialWire(t, b.addr)
	for v, want := range map[int16]*kerr.Error{2: kerr.InvalidRequest, 6: kerr.TopicDeletionDisabled} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(v)
		req.TopicNames = []string{"keep"}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: strp("keep")}}
		r := w.roundTrip(req).(*kmsg.DeleteTopicsResponse)
		if len(r.Topics) != 1 || r.Topics[0].ErrorCode != want.Code {
			t.Errorf("v%d: %+v", v, r.Topics)
		}
	}
	if b.store.Topic("keep") == nil {
		t.Fatal("deleted anyway")
	}
}

func TestMetadataAutoCreateDisabled(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.AutoCreateTopics = false })
	w := dialWire(t, b.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(3) // below v4 means "auto-create", but the broker says no
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: strp("missing")}, {Topic: strp("bad name")}, {Topic: strp("missing")}}
	r := w.roundTrip(req).(*kmsg.MetadataResponse)
	if len(r.Topics) != 2 || r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || r.Topics[1].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("%+v", r.Topics)
	}
	if b.store.Topic("missing") != nil {
		t.Fatal("created")
	}
}

// TestMetadataAutoCreatesInternalTopics: naming __consumer_offsets or
// __transaction_state in an auto-creating Metadata request creates it as
// its coordinator would (partitions, compact), as Kafka's
// AutoTopicCreationManager does; without auto-creation it stays missing.
func TestMetadataAutoCreatesInternalTopics(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	ask := func(allow bool, names ...string) *kmsg.MetadataResponse {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(9)
		req.AllowAutoTopicCreation = allow
		for _, n := range names {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: strp(n)})
		}
		return w.roundTrip(req).(*kmsg.MetadataResponse)
	}
	if r := ask(false, coordinator.OffsetsTopic); r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || b.store.Topic(coordinator.OffsetsTopic) != nil {
		t.Fatalf("created without auto-creation: %+v", r.Topics)
	}
	// As Kafka 4.3.1: the request that creates them is answered
	// UNKNOWN_TOPIC_OR_PARTITION, the next one with the topics.
	r := ask(true, coordinator.OffsetsTopic, coordinator.TxnTopic)
	for _, rt := range r.Topics {
		if rt.ErrorCode != kerr.UnknownTopicOrPartition.Code || !rt.IsInternal || len(rt.Partitions) != 0 {
			t.Fatalf("%s: code %d internal %v partitions %d", *rt.Topic, rt.ErrorCode, rt.IsInternal, len(rt.Partitions))
		}
	}
	r = ask(true, coordinator.OffsetsTopic, coordinator.TxnTopic)
	for i, name := range []string{coordinator.OffsetsTopic, coordinator.TxnTopic} {
		rt := r.Topics[i]
		if rt.ErrorCode != 0 || !rt.IsInternal || len(rt.Partitions) != 50 {
			t.Fatalf("%s: code %d internal %v partitions %d", name, rt.ErrorCode, rt.IsInternal, len(rt.Partitions))
		}
		if got := b.store.Topic(name).Overrides["cleanup.policy"]; got != "compact" {
			t.Fatalf("%s: cleanup.policy %q", name, got)
		}
	}
}

func TestListOffsetsErrors(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "t", 1, nil)
	b.createTopic(t, "t2", 1, nil)
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID = -1
	add := func(topic string, p int32, ts int64, epoch int32) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	add("nope", 0, -1, -1)
	add("t", 5, -1, -1)
	add("t2", 0, -1, 3)
	add("t", 0, -2, -1)
	add("t", 0, -2, -1) // duplicate of the one before
	w := dialWire(t, b.addr)
	r := w.roundTrip(req).(*kmsg.ListOffsetsResponse)
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownLeaderEpoch.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, rt := range r.Topics {
		if p := rt.Partitions[0]; p.ErrorCode != want[i] || p.Offset != -1 || p.Timestamp != -1 {
			t.Errorf("entry %d: %+v, want error %d", i, p, want[i])
		}
	}
	// Max timestamp of an empty log: no error, unknown offset.
	req.Topics = nil
	add("t", 0, -3, -1)
	if p := w.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 {
		t.Errorf("max timestamp of empty log: %+v", p)
	}
}

// After DeleteTopics, Metadata answers as Apache Kafka 4.3.1 does in the
// same sequence (observed on a 4.3.1 broker): by name
// UNKNOWN_TOPIC_OR_PARTITION, by the old id UNKNOWN_TOPIC_ID with a null
// name and the id; with auto-creation allowed, UNKNOWN_TOPIC_OR_PARTITION
// and the topic comes back under a new id.
func TestMetadataAfterDeleteTopics(t *testing.T) {
	b := startBroker(t, nil)
	old := b.createTopic(t, "gone", 1, nil)
	if err := b.store.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b.addr)
	ask := func(v int16, allow bool, topic kmsg.MetadataRequestTopic) kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		req.AllowAutoTopicCreation = allow
		req.Topics = []kmsg.MetadataRequestTopic{topic}
		return w.roundTrip(req).(*kmsg.MetadataResponse).Topics[0]
	}
	byName := kmsg.MetadataRequestTopic{Topic: strp("gone")}
	if r := ask(12, false, byName); r.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(r.Partitions) != 0 {
		t.Fatalf("by name: %+v", r)
	}
	byID := kmsg.MetadataRequestTopic{TopicID: old.ID}
	if r := ask(12, false, byID); r.ErrorCode != kerr.UnknownTopicID.Code || r.Topic != nil || r.TopicID != old.ID {
		t.Fatalf("by id: %+v", r)
	}
	if r := ask(9, true, byName); r.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(r.Partitions) != 0 {
		t.Fatalf("auto-create: %+v", r)
	}
	r := ask(12, false, byName)
	if r.ErrorCode != 0 || len(r.Partitions) != 1 || r.TopicID == old.ID {
		t.Fatalf("recreated: %+v", r)
	}
	if r := ask(12, false, byID); r.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("old id after recreation: %+v", r)
	}
}
