package integration

// Admin.abortTransaction (KIP-664) against the built binary: a
// transaction left open by its producer is aborted by a WriteTxnMarkers
// request sent as the Java admin sends it, after DescribeProducers found
// the producer's epoch and coordinator epoch; and ListConfigResources
// (KIP-1142). Both run against Apache Kafka as well:
// KCOMPATD_TXN_BOOTSTRAP=host:port (txn_helpers_test.go).

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAbortHangingTransaction(t *testing.T) {
	t.Parallel()
	b := txnBroker(t, true)
	topic := fmt.Sprintf("hanging-%d", time.Now().UnixNano())
	b.createTopic(t, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(b.newClient(t))
	plain := b.newClient(t, append(b.producerOpts(t), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	produce := func(cl *kgo.Client, v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	lso := func() int64 {
		t.Helper()
		l, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := l.Lookup(topic, 0)
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.Offset
	}

	// A transaction its producer never ends: the LSO stays at its start.
	produce(plain, "before")
	hanging, _ := b.txnClient(t, fmt.Sprintf("hanging-%d", time.Now().UnixNano()), 10*time.Minute)
	if err := hanging.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(hanging, "aborted-0")
	produce(hanging, "aborted-1")
	produce(plain, "after")
	if got := lso(); got != 1 {
		t.Fatalf("LSO %d with the transaction open, want 1", got)
	}

	// kafka-transactions.sh find-hanging / abort: the producer whose
	// transaction starts at offset 1.
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var found *kadm.DescribedProducer
	described.EachProducer(func(p kadm.DescribedProducer) {
		if p.CurrentTxnStartOffset == 1 {
			found = &p
		}
	})
	if found == nil {
		t.Fatalf("no producer with a transaction at offset 1: %+v", described.SortedProducers())
	}

	// AbortTransactionHandler's request: the producer's id and epoch, the
	// coordinator epoch DescribeProducers reported (never below 0),
	// TransactionVersion left at 0.
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch = found.ProducerID, found.ProducerEpoch
	m.CoordinatorEpoch = max(found.CoordinatorEpoch, 0)
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(ctx, b.newClient(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != found.ProducerID || len(resp.Markers[0].Topics) != 1 ||
		len(resp.Markers[0].Topics[0].Partitions) != 1 || resp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("WriteTxnMarkers: %+v", resp.Markers)
	}

	// The LSO moves to the high watermark; read_committed consumers skip
	// the aborted records, read_uncommitted ones still see them.
	if got := lso(); got != 5 {
		t.Errorf("LSO %d after the abort, want 5 (before, 2 records, after, marker)", got)
	}
	if got := basicConsume(t, b, topic, 1, kgo.ReadCommitted()); !slices.Equal(got, []string{"before", "after"}) {
		t.Errorf("read_committed: %v", got)
	}
	if got := basicConsume(t, b, topic, 1, kgo.ReadUncommitted()); !slices.Equal(got, []string{"before", "aborted-0", "aborted-1", "after"}) {
		t.Errorf("read_uncommitted: %v", got)
	}
	after, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	after.EachProducer(func(p kadm.DescribedProducer) {
		if p.ProducerID == found.ProducerID && (p.CurrentTxnStartOffset != -1 || p.CoordinatorEpoch != m.CoordinatorEpoch) {
			t.Errorf("producer after the abort: %+v", p)
		}
	})

	// The same marker with an older epoch is refused.
	if found.ProducerEpoch > 0 {
		req.Markers[0].ProducerEpoch = found.ProducerEpoch - 1
		resp, err := req.RequestWith(ctx, b.newClient(t))
		if err != nil {
			t.Fatal(err)
		}
		if c := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidProducerEpoch.Code {
			t.Errorf("older epoch: code %d, want INVALID_PRODUCER_EPOCH", c)
		}
	}
}

func TestListConfigResources(t *testing.T) {
	t.Parallel()
	b := txnBroker(t, true)
	topic := fmt.Sprintf("listed-%d", time.Now().UnixNano())
	group := "listed-group-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	b.createTopic(t, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := b.newClient(t)
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{
		ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "consumer.session.timeout.ms", Value: kmsg.StringPtr("50000")}},
	}}
	if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %+v %v", ar, err)
	}
	meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := strconv.Itoa(int(meta.Brokers[0].NodeID))

	list := func(types ...int8) (int16, map[string]bool) {
		t.Helper()
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, r := range resp.ConfigResources {
			got[fmt.Sprintf("%d:%s", r.Type, r.Name)] = true
		}
		return resp.ErrorCode, got
	}
	wanted := []string{"32:" + group, "8:" + node, "4:" + node, "2:" + topic}
	code, all := list()
	// Kafka applies the topic and the group config from its metadata log
	// a moment after answering; kcompatd before answering.
	for try := 0; b.external() && try < 50 && (!all[wanted[0]] || !all[wanted[3]]); try++ {
		time.Sleep(100 * time.Millisecond)
		code, all = list()
	}
	for _, want := range wanted {
		if code != 0 || !all[want] {
			t.Errorf("every type: code %d, %s missing from %v", code, want, all)
		}
	}
	if code, got := list(2); code != 0 || !got["2:"+topic] || got["32:"+group] {
		t.Errorf("topics: %d %v", code, got)
	}
	if code, got := list(2, 7); code != kerr.UnsupportedVersion.Code || len(got) != 0 {
		t.Errorf("an unknown type: %d %v, want UNSUPPORTED_VERSION", code, got)
	}

	// With its last override deleted the group is no longer listed: what
	// Kafka 4.3.1 answers (it lists the groups of its config image, which
	// drops a resource with no configs left).
	alter.Resources[0].Configs[0].Op = kmsg.IncrementalAlterConfigOpDelete
	alter.Resources[0].Configs[0].Value = nil
	if ar, err := alter.RequestWith(ctx, cl); err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("delete group config: %+v %v", ar, err)
	}
	code, got := list(32)
	for try := 0; b.external() && try < 50 && got["32:"+group]; try++ {
		time.Sleep(100 * time.Millisecond)
		code, got = list(32)
	}
	if code != 0 || got["32:"+group] {
		t.Errorf("groups after the last override was deleted: %d %v", code, got)
	}
}
