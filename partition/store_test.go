package partition

import (
	"bytes"
	"github.com/rs/zerolog"

	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestTopicNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a.b_c-D9", true},
		{strings.Repeat("x", 249), true},
		{strings.Repeat("x", 250), false},
		{"", false},
		{".", false},
		{"..", false},
		{"...", true},
		{"with space", false},
		{"slash/", false},
		{"ünïcode", false},
	} {
		err := ValidateTopicName(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidTopic)) {
			t.Errorf("ValidateTopicName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestResolveLogConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		ov   map[string]string
		err  string // "" = valid
		chk  func(LogConfig) bool
	}{
		{"defaults", nil, "", func(c LogConfig) bool { return c == DefaultLogConfig() }},
		{"segment.bytes floor", map[string]string{"segment.bytes": "1048576"}, "", func(c LogConfig) bool { return c.SegmentBytes == 1048576 }},
		{"segment.bytes below floor (Kafka 4)", map[string]string{"segment.bytes": "1048575"}, "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576", nil},
		// Kafka 4's internal, test-only override, whatever segment.bytes says.
		{"internal.segment.bytes", map[string]string{"internal.segment.bytes": "14", "segment.bytes": "2000000"}, "", func(c LogConfig) bool { return c.SegmentBytes == 14 }},
		{"internal.segment.bytes below floor", map[string]string{"internal.segment.bytes": "13"}, "Invalid value 13 for configuration internal.segment.bytes: Value must be at least 14", nil},
		{"not a number", map[string]string{"segment.ms": "soon"}, "Invalid value soon for configuration segment.ms: Not a number of type LONG", nil},
		{"int overflow", map[string]string{"segment.bytes": "4294967296"}, "Not a number of type INT", nil},
		{"unknown name", map[string]string{"segment.byte": "100"}, "Unknown topic config name: segment.byte", nil},
		{"cleanup.policy list", map[string]string{"cleanup.policy": "compact, delete"}, "", func(c LogConfig) bool { return c.CleanupPolicy == "compact,delete" && c.Compact() && c.Delete() }},
		{"cleanup.policy bad", map[string]string{"cleanup.policy": "shred"}, "String must be one of: compact, delete", nil},
		{"timestamp type", map[string]string{"message.timestamp.type": "LogAppendTime"}, "", func(c LogConfig) bool { return c.LogAppendTime() }},
		{"timestamp type bad", map[string]string{"message.timestamp.type": "logappendtime"}, "String must be one of: CreateTime, LogAppendTime", nil},
		{"compression", map[string]string{"compression.type": "zstd"}, "", func(c LogConfig) bool { return c.CompressionType == "zstd" }},
		{"compression bad", map[string]string{"compression.type": "brotli"}, "String must be one of", nil},
		{"ratio", map[string]string{"min.cleanable.dirty.ratio": "0.1"}, "", func(c LogConfig) bool { return c.MinCleanableRatio == 0.1 }},
		{"ratio range", map[string]string{"min.cleanable.dirty.ratio": "1.5"}, "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1", nil},
		{"retention forever", map[string]string{"retention.ms": "-1"}, "", func(c LogConfig) bool { return c.RetentionMs == -1 }},
		{"retention too low", map[string]string{"retention.ms": "-2"}, "Value must be at least -1", nil},
		{"stored only", map[string]string{"min.insync.replicas": "2", "preallocate": "true", "unclean.leader.election.enable": "false"}, "", nil},
		{"boolean bad", map[string]string{"preallocate": "yes"}, "Expected value to be either true or false", nil},
		// Kafka 4.3.1 knows none of these (asked of a 4.3.1 broker).
		{"message.format.version", map[string]string{"message.format.version": "3.0-IV1"}, "Unknown topic config name: message.format.version", nil},
		{"message.downconversion.enable", map[string]string{"message.downconversion.enable": "true"}, "Unknown topic config name: message.downconversion.enable", nil},
		{"message.timestamp.difference.max.ms", map[string]string{"message.timestamp.difference.max.ms": "1000"}, "Unknown topic config name: message.timestamp.difference.max.ms", nil},
		{"timestamp.after.max.ms default", nil, "", func(c LogConfig) bool { _, after := c.TimestampBounds(); return after == 3600000 }},
		// Kafka's ThrottledReplicaListValidator.
		{"throttled wildcard", map[string]string{"leader.replication.throttled.replicas": " * "}, "", nil},
		{"throttled list", map[string]string{"follower.replication.throttled.replicas": "0:1, 1:1"}, "", nil},
		{"throttled bad", map[string]string{"leader.replication.throttled.replicas": "0:x"}, "leader.replication.throttled.replicas must be the literal '*' or a list of replicas", nil},
		{"gzip level", map[string]string{"compression.gzip.level": "-1"}, "", nil},
		{"gzip level bad", map[string]string{"compression.gzip.level": "0"}, "Value must be between 1 and 9 or equal to -1", nil},
		{"compaction lags", map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)", nil},
		{"flush.messages", map[string]string{"flush.messages": "1", "flush.ms": "0"}, "", func(c LogConfig) bool { return c.FlushMessages == 1 && c.FlushMs == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ResolveLogConfig(DefaultLogConfig(), tc.ov)
			if tc.err != "" {
				if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.chk != nil && !tc.chk(c) {
				t.Fatalf("config %+v", c)
			}
		})
	}
	// Every Kafka topic config name is accepted with its default.
	for _, n := range TopicConfigNames() {
		def, _ := TopicConfigDef(n)
		if _, err := ResolveLogConfig(DefaultLogConfig(), map[string]string{n: def.Default}); err != nil {
			t.Errorf("%s=%q: %v", n, def.Default, err)
		}
	}
}

func TestCreateTopicErrors(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	mustCreate(t, s, "a.b", 1, nil)
	for _, tc := range []struct {
		name string
		n    int32
		ov   map[string]string
		want error
	}{
		{"a.b", 1, nil, ErrTopicExists},
		{"a_b", 1, nil, ErrInvalidTopic},
		{"bad name", 1, nil, ErrInvalidTopic},
		{"zero", 0, nil, ErrInvalidPartitions},
		{"huge", 1 << 30, nil, ErrTooManyPartitions},
		{"huge", 1 << 16, nil, ErrTooManyPartitions},
		{"cfg", 1, map[string]string{"nope": "1"}, ErrInvalidConfig},
	} {
		if _, err := s.CreateTopic(tc.name, tc.n, tc.ov, false); !errors.Is(err, tc.want) {
			t.Errorf("CreateTopic(%q, %d) = %v, want %v", tc.name, tc.n, err, tc.want)
		}
	}
	// validateOnly writes nothing.
	if _, err := s.CreateTopic("v", 3, nil, true); err != nil {
		t.Fatal(err)
	}
	if s.Topic("v") != nil {
		t.Fatal("validateOnly created the topic")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "v-0")); !os.IsNotExist(err) {
		t.Fatal("validateOnly created a directory")
	}
}

// TestCatalogPersistence: topics, ids, partition counts and configs come
// back after a restart, and the files are in Kafka's formats.
func TestCatalogPersistence(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	cluster := s.ClusterID()
	a := mustCreate(t, s, "alpha", 3, map[string]string{"cleanup.policy": "compact", "retention.ms": "1000"})
	b := mustCreate(t, s, "__consumer_offsets", 2, nil)
	if !b.Internal || a.Internal {
		t.Fatal("internal flag")
	}
	mustAppend(t, a.Partitions[1], mkBatch(t, 4, 1, 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	meta, _ := os.ReadFile(filepath.Join(e.dir, "meta.properties"))
	if !regexp.MustCompile(`(?s)^#\n#.*\ncluster.id=[A-Za-z0-9_-]{22}\ndirectory.id=[A-Za-z0-9_-]{22}\nnode.id=1\nversion=1\n$`).Match(meta) {
		t.Fatalf("meta.properties:\n%s", meta)
	}
	pm, _ := os.ReadFile(filepath.Join(e.dir, "alpha-1", "partition.metadata"))
	if string(pm) != "version: 0\ntopic_id: "+a.ID.String()+"\n" {
		t.Fatalf("partition.metadata: %q", pm)
	}
	rp, _ := os.ReadFile(filepath.Join(e.dir, "recovery-point-offset-checkpoint"))
	want := "0\n5\n__consumer_offsets 0 0\n__consumer_offsets 1 0\nalpha 0 0\nalpha 1 4\nalpha 2 0\n"
	if string(rp) != want {
		t.Fatalf("recovery-point-offset-checkpoint:\n%q\nwant\n%q", rp, want)
	}
	ls, _ := os.ReadFile(filepath.Join(e.dir, "log-start-offset-checkpoint"))
	if !strings.HasPrefix(string(ls), "0\n5\n") {
		t.Fatalf("log-start-offset-checkpoint %q", ls)
	}
	le, _ := os.ReadFile(filepath.Join(e.dir, "alpha-0", "leader-epoch-checkpoint"))
	if string(le) != "0\n0\n" {
		t.Fatalf("empty partition leader-epoch-checkpoint %q", le)
	}

	s = e.open()
	defer s.Close()
	if s.ClusterID() != cluster {
		t.Fatal("cluster id changed")
	}
	a2 := s.Topic("alpha")
	if a2 == nil || a2.ID != a.ID || len(a2.Partitions) != 3 || a2.Config.CleanupPolicy != "compact" || a2.Config.RetentionMs != 1000 || a2.Overrides["retention.ms"] != "1000" {
		t.Fatalf("alpha after restart: %+v", a2)
	}
	if s.TopicByID(a.ID) != a2 {
		t.Fatal("TopicByID")
	}
	if ts := s.Topics(); len(ts) != 2 || ts[0].Name != "__consumer_offsets" || ts[1].Name != "alpha" {
		t.Fatal("Topics")
	}
	if o := a2.Partitions[1].Offsets(); o.LogEndOffset != 4 {
		t.Fatalf("offsets %+v", o)
	}
}

func TestDataDirLock(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	defer s.Close()
	if _, err := Open(Config{Dir: e.dir, NodeID: 1}); err == nil {
		t.Fatal("second Open of a locked data dir succeeded")
	}
}

func TestNodeIDMismatch(t *testing.T) {
	e := newEnv(t)
	e.open().Close()
	if _, err := Open(Config{Dir: e.dir, NodeID: 2}); err == nil {
		t.Fatal("Open with another node.id succeeded")
	}
}

// TestDeleteTopic: the directory goes through Kafka's -delete rename and
// is removed; logs close and wake their waiters; the topic stays gone.
func TestDeleteTopic(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	tp := mustCreate(t, s, "gone", 2, nil)
	keep := mustCreate(t, s, "kept", 1, nil)
	l := tp.Partitions[0]
	mustAppend(t, l, mkBatch(t, 1, 1, 1))
	w := l.Wait()
	if err := s.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	<-w // woken
	<-l.Wait()
	if _, err := l.Read(0, 100, true); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Read after delete: %v", err)
	}
	if _, err := l.Append(mkBatch(t, 1, 1, 1)); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Append after delete: %v", err)
	}
	if s.Topic("gone") != nil || s.TopicByID(tp.ID) != nil {
		t.Fatal("topic still listed")
	}
	if err := s.DeleteTopic("gone"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v", err)
	}
	s.bg.Wait()
	entries, _ := os.ReadDir(e.dir)
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), "gone") {
			t.Fatalf("left behind %s", en.Name())
		}
	}
	mustAppend(t, keep.Partitions[0], mkBatch(t, 1, 1, 1))
	s.Close()
	// A -delete directory left by a crash is removed at start-up; a
	// partition directory the catalog does not know is set aside if it
	// holds records, removed if it holds none (a creation cut short).
	os.MkdirAll(filepath.Join(e.dir, "gone-0.0123456789abcdef0123456789abcdef-delete"), 0o755)
	os.MkdirAll(filepath.Join(e.dir, "orphan-0"), 0o755)
	os.WriteFile(filepath.Join(e.dir, "orphan-0", "00000000000000000000.log"), mkBatch(t, 1, 1, 1), 0o644)
	os.MkdirAll(filepath.Join(e.dir, "unborn-0"), 0o755)
	os.WriteFile(filepath.Join(e.dir, "unborn-0", "00000000000000000000.log"), nil, 0o644)
	s = e.open()
	defer s.Close()
	s.bg.Wait()
	if s.Topic("gone") != nil || s.Topic("kept") == nil {
		t.Fatal("catalog after restart")
	}
	entries, _ = os.ReadDir(e.dir)
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	joined := strings.Join(names, " ")
	if strings.Contains(joined, "-delete") || strings.Contains(joined, "unborn") ||
		!regexp.MustCompile(`orphan-0\.[0-9a-f]{32}-stray`).MatchString(joined) {
		t.Fatalf("data dir: %v", names)
	}
	// The name is free again.
	mustCreate(t, s, "gone", 1, nil)
}

func TestAlterTopicConfig(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	mustCreate(t, s, "t", 1, map[string]string{"retention.ms": "5"})
	if _, err := s.AlterTopicConfig("t", ReplaceConfigs(map[string]string{"bogus": "1"}), false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("bad config: %v", err)
	}
	if _, err := s.AlterTopicConfig("nope", ReplaceConfigs(nil), false); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", err)
	}
	tp, err := s.AlterTopicConfig("t", ReplaceConfigs(map[string]string{"flush.messages": "1"}), false)
	if err != nil || tp.Config.FlushMessages != 1 || tp.Config.RetentionMs != DefaultLogConfig().RetentionMs {
		t.Fatalf("%+v %v", tp, err)
	}
	if tp.Partitions[0].Config().FlushMessages != 1 {
		t.Fatal("log config not updated")
	}
	s.Close()
	s = e.open()
	defer s.Close()
	if c := s.Topic("t").Config; c.FlushMessages != 1 || c.RetentionMs != DefaultLogConfig().RetentionMs {
		t.Fatalf("after restart %+v", c)
	}
}

func TestAdvanceLogStartOffset(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	l := mustCreate(t, s, "t", 1, nil).Partitions[0]
	for i := 0; i < 3; i++ {
		mustAppend(t, l, mkBatch(t, 2, 1, 1))
	}
	if _, err := l.AdvanceLogStartOffset(7); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("past HW: %v", err)
	}
	if ls, err := l.AdvanceLogStartOffset(3); err != nil || ls != 3 {
		t.Fatalf("%d %v", ls, err)
	}
	if ls, _ := l.AdvanceLogStartOffset(1); ls != 3 {
		t.Fatal("moved back")
	}
	if _, err := l.Read(2, 1000, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if r, err := l.Read(3, 1000, true); err != nil || batchesIn(t, r.Records)[0].BaseOffset() != 2 || r.LogStartOffset != 3 {
		t.Fatalf("read at log start: %v", err)
	}
	s.Close()
	s = e.open()
	defer s.Close()
	if o := s.Topic("t").Partitions[0].Offsets(); o.LogStartOffset != 3 || o.HighWatermark != 6 {
		t.Fatalf("after restart %+v", o)
	}
}

// No request can leave a metadata file that start-up refuses: a change
// that would make the catalog, the dynamic broker configs or the client
// quotas larger than start-up reads is refused, and the store reopens.
func TestMetadataFilesBounded(t *testing.T) {
	e := newEnv(t)
	open := func() *Store {
		s, err := Open(Config{Dir: e.dir, NodeID: 1, FS: e.fs, Clock: e.clock, MaxMetadataFileBytes: 4096, Logger: zerolog.New(zerolog.NewTestWriter(t))})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
	s := open()
	big := strings.Repeat("0:1,", 2000) // 8000 bytes
	if _, err := s.CreateTopic("t", 1, map[string]string{"leader.replication.throttled.replicas": big}, false); !errors.Is(err, ErrMetadataTooLarge) {
		t.Fatalf("CreateTopic: %v", err)
	}
	mustCreate(t, s, "t", 1, nil)
	if _, err := s.AlterTopicConfig("t", ReplaceConfigs(map[string]string{"follower.replication.throttled.replicas": big}), false); !errors.Is(err, ErrMetadataTooLarge) {
		t.Fatalf("AlterTopicConfig: %v", err)
	}
	if err := s.AlterDynamicBrokerConfigs(false, ReplaceConfigs(map[string]string{"log.retention.ms": strings.Repeat("0", 5000) + "1000"}), false); !errors.Is(err, ErrMetadataTooLarge) {
		t.Fatalf("AlterDynamicBrokerConfigs: %v", err)
	}
	if s.Offline() != nil {
		t.Fatalf("offline: %v", s.Offline())
	}
	s.Close()
	s = open()
	defer s.Close()
	if tp := s.Topic("t"); tp == nil || len(tp.Overrides) != 0 {
		t.Fatalf("after restart: %+v", tp)
	}
}

// A deleted topic's checkpoint entries do not apply to a topic created
// again under its name: acknowledged, fsynced records of the new topic
// survive a crash (they were once hidden below the old log start offset).
func TestRecreatedTopicIgnoresOldCheckpoints(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	tp := mustCreate(t, s, "t", 1, nil)
	l := tp.Partitions[0]
	for i := 0; i < 10; i++ {
		mustAppend(t, l, mkBatch(t, 1, int64(1000+i), 10))
	}
	if _, err := l.AdvanceLogStartOffset(8); err != nil { // DeleteRecords
		t.Fatal(err)
	}
	if err := s.WriteCheckpoints(); err != nil { // periodic checkpoint
		t.Fatal(err)
	}
	if err := s.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	tp = mustCreate(t, s, "t", 1, map[string]string{"flush.messages": "1"})
	l = tp.Partitions[0]
	for i := 0; i < 5; i++ {
		mustAppend(t, l, mkBatch(t, 1, int64(2000+i), 10)) // acked after fsync
	}
	t.Logf("before crash: %+v", l.Offsets())
	s.abandon() // kill -9 within log.flush.offset.checkpoint.interval.ms
	s = e.open()
	defer s.Close()
	l2, _ := s.Log("t", 0)
	o := l2.Offsets()
	t.Logf("after restart: %+v", o)
	if o.LogStartOffset != 0 {
		t.Errorf("acknowledged records 0..%d of the new topic are below log start %d", o.LogEndOffset-1, o.LogStartOffset)
	}
}

// A catalog written by an older kcompatd, whose topic configs this one
// refuses (message.format.version and the throttled replica lists took any
// string before; Kafka 4 knows no message.format.version and wants
// segment.bytes of 1 MiB at least), still opens: the refused overrides are dropped, the
// others kept.
func TestCatalogWithOverridesNoLongerValid(t *testing.T) {
	e := newEnv(t)
	s := e.open()
	mustCreate(t, s, "t", 1, map[string]string{"retention.ms": "1000"})
	s.Close()
	// As 6fd5367 wrote it for CreateTopic("t", 1, {retention.ms: 1000,
	// message.format.version: foo, leader.replication.throttled.replicas: x}).
	catalog := filepath.Join(e.dir, catalogFile)
	data, err := os.ReadFile(catalog)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"retention.ms": "1000"`), []byte(`"leader.replication.throttled.replicas": "x", "message.format.version": "foo", "segment.bytes": "14", "retention.ms": "1000"`), 1)
	if !bytes.Contains(data, []byte("message.format.version")) {
		t.Fatalf("catalog not as expected: %s", data)
	}
	if err := os.WriteFile(catalog, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s = e.open()
	defer s.Close()
	tp := s.Topic("t")
	if tp == nil || tp.Config.RetentionMs != 1000 || len(tp.Overrides) != 1 {
		t.Fatalf("topic after open: %+v", tp)
	}
}
