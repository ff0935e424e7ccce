package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestVerifyClean(t *testing.T) {
	dir := fixture(t)
	r := VerifyDir(dir)
	if len(r.Problems) != 0 || r.Partitions != 3 || r.Segments < 6 {
		t.Fatalf("verify of a clean data dir: %+v", r)
	}
	// One partition dir alone.
	for _, p := range []string{"codecs-0", "txn-0", "compacted-0"} {
		if r := VerifyDir(filepath.Join(dir, p)); len(r.Problems) != 0 || r.Partitions != 1 {
			t.Errorf("verify %s: %+v", p, r)
		}
	}
	var out, errw bytes.Buffer
	if st := Verify([]string{dir}, &out, &errw); st != ExitOK || out.Len() != 0 {
		t.Errorf("Verify: status %d, stdout %q, stderr %q", st, out.String(), errw.String())
	}
}

// mutate changes one file of a copied data dir.
type mutate func(t *testing.T, dir string)

func rewrite(rel string, f func([]byte) []byte) mutate {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func create(rel string, data []byte) mutate {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVerifyFindsCorruption: each corruption a crash or a fault test can
// leave is reported, and only it.
func TestVerifyFindsCorruption(t *testing.T) {
	clean := fixture(t)
	codecsLog := filepath.Join("codecs-0", "00000000000000000000.log")
	codecsIndex := filepath.Join("codecs-0", "00000000000000000000.index")
	first, err := os.ReadFile(filepath.Join(clean, codecsLog))
	if err != nil {
		t.Fatal(err)
	}
	firstBatch := int(first[11]) + 12 // the first batch is small: its length fits a byte
	codecsTimeIndex := filepath.Join("codecs-0", "00000000000000000000.timeindex")
	snaps := segmentFiles(t, filepath.Join(clean, "txn-0"), ".snapshot")
	if len(snaps) == 0 {
		t.Fatal("no snapshot in txn-0")
	}
	snapshot, err := os.ReadFile(snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		mutate mutate
		want   []string // substrings, one problem line each
	}{
		{"torn tail", rewrite(codecsLog, func(b []byte) []byte { return append(b, first[:40]...) }),
			[]string{codecsLog + ": 40 bytes after the last whole batch"}},
		{"torn last batch", rewrite(codecsLog, func(b []byte) []byte { return b[:len(b)-10] }),
			[]string{"bytes after the last whole batch", // the rest of the last batch
				codecsIndex + ": entry 3 (offset 14, position 649) is past the end of the log (649 bytes of whole batches, last offset 11)",
				"00000000000000000000.timeindex: entry 3 (timestamp",
				"00000000000000000015.snapshot: producer snapshot at offset 15 is past the log end offset 12",
				"recovery-point-offset-checkpoint: codecs-0: offset 15 is past the log end offset 12"}},
		{"flipped byte", rewrite(codecsLog, func(b []byte) []byte { b[firstBatch-5] ^= 0x10; return b }),
			[]string{codecsLog + ": batch at position 0 (offsets 0-2): recordbatch: crc mismatch"}},
		{"flipped byte in a compressed batch", rewrite(codecsLog, func(b []byte) []byte { b[firstBatch+70] ^= 0x01; return b }),
			[]string{"batch at position " + strconv.Itoa(firstBatch) + " (offsets 3-5): recordbatch: crc mismatch"}},
		{"bad batch length", rewrite(codecsLog, func(b []byte) []byte { copy(b[firstBatch+8:], []byte{0, 0, 0, 1}); return b }),
			[]string{"at position " + strconv.Itoa(firstBatch) + ": Found record size 1 smaller than minimum record overhead",
				codecsIndex + ": entry 0 (offset 5, position " + strconv.Itoa(firstBatch) + ") is past the end of the log (" + strconv.Itoa(firstBatch) + " bytes of whole batches, last offset 2), and 3 more entries after it",
				"00000000000000000000.timeindex: entry 0 (timestamp",
				"00000000000000000015.snapshot: producer snapshot at offset 15 is past the log end offset 3",
				"recovery-point-offset-checkpoint: codecs-0: offset 15 is past the log end offset 3"}},
		{"index entry past the log end", rewrite(codecsIndex, func(b []byte) []byte {
			return append(b, 0, 0, 0, 20, 0, 0, 0x40, 0) // offset 20, position 16384
		}), []string{codecsIndex + ": entry 4 (offset 20, position 16384) is past the end of the log"}},
		{"index entry past the log end after a truncation", rewrite(codecsLog, func(b []byte) []byte { return b[:firstBatch] }),
			[]string{codecsIndex + ": entry 0 (offset 5, position " + strconv.Itoa(firstBatch) + ") is past the end of the log",
				"00000000000000000000.timeindex: entry 0 (timestamp",
				"00000000000000000015.snapshot: producer snapshot at offset 15 is past the log end offset 3",
				"recovery-point-offset-checkpoint: codecs-0: offset 15 is past the log end offset 3"}},
		{"index entry off a batch", rewrite(codecsIndex, func(b []byte) []byte { b[7]++; return b }),
			[]string{codecsIndex + ": entry 0 (offset 5): position " + strconv.Itoa(firstBatch+1) + " is not the start of a batch"}},
		{"index out of order", rewrite(codecsIndex, func(b []byte) []byte { copy(b[8:16], b[0:8]); return b }),
			[]string{codecsIndex + ": entry 1 (offset 5, position " + strconv.Itoa(firstBatch) + ") does not increase"}},
		{"preallocated index tail is fine", rewrite(codecsIndex, func(b []byte) []byte { return append(b, make([]byte, 80)...) }), nil},
		{"leftover swap", create(filepath.Join("compacted-0", "00000000000000000000.log.swap"), first),
			[]string{filepath.Join("compacted-0", "00000000000000000000.log.swap") + ": leftover file of an interrupted cleaner swap"}},
		{"leftover cleaned", create(filepath.Join("compacted-0", "00000000000000000003.log.cleaned"), nil),
			[]string{"00000000000000000003.log.cleaned: leftover file"}},
		{"recovery point past the log end", create("recovery-point-offset-checkpoint", []byte("0\n1\ncodecs 0 99\n")),
			[]string{"recovery-point-offset-checkpoint: codecs-0: offset 99 is past the log end offset 15"}},
		{"log start past the log end", create("log-start-offset-checkpoint", []byte("0\n1\ntxn 0 7\n")),
			[]string{"log-start-offset-checkpoint: txn-0: offset 7 is past the log end offset 6"}},
		{"unreadable checkpoint", create("cleaner-offset-checkpoint", []byte("garbage")),
			[]string{"cleaner-offset-checkpoint: partition: malformed checkpoint file"}},
		{"leader epoch past the log end", create(filepath.Join("txn-0", "leader-epoch-checkpoint"), []byte("0\n1\n0 50\n")),
			[]string{"leader-epoch-checkpoint: epoch 0 starts at offset 50, past the log end offset 6"}},
		{"corrupt snapshot", create(filepath.Join("txn-0", "00000000000000000003.snapshot"), []byte("not a snapshot")),
			[]string{"00000000000000000003.snapshot: partition: corrupt producer-state snapshot"}},
		{"bad txnindex", rewrite(filepath.Join("txn-0", "00000000000000000000.txnindex"), func(b []byte) []byte { b[1] = 3; return b }),
			[]string{"00000000000000000000.txnindex: partition: bad aborted-transaction index entry: version 3"}},
		{"time index timestamp off", rewrite(codecsTimeIndex, func(b []byte) []byte { b[len(b)-12+7]++; return b }),
			[]string{codecsTimeIndex + ": entry 3 (timestamp " + strconv.FormatInt(fixtureStart.UnixMilli()+7, 10) + ", offset 14): the batch's largest timestamp is " + strconv.FormatInt(fixtureStart.UnixMilli()+6, 10)}},
		{"time index offset off a batch end", rewrite(codecsTimeIndex, func(b []byte) []byte { b[11]--; return b }),
			[]string{codecsTimeIndex + ": entry 0 (timestamp " + strconv.FormatInt(fixtureStart.UnixMilli()+3, 10) + ", offset 4): no batch ends at offset 4 (the next ends at 5)"}},
		{"snapshot past the log end", create(filepath.Join("txn-0", "00000000000000000009.snapshot"), snapshot),
			[]string{"00000000000000000009.snapshot: producer snapshot at offset 9 is past the log end offset 6"}},
		{"overlapping segments", create(filepath.Join("codecs-0", "00000000000000000010.log"), first[:firstBatch]),
			[]string{"00000000000000000010.log: segment base offset 10 is not above the previous segment's last offset 14",
				"00000000000000000010.log: batch at position 0: base offset 0 is below the segment's base offset 10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, clean)
			tc.mutate(t, dir)
			r := VerifyDir(dir)
			if len(r.Problems) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%s", len(r.Problems), len(tc.want), strings.Join(r.Problems, "\n"))
			}
			for _, w := range tc.want {
				found := false
				for _, p := range r.Problems {
					found = found || strings.Contains(p, w)
				}
				if !found {
					t.Errorf("no problem says %q:\n%s", w, strings.Join(r.Problems, "\n"))
				}
			}
			var out, errw bytes.Buffer
			st := Verify([]string{dir}, &out, &errw)
			if want := map[bool]int{true: ExitOK, false: ExitProblems}[len(tc.want) == 0]; st != want {
				t.Errorf("Verify status %d, want %d", st, want)
			}
			if n := strings.Count(out.String(), "\n"); n != len(r.Problems) {
				t.Errorf("Verify printed %d lines for %d problems", n, len(r.Problems))
			}
		})
	}
}

func TestVerifyUsage(t *testing.T) {
	var out, errw bytes.Buffer
	for _, args := range [][]string{nil, {"a", "b"}, {"--bogus", "x"}} {
		if st := Verify(args, &out, &errw); st != ExitUsage {
			t.Errorf("verify %q: status %d, want %d", args, st, ExitUsage)
		}
	}
	if st := Verify([]string{filepath.Join(t.TempDir(), "missing")}, &out, &errw); st != ExitProblems {
		t.Errorf("verify of a missing dir: status %d", st)
	}
}
