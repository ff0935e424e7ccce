package offline

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kcompatd/kcompatd"
)

// TestBrokerDataDir: the data dir of a whole kcompatd broker, after a
// transactional producer and a consumer group used it, passes verify,
// and dump-log decodes its __consumer_offsets and __transaction_state.
func TestBrokerDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := kcompatd.DefaultConfig()
	cfg.LogDirs = dir
	cfg.Listeners = "PLAINTEXT://127.0.0.1:0"
	cfg.OffsetsTopicNumPartitions = 1
	cfg.TransactionStateLogNumPartitions = 1
	cfg.GroupInitialRebalanceDelayMs = 0
	b, err := kcompatd.New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seed := kgo.SeedBrokers(b.Addr().String())

	tx, err := kgo.NewClient(seed, kgo.TransactionalID("dump-txn"), kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{true, false} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := tx.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	tx.Close()

	cons, err := kgo.NewClient(seed, kgo.ConsumerGroup("dump-group"), kgo.ConsumeTopics("t"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 1; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	if r := VerifyDir(dir); len(r.Problems) != 0 || r.Partitions != 3 {
		t.Errorf("verify of the broker's data dir: %+v", r)
	}
	for _, tc := range []struct{ flag, part, want string }{
		{"--offsets-decoder", "__consumer_offsets-0", `key: {"type":"1","data":{"group":"dump-group","topic":"t","partition":0}} payload: {"version":`},
		{"--offsets-decoder", "__consumer_offsets-0", `"protocolType":"consumer","generation":1,`},
		{"--transaction-log-decoder", "__transaction_state-0", `key: {"type":"0","data":{"transactionalId":"dump-txn"}} payload: {"version":`},
		{"--print-data-log", "t-0", "endTxnMarker: ABORT coordinatorEpoch: "},
	} {
		var out, errw bytes.Buffer
		logs, _ := filepath.Glob(filepath.Join(dir, tc.part, "*.log"))
		if st := DumpLog(append([]string{tc.flag}, logs...), &out, &errw); st != ExitOK || strings.Contains(errw.String(), "Error") {
			t.Errorf("%s %s: status %d, stderr %q", tc.flag, tc.part, st, errw.String())
		}
		if o := out.String(); strings.Contains(o, "Error at offset") || strings.Contains(o, "Unknown record type") {
			t.Errorf("%s %s: a record did not decode:\n%s", tc.flag, tc.part, o)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s %s lacks %s:\n%s", tc.flag, tc.part, tc.want, out.String())
		}
	}
}
