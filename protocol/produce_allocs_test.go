package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// TestParseHeaderSharesClientID: a client id equal to the connection's
// last one is given as that same string (no allocation per request);
// any other id, or none, is read as sent.
func TestParseHeaderSharesClientID(t *testing.T) {
	frame := func(id *string) []byte { return encodeRequest(kmsg.NewPtrMetadataRequest(), 7, id)[4:] }
	prev := strp("franz")
	for _, tc := range []struct {
		name  string
		id    *string
		prev  *string
		want  *string
		share bool
	}{
		{"same id", strp("franz"), prev, prev, true},
		{"other id", strp("franz2"), prev, strp("franz2"), false},
		{"prefix of prev", strp("fran"), prev, strp("fran"), false},
		{"empty id", strp(""), prev, strp(""), false},
		{"null id", nil, prev, nil, false},
		{"no prev", strp("franz"), nil, strp("franz"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseHeaderID(frame(tc.id), tc.prev)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case (h.clientID == nil) != (tc.want == nil):
				t.Fatalf("client id %v, want %v", h.clientID, tc.want)
			case tc.want != nil && *h.clientID != *tc.want:
				t.Fatalf("client id %q, want %q", *h.clientID, *tc.want)
			case (h.clientID == tc.prev) != tc.share:
				t.Fatalf("client id shares prev: %v, want %v", h.clientID == tc.prev, tc.share)
			case h.key != kmsg.Metadata.Int16() || h.correlation != 7:
				t.Fatalf("header %+v", h)
			}
			if *prev != "franz" {
				t.Fatalf("prev changed to %q", *prev)
			}
		})
	}
}

// TestProduceAllocsIndependentOfPartitions: handling a Produce of one
// topic allocates the same for eight partitions as for one (nothing per
// partition on the request path: validation, append and answer reuse what
// the request and response already hold), less with the connection's
// spare response, and decoding a request from the same client allocates
// no client id, less again into a reused body.
func TestProduceAllocsIndependentOfPartitions(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations")
	}
	b := startBroker(t, nil)
	b.createTopic(t, "t", 8, nil)
	var recs []recordbatch.Record
	for range 16 {
		recs = append(recs, recordbatch.Record{Key: []byte("key"), Value: make([]byte, 100)})
	}
	allocs := map[int32]float64{}
	for _, parts := range []int32{1, 8} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(11)
		req.Acks = -1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		for p := range parts {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, testBatch(t, recordbatch.None, b.nowMs(), recs...)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		r := &Request{Ctx: context.Background(), Version: 11, Body: req}
		var spare *kmsg.ProduceResponse // serve's, once a response is written
		produce := func() {
			for _, rp := range req.Topics[0].Partitions {
				binary.BigEndian.PutUint64(rp.Records, 0) // a producer's base offset; Append rewrote it
			}
			r.spareProduceResp = spare
			resp, err := handleProduce(b.s, r)
			if err != nil {
				t.Fatal(err)
			}
			for _, sp := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
				if sp.ErrorCode != 0 {
					t.Fatalf("partition %d: error %d", sp.Partition, sp.ErrorCode)
				}
			}
			if spare != nil {
				spare = resp.(*kmsg.ProduceResponse)
			}
		}
		produce()
		fresh := testing.AllocsPerRun(50, produce)
		spare = new(kmsg.ProduceResponse)
		allocs[parts] = testing.AllocsPerRun(50, produce)
		if allocs[parts] >= fresh {
			t.Fatalf("%d partitions: %v allocations with a spare response, %v without", parts, allocs[parts], fresh)
		}
	}
	t.Logf("allocations per Produce: %v (by partitions)", allocs)
	if allocs[8] > allocs[1] {
		t.Fatalf("a Produce of 8 partitions allocates %v times, of one %v: something is allocated per partition", allocs[8], allocs[1])
	}

	id := "producer-1"
	frame := encodeRequest(produceReq(11, "t", [16]byte{}, 0, testBatch(t, recordbatch.None, b.nowMs())), 1, &id)[4:]
	var ru reuse
	if _, _, _, err := decodeRequestID(b.s.table, frame, &ru); err != nil || ru.clientID == nil || *ru.clientID != id {
		t.Fatalf("decode: %v, client id kept %v", err, ru.clientID)
	}
	fresh := testing.AllocsPerRun(50, func() { decodeRequestID(b.s.table, frame, nil) })
	sameID := testing.AllocsPerRun(50, func() { decodeRequestID(b.s.table, frame, &ru) })
	reused := testing.AllocsPerRun(50, func() {
		_, _, req, _ := decodeRequestID(b.s.table, frame, &ru)
		ru.produce = req.(*kmsg.ProduceRequest) // as conn.recycle, once answered
	})
	t.Logf("allocations per Produce decode: %v fresh, %v with the last client id, %v also reusing the body", fresh, sameID, reused)
	if !(reused < sameID && sameID < fresh) {
		t.Fatal("reuse does not save allocations")
	}
}

// TestDecodeProduceReused: a Produce decoded into the body of the
// connection's last one reads exactly as one decoded fresh, whatever
// the two held (versions, transactional id, topic ids, tags, topics and
// partitions).
func TestDecodeProduceReused(t *testing.T) {
	b := startBroker(t, nil)
	batch := testBatch(t, recordbatch.None, b.nowMs())
	txn := "txn"
	id := [16]byte{1, 2, 3}
	mk := func(v int16, txnID *string, topics, parts int) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		req.Acks = 1
		req.TransactionID = txnID
		for ti := range topics {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic, rt.TopicID = fmt.Sprintf("t%d", ti), id
			for p := range int32(parts) {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = p, batch
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if v >= 9 {
			req.UnknownTags.Set(99, []byte("tag"))
		}
		return encodeRequest(req, 1, strp("c"))[4:]
	}
	frames := [][]byte{
		mk(11, &txn, 3, 4), mk(3, nil, 1, 1), mk(13, nil, 2, 2), mk(9, &txn, 1, 8),
		mk(8, nil, 4, 1), mk(12, nil, 0, 0), mk(11, nil, 1, 1),
	}
	var ru reuse
	for i, f := range frames {
		_, _, want, err := decodeRequestID(b.s.table, f, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		_, _, got, err := decodeRequestID(b.s.table, f, &ru)
		if err != nil {
			t.Fatalf("frame %d reused: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("frame %d: reused %+v, fresh %+v", i, got, want)
		}
		ru.produce = got.(*kmsg.ProduceRequest)
	}
}

// TestProduceResponseReused: a Produce answered in the connection's last
// response (a spare from serve) gets the same answer as in a new one,
// whatever the last one held.
func TestProduceResponseReused(t *testing.T) {
	b := startBroker(t, nil)
	batch := testBatch(t, recordbatch.None, b.nowMs())
	mk := func(topics []string, parts int32) *Request {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(11)
		req.Acks = 1
		for _, name := range topics {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = name
			for p := range parts {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition, rp.Records = p, batch
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		return &Request{Ctx: context.Background(), Version: 11, Body: req}
	}
	// Unknown topics: every answer is an error, the same each time.
	reqs := []*Request{mk([]string{"x", "y"}, 3), mk([]string{"z"}, 1), mk(nil, 0), mk([]string{"x", "y", "z"}, 2), mk([]string{"y"}, 5)}
	var spare *kmsg.ProduceResponse
	for i, r := range reqs {
		want, err := handleProduce(b.s, r)
		if err != nil {
			t.Fatal(err)
		}
		r.spareProduceResp = spare
		got, err := handleProduce(b.s, r)
		if err != nil {
			t.Fatal(err)
		}
		if spare != nil && got != kmsg.Response(spare) {
			t.Fatalf("request %d: the spare response was not used", i)
		}
		if !bytes.Equal(got.AppendTo(nil), want.AppendTo(nil)) || !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d: reused %+v, new %+v", i, got, want)
		}
		spare = got.(*kmsg.ProduceResponse)
		clear(spare.Topics[:cap(spare.Topics)]) // as serve does once written
		spare.Topics = spare.Topics[:0]
	}
}
