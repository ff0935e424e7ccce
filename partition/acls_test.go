package partition

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func goldenACLs() []ACL {
	return []ACL{
		{ResourceType: 2, ResourceName: "orders.", PatternType: 4, Principal: "User:alice", Host: "*", Operation: 3, Permission: 3},
		{ResourceType: 4, ResourceName: "kafka-cluster", PatternType: 3, Principal: "User:*", Host: "10.0.0.1", Operation: 7, Permission: 2},
	}
}

// The file's bytes, field by field, for the two ACLs above.
var goldenACLsFile = strings.Join([]string{
	"4b41434c", "0001", "00000002", // "KACL", version 1, 2 entries
	"02", "04", "03", "03", // TOPIC, PREFIXED, READ, ALLOW
	"00000007", hex.EncodeToString([]byte("orders.")),
	"0000000a", hex.EncodeToString([]byte("User:alice")),
	"00000001", hex.EncodeToString([]byte("*")),
	"04", "03", "07", "02", // CLUSTER, LITERAL, ALTER, DENY
	"0000000d", hex.EncodeToString([]byte("kafka-cluster")),
	"00000006", hex.EncodeToString([]byte("User:*")),
	"00000008", hex.EncodeToString([]byte("10.0.0.1")),
	"ec14fba3", // CRC-32C of the bytes before
}, "")

func TestACLsGoldenBytes(t *testing.T) {
	if got := hex.EncodeToString(encodeACLs(goldenACLs())); got != goldenACLsFile {
		t.Fatalf("encoded\n%s\nwant\n%s", got, goldenACLsFile)
	}
	b, _ := hex.DecodeString(goldenACLsFile)
	acls, err := decodeACLs(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeACLs(acls), b) {
		t.Error("decoding and encoding the golden bytes changed them")
	}
	for i := range b {
		if _, err := decodeACLs(b[:i]); !errors.Is(err, ErrACLsFile) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
		flipped := bytes.Clone(b)
		flipped[i] ^= 0x40
		if _, err := decodeACLs(flipped); !errors.Is(err, ErrACLsFile) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
}

// ACLs survive a reopen; an invalid one writes nothing; a set past the
// metadata bound is refused.
func TestACLsPersisted(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	if got := s.ACLs(); len(got) != 0 {
		t.Fatalf("new store holds %v", got)
	}
	if err := s.WriteACLs(goldenACLs()); err != nil {
		t.Fatal(err)
	}
	bad := append(goldenACLs(), ACL{ResourceType: 2, ResourceName: "", PatternType: 3, Operation: 3, Permission: 3})
	if err := s.WriteACLs(bad); !errors.Is(err, ErrInvalidACL) {
		t.Fatalf("invalid ACL: %v", err)
	}
	huge := []ACL{{ResourceType: 2, ResourceName: strings.Repeat("x", s.maxMetadataBytes()), PatternType: 3, Operation: 3, Permission: 3}}
	if err := s.WriteACLs(huge); !errors.Is(err, ErrMetadataTooLarge) {
		t.Fatalf("huge ACL: %v", err)
	}
	s.Close()
	s = openTestStore(t, dir)
	defer s.Close()
	got := s.ACLs()
	if len(got) != 2 || got[0] != goldenACLs()[0] || got[1] != goldenACLs()[1] {
		t.Fatalf("after reopen: %v", got)
	}
}

// FuzzDecodeACLs checks the ACL file decoder: it never panics, and what it
// accepts encodes back to exactly the input.
func FuzzDecodeACLs(f *testing.F) {
	b, _ := hex.DecodeString(goldenACLsFile)
	f.Add(b)
	f.Add(encodeACLs(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		acls, err := decodeACLs(b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeACLs(acls), b) {
			t.Errorf("accepted %x, which encodes differently", b)
		}
	})
}
