package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// The admin APIs of issue 7 other than configs, through kadm (which picks
// the highest versions both sides serve) and through raw kmsg requests at
// the lowest versions Kafka 3.9 serves.

func adminClient(t *testing.T, b *broker, opts ...kgo.Opt) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl := b.newClient(t, opts...)
	return kadm.NewClient(cl), cl
}

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// lowestVersions is Kafka 3.9 with the keys given pinned to v0, so kgo
// sends them at v0.
func lowestVersions(keys ...int16) *kversion.Versions {
	vs := kversion.V3_9_0()
	for _, k := range keys {
		vs.SetMaxKeyVersion(k, 0)
	}
	return vs
}

// TestAdminCreatePartitions grows a topic, refuses shrinking and bad
// assignments, and checks that the new partitions take records and
// survive a restart.
func TestAdminCreatePartitions(t *testing.T) {
	b := startBroker(t, "")
	b.createTopic(t, "grow", 1, nil)
	adm, _ := adminClient(t, b)
	ctx := adminCtx(t)

	if r, err := adm.ValidateCreatePartitions(ctx, 4, "grow"); err != nil || r["grow"].Err != nil {
		t.Fatalf("validate: %v %+v", err, r)
	}
	if n := len(b.endOffsets(t, "grow")); n != 1 {
		t.Fatalf("validate only created partitions: %d", n)
	}
	r, err := adm.CreatePartitions(ctx, 2, "grow", "missing")
	if err != nil || r["grow"].Err != nil || !errors.Is(r["missing"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("create: %v %+v", err, r)
	}
	r, err = adm.UpdatePartitions(ctx, 2, "grow")
	if err != nil || !errors.Is(r["grow"].Err, kerr.InvalidPartitions) ||
		r["grow"].ErrMessage != "The topic grow currently has 3 partition(s); 2 would not be an increase." {
		t.Fatalf("shrink: %v %+v", err, r)
	}

	// Manual assignments, raw: only [our node id] is valid.
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "grow", 4
	rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{2}}}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.newClient(t))
	if err != nil || resp.Topics[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("bad assignment: %v %+v", err, resp)
	}

	pcl := b.newClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 2, Value: []byte("p2")}).FirstErr(); err != nil {
		t.Fatalf("produce to a new partition: %v", err)
	}

	b = b.restart(t)
	ends := b.endOffsets(t, "grow")
	if len(ends) != 3 || ends[2] < 1 {
		t.Fatalf("after restart: %v", ends)
	}

	// v0, the lowest version Kafka 3.9 serves.
	low := b.newClient(t, kgo.MaxVersions(lowestVersions(37)))
	req = kmsg.NewPtrCreatePartitionsRequest()
	rt = kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "grow", 5
	req.Topics = append(req.Topics, rt)
	resp, err = req.RequestWith(ctx, low)
	if err != nil || resp.Version != 0 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("v0: %v %+v", err, resp)
	}
	if n := len(b.endOffsets(t, "grow")); n != 5 {
		t.Fatalf("after v0 grow: %d partitions", n)
	}
}

// TestAdminLogDirs checks sizes and volume bytes.
func TestAdminLogDirs(t *testing.T) {
	b := startBroker(t, "")
	b.createTopic(t, "sized", 2, nil)
	adm, _ := adminClient(t, b)
	ctx := adminCtx(t)
	cl := b.newClient(t, append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sized", Partition: 1, Value: make([]byte, 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []kadm.DescribedLogDir
	all.Each(func(d kadm.DescribedLogDir) { dirs = append(dirs, d) })
	if len(dirs) != 1 || dirs[0].Err != nil || dirs[0].TotalBytes <= 0 || dirs[0].UsableBytes <= 0 {
		t.Fatalf("dirs %+v", dirs)
	}
	var p0, p1 kadm.DescribedLogDirPartition
	dirs[0].Topics.Each(func(p kadm.DescribedLogDirPartition) {
		if p.Topic == "sized" && p.Partition == 0 {
			p0 = p
		}
		if p.Topic == "sized" && p.Partition == 1 {
			p1 = p
		}
	})
	if p0.Size != 0 || p1.Size <= 61 || p1.OffsetLag != 0 { // 61: a batch header
		t.Fatalf("sizes %+v %+v", p0, p1)
	}

	// v1 is the lowest Kafka 4.3.1 serves; v0 is served as a 3.x broker
	// (kcompatd.kafka.version=3.9) serves it.
	lowDirs(t, b, 1, p1.Size)
	old := startBroker(t, "", "kcompatd.kafka.version=3.9")
	old.createTopic(t, "sized", 2, nil)
	ocl := old.newClient(t, append(old.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err := ocl.ProduceSync(ctx, &kgo.Record{Topic: "sized", Partition: 1, Value: make([]byte, 1000)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lowDirs(t, old, 0, p1.Size)
	if _, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, b.newClient(t, kgo.MaxVersions(lowestVersions(35))).Broker(1)); err == nil {
		t.Fatalf("v0 of a Kafka 4 broker: %v", err)
	}
}

// lowDirs sends DescribeLogDirs at version v for sized-1 and a missing
// topic, and checks that only sized-1 is described, at size bytes.
func lowDirs(t *testing.T, b *broker, v int16, size int64) {
	t.Helper()
	vs := kversion.V3_9_0()
	vs.SetMaxKeyVersion(35, v)
	low := b.newClient(t, kgo.MaxVersions(vs))
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "sized", Partitions: []int32{1}}, {Topic: "nope", Partitions: []int32{0}}}
	resp, err := req.RequestWith(adminCtx(t), low.Broker(1)) // unsharded: kgo would refuse the unknown topic itself
	if err != nil || resp.Version != v || len(resp.Dirs) != 1 || len(resp.Dirs[0].Topics) != 1 || resp.Dirs[0].Topics[0].Partitions[0].Size != size {
		t.Fatalf("v%d: %v %+v", v, err, resp)
	}
}

// TestOffsetForLeaderEpoch checks the answers and that a consumer that
// starts from an offset with a leader epoch (as after a rebalance) passes
// kgo's truncation check and reads on.
func TestOffsetForLeaderEpoch(t *testing.T) {
	b := startBroker(t, "")
	b.createTopic(t, "epochs", 1, nil)
	adm, _ := adminClient(t, b)
	ctx := adminCtx(t)
	cl := b.newClient(t, b.producerOpts(t)...)
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "epochs", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	var req kadm.OffsetForLeaderEpochRequest
	req.Add("epochs", 0, 0)
	got, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if e := got["epochs"][0]; e.Err != nil || e.LeaderEpoch != 0 || e.EndOffset != 10 {
		t.Fatalf("epochs: %+v", e)
	}

	// v2 (the lowest Kafka 4.3.1 serves) raw, and v0 as a 3.x broker
	// (kcompatd.kafka.version=3.9) serves it.
	old := startBroker(t, "", "kcompatd.kafka.version=3.9")
	old.createTopic(t, "epochs", 1, nil)
	ocl := old.newClient(t, old.producerOpts(t)...)
	for i := range 10 {
		if err := ocl.ProduceSync(ctx, &kgo.Record{Topic: "epochs", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int16{0, 2} {
		vs := kversion.V3_9_0()
		vs.SetMaxKeyVersion(23, v)
		low := b.newClient(t, kgo.MaxVersions(vs))
		if v < 2 {
			if _, err := kmsg.NewPtrOffsetForLeaderEpochRequest().RequestWith(ctx, low.Broker(1)); err == nil {
				t.Fatalf("v%d served by a Kafka 4 broker", v)
			}
			low = old.newClient(t, kgo.MaxVersions(vs))
		}
		r := kmsg.NewPtrOffsetForLeaderEpochRequest()
		r.ReplicaID = -1
		for _, name := range []string{"epochs", "missing"} {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = name
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch = 5 // ignored at v0, UNKNOWN_LEADER_EPOCH at v2
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
		}
		// Sent to the one broker directly: kgo would shard by leader and
		// fail the unknown topic on the client side.
		resp, err := r.RequestWith(ctx, low.Broker(1))
		if err != nil || resp.Version != v || len(resp.Topics) != 2 {
			t.Fatalf("v%d: %v %+v", v, err, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if v == 0 && (p.ErrorCode != 0 || p.EndOffset != 10) || v == 2 && p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
			t.Fatalf("v%d: %+v", v, p)
		}
		if m := resp.Topics[1].Partitions[0]; m.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d missing: %+v", v, m)
		}
	}

	// A consumer resuming at offset 6 of epoch 0 validates it with
	// OffsetForLeaderEpoch and reads 6..9.
	cc := b.newClient(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"epochs": {0: kgo.NewOffset().At(6).WithEpoch(0)},
	}), kgo.FetchMaxWait(200*time.Millisecond))
	var offsets []int64
	for len(offsets) < 4 {
		fs := cc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v before timeout", offsets)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			offsets = append(offsets, r.Offset)
			if r.LeaderEpoch != 0 {
				t.Errorf("record leader epoch %d", r.LeaderEpoch)
			}
		})
	}
	if offsets[0] != 6 || offsets[3] != 9 {
		t.Fatalf("offsets %v", offsets)
	}
}

// TestAdminElectionsAndReassignments: nothing to elect or move on one
// broker, answered as Kafka answers.
func TestAdminElectionsAndReassignments(t *testing.T) {
	b := startBroker(t, "")
	b.createTopic(t, "placed", 2, nil)
	adm, _ := adminClient(t, b)
	ctx := adminCtx(t)

	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		res, err := adm.ElectLeaders(ctx, how, kadm.TopicsSet{"placed": {0: {}, 1: {}}, "missing": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 2; p++ {
			if !errors.Is(res["placed"][p].Err, kerr.ElectionNotNeeded) {
				t.Fatalf("how %v partition %d: %+v", how, p, res["placed"][p])
			}
		}
		if !errors.Is(res["missing"][0].Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("missing: %+v", res["missing"])
		}
	}
	low := b.newClient(t, kgo.MaxVersions(lowestVersions(43, 45)))
	er := kmsg.NewPtrElectLeadersRequest()
	er.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "placed", Partitions: []int32{1}}}
	eresp, err := er.RequestWith(ctx, low)
	if err != nil || eresp.Version != 0 || eresp.Topics[0].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("ElectLeaders v0: %v %+v", err, eresp)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("placed", 0, []int32{1})
	req.Assign("placed", 1, []int32{2})
	req.CancelAssign("missing", 0)
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["placed"][0]; r.Err != nil {
		t.Fatalf("same replica: %+v", r)
	}
	if r := res["placed"][1]; !errors.Is(r.Err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("other broker: %+v", r)
	}
	if r := res["missing"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("missing: %+v", r)
	}
	ar := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	art := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	art.Topic = "placed"
	art.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}
	ar.Topics = append(ar.Topics, art)
	aresp, err := ar.RequestWith(ctx, low)
	if err != nil || aresp.Version != 0 || aresp.Topics[0].Partitions[0].ErrorCode != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("AlterPartitionReassignments v0 cancel: %v %+v", err, aresp)
	}

	listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"placed": {0: {}}})
	if err != nil || len(listed) != 0 {
		t.Fatalf("list: %v %+v", err, listed)
	}
}

// TestAdminClientQuotas stores quotas, reports them, and keeps them
// across a restart.
func TestAdminClientQuotas(t *testing.T) {
	b := startBroker(t, "")
	adm, _ := adminClient(t, b)
	ctx := adminCtx(t)
	alice := kmsg.StringPtr("alice")
	entries := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: alice}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 50}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr("bob")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "no_such_quota", Value: 1}}},
	}
	res, err := adm.AlterClientQuotas(ctx, entries)
	if err != nil || len(res) != 3 || res[0].Err != nil || res[1].Err != nil || !errors.Is(res[2].Err, kerr.InvalidRequest) ||
		res[2].ErrMessage != "Invalid configuration key no_such_quota" {
		t.Fatalf("alter: %v %+v", err, res)
	}

	check := func(b *broker) {
		t.Helper()
		adm, _ := adminClient(t, b)
		got, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}})
		if err != nil || len(got) != 1 || len(got[0].Values) != 1 || got[0].Values[0].Key != "producer_byte_rate" || got[0].Values[0].Value != 1<<20 {
			t.Fatalf("describe users: %v %+v", err, got)
		}
		low := b.newClient(t, kgo.MaxVersions(lowestVersions(48)))
		dr := kmsg.NewPtrDescribeClientQuotasRequest()
		dr.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "client-id", MatchType: 1}}
		resp, err := dr.RequestWith(ctx, low)
		if err != nil || resp.Version != 0 || resp.ErrorCode != 0 || len(resp.Entries) != 1 || resp.Entries[0].Values[0].Value != 50 {
			t.Fatalf("describe v0: %v %+v", err, resp)
		}
	}
	check(b)
	b = b.restart(t)
	check(b)

	low := b.newClient(t, kgo.MaxVersions(lowestVersions(49)))
	ar := kmsg.NewPtrAlterClientQuotasRequest()
	ar.Entries = []kmsg.AlterClientQuotasRequestEntry{{
		Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: alice}},
		Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Remove: true}},
	}}
	aresp, err := ar.RequestWith(ctx, low)
	if err != nil || aresp.Version != 0 || aresp.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter v0: %v %+v", err, aresp)
	}
	adm, _ = adminClient(t, b)
	if got, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}); err != nil || len(got) != 0 {
		t.Fatalf("after remove: %v %+v", err, got)
	}
}

// TestAdminClusterAndFeatures covers DescribeCluster,
// DescribeTopicPartitions and UpdateFeatures.
func TestAdminClusterAndFeatures(t *testing.T) {
	b := startBroker(t, "")
	b.createTopic(t, "alpha", 3, nil)
	b.createTopic(t, "beta", 1, nil)
	adm, cl := adminClient(t, b)
	ctx := adminCtx(t)

	for _, v := range []int16{0, 2} {
		vs := kversion.V4_1_0()
		vs.SetMaxKeyVersion(60, v)
		c := b.newClient(t, kgo.MaxVersions(vs))
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp, err := req.RequestWith(ctx, c)
		if err != nil || resp.Version != v || resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.ClusterID == "" || resp.ControllerID != resp.Brokers[0].NodeID {
			t.Fatalf("DescribeCluster v%d: %v %+v", v, err, resp)
		}
	}

	// Paging through every partition two at a time.
	var pages []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for range 10 {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				pages = append(pages, *rt.Topic+"-"+string(rune('0'+p.Partition)))
			}
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []string{"alpha-0", "alpha-1", "alpha-2", "beta-0"}
	if len(pages) != len(want) {
		t.Fatalf("paged %v", pages)
	}
	for i := range want {
		if pages[i] != want[i] {
			t.Fatalf("paged %v", pages)
		}
	}

	// transaction.version is finalized at 2: an upgrade to the level it
	// has is no error (Kafka's controller only refuses a lower level with
	// upgrade type 1), a downgrade with upgrade type 1 is refused.
	upd, err := adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 1})
	if err == nil {
		err = upd["transaction.version"].Err
	}
	if err != nil {
		t.Fatalf("upgrade transaction.version to its level 2: %v", err)
	}
	upd, err = adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err == nil {
		err = upd["transaction.version"].Err
	}
	if !errors.Is(err, kerr.InvalidUpdateVersion) {
		t.Fatalf("lower transaction.version with upgrade type 1: %v", err)
	}
	low := b.newClient(t, kgo.MaxVersions(lowestVersions(57)))
	ur := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.AllowDowngrade = "group.version", 0, true
	ur.FeatureUpdates = append(ur.FeatureUpdates, u)
	uresp, err := ur.RequestWith(ctx, low)
	if err != nil || uresp.Version != 0 || uresp.ErrorCode != 0 || len(uresp.Results) != 1 || uresp.Results[0].ErrorCode != 0 {
		t.Fatalf("UpdateFeatures v0: %v %+v", err, uresp)
	}
}
