package protocol

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// testBatch builds a v2 batch as a producer would.
func testBatch(t testing.TB, codec recordbatch.Codec, ts int64, recs ...recordbatch.Record) []byte {
	t.Helper()
	if len(recs) == 0 {
		recs = []recordbatch.Record{{Key: []byte("k"), Value: []byte("v")}}
	}
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{
		Codec:         codec,
		BaseTimestamp: ts,
		ProducerID:    recordbatch.NoProducerID,
		ProducerEpoch: recordbatch.NoProducerEpoch,
		BaseSequence:  recordbatch.NoSequence,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func strp(s string) *string { return &s }

func (b *testBroker) createTopic(t testing.TB, name string, parts int32, configs map[string]string) *partition.Topic {
	t.Helper()
	tp, err := b.store.CreateTopic(name, parts, configs, false)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func (b *testBroker) nowMs() int64 { return b.clock.Now().UnixMilli() }

func produceReq(v int16, topic string, id [16]byte, part int32, records []byte) *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(v)
	r.Acks = -1
	r.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func onlyProducePartition(t testing.TB, r kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := r.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("want one partition, got %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// versionChecks holds the per-version checks of APIs whose tests live in
// their own files, which add to it from init: key -> check at version v.
var versionChecks = map[int16]func(t *testing.T, b *testBroker, w *wire, v int16){}

// TestEveryAdvertisedVersion walks every (API key, version) pair that
// ApiVersions advertises, except Fetch (fetch_test.go), and checks the
// fields that version adds.
func TestEveryAdvertisedVersion(t *testing.T) {
	b := startBroker(t, nil)
	base := b.createTopic(t, "base", 2, nil)
	compacted := b.createTopic(t, "compacted", 1, map[string]string{"cleanup.policy": "compact"})

	w := dialWire(t, b.addr)
	av := w.roundTrip(apiVersionsReq(4)).(*kmsg.ApiVersionsResponse)
	checked, extra := 0, 0
	for _, k := range av.ApiKeys {
		if k.ApiKey == kmsg.Fetch.Int16() {
			continue
		}
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			t.Run(fmt.Sprintf("key%d/v%d", k.ApiKey, v), func(t *testing.T) {
				w := dialWire(t, b.addr)
				switch k.ApiKey {
				case 18:
					checkApiVersionsVersion(t, w, v)
				case 3:
					checkMetadataVersion(t, b, w, v, base)
				case 19:
					checkCreateTopicsVersion(t, b, w, v)
				case 20:
					checkDeleteTopicsVersion(t, b, w, v)
				case 0:
					checkProduceVersion(t, b, w, v, base, compacted)
				case 2:
					checkListOffsetsVersion(t, b, w, v)
				case 32, 33, 44:
					checkConfigsVersion(t, b, w, k.ApiKey, v) // configs_test.go
				default:
					check, ok := versionChecks[k.ApiKey]
					if !ok {
						t.Fatalf("advertised key %d has no check", k.ApiKey)
					}
					check(t, b, w, v)
				}
			})
			checked++
			if versionChecks[k.ApiKey] != nil {
				extra++
			}
		}
	}
	if checked != 65+extra { // + the pairs of versionChecks // 5 ApiVersions + 14 Metadata + 6 CreateTopics (v2+) + 6 DeleteTopics (v1+) + 14 Produce + 11 ListOffsets (v1+) + 4 DescribeConfigs (v1+) + 3 AlterConfigs + 2 IncrementalAlterConfigs
		t.Fatalf("only %d pairs checked", checked)
	}
}

func checkApiVersionsVersion(t *testing.T, w *wire, v int16) {
	resp := w.roundTrip(apiVersionsReq(v)).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) < 7 {
		t.Fatalf("error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	if v >= 1 && resp.ThrottleMillis != 0 {
		t.Errorf("throttle %d", resp.ThrottleMillis)
	}
	// Below v4 the supported features with min level 0 (all of ours)
	// are left out.
	wantSupported := 0
	if v >= 4 {
		wantSupported = len(brokerFeatures)
	}
	if v >= 3 && (resp.FinalizedFeaturesEpoch != 0 || len(resp.FinalizedFeatures) != len(brokerFeatures) || len(resp.SupportedFeatures) != wantSupported) {
		t.Errorf("features %+v %+v epoch %d", resp.SupportedFeatures, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
	}
}

func checkMetadataVersion(t *testing.T, b *testBroker, w *wire, v int16, base *partition.Topic) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v)
	if v == 0 {
		req.Topics = []kmsg.MetadataRequestTopic{} // all topics at v0
	}
	resp := w.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != "127.0.0.1" {
		t.Fatalf("brokers %+v", resp.Brokers)
	}
	var got *kmsg.MetadataResponseTopic
	for i := range resp.Topics {
		if resp.Topics[i].Topic != nil && *resp.Topics[i].Topic == "base" {
			got = &resp.Topics[i]
		}
	}
	if got == nil || len(got.Partitions) != 2 {
		t.Fatalf("topic base missing or wrong: %+v", resp.Topics)
	}
	p := got.Partitions[1]
	if p.Partition != 1 || p.Leader != 1 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
		t.Errorf("partition %+v", p)
	}
	if v >= 1 && resp.ControllerID != 1 {
		t.Errorf("controller %d", resp.ControllerID)
	}
	if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != b.store.ClusterID()) {
		t.Errorf("cluster id %v", resp.ClusterID)
	}
	if v >= 7 && p.LeaderEpoch != 0 {
		t.Errorf("leader epoch %d", p.LeaderEpoch)
	}
	if v >= 10 && got.TopicID != base.ID {
		t.Errorf("topic id %x, want %x", got.TopicID, base.ID)
	}
	if v >= 13 && resp.ErrorCode != 0 {
		t.Errorf("error code %d", resp.ErrorCode)
	}

	// v1+: an empty list means no topics.
	if v >= 1 {
		req.Topics = []kmsg.MetadataRequestTopic{}
		if r := w.roundTrip(req).(*kmsg.MetadataResponse); len(r.Topics) != 0 {
			t.Errorf("empty list answered %d topics", len(r.Topics))
		}
	}

	// Auto creation: always below v4; at v4+ only when allowed. As Kafka
	// 4.3.1, the request that creates the topic is answered
	// UNKNOWN_TOPIC_OR_PARTITION without partitions; the next finds it.
	name := fmt.Sprintf("auto-v%d", v)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: strp(name)}}
	req.AllowAutoTopicCreation = false
	r := w.roundTrip(req).(*kmsg.MetadataResponse)
	if r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || len(r.Topics[0].Partitions) != 0 {
		t.Errorf("v%d, AllowAutoTopicCreation=false: %+v", v, r.Topics[0])
	}
	if created := b.store.Topic(name) != nil; created != (v < 4) {
		t.Errorf("v%d, AllowAutoTopicCreation=false: created %v", v, created)
	}
	if v >= 4 {
		req.AllowAutoTopicCreation = true
		r = w.roundTrip(req).(*kmsg.MetadataResponse)
		if r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || len(r.Topics[0].Partitions) != 0 || b.store.Topic(name) == nil {
			t.Errorf("auto-create: %+v", r.Topics[0])
		}
	}
	if r = w.roundTrip(req).(*kmsg.MetadataResponse); r.Topics[0].ErrorCode != 0 || len(r.Topics[0].Partitions) != 1 {
		t.Errorf("after auto-create: %+v", r.Topics[0])
	}

	// v8+: authorized operations when asked; the schema default otherwise.
	if v >= 8 {
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: strp("base")}}
		req.IncludeTopicAuthorizedOperations = true
		req.IncludeClusterAuthorizedOperations = true
		r = w.roundTrip(req).(*kmsg.MetadataResponse)
		if r.Topics[0].AuthorizedOperations != topicAuthorizedOperations {
			t.Errorf("topic ops %d", r.Topics[0].AuthorizedOperations)
		}
		if v <= 10 && r.AuthorizedOperations != clusterAuthorizedOperations {
			t.Errorf("cluster ops %d", r.AuthorizedOperations)
		}
	}

	// v12+: topics by id, unknown ids answered with UNKNOWN_TOPIC_ID.
	if v >= 12 {
		req.Topics = []kmsg.MetadataRequestTopic{{TopicID: base.ID}, {TopicID: [16]byte{9}}}
		r = w.roundTrip(req).(*kmsg.MetadataResponse)
		if len(r.Topics) != 2 || r.Topics[0].ErrorCode != kerr.UnknownTopicID.Code || r.Topics[0].Topic != nil ||
			r.Topics[1].ErrorCode != 0 || *r.Topics[1].Topic != "base" {
			t.Errorf("by id: %+v", r.Topics)
		}
		// A null name with a zero id, no topic by id: Kafka 4.3.1 fails
		// the request, every topic UNKNOWN_SERVER_ERROR in request
		// order, a null name as "", no brokers; the connection stays.
		req.Topics = []kmsg.MetadataRequestTopic{{}, {Topic: strp("base")}, {}}
		r = w.roundTrip(req).(*kmsg.MetadataResponse)
		var names []string
		for _, rt := range r.Topics {
			if rt.ErrorCode != kerr.UnknownServerError.Code || rt.Topic == nil || rt.TopicID != ([16]byte{}) || len(rt.Partitions) != 0 {
				t.Errorf("null name, zero id: topic %+v", rt)
				continue
			}
			names = append(names, *rt.Topic)
		}
		wantTop := int16(0)
		if v >= 13 {
			wantTop = kerr.UnknownServerError.Code
		}
		if fmt.Sprint(names) != "[ base ]" || len(r.Brokers) != 0 || r.ClusterID != nil || r.ControllerID != -1 || r.ErrorCode != wantTop {
			t.Errorf("null name, zero id: names %q, brokers %d, cluster %v, controller %d, error %d",
				names, len(r.Brokers), r.ClusterID, r.ControllerID, r.ErrorCode)
		}
		// With a topic by id, the null name is ignored (Kafka uses the ids).
		req.Topics = []kmsg.MetadataRequestTopic{{}, {TopicID: base.ID}}
		r = w.roundTrip(req).(*kmsg.MetadataResponse)
		if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 || *r.Topics[0].Topic != "base" {
			t.Errorf("null name beside an id: %+v", r.Topics)
		}
	}
	if v >= 10 && v < 12 {
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: strp("base"), TopicID: base.ID}}
		r = w.roundTrip(req).(*kmsg.MetadataResponse)
		if len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("topic id below v12: %+v", r.Topics)
		}
	}
}

func checkCreateTopicsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(v)
	req.TimeoutMillis = 5000
	name := fmt.Sprintf("created-v%d", v)
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 3, 1
	ct.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: strp("1000")}}
	bad := kmsg.NewCreateTopicsRequestTopic()
	bad.Topic, bad.NumPartitions, bad.ReplicationFactor = name+"-rf3", 1, 3
	req.Topics = []kmsg.CreateTopicsRequestTopic{ct, bad}
	if v >= 1 {
		req.ValidateOnly = true
		r := w.roundTrip(req).(*kmsg.CreateTopicsResponse)
		if r.Topics[0].ErrorCode != 0 || b.store.Topic(name) != nil {
			t.Fatalf("validate-only: error %d, created %v", r.Topics[0].ErrorCode, b.store.Topic(name) != nil)
		}
		req.ValidateOnly = false
	}
	r := w.roundTrip(req).(*kmsg.CreateTopicsResponse)
	got, rf3 := r.Topics[0], r.Topics[1]
	if got.Topic != name || got.ErrorCode != 0 {
		t.Fatalf("create: %+v", got)
	}
	created := b.store.Topic(name)
	if created == nil || len(created.Partitions) != 3 || created.Config.RetentionMs != 1000 {
		t.Fatalf("store has %+v", created)
	}
	if rf3.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Errorf("rf 3: error %d", rf3.ErrorCode)
	}
	if v >= 1 && (rf3.ErrorMessage == nil || *rf3.ErrorMessage == "") {
		t.Errorf("rf 3: no error message")
	}
	if v >= 5 {
		if got.NumPartitions != 3 || got.ReplicationFactor != 1 || len(got.Configs) == 0 {
			t.Errorf("v5 fields: %d partitions, rf %d, %d configs", got.NumPartitions, got.ReplicationFactor, len(got.Configs))
		}
		found := false
		for _, c := range got.Configs {
			if c.Name == "retention.ms" {
				found = *c.Value == "1000" && c.Source == configSourceDynamicTopic
			}
		}
		if !found {
			t.Errorf("retention.ms override not reported")
		}
		if rf3.NumPartitions != -1 || rf3.ReplicationFactor != -1 {
			t.Errorf("failed topic reports %d/%d", rf3.NumPartitions, rf3.ReplicationFactor)
		}
	}
	if v >= 7 && got.TopicID != created.ID {
		t.Errorf("topic id %x, want %x", got.TopicID, created.ID)
	}
	// Again: already exists.
	req.Topics = req.Topics[:1]
	if r := w.roundTrip(req).(*kmsg.CreateTopicsResponse); r.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Errorf("second create: error %d", r.Topics[0].ErrorCode)
	}
}

func checkDeleteTopicsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	name := fmt.Sprintf("doomed-v%d", v)
	tp := b.createTopic(t, name, 1, nil)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(v)
	req.TimeoutMillis = 5000
	if v >= 6 {
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: tp.ID}, {Topic: strp("no-such-topic")}, {TopicID: [16]byte{7}}}
	} else {
		req.TopicNames = []string{name, "no-such-topic"}
	}
	r := w.roundTrip(req).(*kmsg.DeleteTopicsResponse)
	codes := map[string]int16{}
	for _, rt := range r.Topics {
		n := "<nil>"
		if rt.Topic != nil {
			n = *rt.Topic
		}
		codes[n] = rt.ErrorCode
		if v >= 6 && n == name && rt.TopicID != tp.ID {
			t.Errorf("deleted topic reported with id %x", rt.TopicID)
		}
	}
	if c, ok := codes[name]; !ok || c != 0 || b.store.Topic(name) != nil {
		t.Fatalf("delete: %+v", r.Topics)
	}
	if codes["no-such-topic"] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown name: %+v", r.Topics)
	}
	if v >= 6 && codes["<nil>"] != kerr.UnknownTopicID.Code {
		t.Errorf("unknown id: %+v", r.Topics)
	}
	if v >= 5 {
		dup := kmsg.NewPtrDeleteTopicsRequest()
		dup.SetVersion(v)
		if v >= 6 {
			dup.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: strp("x")}, {Topic: strp("x")}}
		} else {
			dup.TopicNames = []string{"x", "x"}
		}
		r := w.roundTrip(dup).(*kmsg.DeleteTopicsResponse)
		if len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.InvalidRequest.Code || r.Topics[0].ErrorMessage == nil {
			t.Errorf("duplicate: %+v", r.Topics)
		}
	}
}

func checkProduceVersion(t *testing.T, b *testBroker, w *wire, v int16, base, compacted *partition.Topic) {
	if v < 3 {
		// Advertised for librdkafka's sake, refused as Kafka 4 does.
		w.send(produceReq(v, "base", [16]byte{}, 0, nil))
		w.expectClosed()
		return
	}
	name := "base"
	if v >= 13 {
		name = ""
	}
	before := base.Partitions[0].Offsets().LogEndOffset
	sp := onlyProducePartition(t, w.roundTrip(produceReq(v, name, base.ID, 0, testBatch(t, recordbatch.None, b.nowMs()))))
	if sp.ErrorCode != 0 || sp.BaseOffset != before {
		t.Fatalf("produce: error %d base offset %d, want %d", sp.ErrorCode, sp.BaseOffset, before)
	}
	if sp.LogAppendTime != -1 {
		t.Errorf("log append time %d for a CreateTime topic", sp.LogAppendTime)
	}
	if v >= 5 && sp.LogStartOffset != 0 {
		t.Errorf("log start offset %d", sp.LogStartOffset)
	}
	// zstd needs v7.
	sp = onlyProducePartition(t, w.roundTrip(produceReq(v, name, base.ID, 0, testBatch(t, recordbatch.Zstd, b.nowMs()))))
	if want := map[bool]int16{true: kerr.UnsupportedCompressionType.Code, false: 0}[v < 7]; sp.ErrorCode != want {
		t.Errorf("zstd: error %d, want %d", sp.ErrorCode, want)
	}
	// A keyless record on a compacted topic; v8+ lists the record.
	cname := "compacted"
	if v >= 13 {
		cname = ""
	}
	batch := testBatch(t, recordbatch.None, b.nowMs(), recordbatch.Record{Key: []byte("a")}, recordbatch.Record{Value: []byte("no key")})
	sp = onlyProducePartition(t, w.roundTrip(produceReq(v, cname, compacted.ID, 0, batch)))
	if sp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("keyless on compacted: error %d", sp.ErrorCode)
	}
	if v >= 8 {
		if len(sp.ErrorRecords) != 1 || sp.ErrorRecords[0].RelativeOffset != 1 || sp.ErrorMessage == nil {
			t.Errorf("record errors %+v message %v", sp.ErrorRecords, sp.ErrorMessage)
		}
	}
	// v13: an unknown topic id.
	if v >= 13 {
		sp = onlyProducePartition(t, w.roundTrip(produceReq(v, "", [16]byte{5}, 0, testBatch(t, recordbatch.None, b.nowMs()))))
		if sp.ErrorCode != kerr.UnknownTopicID.Code {
			t.Errorf("unknown topic id: error %d", sp.ErrorCode)
		}
	}
}

func checkListOffsetsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	name := fmt.Sprintf("offsets-v%d", v)
	tp := b.createTopic(t, name, 1, nil)
	now := b.nowMs()
	for i, ts := range []int64{now - 3000, now - 1000, now - 2000} {
		res, err := tp.Partitions[0].Append(testBatch(t, recordbatch.None, ts))
		if err != nil || res.BaseOffset != int64(i) {
			t.Fatalf("append: %v %+v", err, res)
		}
	}
	ask := func(ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(v)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rp.MaxNumOffsets = 10
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r := w.roundTrip(req).(*kmsg.ListOffsetsResponse)
		return r.Topics[0].Partitions[0]
	}
	if v == 0 {
		p := ask(-1)
		if p.ErrorCode != 0 || len(p.OldStyleOffsets) != 2 || p.OldStyleOffsets[0] != 3 || p.OldStyleOffsets[1] != 0 {
			t.Errorf("v0 latest: %+v", p)
		}
		if p = ask(-2); len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 0 {
			t.Errorf("v0 earliest: %+v", p)
		}
		return
	}
	if p := ask(-1); p.ErrorCode != 0 || p.Offset != 3 || p.Timestamp != -1 {
		t.Errorf("latest: %+v", p)
	}
	if p := ask(-2); p.Offset != 0 {
		t.Errorf("earliest: %+v", p)
	}
	if p := ask(now - 1500); p.Offset != 1 || p.Timestamp != now-1000 {
		t.Errorf("by timestamp: %+v", p)
	}
	if p := ask(now + 1); p.Offset != -1 || p.Timestamp != -1 || p.ErrorCode != 0 {
		t.Errorf("after the last record: %+v", p)
	}
	if v >= 4 {
		if p := ask(-1); p.LeaderEpoch != 0 {
			t.Errorf("leader epoch %d", p.LeaderEpoch)
		}
	}
	if v >= 7 {
		if p := ask(-3); p.Offset != 1 || p.Timestamp != now-1000 {
			t.Errorf("max timestamp: %+v", p)
		}
	}
	if v >= 8 {
		if p := ask(-4); p.Offset != 0 {
			t.Errorf("earliest local: %+v", p)
		}
	}
	if v >= 9 {
		if p := ask(-5); p.Offset != -1 || p.LeaderEpoch != -1 {
			t.Errorf("latest tiered: %+v", p)
		}
	}
	// Special timestamps below their version, and unknown ones, as Kafka
	// 4.3.1 answers them (measured); -6 is earliest pending upload (v11).
	for ts, from := range map[int64]int16{-3: 7, -4: 8, -5: 9, -6: 11, -7: 100, -100: 100} {
		p := ask(ts)
		switch {
		case v < from && (p.ErrorCode != kerr.UnsupportedVersion.Code || p.Offset != -1):
			t.Errorf("timestamp %d: %+v, want UNSUPPORTED_VERSION", ts, p)
		case v >= from && p.ErrorCode != 0:
			t.Errorf("timestamp %d: %+v", ts, p)
		case ts == -6 && v >= from && (p.Offset != -1 || p.LeaderEpoch != -1 || p.Timestamp != -1):
			t.Errorf("earliest pending upload: %+v", p)
		}
	}
}
