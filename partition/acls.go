package partition

// ACLs: Kafka keeps them as AccessControlEntryRecords in KRaft metadata;
// kcompatd keeps them in one small binary file in the data dir,
// kcompatd-acls, replaced atomically on every change (temp file, fsync,
// rename, fsync the directory). What an ACL means (matching, which
// request needs which operation) is protocol/authz's; this file only keeps
// them, and refuses to write what it could not read back.
//
// Layout, big-endian. These constants are part of the file format and
// should not be changed:
//
//	+--------+---------+-------+------------------------------+---------+
//	| "KACL" | version | count | count entries, in the order  | CRC-32C |
//	| 4      | 2 (=1)  | 4     | they were created            | 4       |
//	+--------+---------+-------+------------------------------+---------+
//
//	entry:
//	+--------------+-------------+-----------+------------+-----------------+
//	| resourceType | patternType | operation | permission | 4 strings:      |
//	| 1            | 1           | 1         | 1          | len 4 + bytes   |
//	+--------------+-------------+-----------+------------+-----------------+
//
// The strings are the resource name, the principal and the host; the
// codes are Kafka's (ResourceType, PatternType, AclOperation,
// AclPermissionType). The CRC covers every byte before it.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"sync"
)

const (
	aclsFile    = "kcompatd-acls"
	aclsMagic   = "KACL"
	aclsVersion = 1
)

// ACL is one access control entry bound to a resource pattern, with
// Kafka's codes: ResourceType 2 TOPIC .. 7 USER, PatternType 3 LITERAL or
// 4 PREFIXED, Operation 2 ALL .. 15 TWO_PHASE_COMMIT, Permission 2 DENY
// or 3 ALLOW.
type ACL struct {
	ResourceType int8
	ResourceName string
	PatternType  int8
	Principal    string
	Host         string
	Operation    int8
	Permission   int8
}

// ErrACLsFile is an ACL file that does not decode.
var ErrACLsFile = errors.New("partition: ACL file")

// ErrInvalidACL is an ACL no request may create (Kafka's INVALID_REQUEST).
var ErrInvalidACL = errors.New("partition: invalid ACL")

// Check reports whether a is an ACL the file may hold: the codes Kafka's
// controller accepts (AclControlManager.validateNewAcl) and a non-empty
// resource name.
func (a ACL) Check() error {
	fail := func(what string, v int8) error { return fmt.Errorf("%w: %s %d", ErrInvalidACL, what, v) }
	switch {
	case a.ResourceType < 2 || a.ResourceType > 7:
		return fail("resource type", a.ResourceType)
	case a.PatternType != 3 && a.PatternType != 4:
		return fail("pattern type", a.PatternType)
	case a.Operation < 2 || a.Operation > 15:
		return fail("operation", a.Operation)
	case a.Permission != 2 && a.Permission != 3:
		return fail("permission type", a.Permission)
	case a.ResourceName == "":
		return fmt.Errorf("%w: empty resource name", ErrInvalidACL)
	}
	return nil
}

type aclStore struct {
	mu   sync.Mutex // serializes writing the file
	acls []ACL      // as loaded at Open
}

func encodeACLs(acls []ACL) []byte {
	b := make([]byte, 0, 64*len(acls)+16)
	b = append(b, aclsMagic...)
	b = binary.BigEndian.AppendUint16(b, aclsVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(acls)))
	for _, a := range acls {
		b = append(b, byte(a.ResourceType), byte(a.PatternType), byte(a.Operation), byte(a.Permission))
		for _, s := range []string{a.ResourceName, a.Principal, a.Host} {
			b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeACLs(b []byte) ([]ACL, error) {
	fail := func(why string) error { return fmt.Errorf("%w: %s", ErrACLsFile, why) }
	if len(b) < 4+2+4+4 {
		return nil, fail("truncated")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fail("checksum mismatch")
	}
	if !bytes.Equal(body[:4], []byte(aclsMagic)) {
		return nil, fail("bad magic")
	}
	if v := binary.BigEndian.Uint16(body[4:6]); v != aclsVersion {
		return nil, fail(fmt.Sprintf("unknown version %d", v))
	}
	n := binary.BigEndian.Uint32(body[6:10])
	p := body[10:]
	// Each entry takes at least 16 bytes: bound the count before allocating.
	if uint64(n) > uint64(len(p))/16 {
		return nil, fail("count larger than the file")
	}
	acls := make([]ACL, 0, n)
	for i := uint32(0); i < n; i++ {
		if len(p) < 4 {
			return nil, fail("truncated entry")
		}
		a := ACL{ResourceType: int8(p[0]), PatternType: int8(p[1]), Operation: int8(p[2]), Permission: int8(p[3])}
		p = p[4:]
		var strs [3]string
		for j := range strs {
			if len(p) < 4 {
				return nil, fail("truncated entry")
			}
			l := binary.BigEndian.Uint32(p)
			p = p[4:]
			if uint64(l) > uint64(len(p)) {
				return nil, fail("string longer than the file")
			}
			strs[j], p = string(p[:l]), p[l:]
		}
		a.ResourceName, a.Principal, a.Host = strs[0], strs[1], strs[2]
		if err := a.Check(); err != nil {
			return nil, fail(err.Error())
		}
		acls = append(acls, a)
	}
	if len(p) != 0 {
		return nil, fail("trailing bytes")
	}
	return acls, nil
}

func (s *Store) loadACLs() error {
	s.acl.acls = nil
	name := filepath.Join(s.cfg.Dir, aclsFile)
	data, err := readFile(s.fs, name, int64(s.maxMetadataBytes()))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	acls, err := decodeACLs(data)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	s.acl.acls = acls
	return nil
}

// ACLs returns the ACLs the data dir held at Open (the authorizer keeps
// the current set; see WriteACLs).
func (s *Store) ACLs() []ACL {
	s.acl.mu.Lock()
	defer s.acl.mu.Unlock()
	return append([]ACL(nil), s.acl.acls...)
}

// WriteACLs replaces the stored ACLs with acls, durably, all or nothing.
// An invalid ACL is ErrInvalidACL; a set larger than a metadata file may
// be is ErrMetadataTooLarge.
func (s *Store) WriteACLs(acls []ACL) error {
	for _, a := range acls {
		if err := a.Check(); err != nil {
			return err
		}
	}
	data, err := s.boundedMetadata("ACLs", encodeACLs(acls))
	if err != nil {
		return err
	}
	// What is written must load at the next start-up.
	if _, err := decodeACLs(data); err != nil {
		return err
	}
	s.acl.mu.Lock()
	defer s.acl.mu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.cfg.Dir, aclsFile), data); err != nil {
		return fmt.Errorf("%w: writing ACLs: %v", ErrStorage, err)
	}
	s.acl.acls = append([]ACL(nil), acls...)
	return nil
}
