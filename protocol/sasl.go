package protocol

// SaslHandshake: v0-1; SaslAuthenticate: v0-2
//
// Behavior (Kafka's SaslServerAuthenticator on SASL_PLAINTEXT and
// SASL_SSL listeners):
//   - Before authentication only ApiVersions and SaslHandshake are
//     served; any other request closes the connection without an answer.
//   - SaslHandshake names a mechanism of the listener's
//     sasl.enabled.mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), and
//     is answered with the enabled list; a mechanism not enabled gets
//     UNSUPPORTED_SASL_MECHANISM, and the connection is closed.
//   - After a v1 handshake the exchange runs in SaslAuthenticate requests
//     (any other request closes the connection); after a v0 handshake, as
//     raw size-prefixed tokens with no request header (pre-1.0 clients),
//     each answered by one (PLAIN's empty).
//   - A failed exchange is answered, after failed.authentication.delay.ms
//     (100 ms), with SASL_AUTHENTICATION_FAILED and Kafka's message
//     ("Authentication failed: Invalid username or password" for PLAIN,
//     "Authentication failed during authentication due to invalid
//     credentials with SASL mechanism M" for SCRAM and for a malformed
//     PLAIN token), then the connection is closed; with raw v0 tokens
//     there is no answer, only the close.
//   - Before authentication a frame above sasl.server.max.receive.size
//     (512 KiB) closes the connection.
//   - Once authenticated the principal is User:<name>, and both APIs
//     answer ILLEGAL_SASL_STATE, as KafkaApis does on an authenticated
//     connection and on listeners without SASL, unless the session can be
//     re-authenticated (sasl_reauth.go).
//   - The session lasts connections.max.reauth.ms (per listener and
//     mechanism; 0: for ever), or less if the credential expires sooner
//     (an OAUTHBEARER token's exp): SaslAuthenticate v1+ tells the client
//     in SessionLifetimeMs.
//
// Version notes:
//   - SaslHandshake v1: the exchange moves into SaslAuthenticate
//   - SaslAuthenticate v1: SessionLifetimeMillis; v2: flexible

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kcompatd/kcompatd/partition"
)

// The SASL API keys, for the pre-authentication state machine.
var (
	saslHandshakeKey    = kmsg.SASLHandshake.Int16()
	saslAuthenticateKey = kmsg.SASLAuthenticate.Int16()
)

func init() {
	register(saslHandshakeKey, 0, 1, handleSaslHandshakeAuthenticated)
	register(saslAuthenticateKey, 0, 2, handleSaslAuthenticateAuthenticated)
}

// Mechanism names (OAUTHBEARER's is in oauthbearer.go).
const (
	MechanismPlain = "PLAIN"
)

// SASLConfig is a SASL listener's authentication.
type SASLConfig struct {
	// Mechanisms are the enabled mechanisms in sasl.enabled.mechanisms
	// order: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER.
	Mechanisms []string
	// PlainUsers are PLAIN's users and passwords (the user_<name> options
	// of the listener's PlainLoginModule JAAS config).
	PlainUsers map[string]string
	// OAuthBearer is OAUTHBEARER's unsecured validator.
	OAuthBearer OAuthBearerConfig
	// MaxReauth is connections.max.reauth.ms of each mechanism as the
	// listener sees it: the longest a session lasts before the client
	// must re-authenticate (0 or absent: no limit).
	MaxReauth map[string]time.Duration
}

// SupportedMechanism says whether kcompatd serves the SASL mechanism.
func SupportedMechanism(name string) bool {
	return name == MechanismPlain || name == MechanismOAuthBearer || ScramMechanismByName(name) != nil
}

// Defaults of the SASL settings of Config.
const (
	// DefaultSASLMaxReceiveBytes is sasl.server.max.receive.size.
	DefaultSASLMaxReceiveBytes = 512 << 10
	// DefaultFailedAuthenticationDelay is
	// connection.failed.authentication.delay.ms.
	DefaultFailedAuthenticationDelay = 100 * time.Millisecond
)

// saslServer is one mechanism's exchange: each client message in, the
// server's answer out (nil: none), done once the client is authenticated.
// An error fails the authentication.
type saslServer interface {
	Next(msg []byte) (out []byte, done bool, err error)
	User() string
}

// expiringCredential is a saslServer whose credential expires (Kafka's
// CREDENTIAL_LIFETIME_MS negotiated property): the session ends then.
type expiringCredential interface {
	CredentialExpiry() time.Time
}

// saslStage is where a SASL connection is in its authentication.
type saslStage int8

const (
	saslHandshake    saslStage = iota // expects ApiVersions or SaslHandshake
	saslAuthenticate                  // expects SaslAuthenticate (or a raw token)
	saslDone                          // authenticated
)

// saslState is a SASL connection's authentication, owned by serveLoop.
type saslState struct {
	stage     saslStage
	rawTokens bool // the handshake was v0: tokens are unframed
	mechanism string
	server    saslServer
	reauth    reauthState
}

// Kafka's messages for a failed authentication.
const plainFailedMessage = "Authentication failed: Invalid username or password"

func invalidCredentialsMessage(mechanism string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
}

// invalidReauthCredentialsMessage is invalidCredentialsMessage during
// re-authentication.
func invalidReauthCredentialsMessage(mechanism string) string {
	return "Authentication failed during re-authentication due to invalid credentials with SASL mechanism " + mechanism
}

// errAuthentication closes a connection whose authentication failed.
var errAuthentication = errors.New("protocol: SASL authentication failed")

// errSASLState closes a connection that sent a request SASL does not allow
// where it is.
var errSASLState = errors.New("protocol: unexpected request during SASL authentication")

// authFailure is a failed exchange and the message the client is told.
type authFailure struct {
	msg string
	err error
}

func (e *authFailure) Error() string { return e.err.Error() }
func (e *authFailure) Unwrap() error { return e.err }

// newSASLServer starts mechanism's exchange on listener l.
func (s *Server) newSASLServer(l *Listener, mechanism string) saslServer {
	switch mechanism {
	case MechanismPlain:
		return &plainServer{users: l.SASL.PlainUsers, dummy: s.saslSecret}
	case MechanismOAuthBearer:
		return &oauthServer{cfg: &l.SASL.OAuthBearer, now: s.clock.Now}
	}
	m := ScramMechanismByName(mechanism)
	return &scramServer{
		mech: m,
		lookup: func(user string) (partition.ScramCredential, bool) {
			return s.scramCredential(user, m.Type)
		},
		fake:  fakeScramCredential(s.saslSecret, m),
		nonce: scramNonce,
	}
}

// serveSASL serves a frame of a SASL connection that has not authenticated
// yet. A returned error closes the connection.
func (c *conn) serveSASL(frame []byte) error {
	st := c.sasl
	if st.stage == saslAuthenticate && st.reauth.badMechanism != "" {
		c.log.Info().Str("mechanism", st.mechanism).Msg(st.reauth.badMechanism)
		c.delayFailure()
		return errAuthentication
	}
	if st.stage == saslAuthenticate && st.rawTokens {
		out, done, err := st.server.Next(frame)
		if done { // before the answer, after which the client sends more
			_, err = c.authenticated(st)
		}
		if err != nil {
			c.log.Info().Err(err).Str("mechanism", st.mechanism).Bool("reauthentication", st.reauth.active).Msg("SASL authentication failed")
			c.delayFailure()
			return errAuthentication
		}
		c.requestDone()
		// Every token is answered, PLAIN's with an empty one, which
		// the client waits for (Kafka's mechanisms never return null).
		b := binary.BigEndian.AppendUint32(nil, uint32(len(out)))
		_, err = c.nc.Write(append(b, out...))
		return err
	}
	h, a, req, err := decodeRequest(c.s.table, frame)
	if errors.Is(err, errAPIVersionsFallback) && st.stage == saslHandshake {
		return c.write(h, apiVersionsUnsupported(a))
	}
	if err != nil {
		return err
	}
	switch {
	case st.stage == saslHandshake && h.key == kmsg.ApiVersions.Int16() && !st.reauth.active:
		r := &Request{Ctx: c.ctx, Version: h.version, CorrelationID: h.correlation, ClientID: h.clientID, Remote: c.remote, Body: req, listener: c.listener, principal: c.Principal()}
		resp, err := c.call(a, r)
		if err != nil {
			return err
		}
		return c.write(h, resp)
	case st.stage == saslHandshake && h.key == saslHandshakeKey:
		return c.saslHandshake(h, req.(*kmsg.SASLHandshakeRequest))
	case st.stage == saslAuthenticate && h.key == saslAuthenticateKey:
		return c.saslAuthenticate(h, req.(*kmsg.SASLAuthenticateRequest))
	}
	return fmt.Errorf("%w: %s", errSASLState, kmsg.NameForKey(h.key))
}

func (c *conn) saslHandshake(h header, req *kmsg.SASLHandshakeRequest) error {
	st := c.sasl
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = slices.Clone(c.listener.SASL.Mechanisms)
	if !slices.Contains(c.listener.SASL.Mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.log.Info().Str("mechanism", req.Mechanism).Msg("SASL mechanism not enabled; closing connection")
		c.delayFailure()
		if err := c.write(h, resp); err != nil {
			return err
		}
		return errAuthentication
	}
	st.stage, st.rawTokens = saslAuthenticate, h.version == 0
	if st.reauth.active && req.Mechanism != st.mechanism {
		// Answered as a handshake; the exchange then fails (Kafka's
		// REAUTH_BAD_MECHANISM).
		st.reauth.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", req.Mechanism, st.mechanism)
		return c.write(h, resp)
	}
	st.mechanism = req.Mechanism
	st.server = c.s.newSASLServer(c.listener, req.Mechanism)
	return c.write(h, resp)
}

func (c *conn) saslAuthenticate(h header, req *kmsg.SASLAuthenticateRequest) error {
	st := c.sasl
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, done, err := st.server.Next(req.SASLAuthBytes)
	var lifetime time.Duration
	if err == nil && done {
		lifetime, err = c.authenticated(st)
	}
	if err != nil {
		msg := invalidCredentialsMessage(st.mechanism)
		if st.reauth.active {
			msg = invalidReauthCredentialsMessage(st.mechanism)
		}
		var af *authFailure
		if errors.As(err, &af) {
			msg = af.msg
		}
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		c.log.Info().Err(err).Str("mechanism", st.mechanism).Bool("reauthentication", st.reauth.active).Msg("SASL authentication failed")
		c.delayFailure()
		if err := c.write(h, resp); err != nil {
			return err
		}
		return errAuthentication
	}
	if r, ok := st.server.(interface{ Rejected() error }); ok && r.Rejected() != nil {
		c.log.Info().Err(r.Rejected()).Str("mechanism", st.mechanism).Msg("SASL token refused")
	}
	resp.SASLAuthBytes = out
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	resp.SessionLifetimeMillis = lifetime.Milliseconds()
	resp.ErrorMessage = new(string) // Kafka's default: empty, not null
	return c.write(h, resp)
}

// authenticated ends a successful exchange: the connection now runs as
// the user, for the session lifetime returned. A re-authentication that
// would change the principal fails instead, as Kafka's
// ReauthInfo.ensurePrincipalUnchanged.
func (c *conn) authenticated(st *saslState) (time.Duration, error) {
	principal := "User:" + st.server.User()
	if st.reauth.active && principal != c.Principal() {
		msg := fmt.Sprintf("Cannot change principals during re-authentication from User.%s: User.%s",
			strings.TrimPrefix(c.Principal(), "User:"), st.server.User())
		return 0, &authFailure{msg: msg, err: fmt.Errorf("%w: %s", errAuthentication, msg)}
	}
	lifetime := c.startSession(st)
	if st.reauth.active {
		c.s.saslReauthentications.Add(1)
	}
	st.stage, st.reauth.active = saslDone, false
	c.setPrincipal(principal)
	st.server = nil
	c.saslPending.Store(false)
	c.log.Debug().Str("principal", principal).Str("mechanism", st.mechanism).Dur("session_lifetime", lifetime).Msg("SASL client authenticated")
	return lifetime, nil
}

// delayFailure waits failed.authentication.delay.ms before a failure is
// answered, as Kafka does, so a client cannot try passwords quickly.
func (c *conn) delayFailure() {
	d := c.s.cfg.FailedAuthenticationDelay
	if d <= 0 {
		return
	}
	t := c.s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-c.ctx.Done():
	}
}

// handleSaslHandshakeAuthenticated answers SaslHandshake where SASL does
// not run (a non-SASL listener, or after authentication), as KafkaApis.
func handleSaslHandshakeAuthenticated(s *Server, r *Request) (kmsg.Response, error) {
	resp := r.Body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

func handleSaslAuthenticateAuthenticated(s *Server, r *Request) (kmsg.Response, error) {
	resp := r.Body.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	resp.SASLAuthBytes = []byte{}
	return resp, nil
}

// plainServer is SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer: one
// message, [authzid] NUL authcid NUL passwd, an authzid only equal to the
// user, answered by an empty token; passwords are compared in constant
// time, an unknown user's with a dummy, so that the time taken does not
// tell whether the user exists. A missing user or password gets the
// generic message; a wrong one "Invalid username or password".
type plainServer struct {
	users map[string]string
	dummy []byte
	user  string
}

func (p *plainServer) User() string { return p.user }

func (p *plainServer) Next(msg []byte) ([]byte, bool, error) {
	// Kafka's split: three fields at the first two NULs, the third ending
	// at a further NUL if there is one; missing fields are empty.
	var fields [3][]byte
	rest := msg
	for i := range fields {
		var ok bool
		fields[i], rest, ok = bytes.Cut(rest, []byte{0})
		if !ok {
			break
		}
	}
	authz, user, pass := string(fields[0]), string(fields[1]), fields[2]
	switch {
	case user == "":
		return nil, false, fmt.Errorf("%w: PLAIN: username not specified", errAuthentication)
	case len(pass) == 0:
		return nil, false, fmt.Errorf("%w: PLAIN: password not specified", errAuthentication)
	}
	fail := func(msg string) ([]byte, bool, error) {
		return nil, false, &authFailure{msg: msg, err: fmt.Errorf("%w: PLAIN: %s", errAuthentication, msg)}
	}
	want, known := p.users[user]
	if !known {
		want = string(p.dummy)
	}
	got, exp := sha256.Sum256(pass), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], exp[:]) != 1 || !known {
		return fail(plainFailedMessage)
	}
	if authz != "" && authz != user {
		return fail("Authentication failed: Client requested an authorization id that is different from username")
	}
	p.user = user
	return []byte{}, true, nil
}

// newSASLSecret is the per-process secret behind unknown users' made-up
// credentials.
func newSASLSecret() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}
