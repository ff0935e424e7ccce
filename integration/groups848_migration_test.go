package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// migrationConfigs are consumer848Configs plus classic groups that
// rebalance at once and accept short sessions.
var migrationConfigs = append(consumer848Configs[:len(consumer848Configs):len(consumer848Configs)],
	"group.initial.rebalance.delay.ms=0",
	"group.min.session.timeout.ms=1000",
)

// optsClassic are the options of a classic-protocol member (kgo without
// ServerSideBalancer speaks JoinGroup/SyncGroup) that, as opts848's,
// commits what it polled before it lets a revocation through.
func optsClassic(group string, topics ...string) []kgo.Opt {
	return append(groupOpts(group, topics...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.RebalanceTimeout(20*time.Second),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
}

// memberTypes counts a consumer group's members by ConsumerGroupDescribe's
// MemberType (0 classic, 1 consumer).
func (b *broker) memberTypes(t testing.TB, group string) map[int8]int {
	out := map[int8]int{}
	for _, m := range b.describe848(t, group).Members {
		out[m.MemberType]++
	}
	return out
}

// TestConsumerGroup848OnlineUpgradeAndDowngrade: a live classic group
// (two kgo members of the classic protocol, consuming while records flow)
// becomes a consumer group when a KIP-848 member joins it, the classic
// members stay in it and share the partitions with the new member
// through JoinGroup/SyncGroup, and when the KIP-848 member leaves the
// group is classic again; every record is processed exactly once and
// every offset committed.
func TestConsumerGroup848OnlineUpgradeAndDowngrade(t *testing.T) {
	b := startBroker(t, "", migrationConfigs...)
	const topic, group, parts = "migrate848", "g-migrate848", int32(6)
	b.createTopic(t, topic, parts, nil)
	adm := kadm.NewClient(b.newClient(t))
	run := newRun848(t)
	got := run.got
	for i := 0; i < 2; i++ {
		run.start(fmt.Sprint("classic", i), b.newClient(t, optsClassic(group, topic)...))
	}
	b.waitGroup(t, adm, group, "a stable classic group", stableWith(t, 2, topic, parts))
	b.produceN(t, topic, parts, 20, "classic")

	// Upgrade: a KIP-848 member joins the live classic group.
	cl848, close848 := b.tempClient(t, opts848(group, kgo.StickyBalancer(), topic)...)
	stop848 := run.start("consumer", cl848)
	b.wait848(t, group, 3, parts)
	if n := b.memberTypes(t, group); n[0] != 2 || n[1] != 1 {
		t.Fatalf("member types after the upgrade: %v, want 2 classic and 1 consumer", n)
	}
	b.produceN(t, topic, parts, 20, "mixed")
	got.waitFor(2*int(parts)*20, 60*time.Second)

	// Downgrade: the KIP-848 member leaves; the classic members carry on
	// in a classic group.
	stop848()
	close848()
	d := b.waitGroup(t, adm, group, "a stable classic group again", stableWith(t, 2, topic, parts))
	if d.ProtocolType != "consumer" {
		t.Fatalf("protocol type %q after the downgrade", d.ProtocolType)
	}
	if g := b.describe848(t, group); g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupDescribe after the downgrade: %v, want GROUP_ID_NOT_FOUND (a classic group)", kerr.ErrorForCode(g.ErrorCode))
	}
	b.produceN(t, topic, parts, 20, "classic-again")
	want := 3 * int(parts) * 20
	got.waitFor(want, 60*time.Second)
	run.stop()
	got.check(t, want)
	b.checkCommittedAtEnd(t, group, topic)
}

// checkCommittedAtEnd fails unless the group committed every partition of
// topic at its end offset.
func (b *broker) checkCommittedAtEnd(t testing.TB, group, topic string) {
	t.Helper()
	offs := b.committed(t, group, topic)
	for p, end := range b.endOffsets(t, topic) {
		if offs[p] != end {
			t.Errorf("partition %d committed %d, end %d", p, offs[p], end)
		}
	}
}

// cutDialer dials normally until cut, which closes every connection it
// made and fails every later dial: the client looks crashed to the
// broker (no LeaveGroup, no heartbeat).
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cutDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("crashed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cutDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
}

// TestConsumerGroup848ChurnWithCrashes: KIP-848 members join, leave and
// crash (their connections cut after their last commit: the broker sees
// no leave and fences them at the session timeout) while records flow;
// every record is processed exactly once and every offset committed.
func TestConsumerGroup848ChurnWithCrashes(t *testing.T) {
	b := startBroker(t, "", consumer848Configs...)
	const topic, group, parts = "crash848", "g-crash848", int32(8)
	b.createTopic(t, topic, parts, nil)
	run := newRun848(t)
	got := run.got
	type member struct {
		stop  func()
		crash func()
	}
	start := func(name string) member {
		d := &cutDialer{}
		opts := append([]kgo.Opt{kgo.SeedBrokers(b.Addr), kgo.Dialer(d.DialContext), kgo.RetryTimeout(time.Second)},
			opts848(group, kgo.StickyBalancer(), topic)...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		stop := run.start(name, cl)
		closed := make(chan struct{})
		var once sync.Once
		closeCl := func() { once.Do(func() { go func() { cl.Close(); close(closed) }() }) }
		t.Cleanup(func() {
			closeCl()
			select { // a crashed client's Close gives up on its leave
			case <-closed:
			case <-time.After(15 * time.Second):
			}
		})
		return member{
			stop:  func() { stop(); closeCl(); <-closed },
			crash: func() { stop(); d.crash(); closeCl() },
		}
	}
	members := []member{start("m0"), start("m1"), start("m2")}
	b.wait848(t, group, 3, parts)

	// Records flow for the whole churn (a crash takes a session
	// timeout, 3 s, to be noticed).
	per := scale(20)
	const rounds = 24
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for round := 0; round < rounds; round++ {
			b.produceN(t, topic, parts, per, fmt.Sprintf("r%d", round))
			time.Sleep(400 * time.Millisecond)
		}
	}()
	// join, crash, join, leave, crash: bounded churn.
	next := 3
	for change, what := range []string{"join", "crash", "join", "leave", "crash"} {
		switch what {
		case "join":
			members = append(members, start(fmt.Sprint("m", next)))
			next++
		case "leave":
			members[0].stop()
			members = members[1:]
		case "crash":
			members[0].crash()
			members = members[1:]
		}
		b.wait848(t, group, len(members), parts)
		t.Logf("change %d (%s): %d members, %d records consumed", change, what, len(members), got.count())
	}
	<-produced
	want := rounds * int(parts) * per
	got.waitFor(want, 90*time.Second)
	b.wait848(t, group, len(members), parts)
	run.stop()
	got.check(t, want)
	b.checkCommittedAtEnd(t, group, topic)
}

// TestConsumerGroup848MixedGroupSurvivesKill: a consumer group with a
// classic-protocol member and a KIP-848 member comes back from a SIGKILL
// of the broker with both members (the classic one's protocols and
// session from its ClassicMemberMetadata record), and they carry on
// consuming every record once.
func TestConsumerGroup848MixedGroupSurvivesKill(t *testing.T) {
	b := startBroker(t, "", append(migrationConfigs[:len(migrationConfigs):len(migrationConfigs)],
		"group.consumer.max.session.timeout.ms=60000", "group.consumer.session.timeout.ms=30000")...)
	const topic, group, parts = "mixedkill848", "g-mixedkill848", int32(4)
	b.createTopic(t, topic, parts, nil)
	run := newRun848(t)
	got := run.got
	run.start("classic", b.newClient(t, append(optsClassic(group, topic), kgo.SessionTimeout(30*time.Second))...))
	adm := kadm.NewClient(b.newClient(t))
	b.waitGroup(t, adm, group, "a stable classic group", stableWith(t, 1, topic, parts))
	run.start("consumer", b.newClient(t, opts848(group, kgo.StickyBalancer(), topic)...))
	before := b.wait848(t, group, 2, parts)
	if n := b.memberTypes(t, group); n[0] != 1 || n[1] != 1 {
		t.Fatalf("member types before the kill: %v, want one classic and one consumer", n)
	}

	b = b.crashRestartSamePort(t)
	after := b.wait848(t, group, 2, parts)
	types := map[string]int8{}
	for _, m := range after.Members {
		types[m.MemberID] = m.MemberType
	}
	for _, m := range before.Members {
		if ty, ok := types[m.MemberID]; !ok || ty != m.MemberType {
			t.Fatalf("member %s (type %d) after the kill: %+v", m.MemberID, m.MemberType, after.Members)
		}
	}
	b.produceN(t, topic, parts, 20, "after")
	want := int(parts) * 20
	got.waitFor(want, 60*time.Second)
	run.stop()
	got.check(t, want)
	b.checkCommittedAtEnd(t, group, topic)
}
