package kcompatd

import (
	"testing"

	"github.com/kcompatd/kcompatd/coordinator/sharestate"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestShareStateConfig: the broker's defaults are the share coordinator's
// (Kafka's), and the properties reach it.
func TestShareStateConfig(t *testing.T) {
	if got, want := shareStateConfig(DefaultConfig()), sharestate.DefaultConfig(); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	cfg, _, err := ParseConfig(map[string]string{
		"share.coordinator.state.topic.num.partitions":           "3",
		"share.coordinator.snapshot.update.records.per.snapshot": "0",
		"share.coordinator.state.topic.compression.codec":        "4",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := shareStateConfig(cfg)
	if got.StateTopicPartitions != 3 || got.SnapshotUpdateRecordsPerSnapshot != 0 || got.Codec != recordbatch.Zstd {
		t.Errorf("%+v", got)
	}
	for _, bad := range []map[string]string{
		{"share.coordinator.snapshot.update.records.per.snapshot": "501"},
		{"share.coordinator.state.topic.compression.codec": "5"},
		{"share.coordinator.state.topic.num.partitions": "0"},
	} {
		if _, _, err := ParseConfig(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
