package partition

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcompatd/kcompatd/internal/vfs"
)

func goldenScramCredentials() []ScramCredential {
	return []ScramCredential{
		{User: "alice", Mechanism: ScramSHA256, Iterations: 4096, Salt: []byte("salt"),
			StoredKey: bytes.Repeat([]byte{0xaa}, 32), ServerKey: bytes.Repeat([]byte{0xbb}, 32)},
		{User: "bob", Mechanism: ScramSHA512, Iterations: 8192, Salt: []byte{1, 2, 3},
			StoredKey: bytes.Repeat([]byte{0xcc}, 64), ServerKey: bytes.Repeat([]byte{0xdd}, 64)},
	}
}

// The file's bytes, field by field, for the two credentials above.
var goldenScramFile = strings.Join([]string{
	"4b534352", "0001", "00000002", // "KSCR", version 1, 2 entries
	"0005", hex.EncodeToString([]byte("alice")), "01", "00001000", "0004", hex.EncodeToString([]byte("salt")),
	strings.Repeat("aa", 32), strings.Repeat("bb", 32),
	"0003", hex.EncodeToString([]byte("bob")), "02", "00002000", "0003", "010203",
	strings.Repeat("cc", 64), strings.Repeat("dd", 64),
	"62b8da5a", // CRC-32C of the bytes before
}, "")

func TestScramCredentialsGoldenBytes(t *testing.T) {
	got := hex.EncodeToString(encodeScramCredentials(goldenScramCredentials()))
	if got != goldenScramFile {
		t.Fatalf("encoded\n%s\nwant\n%s", got, goldenScramFile)
	}
	b, _ := hex.DecodeString(goldenScramFile)
	creds, err := decodeScramCredentials(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encodeScramCredentials(creds), b) {
		t.Error("decoding and encoding the golden bytes changed them")
	}
	// Truncated anywhere, or one byte flipped: refused, never a panic.
	for i := range b {
		if _, err := decodeScramCredentials(b[:i]); !errors.Is(err, ErrScramCredentials) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
		flipped := bytes.Clone(b)
		flipped[i] ^= 0x40
		if _, err := decodeScramCredentials(flipped); !errors.Is(err, ErrScramCredentials) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
}

// Credentials survive a reopen; an invalid change writes nothing; the
// file is the golden format.
func TestStoreScramCredentials(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	creds := goldenScramCredentials()
	if err := s.AlterScramCredentials(nil, creds); err != nil {
		t.Fatal(err)
	}
	bad := creds[0]
	bad.StoredKey = []byte{1}
	if err := s.AlterScramCredentials([]ScramKey{{"bob", ScramSHA512}}, []ScramCredential{bad}); !errors.Is(err, ErrScramCredentials) {
		t.Fatalf("invalid upsert: %v", err)
	}
	long := creds[0]
	long.User = strings.Repeat("x", MaxScramUserBytes+1)
	if err := s.AlterScramCredentials(nil, []ScramCredential{long}); !errors.Is(err, ErrScramCredentials) {
		t.Fatalf("long user: %v", err)
	}
	if got := s.ScramCredentials(); len(got) != 2 {
		t.Fatalf("after refused changes: %d credentials", len(got))
	}
	b, err := os.ReadFile(filepath.Join(dir, scramCredentialsFile))
	if err != nil || hex.EncodeToString(b) != goldenScramFile {
		t.Fatalf("file %x, %v", b, err)
	}
	if err := s.AlterScramCredentials([]ScramKey{{"alice", ScramSHA256}}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestStore(t, dir)
	defer s.Close()
	if _, ok := s.ScramCredential("alice", ScramSHA256); ok {
		t.Error("deleted credential came back")
	}
	c, ok := s.ScramCredential("bob", ScramSHA512)
	if !ok || c.Iterations != 8192 || !bytes.Equal(c.ServerKey, creds[1].ServerKey) {
		t.Errorf("bob after reopen: %+v %v", c, ok)
	}
}

// FuzzDecodeScramCredentials checks the credential file decoder: it never
// panics, and what it accepts encodes back to exactly the input.
func FuzzDecodeScramCredentials(f *testing.F) {
	b, _ := hex.DecodeString(goldenScramFile)
	f.Add(b)
	f.Add(encodeScramCredentials(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		creds, err := decodeScramCredentials(b)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeScramCredentials(creds), b) {
			t.Errorf("accepted %x, which encodes differently", b)
		}
	})
}

func openTestStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Config{Dir: dir, NodeID: 1, FS: vfs.OS{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
