package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// spliceCase builds a Fetch response at version v whose partitions carry
// record bytes of the given sizes (-1: null), with the fields around them
// set so that each version's optional parts are encoded.
func spliceCase(v int16, sizes []int, rng *rand.Rand) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	resp.SessionID = 7
	for i, n := range sizes {
		if i%3 == 0 {
			t := kmsg.NewFetchResponseTopic()
			t.Topic = fmt.Sprintf("topic-%d", i)
			t.TopicID = [16]byte{byte(i), 1}
			resp.Topics = append(resp.Topics, t)
		}
		t := &resp.Topics[len(resp.Topics)-1]
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = int32(i)
		p.HighWatermark = int64(1000 + i)
		p.LastStableOffset = int64(900 + i)
		p.LogStartOffset = int64(i)
		if i%4 == 1 {
			p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 3, FirstOffset: 4}}
		}
		if i%5 == 2 {
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 1, 2
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 1, 0
		}
		if n >= 0 {
			p.RecordBatches = make([]byte, n)
			for j := range p.RecordBatches {
				p.RecordBatches[j] = byte(rng.IntN(256))
			}
		}
		t.Partitions = append(t.Partitions, p)
	}
	if v >= 16 {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = 1, "127.0.0.1", 9092
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp
}

// responseHeader is the part of a frame conn.write puts before the body.
func responseHeader(resp kmsg.Response, corr int32) []byte {
	b := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 0}, uint32(corr))
	if resp.IsFlexible() {
		b = append(b, 0)
	}
	return b
}

// TestFetchSpliceMatchesKmsg checks that the spliced frame is byte for
// byte kmsg's encoding, at every Fetch version, for mixes of partitions
// above and below the splice size, empty and null record bytes, and that
// the response is left unchanged.
func TestFetchSpliceMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	big, small := spliceMinBytes, spliceMinBytes-1
	shapes := map[string][]int{
		"one large":            {big},
		"large and small":      {100, big + 5, 0, small, 3 * big, -1, 1},
		"every partition big":  {big, big + 1, big + 2, big + 3, big + 4, big + 5, big + 6},
		"uvarint length sizes": {1 << 21, 1<<14 + 1, 1<<16 - 1},
		"only small":           {10, small, 0, -1},
	}
	var s fetchSplicer
	for v := int16(4); v <= 18; v++ {
		for name, sizes := range shapes {
			t.Run(fmt.Sprintf("v%d/%s", v, name), func(t *testing.T) {
				resp := spliceCase(v, sizes, rng)
				want := append(responseHeader(resp, 42), resp.AppendTo(nil)...)
				binary.BigEndian.PutUint32(want, uint32(len(want)-4))

				bufs, _, ok := s.encode(responseHeader(resp, 42), resp)
				wantOK := false
				for _, n := range sizes {
					wantOK = wantOK || n >= spliceMinBytes
				}
				if ok != wantOK {
					t.Fatalf("spliced %v, want %v", ok, wantOK)
				}
				if !ok {
					return
				}
				var got bytes.Buffer
				if _, err := bufs.WriteTo(&got); err != nil {
					t.Fatal(err)
				}
				s.clear()
				if !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("spliced frame differs from kmsg's (%d vs %d bytes)", got.Len(), len(want))
				}
				if again := append(responseHeader(resp, 42), resp.AppendTo(nil)...); !bytes.Equal(again[4:], want[4:]) {
					t.Fatal("encode changed the response")
				}
			})
		}
	}
}

// TestFetchSpliceOverConn writes a spliced response through a real socket
// and decodes it as a client does.
func TestFetchSpliceOverConn(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := &conn{s: &Server{}, nc: a, writev: true} // net.Buffers falls back to a write per piece
	resp := spliceCase(13, []int{spliceMinBytes * 2, 5, spliceMinBytes}, rand.New(rand.NewPCG(3, 4)))
	errc := make(chan error, 1)
	go func() { errc <- c.write(header{correlation: 9}, resp) }()
	frame, err := readFrame(b, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != 9 {
		t.Fatalf("correlation id %d", got)
	}
	got := kmsg.NewPtrFetchResponse()
	got.Version = 13
	if err := got.ReadFrom(frame[5:]); err != nil {
		t.Fatal(err)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			w, g := resp.Topics[i].Partitions[j].RecordBatches, got.Topics[i].Partitions[j].RecordBatches
			if !bytes.Equal(w, g) {
				t.Fatalf("topic %d partition %d: records differ", i, j)
			}
		}
	}
}

// TestFetchSplicedOverWire fetches from a real store over loopback at
// every version, with partitions above and below the splice size and
// several requests in flight, and checks each partition's bytes against
// the log's own read: pooled read buffers must not be reused before their
// response is written.
func TestFetchSplicedOverWire(t *testing.T) {
	br := startBroker(t, nil)
	tp := br.createTopic(t, "spliced", 3, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	for p, l := range tp.Partitions {
		for range 8 {
			var recs []recordbatch.Record
			for range 1 + p*10 { // partition 0: tiny batches, 1 and 2: ~10 and ~20 KiB
				v := make([]byte, 1000)
				for i := range v {
					v[i] = byte(rng.IntN(256))
				}
				recs = append(recs, recordbatch.Record{Value: v})
			}
			if _, err := l.Append(testBatch(t, recordbatch.None, br.nowMs(), recs...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	w := dialWire(t, br.addr)
	for v := int16(4); v <= 18; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			type sent struct {
				corr   int32
				offset int64
			}
			var inFlight []sent
			for _, off := range []int64{0, 10, 40} {
				req := kmsg.NewPtrFetchRequest()
				req.SetVersion(v)
				req.MaxBytes = 50 << 20
				req.SessionEpoch = -1
				req.ReplicaID = -1
				if v >= 15 {
					req.ReplicaState.ID = -1
				}
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = "spliced", tp.ID
				for p := range int32(3) {
					rp := kmsg.NewFetchRequestTopicPartition()
					rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, min(off, 7), 1<<20
					if p > 0 {
						rp.FetchOffset = off * int64(p)
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
				inFlight = append(inFlight, sent{w.send(req), off})
			}
			for _, s := range inFlight {
				r, err := w.recv(kmsg.Fetch.Int16(), v, s.corr)
				if err != nil {
					t.Fatal(err)
				}
				resp := r.(*kmsg.FetchResponse)
				if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
					t.Fatalf("response: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
				}
				spliced := false
				for _, rp := range resp.Topics[0].Partitions {
					want := min(s.offset, 7)
					if rp.Partition > 0 {
						want = s.offset * int64(rp.Partition)
					}
					rr, err := tp.Partitions[rp.Partition].Read(want, 1<<20, true)
					if err != nil {
						t.Fatal(err)
					}
					if rp.ErrorCode != 0 || !bytes.Equal(rp.RecordBatches, rr.Records) {
						t.Fatalf("partition %d at %d: error %d, %d bytes, want %d", rp.Partition, want, rp.ErrorCode, len(rp.RecordBatches), len(rr.Records))
					}
					spliced = spliced || len(rp.RecordBatches) >= spliceMinBytes
				}
				if !spliced {
					t.Fatal("no partition large enough to be spliced")
				}
			}
		})
	}
}

// FuzzFetchSplice checks the splice against kmsg's encoding for responses
// decoded from arbitrary bytes (any field values, tagged fields included),
// with some partitions' records grown past the splice size.
func FuzzFetchSplice(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, v := range []int16{4, 11, 12, 13, 16, 18} {
		f.Add(v, uint8(0b101), spliceCase(v, []int{10, 20, -1, 0, 5}, rng).AppendTo(nil))
	}
	var s fetchSplicer
	f.Fuzz(func(t *testing.T, v int16, grow uint8, b []byte) {
		if v < 4 || v > 18 {
			return
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		if err := resp.ReadFrom(b); err != nil {
			return
		}
		k, large := 0, false
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				p := &resp.Topics[ti].Partitions[pi]
				if grow&(1<<(k%8)) != 0 {
					p.RecordBatches = append(p.RecordBatches, make([]byte, spliceMinBytes)...)
				}
				large = large || len(p.RecordBatches) >= spliceMinBytes
				k++
			}
		}
		want := append(responseHeader(resp, 1), resp.AppendTo(nil)...)
		binary.BigEndian.PutUint32(want, uint32(len(want)-4))
		bufs, _, ok := s.encode(responseHeader(resp, 1), resp)
		if ok != large {
			t.Fatalf("spliced %v with large partitions %v", ok, large)
		}
		if !ok {
			return
		}
		var got bytes.Buffer
		bufs.WriteTo(&got)
		s.clear()
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("spliced frame differs from kmsg's")
		}
	})
}
