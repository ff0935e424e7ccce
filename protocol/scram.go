package protocol

// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server side
// as Kafka's ScramSaslServer runs it: no channel binding (the client's
// GS2 header is "n,," or "n,a=authzid,"), an authorization id only equal
// to the user, extensions ignored (tokenauth, delegation tokens, is
// refused), and credentials that hold only the salt, the iteration count,
// StoredKey and ServerKey. Every failure answers the same message; for a
// user with no credential the exchange runs on a made-up credential and
// fails at the client's proof, as a wrong password does, so a client can
// tell neither from the answers nor from their timing whether the user
// exists (Kafka fails an unknown user one message earlier).

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/kcompatd/kcompatd/partition"
)

// ScramMechanism is one of the SCRAM mechanisms Kafka knows.
type ScramMechanism struct {
	Name string // SASL mechanism name
	Type int8   // Kafka's ScramMechanism type (AlterUserScramCredentials)
	hash func() hash.Hash
	// MinIterations is Kafka's minimum iteration count (4096 for both).
	MinIterations int32
}

// Kafka's SCRAM mechanisms.
var (
	ScramSHA256 = &ScramMechanism{Name: "SCRAM-SHA-256", Type: partition.ScramSHA256, hash: sha256.New, MinIterations: 4096}
	ScramSHA512 = &ScramMechanism{Name: "SCRAM-SHA-512", Type: partition.ScramSHA512, hash: sha512.New, MinIterations: 4096}
)

// MaxScramIterations is the largest iteration count Kafka accepts
// (ScramControlManager.MAX_ITERATIONS).
const MaxScramIterations = 16384

// ScramMechanismByName returns the mechanism named name, nil if none.
func ScramMechanismByName(name string) *ScramMechanism {
	for _, m := range []*ScramMechanism{ScramSHA256, ScramSHA512} {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// scramMechanismByType returns the mechanism of Kafka's type t, nil if none.
func scramMechanismByType(t int8) *ScramMechanism {
	for _, m := range []*ScramMechanism{ScramSHA256, ScramSHA512} {
		if m.Type == t {
			return m
		}
	}
	return nil
}

func (m *ScramMechanism) hmac(key []byte, parts ...string) []byte {
	h := hmac.New(m.hash, key)
	for _, p := range parts {
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

func (m *ScramMechanism) h(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations) (PBKDF2 with
// HMAC of the mechanism's hash). Kafka does not SASLprep passwords, nor
// does kcompatd.
func (m *ScramMechanism) SaltedPassword(password string, salt []byte, iterations int) []byte {
	b, err := pbkdf2.Key(m.hash, password, salt, iterations, m.hash().Size())
	if err != nil {
		panic("protocol: PBKDF2: " + err.Error()) // only for key lengths we never ask
	}
	return b
}

// Credential derives the stored credential of a salted password.
func (m *ScramMechanism) Credential(user string, salt, saltedPassword []byte, iterations int32) partition.ScramCredential {
	clientKey := m.hmac(saltedPassword, "Client Key")
	return partition.ScramCredential{
		User:       user,
		Mechanism:  m.Type,
		Iterations: iterations,
		Salt:       salt,
		StoredKey:  m.h(clientKey),
		ServerKey:  m.hmac(saltedPassword, "Server Key"),
	}
}

// errScram is any failed SCRAM exchange; the client is told only
// scramFailedMessage.
var errScram = errors.New("protocol: SCRAM authentication failed")

// scramServer is one SCRAM exchange: client-first, server-first,
// client-final, server-final.
type scramServer struct {
	mech *ScramMechanism
	// lookup finds a user's credential; ok false for an unknown user.
	lookup func(user string) (partition.ScramCredential, bool)
	// fake makes the credential of an unknown user (fakeScramCredential).
	fake  func(user string) partition.ScramCredential
	nonce func() string // the server's nonce part

	step            int // 0: expects client-first; 1: client-final; 2: done
	user            string
	cred            partition.ScramCredential
	known           bool
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonceAll        string
}

// scramNonce is 24 random bytes, base64url: printable, no comma.
func scramNonce() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Start and Next implement saslServer.
func (s *scramServer) Start(msg []byte) ([]byte, bool, error) { return s.Next(msg) }

func (s *scramServer) Next(msg []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		out, err := s.clientFirst(string(msg))
		if err != nil {
			return nil, false, err
		}
		s.step = 1
		return []byte(out), false, nil
	case 1:
		out, err := s.clientFinal(string(msg))
		s.step = 2
		if err != nil {
			return nil, false, err
		}
		return []byte(out), true, nil
	}
	return nil, false, fmt.Errorf("%w: unexpected message after the exchange", errScram)
}

// User is the authenticated user, once the exchange is done.
func (s *scramServer) User() string { return s.user }

// clientFirst parses "gs2-header client-first-bare" and answers the
// server-first message.
func (s *scramServer) clientFirst(msg string) (string, error) {
	fail := func(what string) (string, error) {
		return "", fmt.Errorf("%w: client-first message: %s", errScram, what)
	}
	// gs2-header: cbind-flag "," [authzid] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok || flag != "n" {
		return fail("channel binding is not supported")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return fail("no GS2 header")
	}
	if authz != "" && !strings.HasPrefix(authz, "a=") {
		return fail("bad authorization id")
	}
	s.gs2Header = msg[:len(msg)-len(bare)]
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return fail("expected n=user,r=nonce")
	}
	user, err := decodeSaslName(attrs[0][2:])
	if err != nil {
		return fail(err.Error())
	}
	cnonce := attrs[1][2:]
	if cnonce == "" || !printableNoComma(cnonce) {
		return fail("bad nonce")
	}
	for _, ext := range attrs[2:] {
		if k, v, _ := strings.Cut(ext, "="); k == "tokenauth" && strings.EqualFold(v, "true") {
			return fail("delegation tokens are not supported")
		}
	}
	if authz != "" {
		az, err := decodeSaslName(authz[2:])
		if err != nil || az != user {
			return fail("authorization id differs from the user")
		}
	}
	s.user, s.clientFirstBare = user, bare
	s.cred, s.known = s.lookup(user)
	if !s.known || s.cred.Iterations < s.mech.MinIterations {
		s.cred, s.known = s.fake(user), false
	}
	s.nonceAll = cnonce + s.nonce()
	s.serverFirst = "r=" + s.nonceAll + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(int(s.cred.Iterations))
	return s.serverFirst, nil
}

// clientFinal checks "c=...,r=...,p=..." and answers "v=ServerSignature".
func (s *scramServer) clientFinal(msg string) (string, error) {
	fail := func(what string) (string, error) {
		return "", fmt.Errorf("%w: client-final message: %s", errScram, what)
	}
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return fail("no proof")
	}
	withoutProof, proofText := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return fail("expected c=binding,r=nonce")
	}
	if attrs[0][2:] != base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) {
		return fail("channel binding differs from the GS2 header")
	}
	if attrs[1][2:] != s.nonceAll {
		return fail("nonce differs")
	}
	proof, err := base64.StdEncoding.DecodeString(proofText)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return fail("bad proof")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + withoutProof
	signature := s.mech.hmac(s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, signature)
	ok := subtle.ConstantTimeCompare(s.mech.h(clientKey), s.cred.StoredKey) == 1
	if !ok || !s.known {
		return fail("invalid credentials")
	}
	return "v=" + base64.StdEncoding.EncodeToString(s.mech.hmac(s.cred.ServerKey, authMessage)), nil
}

// decodeSaslName undoes RFC 5802's escaping of "," and "=" in a saslname.
func decodeSaslName(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty user name")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == ',':
			return "", errors.New("bad user name")
		case s[i] != '=':
			b.WriteByte(s[i])
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
			i += 2
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
			i += 2
		default:
			return "", errors.New("bad escape in user name")
		}
	}
	return b.String(), nil
}

func printableNoComma(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}

// ScramSaltBytes is the salt length of the credentials kcompatd makes
// (kcompatd.scram.users) and of unknown users' made-up ones, so that the
// two cannot be told apart by their salt's length.
const ScramSaltBytes = 32

// fakeScramCredential is the made-up credential an unknown user's
// exchange runs on: its salt depends only on the user and a secret of
// this process, so asking twice shows the same salt, as for a real user;
// its keys match no password.
func fakeScramCredential(secret []byte, m *ScramMechanism) func(user string) partition.ScramCredential {
	return func(user string) partition.ScramCredential {
		salt := m.hmac(secret, "salt", m.Name, user)[:ScramSaltBytes]
		keys := m.hmac(secret, "keys", m.Name, user)
		return partition.ScramCredential{User: user, Mechanism: m.Type, Iterations: m.MinIterations,
			Salt: salt, StoredKey: m.h(keys), ServerKey: m.h(append(keys, 1))}
	}
}
