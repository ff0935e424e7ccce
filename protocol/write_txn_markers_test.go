package protocol

import (
	"fmt"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/coordinator"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() { versionChecks[kmsg.WriteTxnMarkers.Int16()] = checkWriteTxnMarkersVersion }

// markerReq is a WriteTxnMarkers request at v of one marker.
func markerReq(v int16, pid int64, epoch int16, commit bool, coordEpoch int32, tv int8, topic string, parts ...int32) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(v)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = pid, epoch, commit, coordEpoch, tv
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, parts
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	return req
}

// markerCodes flattens a response to "pid topic-partition=code" strings in
// response order.
func markerCodes(resp *kmsg.WriteTxnMarkersResponse) []string {
	var out []string
	for _, m := range resp.Markers {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				out = append(out, fmt.Sprintf("%d %s-%d=%d", m.ProducerID, t.Topic, p.Partition, p.ErrorCode))
			}
		}
	}
	return out
}

func checkWriteTxnMarkersVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	name := fmt.Sprintf("wtm-v%d", v)
	tp := b.ensureTopic(t, name, 1)
	log := tp.Partitions[0]
	if _, err := log.Append(producerBatch(t, b.nowMs(), 77, 2, 0, 3, true)); err != nil {
		t.Fatal(err)
	}
	resp := w.roundTrip(markerReq(v, 77, 2, false, 0, 0, name, 0)).(*kmsg.WriteTxnMarkersResponse)
	if got := fmt.Sprint(markerCodes(resp)); got != fmt.Sprintf("[77 %s-0=0]", name) {
		t.Fatalf("v%d: %s", v, got)
	}
	if o := log.Offsets(); o.LastStableOffset != 4 || o.HighWatermark != 4 {
		t.Errorf("offsets %+v, want LSO = HW = 4", o)
	}
	if ab := log.AbortedTransactions(0, 4); len(ab) != 1 || ab[0] != (partition.AbortedTxn{ProducerID: 77, FirstOffset: 0}) {
		t.Errorf("aborted %+v", ab)
	}
}

// TestWriteTxnMarkers walks the per-partition answers Kafka 4.3.1 gives
// (checked against it with the same requests), in order, on one broker.
func TestWriteTxnMarkers(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "t", 2, nil)
	for p := range 2 {
		if _, err := tp.Partitions[p].Append(producerBatch(t, b.nowMs(), 10, 5, 0, 3, true)); err != nil {
			t.Fatal(err)
		}
	}
	w := dialWire(t, b.addr)
	steps := []struct {
		name string
		req  *kmsg.WriteTxnMarkersRequest
		want string
	}{
		{"older epoch", markerReq(1, 10, 4, false, 0, 0, "t", 0), "[10 t-0=47]"},
		{"unknown partitions", markerReq(1, 10, 5, false, 0, 0, "t", 9, -1), "[10 t-9=3 10 t--1=3]"},
		{"unknown topic", markerReq(2, 10, 5, false, 0, 0, "nope", 0), "[10 nope-0=3]"},
		{"TV2 at the open transaction's epoch", markerReq(2, 10, 5, false, 0, 2, "t", 0), "[10 t-0=47]"},
		{"TV_UNKNOWN", markerReq(2, 10, 5, false, 0, -1, "t", 0), "[10 t-0=-1]"},
		{"abort", markerReq(1, 10, 5, false, 3, 0, "t", 0), "[10 t-0=0]"},
		{"older coordinator epoch", markerReq(1, 10, 5, false, 2, 0, "t", 0), "[10 t-0=52]"},
		{"TV2 retry once over", markerReq(2, 10, 5, false, 3, 2, "t", 0), "[10 t-0=0]"},
		{"TV2 commit with the bumped epoch", markerReq(2, 10, 6, true, 3, 2, "t", 1), "[10 t-1=0]"},
	}
	for _, s := range steps {
		resp := w.roundTrip(s.req).(*kmsg.WriteTxnMarkersResponse)
		if got := fmt.Sprint(markerCodes(resp)); got != s.want {
			t.Errorf("%s: %s, want %s", s.name, got, s.want)
		}
	}
	// p0: 3 records, the abort and its retry; p1: 3 records and the
	// commit. Both transactions are over.
	for p, want := range []int64{5, 4} {
		if o := tp.Partitions[p].Offsets(); o.LastStableOffset != want || o.HighWatermark != want {
			t.Errorf("p%d offsets %+v, want LSO = HW = %d", p, o, want)
		}
	}
	if ab := tp.Partitions[0].AbortedTransactions(0, 5); len(ab) != 1 || ab[0].FirstOffset != 0 {
		t.Errorf("p0 aborted %+v", ab)
	}
	if ab := tp.Partitions[1].AbortedTransactions(0, 4); len(ab) != 0 {
		t.Errorf("p1 aborted %+v", ab)
	}
	for _, pi := range tp.Partitions[0].Producers() {
		if pi.ProducerID == 10 && (pi.CoordinatorEpoch != 3 || pi.CurrentTxnStartOffset != -1 || pi.ProducerEpoch != 5) {
			t.Errorf("p0 producer %+v", pi)
		}
	}
}

// Markers of one producer id merge into one answer, each partition once;
// a partition named twice in a marker is written once (Kafka 4.3.1 never
// answers that request).
func TestWriteTxnMarkersResponseShape(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "s", 2, nil)
	w := dialWire(t, b.addr)

	empty := kmsg.NewPtrWriteTxnMarkersRequest()
	empty.SetVersion(1)
	if resp := w.roundTrip(empty).(*kmsg.WriteTxnMarkersResponse); len(resp.Markers) != 0 {
		t.Errorf("empty request: %+v", resp.Markers)
	}

	req := markerReq(1, 5, 0, false, 0, 0, "s", 0, 0)
	second := markerReq(1, 5, 0, true, 0, 0, "s", 1).Markers[0]
	second.Topics = append(second.Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: "nope", Partitions: []int32{0}})
	other := markerReq(1, 6, 0, true, 0, 0, "s", 0).Markers[0]
	req.Markers = append(req.Markers, second, other)
	resp := w.roundTrip(req).(*kmsg.WriteTxnMarkersResponse)
	if got, want := fmt.Sprint(markerCodes(resp)), "[5 s-0=0 5 s-1=0 5 nope-0=3 6 s-0=0]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if n := len(resp.Markers[0].Topics); n != 2 {
		t.Errorf("producer 5: %d topics, want 2", n)
	}
	// s-0: producer 5's abort, producer 6's commit; s-1: producer 5's commit.
	for p, want := range []int64{2, 1} {
		if o := tp.Partitions[p].Offsets(); o.LogEndOffset != want {
			t.Errorf("p%d end %d, want %d", p, o.LogEndOffset, want)
		}
	}
}

// clusterACL allows the wire client's principal op on the cluster.
func clusterACL(op int8) partition.ACL {
	return partition.ACL{ResourceType: authz.ResourceCluster, ResourceName: authz.ClusterName, PatternType: authz.PatternLiteral,
		Principal: AnonymousPrincipal, Host: "*", Operation: op, Permission: authz.PermissionAllow}
}

// WriteTxnMarkers needs ALTER or CLUSTER_ACTION on the cluster; refused,
// every partition is CLUSTER_AUTHORIZATION_FAILED and nothing is written.
func TestWriteTxnMarkersAuthorization(t *testing.T) {
	cases := []struct {
		name string
		acls []partition.ACL
		want int16
	}{
		{"no ACL", nil, kerr.ClusterAuthorizationFailed.Code},
		{"IDEMPOTENT_WRITE is not enough", []partition.ACL{clusterACL(authz.OpIdempotentWrite)}, kerr.ClusterAuthorizationFailed.Code},
		{"CLUSTER_ACTION", []partition.ACL{clusterACL(authz.OpClusterAction)}, 0},
		{"ALTER", []partition.ACL{clusterACL(authz.OpAlter)}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := startACLBroker(t, false, c.acls...)
			tp := b.createTopic(t, "a", 1, nil)
			w := dialWire(t, b.addr)
			req := markerReq(2, 3, 0, false, 0, 0, "a", 0)
			req.Markers[0].Topics = append(req.Markers[0].Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: "nope", Partitions: []int32{1}})
			resp := w.roundTrip(req).(*kmsg.WriteTxnMarkersResponse)
			unknown := c.want
			if c.want == 0 {
				unknown = kerr.UnknownTopicOrPartition.Code
			}
			if got, want := fmt.Sprint(markerCodes(resp)), fmt.Sprintf("[3 a-0=%d 3 nope-1=%d]", c.want, unknown); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
			wantEnd := int64(1)
			if c.want != 0 {
				wantEnd = 0
			}
			if end := tp.Partitions[0].Offsets().LogEndOffset; end != wantEnd {
				t.Errorf("log end %d, want %d", end, wantEnd)
			}
		})
	}
}

// Kafka 4 serves v0 no more; 3.9 advertises v0-1, and so does kcompatd
// capped at it, serving v0.
func TestWriteTxnMarkersV0UnderKafka39(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Versions = kversion.FromString("3.9") })
	tp := b.createTopic(t, "old", 1, nil)
	if _, err := tp.Partitions[0].Append(producerBatch(t, b.nowMs(), 4, 0, 0, 1, true)); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b.addr)
	av := w.roundTrip(apiVersionsReq(3)).(*kmsg.ApiVersionsResponse)
	for _, k := range av.ApiKeys {
		if k.ApiKey == kmsg.WriteTxnMarkers.Int16() && (k.MinVersion != 0 || k.MaxVersion != 1) {
			t.Errorf("advertised v%d-%d, want v0-1", k.MinVersion, k.MaxVersion)
		}
	}
	resp := w.roundTrip(markerReq(0, 4, 0, true, 0, 0, "old", 0)).(*kmsg.WriteTxnMarkersResponse)
	if got := fmt.Sprint(markerCodes(resp)); got != "[4 old-0=0]" {
		t.Errorf("v0: %s", got)
	}
	if o := tp.Partitions[0].Offsets(); o.LastStableOffset != 2 {
		t.Errorf("offsets %+v", o)
	}
}

// A marker of producer id or epoch -1 naming an existing data partition
// fails the whole request with UNKNOWN_SERVER_ERROR, as Kafka's marker
// builder throwing does; nothing is written (Kafka has written the
// markers before it). Epoch -2 is only an old epoch.
func TestWriteTxnMarkersUnbuildable(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "u", 2, nil)
	b.s.groups.EnsureOffsetsTopic()
	w := dialWire(t, b.addr)
	pair := func(pid int64, epoch int16, topic string) *kmsg.WriteTxnMarkersRequest {
		req := markerReq(1, 8, 0, true, 0, 0, "u", 1)
		req.Markers = append(req.Markers, markerReq(1, pid, epoch, false, 0, 0, topic, 0).Markers[0])
		return req
	}
	// Failed whole, only the last marker of a producer id is answered,
	// as Kafka 4.3.1's getErrorResponse does (its map by producer id).
	repeated := markerReq(1, 8, 0, true, 0, 0, "u", 0)
	for _, m := range []*kmsg.WriteTxnMarkersRequest{
		markerReq(1, 8, 0, true, 0, 0, "u", 1),
		markerReq(1, -1, -1, false, 0, 0, "u", 0),
		markerReq(1, -1, -1, false, 0, 0, "u", 1),
	} {
		repeated.Markers = append(repeated.Markers, m.Markers[0])
	}
	cases := []struct {
		name string
		req  *kmsg.WriteTxnMarkersRequest
		want string
		end1 int64 // u-1's log end offset after
	}{
		{"producer id -1", pair(-1, 0, "u"), "[8 u-1=-1 -1 u-0=-1]", 0},
		{"producer epoch -1", pair(9, -1, "u"), "[8 u-1=-1 9 u-0=-1]", 0},
		{"epoch -1 on an unknown topic", pair(9, -1, "nope"), "[8 u-1=0 9 nope-0=3]", 1},
		{"epoch -2", pair(9, -2, "u"), "[8 u-1=0 9 u-0=47]", 2},
		{"epoch -1 on __consumer_offsets", pair(9, -1, coordinator.OffsetsTopic), "[8 u-1=0 9 __consumer_offsets-0=-1]", 3},
		{"markers of one producer id", repeated, "[8 u-1=-1 -1 u-1=-1]", 3},
	}
	for _, c := range cases {
		resp := w.roundTrip(c.req).(*kmsg.WriteTxnMarkersResponse)
		if got := fmt.Sprint(markerCodes(resp)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if end := tp.Partitions[1].Offsets().LogEndOffset; end != c.end1 {
			t.Errorf("%s: u-1 ends at %d, want %d", c.name, end, c.end1)
		}
	}
	if end := tp.Partitions[0].Offsets().LogEndOffset; end != 0 {
		t.Errorf("u-0 ends at %d, want 0", end)
	}
}

// A marker to __consumer_offsets completes the producer's transactional
// offset commits there, as Kafka's group coordinator does: a commit makes
// them visible, an abort drops them.
func TestWriteTxnMarkersCompletesTxnOffsets(t *testing.T) {
	b, w := txnBroker(t)
	b.createTopic(t, "t", 1, nil)
	for _, c := range []struct {
		group  string
		commit bool
		want   int64
	}{{"committed", true, 5}, {"aborted", false, -1}} {
		p := beginTxnOffsets(t, w, "tx-"+c.group, c.group)
		expectErr(t, "txn commit", txnCommitCode(t, w.roundTrip(txnCommitReq(3, c.group, p, -1, "", "t", 0, 5))), nil)
		if got := fetchStableOffset(t, w, c.group, "t"); got.ErrorCode != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("%s: pending offset %+v", c.group, got)
		}
		n := int32(len(b.store.Topic(coordinator.OffsetsTopic).Partitions))
		resp := w.roundTrip(markerReq(2, p.id, p.epoch, c.commit, 0, 0, coordinator.OffsetsTopic, coordinator.PartitionFor(c.group, n))).(*kmsg.WriteTxnMarkersResponse)
		if got := fmt.Sprint(markerCodes(resp)); got != fmt.Sprintf("[%d %s-%d=0]", p.id, coordinator.OffsetsTopic, coordinator.PartitionFor(c.group, n)) {
			t.Fatalf("%s: %s", c.group, got)
		}
		if got := fetchStableOffset(t, w, c.group, "t"); got.ErrorCode != 0 || got.Offset != c.want {
			t.Errorf("%s: offset %+v, want %d", c.group, got, c.want)
		}
	}
}

// With the data dir offline, a partition is not online: Kafka answers
// UNKNOWN_TOPIC_OR_PARTITION (ReplicaManager.onlinePartition), which
// Admin.abortTransaction retries.
func TestWriteTxnMarkersLogDirOffline(t *testing.T) {
	fsys, w, produce := offlineServer(t, zerolog.Nop())
	fsys.Inject(&memfs.Fault{Kind: memfs.SyncError, At: 0, Match: memfs.HasSuffix(".log")})
	if code := produce("a").ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce with a failing fsync: %v", kerr.ErrorForCode(code))
	}
	resp := w.roundTrip(markerReq(1, 3, 0, false, 0, 0, "b", 0)).(*kmsg.WriteTxnMarkersResponse)
	if got := fmt.Sprint(markerCodes(resp)); got != "[3 b-0=3]" {
		t.Errorf("offline: %s", got)
	}
}
