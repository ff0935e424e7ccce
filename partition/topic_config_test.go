package partition

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

func openDynStore(t *testing.T, dir string, static LogConfig) *Store {
	t.Helper()
	s, err := Open(Config{Dir: dir, NodeID: 1, Defaults: static, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDynamicBrokerConfigsPrecedence checks topic override > per-broker >
// cluster default > static, the logs following at once, and a restart
// keeping the dynamic configs.
func TestDynamicBrokerConfigsPrecedence(t *testing.T) {
	dir := t.TempDir()
	static := DefaultLogConfig()
	static.SegmentBytes = 9437184
	s := openDynStore(t, dir, static)
	if _, err := s.CreateTopic("plain", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic("over", 1, map[string]string{"segment.bytes": "3145728"}, false); err != nil {
		t.Fatal(err)
	}
	seg := func(topic string) int32 {
		t.Helper()
		tp := s.Topic(topic)
		for _, l := range tp.Partitions {
			if l.Config().SegmentBytes != tp.Config.SegmentBytes {
				t.Fatalf("%s: log and topic disagree", topic)
			}
		}
		return tp.Config.SegmentBytes
	}
	steps := []struct {
		perBroker   bool
		configs     map[string]string
		plain, over int32
	}{
		{false, map[string]string{"log.segment.bytes": "5242880", "log.cleanup.policy": "compact"}, 5242880, 3145728},
		{true, map[string]string{"log.segment.bytes": "4194304"}, 4194304, 3145728},
		{false, map[string]string{}, 4194304, 3145728},
		{true, nil, 9437184, 3145728},
		{false, map[string]string{"log.segment.bytes": "6291456"}, 6291456, 3145728},
	}
	for i, st := range steps {
		if err := s.AlterDynamicBrokerConfigs(st.perBroker, ReplaceConfigs(st.configs), false); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if p, o := seg("plain"), seg("over"); p != st.plain || o != st.over {
			t.Fatalf("step %d: segment.bytes plain=%d over=%d, want %d %d", i, p, o, st.plain, st.over)
		}
	}
	if !s.Topic("plain").Config.Delete() || s.Topic("plain").Config.Compact() {
		t.Errorf("replaced cluster default still applies log.cleanup.policy")
	}
	// validateOnly and bad values change nothing.
	if err := s.AlterDynamicBrokerConfigs(false, ReplaceConfigs(map[string]string{"log.segment.bytes": "7340032"}), true); err != nil {
		t.Fatal(err)
	}
	err := s.AlterDynamicBrokerConfigs(false, ReplaceConfigs(map[string]string{"log.segment.bytes": "1"}), false)
	if !errors.Is(err, ErrInvalidConfig) || err.Error() != "Invalid value 1 for configuration log.segment.bytes: Value must be at least 1048576" {
		t.Fatalf("bad value: %v", err)
	}
	if seg("plain") != 6291456 {
		t.Fatalf("validateOnly or a failed alter changed the config")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openDynStore(t, dir, static)
	defer s.Close()
	if seg("plain") != 6291456 || seg("over") != 3145728 || s.Defaults().SegmentBytes != 6291456 {
		t.Fatalf("after restart: plain=%d over=%d defaults=%d", seg("plain"), seg("over"), s.Defaults().SegmentBytes)
	}
	def, br := s.DynamicBrokerConfigs()
	if def["log.segment.bytes"] != "6291456" || len(br) != 0 {
		t.Fatalf("after restart: %v %v", def, br)
	}
}

// TestDynamicBrokerConfigsFileInvalidEntry checks that an entry that no
// longer validates is dropped at Open rather than failing it.
func TestDynamicBrokerConfigsFileInvalidEntry(t *testing.T) {
	dir := t.TempDir()
	data := `{"version":1,"cluster_default":{"log.segment.bytes":"nope","log.retention.ms":"1000"},"broker":{}}`
	if err := os.WriteFile(filepath.Join(dir, dynamicBrokerConfigFile), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openDynStore(t, dir, LogConfig{})
	defer s.Close()
	if d := s.Defaults(); d.RetentionMs != 1000 || d.SegmentBytes != DefaultLogConfig().SegmentBytes {
		t.Fatalf("defaults %+v", d)
	}
}

// TestDynamicBrokerConfigsConflictWithTopic checks that a broker default
// a topic's overrides conflict with is refused, so that the topic can
// still be opened after a restart.
func TestDynamicBrokerConfigsConflictWithTopic(t *testing.T) {
	s := openDynStore(t, t.TempDir(), LogConfig{})
	defer s.Close()
	if _, err := s.CreateTopic("lag", 1, map[string]string{"min.compaction.lag.ms": "100"}, false); err != nil {
		t.Fatal(err)
	}
	err := s.AlterDynamicBrokerConfigs(false, ReplaceConfigs(map[string]string{"log.cleaner.max.compaction.lag.ms": "50"}), false)
	if !errors.Is(err, ErrInvalidConfig) || err.Error() != "topic lag: conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms (50)" {
		t.Fatalf("got %v", err)
	}
	if def, _ := s.DynamicBrokerConfigs(); len(def) != 0 {
		t.Fatalf("refused change stored: %v", def)
	}
}
