package recordbatch

import (
	"bytes"
	"errors"
	"testing"
)

func TestEndTxnMarkerGolden(t *testing.T) {
	for _, c := range []struct {
		file       string
		baseOffset int64
		commit     bool
	}{{"java_control_commit.bin", 100, true}, {"java_control_abort.bin", 200, false}} {
		want := readGolden(t, c.file)
		got, err := BuildEndTxnMarker(c.baseOffset, 3, goldenBase, 4242, 7, EndTxnMarker{Commit: c.commit, CoordinatorEpoch: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: built marker differs from Kafka's:\n got %x\nwant %x", c.file, got, want)
		}
		rs, err := Records(want, 0)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %v", c.file, err)
		}
		m, err := ParseEndTxnMarker(rs[0])
		if err != nil || m != (EndTxnMarker{Commit: c.commit, CoordinatorEpoch: 5}) {
			t.Fatalf("%s: %+v %v", c.file, m, err)
		}
	}
}

func TestParseEndTxnMarkerErrors(t *testing.T) {
	cases := []Record{
		{Key: []byte{0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}},
		{Key: []byte{0xff, 0xff, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}},
		{Key: []byte{0, 0, 0, 2}, Value: []byte{0, 0, 0, 0, 0, 0}}, // leader change
		{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0}},
		{Key: []byte{0, 0, 0, 1}, Value: nil},
		{Key: []byte{0, 0, 0, 1}, Value: []byte{0x80, 0, 0, 0, 0, 0}},
	}
	for i, r := range cases {
		if _, err := ParseEndTxnMarker(r); !errors.Is(err, ErrCorruptRecords) {
			t.Errorf("case %d: %v", i, err)
		}
	}
}
