package cleaner

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/internal/vfs"
	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

var testStart = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

type env struct {
	t       testing.TB
	dir     string
	fs      vfs.FS
	clock   *clock.Manual
	store   *partition.Store
	cleaner *Cleaner
	ccfg    Config
	quiet   bool
}

func newTestEnv(t testing.TB, fsys vfs.FS) *env {
	t.Helper()
	if fsys == nil {
		fsys = vfs.OS{}
	}
	e := &env{t: t, dir: t.TempDir(), fs: fsys, clock: clock.NewManual(testStart), ccfg: DefaultConfig()}
	if _, ok := fsys.(vfs.OS); !ok {
		e.dir = "/data"
	}
	if m, ok := fsys.(*memfs.FS); ok {
		// File modification times on the test's clock, as Kafka's would
		// be on a real one: retention and min lag judge segments without
		// timestamps by them.
		m.SetNow(e.clock.Now)
	}
	return e
}

func (e *env) logger() zerolog.Logger {
	if e.quiet {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.InfoLevel)
}

func (e *env) open() {
	e.t.Helper()
	s, err := partition.Open(partition.Config{Dir: e.dir, NodeID: 1, FS: e.fs, Clock: e.clock, Logger: e.logger()})
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.store = s
	cfg := e.ccfg
	cfg.Clock = e.clock
	cfg.Logger = e.logger()
	e.cleaner = New(s, cfg)
}

func (e *env) close() {
	e.t.Helper()
	e.cleaner.Close()
	if err := e.store.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
}

// topic creates a compacted topic with one partition; overrides add to
// cleanup.policy=compact.
func (e *env) topic(name string, ov map[string]string) *partition.Log {
	e.t.Helper()
	o := map[string]string{"cleanup.policy": "compact"}
	for k, v := range ov {
		o[k] = v
	}
	tp, err := e.store.CreateTopic(name, 1, o, false)
	if err != nil {
		e.t.Fatalf("CreateTopic: %v", err)
	}
	return tp.Partitions[0]
}

func (e *env) log(name string) *partition.Log {
	e.t.Helper()
	l, err := e.store.Log(name, 0)
	if err != nil {
		e.t.Fatalf("Log: %v", err)
	}
	return l
}

func (e *env) now() int64 { return e.clock.Now().UnixMilli() }

// keyWrittenThrice creates topic t, one batch per segment, with key a
// written three times: a log with something to clean.
func (e *env) keyWrittenThrice() (*partition.Log, partition.TopicPartition) {
	e.t.Helper()
	l := e.topic("t", oneBatchPerSegment)
	e.appendRecs(l, plain, kv("a", "1"))
	e.appendRecs(l, plain, kv("a", "2"))
	e.appendRecs(l, plain, kv("a", "3"))
	return l, tpOf(l)
}

// rec is a record as a test writes and reads it. Value nil is a
// tombstone; Key nil a keyless record.
type rec struct {
	Offset    int64
	Key       []byte
	Value     []byte
	Timestamp int64
}

func (r rec) String() string {
	v := "<nil>"
	if r.Value != nil {
		v = string(r.Value)
	}
	return fmt.Sprintf("%d:%s=%s@%d", r.Offset, r.Key, v, r.Timestamp)
}

func kv(k, v string) rec {
	r := rec{Key: []byte(k)}
	if v != "-" {
		r.Value = []byte(v)
	}
	return r
}

// batchOpts are a test batch's header fields.
type batchOpts struct {
	codec         recordbatch.Codec
	pid           int64
	epoch         int16
	seq           int32
	transactional bool
}

var plain = batchOpts{pid: -1, epoch: -1, seq: -1}

// appendRecs appends one batch of records with timestamps now, now+1, ...
func (e *env) appendRecs(l *partition.Log, o batchOpts, recs ...rec) int64 {
	e.t.Helper()
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: r.Key, Value: r.Value}
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{Codec: o.codec, BaseTimestamp: e.now(), ProducerID: o.pid,
		ProducerEpoch: o.epoch, BaseSequence: o.seq, Transactional: o.transactional}, rs)
	if err != nil {
		e.t.Fatal(err)
	}
	// The workloads pick sequence numbers freely; as an internal append
	// the producer epoch is still checked but sequences are not.
	res, err := l.AppendWithOrigin(b, recordbatch.OriginInternal)
	if err != nil {
		e.t.Fatalf("Append: %v", err)
	}
	return res.BaseOffset
}

func (e *env) appendMarker(l *partition.Log, pid int64, epoch int16, commit bool) int64 {
	e.t.Helper()
	b, err := recordbatch.BuildEndTxnMarker(0, 0, e.now(), pid, epoch, recordbatch.EndTxnMarker{Commit: commit})
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := l.Append(b)
	if err != nil {
		e.t.Fatalf("Append marker: %v", err)
	}
	return res.BaseOffset
}

// readBatches returns every batch from the log start offset to the high
// watermark, each checked (CRC, records).
func readBatches(t testing.TB, l *partition.Log) []recordbatch.Header {
	t.Helper()
	var out []recordbatch.Header
	off := l.Offsets().LogStartOffset
	for i := 0; i < 1_000_000; i++ {
		r, err := l.Read(off, 1<<20, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(r.Records) == 0 {
			return out
		}
		b := r.Records
		for len(b) > 0 {
			h, err := recordbatch.ParseHeader(b)
			if err != nil {
				t.Fatalf("ParseHeader: %v", err)
			}
			if err := h.CheckCRC(); err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset(), err)
			}
			if h.LastOffset() >= off {
				out = append(out, h[:h.Size()])
				off = h.LastOffset() + 1
			}
			b = b[h.Size():]
		}
	}
	t.Fatal("readBatches: too many reads")
	return nil
}

// readRecs returns every data record from the log start offset to the
// high watermark.
func readRecs(t testing.TB, l *partition.Log) []rec {
	t.Helper()
	var out []rec
	for _, h := range readBatches(t, l) {
		if h.Control() {
			continue
		}
		err := recordbatch.ForEachRecord(h, 1<<26, func(r recordbatch.Record) error {
			ts := h.BaseTimestamp() + r.TimestampDelta
			out = append(out, rec{Offset: h.BaseOffset() + int64(r.OffsetDelta), Key: r.Key, Value: r.Value, Timestamp: ts})
			return nil
		})
		if err != nil {
			t.Fatalf("records of batch %d: %v", h.BaseOffset(), err)
		}
	}
	return out
}

func recsString(rs []rec) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("%d:%s=%s ", r.Offset, r.Key, func() string {
			if r.Value == nil {
				return "<nil>"
			}
			return string(r.Value)
		}())
	}
	return s
}

// survivors is recsString without offsets, for short expectations.
func survivors(rs []rec) string {
	s := ""
	for _, r := range rs {
		v := "-"
		if r.Value != nil {
			v = string(r.Value)
		}
		s += fmt.Sprintf("%s=%s ", r.Key, v)
	}
	return s
}

func tpOf(l *partition.Log) partition.TopicPartition {
	return partition.TopicPartition{Topic: l.Topic(), Partition: l.Partition()}
}

// cleanAll runs passes on l until the checkpoint stops moving.
func (e *env) cleanAll(l *partition.Log) int {
	e.t.Helper()
	n := 0
	for i := 0; i < 10000; i++ {
		before := e.cleaner.Checkpoint(tpOf(l))
		ok, err := e.cleaner.CleanLog(tpOf(l))
		if err != nil {
			e.t.Fatalf("CleanLog: %v", err)
		}
		if !ok || e.cleaner.Checkpoint(tpOf(l)) == before {
			return n
		}
		n++
	}
	e.t.Fatal("cleanAll: no end")
	return n
}
