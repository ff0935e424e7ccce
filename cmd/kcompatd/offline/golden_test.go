package offline

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goldenFlags are dump-log's flags for each golden file's mode (the name
// is FILE.MODE.golden; testdata/kafka/golden.sh made them with the same
// flags given to Apache Kafka 4.3.1's DumpLogSegments).
var goldenFlags = map[string][]string{
	"batches": nil,
	"data":    {"--print-data-log"},
	"offsets": {"--offsets-decoder"},
	"txnlog":  {"--transaction-log-decoder"},
	"dump":    nil,
}

// TestKafkaGolden compares dump-log's output, standard output and
// standard error, with Apache Kafka 4.3.1's kafka-dump-log's output for
// the same files, byte for byte: segments, indexes, snapshots and
// transaction indexes written by Kafka (testdata/kafka) and by kcompatd
// (testdata/kcompatd, which shows too that Kafka's tool reads kcompatd's
// files as kcompatd does).
func TestKafkaGolden(t *testing.T) {
	for _, d := range []string{"kafka", "kcompatd"} {
		t.Run(d, func(t *testing.T) { testGoldenDir(t, filepath.Join("testdata", d)) })
	}
}

func testGoldenDir(t *testing.T, goldenDir string) {
	t.Chdir(goldenDir)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	goldens, err := filepath.Glob("*/*.golden")
	if err != nil || len(goldens) < 20 {
		t.Fatalf("%d golden files, %v", len(goldens), err)
	}
	for _, g := range goldens {
		stem := strings.TrimSuffix(g, ".golden")
		mode := filepath.Ext(stem)
		src := strings.TrimSuffix(stem, mode)
		flags, ok := goldenFlags[mode[1:]]
		if !ok {
			t.Fatalf("%s: unknown mode %q", g, mode)
		}
		t.Run(g, func(t *testing.T) {
			want, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			wantErr, err := os.ReadFile(stem + ".stderr")
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			wantStatus := ExitOK
			if b, err := os.ReadFile(stem + ".status"); err == nil {
				// Kafka's tool died of an exception; dump-log reports
				// the same problem with status 1.
				if wantStatus, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
					t.Fatal(err)
				}
				// Kafka dies in the middle of a line; dump-log ends it.
				if len(want) > 0 && want[len(want)-1] != '\n' {
					want = append(want, '\n')
				}
			}
			var out, errw bytes.Buffer
			if st := DumpLog(append(append([]string(nil), flags...), src), &out, &errw); st != wantStatus {
				t.Errorf("status %d, want %d", st, wantStatus)
			}
			if got := out.String(); got != string(want) {
				t.Errorf("stdout differs from Kafka's:\n%s", lineDiff(string(want), got))
			}
			gotErr := strings.ReplaceAll(errw.String(), dir+string(filepath.Separator), "$DIR/")
			if gotErr != string(wantErr) {
				t.Errorf("stderr differs from Kafka's:\n%s", lineDiff(string(wantErr), gotErr))
			}
		})
	}
}

// TestVerifyKafkaDir: a data dir written and cleanly stopped by Apache
// Kafka passes verify, and so does the kcompatd one beside it.
func TestVerifyKafkaDir(t *testing.T) {
	if r := VerifyDir(filepath.Join("testdata", "kafka")); len(r.Problems) != 0 || r.Partitions != 6 || r.Segments != 7 {
		t.Errorf("verify of Kafka's data dir: %+v", r)
	}
	if r := VerifyDir(filepath.Join("testdata", "kcompatd")); len(r.Problems) != 0 || r.Partitions != 3 || r.Segments != 6 {
		t.Errorf("verify of kcompatd's data dir: %+v", r)
	}
}

// lineDiff shows the first line where two outputs differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\nKafka:    " + wl + "\nkcompatd: " + gl
		}
	}
	return "(no line differs)"
}

// TestKafkaInternalTopicsJSON: with --json the decoded records of
// Kafka's internal topics are JSON objects inside the batch objects.
func TestKafkaInternalTopicsJSON(t *testing.T) {
	for _, tc := range []struct{ flag, file, want string }{
		{"--offsets-decoder", "__consumer_offsets-0/00000000000000000000.log", `"key":{"type":"1","data":{"group":"golden-group","topic":"codecs","partition":0}}`},
		{"--transaction-log-decoder", "__transaction_state-0/00000000000000000000.log", `"key":{"type":"0","data":{"transactionalId":"golden-txn"}},"payload":{"version":"1","data":{"producerId":5,`},
	} {
		var out, errw bytes.Buffer
		if st := DumpLog([]string{"--json", tc.flag, filepath.Join("testdata", "kafka", tc.file)}, &out, &errw); st != ExitOK || errw.Len() > 0 {
			t.Fatalf("%s: status %d, stderr %q", tc.file, st, errw.String())
		}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var b struct {
				Records []struct {
					Key     map[string]any `json:"key"`
					Payload map[string]any `json:"payload"`
				} `json:"records"`
			}
			if err := json.Unmarshal([]byte(l), &b); err != nil || len(b.Records) != 1 || b.Records[0].Key["data"] == nil || b.Records[0].Payload["data"] == nil {
				t.Errorf("%s: line %s: %+v, %v", tc.file, l, b, err)
			}
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: output lacks %s:\n%s", tc.file, tc.want, out.String())
		}
	}
}
