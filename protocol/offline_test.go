package protocol

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/syncbuf"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
)

// offlineServer serves a store on a memory FS with topics a
// (flush.messages=1, so every produce fsyncs) and b, logging to logger;
// produce sends one record to a topic's partition 0.
func offlineServer(t *testing.T, logger zerolog.Logger) (fsys *memfs.FS, w *wire, produce func(topic string) kmsg.ProduceResponseTopicPartition) {
	t.Helper()
	fsys = memfs.New()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store, err := partition.Open(partition.Config{Dir: "/data", NodeID: 1, FS: fsys, Clock: clk, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateTopic("a", 1, map[string]string{"flush.messages": "1"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateTopic("b", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID = 1
	cfg.AdvertisedHost = "127.0.0.1"
	cfg.AdvertisedPort = int32(ln.Addr().(*net.TCPAddr).Port)
	cfg.Logger = logger
	cfg.Clock = clk
	t.Cleanup(func() { store.Close() })
	startCoordinators(t, &cfg, store, nil)
	s := mustNewServer(t, cfg, store)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		<-served
	})
	w = dialWire(t, ln.Addr().String())
	produce = func(topic string) kmsg.ProduceResponseTopicPartition {
		b := oneRecordBatch(t)
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := w.roundTrip(req).(*kmsg.ProduceResponse)
		return resp.Topics[0].Partitions[0]
	}
	return fsys, w, produce
}

// TestStorageErrorTakesLogDirOffline: after a failed fsync of one
// partition the whole log dir is offline, as in Kafka: produce, fetch and
// list offsets of every partition answer KAFKA_STORAGE_ERROR, and
// DescribeLogDirs reports the dir with that error.
func TestStorageErrorTakesLogDirOffline(t *testing.T) {
	fsys, w, producePart := offlineServer(t, zerolog.Nop())
	produce := func(topic string) int16 { return producePart(topic).ErrorCode }
	if code := produce("a"); code != 0 {
		t.Fatalf("produce before the fault: %v", kerr.ErrorForCode(code))
	}
	fsys.Inject(&memfs.Fault{Kind: memfs.SyncError, At: 0, Match: memfs.HasSuffix(".log")})
	if code := produce("a"); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce with a failing fsync: %v", kerr.ErrorForCode(code))
	}
	for _, topic := range []string{"a", "b"} {
		if code := produce(topic); code != kerr.KafkaStorageError.Code {
			t.Errorf("produce to %s after the fault: %v", topic, kerr.ErrorForCode(code))
		}

		f := kmsg.NewPtrFetchRequest()
		f.Version = 12
		f.MaxWaitMillis = 0
		f.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		fp.CurrentLeaderEpoch = -1
		fp.LogStartOffset = -1
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		fr := w.roundTrip(f).(*kmsg.FetchResponse)
		if code := fr.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
			t.Errorf("fetch from %s after the fault: %v", topic, kerr.ErrorForCode(code))
		}

		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version = 7
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lp.CurrentLeaderEpoch = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		lr := w.roundTrip(lo).(*kmsg.ListOffsetsResponse)
		if code := lr.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
			t.Errorf("list offsets of %s after the fault: %v", topic, kerr.ErrorForCode(code))
		}
	}
	d := kmsg.NewPtrDescribeLogDirsRequest()
	d.Version = 4
	dr := w.roundTrip(d).(*kmsg.DescribeLogDirsResponse)
	if len(dr.Dirs) != 1 || dr.Dirs[0].ErrorCode != kerr.KafkaStorageError.Code || len(dr.Dirs[0].Topics) != 0 {
		t.Errorf("DescribeLogDirs after the fault: %+v", dr.Dirs)
	}
}

// TestStorageErrorMessages: a storage failure reaches the client as
// KAFKA_STORAGE_ERROR with Kafka's message, which is none (Kafka's
// ReplicaManager answers a KafkaStorageException with
// LogAppendResult.errorMessage null, so the client shows the code's
// default text), never the OS error; the detail is logged at Warn with
// the request's fields.
func TestStorageErrorMessages(t *testing.T) {
	var logs syncbuf.Buffer
	fsys, w, produce := offlineServer(t, zerolog.New(&logs))
	if p := produce("a"); p.ErrorCode != 0 {
		t.Fatalf("produce before the fault: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	fsys.Inject(&memfs.Fault{Kind: memfs.SyncError, At: 0, Match: memfs.HasSuffix(".log")})
	for _, topic := range []string{"a", "b"} {
		p := produce(topic)
		if p.ErrorCode != kerr.KafkaStorageError.Code || p.ErrorMessage != nil {
			t.Errorf("produce to %s: code %v, message %v", topic, kerr.ErrorForCode(p.ErrorCode), strOrNil(p.ErrorMessage))
		}
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "c", 1, 1
	ct.Topics = append(ct.Topics, ctt)
	cr := w.roundTrip(ct).(*kmsg.CreateTopicsResponse)
	if c := cr.Topics[0]; c.ErrorCode != kerr.KafkaStorageError.Code || c.ErrorMessage != nil {
		t.Errorf("create topic on an offline dir: code %v, message %v", kerr.ErrorForCode(c.ErrorCode), strOrNil(c.ErrorMessage))
	}
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"level":"warn"`) && strings.Contains(line, `"api_key":0`) &&
			strings.Contains(line, `"topic":"a"`) && strings.Contains(line, `"partition":0`) &&
			strings.Contains(line, `"correlation_id"`) && strings.Contains(line, `"client_id"`) &&
			strings.Contains(line, `"remote"`) && strings.Contains(line, "input/output error") {
			found = true
		}
	}
	if !found {
		t.Errorf("no Warn with the request's fields and the OS error; log:\n%s", logs.String())
	}
}

func strOrNil(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
