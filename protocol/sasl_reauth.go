package protocol

// Re-authentication (KIP-368), as Kafka's KafkaChannel, SocketServer and
// SaslServerAuthenticator run it:
//   - A session has a lifetime when connections.max.reauth.ms (of the
//     listener and mechanism) is positive or the credential expires (an
//     OAUTHBEARER token): the lesser of the two, from the end of the
//     exchange; SaslAuthenticate v1+ answers it in SessionLifetimeMs.
//   - On a connection whose session has a lifetime, a SaslHandshake starts
//     a re-authentication, at most once a second (a second one within the
//     second is served as on any authenticated connection: ILLEGAL_SASL_STATE),
//     even after the session expired: SaslHandshake then SaslAuthenticate
//     (or raw tokens after a v0 handshake) as the first time, but with the
//     mechanism and the principal of the session (another mechanism: the
//     handshake is answered, and the next message closes the connection;
//     another principal: SASL_AUTHENTICATION_FAILED, "Cannot change
//     principals during re-authentication ..."). A failure closes the
//     connection, as the first time.
//   - Any other request arriving after the session expired closes the
//     connection without an answer.

import (
	"errors"
	"time"
)

// minReauthInterval is KafkaChannel's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS.
const minReauthInterval = time.Second

// reauthState is a SASL connection's session and re-authentication.
type reauthState struct {
	expiry    time.Time // the session's end on s.clock; zero: none
	active    bool      // an exchange in progress re-authenticates
	lastStart time.Time // when the last re-authentication began
	// badMechanism is the failure of a re-authentication whose handshake
	// named another mechanism than the session's.
	badMechanism string
}

// errSessionExpired closes a connection whose session expired.
var errSessionExpired = errors.New("protocol: SASL session expired without re-authentication")

// startSession sets the session's lifetime at the end of a successful
// exchange, as Kafka's ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs.
func (c *conn) startSession(st *saslState) time.Duration {
	now := c.s.clock.Now()
	maxReauth := c.listener.SASL.MaxReauth[st.mechanism]
	var lifetime time.Duration
	ec, expires := st.server.(expiringCredential)
	switch {
	case !expires && maxReauth <= 0:
		st.reauth.expiry = time.Time{}
		return 0
	case !expires:
		lifetime = maxReauth
	default:
		lifetime = ec.CredentialExpiry().Sub(now).Truncate(time.Millisecond)
		if maxReauth > 0 {
			lifetime = min(lifetime, maxReauth)
		}
	}
	lifetime = max(lifetime, 0)
	st.reauth.expiry = now.Add(lifetime)
	return lifetime
}

// serveSession serves, on an authenticated SASL connection, a frame that
// begins a re-authentication, and closes one whose session expired;
// handled false leaves the frame to be served as usual.
func (c *conn) serveSession(frame []byte) (handled bool, err error) {
	st := c.sasl
	if st.reauth.expiry.IsZero() {
		return false, nil
	}
	now := c.s.clock.Now()
	if h, herr := parseHeader(frame); herr == nil && h.key == saslHandshakeKey &&
		(st.reauth.lastStart.IsZero() || now.Sub(st.reauth.lastStart) >= minReauthInterval) {
		st.reauth = reauthState{expiry: st.reauth.expiry, active: true, lastStart: now}
		st.stage = saslHandshake
		c.saslPending.Store(true)
		c.log.Debug().Str("principal", c.Principal()).Str("mechanism", st.mechanism).Msg("SASL re-authentication begins")
		return true, c.serveSASL(frame)
	}
	if now.After(st.reauth.expiry) {
		c.s.saslSessionsExpired.Add(1)
		return true, errSessionExpired
	}
	return false, nil
}
