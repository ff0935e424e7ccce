package offline

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/cleaner"
	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

var fixtureStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const (
	txnProducerID   = 4000
	txnCoordEpoch   = 7
	fixtureSegBytes = "300" // the compacted topic rolls after about every batch
)

// fixture is a data dir written by the partition package (and cleaned by
// the cleaner): topic "codecs" with one batch per codec and an index
// entry for every batch but the first, "txn" with a committed and an
// aborted transaction, and "compacted" (cleanup.policy=compact) after a
// cleaner pass, with a tombstone. The store is closed cleanly, so the
// checkpoints and producer snapshots are there too.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewManual(fixtureStart)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	s, err := partition.Open(partition.Config{Dir: dir, NodeID: 1, Clock: clk, Logger: log})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	now := func() int64 { return clk.Now().UnixMilli() }
	mustLog := func(name string, ov map[string]string) *partition.Log {
		t.Helper()
		tp, err := s.CreateTopic(name, 1, ov, false)
		if err != nil {
			t.Fatalf("CreateTopic(%s): %v", name, err)
		}
		return tp.Partitions[0]
	}
	appendBatch := func(l *partition.Log, spec recordbatch.BatchSpec, recs []recordbatch.Record) {
		t.Helper()
		if spec.BaseTimestamp == 0 {
			spec.BaseTimestamp = now()
		}
		b, err := recordbatch.Build(spec, recs)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if _, err := l.Append(b); err != nil {
			t.Fatalf("Append to %s: %v", l.Topic(), err)
		}
		clk.Advance(time.Millisecond)
	}
	plain := recordbatch.BatchSpec{ProducerID: recordbatch.NoProducerID, ProducerEpoch: recordbatch.NoProducerEpoch, BaseSequence: recordbatch.NoSequence}

	codecs := mustLog("codecs", map[string]string{"index.interval.bytes": "1"})
	for i, c := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		spec := plain
		spec.Codec = c
		appendBatch(codecs, spec, []recordbatch.Record{
			{Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%s-%s", c, bytes.Repeat([]byte("a"), 40))},
			{OffsetDelta: 1, TimestampDelta: 1, Value: []byte("no key")},
			{OffsetDelta: 2, TimestampDelta: 2, Key: []byte("h"), Value: []byte("with headers"),
				Headers: []recordbatch.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2"}}},
		})
	}

	txn := mustLog("txn", nil)
	seq := int32(0)
	for _, commit := range []bool{true, false} {
		spec := plain
		spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = txnProducerID, 0, seq, true
		appendBatch(txn, spec, []recordbatch.Record{
			{Key: []byte("tk"), Value: fmt.Appendf(nil, "txn-%t-0", commit)},
			{OffsetDelta: 1, Key: []byte("tk"), Value: fmt.Appendf(nil, "txn-%t-1", commit)},
		})
		seq += 2
		if _, err := txn.WriteTxnMarker(partition.TxnMarker{ProducerID: txnProducerID, ProducerEpoch: 0, CoordinatorEpoch: txnCoordEpoch, Commit: commit}); err != nil {
			t.Fatalf("WriteTxnMarker: %v", err)
		}
		clk.Advance(time.Millisecond)
	}

	compacted := mustLog("compacted", map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": fixtureSegBytes})
	for round := 0; round < 4; round++ {
		var recs []recordbatch.Record
		for i, k := range []string{"a", "b", "c"} {
			r := recordbatch.Record{OffsetDelta: int32(i), Key: []byte(k), Value: fmt.Appendf(nil, "%s-%d-%s", k, round, bytes.Repeat([]byte("x"), 30))}
			if round == 2 && k == "b" {
				r.Value = nil
			}
			recs = append(recs, r)
		}
		appendBatch(compacted, plain, recs)
	}
	if n := len(compacted.Segments()); n < 3 {
		t.Fatalf("compacted has %d segments, want at least 3 (segment.bytes %s)", n, fixtureSegBytes)
	}
	cl := cleaner.New(s, cleaner.Config{Clock: clk, Logger: log})
	if ok, err := cl.CleanLog(partition.TopicPartition{Topic: "compacted", Partition: 0}); !ok || err != nil {
		t.Fatalf("CleanLog = %v, %v", ok, err)
	}
	cl.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return dir
}

// copyDir copies a fixture so that a test may damage it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// segmentFiles lists a partition dir's files with a suffix, sorted.
func segmentFiles(t *testing.T, dir, suffix string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+suffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
