package protocol

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/protocol/authz"
)

func init() {
	versionChecks[kmsg.AlterReplicaLogDirs.Int16()] = checkAlterReplicaLogDirsVersion
}

// arldDir is one dir of an AlterReplicaLogDirs request: "topic:p,p" each.
type arldDir struct {
	dir    string
	topics []string
}

func alterReplicaLogDirsReq(v int16, dirs ...arldDir) *kmsg.AlterReplicaLogDirsRequest {
	r := kmsg.NewPtrAlterReplicaLogDirsRequest()
	r.SetVersion(v)
	for _, d := range dirs {
		rd := kmsg.NewAlterReplicaLogDirsRequestDir()
		rd.Dir = d.dir
		for _, tp := range d.topics {
			name, ps, _ := strings.Cut(tp, ":")
			rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			rt.Topic = name
			for _, p := range strings.Split(ps, ",") {
				var n int32
				fmt.Sscan(p, &n)
				rt.Partitions = append(rt.Partitions, n)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		r.Dirs = append(r.Dirs, rd)
	}
	return r
}

// arldSummary renders a response as "topic:p=CODE,...;" per topic entry.
func arldSummary(r *kmsg.AlterReplicaLogDirsResponse) string {
	var b strings.Builder
	for _, t := range r.Topics {
		b.WriteString(t.Topic + ":")
		for i, p := range t.Partitions {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d=%s", p.Partition, arldCode(p.ErrorCode))
		}
		b.WriteString(";")
	}
	return b.String()
}

// arldCode is Kafka's name of an error code alone (codeName without its
// description), NONE for 0.
func arldCode(code int16) string {
	name, _, _ := strings.Cut(codeName(code), ":")
	return name
}

func dataDirOf(t *testing.T, b *testBroker) string {
	t.Helper()
	dir, err := filepath.Abs(b.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func checkAlterReplicaLogDirsVersion(t *testing.T, b *testBroker, w *wire, v int16) {
	b.ensureTopic(t, "arld", 1)
	resp := w.roundTrip(alterReplicaLogDirsReq(v, arldDir{dataDirOf(t, b), []string{"arld:0"}})).(*kmsg.AlterReplicaLogDirsResponse)
	if got := arldSummary(resp); got != "arld:0=NONE;" {
		t.Fatalf("v%d: %s", v, got)
	}
}

// Every answer of ReplicaManager.alterReplicaLogDirs a one-dir broker can
// give, in Kafka's order of checks, at each version Kafka 4 serves.
func TestAlterReplicaLogDirs(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "a", 2, nil)
	b.appendN(t, "a", 1, 3)
	dir := dataDirOf(t, b)
	long := strings.Repeat("x", 249) // a legal topic name, too long for its future dir's name
	b.createTopic(t, long, 1, nil)
	short := strings.Repeat("y", 213) // 213+1+1+1+32+7 = 255: still fits
	b.createTopic(t, short, 1, nil)
	// __consumer_offsets, made by the group coordinator's first use, is
	// a log in the data dir as any other (before, UNKNOWN as in Kafka).
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	if r := dialWire(t, b.addr).roundTrip(fc).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %s", arldCode(r.ErrorCode))
	}
	cases := []struct {
		name string
		dirs []arldDir
		want string
	}{
		{"the data dir: nothing to move", []arldDir{{dir, []string{"a:0,1"}}}, "a:0=NONE,1=NONE;"},
		{"another dir", []arldDir{{"/elsewhere", []string{"a:0"}}}, "a:0=LOG_DIR_NOT_FOUND;"},
		{"the data dir with a trailing slash", []arldDir{{dir + "/", []string{"a:0"}}}, "a:0=LOG_DIR_NOT_FOUND;"},
		{"missing partition and topic", []arldDir{{dir, []string{"a:2,-1", "nope:0"}}},
			"a:-1=UNKNOWN_TOPIC_OR_PARTITION,2=UNKNOWN_TOPIC_OR_PARTITION;nope:0=UNKNOWN_TOPIC_OR_PARTITION;"},
		{"a missing partition in another dir", []arldDir{{"/elsewhere", []string{"nope:0"}}}, "nope:0=LOG_DIR_NOT_FOUND;"},
		{"a name too long for the future dir comes first", []arldDir{{"/elsewhere", []string{long + ":0", short + ":0"}}},
			long + ":0=INVALID_TOPIC_EXCEPTION;" + short + ":0=LOG_DIR_NOT_FOUND;"},
		{"a long name in the data dir", []arldDir{{dir, []string{long + ":0", short + ":0"}}},
			long + ":0=INVALID_TOPIC_EXCEPTION;" + short + ":0=NONE;"},
		// Counted in UTF-16 code units as Java does, not in bytes: 110
		// two-byte runes and 42 more chars fit.
		{"a name of non-ASCII runes", []arldDir{{"/elsewhere", []string{strings.Repeat("é", 110) + ":0"}}},
			strings.Repeat("é", 110) + ":0=LOG_DIR_NOT_FOUND;"},
		{"an internal topic", []arldDir{{dir, []string{"__consumer_offsets:0"}}}, "__consumer_offsets:0=NONE;"},
		{"the last dir named wins", []arldDir{{"/elsewhere", []string{"a:0,1"}}, {dir, []string{"a:1"}}}, "a:0=LOG_DIR_NOT_FOUND,1=NONE;"},
		{"a topic listed twice is answered once", []arldDir{{dir, []string{"a:1", "a:0,1"}}}, "a:0=NONE,1=NONE;"},
		{"nothing", nil, ""},
	}
	for v := int16(1); v <= 2; v++ {
		w := dialWire(t, b.addr)
		for _, c := range cases {
			resp := w.roundTrip(alterReplicaLogDirsReq(v, c.dirs...)).(*kmsg.AlterReplicaLogDirsResponse)
			if got := arldSummary(resp); got != c.want {
				t.Errorf("v%d %s: %s, want %s", v, c.name, got, c.want)
			}
		}
	}
	// Nothing moved or changed: no future replica dir, the records kept.
	if l := b.store.Topic("a").Partitions[1]; l.Offsets().LogEndOffset != 3 {
		t.Fatalf("log end offset %d after the requests", l.Offsets().LogEndOffset)
	}
	entries, err := os.ReadDir(b.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-future") {
			t.Errorf("future replica dir %s", e.Name())
		}
	}
}

// Kafka 4 serves v0 no more; 3.9 advertises v0-2, and so does kcompatd
// capped at it, serving v0.
func TestAlterReplicaLogDirsV0UnderKafka39(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Versions = kversion.FromString("3.9") })
	b.createTopic(t, "old", 1, nil)
	w := dialWire(t, b.addr)
	av := w.roundTrip(apiVersionsReq(3)).(*kmsg.ApiVersionsResponse)
	found := false
	for _, k := range av.ApiKeys {
		if k.ApiKey == kmsg.AlterReplicaLogDirs.Int16() {
			found = true
			if k.MinVersion != 0 || k.MaxVersion != 2 {
				t.Errorf("advertised v%d-%d, want v0-2", k.MinVersion, k.MaxVersion)
			}
		}
	}
	if !found {
		t.Error("not advertised")
	}
	resp := w.roundTrip(alterReplicaLogDirsReq(0, arldDir{dataDirOf(t, b), []string{"old:0"}}, arldDir{"/elsewhere", []string{"new:0"}})).(*kmsg.AlterReplicaLogDirsResponse)
	if got := arldSummary(resp); got != "new:0=LOG_DIR_NOT_FOUND;old:0=NONE;" {
		t.Errorf("v0: %s", got)
	}
}

// ALTER on the cluster is required; refused, every partition of every dir
// entry is answered as listed, duplicates included
// (AlterReplicaLogDirsRequest.getErrorResponse).
func TestAlterReplicaLogDirsAuthorization(t *testing.T) {
	cases := []struct {
		name string
		acls []partition.ACL
		want string
	}{
		{"no ACL", nil, "a:0=CLUSTER_AUTHORIZATION_FAILED;a:0=CLUSTER_AUTHORIZATION_FAILED,7=CLUSTER_AUTHORIZATION_FAILED;"},
		{"DESCRIBE is not enough", []partition.ACL{clusterACL(authz.OpDescribe)},
			"a:0=CLUSTER_AUTHORIZATION_FAILED;a:0=CLUSTER_AUTHORIZATION_FAILED,7=CLUSTER_AUTHORIZATION_FAILED;"},
		{"ALTER", []partition.ACL{clusterACL(authz.OpAlter)}, "a:0=NONE,7=UNKNOWN_TOPIC_OR_PARTITION;"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := startACLBroker(t, false, c.acls...)
			b.createTopic(t, "a", 1, nil)
			w := dialWire(t, b.addr)
			dir := dataDirOf(t, b)
			resp := w.roundTrip(alterReplicaLogDirsReq(2, arldDir{"/elsewhere", []string{"a:0"}}, arldDir{dir, []string{"a:0,7"}})).(*kmsg.AlterReplicaLogDirsResponse)
			if got := arldSummary(resp); got != c.want {
				t.Errorf("%s, want %s", got, c.want)
			}
		})
	}
}

// An offline data dir answers KAFKA_STORAGE_ERROR for a partition moved
// to it, after the name and dir checks.
func TestAlterReplicaLogDirsOffline(t *testing.T) {
	fsys, w, produce := offlineServer(t, zerolog.Nop())
	fsys.Inject(&memfs.Fault{Kind: memfs.SyncError, At: 0, Match: memfs.HasSuffix(".log")})
	if code := produce("a").ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce with a failing fsync: %v", kerr.ErrorForCode(code))
	}
	long := strings.Repeat("x", 249)
	resp := w.roundTrip(alterReplicaLogDirsReq(2, arldDir{"/data", []string{"a:0", "nope:0", long + ":0"}}, arldDir{"/other", []string{"b:0"}})).(*kmsg.AlterReplicaLogDirsResponse)
	if got := arldSummary(resp); got != "a:0=KAFKA_STORAGE_ERROR;b:0=LOG_DIR_NOT_FOUND;nope:0=KAFKA_STORAGE_ERROR;"+long+":0=INVALID_TOPIC_EXCEPTION;" {
		t.Errorf("offline: %s", got)
	}
}
