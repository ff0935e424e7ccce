package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// trickleReader returns at most n bytes per Read, as a socket does.
type trickleReader struct {
	r io.Reader
	n int
}

func (t *trickleReader) Read(p []byte) (int, error) { return t.r.Read(p[:min(len(p), t.n)]) }

// TestReadFrameBodySums: the sums a read takes make the CRC of any range
// of the frame, whatever the sizes the reads return.
func TestReadFrameBodySums(t *testing.T) {
	body := make([]byte, 3<<20+12345)
	for i := range body {
		body[i] = byte(i*7 + i>>9)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, step := range []int{1000, 70000, 1 << 20} {
		var sums recordbatch.ChunkSums
		got, err := readFrameBody(&trickleReader{bytes.NewReader(body), step}, int32(len(body)), &sums)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("step %d: read %d bytes, %v", step, len(got), err)
		}
		for _, r := range [][2]int{{0, len(got)}, {61, 2<<20 + 5}, {recordbatch.SumChunk, 5 * recordbatch.SumChunk}} {
			crc, ok := sums.Sum(got[r[0]:r[1]])
			if !ok || crc != crc32.Checksum(got[r[0]:r[1]], castagnoli) {
				t.Fatalf("step %d, range %v: crc %08x ok %v", step, r, crc, ok)
			}
		}
	}
}

// TestProduceSumsOnlyLargeProduce: only Produce frames of at least
// minSummedFrame bytes are summed; the peek leaves the body unread.
func TestProduceSumsOnlyLargeProduce(t *testing.T) {
	frame := func(key int16) *bufio.Reader {
		b := make([]byte, 64)
		binary.BigEndian.PutUint16(b, uint16(key))
		return bufio.NewReader(bytes.NewReader(b))
	}
	if s := produceSums(frame(kmsg.Produce.Int16()), minSummedFrame); s == nil {
		t.Error("a large Produce frame is not summed")
	}
	if s := produceSums(frame(kmsg.Produce.Int16()), minSummedFrame-1); s != nil {
		t.Error("a small Produce frame is summed")
	}
	if s := produceSums(frame(kmsg.Fetch.Int16()), 10<<20); s != nil {
		t.Error("a Fetch frame is summed")
	}
	br := frame(kmsg.Produce.Int16())
	produceSums(br, minSummedFrame)
	if k, _ := br.Peek(2); binary.BigEndian.Uint16(k) != uint16(kmsg.Produce.Int16()) {
		t.Error("the peek consumed the body")
	}
}

// TestProduceLargeFrameCRC: a Produce frame large enough to be summed as
// it arrives still has each corrupted byte of its batch found, in a chunk
// summed on arrival or in the batch's unaligned ends, and nothing of it
// is written; the intact batch appends.
func TestProduceLargeFrameCRC(t *testing.T) {
	b := startBroker(t, nil)
	b.createTopic(t, "big", 1, map[string]string{"max.message.bytes": "8388608"})
	var recs []recordbatch.Record
	for i := range 1500 {
		v := make([]byte, 1024)
		v[0] = byte(i)
		recs = append(recs, recordbatch.Record{Key: []byte("k"), Value: v})
	}
	good := testBatch(t, recordbatch.None, b.nowMs(), recs...)
	if len(good) < minSummedFrame+3*recordbatch.SumChunk {
		t.Fatalf("batch of %d bytes is too small to span summed chunks", len(good))
	}
	w := dialWire(t, b.addr)
	log := b.store.Topic("big").Partitions[0]
	for _, at := range []int{30, 100, len(good) / 2, len(good) - 2} {
		bad := cloneBytes(good)
		bad[at] ^= 0x10
		sp := onlyProducePartition(t, w.roundTrip(produceReq(11, "big", [16]byte{}, 0, bad)))
		if sp.ErrorCode != kerr.CorruptMessage.Code {
			t.Fatalf("byte %d corrupted: error %s, want CORRUPT_MESSAGE", at, kerr.ErrorForCode(sp.ErrorCode))
		}
		if leo := log.Offsets().LogEndOffset; leo != 0 {
			t.Fatalf("byte %d corrupted: log end offset %d", at, leo)
		}
	}
	sp := onlyProducePartition(t, w.roundTrip(produceReq(11, "big", [16]byte{}, 0, good)))
	if sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("intact batch: %+v", sp)
	}
}
