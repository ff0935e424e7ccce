package protocol

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
)

// testBroker is a server over a real store in a temp dir, listening on
// 127.0.0.1.
type testBroker struct {
	s     *Server
	store *partition.Store
	addr  string
	clock *clock.Manual
}

// startBroker starts a broker; mutate adjusts the config before start.
func startBroker(t testing.TB, mutate func(*Config)) *testBroker {
	t.Helper()
	return startBrokerPrep(t, mutate, nil)
}

// startBrokerPrep is startBroker with prep run on the server before it
// serves (to swap handlers in its own table).
func startBrokerPrep(t testing.TB, mutate func(*Config), prep func(*Server)) *testBroker {
	t.Helper()
	return startBrokerTuned(t, mutate, prep, nil)
}

// startBrokerTuned is startBrokerPrep with the group coordinator's config
// changed by tuneGroups (nil: coordinator.DefaultConfig).
func startBrokerTuned(t testing.TB, mutate func(*Config), prep func(*Server), tuneGroups func(*coordinator.Config)) *testBroker {
	t.Helper()
	lg := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	return startBrokerOn(t, openTestStore(t, clk, lg), clk, lg, mutate, prep, tuneGroups)
}

// startBrokerOn is startBrokerTuned over store, whose clock is clk.
func startBrokerOn(t testing.TB, store *partition.Store, clk *clock.Manual, lg zerolog.Logger, mutate func(*Config), prep func(*Server), tuneGroups func(*coordinator.Config)) *testBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID = 1
	cfg.AdvertisedHost = "127.0.0.1"
	cfg.AdvertisedPort = int32(ln.Addr().(*net.TCPAddr).Port)
	cfg.Logger = lg
	cfg.Clock = clk
	if mutate != nil {
		mutate(&cfg)
	}
	startCoordinators(t, &cfg, store, tuneGroups)
	s := mustNewServer(t, cfg, store)
	if prep != nil {
		prep(s)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testBroker{s: s, store: store, addr: ln.Addr().String(), clock: clk}
}

// openTestStore opens a store in a temp dir, closed in t.Cleanup: register
// it before the cleanups of what runs over it, so that it closes last.
func openTestStore(t testing.TB, clk clock.Clock, lg zerolog.Logger) *partition.Store {
	t.Helper()
	// The manual clocks stand in 2023 while clients stamp records with
	// the real time: Kafka 4's one-hour message.timestamp.after.max.ms
	// would refuse them, so these brokers leave it unbounded (as the
	// static log.message.timestamp.after.max.ms would).
	defs := partition.DefaultLogConfig()
	defs.MessageTimestampAfterMaxMs = math.MaxInt64
	store, err := partition.Open(partition.Config{Dir: t.TempDir(), NodeID: 1, Clock: clk, Logger: lg, Defaults: defs})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// startCoordinators sets cfg.Groups, unless already set, to a group
// coordinator (coordinator.DefaultConfig changed by tuneGroups, if not
// nil) and cfg.Txns to a transaction coordinator over it
// (coordinator.DefaultTxnConfig), both over store with cfg's clock
// (nil: the real one) and logger. t.Cleanup closes what it started, the
// transaction coordinator first (it completes the groups' transactional
// offsets): call it after opening the store and before starting the
// server, so that cleanups run server, coordinators, store.
func startCoordinators(t testing.TB, cfg *Config, store *partition.Store, tuneGroups func(*coordinator.Config)) {
	t.Helper()
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	if cfg.Groups == nil {
		gc := coordinator.DefaultConfig()
		gc.Clock, gc.Logger = clk, cfg.Logger
		if tuneGroups != nil {
			tuneGroups(&gc)
		}
		g, err := coordinator.New(gc, store)
		if err != nil {
			t.Fatalf("group coordinator: %v", err)
		}
		t.Cleanup(func() { g.Close() })
		cfg.Groups = g
	}
	tc := coordinator.DefaultTxnConfig()
	tc.Clock, tc.Logger = clk, cfg.Logger
	txns, err := coordinator.NewTxnCoordinator(tc, store, cfg.Groups)
	if err != nil {
		t.Fatalf("transaction coordinator: %v", err)
	}
	t.Cleanup(func() { txns.Close() })
	cfg.Txns = txns
}

// mustNewServer is NewServer failing the test on an error.
func mustNewServer(t testing.TB, cfg Config, store *partition.Store) *Server {
	t.Helper()
	s, err := NewServer(cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wire is a raw protocol client: it writes requests with kmsg and reads
// responses, with no version negotiation of its own.
type wire struct {
	t    testing.TB
	nc   net.Conn
	br   *bufio.Reader
	corr int32
}

func dialWire(t testing.TB, addr string) *wire {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// frame encodes req at its version with a v1/v2 request header.
func encodeRequest(req kmsg.Request, corr int32, clientID *string) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func (w *wire) send(req kmsg.Request) int32 {
	w.t.Helper()
	w.corr++
	id := "kcompatd-test"
	if _, err := w.nc.Write(encodeRequest(req, w.corr, &id)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
	return w.corr
}

// recv reads the response to a request of key at version, checking the
// correlation id.
func (w *wire) recv(key, version int16, corr int32) (kmsg.Response, error) {
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var sz [4]byte
	if _, err := io.ReadFull(w.br, sz[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(w.br, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		w.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
		body = body[1:] // empty tag section
	}
	if err := resp.ReadFrom(body); err != nil {
		w.t.Fatalf("decode response key %d v%d: %v", key, version, err)
	}
	return resp, nil
}

// roundTrip sends req and returns its response, failing the test if the
// connection closes.
func (w *wire) roundTrip(req kmsg.Request) kmsg.Response {
	w.t.Helper()
	corr := w.send(req)
	resp, err := w.recv(req.Key(), req.GetVersion(), corr)
	if err != nil {
		w.t.Fatalf("key %d v%d: %v", req.Key(), req.GetVersion(), err)
	}
	return resp
}

// expectClosed checks that the server closes the connection.
func (w *wire) expectClosed() {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	for {
		_, err := w.br.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			w.t.Fatal("connection still open")
		}
		return
	}
}

func (w *wire) writeRaw(b []byte) {
	w.t.Helper()
	if _, err := w.nc.Write(b); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

func apiVersionsReq(v int16) *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.SetVersion(v)
	r.ClientSoftwareName = "kcompatd-test"
	r.ClientSoftwareVersion = "1.0"
	return r
}

// alive checks that a fresh connection is served.
func alive(t testing.TB, addr string) {
	t.Helper()
	w := dialWire(t, addr)
	resp := w.roundTrip(apiVersionsReq(3)).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

func TestApiVersionsAdvertisesTable(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	resp := w.roundTrip(apiVersionsReq(4)).(*kmsg.ApiVersionsResponse)
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for k, v := range got {
		if want, ok := kafka431Versions[k]; ok && v != want {
			t.Errorf("key %d: advertised %v, Kafka 4.3.1 %v", k, v, want)
		}
	}
	for k := range got {
		if _, ok := apis[k]; !ok {
			t.Errorf("key %d advertised but not registered", k)
		}
	}
	// Kafka 4.3.1's transaction.version, group.version, share.version and
	// streams.version.
	if got := fmt.Sprint(resp.SupportedFeatures, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch); got !=
		"[{group.version 0 1 {map[]}} {share.version 0 1 {map[]}} {streams.version 0 1 {map[]}} {transaction.version 0 2 {map[]}}] [{group.version 1 1 {map[]}} {share.version 1 1 {map[]}} {streams.version 1 1 {map[]}} {transaction.version 2 2 {map[]}}] 0" {
		t.Errorf("features advertised: %s", got)
	}
}

// kafka431Versions is what Apache Kafka 4.3.1 advertises (kafka-broker-api-versions
// against one KRaft node): every API we serve must advertise the same range.
var kafka431Versions = map[int16][2]int16{
	0:  {0, 13}, // Produce
	1:  {4, 18}, // Fetch
	2:  {1, 11}, // ListOffsets
	3:  {0, 13}, // Metadata
	8:  {2, 10}, // OffsetCommit
	9:  {1, 10}, // OffsetFetch
	10: {0, 6},  // FindCoordinator
	11: {0, 9},  // JoinGroup
	12: {0, 4},  // Heartbeat
	13: {0, 5},  // LeaveGroup
	14: {0, 5},  // SyncGroup
	15: {0, 6},  // DescribeGroups
	16: {0, 5},  // ListGroups
	17: {0, 1},  // SaslHandshake
	18: {0, 4},  // ApiVersions
	19: {2, 7},  // CreateTopics
	20: {1, 6},  // DeleteTopics
	21: {0, 2},  // DeleteRecords
	22: {0, 5},  // InitProducerId
	23: {2, 4},  // OffsetForLeaderEpoch
	24: {0, 5},  // AddPartitionsToTxn
	25: {0, 4},  // AddOffsetsToTxn
	26: {0, 5},  // EndTxn
	27: {1, 2},  // WriteTxnMarkers
	28: {0, 5},  // TxnOffsetCommit
	29: {1, 3},  // DescribeAcls
	30: {1, 3},  // CreateAcls
	31: {1, 3},  // DeleteAcls
	32: {1, 4},  // DescribeConfigs
	33: {0, 2},  // AlterConfigs
	34: {1, 2},  // AlterReplicaLogDirs
	35: {1, 5},  // DescribeLogDirs
	36: {0, 2},  // SaslAuthenticate
	37: {0, 3},  // CreatePartitions
	38: {1, 3},  // CreateDelegationToken
	39: {1, 2},  // RenewDelegationToken
	40: {1, 2},  // ExpireDelegationToken
	41: {1, 3},  // DescribeDelegationToken
	42: {0, 2},  // DeleteGroups
	43: {0, 2},  // ElectLeaders
	44: {0, 1},  // IncrementalAlterConfigs
	45: {0, 1},  // AlterPartitionReassignments
	46: {0, 0},  // ListPartitionReassignments
	47: {0, 0},  // OffsetDelete
	48: {0, 1},  // DescribeClientQuotas
	49: {0, 1},  // AlterClientQuotas
	50: {0, 0},  // DescribeUserScramCredentials
	51: {0, 0},  // AlterUserScramCredentials
	55: {0, 2},  // DescribeQuorum
	57: {0, 2},  // UpdateFeatures
	60: {0, 2},  // DescribeCluster
	61: {0, 0},  // DescribeProducers
	64: {0, 0},  // UnregisterBroker
	65: {0, 0},  // DescribeTransactions
	66: {0, 2},  // ListTransactions
	68: {0, 1},  // ConsumerGroupHeartbeat
	69: {0, 1},  // ConsumerGroupDescribe
	74: {0, 1},  // ListConfigResources
	75: {0, 0},  // DescribeTopicPartitions
	76: {1, 1},  // ShareGroupHeartbeat
	77: {1, 1},  // ShareGroupDescribe
	78: {1, 2},  // ShareFetch
	79: {1, 2},  // ShareAcknowledge
	80: {0, 1},  // AddRaftVoter
	81: {0, 0},  // RemoveRaftVoter
	83: {0, 0},  // InitializeShareGroupState
	84: {0, 0},  // ReadShareGroupState
	85: {0, 1},  // WriteShareGroupState
	86: {0, 0},  // DeleteShareGroupState
	87: {0, 1},  // ReadShareGroupStateSummary
	88: {0, 0},  // StreamsGroupHeartbeat
	89: {0, 0},  // StreamsGroupDescribe
	90: {0, 1},  // DescribeShareGroupOffsets
	91: {0, 0},  // AlterShareGroupOffsets
	92: {0, 0},  // DeleteShareGroupOffsets
}

func TestApiVersionsUnsupportedVersion(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	req := apiVersionsReq(4)
	req.SetVersion(9) // above ours; encoded as v4's flexible layout, which we must not parse
	w.corr++
	id := "x"
	frame := encodeRequest(req, w.corr, &id)
	binary.BigEndian.PutUint16(frame[6:], 9)
	w.writeRaw(frame)
	r, err := w.recv(kmsg.ApiVersions.Int16(), 0, w.corr)
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error %d, want UNSUPPORTED_VERSION", resp.ErrorCode)
	}
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != kmsg.ApiVersions.Int16() || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("api keys %+v", resp.ApiKeys)
	}
	// The connection stays usable.
	w.roundTrip(apiVersionsReq(3))
}

func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	req := apiVersionsReq(3)
	req.ClientSoftwareName = "bad name!"
	resp := w.roundTrip(req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 {
		t.Fatalf("got error %d with %d keys, want INVALID_REQUEST and none", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// TestApiVersionsHeaderNoTagByte checks the raw bytes: a v3 ApiVersions
// response starts with the correlation id and then the error code, with no
// header tag byte between them.
func TestApiVersionsHeaderNoTagByte(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	corr := w.send(apiVersionsReq(3))
	var hdr [8]byte
	if _, err := io.ReadFull(w.br, hdr[:]); err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		t.Fatalf("correlation %d", got)
	}
	var ec [2]byte
	io.ReadFull(w.br, ec[:])
	if ec != [2]byte{0, 0} {
		t.Fatalf("bytes after correlation id %x, want error code 0 (no tag byte)", ec)
	}
}

func TestVersionsCap(t *testing.T) {
	vs := kversion.FromString("2.0")
	b := startBroker(t, func(c *Config) { c.Versions = vs })
	w := dialWire(t, b.addr)
	resp := w.roundTrip(apiVersionsReq(2)).(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		max, ok := vs.LookupMaxKeyVersion(k.ApiKey)
		if !ok || k.MaxVersion > max {
			t.Errorf("key %d max %d above 2.0's %d", k.ApiKey, k.MaxVersion, max)
		}
	}
	// 2.0 has Metadata v6 at most: v7 is refused by closing.
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(6)
	w.roundTrip(m)
	m.SetVersion(7)
	w.send(m)
	w.expectClosed()

	// ApiVersions above 2.0's v2 gets the v0 fallback naming v0-v2.
	w = dialWire(t, b.addr)
	corr := w.send(apiVersionsReq(3))
	r, _ := w.recv(kmsg.ApiVersions.Int16(), 0, corr)
	if av := r.(*kmsg.ApiVersionsResponse); av.ErrorCode != kerr.UnsupportedVersion.Code || av.ApiKeys[0].MaxVersion != 2 {
		t.Fatalf("fallback %+v", av)
	}
}

// TestVersionsCapReleases: a capped release reproduces its minimum
// versions (KIP-896 from 4.0, JoinGroup v0-1 back in 4.1) and its
// feature table (none before 3.3, transaction.version and group.version
// from 4.0), with kcompatd's own ranges in the newest.
func TestVersionsCapReleases(t *testing.T) {
	for _, c := range []struct {
		release  string
		mins     map[int16]int16 // key -> advertised min
		maxes    map[int16]int16
		features string
	}{
		{"3.9", map[int16]int16{2: 0, 8: 0, 11: 0, 19: 0, 35: 0}, map[int16]int16{2: 9, 26: 4, 0: 11}, "[] [] 0"},
		{"4.0", map[int16]int16{2: 1, 8: 2, 9: 1, 11: 2, 19: 2, 20: 1, 23: 2, 32: 1, 35: 1}, map[int16]int16{2: 10, 26: 5, 0: 12, 35: 4},
			"[{group.version 0 1 {map[]}} {transaction.version 0 2 {map[]}}] [{group.version 1 1 {map[]}} {transaction.version 2 2 {map[]}}] 0"},
		{"4.2", map[int16]int16{2: 1, 11: 0}, map[int16]int16{2: 11, 35: 4},
			"[{group.version 0 1 {map[]}} {share.version 0 1 {map[]}} {streams.version 0 1 {map[]}} {transaction.version 0 2 {map[]}}] [{group.version 1 1 {map[]}} {share.version 1 1 {map[]}} {streams.version 1 1 {map[]}} {transaction.version 2 2 {map[]}}] 0"},
		{"4.3", map[int16]int16{2: 1, 11: 0}, map[int16]int16{2: 11, 35: 5},
			"[{group.version 0 1 {map[]}} {share.version 0 1 {map[]}} {streams.version 0 1 {map[]}} {transaction.version 0 2 {map[]}}] [{group.version 1 1 {map[]}} {share.version 1 1 {map[]}} {streams.version 1 1 {map[]}} {transaction.version 2 2 {map[]}}] 0"},
	} {
		t.Run(c.release, func(t *testing.T) {
			vs := kversion.FromString(c.release)
			if vs == nil {
				t.Fatalf("kversion does not know %s", c.release)
			}
			b := startBroker(t, func(cfg *Config) { cfg.Versions = vs })
			w := dialWire(t, b.addr)
			resp := w.roundTrip(apiVersionsReq(3)).(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode == kerr.UnsupportedVersion.Code {
				resp = w.roundTrip(apiVersionsReq(2)).(*kmsg.ApiVersionsResponse)
			}
			got := map[int16][2]int16{}
			for _, k := range resp.ApiKeys {
				got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
			}
			for k, min := range c.mins {
				if got[k][0] != min {
					t.Errorf("key %d min %d, want %d", k, got[k][0], min)
				}
			}
			for k, max := range c.maxes {
				if got[k][1] != max {
					t.Errorf("key %d max %d, want %d", k, got[k][1], max)
				}
			}
			if v := w.roundTrip(apiVersionsReq(4)); v != nil {
				if r := v.(*kmsg.ApiVersionsResponse); r.ErrorCode == 0 {
					if f := fmt.Sprint(r.SupportedFeatures, r.FinalizedFeatures, r.FinalizedFeaturesEpoch); f != c.features {
						t.Errorf("features %s, want %s", f, c.features)
					}
				}
			}
			want := int16(2)
			if c.release == "3.9" {
				want = 0
			}
			if l := b.s.txns.TransactionVersion(); l != want {
				t.Errorf("coordinator at transaction.version %d, want %d", l, want)
			}
		})
	}
}

// TestBadFrames sends malformed input; each closes only its own connection.
func TestBadFrames(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.MaxRequestBytes = 1 << 20 })
	frameOf := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	hdr := func(key, ver int16) []byte {
		h := binary.BigEndian.AppendUint16(nil, uint16(key))
		h = binary.BigEndian.AppendUint16(h, uint16(ver))
		h = binary.BigEndian.AppendUint32(h, 7)
		return binary.BigEndian.AppendUint16(h, 0xffff)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mdBody := md.AppendTo(nil)
	cases := []struct {
		name string
		raw  []byte
	}{
		{"negative size", []byte{0xff, 0xff, 0xff, 0xfe}},
		{"huge size", binary.BigEndian.AppendUint32(nil, 1<<20+1)},
		{"short header", frameOf([]byte{0, 3, 0})},
		{"bad client id length", frameOf(append(hdr(3, 1)[:8], 0x7f, 0))},
		{"unknown api key", frameOf(hdr(9999, 0))},
		{"key not served", frameOf(hdr(11, 0))},
		{"version too high", frameOf(hdr(3, 14))},
		{"produce v2 (advertised, not served)", frameOf(append(hdr(0, 2), 0, 1, 0, 0, 0, 0, 0, 0, 0, 0))},
		{"fetch v3", frameOf(hdr(1, 3))},
		{"truncated body", frameOf(append(append(hdr(3, 12), 0), mdBody[:1]...))},
		{"bad header tags", frameOf(append(hdr(3, 12), 0x05))},
		{"array longer than body", frameOf(append(hdr(19, 4), 0, 0, 0, 5))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := dialWire(t, b.addr)
			w.writeRaw(tc.raw)
			w.expectClosed()
			alive(t, b.addr)
		})
	}
}

func TestTruncatedFrameCheap(t *testing.T) {
	// A client announcing 100 MiB and sending 10 bytes must not cost
	// 100 MiB.
	pr, pw := io.Pipe()
	go func() {
		pw.Write(binary.BigEndian.AppendUint32(nil, 100<<20))
		pw.Write(make([]byte, 10))
		pw.Close()
	}()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(pr, 100<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want unexpected EOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > readChunk+64<<10 {
		t.Fatalf("allocated %d bytes for a 10-byte frame", got)
	}
}

func TestReadFrameGrows(t *testing.T) {
	body := make([]byte, 3*readChunk+12345)
	for i := range body {
		body[i] = byte(i)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
		for p := body; len(p) > 0; {
			n := min(len(p), 777)
			pw.Write(p[:n])
			p = p[n:]
		}
		pw.Close()
	}()
	got, err := readFrame(pr, 4*readChunk)
	if err != nil || string(got) != string(body) {
		t.Fatalf("err %v, equal %v", err, string(got) == string(body))
	}
}

func TestHandlerPanicClosesOnlyItsConnection(t *testing.T) {
	b := startBrokerPrep(t, nil, func(s *Server) {
		// A server-local table entry, so the global registry is untouched.
		a := s.table[kmsg.Metadata.Int16()]
		a.handle = func(*Server, *Request) (kmsg.Response, error) { panic("boom") }
		s.table[kmsg.Metadata.Int16()] = a
	})
	other := dialWire(t, b.addr)
	other.roundTrip(apiVersionsReq(3))
	w := dialWire(t, b.addr)
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(12)
	w.send(m)
	w.expectClosed()
	other.roundTrip(apiVersionsReq(3))
	alive(t, b.addr)
}

func TestPipelinedResponsesInOrder(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	var corrs []int32
	for i := range 20 {
		if i%2 == 0 {
			corrs = append(corrs, w.send(apiVersionsReq(3)))
		} else {
			m := kmsg.NewPtrMetadataRequest()
			m.SetVersion(12)
			corrs = append(corrs, w.send(m))
		}
	}
	for i, c := range corrs {
		key, ver := kmsg.ApiVersions.Int16(), int16(3)
		if i%2 == 1 {
			key, ver = 3, 12
		}
		if _, err := w.recv(key, ver, c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCloseWaitsAndServeReturns(t *testing.T) {
	lg := zerolog.New(zerolog.NewTestWriter(t))
	cfg := Config{Logger: lg}
	store := openTestStore(t, clock.Real{}, lg)
	startCoordinators(t, &cfg, store, nil)
	s := mustNewServer(t, cfg, store)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	var conns []net.Conn
	for range 3 {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		w := &wire{t: t, nc: nc, br: bufio.NewReader(nc)}
		w.roundTrip(apiVersionsReq(3))
	}
	s.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d connections left after Close", n)
	}
	for _, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Fatal("connection still open after Close")
		}
		nc.Close()
	}
	// Serve after Close returns at once.
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := s.Serve(ln2); err != nil {
		t.Fatal(err)
	}
}

// flakyListener fails Accept with a temporary error until released.
type flakyListener struct {
	net.Listener
	calls   atomic.Int32
	fail    atomic.Bool
	entered chan struct{}
	once    sync.Once
}

type tempErr struct{}

func (tempErr) Error() string   { return "too many open files" }
func (tempErr) Temporary() bool { return true }
func (tempErr) Timeout() bool   { return false }

func (l *flakyListener) Accept() (net.Conn, error) {
	n := l.calls.Add(1)
	if l.fail.Load() {
		if n == 2 {
			l.once.Do(func() { close(l.entered) })
		}
		return nil, tempErr{}
	}
	return l.Listener.Accept()
}

func TestAcceptBacksOffOnTemporaryErrors(t *testing.T) {
	// The store and the coordinators run on the real clock, so that the
	// server's backoff timer is the only one on clk.
	cfg := Config{Logger: zerolog.New(zerolog.NewTestWriter(t))}
	store := openTestStore(t, clock.Real{}, cfg.Logger)
	startCoordinators(t, &cfg, store, nil)
	clk := clock.NewManual(time.Unix(0, 0))
	cfg.Clock = clk
	s := mustNewServer(t, cfg, store)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &flakyListener{Listener: inner, entered: make(chan struct{})}
	ln.fail.Store(true)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	// Without clock advances, Accept is retried only after the backoff:
	// the server arms a timer after the first failure and waits on it.
	clk.WaitForTimers(1)
	select {
	case <-ln.entered:
		t.Fatal("accept retried without waiting")
	default:
	}
	clk.Advance(time.Second) // past any backoff step
	<-ln.entered
	ln.fail.Store(false)
	s.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestPeerCloseCancelsHandler checks that a long-polling Fetch blocked on
// r.Ctx is released when the client goes away (conn.pollCtx).
func TestPeerCloseCancelsHandler(t *testing.T) {
	entered := make(chan struct{})
	released := make(chan struct{})
	b := startBrokerPrep(t, nil, func(s *Server) {
		a := s.table[kmsg.Fetch.Int16()]
		a.handle = func(_ *Server, r *Request) (kmsg.Response, error) {
			close(entered)
			<-r.Ctx.Done()
			close(released)
			return nil, r.Ctx.Err()
		}
		s.table[kmsg.Fetch.Int16()] = a
	})
	w := dialWire(t, b.addr)
	w.send(longPollFetch("t", 0))
	<-entered
	w.nc.Close()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("handler not cancelled after the peer closed")
	}
	alive(t, b.addr)
}

// TestApiVersionsFallbackBytes pins the exact bytes of Kafka's answer to a
// too-new ApiVersions: header v0, then a v0 body with UNSUPPORTED_VERSION
// (35) and the one entry [18, 0, 4].
func TestApiVersionsFallbackBytes(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	frame := []byte{0, 0, 0, 0, 0, 18, 0, 77, 0, 0, 0x12, 0x34, 0xff, 0xff, 0x00}
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	w.writeRaw(frame)
	want := []byte{
		0, 0, 0, 16, // size
		0, 0, 0x12, 0x34, // correlation id
		0, 35, // UNSUPPORTED_VERSION
		0, 0, 0, 1, // one api key
		0, 18, 0, 0, 0, 4, // ApiVersions 0-4
	}
	got := make([]byte, len(want))
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(w.br, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
}

// TestRequestHeaderTags sends a v2 request header carrying tagged fields,
// which must be skipped before the body.
func TestRequestHeaderTags(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	frame := []byte{0, 0, 0, 0, 0, 3, 0, 12, 0, 0, 0, 9, 0, 1, 'c'}
	frame = append(frame, 2, 0, 3, 'a', 'b', 'c', 5, 1, 'x') // two tags: 0 (3 bytes), 5 (1 byte)
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	w.writeRaw(frame)
	if _, err := w.recv(kmsg.Metadata.Int16(), 12, 9); err != nil {
		t.Fatal(err)
	}
}

func TestSkipTags(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		n    int
		fail bool
	}{
		{[]byte{0}, 1, false},
		{[]byte{1, 7, 2, 'a', 'b', 0xee}, 5, false},
		{[]byte{}, 0, true},
		{[]byte{1, 7, 3, 'a'}, 0, true},                       // tag longer than the bytes
		{[]byte{200, 1}, 0, true},                             // more tags than bytes
		{[]byte{1, 7, 0xff, 0xff, 0xff, 0xff, 0x0f}, 0, true}, // huge size
	} {
		n, err := skipTags(tc.in)
		if (err != nil) != tc.fail || (!tc.fail && n != tc.n) {
			t.Errorf("skipTags(% x) = %d, %v", tc.in, n, err)
		}
	}
}
