package partition

// SCRAM credentials (KIP-554): Kafka keeps them as UserScramCredentialRecords
// in KRaft metadata; kcompatd keeps them in one small binary file in the
// data dir, kcompatd-scram-credentials, replaced atomically on every change
// (temp file, fsync, rename, fsync the directory). Only salted
// credentials are stored, never a password: the salt, the iteration count,
// StoredKey and ServerKey of RFC 5802. What the credentials mean (which
// mechanisms, iteration bounds, the exchange) is protocol/'s; this file
// only keeps them, and refuses to write what it could not read back.
//
// Layout, big-endian. These constants are part of the file format and
// should not be changed:
//
//	+--------+---------+-------+---------------------------+--------+
//	| "KSCR" | version | count | count entries, sorted     | CRC-32C|
//	| 4      | 2 (=1)  | 4     | by (user, mechanism)      | 4      |
//	+--------+---------+-------+---------------------------+--------+
//
//	entry:
//	+---------+------+-----------+------------+---------+------+-----------+-----------+
//	| userLen | user | mechanism | iterations | saltLen | salt | StoredKey | ServerKey |
//	| 2       | UTF-8| 1         | 4          | 2       |      | keyLen    | keyLen    |
//	+---------+------+-----------+------------+---------+------+-----------+-----------+
//
// mechanism is Kafka's ScramMechanism type (1 SCRAM-SHA-256, keyLen 32;
// 2 SCRAM-SHA-512, keyLen 64); the CRC covers every byte before it.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

const (
	scramCredentialsFile    = "kcompatd-scram-credentials"
	scramCredentialsMagic   = "KSCR"
	scramCredentialsVersion = 1
	// MaxScramCredentialsBytes bounds the file, so that clients cannot grow
	// it (and our memory) without limit: about 20 000 users with both
	// mechanisms.
	MaxScramCredentialsBytes = 4 << 20
	// MaxScramUserBytes and MaxScramSaltBytes bound one entry's fields.
	MaxScramUserBytes = 1024
	MaxScramSaltBytes = 1024
)

// The mechanisms, as Kafka numbers them.
const (
	ScramSHA256 int8 = 1
	ScramSHA512 int8 = 2
)

// scramKeyLen is the StoredKey and ServerKey length of a mechanism (its
// hash's output size), 0 for an unknown mechanism.
func scramKeyLen(mechanism int8) int {
	switch mechanism {
	case ScramSHA256:
		return 32
	case ScramSHA512:
		return 64
	}
	return 0
}

// ScramCredential is one user's salted credential for one mechanism.
type ScramCredential struct {
	User       string
	Mechanism  int8
	Iterations int32
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// ScramKey names a credential.
type ScramKey struct {
	User      string
	Mechanism int8
}

func (c ScramCredential) key() ScramKey { return ScramKey{c.User, c.Mechanism} }

func (c ScramCredential) clone() ScramCredential {
	c.Salt, c.StoredKey, c.ServerKey = bytes.Clone(c.Salt), bytes.Clone(c.StoredKey), bytes.Clone(c.ServerKey)
	return c
}

// Errors of the credential file and of a change it cannot hold.
var (
	ErrScramCredentials = errors.New("partition: invalid SCRAM credentials")
	// ErrScramCredentialsFull refuses a change past MaxScramCredentialsBytes.
	ErrScramCredentialsFull = errors.New("partition: the SCRAM credential file would exceed its size bound")
)

type scramStore struct {
	mu    sync.Mutex
	creds map[ScramKey]ScramCredential
}

func compareScramKeys(a, b ScramKey) int {
	if c := strings.Compare(a.User, b.User); c != 0 {
		return c
	}
	return int(a.Mechanism) - int(b.Mechanism)
}

// Check validates one credential against the file format's rules (an
// ErrScramCredentials).
func (c ScramCredential) Check() error {
	n := scramKeyLen(c.Mechanism)
	switch {
	case c.User == "" || len(c.User) > MaxScramUserBytes || !utf8.ValidString(c.User):
		return fmt.Errorf("%w: user name must be 1 to %d bytes of UTF-8", ErrScramCredentials, MaxScramUserBytes)
	case n == 0:
		return fmt.Errorf("%w: unknown mechanism %d", ErrScramCredentials, c.Mechanism)
	case c.Iterations <= 0:
		return fmt.Errorf("%w: iterations %d", ErrScramCredentials, c.Iterations)
	case len(c.Salt) == 0 || len(c.Salt) > MaxScramSaltBytes:
		return fmt.Errorf("%w: salt must be 1 to %d bytes", ErrScramCredentials, MaxScramSaltBytes)
	case len(c.StoredKey) != n || len(c.ServerKey) != n:
		return fmt.Errorf("%w: keys of mechanism %d must be %d bytes", ErrScramCredentials, c.Mechanism, n)
	}
	return nil
}

// encodeScramCredentials encodes creds, which must be sorted, unique and
// valid.
func encodeScramCredentials(creds []ScramCredential) []byte {
	b := []byte(scramCredentialsMagic)
	b = binary.BigEndian.AppendUint16(b, scramCredentialsVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(creds)))
	for _, c := range creds {
		b = binary.BigEndian.AppendUint16(b, uint16(len(c.User)))
		b = append(b, c.User...)
		b = append(b, byte(c.Mechanism))
		b = binary.BigEndian.AppendUint32(b, uint32(c.Iterations))
		b = binary.BigEndian.AppendUint16(b, uint16(len(c.Salt)))
		b = append(b, c.Salt...)
		b = append(b, c.StoredKey...)
		b = append(b, c.ServerKey...)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// decodeScramCredentials decodes and validates a credential file: every
// length within the bytes left, the CRC, the entries valid, sorted and
// unique. It never panics (FuzzDecodeScramCredentials), and what it
// returns encodes back to the same bytes.
func decodeScramCredentials(b []byte) ([]ScramCredential, error) {
	fail := func(what string) ([]ScramCredential, error) {
		return nil, fmt.Errorf("%w: %s", ErrScramCredentials, what)
	}
	if len(b) > MaxScramCredentialsBytes {
		return fail("file too large")
	}
	if len(b) < 4+2+4+4 || string(b[:4]) != scramCredentialsMagic {
		return fail("not a credential file")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return fail("checksum mismatch")
	}
	if v := binary.BigEndian.Uint16(body[4:]); v != scramCredentialsVersion {
		return fail(fmt.Sprintf("version %d", v))
	}
	count := binary.BigEndian.Uint32(body[6:])
	p := body[10:]
	take := func(n int) ([]byte, bool) {
		if n < 0 || n > len(p) {
			return nil, false
		}
		out := p[:n:n]
		p = p[n:]
		return out, true
	}
	// An entry takes at least 2+1+1+4+2+1+64 bytes: count is bounded by
	// what is left before anything is allocated for it.
	if uint64(count) > uint64(len(p))/75 {
		return fail("entry count larger than the file")
	}
	creds := make([]ScramCredential, 0, count)
	for range count {
		var c ScramCredential
		hdr, ok := take(2)
		if !ok {
			return fail("truncated")
		}
		user, ok := take(int(binary.BigEndian.Uint16(hdr)))
		if !ok {
			return fail("truncated")
		}
		c.User = string(user)
		fixed, ok := take(1 + 4 + 2)
		if !ok {
			return fail("truncated")
		}
		c.Mechanism = int8(fixed[0])
		c.Iterations = int32(binary.BigEndian.Uint32(fixed[1:]))
		salt, ok := take(int(binary.BigEndian.Uint16(fixed[5:])))
		if !ok {
			return fail("truncated")
		}
		n := scramKeyLen(c.Mechanism)
		if n == 0 {
			return fail(fmt.Sprintf("unknown mechanism %d", c.Mechanism))
		}
		keys, ok := take(2 * n)
		if !ok {
			return fail("truncated")
		}
		c.Salt, c.StoredKey, c.ServerKey = bytes.Clone(salt), bytes.Clone(keys[:n]), bytes.Clone(keys[n:])
		if err := c.Check(); err != nil {
			return nil, err
		}
		if len(creds) > 0 && compareScramKeys(creds[len(creds)-1].key(), c.key()) >= 0 {
			return fail("entries not sorted or not unique")
		}
		creds = append(creds, c)
	}
	if len(p) != 0 {
		return fail("trailing bytes")
	}
	return creds, nil
}

func (s *Store) loadScramCredentials() error {
	s.scram.creds = map[ScramKey]ScramCredential{}
	name := filepath.Join(s.cfg.Dir, scramCredentialsFile)
	data, err := readFile(s.fs, name, MaxScramCredentialsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	creds, err := decodeScramCredentials(data)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, c := range creds {
		s.scram.creds[c.key()] = c
	}
	return nil
}

// ScramCredential returns a user's credential for a mechanism.
func (s *Store) ScramCredential(user string, mechanism int8) (ScramCredential, bool) {
	s.scram.mu.Lock()
	defer s.scram.mu.Unlock()
	c, ok := s.scram.creds[ScramKey{user, mechanism}]
	return c.clone(), ok
}

// ScramCredentials returns every credential, sorted by user and mechanism.
func (s *Store) ScramCredentials() []ScramCredential {
	s.scram.mu.Lock()
	defer s.scram.mu.Unlock()
	return s.sortedScramLocked(s.scram.creds)
}

func (s *Store) sortedScramLocked(m map[ScramKey]ScramCredential) []ScramCredential {
	out := make([]ScramCredential, 0, len(m))
	for _, c := range m {
		out = append(out, c.clone())
	}
	slices.SortFunc(out, func(a, b ScramCredential) int { return compareScramKeys(a.key(), b.key()) })
	return out
}

// AlterScramCredentials deletes and then upserts credentials, all or
// nothing: the file is rewritten once, and the change is visible only
// after it is durable. Deleting a credential that does not exist is not
// an error here (protocol/ answers that as Kafka does). An invalid
// credential is ErrScramCredentials, a change the file cannot hold
// ErrScramCredentialsFull.
func (s *Store) AlterScramCredentials(deletes []ScramKey, upserts []ScramCredential) error {
	if len(deletes) == 0 && len(upserts) == 0 {
		return nil
	}
	for _, c := range upserts {
		if err := c.Check(); err != nil {
			return err
		}
	}
	s.scram.mu.Lock()
	defer s.scram.mu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	next := make(map[ScramKey]ScramCredential, len(s.scram.creds)+len(upserts))
	for k, v := range s.scram.creds {
		next[k] = v
	}
	for _, k := range deletes {
		delete(next, k)
	}
	for _, c := range upserts {
		next[c.key()] = c.clone()
	}
	sorted := s.sortedScramLocked(next)
	data := encodeScramCredentials(sorted)
	if len(data) > MaxScramCredentialsBytes {
		return ErrScramCredentialsFull
	}
	// What is written must load at the next start-up.
	if _, err := decodeScramCredentials(data); err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, scramCredentialsFile), data); err != nil {
		return fmt.Errorf("%w: writing SCRAM credentials: %v", ErrStorage, err)
	}
	s.scram.creds = next
	return nil
}

// isClosed reports whether Close has begun.
func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}
