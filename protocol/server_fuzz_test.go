package protocol

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/internal/clock"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

// fuzzServerKeys are the APIs FuzzServerRequests sends to the server:
// those that neither wait on other clients (group APIs would wait
// forever on the manual clock) nor grow state beyond the input's size.
var fuzzServerKeys = map[int16]bool{0: true, 1: true, 2: true, 3: true, 18: true, 32: true, 60: true, 75: true}

// fuzzServerLimit is MaxRequestBytes of the fuzzed server.
const fuzzServerLimit = 1 << 16

// fuzzServerAllocBound bounds what serving one input may allocate: a Fetch
// response of fetch.max.bytes (55 MiB) is the largest legitimate cost,
// next to 1 MiB inflated batches and 64 KiB frames.
const fuzzServerAllocBound = 128 << 20

// FuzzServerRequests writes arbitrary bytes to a real Server over
// loopback TCP, as a stream of request frames, then shuts down its write
// side and reads every answer. The server has a store with topic "t"
// (records already in it), small request and decompression limits, and
// AutoCreateTopics off. An input whose frames decode to an API outside
// fuzzServerKeys is skipped (other APIs have their own fuzz targets,
// which call the handlers directly).
//
// Invariants, for each input: every frame that decodes (decodeRequest)
// is answered, in order, with a response that has its correlation id and
// decodes at its version (the v0 fallback for a too-new ApiVersions),
// except acks=0 Produce; the first frame that does not decode, or is
// over the size limit, ends the connection with nothing more written; a
// truncated last frame ends it after the answers before it (a Fetch long
// poll ends early at the end of stream, or at its MaxWait, the manual
// clock running ahead); no request
// memory stays counted afterwards; the process allocated no more than
// fuzzServerAllocBound meanwhile; and a fresh connection is served.
func FuzzServerRequests(f *testing.F) {
	// The seeds are serverFuzzSeeds, checked in under testdata (and kept
	// in step by TestWriteServerFuzzSeeds), plus inputs fuzzing found.
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	store, err := partition.Open(partition.Config{Dir: f.TempDir(), NodeID: 1, Clock: clk, Logger: zerolog.Nop()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	if _, err := store.CreateTopic("t", 2, nil, false); err != nil {
		f.Fatal(err)
	}
	if l, err := store.Log("t", 0); err == nil {
		b, _ := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: clk.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			[]recordbatch.Record{{Key: []byte("k"), Value: []byte("v")}, {OffsetDelta: 1, Value: []byte("w")}})
		l.Append(b)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.NodeID, cfg.AdvertisedHost, cfg.AdvertisedPort = 1, "127.0.0.1", int32(ln.Addr().(*net.TCPAddr).Port)
	cfg.Logger, cfg.Clock = zerolog.Nop(), clk
	cfg.MaxRequestBytes = fuzzServerLimit
	cfg.MaxDecompressedBytes = 1 << 20
	cfg.QueuedMaxRequestBytes = 4 * fuzzServerLimit
	cfg.AutoCreateTopics = false
	// The manual clock runs ahead during each exec (a long poll with a
	// request behind it ends only at its MaxWait): no idle closes.
	cfg.Connections = &ConnectionLimits{MaxIdleMs: -1, MaxConnections: 1 << 20, MaxConnectionsPerIP: 1 << 20}
	startCoordinators(f, &cfg, store, nil)
	s := mustNewServer(f, cfg, store)
	done := make(chan struct{}, 1024)
	s.connDone = func() { done <- struct{}{} }
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	defer func() {
		s.Close()
		<-served
	}()
	addr := ln.Addr().String()

	f.Fuzz(func(t *testing.T, in []byte) {
		plan, ok := planFuzzFrames(s, in)
		if !ok {
			return
		}
		// Run the manual clock ahead, a day per step, so a Fetch long
		// poll that cannot see the end of stream (two requests pipelined
		// behind it) ends at its MaxWait (at most 25 days).
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Microsecond):
					clk.Advance(24 * time.Hour)
				}
			}
		}()
		// Each exec waits, even when it fails, until the server has let go
		// of its connections, so that the next one starts clean.
		open := 0
		defer func() {
			for ; open > 0; open-- {
				<-done
			}
		}()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		open++
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails rather than stalls the fuzzer
		// Write while reading: the server stops reading when a response
		// is not read, so a large input could otherwise deadlock.
		werr := make(chan error, 1)
		go func() {
			_, err := nc.Write(in)
			nc.(*net.TCPConn).CloseWrite()
			werr <- err
		}()
		br := bufio.NewReader(nc)
		for i, fr := range plan {
			if !fr.answered {
				continue
			}
			body, err := readResponseFrame(br)
			if err != nil {
				t.Fatalf("frame %d (key %d v%d): no answer: %v", i, fr.key, fr.version, err)
			}
			if err := checkFuzzResponse(body, fr); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
		}
		if n, err := br.Read(make([]byte, 1)); n != 0 || !(errors.Is(err, io.EOF) || isReset(err)) {
			t.Fatalf("after the answers: %d bytes, %v; want the connection closed", n, err)
		}
		<-werr
		nc.Close()
		<-done // the server has let go of the connection
		open--
		if n := s.reqMem.inUse(); n != 0 {
			t.Fatalf("%d request bytes still counted", n)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > fuzzServerAllocBound {
			t.Fatalf("%d bytes allocated serving %d input bytes", n, len(in))
		}
		w := &wire{t: t, nc: mustDial(t, addr)}
		open++
		defer w.nc.Close()
		w.br = bufio.NewReader(w.nc)
		w.roundTrip(apiVersionsReq(3))
	})
}

func mustDial(t *testing.T, addr string) net.Conn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// fuzzFrame is what the server must do with one frame of the input.
type fuzzFrame struct {
	key, version int16
	correlation  int32
	answered     bool // a response is due (else nothing: acks=0)
}

// planFuzzFrames splits in into frames as the server will and says which
// are answered; false to skip the input (an API outside fuzzServerKeys).
func planFuzzFrames(s *Server, in []byte) ([]fuzzFrame, bool) {
	var plan []fuzzFrame
	for len(in) >= 4 {
		n := int32(binary.BigEndian.Uint32(in))
		if n < 0 || n > fuzzServerLimit || int(n) > len(in)-4 {
			break // closes (size) or ends the stream (truncated)
		}
		frame := in[4 : 4+n]
		in = in[4+n:]
		h, a, req, err := decodeRequest(s.table, frame)
		if errors.Is(err, errAPIVersionsFallback) {
			plan = append(plan, fuzzFrame{key: h.key, version: 0, correlation: h.correlation, answered: true})
			continue
		}
		if err != nil {
			break
		}
		if !fuzzServerKeys[h.key] {
			return nil, false
		}
		_ = a
		answered := true
		if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			answered = false
		}
		plan = append(plan, fuzzFrame{key: h.key, version: h.version, correlation: h.correlation, answered: answered})
	}
	return plan, true
}

func readResponseFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n > 64<<20 {
		return nil, fmt.Errorf("response size %d", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// checkFuzzResponse checks a response body (after the size) against the
// request it answers.
func checkFuzzResponse(b []byte, fr fuzzFrame) error {
	if len(b) < 4 {
		return fmt.Errorf("response of %d bytes", len(b))
	}
	if c := int32(binary.BigEndian.Uint32(b)); c != fr.correlation {
		return fmt.Errorf("correlation id %d, want %d", c, fr.correlation)
	}
	b = b[4:]
	resp := kmsg.ResponseForKey(fr.key)
	resp.SetVersion(fr.version)
	if resp.IsFlexible() && fr.key != kmsg.ApiVersions.Int16() {
		n, err := skipTags(b)
		if err != nil {
			return fmt.Errorf("key %d v%d: response header tags: %v", fr.key, fr.version, err)
		}
		b = b[n:]
	}
	if err := resp.ReadFrom(b); err != nil {
		return fmt.Errorf("key %d v%d: response does not decode: %v", fr.key, fr.version, err)
	}
	return nil
}

// fuzzSeed is one named seed input of FuzzServerRequests.
type fuzzSeed struct {
	name string
	data []byte
}

// serverFuzzSeeds are FuzzServerRequests' seeds, built from kmsg: valid
// requests of each API in fuzzServerKeys at several versions (Produce
// with a batch of each codec, acks 0, 1 and -1), pipelined mixes, and
// known nasty inputs. TestWriteServerFuzzSeeds writes them to
// testdata/fuzz/FuzzServerRequests.
func serverFuzzSeeds(tb testing.TB) []fuzzSeed {
	id := "fuzz"
	var seeds []fuzzSeed
	frame := func(req kmsg.Request, v int16, corr int32) []byte {
		req.SetVersion(v)
		return encodeRequest(req, corr, &id)
	}
	add := func(name string, frames ...[]byte) {
		var b []byte
		for _, f := range frames {
			b = append(b, f...)
		}
		seeds = append(seeds, fuzzSeed{name, b})
	}
	topic := "t"
	for _, v := range []int16{0, 3, 4} {
		add("apiversions-v"+strconv.Itoa(int(v)), frame(apiVersionsReq(v), v, 1))
	}
	for _, v := range []int16{0, 4, 9, 12} {
		m := kmsg.NewPtrMetadataRequest()
		m.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}, {Topic: &id}}
		add("metadata-v"+strconv.Itoa(int(v)), frame(m, v, 2))
	}
	now := int64(1_700_000_000_000)
	for _, c := range []recordbatch.Codec{recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd} {
		recs := []recordbatch.Record{{Key: []byte("k"), Value: []byte("value value value")}, {OffsetDelta: 1, Value: []byte("w")}}
		batch, err := recordbatch.Build(recordbatch.BatchSpec{Codec: c, BaseTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			tb.Fatal(err)
		}
		for _, v := range []int16{3, 8, 12} {
			for _, acks := range []int16{-1, 0} {
				if acks == 0 && (c != recordbatch.None || v != 8) {
					continue
				}
				p := produceReq(v, topic, [16]byte{}, int32(v%2), batch)
				p.Acks = acks
				add(fmt.Sprintf("produce-%s-v%d-acks%d", c, v, acks), frame(p, v, 3))
			}
		}
	}
	// A gzip bomb: 4 MiB of zeros, over MaxDecompressedBytes.
	add("produce-gzip-bomb", frame(produceReq(9, topic, [16]byte{}, 0, compressedBatch(tb, recordbatch.Gzip, gzipBytes(make([]byte, 4<<20)), 1)), 9, 4))
	good, _ := recordbatch.Build(recordbatch.BatchSpec{BaseTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, []recordbatch.Record{{Value: []byte("x")}})
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 0xff
	add("produce-bad-crc", frame(produceReq(9, topic, [16]byte{}, 0, badCRC), 9, 5))
	add("produce-two-batches", frame(produceReq(7, topic, [16]byte{}, 0, append(append([]byte(nil), good...), good...)), 7, 6))
	for _, v := range []int16{4, 7, 11, 12, 16} {
		fr := kmsg.NewPtrFetchRequest()
		fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes, fr.SessionEpoch = 500, 1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range int32(2) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, int64(p), 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		fr.Topics = []kmsg.FetchRequestTopic{rt}
		add("fetch-v"+strconv.Itoa(int(v)), frame(fr, v, 7))
	}
	for _, v := range []int16{1, 4, 8} {
		l := kmsg.NewPtrListOffsetsRequest()
		l.ReplicaID = -1
		l.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1}, {Partition: 1, Timestamp: -2}, {Partition: 9, Timestamp: 0}}}}
		add("listoffsets-v"+strconv.Itoa(int(v)), frame(l, v, 8))
	}
	for _, v := range []int16{0, 4} {
		d := kmsg.NewPtrDescribeConfigsRequest()
		d.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic}, {ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
		add("describeconfigs-v"+strconv.Itoa(int(v)), frame(d, v, 9))
	}
	add("describecluster-v0", frame(kmsg.NewPtrDescribeClusterRequest(), 0, 10))
	add("describetopicpartitions-v0", frame(dtpReq(1, nil, topic, "none"), 0, 11))
	lp := kmsg.NewPtrFetchRequest()
	lp.MaxWaitMillis, lp.MinBytes, lp.MaxBytes, lp.SessionEpoch = 1<<30, 1, 1<<20, -1
	lp.Topics = []kmsg.FetchRequestTopic{{Topic: topic, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 1, PartitionMaxBytes: 1 << 20, LogStartOffset: -1}}}}
	add("fetch-long-poll-then-more", frame(lp, 11, 12), frame(apiVersionsReq(3), 3, 13))
	add("fetch-long-poll-then-two", frame(lp, 11, 12), frame(apiVersionsReq(3), 3, 13), frame(apiVersionsReq(0), 0, 14))
	m := kmsg.NewPtrMetadataRequest()
	add("pipelined-mix", frame(apiVersionsReq(3), 3, 1), frame(m, 12, 2), frame(produceReq(9, topic, [16]byte{}, 0, good), 9, 3), frame(apiVersionsReq(0), 0, 4))

	// Nasty ones.
	add("size-negative", []byte{0xff, 0xff, 0xff, 0xfe})
	add("size-over-limit", binary.BigEndian.AppendUint32(nil, fuzzServerLimit+1))
	add("size-huge-truncated", append(binary.BigEndian.AppendUint32(nil, 100<<20), 0, 18, 0, 3))
	add("truncated-after-valid", frame(apiVersionsReq(3), 3, 1), []byte{0, 0, 0, 50, 0, 3})
	add("apiversions-too-new", []byte{0, 0, 0, 11, 0, 18, 0, 77, 0, 0, 0x12, 0x34, 0xff, 0xff, 0x00})
	add("unknown-key-after-valid", frame(apiVersionsReq(3), 3, 1), []byte{0, 0, 0, 10, 0x27, 0x0f, 0, 0, 0, 0, 0, 1, 0xff, 0xff})
	add("empty-frame", []byte{0, 0, 0, 0})
	add("header-tags-overrun", append(binary.BigEndian.AppendUint32(nil, 11), 0, 3, 0, 12, 0, 0, 0, 9, 0xff, 0xff, 0x05))
	add("array-longer-than-body", append(binary.BigEndian.AppendUint32(nil, 14), 0, 3, 0, 4, 0, 0, 0, 1, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff))
	return seeds
}

// TestWriteServerFuzzSeeds writes serverFuzzSeeds into the checked-in
// corpus when KCOMPATD_WRITE_FUZZ_SEEDS=1; otherwise it checks that the
// corpus holds every seed.
func TestWriteServerFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzServerRequests")
	write := os.Getenv("KCOMPATD_WRITE_FUZZ_SEEDS") == "1"
	if write {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range serverFuzzSeeds(t) {
		want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s.data)) + ")\n"
		path := filepath.Join(dir, "seed-"+s.name)
		if write {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s missing or stale (KCOMPATD_WRITE_FUZZ_SEEDS=1 rewrites it): %v", path, err)
		}
	}
}
