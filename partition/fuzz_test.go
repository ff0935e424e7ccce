package partition

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzIndexDecoders feeds arbitrary bytes to the .index and .timeindex
// decoders. Invariants: never panics; never more entries than whole
// entries in the input; entries strictly increase; re-encoding the
// decoded entries and decoding again gives the same entries (the valid
// prefix is stable).
func FuzzIndexDecoders(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 200, 0, 0, 0, 9, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, 1700000000000), 3))
	f.Add(bytes.Repeat([]byte{0xff}, 24))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, x := range []*index{
			{entrySize: offsetIndexEntrySize},
			{entrySize: timeIndexEntrySize},
		} {
			es := x.decodeAbs(b, 0)
			if len(es) > len(b)/x.entrySize {
				t.Fatalf("%d entries from %d bytes", len(es), len(b))
			}
			for i := 1; i < len(es); i++ {
				if es[i].key <= es[i-1].key {
					t.Fatalf("entries not increasing: %v", es)
				}
			}
			enc := make([]byte, len(es)*x.entrySize)
			for i, e := range es {
				x.encode(enc[i*x.entrySize:], e, 0)
			}
			if !bytes.Equal(enc, b[:len(enc)]) {
				t.Fatalf("valid prefix does not re-encode to the input")
			}
			again := x.decodeAbs(enc, 0)
			if len(again) != len(es) {
				t.Fatalf("re-decoding gave %d entries, want %d", len(again), len(es))
			}
		}
	})
}

// FuzzCheckpointDecoders feeds arbitrary bytes to the decoders of Kafka's
// text files. Invariants: never panics; whatever decodes re-encodes to
// something that decodes to the same value.
func FuzzCheckpointDecoders(f *testing.F) {
	f.Add([]byte("0\n2\norders 0 15\norders 1 0\n"))
	f.Add([]byte("0\n1\n0 0\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("version: 0\ntopic_id: tUrOatBmSLCtY92iS0zwwg\n"))
	f.Add([]byte("#\n#Sun Nov 29 12:00:00 UTC 2026\ncluster.id=abc\ndirectory.id=tUrOatBmSLCtY92iS0zwwg\nnode.id=1\nversion=1\n"))
	f.Add([]byte("0\n-1\n"))
	f.Add([]byte("0\n99999999999\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := decodeOffsetCheckpoint(b); err == nil {
			m2, err := decodeOffsetCheckpoint(encodeOffsetCheckpoint(m))
			if err != nil || len(m2) != len(m) {
				t.Fatalf("offset checkpoint round trip: %v %v %v", m, m2, err)
			}
			for k, v := range m {
				if m2[k] != v {
					t.Fatalf("offset checkpoint round trip: %v %v", m, m2)
				}
			}
		}
		if es, err := decodeLeaderEpochCheckpoint(b); err == nil {
			es2, err := decodeLeaderEpochCheckpoint(encodeLeaderEpochCheckpoint(es))
			if err != nil || len(es2) != len(es) {
				t.Fatalf("leader epoch round trip: %v %v %v", es, es2, err)
			}
		}
		if id, err := decodePartitionMetadata(b); err == nil {
			if id2, err := decodePartitionMetadata(encodePartitionMetadata(id)); err != nil || id2 != id {
				t.Fatalf("partition.metadata round trip")
			}
		}
		if m, err := decodeMetaProperties(b); err == nil {
			if m2, err := decodeMetaProperties(encodeMetaProperties(m, "x")); err != nil || m2 != m {
				t.Fatalf("meta.properties round trip: %+v %+v %v", m, m2, err)
			}
		}
		decodeCatalog(b)
	})
}
