package protocol

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// Tests of the admin APIs of issue 7 other than configs: each at every
// version we serve, through the raw wire client.

func init() {
	versionChecks[kmsg.OffsetForLeaderEpoch.Int16()] = checkOffsetForLeaderEpochVersion
	versionChecks[kmsg.DescribeLogDirs.Int16()] = checkDescribeLogDirsVersion
	versionChecks[kmsg.CreatePartitions.Int16()] = checkCreatePartitionsVersion
	versionChecks[kmsg.ElectLeaders.Int16()] = checkElectLeadersVersion
	versionChecks[kmsg.AlterPartitionAssignments.Int16()] = checkAlterPartitionReassignmentsVersion
	versionChecks[kmsg.ListPartitionReassignments.Int16()] = checkListPartitionReassignmentsVersion
	versionChecks[kmsg.DescribeClientQuotas.Int16()] = checkDescribeClientQuotasVersion
	versionChecks[kmsg.AlterClientQuotas.Int16()] = checkAlterClientQuotasVersion
	versionChecks[kmsg.UpdateFeatures.Int16()] = checkUpdateFeaturesVersion
	versionChecks[kmsg.DescribeCluster.Int16()] = checkDescribeClusterVersion
	versionChecks[kmsg.DescribeTopicPartitions.Int16()] = checkDescribeTopicPartitionsVersion
}

func (b *testBroker) appendN(t testing.TB, topic string, p int32, n int) {
	t.Helper()
	l, err := b.store.Log(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("v")}
	}
	if _, err := l.Append(testBatch(t, recordbatch.None, b.nowMs(), recs...)); err != nil {
		t.Fatal(err)
	}
}

func (b *testBroker) ensureTopic(t testing.TB, name string, parts int32) *partition.Topic {
	t.Helper()
	if tp := b.store.Topic(name); tp != nil {
		return tp
	}
	return b.createTopic(t, name, parts, nil)
}

func codeName(c int16) string {
	if c == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(c).Error()
}

// --- OffsetForLeaderEpoch ---

func offsetForLeaderEpochReq(v int16, topic string, parts ...[2]int32) *kmsg.OffsetForLeaderEpochRequest {
	r := kmsg.NewPtrOffsetForLeaderEpochRequest()
	r.SetVersion(v)
	r.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = p[0]
		rp.LeaderEpoch = p[1]
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	return r
}

func checkOffsetForLeaderEpochVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	b.ensureTopic(t, "ofle", 1)
	resp := w.roundTrip(offsetForLeaderEpochReq(v, "ofle", [2]int32{0, 0})).(*kmsg.OffsetForLeaderEpochResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.EndOffset != b.store.Topic("ofle").Partitions[0].Offsets().LogEndOffset {
		t.Fatalf("v%d: %+v", v, p)
	}
	if v >= 1 && p.LeaderEpoch != 0 {
		t.Fatalf("v%d: leader epoch %d", v, p.LeaderEpoch)
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	// Kafka 4 serves v0 no more; 3.9 still does, and so does kcompatd
	// capped at it.
	b := startBroker(t, func(c *Config) { c.Versions = kversion.FromString("3.9") })
	b.createTopic(t, "e", 2, nil)
	b.appendN(t, "e", 0, 3)
	b.appendN(t, "e", 0, 2)

	type want struct {
		code   *kerr.Error
		epoch  int32
		offset int64
	}
	none := want{nil, -1, -1}
	for v := int16(0); v <= 4; v++ {
		cases := []struct {
			name        string
			topic       string
			part, epoch int32
			current     int32
			minV        int16
			want        want
		}{
			{"epoch 0 ends at the log end offset", "e", 0, 0, -1, 0, want{nil, 0, 5}},
			{"empty partition", "e", 1, 0, -1, 0, want{nil, 0, 0}},
			{"undefined epoch", "e", 0, -1, -1, 0, none},
			{"epoch above ours", "e", 0, 3, -1, 0, none},
			{"epoch below the cache", "e", 0, -7, -1, 0, want{nil, -7, 0}},
			{"unknown partition", "e", 9, 0, -1, 0, want{kerr.UnknownTopicOrPartition, -1, -1}},
			{"unknown topic", "nope", 0, 0, -1, 0, want{kerr.UnknownTopicOrPartition, -1, -1}},
			{"current epoch matches", "e", 0, 0, 0, 2, want{nil, 0, 5}},
			{"current epoch ahead of ours", "e", 0, 0, 1, 2, want{kerr.UnknownLeaderEpoch, -1, -1}},
			{"current epoch behind ours", "e", 0, 0, -2, 2, want{kerr.FencedLeaderEpoch, -1, -1}},
		}
		for _, tc := range cases {
			if v < tc.minV {
				continue
			}
			t.Run(fmt.Sprintf("v%d/%s", v, tc.name), func(t *testing.T) {
				w := dialWire(t, b.addr)
				req := offsetForLeaderEpochReq(v, tc.topic, [2]int32{tc.part, tc.epoch})
				req.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.current
				resp := w.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse)
				if len(resp.Topics) != 1 || resp.Topics[0].Topic != tc.topic || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("response %+v", resp.Topics)
				}
				p := resp.Topics[0].Partitions[0]
				wantCode := int16(0)
				if tc.want.code != nil {
					wantCode = tc.want.code.Code
				}
				if p.Partition != tc.part || p.ErrorCode != wantCode || p.EndOffset != tc.want.offset {
					t.Fatalf("got partition %d %s end %d, want %s end %d", p.Partition, codeName(p.ErrorCode), p.EndOffset, codeName(wantCode), tc.want.offset)
				}
				if v >= 1 && p.LeaderEpoch != tc.want.epoch {
					t.Fatalf("leader epoch %d, want %d", p.LeaderEpoch, tc.want.epoch)
				}
			})
		}
	}
}

// --- DescribeCluster ---

func checkDescribeClusterVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(v)
	req.IncludeClusterAuthorizedOperations = true
	resp := w.roundTrip(req).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != 0 || resp.ClusterID != b.store.ClusterID() || resp.ControllerID != 1 ||
		len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != "127.0.0.1" ||
		resp.Brokers[0].Port != b.s.cfg.AdvertisedPort || resp.Brokers[0].IsFenced {
		t.Fatalf("v%d: %+v", v, resp)
	}
	if resp.ClusterAuthorizedOperations != clusterAuthorizedOperations {
		t.Fatalf("authorized operations %d", resp.ClusterAuthorizedOperations)
	}
	if v >= 1 && resp.EndpointType != endpointTypeBroker {
		t.Fatalf("endpoint type %d", resp.EndpointType)
	}
}

func TestDescribeCluster(t *testing.T) {
	rack := "r1"
	b := startBroker(t, func(c *Config) { c.Rack = &rack })
	for v := int16(0); v <= 2; v++ {
		w := dialWire(t, b.addr)
		checkDescribeClusterVersion(t, b, w, v)
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(v)
		resp := w.roundTrip(req).(*kmsg.DescribeClusterResponse)
		if resp.ClusterAuthorizedOperations != authorizedOperationsUnset || resp.Brokers[0].Rack == nil || *resp.Brokers[0].Rack != "r1" {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if v < 1 {
			continue
		}
		for _, tc := range []struct {
			et   int8
			code *kerr.Error
		}{{2, kerr.MismatchedEndpointType}, {3, kerr.UnsupportedEndpointType}, {0, kerr.UnsupportedEndpointType}} {
			req.EndpointType = tc.et
			resp := w.roundTrip(req).(*kmsg.DescribeClusterResponse)
			if resp.ErrorCode != tc.code.Code || resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
				t.Fatalf("v%d endpoint type %d: %s %v", v, tc.et, codeName(resp.ErrorCode), resp.ErrorMessage)
			}
		}
	}
}

// --- CreatePartitions ---

func createPartitionsReq(v int16, validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	r := kmsg.NewPtrCreatePartitionsRequest()
	r.SetVersion(v)
	r.ValidateOnly = validateOnly
	r.Topics = topics
	return r
}

func cpTopic(name string, count int32, assignments ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic = name
	t.Count = count
	if assignments != nil {
		t.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
	}
	for _, a := range assignments {
		t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
	}
	return t
}

func checkCreatePartitionsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	name := fmt.Sprintf("cp-v%d", v)
	b.ensureTopic(t, name, 1)
	resp := w.roundTrip(createPartitionsReq(v, false, cpTopic(name, 2))).(*kmsg.CreatePartitionsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(b.store.Topic(name).Partitions) != 2 {
		t.Fatalf("v%d: %+v", v, resp.Topics)
	}
}

func TestCreatePartitionsAPI(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "g", 2, nil)
	for _, tc := range []struct {
		name     string
		topic    kmsg.CreatePartitionsRequestTopic
		validate bool
		code     *kerr.Error
		msg      string
		after    int
	}{
		{"same count", cpTopic("g", 2), false, kerr.InvalidPartitions, "Topic already has 2 partition(s).", 2},
		{"shrink", cpTopic("g", 1), false, kerr.InvalidPartitions, "The topic g currently has 2 partition(s); 1 would not be an increase.", 2},
		{"unknown topic", cpTopic("nope", 3), false, kerr.UnknownTopicOrPartition, "", 2},
		{"too few assignments", cpTopic("g", 4, []int32{1}), false, kerr.InvalidReplicaAssignment,
			"Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.", 2},
		{"empty assignment list", cpTopic("g", 3, []int32{}), false, kerr.InvalidReplicaAssignment, "Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.", 2},
		{"empty replica list", cpTopic("g", 3, []int32{}), false, kerr.InvalidReplicaAssignment, "", 2},
		{"other broker", cpTopic("g", 3, []int32{2}), false, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 2, but no such broker is registered.", 2},
		{"us twice", cpTopic("g", 3, []int32{1, 1}), false, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes the broker 1 more than once.", 2},
		{"us and a smaller id", cpTopic("g", 3, []int32{1, 0}), false, kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes broker 0, but no such broker is registered.", 2},
		{"validate only", cpTopic("g", 5), true, nil, "", 2},
		{"grow with assignment", cpTopic("g", 3, []int32{1}), false, nil, "", 3},
		{"grow", cpTopic("g", 5), false, nil, "", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "empty assignment list" {
				tc.topic.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{}
			}
			w := dialWire(t, b.addr)
			resp := w.roundTrip(createPartitionsReq(3, tc.validate, tc.topic)).(*kmsg.CreatePartitionsResponse)
			if len(resp.Topics) != 1 {
				t.Fatalf("topics %+v", resp.Topics)
			}
			got := resp.Topics[0]
			wantCode := int16(0)
			if tc.code != nil {
				wantCode = tc.code.Code
			}
			if got.Topic != tc.topic.Topic || got.ErrorCode != wantCode {
				t.Fatalf("got %s %s, want %s", got.Topic, codeName(got.ErrorCode), codeName(wantCode))
			}
			if tc.msg != "" && (got.ErrorMessage == nil || *got.ErrorMessage != tc.msg) {
				t.Fatalf("message %v, want %q", got.ErrorMessage, tc.msg)
			}
			if wantCode == 0 && got.ErrorMessage != nil {
				t.Fatalf("message on success: %q", *got.ErrorMessage)
			}
			if n := len(b.store.Topic("g").Partitions); n != tc.after {
				t.Fatalf("%d partitions, want %d", n, tc.after)
			}
		})
	}

	// Duplicates come first, once, and are not applied.
	w := dialWire(t, b.addr)
	resp := w.roundTrip(createPartitionsReq(1, false, cpTopic("g", 9), cpTopic("other", 1), cpTopic("g", 8))).(*kmsg.CreatePartitionsResponse)
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != "g" || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code ||
		*resp.Topics[0].ErrorMessage != "Duplicate topic name." || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("duplicates: %+v", resp.Topics)
	}
	if n := len(b.store.Topic("g").Partitions); n != 5 {
		t.Fatalf("duplicate applied: %d partitions", n)
	}

	// Metadata shows the new partitions, led by us.
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(12)
	m.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("g")}}
	mr := w.roundTrip(m).(*kmsg.MetadataResponse)
	if len(mr.Topics[0].Partitions) != 5 || mr.Topics[0].Partitions[4].Leader != 1 {
		t.Fatalf("metadata %+v", mr.Topics[0].Partitions)
	}
}

// --- DescribeLogDirs ---

func describeLogDirsReq(v int16, topics map[string][]int32) *kmsg.DescribeLogDirsRequest {
	r := kmsg.NewPtrDescribeLogDirsRequest()
	r.SetVersion(v)
	if topics != nil {
		r.Topics = []kmsg.DescribeLogDirsRequestTopic{}
		for name, ps := range topics {
			r.Topics = append(r.Topics, kmsg.DescribeLogDirsRequestTopic{Topic: name, Partitions: ps})
		}
	}
	return r
}

func checkDescribeLogDirsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	b.ensureTopic(t, "dld", 1)
	resp := w.roundTrip(describeLogDirsReq(v, map[string][]int32{"dld": {0}})).(*kmsg.DescribeLogDirsResponse)
	if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 || len(resp.Dirs[0].Topics) != 1 {
		t.Fatalf("v%d: %+v", v, resp)
	}
	if v >= 4 && (resp.Dirs[0].TotalBytes <= 0 || resp.Dirs[0].UsableBytes < 0) {
		t.Fatalf("v%d: volume %d/%d", v, resp.Dirs[0].UsableBytes, resp.Dirs[0].TotalBytes)
	}
}

func TestDescribeLogDirsAPI(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "a", 2, nil)
	b.createTopic(t, "b", 1, nil)
	b.appendN(t, "a", 1, 4)
	size := b.store.Topic("a").Partitions[1].Size()
	if size == 0 {
		t.Fatal("no bytes appended")
	}
	for v := int16(1); v <= 5; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			w := dialWire(t, b.addr)
			all := w.roundTrip(describeLogDirsReq(v, nil)).(*kmsg.DescribeLogDirsResponse)
			if len(all.Dirs) != 1 || all.Dirs[0].Dir != b.store.Dir() {
				t.Fatalf("dirs %+v", all.Dirs)
			}
			d := all.Dirs[0]
			if len(d.Topics) != 2 || d.Topics[0].Topic != "a" || len(d.Topics[0].Partitions) != 2 || d.Topics[1].Topic != "b" {
				t.Fatalf("topics %+v", d.Topics)
			}
			p1 := d.Topics[0].Partitions[1]
			if p1.Partition != 1 || p1.Size != size || p1.OffsetLag != 0 || p1.IsFuture || d.Topics[0].Partitions[0].Size != 0 {
				t.Fatalf("partition %+v", p1)
			}
			if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes) {
				t.Fatalf("volume total %d usable %d", d.TotalBytes, d.UsableBytes)
			}
			// Named partitions only; unknown names are left out.
			some := w.roundTrip(describeLogDirsReq(v, map[string][]int32{"a": {1, 7}, "missing": {0}})).(*kmsg.DescribeLogDirsResponse)
			st := some.Dirs[0].Topics
			if len(st) != 1 || st[0].Topic != "a" || len(st[0].Partitions) != 1 || st[0].Partitions[0].Partition != 1 {
				t.Fatalf("named %+v", st)
			}
			none := w.roundTrip(describeLogDirsReq(v, map[string][]int32{})).(*kmsg.DescribeLogDirsResponse)
			if len(none.Dirs) != 1 || len(none.Dirs[0].Topics) != 0 {
				t.Fatalf("empty list %+v", none.Dirs)
			}
		})
	}
}

// --- DescribeTopicPartitions ---

func dtpReq(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsRequest {
	r := kmsg.NewPtrDescribeTopicPartitionsRequest()
	r.SetVersion(0)
	r.ResponsePartitionLimit = limit
	r.Cursor = cursor
	for _, n := range topics {
		r.Topics = append(r.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: n})
	}
	return r
}

func checkDescribeTopicPartitionsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	b.ensureTopic(t, "dtp", 2)
	resp := w.roundTrip(dtpReq(2000, nil, "dtp")).(*kmsg.DescribeTopicPartitionsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 || resp.NextCursor != nil {
		t.Fatalf("v%d: %+v", v, resp)
	}
}

// dtpSummary renders a response as "topic:p,p;...|cursor".
func dtpSummary(r *kmsg.DescribeTopicPartitionsResponse) string {
	s := ""
	for _, t := range r.Topics {
		s += *t.Topic
		if t.ErrorCode != 0 {
			s += "!" + codeName(t.ErrorCode)
		}
		s += ":"
		for i, p := range t.Partitions {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprint(p.Partition)
		}
		s += ";"
	}
	if r.NextCursor != nil {
		s += fmt.Sprintf("|%s/%d", r.NextCursor.Topic, r.NextCursor.Partition)
	}
	return s
}

func TestDescribeTopicPartitionsAPI(t *testing.T) {
	b := startBroker(t, nil)
	ta := b.createTopic(t, "a", 3, nil)
	b.createTopic(t, "b", 2, nil)
	b.createTopic(t, "c", 1, nil)
	cur := func(topic string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	w := dialWire(t, b.addr)
	for _, tc := range []struct {
		name string
		req  *kmsg.DescribeTopicPartitionsRequest
		want string
	}{
		{"all", dtpReq(2000, nil), "a:0,1,2;b:0,1;c:0;"},
		{"limit splits a topic", dtpReq(2, nil), "a:0,1;|a/2"},
		{"resume from the cursor", dtpReq(2, cur("a", 2)), "a:2;b:0;|b/1"},
		{"limit used up exactly", dtpReq(3, nil), "a:0,1,2;|b/0"},
		{"last page", dtpReq(2, cur("b", 1)), "b:1;c:0;"},
		{"limit 0 means 1", dtpReq(0, nil), "a:0;|a/1"},
		{"named, sorted, once each", dtpReq(2000, nil, "c", "a", "c"), "a:0,1,2;c:0;"},
		{"unknown and invalid names", dtpReq(2000, nil, "zz", "bad name", "b"), "b:0,1;bad name!" + codeName(kerr.InvalidTopicException.Code) + ":;zz!" + codeName(kerr.UnknownTopicOrPartition.Code) + ":;"},
		{"named with cursor skips earlier names", dtpReq(1, cur("b", 1), "a", "b", "c"), "b:1;|c/0"},
		{"cursor topic not in the list", dtpReq(10, cur("b", 0), "a", "c"),
			"a!" + codeName(kerr.InvalidRequest.Code) + ":;c!" + codeName(kerr.InvalidRequest.Code) + ":;"},
		{"negative cursor partition", dtpReq(10, cur("a", -1), "a"), "a!" + codeName(kerr.InvalidRequest.Code) + ":;"},
		{"negative cursor partition, all topics", dtpReq(10, cur("a", -1)), ""},
		{"cursor past the partitions", dtpReq(10, cur("a", 7)), "a:;b:0,1;c:0;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := w.roundTrip(tc.req).(*kmsg.DescribeTopicPartitionsResponse)
			if got := dtpSummary(resp); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}

	resp := w.roundTrip(dtpReq(1, nil, "a")).(*kmsg.DescribeTopicPartitionsResponse)
	rt := resp.Topics[0]
	p := rt.Partitions[0]
	if rt.TopicID != ta.ID || rt.IsInternal || rt.AuthorizedOperations != topicAuthorizedOperations ||
		p.LeaderID != 1 || p.LeaderEpoch != 0 || len(p.Replicas) != 1 || p.Replicas[0] != 1 || len(p.ISR) != 1 ||
		p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 || len(p.OfflineReplicas) != 0 {
		t.Fatalf("topic %+v", rt)
	}
}

// --- ElectLeaders ---

func electReq(v int16, typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	r := kmsg.NewPtrElectLeadersRequest()
	r.SetVersion(v)
	r.ElectionType = typ
	if topics != nil {
		r.Topics = []kmsg.ElectLeadersRequestTopic{}
		for _, name := range []string{"el", "nope"} {
			if ps, ok := topics[name]; ok {
				r.Topics = append(r.Topics, kmsg.ElectLeadersRequestTopic{Topic: name, Partitions: ps})
			}
		}
	}
	return r
}

func checkElectLeadersVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	b.ensureTopic(t, "el", 2)
	resp := w.roundTrip(electReq(v, 0, map[string][]int32{"el": {0}})).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("v%d: %+v", v, resp)
	}
}

func TestElectLeadersAPI(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "el", 2, nil)
	b.createTopic(t, "other", 1, nil)
	for v := int16(0); v <= 2; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			w := dialWire(t, b.addr)
			types := []int8{0}
			if v >= 1 {
				types = []int8{0, 1}
			}
			for _, typ := range types {
				resp := w.roundTrip(electReq(v, typ, map[string][]int32{"el": {0, 1, 5}, "nope": {0}})).(*kmsg.ElectLeadersResponse)
				if resp.ErrorCode != 0 || len(resp.Topics) != 2 {
					t.Fatalf("type %d: %+v", typ, resp)
				}
				el := resp.Topics[0].Partitions
				if len(el) != 3 || el[0].ErrorCode != kerr.ElectionNotNeeded.Code || el[0].ErrorMessage != nil ||
					el[1].ErrorCode != kerr.ElectionNotNeeded.Code || el[2].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
					*el[2].ErrorMessage != "No such partition as el-5" {
					t.Fatalf("type %d el: %+v", typ, el)
				}
				np := resp.Topics[1].Partitions
				if len(np) != 1 || np[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || *np[0].ErrorMessage != "No such topic as nope" {
					t.Fatalf("type %d nope: %+v", typ, np)
				}
			}
			all := w.roundTrip(electReq(v, 0, nil)).(*kmsg.ElectLeadersResponse)
			if len(all.Topics) != 2 || all.Topics[0].Topic != "el" || len(all.Topics[0].Partitions) != 0 || all.Topics[1].Topic != "other" {
				t.Fatalf("all: %+v", all.Topics)
			}
			if v >= 1 {
				bad := w.roundTrip(electReq(v, 7, map[string][]int32{"el": {0}})).(*kmsg.ElectLeadersResponse)
				if bad.ErrorCode != kerr.InvalidRequest.Code || bad.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code ||
					*bad.Topics[0].Partitions[0].ErrorMessage != "Unknown election type 7" {
					t.Fatalf("bad type: %+v", bad)
				}
			}
		})
	}
}

// --- Partition reassignments ---

func alterReassignReq(v int16, allowRF bool, topic string, parts map[int32][]int32, order ...int32) *kmsg.AlterPartitionAssignmentsRequest {
	r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	r.SetVersion(v)
	r.AllowReplicationFactorChange = allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range order {
		rt.Partitions = append(rt.Partitions, kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: p, Replicas: parts[p]})
	}
	r.Topics = append(r.Topics, rt)
	return r
}

func checkAlterPartitionReassignmentsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	b.ensureTopic(t, "re", 1)
	resp := w.roundTrip(alterReassignReq(v, true, "re", map[int32][]int32{0: {1}}, 0)).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("v%d: %+v", v, resp)
	}
	if v >= 1 && !resp.AllowReplicationFactorChange {
		t.Fatalf("v%d: AllowReplicationFactorChange not echoed", v)
	}
}

func checkListPartitionReassignmentsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.SetVersion(v)
	resp := w.roundTrip(req).(*kmsg.ListPartitionReassignmentsResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("v%d: %+v", v, resp)
	}
}

func TestPartitionReassignmentsAPI(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "re", 1, nil)
	w := dialWire(t, b.addr)
	type want struct {
		code *kerr.Error
		msg  string
	}
	ok := want{}
	for v := int16(0); v <= 1; v++ {
		for _, allow := range []bool{true, false} {
			if v == 0 && !allow {
				continue // not on the wire at v0
			}
			for _, tc := range []struct {
				name     string
				topic    string
				part     int32
				replicas []int32
				want     want
			}{
				{"same single replica", "re", 0, []int32{1}, ok},
				{"cancel with none in progress", "re", 0, nil, want{kerr.NoReassignmentInProgress, ""}},
				{"empty list", "re", 0, []int32{}, func() want {
					if allow {
						return want{kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."}
					}
					return want{kerr.InvalidReplicationFactor, "The replication factor is changed from 1 to 0"}
				}()},
				{"other broker", "re", 0, []int32{3}, want{kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker 3, but no such broker is registered."}},
				{"unknown partition", "re", 4, []int32{1}, want{kerr.UnknownTopicOrPartition, "Unable to find partition re:4."}},
				{"unknown topic", "nope", 0, []int32{1}, want{kerr.UnknownTopicOrPartition, "Unable to find a topic named nope."}},
				{"grow replication factor", "re", 0, []int32{1, 2}, func() want {
					if allow {
						return want{kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker 2, but no such broker is registered."}
					}
					return want{kerr.InvalidReplicationFactor, "The replication factor is changed from 1 to 2"}
				}()},
			} {
				t.Run(fmt.Sprintf("v%d/allow=%v/%s", v, allow, tc.name), func(t *testing.T) {
					if tc.replicas == nil && tc.name != "cancel with none in progress" {
						tc.replicas = []int32{}
					}
					resp := w.roundTrip(alterReassignReq(v, allow, tc.topic, map[int32][]int32{tc.part: tc.replicas}, tc.part)).(*kmsg.AlterPartitionAssignmentsResponse)
					if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
						t.Fatalf("response %+v", resp)
					}
					if v >= 1 && resp.AllowReplicationFactorChange != allow {
						t.Fatalf("echo %v", resp.AllowReplicationFactorChange)
					}
					p := resp.Topics[0].Partitions[0]
					wantCode := int16(0)
					if tc.want.code != nil {
						wantCode = tc.want.code.Code
					}
					if p.ErrorCode != wantCode {
						t.Fatalf("code %s, want %s", codeName(p.ErrorCode), codeName(wantCode))
					}
					if (tc.want.msg == "") != (p.ErrorMessage == nil) || (p.ErrorMessage != nil && *p.ErrorMessage != tc.want.msg) {
						t.Fatalf("message %v, want %q", p.ErrorMessage, tc.want.msg)
					}
				})
			}
		}
	}

	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	list.SetVersion(0)
	list.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{{Topic: "re", Partitions: []int32{0}}, {Topic: "nope", Partitions: []int32{0}}}
	if resp := w.roundTrip(list).(*kmsg.ListPartitionReassignmentsResponse); resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("list named: %+v", resp)
	}
}

// --- Client quotas ---

func quotaEntityOf(kv ...*string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kmsg.AlterClientQuotasRequestEntryEntity{Type: *kv[i], Name: kv[i+1]})
	}
	return out
}

func setQuota(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v}
}

func removeQuota(key string) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Remove: true}
}

func alterQuotasReq(v int16, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasRequest {
	r := kmsg.NewPtrAlterClientQuotasRequest()
	r.SetVersion(v)
	r.ValidateOnly = validateOnly
	r.Entries = entries
	return r
}

func describeQuotasReq(v int16, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasRequest {
	r := kmsg.NewPtrDescribeClientQuotasRequest()
	r.SetVersion(v)
	r.Strict = strict
	r.Components = comps
	return r
}

// quotaSummary renders describe entries as "type=name,type=name{key=value,...} ...".
func quotaSummary(r *kmsg.DescribeClientQuotasResponse) string {
	s := ""
	for _, e := range r.Entries {
		for i, p := range e.Entity {
			if i > 0 {
				s += ","
			}
			n := "<default>"
			if p.Name != nil {
				n = *p.Name
			}
			s += p.Type + "=" + n
		}
		s += "{"
		for i, v := range e.Values {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprintf("%s=%g", v.Key, v.Value)
		}
		s += "} "
	}
	return s
}

func checkAlterClientQuotasVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	u := "check-v" + fmt.Sprint(v)
	resp := w.roundTrip(alterQuotasReq(v, false, kmsg.AlterClientQuotasRequestEntry{
		Entity: quotaEntityOf(kmsg.StringPtr("user"), &u),
		Ops:    []kmsg.AlterClientQuotasRequestEntryOp{setQuota("producer_byte_rate", 100)},
	})).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("v%d: %+v", v, resp)
	}
}

func checkDescribeClientQuotasVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	resp := w.roundTrip(describeQuotasReq(v, false)).(*kmsg.DescribeClientQuotasResponse)
	if resp.ErrorCode != 0 || resp.Entries == nil {
		t.Fatalf("v%d: %+v", v, resp)
	}
}

// stubQuotaLookup makes ip entity names resolve without a resolver: only
// quota-host.test resolves.
func stubQuotaLookup(_ context.Context, host string) ([]string, error) {
	if host == "quota-host.test" {
		return []string{"192.0.2.1"}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestClientQuotasAPI(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.QuotaLookupHost = stubQuotaLookup })
	w := dialWire(t, b.addr)
	user, client, ip := kmsg.StringPtr("user"), kmsg.StringPtr("client-id"), kmsg.StringPtr("ip")
	alice, app := kmsg.StringPtr("alice"), kmsg.StringPtr("app")
	entry := func(ent []kmsg.AlterClientQuotasRequestEntryEntity, ops ...kmsg.AlterClientQuotasRequestEntryOp) kmsg.AlterClientQuotasRequestEntry {
		return kmsg.AlterClientQuotasRequestEntry{Entity: ent, Ops: ops}
	}

	// Validation, one entity at a time; nothing is stored.
	for _, tc := range []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		msg   string
	}{
		{"no entity", entry(nil, setQuota("producer_byte_rate", 1)), "Invalid empty client quota entity"},
		{"unknown type", entry(quotaEntityOf(kmsg.StringPtr("group"), alice), setQuota("producer_byte_rate", 1)), "Unhandled client quota entity type: group"},
		{"empty name", entry(quotaEntityOf(user, kmsg.StringPtr("")), setQuota("producer_byte_rate", 1)), "Empty user not supported"},
		{"ip with user", entry(quotaEntityOf(ip, kmsg.StringPtr("127.0.0.1"), user, alice), setQuota("connection_creation_rate", 1)),
			"Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{"bad ip", entry(quotaEntityOf(ip, kmsg.StringPtr("not a host!")), setQuota("connection_creation_rate", 1)), "not a host! is not a valid IP or resolvable host."},
		{"ip key on a user", entry(quotaEntityOf(user, alice), setQuota("connection_creation_rate", 1)), "Invalid configuration key connection_creation_rate"},
		{"user key on an ip", entry(quotaEntityOf(ip, nil), setQuota("producer_byte_rate", 1)), "Invalid configuration key producer_byte_rate"},
		{"zero", entry(quotaEntityOf(user, alice), setQuota("consumer_byte_rate", 0)), "Quota consumer_byte_rate must be greater than 0"},
		{"fraction of a long", entry(quotaEntityOf(user, alice), setQuota("producer_byte_rate", 1.5)), "producer_byte_rate cannot be a fractional value."},
		{"int too large", entry(quotaEntityOf(ip, kmsg.StringPtr("::1")), setQuota("connection_creation_rate", 3e9)), "Proposed value for connection_creation_rate is too large for an INT."},
		{"duplicate key", entry(quotaEntityOf(user, alice), setQuota("producer_byte_rate", 1), setQuota("producer_byte_rate", 2)),
			"Duplicate quota key producer_byte_rate not updating quota for this entity ClientQuotaEntity(entries={user=alice})"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := w.roundTrip(alterQuotasReq(1, false, tc.entry)).(*kmsg.AlterClientQuotasResponse)
			if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != kerr.InvalidRequest.Code ||
				resp.Entries[0].ErrorMessage == nil || *resp.Entries[0].ErrorMessage != tc.msg {
				t.Fatalf("got %+v, want INVALID_REQUEST %q", resp.Entries, tc.msg)
			}
			if len(b.store.ClientQuotas()) != 0 {
				t.Fatal("stored")
			}
		})
	}

	// Validate only stores nothing.
	resp := w.roundTrip(alterQuotasReq(0, true, entry(quotaEntityOf(user, alice), setQuota("producer_byte_rate", 1024)))).(*kmsg.AlterClientQuotasResponse)
	if resp.Entries[0].ErrorCode != 0 || len(b.store.ClientQuotas()) != 0 {
		t.Fatalf("validate only: %+v", resp.Entries)
	}

	// A batch: valid entries apply, the duplicate entity is reported.
	resp = w.roundTrip(alterQuotasReq(1, false,
		entry(quotaEntityOf(user, alice), setQuota("producer_byte_rate", 1024), setQuota("request_percentage", 12.5)),
		entry(quotaEntityOf(user, alice, client, app), setQuota("consumer_byte_rate", 2048)),
		entry(quotaEntityOf(user, nil), setQuota("producer_byte_rate", 10)),
		entry(quotaEntityOf(client, app), setQuota("controller_mutation_rate", 5)),
		entry(quotaEntityOf(ip, nil), setQuota("connection_creation_rate", 100)),
		entry(quotaEntityOf(ip, kmsg.StringPtr("10.0.0.1")), setQuota("connection_creation_rate", 3)),
		entry(quotaEntityOf(client, app), setQuota("controller_mutation_rate", 6)),
		entry(quotaEntityOf(ip, kmsg.StringPtr("quota-host.test")), setQuota("connection_creation_rate", 7)),
	)).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 7 {
		t.Fatalf("entries %+v", resp.Entries)
	}
	for i, e := range resp.Entries {
		want := int16(0)
		if i == 3 {
			want = kerr.InvalidRequest.Code
		}
		if e.ErrorCode != want {
			t.Fatalf("entry %d: %s", i, codeName(e.ErrorCode))
		}
	}
	if m := resp.Entries[3].ErrorMessage; m == nil || *m != "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=app})" {
		t.Fatalf("duplicate message %v", m)
	}

	all := "client-id=app{controller_mutation_rate=5} client-id=app,user=alice{consumer_byte_rate=2048} " +
		"ip=<default>{connection_creation_rate=100} ip=10.0.0.1{connection_creation_rate=3} ip=quota-host.test{connection_creation_rate=7} " +
		"user=<default>{producer_byte_rate=10} user=alice{producer_byte_rate=1024,request_percentage=12.5} "
	exact := func(typ string, name *string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: quotaMatchExact, Match: name}
	}
	def := func(typ string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: quotaMatchDefault}
	}
	any := func(typ string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: quotaMatchSpecified}
	}
	for v := int16(0); v <= 1; v++ {
		for _, tc := range []struct {
			name   string
			strict bool
			comps  []kmsg.DescribeClientQuotasRequestComponent
			want   string
		}{
			{"everything", false, nil, all},
			{"strict with no components", true, nil, ""},
			{"exact user", false, []kmsg.DescribeClientQuotasRequestComponent{exact("user", alice)}, "client-id=app,user=alice{consumer_byte_rate=2048} user=alice{producer_byte_rate=1024,request_percentage=12.5} "},
			{"exact user strict", true, []kmsg.DescribeClientQuotasRequestComponent{exact("user", alice)}, "user=alice{producer_byte_rate=1024,request_percentage=12.5} "},
			{"default user", false, []kmsg.DescribeClientQuotasRequestComponent{def("user")}, "user=<default>{producer_byte_rate=10} "},
			{"any client id", false, []kmsg.DescribeClientQuotasRequestComponent{any("client-id")}, "client-id=app{controller_mutation_rate=5} client-id=app,user=alice{consumer_byte_rate=2048} "},
			{"any ip strict", true, []kmsg.DescribeClientQuotasRequestComponent{any("ip")}, "ip=<default>{connection_creation_rate=100} ip=10.0.0.1{connection_creation_rate=3} ip=quota-host.test{connection_creation_rate=7} "},
		} {
			t.Run(fmt.Sprintf("describe v%d %s", v, tc.name), func(t *testing.T) {
				resp := w.roundTrip(describeQuotasReq(v, tc.strict, tc.comps...)).(*kmsg.DescribeClientQuotasResponse)
				if resp.ErrorCode != 0 {
					t.Fatalf("error %s", codeName(resp.ErrorCode))
				}
				if got := quotaSummary(resp); got != tc.want {
					t.Fatalf("got  %q\nwant %q", got, tc.want)
				}
			})
		}
		for _, tc := range []struct {
			name  string
			comps []kmsg.DescribeClientQuotasRequestComponent
			code  *kerr.Error
			msg   string
		}{
			{"empty type", []kmsg.DescribeClientQuotasRequestComponent{any("")}, kerr.InvalidRequest, "Invalid empty entity type."},
			{"type twice", []kmsg.DescribeClientQuotasRequestComponent{any("user"), def("user")}, kerr.InvalidRequest, "Entity type user cannot appear more than once in the filter."},
			{"unknown type", []kmsg.DescribeClientQuotasRequestComponent{any("group")}, kerr.UnsupportedVersion, "Unsupported entity type group"},
			{"exact without a match", []kmsg.DescribeClientQuotasRequestComponent{exact("user", nil)}, kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null."},
			{"default with a match", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: quotaMatchDefault, Match: alice}}, kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."},
			{"unknown match type", []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 9}}, kerr.InvalidRequest, "Unknown match type 9"},
			{"ip with user", []kmsg.DescribeClientQuotasRequestComponent{any("ip"), any("user")}, kerr.InvalidRequest,
				"Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
		} {
			t.Run(fmt.Sprintf("describe v%d %s", v, tc.name), func(t *testing.T) {
				resp := w.roundTrip(describeQuotasReq(v, false, tc.comps...)).(*kmsg.DescribeClientQuotasResponse)
				if resp.ErrorCode != tc.code.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg || resp.Entries != nil {
					t.Fatalf("got %s %v %d entries, want %s %q", codeName(resp.ErrorCode), resp.ErrorMessage, len(resp.Entries), tc.code.Message, tc.msg)
				}
			})
		}
	}

	// Removing values: the entity goes when its last value does; removing
	// an unset key is fine.
	resp = w.roundTrip(alterQuotasReq(0, false,
		entry(quotaEntityOf(ip, kmsg.StringPtr("10.0.0.1")), removeQuota("connection_creation_rate")),
		entry(quotaEntityOf(ip, kmsg.StringPtr("quota-host.test")), removeQuota("connection_creation_rate")),
		entry(quotaEntityOf(user, alice), removeQuota("request_percentage"), removeQuota("consumer_byte_rate")),
	)).(*kmsg.AlterClientQuotasResponse)
	if resp.Entries[0].ErrorCode != 0 || resp.Entries[1].ErrorCode != 0 || resp.Entries[2].ErrorCode != 0 {
		t.Fatalf("remove: %+v", resp.Entries)
	}
	d := w.roundTrip(describeQuotasReq(1, false, any("ip"))).(*kmsg.DescribeClientQuotasResponse)
	if got := quotaSummary(d); got != "ip=<default>{connection_creation_rate=100} " {
		t.Fatalf("after remove: %q", got)
	}
	d = w.roundTrip(describeQuotasReq(1, true, exact("user", alice))).(*kmsg.DescribeClientQuotasResponse)
	if got := quotaSummary(d); got != "user=alice{producer_byte_rate=1024} " {
		t.Fatalf("after remove: %q", got)
	}
}

// --- UpdateFeatures ---

func updateFeaturesReq(v int16, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesRequest {
	r := kmsg.NewPtrUpdateFeaturesRequest()
	r.SetVersion(v)
	r.FeatureUpdates = updates
	return r
}

func featureUpdate(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature = name
	u.MaxVersionLevel = level
	u.UpgradeType = typ
	u.AllowDowngrade = typ != upgradeTypeUpgrade
	return u
}

func checkUpdateFeaturesVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	resp := w.roundTrip(updateFeaturesReq(v, featureUpdate("transaction.version", 3, upgradeTypeUpgrade))).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || len(resp.Results) != 0 {
		t.Fatalf("v%d: %+v", v, resp)
	}
}

func TestUpdateFeaturesAPI(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	const prefix = "The update failed for all features since the following feature had an error: "
	for v := int16(0); v <= 2; v++ {
		for _, tc := range []struct {
			name    string
			updates []kmsg.UpdateFeaturesRequestFeatureUpdate
			msg     string // "" means success
			minV    int16
		}{
			// Each answer as Apache Kafka 4.3.1 gives it. Successes
			// from v1 only: v0 has no ValidateOnly.
			{"raise transaction.version", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("transaction.version", 3, upgradeTypeUpgrade)},
				"Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2", 0},
			{"lower transaction.version as an upgrade", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("transaction.version", 1, upgradeTypeUpgrade)},
				"Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", 0},
			{"lower group.version as an upgrade", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, upgradeTypeUpgrade)},
				"Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", 0},
			{"lower transaction.version", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("transaction.version", 1, upgradeTypeSafeDowngrade)}, "", 1},
			{"transaction.version 0", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("transaction.version", 0, upgradeTypeSafeDowngrade)}, "", 1},
			{"group.version 0", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, upgradeTypeSafeDowngrade)}, "", 1},
			{"group.version 2", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 2, upgradeTypeUpgrade)},
				"Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1", 0},
			{"metadata.version", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 21, upgradeTypeUpgrade)},
				"Invalid update version 21 for feature metadata.version. Local controller 1 does not support this feature.", 0},
			{"metadata.version 0", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("metadata.version", 0, upgradeTypeSafeDowngrade)},
				"Invalid metadata.version 0. Unknown metadata.version.", 0},
			{"negative level", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", -1, upgradeTypeSafeDowngrade)},
				"Invalid update version -1 for feature group.version. A feature version cannot be less than 0.", 0},
			{"unknown feature", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("foo.version", 0, upgradeTypeUpgrade)},
				"Invalid update version 0 for feature foo.version. Feature foo.version not found.", 0},
			{"unknown upgrade type", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, 9)},
				"Invalid update version 0 for feature group.version. The controller does not support the given upgrade type.", 1},
			{"first failure wins", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 0, upgradeTypeSafeDowngrade), featureUpdate("foo.version", 1, upgradeTypeUpgrade)},
				"Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature.", 0},
			{"finalized levels are already true", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("group.version", 1, upgradeTypeUpgrade), featureUpdate("transaction.version", 2, upgradeTypeUpgrade)}, "", 1},
			{"raise above the finalized level as a downgrade", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("transaction.version", 2, upgradeTypeUnsafeDowngrade)}, "", 1},
			{"level 0 upgrade at v0", []kmsg.UpdateFeaturesRequestFeatureUpdate{featureUpdate("kraft.version", 0, upgradeTypeUpgrade)}, "", 0},
		} {
			if v < tc.minV {
				continue
			}
			t.Run(fmt.Sprintf("v%d/%s", v, tc.name), func(t *testing.T) {
				req := updateFeaturesReq(v, tc.updates...)
				req.ValidateOnly = true
				resp := w.roundTrip(req).(*kmsg.UpdateFeaturesResponse)
				if tc.msg != "" {
					if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != prefix+tc.msg || len(resp.Results) != 0 {
						t.Fatalf("got %s %v %+v", codeName(resp.ErrorCode), resp.ErrorMessage, resp.Results)
					}
					return
				}
				if resp.ErrorCode != 0 || resp.ErrorMessage != nil {
					t.Fatalf("got %s %v", codeName(resp.ErrorCode), resp.ErrorMessage)
				}
				wantResults := len(tc.updates)
				if v >= 2 {
					wantResults = 0
				}
				if len(resp.Results) != wantResults {
					t.Fatalf("results %+v", resp.Results)
				}
				for i, r := range resp.Results {
					if r.Feature != tc.updates[i].Feature || r.ErrorCode != 0 || r.ErrorMessage != nil {
						t.Fatalf("result %+v", r)
					}
				}
			})
		}
	}

	// ValidateOnly changed nothing.
	if got := finalizedFeatures(t, w); got != "epoch 0: group.version=1 share.version=1 streams.version=1 transaction.version=2" {
		t.Fatalf("after ValidateOnly: %s", got)
	}
}

// finalizedFeatures is ApiVersions v4's finalized levels and epoch.
func finalizedFeatures(t *testing.T, w *wire) string {
	t.Helper()
	av := w.roundTrip(apiVersionsReq(4)).(*kmsg.ApiVersionsResponse)
	s := fmt.Sprintf("epoch %d:", av.FinalizedFeaturesEpoch)
	for _, f := range av.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Fatalf("finalized range %+v", f)
		}
		s += fmt.Sprintf(" %s=%d", f.Name, f.MaxVersionLevel)
	}
	return s
}

// TestUpdateFeaturesChangesLevels: an update finalizes its levels, as
// Kafka 4.3.1 does: ApiVersions reports them under a new epoch (a level 0
// is not listed), the transaction coordinator takes transaction.version,
// and group.version 0 turns ConsumerGroupHeartbeat and
// ConsumerGroupDescribe away with UNSUPPORTED_VERSION and no message.
func TestUpdateFeaturesChangesLevels(t *testing.T) {
	b := startBroker(t, nil)
	w := dialWire(t, b.addr)
	update := func(name string, level int16, typ int8) {
		t.Helper()
		resp := w.roundTrip(updateFeaturesReq(1, featureUpdate(name, level, typ))).(*kmsg.UpdateFeaturesResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("update %s to %d: %s %v", name, level, codeName(resp.ErrorCode), resp.ErrorMessage)
		}
	}
	cgh := func() int16 {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.RebalanceTimeoutMillis = "g", "m0123456789012345678901", 30000
		r.SubscribedTopicNames = []string{"t"}
		resp := w.roundTrip(r).(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode == kerr.UnsupportedVersion.Code && resp.ErrorMessage != nil {
			t.Fatalf("message %q", *resp.ErrorMessage)
		}
		return resp.ErrorCode
	}
	cgd := func() int16 {
		r := kmsg.NewPtrConsumerGroupDescribeRequest()
		r.Groups = []string{"g"}
		return w.roundTrip(r).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode
	}
	for _, step := range []struct {
		name  string
		level int16
		typ   int8
		want  string
		tv    int16
	}{
		{"transaction.version", 1, upgradeTypeSafeDowngrade, "epoch 1: group.version=1 share.version=1 streams.version=1 transaction.version=1", 1},
		{"transaction.version", 0, upgradeTypeUnsafeDowngrade, "epoch 2: group.version=1 share.version=1 streams.version=1", 0},
		{"transaction.version", 2, upgradeTypeUpgrade, "epoch 3: group.version=1 share.version=1 streams.version=1 transaction.version=2", 2},
		{"group.version", 0, upgradeTypeSafeDowngrade, "epoch 4: share.version=1 streams.version=1 transaction.version=2", 2},
	} {
		update(step.name, step.level, step.typ)
		if got := finalizedFeatures(t, w); got != step.want {
			t.Fatalf("after %s=%d: %s, want %s", step.name, step.level, got, step.want)
		}
		if got := b.s.txns.TransactionVersion(); got != step.tv {
			t.Fatalf("after %s=%d: coordinator at transaction.version %d", step.name, step.level, got)
		}
	}
	if c, d := cgh(), cgd(); c != kerr.UnsupportedVersion.Code || d != kerr.UnsupportedVersion.Code {
		t.Fatalf("group.version 0: heartbeat %s, describe %s", codeName(c), codeName(d))
	}
	update("group.version", 1, upgradeTypeUpgrade)
	if c, d := cgh(), cgd(); c == kerr.UnsupportedVersion.Code || d == kerr.UnsupportedVersion.Code {
		t.Fatalf("group.version 1: heartbeat %s, describe %s", codeName(c), codeName(d))
	}
}

// TestTooManyPartitionsPerRequest: a CreateTopics or CreatePartitions
// adding more than 10000 partitions over its topics is refused whole with
// Kafka's POLICY_VIOLATION and message, and creates nothing.
func TestTooManyPartitionsPerRequest(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "g", 1, nil)
	topic := func(name string, parts int32) kmsg.CreateTopicsRequestTopic {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, parts, 1
		return ct
	}
	for _, topics := range [][]kmsg.CreateTopicsRequestTopic{
		{topic("huge", 65536)},
		{topic("half-a", 6000), topic("half-b", 6000)},
	} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.Topics = topics
		resp := dialWire(t, b.addr).roundTrip(req).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != len(topics) {
			t.Fatalf("%d results for %d topics", len(resp.Topics), len(topics))
		}
		for _, got := range resp.Topics {
			if got.ErrorCode != kerr.PolicyViolation.Code || got.ErrorMessage == nil || *got.ErrorMessage != "Excessively large number of partitions per request." {
				t.Errorf("%s: code %d message %v", got.Topic, got.ErrorCode, got.ErrorMessage)
			}
			if b.store.Topic(got.Topic) != nil {
				t.Errorf("%s created", got.Topic)
			}
		}
	}
	resp := dialWire(t, b.addr).roundTrip(createPartitionsReq(3, false, cpTopic("g", 65536))).(*kmsg.CreatePartitionsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.PolicyViolation.Code ||
		resp.Topics[0].ErrorMessage == nil || *resp.Topics[0].ErrorMessage != "Unable to perform excessively large batch operation." {
		t.Fatalf("CreatePartitions to 65536: %+v", resp.Topics)
	}
	if n := len(b.store.Topic("g").Partitions); n != 1 {
		t.Fatalf("g has %d partitions", n)
	}
}
