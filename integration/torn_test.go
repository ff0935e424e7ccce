package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTornTailRecovery damages the end of the active segment after a kill
// -9, the way a torn write or a crash between write and fsync on a real
// disk would, and checks that recovery cuts exactly the damaged bytes:
// every complete batch before them is served, nothing of the damaged batch
// is visible, the .log file is back to its size before the damage, and new
// records continue at the next offset. (A kill -9 alone rarely tears a
// write: the page cache keeps whole write calls.)
func TestTornTailRecovery(t *testing.T) {
	const topic = "torn"
	n := scale(2_000)
	cases := []struct {
		name   string
		damage func(next int64) []byte // bytes to append to the active segment, whose next offset is next
	}{
		// The damaged batches carry the next offset, so that only the
		// damage makes them invalid.
		{"half of a batch", func(next int64) []byte {
			b := buildBatch(batchOpts{n: 20, base: next})
			return b[:len(b)/2]
		}},
		{"batch with a flipped bit", func(next int64) []byte {
			b := buildBatch(batchOpts{n: 20, base: next})
			b[len(b)-3] ^= 0x10
			return b
		}},
		{"zeros", func(int64) []byte { return make([]byte, 4096) }},
		{"only a batch header", func(next int64) []byte { return buildBatch(batchOpts{n: 5, base: next})[:61] }},
		{"garbage", func(int64) []byte { return bytes.Repeat([]byte{0xa5, 0x5a, 0xff, 0x00}, 300) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := startBroker(t, "")
			b.createTopic(t, topic, 1, nil)
			opts := append(b.producerOpts(t), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			cl, closeCl := b.tempClient(t, opts...)
			sent := produceAll(t, cl, topic, n, 1)
			closeCl()
			if err := b.Kill(); err != nil {
				t.Fatal(err)
			}

			seg := activeSegment(t, filepath.Join(b.dataDir, topic+"-0"))
			before, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			damage := tc.damage(int64(n))
			f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(damage); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}

			b = startBroker(t, b.dataDir, b.configs...)
			if info, err := os.Stat(seg); err != nil {
				t.Fatal(err)
			} else if info.Size() != int64(len(before)) {
				t.Errorf("segment is %d bytes after recovery, want %d (the %d damaged bytes cut)", info.Size(), len(before), len(damage))
			}
			checkConsumed(t, b, topic, sent, 1)

			// New records continue right after the last complete batch.
			cl2, closeCl2 := b.tempClient(t, opts...)
			defer closeCl2()
			more := produceAll(t, cl2, topic, 100, 1)
			checkConsumed(t, b, topic, append(slices.Clone(sent), more...), 1)
		})
	}
}

// activeSegment returns the .log file with the highest base offset in a
// partition directory (Kafka's 20-digit names sort by base offset).
func activeSegment(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			logs = append(logs, e.Name())
		}
	}
	if len(logs) == 0 {
		t.Fatalf("no .log segment in %s", dir)
	}
	slices.Sort(logs)
	return filepath.Join(dir, logs[len(logs)-1])
}
