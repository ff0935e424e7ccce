package kcompatd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// newTestBroker starts a broker on 127.0.0.1:0 over a fresh data dir
// (or dir, when given) and closes it at the end of the test.
func newTestBroker(t testing.TB, dir string, props map[string]string) *Broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	all := map[string]string{"log.dirs": dir, "listeners": "PLAINTEXT://127.0.0.1:0"}
	for k, v := range props {
		all[k] = v
	}
	cfg, _, err := ParseConfig(all)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func newAdmin(t *testing.T, b *Broker) (*kgo.Client, *kadm.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, kadm.NewClient(cl)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The embedding API end to end: New on port 0, Metadata advertises the
// bound address, a produced record is there after Close and New over the
// same data dir, and Close is idempotent.
func TestBrokerLifecycle(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	b := newTestBroker(t, dir, map[string]string{"node.id": "7", "broker.rack": "r1"})

	if b.AdvertisedAddr() != b.Addr().String() {
		t.Errorf("advertised %s, listening on %s", b.AdvertisedAddr(), b.Addr())
	}
	cl, adm := newAdmin(t, b)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(meta.Brokers) != 1 {
		t.Fatalf("brokers %v, want one", meta.Brokers)
	}
	got := meta.Brokers[0]
	if got.Rack == nil || *got.Rack != "r1" {
		t.Errorf("rack %v, want r1", got.Rack)
	}
	if got.NodeID != 7 || net.JoinHostPort(got.Host, strconv.Itoa(int(got.Port))) != b.AdvertisedAddr() {
		t.Errorf("broker %+v, want node 7 at %s", got, b.AdvertisedAddr())
	}

	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("Produce: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	if o, ok := ends.Lookup("orders", 0); !ok || o.Err != nil || o.Offset != 1 {
		t.Errorf("end offset of orders-0: %+v, want 1", o)
	}
	cl.Close()

	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case <-b.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if err := b.Err(); err != nil {
		t.Errorf("Err after a clean Close: %v", err)
	}

	// The lock is released and the data is back.
	b2 := newTestBroker(t, dir, map[string]string{"node.id": "7"})
	_, adm2 := newAdmin(t, b2)
	ends, err = adm2.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	if o, ok := ends.Lookup("orders", 0); !ok || o.Err != nil || o.Offset != 1 {
		t.Errorf("end offset of orders-0 after restart: %+v, want 1", o)
	}
}

// A listener handed in through Config is served and closed by Close.
func TestBrokerOpenListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.LogDirs = t.TempDir()
	cfg.Listener = ln
	b, err := New(cfg, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	if b.Addr().String() != ln.Addr().String() {
		t.Errorf("Addr %s, want %s", b.Addr(), ln.Addr())
	}
	_, adm := newAdmin(t, b)
	if _, err := adm.BrokerMetadata(testContext(t)); err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("listener still open after Close")
	}
}

// kcompatd.kafka.version caps what ApiVersions advertises.
func TestBrokerKafkaVersionCap(t *testing.T) {
	b := newTestBroker(t, "", map[string]string{"kcompatd.kafka.version": "2.8"})
	_, adm := newAdmin(t, b)
	vs, err := adm.ApiVersions(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	want := kversion.V2_8_0()
	for _, bv := range vs {
		if bv.Err != nil {
			t.Fatal(bv.Err)
		}
		for _, k := range bv.Raw().ApiKeys {
			max, ok := want.LookupMaxKeyVersion(k.ApiKey)
			if !ok {
				t.Errorf("key %d advertised, unknown to Kafka 2.8", k.ApiKey)
			} else if k.MaxVersion > max {
				t.Errorf("key %d advertised up to v%d, Kafka 2.8 stops at v%d", k.ApiKey, k.MaxVersion, max)
			}
		}
	}
}

// kcompatd.kafka.version 4.2 and 4.3: each release's versions (DescribeLogDirs
// v5 is new in 4.3), Kafka 4's minimums, and the finalized features.
func TestBrokerKafkaVersion4x(t *testing.T) {
	for _, c := range []struct {
		release         string
		describeLogDirs int16
	}{{"4.2", 4}, {"4.3", 5}} {
		t.Run(c.release, func(t *testing.T) {
			b := newTestBroker(t, "", map[string]string{"kcompatd.kafka.version": c.release})
			_, adm := newAdmin(t, b)
			vs, err := adm.ApiVersions(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, bv := range vs {
				if bv.Err != nil {
					t.Fatal(bv.Err)
				}
				raw := bv.Raw()
				got := map[int16][2]int16{}
				for _, k := range raw.ApiKeys {
					got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
				}
				if got[2] != [2]int16{1, 11} || got[35] != [2]int16{1, c.describeLogDirs} || got[11][0] != 0 {
					t.Errorf("ListOffsets %v, DescribeLogDirs %v, JoinGroup %v", got[2], got[35], got[11])
				}
				fin := map[string]int16{}
				for _, f := range raw.FinalizedFeatures {
					fin[f.Name] = f.MaxVersionLevel
				}
				if fin["transaction.version"] != 2 || fin["group.version"] != 1 {
					t.Errorf("finalized %v", fin)
				}
			}
		})
	}
}

// A feature level set by UpdateFeatures survives a restart, as Kafka's do
// (its metadata log), and reaches the transaction coordinator there.
func TestBrokerFeatureLevelsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	b := newTestBroker(t, dir, nil)
	cl, _ := newAdmin(t, b)
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", 1, 2
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("UpdateFeatures: %v %+v", err, resp)
	}
	cl.Close()
	b.Close()

	b = newTestBroker(t, dir, nil)
	_, adm := newAdmin(t, b)
	vs, err := adm.ApiVersions(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, bv := range vs {
		fin := map[string]int16{}
		for _, f := range bv.Raw().FinalizedFeatures {
			fin[f.Name] = f.MaxVersionLevel
		}
		if fin["transaction.version"] != 1 || fin["group.version"] != 1 {
			t.Fatalf("after restart: finalized %v", fin)
		}
	}
	if l := b.txns.TransactionVersion(); l != 1 {
		t.Fatalf("transaction coordinator at level %d after restart", l)
	}
}

// A host name is served on each of its addresses, on one port, so that
// a client trying ::1 for localhost finds the broker as well as one trying
// 127.0.0.1; Metadata advertises the name.
func TestBrokerListensOnEveryAddressOfAHostName(t *testing.T) {
	b := newTestBroker(t, "", map[string]string{"listeners": "PLAINTEXT://localhost:0"})
	_, port, _ := net.SplitHostPort(b.Addr().String())
	if want := net.JoinHostPort("localhost", port); b.AdvertisedAddr() != want {
		t.Errorf("advertised %s, want %s", b.AdvertisedAddr(), want)
	}
	addrs, err := net.LookupHost("localhost")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.lns) > len(addrs) {
		t.Errorf("%d listeners for %d addresses", len(b.lns), len(addrs))
	}
	for _, ln := range b.lns {
		host, p, _ := net.SplitHostPort(ln.Addr().String())
		if p != port || !net.ParseIP(host).IsLoopback() {
			t.Errorf("listening on %s, want a loopback address on port %s", ln.Addr(), port)
		}
		if err := rawMetadata(ln.Addr().String()); err != nil {
			t.Errorf("Metadata over %s: %v", ln.Addr(), err)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogDirs = t.TempDir()
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	cfg.NumPartitions = 0
	if _, err := New(cfg, zerolog.Nop()); err == nil {
		t.Fatal("New accepted num.partitions=0")
	}
}

// A second broker on a locked data dir fails and leaves no listener open.
func TestNewLockedDir(t *testing.T) {
	b := newTestBroker(t, "", nil)
	cfg := DefaultConfig()
	cfg.LogDirs = b.dir
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	if b2, err := New(cfg, zerolog.New(zerolog.NewTestWriter(t))); err == nil {
		b2.Close()
		t.Fatal("two brokers opened one data dir")
	}
}

// BenchmarkStartup measures New to a served Metadata response on an empty
// data dir, the start-up budget (10 ms), and Close.
func BenchmarkStartup(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		b.StartTimer()
		cfg := DefaultConfig()
		cfg.LogDirs = dir
		cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
		br, err := New(cfg, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		if err := rawMetadata(br.Addr().String()); err != nil {
			b.Fatal(err)
		}
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// rawMetadata sends one Metadata v1 request (header v1) and reads the
// response, without a client's own start-up in the way.
func rawMetadata(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return rawMetadataOn(conn)
}

// rawMetadataOn is rawMetadata over an open connection.
func rawMetadataOn(conn net.Conn) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	frame := []byte{0, 0, 0, 0}
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Version))
	frame = binary.BigEndian.AppendUint32(frame, 1) // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 5)
	frame = append(frame, "bench"...)
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := conn.Write(frame); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return errors.New("bad response size")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 1
	return resp.ReadFrom(body[4:])
}

// The README's API table is what a running broker advertises: keep the
// two in step.
func TestREADMEListsAdvertisedAPIs(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\w+) \| (\d+) \| (\d+)-(\d+) \|`)
	documented := map[int16]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		key, _ := strconv.Atoi(m[2])
		documented[int16(key)] = m[1] + " " + m[3] + "-" + m[4]
	}

	b := newTestBroker(t, "", nil)
	_, adm := newAdmin(t, b)
	vs, err := adm.ApiVersions(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	advertised := map[int16]string{}
	for _, bv := range vs {
		if bv.Err != nil {
			t.Fatal(bv.Err)
		}
		for _, k := range bv.Raw().ApiKeys {
			advertised[k.ApiKey] = fmt.Sprintf("%s %d-%d", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
		}
	}
	if !maps.Equal(documented, advertised) {
		t.Errorf("README.md's API table says\n  %v\nthe broker advertises\n  %v", documented, advertised)
	}
}
