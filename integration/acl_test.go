package integration

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// aclBrokerConfigs turn the authorizer on, with the PLAINTEXT listener's
// User:ANONYMOUS as the super user (the admin here) and User:bob, a PLAIN
// user of the SASL_PLAINTEXT listener, restricted by ACLs.
func aclBrokerConfigs() []string {
	return []string{
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + plainJAAS(map[string]string{"bob": "bob-secret"}),
	}
}

// codeOf is the Kafka error of a request: the one kgo returned (a
// FindCoordinator refused on the way) or the response's.
func codeOf(err error, code int16) error {
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(code)
}

// A principal without ACLs is refused as Kafka refuses it: topics
// (Metadata, Produce, Fetch), groups (JoinGroup, OffsetCommit,
// OffsetFetch) and transactional ids (InitProducerId); once the ACLs are
// created it is let through, and the ACLs survive a restart.
func TestACLsAuthorizeRequests(t *testing.T) {
	b, addrs := startSecured(t, "", []listenerSpec{{"SASL_PLAINTEXT", "SASL_PLAINTEXT"}}, aclBrokerConfigs()...)
	ctx := adminCtx(t)
	adm, _ := adminClient(t, b)
	const topic, group, txnID = "acl-topic", "acl-group", "acl-txn"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	topicID := md.Topics[topic].ID

	bob := func(b *broker) *kgo.Client {
		return b.newClient(t, kgo.SeedBrokers(addrs["SASL_PLAINTEXT"]), kgo.RequestRetries(0),
			kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()))
	}
	type step struct {
		name string
		do   func(cl *kgo.Client) error
	}
	steps := []step{
		{"metadata", func(cl *kgo.Client) error {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return codeOf(nil, resp.Topics[0].ErrorCode)
		}},
		{"produce", func(cl *kgo.Client) error {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 10000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = buildBatch(batchOpts{n: 1})
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return codeOf(nil, resp.Topics[0].Partitions[0].ErrorCode)
		}},
		{"fetch", func(cl *kgo.Client) error {
			req := kmsg.NewPtrFetchRequest()
			req.MaxBytes, req.ReplicaID = 1<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return codeOf(nil, resp.Topics[0].Partitions[0].ErrorCode)
		}},
		{"join group", func(cl *kgo.Client) error {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = group, "consumer", 10000, 10000
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			if resp.ErrorCode == kerr.MemberIDRequired.Code { // joined as far as a first join goes
				return nil
			}
			return codeOf(nil, resp.ErrorCode)
		}},
		{"offset commit", func(cl *kgo.Client) error {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = group, -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return codeOf(nil, resp.Topics[0].Partitions[0].ErrorCode)
		}},
		{"offset fetch", func(cl *kgo.Client) error {
			req := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = group
			req.Groups = append(req.Groups, g)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return codeOf(nil, resp.Groups[0].ErrorCode)
		}},
		{"init producer id", func(cl *kgo.Client) error {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 10000
			req.ProducerID, req.ProducerEpoch = -1, -1
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return codeOf(nil, resp.ErrorCode)
		}},
	}
	refusal := map[string]error{
		"metadata": kerr.TopicAuthorizationFailed, "produce": kerr.TopicAuthorizationFailed, "fetch": kerr.TopicAuthorizationFailed,
		"join group": kerr.GroupAuthorizationFailed, "offset commit": kerr.GroupAuthorizationFailed, "offset fetch": kerr.GroupAuthorizationFailed,
		"init producer id": kerr.TransactionalIDAuthorizationFailed,
	}
	cl := bob(b)
	for _, s := range steps {
		if err := s.do(cl); !errors.Is(err, refusal[s.name]) {
			t.Errorf("%s without ACLs: %v, want %v", s.name, err, refusal[s.name])
		}
	}

	acls := kadm.NewACLs().Allow("User:bob").AllowHosts().
		Topics(topic).Groups(group).TransactionalIDs(txnID).
		Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	created, err := adm.CreateACLs(ctx, acls)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created {
		if c.Err != nil {
			// READ on a transactional id is not one of its operations,
			// but Kafka stores it all the same.
			t.Fatalf("CreateACLs %+v", c)
		}
	}
	for _, s := range steps {
		if err := s.do(cl); err != nil {
			t.Errorf("%s with ACLs: %v", s.name, err)
		}
	}

	// The ACLs are in the data dir: after a restart they still apply.
	b = b.restart(t)
	adm, _ = adminClient(t, b)
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts().
		Topics(topic).Groups(group).TransactionalIDs(txnID).Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range described {
		if d.Err != nil {
			t.Fatalf("DescribeACLs: %v", d.Err)
		}
		n += len(d.Described)
	}
	if n != len(created) {
		t.Errorf("after restart: %d ACLs, want %d", n, len(created))
	}
	cl = bob(b)
	for _, s := range steps[:3] {
		if err := s.do(cl); err != nil {
			t.Errorf("%s after restart: %v", s.name, err)
		}
	}
}

// Stock kgo clients under prefixed ACLs: an idempotent producer allowed by
// WRITE on a topic pattern (KIP-679: no IDEMPOTENT_WRITE needed), a group
// consumer that commits, auto-creation allowed by CREATE on the prefix;
// a DENY on one topic of the prefix wins over the ALLOW.
func TestACLsPrefixedRealClients(t *testing.T) {
	b, addrs := startSecured(t, "", []listenerSpec{{"SASL_PLAINTEXT", "SASL_PLAINTEXT"}}, aclBrokerConfigs()...)
	ctx := adminCtx(t)
	adm, _ := adminClient(t, b)
	allowBob := kadm.NewACLs().Allow("User:bob").AllowHosts().ResourcePatternType(kadm.ACLPatternPrefixed)
	for _, acl := range []*kadm.ACLBuilder{
		allowBob.Topics("app.").Operations(kadm.OpRead, kadm.OpWrite, kadm.OpCreate),
		kadm.NewACLs().Allow("User:bob").AllowHosts().ResourcePatternType(kadm.ACLPatternPrefixed).Groups("app-").Operations(kadm.OpRead),
		kadm.NewACLs().Deny("User:bob").DenyHosts().Topics("app.secret").Operations(kadm.OpAll),
	} {
		res, err := adm.CreateACLs(ctx, acl)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateACLs: %v", r.Err)
			}
		}
	}
	opts := []kgo.Opt{kgo.SeedBrokers(addrs["SASL_PLAINTEXT"]), kgo.AllowAutoTopicCreation(),
		kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())}
	cl := b.newClient(t, append(opts, kgo.ConsumerGroup("app-billing"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	produceConsume(t, cl, "app.orders") // created by the produce's Metadata: CREATE on the prefix
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	offs, err := adm.FetchOffsets(ctx, "app-billing")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("app.orders", 0); !ok || o.At != 1 {
		t.Errorf("committed %+v, want offset 1", o)
	}

	denied, closeDenied := b.tempClient(t, append(opts, kgo.RecordRetries(0), kgo.RequestRetries(0))...)
	defer closeDenied()
	err = denied.ProduceSync(ctx, &kgo.Record{Topic: "app.secret", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce to a denied topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := denied.ProduceSync(ctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce outside the prefix: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if b.isTopic(t, adm, "app.secret") || b.isTopic(t, adm, "other") {
		t.Error("a topic was auto-created without CREATE")
	}
}

// isTopic reports whether topic exists (asked as the super user).
func (b *broker) isTopic(t *testing.T, adm *kadm.Client, topic string) bool {
	t.Helper()
	td, err := adm.ListTopics(adminCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return td.Has(topic)
}
