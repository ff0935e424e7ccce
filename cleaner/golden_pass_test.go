package cleaner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kcompatd/kcompatd/internal/vfs/memfs"
	"github.com/kcompatd/kcompatd/partition"
	"github.com/kcompatd/kcompatd/recordbatch"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden_pass.txt")

// goldenPassFile holds, per seeded workload, the digest of the log after
// every pass, as the cleaner wrote it before its fast path (commit
// 749d325): a faster pass must write the same bytes.
const goldenPassFile = "testdata/golden_pass.txt"

// TestPassOutputGolden runs seeded workloads (every codec, record
// headers, tombstones, keyless records, idempotent and transactional
// producers, LogAppendTime, tiny offset maps forcing partial passes,
// horizons passing) and compares the log after each pass with the digest
// recorded in testdata. Uncompressed batches are compared byte for byte;
// compressed ones by their header (CRC and length aside) and decompressed
// records, so a change of recordbatch's compressors does not show here.
func TestPassOutputGolden(t *testing.T) {
	var lines []string
	for seed := uint64(1); seed <= 60; seed++ {
		lines = append(lines, fmt.Sprintf("%d %s", seed, goldenWorkload(t, seed)))
	}
	got := strings.Join(lines, "\n") + "\n"
	if *updateGolden {
		if err := os.WriteFile(goldenPassFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenPassFile)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("workload differs:\n got %s\nwant %s", gl[i], wl[i])
			}
		}
	}
}

// goldenWorkload runs one workload and returns the digest of the log
// after each of its passes.
func goldenWorkload(t *testing.T, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b9))
	e := newTestEnv(t, memfs.New())
	e.quiet = true
	e.ccfg.DedupeBufferSize = int64([]int{3, 7, 40, 100000}[rng.IntN(4)]) * entrySize
	e.open()
	defer e.close()
	ov := map[string]string{
		"internal.segment.bytes": fmt.Sprint([]int{300, 1000, 4000}[rng.IntN(3)]),
		"delete.retention.ms":    fmt.Sprint([]int{0, 50}[rng.IntN(2)]),
	}
	if rng.IntN(3) == 0 {
		ov["message.timestamp.type"] = "LogAppendTime"
	}
	l := e.topic("g", ov)
	codecs := []recordbatch.Codec{recordbatch.None, recordbatch.None, recordbatch.Gzip, recordbatch.Snappy, recordbatch.LZ4, recordbatch.Zstd}
	txnOpen := false
	var digests []string
	seq := int32(0)
	for op := 0; op < 120; op++ {
		switch x := rng.IntN(20); {
		case x == 0 && txnOpen:
			e.appendMarker(l, 9, 0, rng.IntN(2) == 0)
			txnOpen = false
		case x < 16:
			spec := recordbatch.BatchSpec{Codec: codecs[rng.IntN(len(codecs))], BaseTimestamp: e.now(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
			n := 1 + rng.IntN(12)
			switch y := rng.IntN(8); {
			case y == 0:
				spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence, spec.Transactional = 9, 0, seq, true
				txnOpen = true
			case y < 3:
				spec.ProducerID, spec.ProducerEpoch, spec.BaseSequence = int64(1+rng.IntN(2)), 0, seq
			}
			seq += int32(n)
			recs := make([]recordbatch.Record, n)
			for i := range recs {
				r := recordbatch.Record{OffsetDelta: int32(i), TimestampDelta: int64(rng.IntN(5)) - 1,
					Key: []byte(fmt.Sprintf("key-%0*d", 1+rng.IntN(20), rng.IntN(30)))}
				switch z := rng.IntN(20); {
				case z == 0:
					r.Key = nil
					r.Value = []byte("keyless")
				case z < 4: // tombstone
				case z == 4:
					r.Value = []byte{}
				default:
					r.Value = bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(200))
				}
				if rng.IntN(4) == 0 {
					r.Headers = []recordbatch.RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "n"}}
				}
				recs[i] = r
			}
			b, err := recordbatch.Build(spec, recs)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendWithOrigin(b, recordbatch.OriginInternal); err != nil {
				t.Fatalf("Append: %v", err)
			}
			e.clock.Advance(time.Duration(rng.IntN(10)) * time.Millisecond)
		default:
			e.clock.Advance(time.Duration(rng.IntN(40)) * time.Millisecond)
			if _, err := e.cleaner.CleanLog(tpOf(l)); err != nil {
				t.Fatalf("seed %d: CleanLog: %v", seed, err)
			}
			digests = append(digests, digestFn(t, l, e.cleaner.Checkpoint(tpOf(l))))
		}
	}
	if txnOpen {
		e.appendMarker(l, 9, 0, false)
	}
	for range 4 {
		e.clock.Advance(60 * time.Millisecond)
		if _, err := e.cleaner.CleanLog(tpOf(l)); err != nil {
			t.Fatalf("seed %d: CleanLog: %v", seed, err)
		}
		digests = append(digests, digestFn(t, l, e.cleaner.Checkpoint(tpOf(l))))
	}
	return strings.Join(digests, " ")
}

// digestFn is the digest the workloads record (logDigest).
var digestFn = logDigest

// logDigest is a short digest of every segment's bases and batches (see
// TestPassOutputGolden for how compressed batches count) and the
// checkpoint.
func logDigest(t *testing.T, l *partition.Log, checkpoint int64) string {
	h := sha256.New()
	fmt.Fprintf(h, "cp %d\n", checkpoint)
	for _, s := range l.Segments() {
		fmt.Fprintf(h, "seg %d %d\n", s.BaseOffset, s.NextOffset)
		data := make([]byte, s.Size)
		for got := 0; got < len(data); {
			n, err := l.ReadSegment(s.BaseOffset, data[got:], int64(got))
			if err != nil || n == 0 {
				t.Fatalf("ReadSegment: %v", err)
			}
			got += n
		}
		for len(data) > 0 {
			bh, err := recordbatch.ParseHeader(data)
			if err != nil {
				t.Fatal(err)
			}
			b := data[:bh.Size()]
			data = data[bh.Size():]
			if bh.Codec() == recordbatch.None {
				h.Write(b)
				continue
			}
			h.Write(b[:8])
			h.Write(b[12:17])
			h.Write(b[21:recordbatch.HeaderSize])
			raw, err := recordbatch.Decompress(bh.Codec(), b[recordbatch.HeaderSize:], 1<<26)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(raw)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
