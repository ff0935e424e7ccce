package offline

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kafkaSeeds are the .log files Apache Kafka wrote, in testdata/kafka.
func kafkaSeeds(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "kafka", "*", "*.log"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed segments: %v", err)
	}
	var out [][]byte
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzSegment runs dump-log (every decoder, text and JSON) and verify's
// scan over arbitrary bytes as a .log file. Invariants: never panics;
// the bytes dump-log and verify account for (batches plus trailing bytes)
// never exceed the input; when verify reports no problem, dump-log reads
// every byte as a valid batch (verify checks more: offsets too).
func FuzzSegment(f *testing.F) {
	// A small bound on decompression: a compression bomb costs the
	// fuzzer time, not a finding (the bound itself is what is tested).
	mem := func(b []byte) *segReader {
		s := memSegment("00000000000000000000.log", b)
		s.maxDecompressed = 1 << 20
		return s
	}
	for _, b := range kafkaSeeds(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 80))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, o := range []DumpOptions{
			{PrintData: true, MaxMessageSize: defaultMaxMessageSize},
			{OffsetsDecoder: true, JSON: true, MaxMessageSize: defaultMaxMessageSize},
			{TxnLogDecoder: true, MaxMessageSize: defaultMaxMessageSize},
		} {
			d := &dumper{opts: o, out: io.Discard, errw: io.Discard}
			seg := mem(b)
			d.segment("00000000000000000000.log", 0, seg)
			if seg.pos > int64(len(b)) {
				t.Fatalf("dump-log read to position %d of %d bytes", seg.pos, len(b))
			}
		}
		v := &verifier{}
		info := v.scan("x.log", 0, -1, mem(b))
		if info.readable > int64(len(b)) {
			t.Fatalf("verify read %d of %d bytes", info.readable, len(b))
		}
		var out bytes.Buffer
		d := &dumper{opts: DumpOptions{PrintData: true}, out: &out, errw: io.Discard}
		d.segment("x.log", 0, mem(b))
		clean := !d.failed && !strings.Contains(out.String(), "isvalid: false") && !strings.Contains(out.String(), "invalid bytes at the end")
		if !clean && len(v.res.Problems) == 0 {
			t.Fatalf("dump-log clean %v, verify problems %q", clean, v.res.Problems)
		}
	})
}

// FuzzCoordinatorRecords feeds arbitrary keys and values to the
// --offsets-decoder and --transaction-log-decoder parsers. Invariants:
// never panics; a key always gives text to print; a value is printed only
// with a key that decoded as JSON.
func FuzzCoordinatorRecords(f *testing.F) {
	f.Add([]byte{0, 2, 0, 3, 'g', 'r', 'p'}, []byte{0, 3, 0, 0})
	f.Add([]byte{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 0}, []byte{0, 4, 0, 0, 0, 0, 0, 0, 0, 5})
	f.Add([]byte{0, 0, 0, 2, 't', 'x'}, []byte{0, 1, 0})
	f.Add([]byte{0, 9}, []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		for _, p := range []recordParser{offsetsParser, txnLogParser} {
			k, v := p(42, key, value)
			if k == nil {
				t.Fatal("no key text")
			}
			if v != nil && !strings.HasPrefix(*k, "{") {
				t.Fatalf("value %q printed after a key that did not decode: %q", *v, *k)
			}
		}
	})
}
