package recordbatch

// The golden vectors in testdata/ are record batches captured from a real
// client, franz-go's kgo, talking to a minimal fake broker below. They are
// checked in; regenerate them (kgo's output may change between versions,
// and then the assertions in golden_test.go must be rechecked by hand):
//
//	KCOMPATD_UPDATE_GOLDEN=1 go test -count=1 -run 'TestGenerateGolden$' ./recordbatch/
//
// The java_*.bin vectors come from Apache Kafka's client library; see
// testdata/java/GenGolden.java and TestGenerateGoldenJava (needs a JDK and
// kafka-clients with its codec jars, found in ~/.m2 or given in
// KCOMPATD_JAVA_CLASSPATH):
//
//	mvn dependency:get -Dartifact=org.apache.kafka:kafka-clients:4.3.1
//	KCOMPATD_UPDATE_GOLDEN_JAVA=1 go test -count=1 -run TestGenerateGoldenJava ./recordbatch/

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	goldenTopic     = "golden"
	goldenPID       = 4242
	goldenEpoch     = 7
	goldenBaseMilli = 1700000000000
)

// goldenRecords is the record set of the per-codec vectors: headers (one
// with a null value), a null key, a tombstone, empty key and value, and a
// timestamp before the first (a negative delta). The first value is long
// and repetitive so that kgo keeps the compressed form.
func goldenRecords() []*kgo.Record {
	ts := func(d int64) time.Time { return time.UnixMilli(goldenBaseMilli + d) }
	return []*kgo.Record{
		{Key: []byte("k0"), Value: bytes.Repeat([]byte("v0"), 100), Timestamp: ts(0)},
		{Key: []byte("k1"), Value: []byte("hello"), Timestamp: ts(1),
			Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}},
		{Key: nil, Value: []byte("no key"), Timestamp: ts(2)},
		{Key: []byte("k3"), Value: nil, Timestamp: ts(3)},
		{Key: []byte{}, Value: []byte{}, Timestamp: ts(-5)},
	}
}

// largeValue is a compressible, deterministic 1 KiB value.
func largeValue(i int) []byte {
	v := make([]byte, 1024)
	for j := range v {
		v[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[(i+j*7)%36]
	}
	return v
}

// goldenLargeRecords is 100 records of 1 KiB, enough for several xerial
// chunks (32 KiB each) and lz4 blocks.
func goldenLargeRecords() []*kgo.Record {
	recs := make([]*kgo.Record, 100)
	for i := range recs {
		recs[i] = &kgo.Record{Key: fmt.Appendf(nil, "key-%03d", i), Value: largeValue(i),
			Timestamp: time.UnixMilli(goldenBaseMilli + int64(i))}
	}
	return recs
}

func TestGenerateGolden(t *testing.T) {
	if os.Getenv("KCOMPATD_UPDATE_GOLDEN") != "1" {
		t.Skip("set KCOMPATD_UPDATE_GOLDEN=1 to regenerate testdata/*.bin")
	}
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	for _, c := range codecs {
		batches := captureBatches(t, false, [][]*kgo.Record{goldenRecords()},
			kgo.ProducerBatchCompression(c.codec), kgo.DisableIdempotentWrite())
		writeGolden(t, "kgo_"+c.name+".bin", batches[0])
		batches = captureBatches(t, false, [][]*kgo.Record{goldenLargeRecords()},
			kgo.ProducerBatchCompression(c.codec), kgo.DisableIdempotentWrite(),
			kgo.ProducerBatchMaxBytes(4<<20))
		writeGolden(t, "kgo_"+c.name+"_large.bin", batches[0])
	}
	// Idempotent: the second flush has base sequence 5.
	batches := captureBatches(t, false, [][]*kgo.Record{goldenRecords(), goldenRecords()},
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	writeGolden(t, "kgo_idempotent.bin", batches[1])
	// Transactional, committed.
	batches = captureBatches(t, true, [][]*kgo.Record{goldenRecords()},
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.TransactionalID("golden-txn"))
	writeGolden(t, "kgo_transactional.bin", batches[0])
}

func TestGenerateGoldenJava(t *testing.T) {
	if os.Getenv("KCOMPATD_UPDATE_GOLDEN_JAVA") != "1" {
		t.Skip("set KCOMPATD_UPDATE_GOLDEN_JAVA=1 to regenerate testdata/java_*.bin")
	}
	cp := os.Getenv("KCOMPATD_JAVA_CLASSPATH")
	if cp == "" {
		home, _ := os.UserHomeDir()
		repo := filepath.Join(home, ".m2", "repository")
		var jars []string
		for _, pattern := range []string{
			"org/apache/kafka/kafka-clients/*/kafka-clients-*.jar",
			"org/xerial/snappy/snappy-java/*/snappy-java-*.jar",
			"at/yawk/lz4/lz4-java/*/lz4-java-*.jar",
			"org/lz4/lz4-java/*/lz4-java-*.jar",
			"com/github/luben/zstd-jni/*/zstd-jni-*.jar",
			"org/slf4j/slf4j-api/*/slf4j-api-*.jar",
		} {
			m, _ := filepath.Glob(filepath.Join(repo, pattern))
			var keep []string
			for _, j := range m {
				if !strings.HasSuffix(j, "-sources.jar") && !strings.HasSuffix(j, "-javadoc.jar") {
					keep = append(keep, j)
				}
			}
			if len(keep) > 0 {
				jars = append(jars, keep[len(keep)-1]) // the last version in glob order
			}
		}
		cp = strings.Join(jars, string(os.PathListSeparator))
	}
	t.Logf("classpath: %s", cp)
	classes := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	run("javac", "-cp", cp, "-d", classes, filepath.Join("testdata", "java", "GenGolden.java"))
	run("java", "-cp", classes+string(os.PathListSeparator)+cp, "GenGolden", "testdata")
}

func writeGolden(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", name, len(b))
}

// captureBatches runs a kgo producer against a fake broker, flushing each
// group of records separately, and returns the batches it produced.
func captureBatches(t *testing.T, txn bool, groups [][]*kgo.Record, opts ...kgo.Opt) [][]byte {
	t.Helper()
	fb := startFakeBroker(t)
	opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelWarn, nil)), kgo.SeedBrokers(fb.addr()), kgo.DefaultProduceTopic(goldenTopic),
		kgo.ManualFlushing(), kgo.ProduceRequestTimeout(5*time.Second))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, g := range groups {
		if txn {
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for _, r := range g {
			wg.Add(1)
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if txn {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if len(fb.batches) != len(groups) {
		t.Fatalf("captured %d batches, want %d (one per flush)", len(fb.batches), len(groups))
	}
	return fb.batches
}

// fakeBroker answers just enough of the protocol for a kgo producer:
// ApiVersions, Metadata, InitProducerID, FindCoordinator,
// AddPartitionsToTxn, EndTxn and Produce. It records produced batches.
type fakeBroker struct {
	ln      net.Listener
	mu      sync.Mutex
	batches [][]byte
	offset  int64
}

func startFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBroker{ln: ln}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				fb.serve(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return fb
}

func (fb *fakeBroker) addr() string { return fb.ln.Addr().String() }

func (fb *fakeBroker) port() int32 { return int32(fb.ln.Addr().(*net.TCPAddr).Port) }

var fakeVersions = map[int16][2]int16{
	0:  {3, 9}, // Produce
	3:  {1, 9}, // Metadata
	10: {0, 3}, // FindCoordinator
	18: {0, 5}, // ApiVersions
	22: {0, 4}, // InitProducerID
	24: {0, 3}, // AddPartitionsToTxn
	26: {0, 3}, // EndTxn
}

func (fb *fakeBroker) serve(c net.Conn) {
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(c, sizeBuf[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(sizeBuf[:])
		if n > 64<<20 {
			return
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		resp, err := fb.handle(frame)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake broker:", err)
			return
		}
		if resp == nil {
			continue // acks=0
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

func (fb *fakeBroker) handle(frame []byte) ([]byte, error) {
	if len(frame) < 10 {
		return nil, errors.New("short header")
	}
	key := int16(binary.BigEndian.Uint16(frame))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := binary.BigEndian.Uint32(frame[4:])
	clientIDLen := int(int16(binary.BigEndian.Uint16(frame[8:])))
	body := frame[10:]
	if clientIDLen > 0 {
		if clientIDLen > len(body) {
			return nil, errors.New("bad client id")
		}
		body = body[clientIDLen:]
	}
	req := kmsg.RequestForKey(key)
	vr, ok := fakeVersions[key]
	if req == nil || !ok {
		return nil, fmt.Errorf("unsupported key %d", key)
	}
	if version < vr[0] || version > vr[1] {
		return nil, fmt.Errorf("key %d version %d unsupported", key, version)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		body = skipTags(body)
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, err
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		rr := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		for k, v := range fakeVersions {
			rr.ApiKeys = append(rr.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: v[0], MaxVersion: v[1]})
		}
		resp = rr
	case *kmsg.MetadataRequest:
		rr := r.ResponseKind().(*kmsg.MetadataResponse)
		rr.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: "127.0.0.1", Port: fb.port()}}
		rr.ControllerID = 0
		topic := goldenTopic
		rr.Topics = []kmsg.MetadataResponseTopic{{Topic: &topic, Partitions: []kmsg.MetadataResponseTopicPartition{
			{Partition: 0, Leader: 0, LeaderEpoch: 0, Replicas: []int32{0}, ISR: []int32{0}},
		}}}
		resp = rr
	case *kmsg.InitProducerIDRequest:
		rr := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		rr.ProducerID, rr.ProducerEpoch = goldenPID, goldenEpoch
		resp = rr
	case *kmsg.FindCoordinatorRequest:
		rr := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		rr.NodeID, rr.Host, rr.Port = 0, "127.0.0.1", fb.port()
		resp = rr
	case *kmsg.AddPartitionsToTxnRequest:
		rr := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, tp := range r.Topics {
			rt := kmsg.AddPartitionsToTxnResponseTopic{Topic: tp.Topic}
			for _, p := range tp.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p})
			}
			rr.Topics = append(rr.Topics, rt)
		}
		resp = rr
	case *kmsg.EndTxnRequest:
		resp = r.ResponseKind()
	case *kmsg.ProduceRequest:
		rr := r.ResponseKind().(*kmsg.ProduceResponse)
		fb.mu.Lock()
		for _, tp := range r.Topics {
			rt := kmsg.ProduceResponseTopic{Topic: tp.Topic}
			for _, p := range tp.Partitions {
				fb.batches = append(fb.batches, bytes.Clone(p.Records))
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.BaseOffset = p.Partition, fb.offset
				fb.offset += int64(Header(p.Records).LastOffsetDelta()) + 1
				rt.Partitions = append(rt.Partitions, rp)
			}
			rr.Topics = append(rr.Topics, rt)
		}
		fb.mu.Unlock()
		if r.Acks == 0 {
			return nil, nil
		}
		resp = rr
	default:
		return nil, fmt.Errorf("unhandled key %d", key)
	}
	out := binary.BigEndian.AppendUint32(nil, corr)
	if resp.IsFlexible() && key != 18 {
		out = append(out, 0)
	}
	return resp.AppendTo(out), nil
}

// skipTags skips a request header's tagged fields.
func skipTags(b []byte) []byte {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return b
	}
	b = b[k:]
	for i := uint64(0); i < n && len(b) > 0; i++ {
		_, k := binary.Uvarint(b) // tag
		if k <= 0 {
			return b
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return b
		}
		b = b[k+int(size):]
	}
	return b
}
