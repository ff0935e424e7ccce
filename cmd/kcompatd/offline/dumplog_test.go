package offline

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sharedFixture is a fresh fixture; tests that damage it copy it first
// all the same, to say so.
func sharedFixture(t *testing.T) string { return fixture(t) }

func dump(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errw bytes.Buffer
	status = DumpLog(args, &out, &errw)
	return out.String(), errw.String(), status
}

func TestDumpLogKcompatdSegments(t *testing.T) {
	dir := sharedFixture(t)
	codecs := filepath.Join(dir, "codecs-0", "00000000000000000000.log")
	out, errs, st := dump(t, "--print-data-log", codecs)
	if st != ExitOK || errs != "" {
		t.Fatalf("status %d, stderr %q", st, errs)
	}
	ts := fixtureStart.UnixMilli()
	for _, want := range []string{
		"Dumping " + codecs + "\n",
		"Log starting offset: 0\n",
		"baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: ",
		fmt.Sprintf("| offset: 0 CreateTime: %d keySize: 5 valueSize: 51 sequence: -1 headerKeys: [] key: key-0 payload: value-none-aaaa", ts),
		fmt.Sprintf("| offset: 1 CreateTime: %d keySize: -1 valueSize: 6 sequence: -1 headerKeys: [] payload: no key\n", ts+1),
		fmt.Sprintf("| offset: 2 CreateTime: %d keySize: 1 valueSize: 12 sequence: -1 headerKeys: [h1,h2] key: h payload: with headers\n", ts+2),
		fmt.Sprintf("deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: %d size: ", ts+2),
		"compresscodec: gzip", "compresscodec: snappy", "compresscodec: lz4", "compresscodec: zstd",
		"baseOffset: 12 lastOffset: 14 count: 3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "isvalid: false") {
		t.Errorf("a batch is invalid:\n%s", out)
	}
	if n := strings.Count(out, "\n| offset: "); n != 15 {
		t.Errorf("%d record lines, want 15", n)
	}

	// Without --print-data-log: batches only.
	out, _, _ = dump(t, codecs)
	if strings.Contains(out, "| offset") || strings.Count(out, "baseOffset: ") != 5 {
		t.Errorf("batches-only output:\n%s", out)
	}
	// --deep-iteration: record metadata without data.
	out, _, _ = dump(t, "--deep-iteration", codecs)
	if !strings.Contains(out, "| offset: 1 ") || strings.Contains(out, "payload:") {
		t.Errorf("deep-iteration output:\n%s", out)
	}
}

func TestDumpLogTransactions(t *testing.T) {
	dir := sharedFixture(t)
	p := filepath.Join(dir, "txn-0")
	out, errs, st := dump(t, "--print-data-log", filepath.Join(p, "00000000000000000000.log"))
	if st != ExitOK || errs != "" {
		t.Fatalf("status %d, stderr %q", st, errs)
	}
	for _, want := range []string{
		fmt.Sprintf("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: %d producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false", txnProducerID),
		fmt.Sprintf("baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: %d producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true", txnProducerID),
		fmt.Sprintf(" keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: %d\n", txnCoordEpoch),
		fmt.Sprintf("endTxnMarker: ABORT coordinatorEpoch: %d\n", txnCoordEpoch),
		"| offset: 3 CreateTime: ",
		"sequence: 2 headerKeys: [] key: tk payload: txn-false-0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, errs, st = dump(t, filepath.Join(p, "00000000000000000000.txnindex"))
	want := fmt.Sprintf("version: 0 producerId: %d firstOffset: 3 lastOffset: 5 lastStableOffset: 6\n", txnProducerID)
	if st != ExitOK || errs != "" || !strings.HasSuffix(out, want) {
		t.Errorf("txnindex: status %d, stderr %q, output\n%s\nwant it to end in %q", st, errs, out, want)
	}

	snaps := segmentFiles(t, p, ".snapshot")
	if len(snaps) == 0 {
		t.Fatal("no producer snapshot")
	}
	out, errs, st = dump(t, snaps[len(snaps)-1])
	want = fmt.Sprintf("producerId: %d producerEpoch: 0 coordinatorEpoch: %d currentTxnFirstOffset: OptionalLong.empty lastTimestamp: ", txnProducerID, txnCoordEpoch)
	if st != ExitOK || errs != "" || !strings.Contains(out, want) || !strings.Contains(out, "firstSequence: 2 lastSequence: 3 lastOffset: 4 offsetDelta: 1") {
		t.Errorf("snapshot: status %d, stderr %q, output\n%s", st, errs, out)
	}
}

func TestDumpLogCompacted(t *testing.T) {
	dir := sharedFixture(t)
	p := filepath.Join(dir, "compacted-0")
	var all strings.Builder
	for _, f := range segmentFiles(t, p, ".log") {
		out, errs, st := dump(t, "--print-data-log", f)
		if st != ExitOK {
			t.Fatalf("%s: status %d, stderr %q", f, st, errs)
		}
		// Compaction leaves gaps, which Kafka's tool reports.
		if errs != "" && !strings.HasPrefix(errs, "Non-consecutive offsets in ") {
			t.Errorf("%s: stderr %q", f, errs)
		}
		all.WriteString(out)
	}
	out := all.String()
	// Superseded values are gone; the latest of each key stays, and so
	// do the values of the last cleaned segment (the active one is never
	// cleaned), the tombstone with them.
	for _, gone := range []string{"payload: a-0-", "payload: a-1-", "payload: b-0-", "payload: b-1-", "payload: c-0-", "payload: c-1-"} {
		if strings.Contains(out, gone) {
			t.Errorf("compacted log still has %q:\n%s", gone, out)
		}
	}
	for _, kept := range []string{"key: a payload: a-2-", "key: b\n", "deleteHorizonMs: OptionalLong[", "key: a payload: a-3-", "key: b payload: b-3-", "key: c payload: c-3-"} {
		if !strings.Contains(out, kept) {
			t.Errorf("compacted log lacks %q:\n%s", kept, out)
		}
	}
}

func TestDumpLogIndexes(t *testing.T) {
	dir := sharedFixture(t)
	p := filepath.Join(dir, "codecs-0")
	out, errs, st := dump(t, filepath.Join(p, "00000000000000000000.index"), filepath.Join(p, "00000000000000000000.timeindex"))
	if st != ExitOK || errs != "" {
		t.Fatalf("status %d, stderr %q\n%s", st, errs, out)
	}
	// index.interval.bytes=1: an entry for every batch but the first.
	for _, off := range []int{5, 8, 11, 14} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^offset: %d position: [1-9][0-9]*$`, off)).MatchString(out) {
			t.Errorf("no offset index entry for offset %d:\n%s", off, out)
		}
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^timestamp: [0-9]+ offset: %d$`, off)).MatchString(out) {
			t.Errorf("no time index entry for offset %d:\n%s", off, out)
		}
	}
}

// TestDumpLogIndexMismatch: an index entry that does not point at its
// batch is reported as Kafka reports it.
func TestDumpLogIndexMismatch(t *testing.T) {
	dir := copyDir(t, sharedFixture(t))
	idx := filepath.Join(dir, "codecs-0", "00000000000000000000.index")
	b, err := os.ReadFile(idx)
	if err != nil || len(b) < 16 {
		t.Fatalf("index: %d bytes, %v", len(b), err)
	}
	copy(b[12:16], b[4:8]) // second entry gets the first one's position
	if err := os.WriteFile(idx, b, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(idx)
	want := "Mismatches in :" + abs + "\n  Index offset: 8, log offset: 5\n"
	out, errs, _ := dump(t, idx)
	if errs != want || !strings.Contains(out, "offset: 8 position: ") {
		t.Errorf("stderr %q, want %q; stdout\n%s", errs, want, out)
	}
	// --verify-index-only: the same check, no entries printed.
	out, errs, _ = dump(t, "--verify-index-only", idx)
	if errs != want || out != "Dumping "+idx+"\n" {
		t.Errorf("--verify-index-only: stderr %q, stdout %q", errs, out)
	}
}

func TestDumpLogJSON(t *testing.T) {
	dir := sharedFixture(t)
	for _, f := range []string{"codecs-0/00000000000000000000.log", "txn-0/00000000000000000000.log",
		"codecs-0/00000000000000000000.index", "codecs-0/00000000000000000000.timeindex", "txn-0/00000000000000000000.txnindex"} {
		out, errs, st := dump(t, "--json", "--print-data-log", filepath.Join(dir, f))
		if st != ExitOK || errs != "" {
			t.Fatalf("%s: status %d, stderr %q", f, st, errs)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%s: line %q is not JSON: %v", f, l, err)
			}
		}
		if f == "codecs-0/00000000000000000000.log" {
			if len(lines) != 5 {
				t.Errorf("%d batch objects, want 5", len(lines))
			}
			var b struct {
				BaseOffset int64  `json:"baseOffset"`
				Codec      string `json:"compresscodec"`
				Valid      bool   `json:"isvalid"`
				Records    []struct {
					Offset     int64    `json:"offset"`
					Key        *string  `json:"key"`
					Payload    *string  `json:"payload"`
					HeaderKeys []string `json:"headerKeys"`
				} `json:"records"`
			}
			if err := json.Unmarshal([]byte(lines[1]), &b); err != nil {
				t.Fatal(err)
			}
			if b.BaseOffset != 3 || b.Codec != "gzip" || !b.Valid || len(b.Records) != 3 || b.Records[1].Key != nil ||
				*b.Records[1].Payload != "no key" || strings.Join(b.Records[2].HeaderKeys, ",") != "h1,h2" {
				t.Errorf("second batch: %+v", b)
			}
		}
	}
}

// TestDumpLogBadInput: damaged or foreign files give a message, not a
// panic, and dump-log never writes to what it reads.
func TestDumpLogBadInput(t *testing.T) {
	dir := copyDir(t, sharedFixture(t))
	good, err := os.ReadFile(filepath.Join(dir, "codecs-0", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[70] ^= 0xff
	badLength := bytes.Clone(good)
	copy(badLength[8:12], []byte{0, 0, 0, 3})
	huge := bytes.Clone(good[:61])
	copy(huge[8:12], []byte{0x7f, 0xff, 0xff, 0xff})
	magic1 := bytes.Clone(good)
	magic1[16] = 1
	for _, tc := range []struct {
		name, file string
		data       []byte
		status     int
		stdout     string // a substring
		stderr     string // a substring; "" means empty
	}{
		{"empty log", "00000000000000000000.log", nil, ExitOK, "Log starting offset: 0\n", ""},
		{"torn tail", "00000000000000000000.log", good[:len(good)-7], ExitOK, "invalid bytes at the end of 00000000000000000000.log", ""},
		{"flipped byte", "00000000000000000000.log", flipped, ExitProblems, "isvalid: false", "crc mismatch"},
		{"bad length", "00000000000000000000.log", badLength, ExitProblems, "Log starting offset", "smaller than minimum record overhead (14)"},
		{"huge length", "00000000000000000000.log", huge, ExitOK, "Found 61 invalid bytes", ""},
		{"magic 1", "00000000000000000000.log", magic1, ExitProblems, "Log starting offset", "only magic 2"},
		{"garbage", "00000000000000000000.log", bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 100), ExitProblems, "", "smaller than minimum"},
		{"bad name", "segment.log", good, ExitProblems, "Dumping", "not a segment file name"},
		{"unknown suffix", "00000000000000000000.foo", good, ExitOK, "Dumping", "Ignoring unknown file"},
		{"corrupt snapshot", "00000000000000000005.snapshot", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, ExitOK, "Dumping", "corrupt producer-state snapshot"},
		{"torn txnindex", "00000000000000000000.txnindex", make([]byte, 40), ExitOK, "version: 0 producerId: 0", ""},
		{"bad txnindex", "00000000000000000000.txnindex", append([]byte{0, 9}, make([]byte, 32)...), ExitProblems, "Dumping", "version 9"},
		{"index without log", "00000000000000000099.index", make([]byte, 8), ExitProblems, "Dumping", "no such file"},
		{"index past log", "00000000000000000000.index", []byte{0, 0, 0, 3, 0, 1, 0, 0}, ExitProblems, "Dumping", "no whole batch within"},
		{"odd index size", "00000000000000000000.index", []byte{1, 2, 3}, ExitOK, "is empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			if !strings.HasSuffix(tc.file, ".log") {
				if err := os.WriteFile(filepath.Join(d, "00000000000000000000.log"), good, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(d, tc.file)
			if err := os.WriteFile(p, tc.data, 0o444); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Stat(p)
			out, errs, st := dump(t, "--print-data-log", p)
			if st != tc.status {
				t.Errorf("status %d, want %d (stderr %q)", st, tc.status, errs)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, out)
			}
			if tc.stderr == "" && errs != "" || !strings.Contains(errs, tc.stderr) {
				t.Errorf("stderr %q, want %q", errs, tc.stderr)
			}
			after, _ := os.Stat(p)
			if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
				t.Errorf("dump-log changed %s", p)
			}
		})
	}
}

func TestDumpLogUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status int
	}{
		{nil, ExitUsage},
		{[]string{"--no-such-flag", "x.log"}, ExitUsage},
		{[]string{"--help"}, ExitOK},
	} {
		if _, _, st := dump(t, tc.args...); st != tc.status {
			t.Errorf("dump-log %q: status %d, want %d", tc.args, st, tc.status)
		}
	}
	// Flags after the files, and Kafka's --files, both work.
	dir := sharedFixture(t)
	f := filepath.Join(dir, "txn-0", "00000000000000000000.log")
	a, _, _ := dump(t, f, "--print-data-log")
	b, _, _ := dump(t, "--print-data-log", "--files", f)
	if a != b || !strings.Contains(a, "payload: txn-true-0") {
		t.Errorf("flags after files:\n%s\n--files:\n%s", a, b)
	}
}

// TestDumpLogIndexSanityCheck: --index-sanity-check says what Kafka's
// says (the messages of OffsetIndex and TimeIndex.sanityCheck, checked
// against Kafka 4.3.1's tool on the same files).
func TestDumpLogIndexSanityCheck(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(fixture(t), "codecs-0", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	// be writes big-endian fields: int32 as 4 bytes, int64 as 8.
	be := func(fields ...any) []byte {
		var b []byte
		for _, f := range fields {
			switch f := f.(type) {
			case int32:
				b = binary.BigEndian.AppendUint32(b, uint32(f))
			case int64:
				b = binary.BigEndian.AppendUint64(b, uint64(f))
			}
		}
		return b
	}
	ix := func(es ...[2]int32) []byte {
		var fields []any
		for _, e := range es {
			fields = append(fields, e[0], e[1])
		}
		return be(fields...)
	}
	tix := func(es ...[2]int64) []byte {
		var fields []any
		for _, e := range es {
			fields = append(fields, e[0], int32(e[1]))
		}
		return be(fields...)
	}
	abs := func(name string) string { p, _ := filepath.Abs(filepath.Join(dir, name)); return p }
	for _, tc := range []struct {
		name, file string
		data       []byte
		stdout     string
		stderr     string
	}{
		{"good index", "00000000000000000000.index", ix([2]int32{5, 167}, [2]int32{8, 359}), "00000000000000000000.index passed sanity check.\n", ""},
		{"empty index", "00000000000000000000.index", nil, "00000000000000000000.index is empty.\n", ""},
		{"index below base", "00000000000000000000.index", ix([2]int32{5, 167}, [2]int32{-3, 359}), "",
			"Corrupt index found, index file " + abs("00000000000000000000.index") + " has non-zero size but the last offset is -3 which is less than the base offset 0\n"},
		{"odd index size", "00000000000000000000.index", append(ix([2]int32{5, 167}), 'x'), "",
			"Index file " + abs("00000000000000000000.index") + " is corrupt, found 9 bytes which is neither positive nor a multiple of 8\n"},
		{"good time index", "00000000000000000000.timeindex", tix([2]int64{100, 5}, [2]int64{200, 8}), "00000000000000000000.timeindex passed sanity check.\n", ""},
		{"time going back", "00000000000000000000.timeindex", tix([2]int64{200, 5}, [2]int64{100, 8}), "",
			"Corrupt time index found, time index file (" + abs("00000000000000000000.timeindex") + ") has non-zero size but the last timestamp is 100 which is less than the first timestamp 200\n"},
		{"time index below base", "00000000000000000000.timeindex", tix([2]int64{100, 5}, [2]int64{200, -8}), "",
			"Corrupt time index found, time index file (" + abs("00000000000000000000.timeindex") + ") has non-zero size but the last offset is -8 which is less than the first offset 0\n"},
		{"odd time index size", "00000000000000000000.timeindex", append(tix([2]int64{100, 5}), 1, 2), "",
			"Time index file " + abs("00000000000000000000.timeindex") + " is corrupt, found 14 bytes which is neither positive nor a multiple of 12\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.file)
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, _ := dump(t, "--index-sanity-check", p)
			if want := "Dumping " + p + "\n" + strings.ReplaceAll(tc.stdout, "00000000000000000000.", filepath.Join(dir, "00000000000000000000.")); out != want || errs != tc.stderr {
				t.Errorf("stdout %q, want %q\nstderr %q, want %q", out, want, errs, tc.stderr)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, tc.data) {
				t.Errorf("the file changed (Kafka's tool trims an index of an odd size; ours reads only)")
			}
		})
	}
}
