package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// memLog is an in-memory fetchLog: whole batches, a high watermark at the
// end of the last batch, and a Wait channel closed by each append. It
// counts reads and signals each Wait call, so tests can follow a long poll
// without sleeping.
type memLog struct {
	mu        sync.Mutex
	batches   []memBatch
	data      []byte // the batches, back to back, as in a segment
	logStart  int64
	lso       int64 // -1: the high watermark
	epoch     int32
	wait      chan struct{}
	readErr   error
	gone      bool // Wait returns a closed channel for good
	reads     int
	waitCalls chan struct{} // one token per Wait call, dropped when full
}

type memBatch struct {
	base, last int64
	pos, size  int // in memLog.data
}

func newMemLog() *memLog {
	return &memLog{lso: -1, wait: make(chan struct{}), waitCalls: make(chan struct{}, 64)}
}

// fakeBatch is size bytes that look like a batch as far as a fetch looks:
// base offset, batch length, the rest a pattern. Fetch never decodes more.
func fakeBatch(base int64, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(size-12))
	for i := 12; i < size; i++ {
		b[i] = byte(i)
	}
	if size >= 27 {
		binary.BigEndian.PutUint32(b[23:], 0) // lastOffsetDelta
	}
	return b
}

// append adds a batch of n records taking size bytes and wakes waiters.
func (l *memLog) append(n int64, size int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	base := l.hwLocked()
	l.batches = append(l.batches, memBatch{base: base, last: base + n - 1, pos: len(l.data), size: size})
	l.data = append(l.data, fakeBatch(base, size)...)
	close(l.wait)
	l.wait = make(chan struct{})
}

func (l *memLog) hwLocked() int64 {
	if len(l.batches) == 0 {
		return l.logStart
	}
	return l.batches[len(l.batches)-1].last + 1
}

func (l *memLog) offsetsLocked() partition.Offsets {
	hw := l.hwLocked()
	lso := hw
	if l.lso >= 0 {
		lso = l.lso
	}
	return partition.Offsets{LogStartOffset: l.logStart, HighWatermark: hw, LastStableOffset: lso, LogEndOffset: hw}
}

// ReadWith reads as partition.Log.ReadWith does, from the batch metadata:
// ReadCommitted stops at the first batch whose last offset is at or past
// the LSO. It never calls alloc, and lists no aborted transactions.
func (l *memLog) ReadWith(offset int64, maxBytes int32, minOne bool, iso partition.Isolation, _ func(int) []byte) (partition.ReadResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	if l.readErr != nil {
		return partition.ReadResult{}, l.readErr
	}
	off := l.offsetsLocked()
	if offset < off.LogStartOffset || offset > off.HighWatermark {
		return partition.ReadResult{}, partition.ErrOffsetOutOfRange
	}
	// Whole batches from the one holding offset, returned as a slice of
	// the log's bytes (no copy), as a read into a buffer would be.
	start, end := -1, -1
	for _, b := range l.batches {
		if b.last < offset {
			continue
		}
		if iso == partition.ReadCommitted && b.last >= off.LastStableOffset {
			break
		}
		if start < 0 {
			start, end = b.pos, b.pos
		}
		if end-start+b.size > int(maxBytes) && !(minOne && end == start) {
			break
		}
		end = b.pos + b.size
	}
	var out []byte
	if start >= 0 && end > start {
		out = l.data[start:end:end]
	}
	return partition.ReadResult{Records: out, Offsets: off}, nil
}

func (l *memLog) Offsets() partition.Offsets {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.offsetsLocked()
}

func (l *memLog) Wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.waitCalls <- struct{}{}:
	default:
	}
	if l.gone {
		select {
		case <-l.wait:
		default:
			close(l.wait)
		}
	}
	return l.wait
}

func (l *memLog) LeaderEpoch() int32 { return l.epoch }

func (l *memLog) readCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads
}

// memCatalog resolves topics to memLogs.
type memTopic struct {
	id   [16]byte
	logs []*memLog
}

type memCatalog map[string]*memTopic

func (c memCatalog) resolve(usesTopicIDs bool, key sessionKey) fetchTarget {
	t := fetchTarget{topic: key.topic, topicID: key.topicID}
	var mt *memTopic
	if usesTopicIDs {
		for name, m := range c {
			if m.id == key.topicID {
				mt, t.topic = m, name
			}
		}
		if mt == nil {
			t.errCode = kerr.UnknownTopicID.Code
			return t
		}
	} else if mt = c[key.topic]; mt == nil {
		t.errCode = kerr.UnknownTopicOrPartition.Code
		return t
	}
	if key.partition < 0 || int(key.partition) >= len(mt.logs) {
		t.errCode = kerr.UnknownTopicOrPartition.Code
		return t
	}
	t.log = mt.logs[key.partition]
	return t
}

// notifyClock is a manual clock that reports each timer it makes, so a
// test knows a long poll is about to block.
type notifyClock struct {
	*clock.Manual
	timers chan time.Duration
}

func (c notifyClock) NewTimer(d time.Duration) clock.Timer {
	t := c.Manual.NewTimer(d)
	c.timers <- d
	return t
}

func newFetchTestServer(t testing.TB) (*Server, notifyClock) {
	clk := notifyClock{clock.NewManual(time.Unix(1_700_000_000, 0)), make(chan time.Duration, 16)}
	s := &Server{
		cfg:           Config{NodeID: 3, AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092},
		log:           zerolog.New(zerolog.NewTestWriter(t)),
		clock:         clk,
		fetchSessions: newFetchSessions(Config{}),
	}
	return s, clk
}

// fetchReq builds a consumer's fetch request at version v.
type fetchPart struct {
	topic     string
	partition int32
	offset    int64
	maxBytes  int32
	epoch     int32 // CurrentLeaderEpoch
}

func fetchReq(v int16, cat memCatalog, parts ...fetchPart) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = v
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	for _, p := range parts {
		var tt *kmsg.FetchRequestTopic
		if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == p.topic {
			tt = &req.Topics[n-1]
		} else {
			nt := kmsg.NewFetchRequestTopic()
			nt.Topic = p.topic
			if m := cat[p.topic]; m != nil {
				nt.TopicID = m.id
			}
			req.Topics = append(req.Topics, nt)
			tt = &req.Topics[len(req.Topics)-1]
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.partition
		rp.FetchOffset = p.offset
		rp.PartitionMaxBytes = p.maxBytes
		if rp.PartitionMaxBytes == 0 {
			rp.PartitionMaxBytes = 1 << 20
		}
		rp.CurrentLeaderEpoch = p.epoch
		tt.Partitions = append(tt.Partitions, rp)
	}
	return req
}

// roundTrip encodes the request and the response at their version and
// decodes them again, so tests see what goes over the wire.
func serveFetchWire(t testing.TB, s *Server, cat memCatalog, ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	t.Helper()
	wireReq := kmsg.NewPtrFetchRequest()
	wireReq.Version = req.Version
	if err := wireReq.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatalf("request v%d does not decode: %v", req.Version, err)
	}
	kr, err := s.serveFetch(&Request{Ctx: ctx, Version: req.Version, Body: wireReq}, cat.resolve)
	if err != nil {
		return nil, err
	}
	resp := kr.(*kmsg.FetchResponse)
	if resp.Version != req.Version {
		t.Fatalf("response version %d for request v%d", resp.Version, req.Version)
	}
	got := kmsg.NewPtrFetchResponse()
	got.Version = req.Version
	if err := got.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("response v%d does not decode: %v", req.Version, err)
	}
	return got, nil
}

func mustFetch(t testing.TB, s *Server, cat memCatalog, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	resp, err := serveFetchWire(t, s, cat, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func onePartition(t testing.TB, resp *kmsg.FetchResponse) *kmsg.FetchResponseTopicPartition {
	t.Helper()
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("want one topic with one partition, got %+v", resp.Topics)
	}
	return &resp.Topics[0].Partitions[0]
}

// TestFetchVersions checks, version by version, the fields each version
// adds, as a client decodes them.
func TestFetchVersions(t *testing.T) {
	for v := int16(4); v <= 18; v++ {
		t.Run("v"+strconv.Itoa(int(v)), func(t *testing.T) {
			s, _ := newFetchTestServer(t)
			l := newMemLog()
			l.logStart = 2
			l.append(3, 100) // offsets 2-4
			l.append(2, 80)  // offsets 5-6
			cat := memCatalog{"a": {id: [16]byte{0xa}, logs: []*memLog{l}}}
			req := fetchReq(v, cat, fetchPart{topic: "a", offset: 3})
			req.SessionEpoch = 0 // ask for a session; ignored before v7
			resp := mustFetch(t, s, cat, req)

			if resp.ErrorCode != 0 {
				t.Fatalf("error code %d", resp.ErrorCode)
			}
			if v >= 7 && resp.SessionID <= 0 {
				t.Errorf("v%d: no session id", v)
			}
			if v < 7 && (resp.SessionID != 0 || s.fetchSessions.len() != 0) {
				t.Errorf("v%d: session %d created", v, resp.SessionID)
			}
			if v >= 13 {
				if resp.Topics[0].TopicID != [16]byte{0xa} {
					t.Errorf("v%d: topic id %x", v, resp.Topics[0].TopicID)
				}
			} else if resp.Topics[0].Topic != "a" {
				t.Errorf("v%d: topic %q", v, resp.Topics[0].Topic)
			}
			p := onePartition(t, resp)
			if p.ErrorCode != 0 || p.HighWatermark != 7 || p.LastStableOffset != 7 {
				t.Errorf("v%d: error %d hw %d lso %d", v, p.ErrorCode, p.HighWatermark, p.LastStableOffset)
			}
			wantLogStart := int64(-1) // not on the wire: the decoder's default
			if v >= 5 {
				wantLogStart = 2
			}
			if p.LogStartOffset != wantLogStart {
				t.Errorf("v%d: log start %d, want %d", v, p.LogStartOffset, wantLogStart)
			}
			if p.AbortedTransactions != nil {
				t.Errorf("v%d: read_uncommitted aborted transactions not null: %v", v, p.AbortedTransactions)
			}
			if p.PreferredReadReplica != -1 {
				t.Errorf("v%d: preferred read replica %d", v, p.PreferredReadReplica)
			}
			// Fetch offset 3 is inside the first batch: both batches, whole.
			if want := append(fakeBatch(2, 100), fakeBatch(5, 80)...); !bytes.Equal(p.RecordBatches, want) {
				t.Errorf("v%d: records %d bytes, want %d", v, len(p.RecordBatches), len(want))
			}
		})
	}
}

// TestFetchLeaderEpochByVersion: CurrentLeaderEpoch exists from v9; v16
// adds CurrentLeader and NodeEndpoints to a fenced partition.
func TestFetchLeaderEpochByVersion(t *testing.T) {
	for _, tc := range []struct {
		v        int16
		epoch    int32 // request's CurrentLeaderEpoch; ours is 5
		wantCode int16
	}{
		{8, 1, 0}, // not on the wire before v9
		{9, 1, kerr.FencedLeaderEpoch.Code},
		{9, 9, kerr.UnknownLeaderEpoch.Code},
		{9, 5, 0},
		{9, -1, 0},
		{15, 4, kerr.FencedLeaderEpoch.Code},
		{16, 4, kerr.FencedLeaderEpoch.Code},
		{16, 6, kerr.UnknownLeaderEpoch.Code},
		{18, 4, kerr.FencedLeaderEpoch.Code},
	} {
		s, _ := newFetchTestServer(t)
		l := newMemLog()
		l.epoch = 5
		l.append(1, 70)
		cat := memCatalog{"a": {id: [16]byte{1}, logs: []*memLog{l}}}
		resp := mustFetch(t, s, cat, fetchReq(tc.v, cat, fetchPart{topic: "a", epoch: tc.epoch}))
		p := onePartition(t, resp)
		if p.ErrorCode != tc.wantCode {
			t.Errorf("v%d epoch %d: code %d, want %d", tc.v, tc.epoch, p.ErrorCode, tc.wantCode)
			continue
		}
		if tc.wantCode != 0 {
			if p.HighWatermark != -1 || p.LogStartOffset != -1 && tc.v >= 5 || len(p.RecordBatches) != 0 {
				t.Errorf("v%d: failed partition hw %d log start %d records %d", tc.v, p.HighWatermark, p.LogStartOffset, len(p.RecordBatches))
			}
		}
		wantLeader := tc.v >= 16 && tc.wantCode == kerr.FencedLeaderEpoch.Code
		gotLeader := p.CurrentLeader.LeaderID == 3 && p.CurrentLeader.LeaderEpoch == 5
		if wantLeader != gotLeader || (p.CurrentLeader.LeaderID != -1) != wantLeader {
			t.Errorf("v%d epoch %d: current leader %+v", tc.v, tc.epoch, p.CurrentLeader)
		}
		if wantLeader != (len(resp.Brokers) == 1) ||
			wantLeader && (resp.Brokers[0].NodeID != 3 || resp.Brokers[0].Host != "127.0.0.1" || resp.Brokers[0].Port != 9092) {
			t.Errorf("v%d epoch %d: node endpoints %+v", tc.v, tc.epoch, resp.Brokers)
		}
	}
}

// TestFetchLimits: whole batches, PartitionMaxBytes, MaxBytes, and at
// least one batch from the first partition that has data.
func TestFetchLimits(t *testing.T) {
	mk := func() memCatalog {
		l0, l1, l2 := newMemLog(), newMemLog(), newMemLog()
		for range 3 {
			l0.append(10, 1000)
			l1.append(10, 1000)
			l2.append(10, 1000)
		}
		return memCatalog{"a": {logs: []*memLog{l0, l1, l2}}}
	}
	for _, tc := range []struct {
		name     string
		maxBytes int32   // response
		partMax  []int32 // per partition
		offsets  []int64
		want     []int // record bytes per partition
	}{
		{"everything fits", 1 << 20, []int32{1 << 20, 1 << 20, 1 << 20}, []int64{0, 0, 0}, []int{3000, 3000, 3000}},
		{"partition max bytes, whole batches", 1 << 20, []int32{2500, 1999, 1000}, []int64{0, 0, 0}, []int{2000, 1000, 1000}},
		{"response max bytes shared in order", 4500, []int32{1 << 20, 1 << 20, 1 << 20}, []int64{0, 0, 0}, []int{3000, 1000, 0}},
		{"first batch even if larger than partition max", 1 << 20, []int32{10, 10, 10}, []int64{0, 0, 0}, []int{1000, 0, 0}},
		{"first batch even if larger than max bytes", 10, []int32{1 << 20, 1 << 20, 1 << 20}, []int64{0, 0, 0}, []int{1000, 0, 0}},
		{"at least one from the first partition with data", 10, []int32{1 << 20, 1 << 20, 1 << 20}, []int64{30, 25, 0}, []int{0, 1000, 0}},
		{"zero max bytes still one batch", 0, []int32{0, 0, 0}, []int64{0, 0, 0}, []int{1000, 0, 0}},
		{"negative limits read as zero", -5, []int32{-1, -1, -1}, []int64{0, 0, 0}, []int{1000, 0, 0}},
		{"mid-batch offset returns the whole batch", 1 << 20, []int32{1000, 1000, 1000}, []int64{15, 29, 9}, []int{1000, 1000, 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newFetchTestServer(t)
			cat := mk()
			var parts []fetchPart
			for i := range 3 {
				parts = append(parts, fetchPart{topic: "a", partition: int32(i), offset: tc.offsets[i], maxBytes: tc.partMax[i]})
			}
			req := fetchReq(12, cat, parts...)
			req.MaxBytes = tc.maxBytes
			for i := range req.Topics[0].Partitions {
				req.Topics[0].Partitions[i].PartitionMaxBytes = tc.partMax[i]
			}
			resp := mustFetch(t, s, cat, req)
			for i, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || len(p.RecordBatches) != tc.want[i] || len(p.RecordBatches)%1000 != 0 {
					t.Errorf("partition %d: code %d, %d bytes, want %d", i, p.ErrorCode, len(p.RecordBatches), tc.want[i])
				}
				if p.HighWatermark != 30 {
					t.Errorf("partition %d: hw %d", i, p.HighWatermark)
				}
			}
		})
	}
}

// TestFetchPartitionErrors: per-partition errors, their fields, and their
// place in the response (unresolved partitions after the ones read).
func TestFetchPartitionErrors(t *testing.T) {
	s, _ := newFetchTestServer(t)
	l := newMemLog()
	l.logStart = 10
	l.append(5, 200) // 10-14
	broken := newMemLog()
	broken.readErr = errors.New("disk on fire")
	storage := newMemLog()
	storage.readErr = partition.ErrStorage
	cat := memCatalog{"a": {id: [16]byte{1}, logs: []*memLog{l, broken, storage}}}

	req := fetchReq(12, cat,
		fetchPart{topic: "missing", partition: 0},
		fetchPart{topic: "a", partition: 0, offset: 9},  // below log start
		fetchPart{topic: "a", partition: 7},             // no such partition
		fetchPart{topic: "a", partition: 0, offset: 16}, // repeated: last wins, first place kept
		fetchPart{topic: "a", partition: 1},
		fetchPart{topic: "a", partition: 2},
	)
	resp := mustFetch(t, s, cat, req)
	type got struct {
		topic string
		part  int32
		code  int16
		hw    int64
		ls    int64
		abort bool // aborted list non-null
	}
	var all []got
	for _, tt := range resp.Topics {
		for _, p := range tt.Partitions {
			all = append(all, got{tt.Topic, p.Partition, p.ErrorCode, p.HighWatermark, p.LogStartOffset, p.AbortedTransactions != nil})
		}
	}
	want := []got{
		{"a", 0, kerr.OffsetOutOfRange.Code, -1, -1, false},
		{"a", 1, kerr.UnknownServerError.Code, -1, -1, false},
		{"a", 2, kerr.KafkaStorageError.Code, -1, -1, false},
		{"missing", 0, kerr.UnknownTopicOrPartition.Code, -1, -1, true},
		{"a", 7, kerr.UnknownTopicOrPartition.Code, -1, -1, true},
	}
	if len(all) != len(want) {
		t.Fatalf("got %+v\nwant %+v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("entry %d: got %+v, want %+v", i, all[i], want[i])
		}
	}
	if n := len(resp.Topics); n != 3 {
		t.Errorf("%d topic entries, want 3 (a, missing, a)", n)
	}

	// Old clients get NOT_LEADER_OR_FOLLOWER for a storage error.
	resp = mustFetch(t, s, cat, fetchReq(5, cat, fetchPart{topic: "a", partition: 2}))
	if p := onePartition(t, resp); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("v5 storage error: code %d", p.ErrorCode)
	}
}

func TestFetchUnknownTopicID(t *testing.T) {
	s, _ := newFetchTestServer(t)
	l := newMemLog()
	l.append(1, 100)
	cat := memCatalog{"a": {id: [16]byte{1}, logs: []*memLog{l}}}
	req := fetchReq(13, cat, fetchPart{topic: "a"})
	ghost := kmsg.NewFetchRequestTopic()
	ghost.TopicID = [16]byte{9}
	ghost.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	req.Topics = append([]kmsg.FetchRequestTopic{ghost}, req.Topics...)
	resp := mustFetch(t, s, cat, req)
	if len(resp.Topics) != 2 {
		t.Fatalf("topics %+v", resp.Topics)
	}
	if resp.Topics[0].TopicID != [16]byte{1} || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("first: %+v", resp.Topics[0])
	}
	if resp.Topics[1].TopicID != [16]byte{9} || resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("second: %+v", resp.Topics[1])
	}
}

// TestFetchFollower: a replica id >= 0 is a follower we do not know.
func TestFetchFollower(t *testing.T) {
	for _, tc := range []struct {
		v        int16
		replica  int32
		epoch    int32
		wantCode int16
	}{
		{11, 1, -1, kerr.NotLeaderForPartition.Code},
		{11, 1, 0, kerr.UnknownLeaderEpoch.Code},
		{11, -2, -1, 0}, // a debug consumer is a consumer
		{14, 2, -1, kerr.NotLeaderForPartition.Code},
		{15, 2, -1, kerr.NotLeaderForPartition.Code}, // v15: ReplicaState
	} {
		s, _ := newFetchTestServer(t)
		l := newMemLog()
		l.append(1, 100)
		cat := memCatalog{"a": {logs: []*memLog{l}}}
		req := fetchReq(tc.v, cat, fetchPart{topic: "a", epoch: tc.epoch})
		if tc.v >= 15 {
			req.ReplicaState.ID = tc.replica
		} else {
			req.ReplicaID = tc.replica
		}
		resp := mustFetch(t, s, cat, req)
		if p := onePartition(t, resp); p.ErrorCode != tc.wantCode {
			t.Errorf("v%d replica %d: code %d, want %d", tc.v, tc.replica, p.ErrorCode, tc.wantCode)
		}
	}
}

func TestFetchInvalidIsolation(t *testing.T) {
	s, _ := newFetchTestServer(t)
	l := newMemLog()
	cat := memCatalog{"a": {id: [16]byte{1}, logs: []*memLog{l}}}
	for _, v := range []int16{12, 13} {
		req := fetchReq(v, cat, fetchPart{topic: "a"})
		req.IsolationLevel = 7
		resp := mustFetch(t, s, cat, req)
		if resp.ErrorCode != kerr.UnknownServerError.Code {
			t.Errorf("v%d: code %d", v, resp.ErrorCode)
		}
		if n := len(resp.Topics); (v < 13) != (n == 1) {
			t.Errorf("v%d: %d topics", v, n)
		}
	}
}

// TestFetchReadCommitted: nothing at or past the LSO, and an empty (not
// null) aborted list.
func TestFetchReadCommitted(t *testing.T) {
	s, _ := newFetchTestServer(t)
	l := newMemLog()
	l.append(2, 100) // 0-1
	l.append(2, 100) // 2-3
	l.append(2, 100) // 4-5
	l.lso = 2
	cat := memCatalog{"a": {logs: []*memLog{l}}}
	for _, tc := range []struct {
		isolation int8
		wantBytes int
		wantNull  bool
	}{
		{0, 300, true},
		{1, 100, false},
	} {
		req := fetchReq(11, cat, fetchPart{topic: "a"})
		req.IsolationLevel = tc.isolation
		p := onePartition(t, mustFetch(t, s, cat, req))
		if len(p.RecordBatches) != tc.wantBytes || (p.AbortedTransactions == nil) != tc.wantNull || p.LastStableOffset != 2 || p.HighWatermark != 6 {
			t.Errorf("isolation %d: %d bytes, aborted %v, lso %d hw %d", tc.isolation, len(p.RecordBatches), p.AbortedTransactions, p.LastStableOffset, p.HighWatermark)
		}
	}
}

// TestFetchDivergingEpoch: LastFetchedEpoch (v12+) against our one epoch.
func TestFetchDivergingEpoch(t *testing.T) {
	s, _ := newFetchTestServer(t)
	l := newMemLog()
	l.logStart = 5
	l.append(5, 100) // 5-9
	cat := memCatalog{"a": {logs: []*memLog{l}}}
	for _, tc := range []struct {
		v          int16
		lastEpoch  int32
		offset     int64
		wantCode   int16
		wantDiverg bool
	}{
		{12, 0, 7, 0, false},
		{12, 0, 12, 0, true}, // past our end offset in our own epoch
		{12, 1, 7, kerr.OffsetOutOfRange.Code, false},
		{12, 0, 2, kerr.OffsetOutOfRange.Code, false},
		{11, 1, 7, 0, false}, // LastFetchedEpoch not on the wire
	} {
		req := fetchReq(tc.v, cat, fetchPart{topic: "a", offset: tc.offset, epoch: -1})
		req.Topics[0].Partitions[0].LastFetchedEpoch = tc.lastEpoch
		p := onePartition(t, mustFetch(t, s, cat, req))
		diverged := p.DivergingEpoch.Epoch == 0 && p.DivergingEpoch.EndOffset == 10
		if p.ErrorCode != tc.wantCode || diverged != tc.wantDiverg {
			t.Errorf("v%d last epoch %d offset %d: code %d diverging %+v", tc.v, tc.lastEpoch, tc.offset, p.ErrorCode, p.DivergingEpoch)
		}
	}
}

// TestFetchSessionsThroughHandler: a consumer's session as the handler
// serves it: full, incremental with nothing new, with new records, close.
func TestFetchSessionsThroughHandler(t *testing.T) {
	s, _ := newFetchTestServer(t)
	l0, l1 := newMemLog(), newMemLog()
	l0.append(1, 100)
	l1.append(1, 100)
	cat := memCatalog{"a": {id: [16]byte{1}, logs: []*memLog{l0, l1}}}

	req := fetchReq(13, cat, fetchPart{topic: "a", partition: 0, offset: 1}, fetchPart{topic: "a", partition: 1, offset: 1})
	req.SessionID, req.SessionEpoch = 0, 0
	resp := mustFetch(t, s, cat, req)
	if resp.SessionID == 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("full: session %d topics %+v", resp.SessionID, resp.Topics)
	}
	sid := resp.SessionID

	inc := func(epoch int32) *kmsg.FetchResponse {
		r := fetchReq(13, cat)
		r.SessionID, r.SessionEpoch = sid, epoch
		return mustFetch(t, s, cat, r)
	}
	if resp = inc(1); resp.ErrorCode != 0 || resp.SessionID != sid || len(resp.Topics) != 0 {
		t.Fatalf("incremental, no news: %+v", resp)
	}
	l1.append(1, 100)
	resp = inc(2)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 1 ||
		len(resp.Topics[0].Partitions[0].RecordBatches) != 100 || resp.Topics[0].TopicID != [16]byte{1} {
		t.Fatalf("incremental, news on p1: %+v", resp.Topics)
	}
	if resp = inc(2); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || resp.SessionID != 0 {
		t.Fatalf("replayed epoch: code %d session %d", resp.ErrorCode, resp.SessionID)
	}
	// A v12 request cannot continue a session of v13 (ids vs names).
	r := fetchReq(12, cat)
	r.SessionID, r.SessionEpoch = sid, 3
	if resp = mustFetch(t, s, cat, r); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v12 on a v13 session: code %d", resp.ErrorCode)
	}
	r = fetchReq(13, cat)
	r.SessionID, r.SessionEpoch = sid, -1
	if resp = mustFetch(t, s, cat, r); resp.ErrorCode != 0 || resp.SessionID != 0 || s.fetchSessions.len() != 0 {
		t.Fatalf("close: code %d session %d cached %d", resp.ErrorCode, resp.SessionID, s.fetchSessions.len())
	}
}

// longPoll starts a fetch that is expected to wait, and returns a channel
// with its outcome once the poll has made its timer (is about to block).
type pollResult struct {
	resp *kmsg.FetchResponse
	err  error
}

func startPoll(t *testing.T, s *Server, clk notifyClock, cat memCatalog, ctx context.Context, req *kmsg.FetchRequest) <-chan pollResult {
	t.Helper()
	done := make(chan pollResult, 1)
	go func() {
		resp, err := serveFetchWire(t, s, cat, ctx, req)
		done <- pollResult{resp, err}
	}()
	select {
	case d := <-clk.timers:
		if d != time.Duration(req.MaxWaitMillis)*time.Millisecond {
			t.Errorf("timer of %v for MaxWaitMillis %d", d, req.MaxWaitMillis)
		}
	case r := <-done:
		t.Fatalf("fetch answered without waiting: %+v %v", r.resp, r.err)
	}
	return done
}

func TestFetchLongPoll(t *testing.T) {
	newCat := func() (memCatalog, *memLog, *memLog) {
		l0, l1 := newMemLog(), newMemLog()
		return memCatalog{"a": {logs: []*memLog{l0, l1}}}, l0, l1
	}
	poll := func(cat memCatalog, minBytes int32, parts ...fetchPart) *kmsg.FetchRequest {
		req := fetchReq(12, cat, parts...)
		req.MaxWaitMillis = 500
		req.MinBytes = minBytes
		return req
	}

	t.Run("append wakes a one-partition poll", func(t *testing.T) {
		s, clk := newFetchTestServer(t)
		cat, l0, _ := newCat()
		done := startPoll(t, s, clk, cat, context.Background(), poll(cat, 1, fetchPart{topic: "a"}))
		l0.append(1, 100)
		r := <-done
		if r.err != nil || len(onePartition(t, r.resp).RecordBatches) != 100 {
			t.Fatalf("got %+v %v", r.resp, r.err)
		}
	})

	t.Run("append to any partition wakes a poll of several", func(t *testing.T) {
		s, clk := newFetchTestServer(t)
		cat, _, l1 := newCat()
		done := startPoll(t, s, clk, cat, context.Background(), poll(cat, 1, fetchPart{topic: "a", partition: 0}, fetchPart{topic: "a", partition: 1}))
		l1.append(1, 100)
		r := <-done
		if r.err != nil || len(r.resp.Topics[0].Partitions[1].RecordBatches) != 100 {
			t.Fatalf("got %+v %v", r.resp, r.err)
		}
	})

	t.Run("waits again until MinBytes", func(t *testing.T) {
		s, clk := newFetchTestServer(t)
		cat, l0, _ := newCat()
		done := startPoll(t, s, clk, cat, context.Background(), poll(cat, 150, fetchPart{topic: "a"}))
		for range len(l0.waitCalls) {
			<-l0.waitCalls
		}
		l0.append(1, 100) // not enough
		<-l0.waitCalls    // the poll woke, took a new channel, reads again
		select {
		case r := <-done:
			t.Fatalf("answered with %d bytes < MinBytes", len(onePartition(t, r.resp).RecordBatches))
		default:
		}
		l0.append(1, 100)
		r := <-done
		if r.err != nil || len(onePartition(t, r.resp).RecordBatches) != 200 {
			t.Fatalf("got %+v %v", r.resp, r.err)
		}
	})

	t.Run("MaxWait expires", func(t *testing.T) {
		s, clk := newFetchTestServer(t)
		cat, l0, _ := newCat()
		done := startPoll(t, s, clk, cat, context.Background(), poll(cat, 1, fetchPart{topic: "a"}))
		clk.Advance(499 * time.Millisecond)
		select {
		case <-done:
			t.Fatal("answered before MaxWait")
		default:
		}
		clk.Advance(time.Millisecond)
		r := <-done
		p := onePartition(t, r.resp)
		if r.err != nil || p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
			t.Fatalf("got %+v %v", r.resp, r.err)
		}
		if n := l0.readCount(); n != 2 { // first read, and once more at expiry
			t.Errorf("%d reads", n)
		}
	})

	t.Run("a log whose Wait stays closed is not spun on", func(t *testing.T) {
		s, clk := newFetchTestServer(t)
		cat, l0, _ := newCat()
		l0.gone = true
		done := startPoll(t, s, clk, cat, context.Background(), poll(cat, 1, fetchPart{topic: "a"}, fetchPart{topic: "a", partition: 1}))
		for range 2 { // the first wait, then the read after the wake-up
			<-l0.waitCalls
		}
		clk.Advance(500 * time.Millisecond)
		if r := <-done; r.err != nil {
			t.Fatal(r.err)
		}
		if n := l0.readCount(); n != 3 { // first read, after the wake-up, at expiry
			t.Errorf("%d reads", n)
		}
	})

	t.Run("ctx cancel ends the poll", func(t *testing.T) {
		s, clk := newFetchTestServer(t)
		cat, _, _ := newCat()
		ctx, cancel := context.WithCancel(context.Background())
		done := startPoll(t, s, clk, cat, ctx, poll(cat, 1, fetchPart{topic: "a"}, fetchPart{topic: "a", partition: 1}))
		cancel()
		if r := <-done; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("got %+v %v", r.resp, r.err)
		}
	})

	for _, tc := range []struct {
		name     string
		maxWait  int32
		minBytes int32
		parts    []fetchPart
	}{
		{"no wait with MaxWait 0", 0, 1, []fetchPart{{topic: "a"}, {topic: "a", partition: 1}}},
		{"no wait with MinBytes 0", 500, 0, []fetchPart{{topic: "a"}, {topic: "a", partition: 1}}},
		{"no wait on a partition error", 500, 1, []fetchPart{{topic: "a", offset: 99}, {topic: "a", partition: 1}}},
		{"no wait with only unknown partitions", 500, 1, []fetchPart{{topic: "nope"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newFetchTestServer(t)
			cat, _, _ := newCat()
			req := poll(cat, tc.minBytes, tc.parts...)
			req.MaxWaitMillis = tc.maxWait
			mustFetch(t, s, cat, req) // returns without the clock moving
		})
	}
}

// BenchmarkFetchEncode measures the handler plus kmsg's encoding of a
// response of 8 partitions of 1 MiB, with reads that return the log's own
// bytes: the record bytes are copied once, into the response buffer.
func BenchmarkFetchEncode(b *testing.B) {
	s, _ := newFetchTestServer(b)
	s.log = zerolog.Nop()
	var logs []*memLog
	var parts []fetchPart
	for i := range 8 {
		l := newMemLog()
		for range 16 {
			l.append(64, 64<<10)
		}
		logs = append(logs, l)
		parts = append(parts, fetchPart{topic: "a", partition: int32(i), maxBytes: 1 << 20})
	}
	cat := memCatalog{"a": {id: [16]byte{1}, logs: logs}}
	req := fetchReq(13, cat, parts...)
	r := &Request{Ctx: context.Background(), Version: 13, Body: req}
	var buf []byte
	b.SetBytes(8 << 20)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := s.serveFetch(r, cat.resolve)
		if err != nil {
			b.Fatal(err)
		}
		buf = resp.AppendTo(buf[:0])
	}
}

// The tests below run the handler over a real partition.Store.

func openFetchStore(t *testing.T, clk clock.Clock) *partition.Store {
	t.Helper()
	st, err := partition.Open(partition.Config{
		Dir:    t.TempDir(),
		NodeID: 3,
		Clock:  clk,
		Logger: zerolog.New(zerolog.NewTestWriter(t)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// appendRecords appends one batch of n records to a log.
func appendRecords(t *testing.T, l *partition.Log, n int, valueSize int) int64 {
	t.Helper()
	recs := make([]recordbatch.Record, n)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{'v'}, valueSize)}
	}
	b, err := recordbatch.Build(recordbatch.BatchSpec{
		ProducerID: recordbatch.NoProducerID, ProducerEpoch: recordbatch.NoProducerEpoch,
		BaseSequence: recordbatch.NoSequence, BaseTimestamp: 1_700_000_000_000,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Append(b)
	if err != nil {
		t.Fatal(err)
	}
	return res.BaseOffset
}

// storeFetch serves a request with the real catalog and decodes the
// response as a client would, batches included.
func storeFetch(t *testing.T, s *Server, ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	t.Helper()
	kr, err := s.serveFetch(&Request{Ctx: ctx, Version: req.Version, Body: req}, s.resolveFromStore)
	if err != nil {
		return nil, err
	}
	got := kmsg.NewPtrFetchResponse()
	got.Version = req.Version
	if err := got.ReadFrom(kr.(*kmsg.FetchResponse).AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	return got, nil
}

// batchOffsets lists the base and last offsets of the whole batches in b.
func batchOffsets(t *testing.T, b []byte) [][2]int64 {
	t.Helper()
	var out [][2]int64
	for len(b) > 0 {
		h, err := recordbatch.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			t.Fatalf("records do not hold whole batches: %v", err)
		}
		out = append(out, [2]int64{h.BaseOffset(), h.BaseOffset() + int64(h.LastOffsetDelta())})
		b = b[h.Size():]
	}
	return out
}

func TestFetchFromStore(t *testing.T) {
	s, clk := newFetchTestServer(t)
	st := openFetchStore(t, clk.Manual)
	s.store = st
	topic, err := st.CreateTopic("events", 2, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	l0 := topic.Partitions[0]
	appendRecords(t, l0, 3, 10) // 0-2
	appendRecords(t, l0, 4, 10) // 3-6
	appendRecords(t, l0, 2, 10) // 7-8

	for _, v := range []int16{4, 12, 13, 18} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "events", topic.ID
		for p, off := range []int64{4, 0} {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), off, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := storeFetch(t, s, context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
		if p0.ErrorCode != 0 || p0.HighWatermark != 9 || p1.HighWatermark != 0 || len(p1.RecordBatches) != 0 {
			t.Fatalf("v%d: p0 %+v p1 %+v", v, p0, p1)
		}
		// Offset 4 is in the batch 3-6: it comes whole, then 7-8.
		if got := batchOffsets(t, p0.RecordBatches); len(got) != 2 || got[0] != [2]int64{3, 6} || got[1] != [2]int64{7, 8} {
			t.Fatalf("v%d: batches %v", v, got)
		}
	}

	// Unknown topic id, and an offset past the high watermark.
	req := kmsg.NewPtrFetchRequest()
	req.Version = 13
	for _, id := range [][16]byte{{0xde, 0xad}, topic.ID} {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = 10, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := storeFetch(t, s, context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.OffsetOutOfRange.Code ||
		resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("errors: %+v", resp.Topics)
	}
}

func TestFetchFromStoreLongPoll(t *testing.T) {
	s, clk := newFetchTestServer(t)
	st := openFetchStore(t, clk.Manual)
	s.store = st
	topic, err := st.CreateTopic("events", 3, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.MaxWaitMillis, req.MinBytes = 5000, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "events"
	for p := range int32(3) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)

	for _, tc := range []string{"append", "timeout", "cancel"} {
		t.Run(tc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan pollResult, 1)
			go func() {
				resp, err := storeFetch(t, s, ctx, req)
				done <- pollResult{resp, err}
			}()
			<-clk.timers // the poll is about to block
			switch tc {
			case "append":
				appendRecords(t, topic.Partitions[2], 1, 10)
			case "timeout":
				clk.Advance(5 * time.Second)
			case "cancel":
				cancel()
			}
			r := <-done
			switch tc {
			case "append":
				if r.err != nil || len(batchOffsets(t, r.resp.Topics[0].Partitions[2].RecordBatches)) != 1 {
					t.Fatalf("got %+v %v", r.resp, r.err)
				}
				req.Topics[0].Partitions[2].FetchOffset = 1
			case "timeout":
				for _, p := range r.resp.Topics[0].Partitions {
					if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
						t.Fatalf("got %+v", p)
					}
				}
			case "cancel":
				if !errors.Is(r.err, context.Canceled) {
					t.Fatalf("got %v", r.err)
				}
			}
		})
	}
}

// TestFetchKgoConsumer consumes with franz-go's client over TCP: its fetch
// sessions (full, then incremental fetches), long polls woken by appends,
// and record decoding of what the handler returns.
func TestFetchKgoConsumer(t *testing.T) {
	st := openFetchStore(t, clock.Real{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID = 3
	cfg.AdvertisedHost = "127.0.0.1"
	cfg.AdvertisedPort = int32(ln.Addr().(*net.TCPAddr).Port)
	cfg.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	startCoordinators(t, &cfg, st, nil)
	srv := mustNewServer(t, cfg, st)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})

	topic, err := st.CreateTopic("events", 3, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		appendRecords(t, topic.Partitions[i%3], 5, 100)
	}

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(ln.Addr().String()),
		kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(15*time.Second), // longer than ctx: only a wake-up on append ends a poll in time
		kgo.FetchMaxPartitionBytes(1000), // several fetches per partition
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	next := map[int32]int64{} // offsets must come in order, each once
	consume := func(want int) {
		t.Helper()
		got := 0
		for got < want {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records: %v", got, want, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
				got++
			})
		}
		if got != want {
			t.Fatalf("consumed %d records, want %d", got, want)
		}
	}
	consume(150)
	// The consumer is now long polling on an incremental session; new
	// records must wake it.
	for i := range 6 {
		appendRecords(t, topic.Partitions[i%3], 5, 100)
	}
	consume(30)
}

// FuzzFetchRequest: any Fetch request a client can encode, at any version
// we serve, is answered without panicking and with a response that
// encodes and decodes at that version. Sessions persist across inputs, so
// ids and epochs from earlier inputs meet later ones.
func FuzzFetchRequest(f *testing.F) {
	s, _ := newFetchTestServer(f)
	s.log = zerolog.Nop()
	l := newMemLog()
	l.append(3, 100)
	l.append(2, 80)
	cat := memCatalog{"a": {id: [16]byte{1}, logs: []*memLog{l, newMemLog()}}}
	for v := int16(4); v <= 18; v++ {
		req := fetchReq(v, cat, fetchPart{topic: "a", offset: 1}, fetchPart{topic: "a", partition: 1}, fetchPart{topic: "b"})
		req.SessionEpoch = 0
		f.Add(v, req.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, v int16, b []byte) {
		if v < 4 || v > 18 {
			return
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		if err := req.ReadFrom(b); err != nil {
			return
		}
		req.MaxWaitMillis = 0 // never block the fuzzer
		kr, err := s.serveFetch(&Request{Ctx: context.Background(), Version: v, Body: req}, cat.resolve)
		if err != nil {
			t.Fatal(err)
		}
		got := kmsg.NewPtrFetchResponse()
		got.Version = v
		if err := got.ReadFrom(kr.AppendTo(nil)); err != nil {
			t.Fatalf("response does not decode: %v", err)
		}
	})
}

// BenchmarkFetchFromStore is BenchmarkFetchEncode over a real store: the
// partition's read (page cache to buffer) plus the handler and encoding.
func BenchmarkFetchFromStore(b *testing.B) {
	st, err := partition.Open(partition.Config{Dir: b.TempDir(), NodeID: 3, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	topic, err := st.CreateTopic("events", 8, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]recordbatch.Record, 64)
	for i := range recs {
		recs[i] = recordbatch.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{'v'}, 1000)}
	}
	for _, l := range topic.Partitions {
		for range 16 {
			batch, err := recordbatch.Build(recordbatch.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	s, _ := newFetchTestServer(b)
	s.log = zerolog.Nop()
	s.store = st
	req := kmsg.NewPtrFetchRequest()
	req.Version = 13
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = topic.ID
	for p := range int32(8) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	r := &Request{Ctx: context.Background(), Version: 13, Body: req}
	var buf []byte
	total := 0
	b.ReportAllocs()
	for b.Loop() {
		resp, err := s.serveFetch(r, s.resolveFromStore)
		if err != nil {
			b.Fatal(err)
		}
		buf = resp.AppendTo(buf[:0])
		total = len(buf)
		r.releaseBufs() // as conn.serve does once the response is written
	}
	b.SetBytes(int64(total))
}

// TestFetchReadCommittedLSOMidBatch: DeleteRecords moving the log start
// offset into an open transaction's batch puts the LSO mid-batch; a
// read_committed fetch must not return that batch (records 5-9 are
// uncommitted).
func TestFetchReadCommittedLSOMidBatch(t *testing.T) {
	b := startBroker(t, nil)
	tp := b.createTopic(t, "midlso", 1, nil)
	l := tp.Partitions[0]
	now := b.nowMs()
	if _, err := l.Append(producerBatch(t, now, 7, 0, 0, 10, true)); err != nil { // 0-9, open
		t.Fatal(err)
	}
	if _, err := l.Append(producerBatch(t, now, 8, 0, 0, 2, false)); err != nil { // 10-11
		t.Fatal(err)
	}
	if _, err := l.AdvanceLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, b.addr)
	for _, iso := range []int8{0, 1} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		req.IsolationLevel = iso
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "midlso", Partitions: []kmsg.FetchRequestTopicPartition{{FetchOffset: 5, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1}}}}
		p := w.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LastStableOffset != 5 || p.LogStartOffset != 5 || p.HighWatermark != 12 {
			t.Fatalf("iso %d: %+v", iso, p)
		}
		if iso == 1 && len(p.RecordBatches) != 0 {
			t.Fatalf("read_committed returned %d bytes of the open transaction", len(p.RecordBatches))
		}
		if iso == 0 && len(p.RecordBatches) == 0 {
			t.Fatal("read_uncommitted returned nothing")
		}
	}
}
