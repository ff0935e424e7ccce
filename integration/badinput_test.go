package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is a Kafka connection spoken by hand, for requests no client
// library would send.
type rawConn struct {
	t    testing.TB
	conn net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, conn: c}
}

// request sends req at its set version and decodes the response into resp
// (whose version it sets to match).
func (c *rawConn) request(req kmsg.Request, resp kmsg.Response) error {
	c.corr++
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kcompatd-badinput")).AppendRequest(nil, req, c.corr)
	if err := c.write(frame); err != nil {
		return err
	}
	body, err := c.readResponse()
	if err != nil {
		return err
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != c.corr {
		return errors.New("response with the wrong correlation id")
	}
	body = body[4:]
	// Flexible responses carry a tag section in the header, except
	// ApiVersions (key 18), whose header stays v0 so that old clients can
	// read an UNSUPPORTED_VERSION answer.
	if req.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return errors.New("unexpected response header tags")
		}
		body = body[1:]
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

func (c *rawConn) write(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.conn.Write(b)
	return err
}

// readResponse reads one size-prefixed frame.
func (c *rawConn) readResponse() ([]byte, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, errors.New("response size out of range")
	}
	body := make([]byte, n)
	_, err := io.ReadFull(c.conn, body)
	return body, err
}

// expectClosed checks that the broker closes the connection (EOF or reset)
// rather than answering or leaving it open.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	for range 1000 { // bounded: a broker that answers garbage is a failure too
		n, err := c.conn.Read(buf)
		if err == nil {
			c.t.Errorf("broker sent %d bytes instead of closing the connection: %x", n, buf[:min(n, 32)])
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.t.Error("broker kept the connection open")
		}
		return // EOF or connection reset: closed, as Kafka does
	}
}

// header encodes a v1 request header (key, version, correlation id, client
// id), the one every API version without flexible encoding uses.
func header(key, version int16, corr int32, clientID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	return append(b, clientID...)
}

func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// checkHealthy checks that the broker still serves: the long-lived
// connection answers Metadata and a new connection answers ApiVersions.
func checkHealthy(t *testing.T, b *broker, survivor *rawConn) {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	if err := survivor.request(md, kmsg.NewPtrMetadataResponse()); err != nil {
		t.Fatalf("the other connection stopped working: %v", err)
	}
	fresh := dialRaw(t, b.Addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := fresh.request(av, resp); err != nil {
		t.Fatalf("a new connection is not served: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v0: error %d", resp.ErrorCode)
	}
	if s := b.Suspicious(); s != "" {
		t.Fatalf("broker output contains %q", s)
	}
}

// TestBadFrames sends malformed frames and requests and checks that only the
// offending connection is closed (Kafka closes a connection whose frame it
// cannot read or whose request it cannot parse), and that another
// connection, open all along, keeps working.
func TestBadFrames(t *testing.T) {
	const maxRequest = 1 << 20
	b := startBroker(t, "", "socket.request.max.bytes=1048576")
	survivor := dialRaw(t, b.Addr)
	checkHealthy(t, b, survivor)

	// A client id whose length says more bytes than the frame holds.
	lyingClientID := header(18, 0, 1, "")
	lyingClientID[len(lyingClientID)-1] = 200

	// Metadata v1 whose topic array claims 2^31-1 entries.
	hugeArray := append(header(3, 1, 1, "x"), 0x7f, 0xff, 0xff, 0xff)

	cases := []struct {
		name string
		send []byte
		// halfClose shuts the write side after sending, so a broker
		// waiting for the rest of a frame sees EOF.
		halfClose bool
	}{
		{"negative size", []byte{0xff, 0xff, 0xff, 0xff}, false},
		{"min int32 size", []byte{0x80, 0, 0, 0}, false},
		{"huge size", []byte{0x7f, 0xff, 0xff, 0xff}, false},
		{"just over socket.request.max.bytes", binary.BigEndian.AppendUint32(nil, maxRequest+1), false},
		{"zero size", []byte{0, 0, 0, 0}, false},
		{"frame shorter than a header", frame([]byte{0, 3, 0}), false},
		{"truncated body", append(binary.BigEndian.AppendUint32(nil, 100), header(18, 0, 1, "x")...), true},
		{"truncated size", []byte{0, 0}, true},
		{"client id longer than frame", frame(lyingClientID), false},
		{"unknown api key", frame(header(9999, 0, 1, "x")), false},
		{"negative api key", frame(header(-2, 0, 1, "x")), false},
		{"metadata version out of range", frame(header(3, 99, 1, "x")), false},
		{"produce negative version", frame(header(0, -1, 1, "x")), false},
		{"metadata body with huge array count", frame(hugeArray), false},
		{"metadata body truncated", frame(append(header(3, 1, 1, "x"), 0, 0)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr)
			if err := c.write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.halfClose {
				_ = c.conn.(*net.TCPConn).CloseWrite()
			}
			c.expectClosed()
			checkHealthy(t, b, survivor)
		})
	}

	// A frame announced but not yet sent holds its own connection only:
	// everyone else is served meanwhile.
	t.Run("stalled frame does not block others", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		if err := c.write(binary.BigEndian.AppendUint32(nil, 1000)); err != nil {
			t.Fatal(err)
		}
		checkHealthy(t, b, survivor)
	})

	// ApiVersions at a version the broker does not know is answered, not
	// closed: a v0 body with UNSUPPORTED_VERSION and the supported range,
	// so that the client can retry at a version both know.
	t.Run("api versions out of range", func(t *testing.T) {
		c := dialRaw(t, b.Addr)
		if err := c.write(frame(header(18, 999, 7, "x"))); err != nil {
			t.Fatal(err)
		}
		body, err := c.readResponse()
		if err != nil {
			t.Fatal(err)
		}
		if corr := int32(binary.BigEndian.Uint32(body)); corr != 7 {
			t.Fatalf("correlation id %d, want 7", corr)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		if err := resp.ReadFrom(body[4:]); err != nil {
			t.Fatalf("v0 body: %v", err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("error code %d, want UNSUPPORTED_VERSION (35)", resp.ErrorCode)
		}
		var found bool
		for _, k := range resp.ApiKeys {
			if k.ApiKey == 18 {
				found = k.MinVersion == 0 && k.MaxVersion >= 3
			}
		}
		if !found {
			t.Errorf("ApiVersions range missing or wrong in %+v", resp.ApiKeys)
		}
		checkHealthy(t, b, survivor)
	})
}

// batchOpts describe a v2 record batch to build by hand.
type batchOpts struct {
	codec     int16 // attributes bits 0-2
	magic     int8
	n         int   // records
	declared  int32 // NumRecords written in the header (0: n)
	records   []byte
	corruptCR bool  // flip a CRC bit after computing it
	base      int64 // base offset (0 as a producer sends it)
}

// buildBatch encodes a v2 RecordBatch as a producer would: base offset 0,
// no producer id, CRC-32C over attributes..end.
func buildBatch(o batchOpts) []byte {
	if o.magic == 0 {
		o.magic = 2
	}
	recs := o.records
	if recs == nil {
		for i := range o.n {
			r := kmsg.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("some value")}
			body := r.AppendTo(nil)
			r.Length = int32(len(body) - 1) // AppendTo wrote Length 0 as one varint byte
			recs = r.AppendTo(recs)
		}
		if o.codec == 1 {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			_, _ = zw.Write(recs)
			_ = zw.Close()
			recs = buf.Bytes()
		}
	}
	declared := o.declared
	if declared == 0 {
		declared = int32(o.n)
	}
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{
		FirstOffset:          o.base,
		PartitionLeaderEpoch: -1,
		Magic:                o.magic,
		Attributes:           o.codec,
		LastOffsetDelta:      int32(o.n - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           declared,
		Records:              recs,
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	if o.corruptCR {
		crc ^= 1
	}
	binary.BigEndian.PutUint32(raw[17:], crc)
	return raw
}

// TestBadProduce sends Produce requests with broken batches over a raw
// connection and checks Kafka's partition error code, that nothing was
// appended, and that the connection and the broker keep working.
func TestBadProduce(t *testing.T) {
	const topic = "badproduce"
	b := startBroker(t, "")
	b.createTopic(t, topic, 1, nil)
	c := dialRaw(t, b.Addr)

	codes := func(cs ...*kerr.Error) []int16 {
		var out []int16
		for _, e := range cs {
			out = append(out, e.Code)
		}
		return out
	}
	cases := []struct {
		name      string
		partition int32
		batch     []byte
		want      []int16 // acceptable codes; the first is Kafka's
		appends   bool
	}{
		{"valid batch", 0, buildBatch(batchOpts{n: 3}), []int16{0}, true},
		{"valid gzip batch", 0, buildBatch(batchOpts{n: 3, codec: 1}), []int16{0}, true},
		{"wrong crc", 0, buildBatch(batchOpts{n: 3, corruptCR: true}), codes(kerr.CorruptMessage), false},
		// DefaultRecordBatch's iterator: "Incorrect declared batch size".
		{"record count higher than records", 0, buildBatch(batchOpts{n: 3, declared: 4}), codes(kerr.InvalidRecord), false},
		{"record count lower than records", 0, buildBatch(batchOpts{n: 3, declared: 2}), codes(kerr.InvalidRecord), false},
		{"compressed record count lies", 0, buildBatch(batchOpts{n: 3, declared: 5, codec: 1}), codes(kerr.InvalidRecord), false},
		// Kafka's CompressionType.forId throws IllegalArgumentException,
		// answered as UNKNOWN_SERVER_ERROR; kcompatd answers
		// CORRUPT_MESSAGE (see recordbatch/errors.go). Either is an error
		// the client cannot retry into success.
		{"unknown codec 5", 0, buildBatch(batchOpts{n: 3, codec: 5}), codes(kerr.CorruptMessage, kerr.UnknownServerError), false},
		{"unknown codec 7", 0, buildBatch(batchOpts{n: 3, codec: 7}), codes(kerr.CorruptMessage, kerr.UnknownServerError), false},
		{"garbage gzip payload", 0, buildBatch(batchOpts{n: 3, codec: 1, records: bytes.Repeat([]byte{0xde, 0xad}, 64)}), codes(kerr.CorruptMessage, kerr.UnknownServerError), false},
		{"garbage snappy payload", 0, buildBatch(batchOpts{n: 3, codec: 2, records: bytes.Repeat([]byte{0xff}, 64)}), codes(kerr.CorruptMessage, kerr.UnknownServerError), false},
		{"garbage lz4 payload", 0, buildBatch(batchOpts{n: 3, codec: 3, records: bytes.Repeat([]byte{0x04, 0x22}, 64)}), codes(kerr.CorruptMessage, kerr.UnknownServerError), false},
		{"garbage zstd payload", 0, buildBatch(batchOpts{n: 3, codec: 4, records: []byte{0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff, 0xff}}), codes(kerr.CorruptMessage, kerr.UnknownServerError), false},
		// Produce v3+ accepts only magic 2.
		{"magic 1", 0, buildBatch(batchOpts{n: 3, magic: 1}), codes(kerr.InvalidRecord, kerr.CorruptMessage), false},
		// Kafka's ByteBufferLogInputStream yields no batch from a truncated
		// one, so validateRecords answers "at least one record batch".
		{"truncated batch", 0, buildBatch(batchOpts{n: 3})[:40], codes(kerr.InvalidRecord, kerr.CorruptMessage), false},
		{"unknown partition", 99, buildBatch(batchOpts{n: 3}), codes(kerr.UnknownTopicOrPartition), false},
		{"negative partition", -1, buildBatch(batchOpts{n: 3}), codes(kerr.UnknownTopicOrPartition), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := b.endOffsets(t, topic)[0]
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(8)
			req.Acks = -1
			req.TimeoutMillis = 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = tc.partition
			rp.Records = tc.batch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := kmsg.NewPtrProduceResponse()
			if err := c.request(req, resp); err != nil {
				c = dialRaw(t, b.Addr) // the next case gets a working connection
				t.Fatalf("produce: %v (a broken batch is a partition error, not a closed connection)", err)
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("response has %d topics, want one topic with one partition: %+v", len(resp.Topics), resp.Topics)
			}
			got := resp.Topics[0].Partitions[0]
			ok := false
			for _, w := range tc.want {
				ok = ok || got.ErrorCode == w
			}
			if !ok {
				t.Errorf("error code %d (%v), want one of %v", got.ErrorCode, kerr.ErrorForCode(got.ErrorCode), tc.want)
			}
			after := b.endOffsets(t, topic)[0]
			switch {
			case tc.appends && after != before+3:
				t.Errorf("high watermark %d -> %d, want +3", before, after)
			case !tc.appends && after != before:
				t.Errorf("rejected batch moved the high watermark %d -> %d", before, after)
			}
			if s := b.Suspicious(); s != "" {
				t.Fatalf("broker output contains %q", s)
			}
		})
	}
}

// TestBadMetadataNullTopic sends Metadata v12 and v13 naming a topic by
// neither name nor id (a null name, a zero id), which once dereferenced
// nil: the broker answers as Kafka 4.3.1 does (the whole request fails,
// every topic UNKNOWN_SERVER_ERROR, a null name as ""), keeps the
// connection, and logs no panic.
func TestBadMetadataNullTopic(t *testing.T) {
	b := startBroker(t, "")
	c := dialRaw(t, b.Addr)
	for _, v := range []int16{12, 13} {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(v)
		md.Topics = []kmsg.MetadataRequestTopic{{}}
		resp := kmsg.NewPtrMetadataResponse()
		if err := c.request(md, resp); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownServerError.Code ||
			resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != "" {
			t.Fatalf("v%d: %+v", v, resp.Topics)
		}
	}
	checkHealthy(t, b, c)
}

// TestHugeDecodeRefused: frames whose decoded form would be many times
// their size (kmsg sizes arrays from the client's counts) are refused
// before they are decoded: the connection is closed with a log line
// saying why, the broker's memory stays within the frame plus the decode
// bound (before it, the 100 MiB Fetch alone cost about 3 GB), and every
// other connection is served.
func TestHugeDecodeRefused(t *testing.T) {
	b := startBroker(t, "")
	survivor := dialRaw(t, b.Addr)
	checkHealthy(t, b, survivor)
	rss0, err := b.RSS()
	if err != nil {
		t.Skipf("no RSS: %v", err)
	}
	const frameBytes = 100 << 20
	flexHeader := func(key, version int16) []byte { return append(header(key, version, 1, "x"), 0) }

	fetch := flexHeader(1, 18)
	fetch = binary.BigEndian.AppendUint32(fetch, 0)          // max wait
	fetch = binary.BigEndian.AppendUint32(fetch, 1)          // min bytes
	fetch = binary.BigEndian.AppendUint32(fetch, 1<<20)      // max bytes
	fetch = append(fetch, 0)                                 // isolation level
	fetch = binary.BigEndian.AppendUint32(fetch, 0)          // session id
	fetch = binary.BigEndian.AppendUint32(fetch, 0xffffffff) // session epoch
	fetch = binary.AppendUvarint(fetch, frameBytes/2)        // topics
	fetch = append(fetch, make([]byte, frameBytes-len(fetch))...)

	md := flexHeader(3, 12)
	md = binary.AppendUvarint(md, 3_000_001) // 3M topics: zero id, null name, no tags
	md = append(md, bytes.Repeat(append(make([]byte, 16), 0, 0), 3_000_000)...)
	md = append(md, 0, 0, 0)

	produce := flexHeader(0, 9)
	produce = append(produce, 0, 0, 1, 0, 0, 0x75, 0x30) // null txn id, acks 1, timeout
	produce = append(produce, 2, 2, 't')                 // one topic "t"
	parts := (frameBytes - len(produce) - 8) / 6
	produce = binary.AppendUvarint(produce, uint64(parts)+1)
	produce = append(produce, bytes.Repeat([]byte{0, 0, 0, 0, 0, 0}, parts)...) // index, null records, no tags
	produce = append(produce, 0, 0)

	for _, tc := range []struct {
		name string
		req  []byte
	}{
		{"100 MiB Fetch v18, 50M topics", fetch},
		{"Metadata v12, 3M empty topics", md},
		{"100 MiB Produce v9, 17M partitions", produce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr)
			if err := c.write(frame(tc.req)); err != nil {
				t.Fatal(err)
			}
			c.expectClosed()
			checkHealthy(t, b, survivor)
		})
	}
	rss, err := b.RSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("broker RSS %d MiB before the frames, %d MiB after", rss0>>20, rss>>20)
	// Two frames' buffers (one read, one growing) and the 256 MiB decode
	// bound, with room for the runtime's slack (measured: 229 MiB; a
	// race-built broker's shadow memory about triples it).
	bound := int64(2*frameBytes + 256<<20 + 64<<20) // protocol's maxDecodedBytes
	if raceEnabled {
		bound *= 3
	}
	if grown := rss - rss0; grown > bound {
		t.Fatalf("broker RSS grew by %d MiB, bound %d MiB", grown>>20, bound>>20)
	}
	if out := b.Output(); !strings.Contains(out, "request too large to decode") {
		t.Fatalf("no log line saying why the connections were closed:\n%s", out)
	}
}
