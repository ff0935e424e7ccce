package coordinator

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
)

// TestCommitOnOfflineLogDir: an offset commit whose __consumer_offsets
// write fails is not acknowledged (NOT_COORDINATOR, Kafka's mapping of
// KAFKA_STORAGE_ERROR for commits), and neither is any commit after it,
// the log dir being offline.
func TestCommitOnOfflineLogDir(t *testing.T) {
	fsys := memfs.New()
	clk := clock.NewManual(epoch)
	st, err := partition.Open(partition.Config{Dir: "/data", FS: fsys, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.OffsetsTopicPartitions = 1
	cfg.Clock = clk
	cfg.Logger = zerolog.Nop()
	c, err := New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Close()
		st.Close()
	}()
	commit := func(off int64) int16 {
		codes := c.CommitOffsets(context.Background(), 8, "g", -1, "", nil,
			[]CommitPartition{{Topic: "t", Partition: 0, Offset: off, LeaderEpoch: -1, CommitTimestamp: clk.Now().UnixMilli(), ExpireTimestamp: -1}})
		return codes[0]
	}
	if code := commit(1); code != 0 {
		t.Fatalf("commit before the fault: %v", kerr.ErrorForCode(code))
	}
	fsys.Inject(&memfs.Fault{Kind: memfs.ShortWrite, At: 0, Match: memfs.HasSuffix(".log")})
	if code := commit(2); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit with a failing write: %v", kerr.ErrorForCode(code))
	}
	if !fsys.Fired() {
		t.Fatal("the commit wrote nothing")
	}
	if code := commit(3); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit with the log dir offline: %v", kerr.ErrorForCode(code))
	}
	if st.Offline() == nil {
		t.Fatal("store online after a failed write")
	}
}
