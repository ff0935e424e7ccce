package protocol

import (
	"testing"

	"github.com/kcompatd/kcompatd/recordbatch"
)

// BenchmarkProduce measures the server's produce path over loopback: one
// connection, acks=-1, 16 records of 1 KiB per uncompressed batch. The
// server's CPU per byte is what the performance budget is about; compare
// runs with -cpuprofile.
func BenchmarkProduce(b *testing.B) {
	br := startBroker(b, nil)
	br.createTopic(b, "bench", 1, nil)
	var recs []recordbatch.Record
	for range 16 {
		recs = append(recs, recordbatch.Record{Key: []byte("key"), Value: make([]byte, 1024)})
	}
	batch := testBatch(b, recordbatch.None, br.nowMs(), recs...)
	w := dialWire(b, br.addr)
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		req := produceReq(11, "bench", [16]byte{}, 0, batch)
		sp := onlyProducePartition(b, w.roundTrip(req))
		if sp.ErrorCode != 0 {
			b.Fatalf("error %d", sp.ErrorCode)
		}
	}
}
