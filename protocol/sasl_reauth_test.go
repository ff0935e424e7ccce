package protocol

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// startSASLWith serves a SASL_PLAINTEXT listener with sc over tb's server.
func startSASLWith(t *testing.T, tb *testBroker, sc *SASLConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if sc.PlainUsers == nil {
		sc.PlainUsers = map[string]string{"alice": "alice-secret", "admin": "admin-secret"}
	}
	l := &Listener{Name: "SASL_PLAINTEXT", Protocol: SASLPlaintext, AdvertisedHost: "127.0.0.1", AdvertisedPort: int32(ln.Addr().(*net.TCPAddr).Port), SASL: sc}
	go tb.s.ServeListener(ln, l)
	return ln.Addr().String()
}

// saslLogin runs a v1 handshake and one SaslAuthenticate v2 on w.
func saslLogin(t *testing.T, w *wire, mechanism string, token []byte) (*kmsg.SASLHandshakeResponse, *kmsg.SASLAuthenticateResponse) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mechanism
	hsr := w.roundTrip(hs).(*kmsg.SASLHandshakeResponse)
	if hsr.ErrorCode != 0 {
		return hsr, nil
	}
	return hsr, saslAuth(t, w, token)
}

func saslAuth(t *testing.T, w *wire, token []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	a := kmsg.NewPtrSASLAuthenticateRequest()
	a.SetVersion(2)
	a.SASLAuthBytes = token
	return w.roundTrip(a).(*kmsg.SASLAuthenticateResponse)
}

func plainToken(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

// KIP-368 on one connection, on an injected clock: SessionLifetimeMs is
// connections.max.reauth.ms; a SaslHandshake re-authenticates (at most
// once a second; sooner it is ILLEGAL_SASL_STATE), even past the expiry;
// a request after the expiry closes the connection without an answer.
func TestSASLReauthentication(t *testing.T) {
	tb := startBroker(t, noAuthDelay)
	addr := startSASLWith(t, tb, &SASLConfig{Mechanisms: []string{"PLAIN", "SCRAM-SHA-256"}, MaxReauth: map[string]time.Duration{"PLAIN": 10 * time.Second}})

	w := dialWire(t, addr)
	if _, a := saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret")); a.ErrorCode != 0 || a.SessionLifetimeMillis != 10000 || a.ErrorMessage == nil || *a.ErrorMessage != "" {
		t.Fatalf("login: %+v (Kafka's error message on success is empty, not null)", a)
	}
	w.roundTrip(kmsg.NewPtrMetadataRequest())
	tb.clock.Advance(3 * time.Second)
	if _, a := saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret")); a.ErrorCode != 0 || a.SessionLifetimeMillis != 10000 {
		t.Fatalf("re-authentication: %+v", a)
	}
	if n := tb.s.saslReauthentications.Load(); n != 1 {
		t.Errorf("%d re-authentications", n)
	}
	// Within a second of the last one: served as after authentication.
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	if r := w.roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("a second re-authentication within a second: %+v", r)
	}
	// The session runs 10 s from the re-authentication: at 9 s it is
	// served, past 10 s a re-authentication still may begin, and
	// anything else closes.
	tb.clock.Advance(9 * time.Second)
	w.roundTrip(kmsg.NewPtrMetadataRequest())
	tb.clock.Advance(2 * time.Second)
	if _, a := saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret")); a.ErrorCode != 0 {
		t.Fatalf("re-authentication after the expiry: %+v", a)
	}
	w.roundTrip(kmsg.NewPtrMetadataRequest())
	tb.clock.Advance(10*time.Second + time.Millisecond)
	w.send(kmsg.NewPtrMetadataRequest())
	w.expectClosed()
	if n := tb.s.saslSessionsExpired.Load(); n != 1 {
		t.Errorf("%d expired sessions closed", n)
	}

	// The principal may not change.
	w = dialWire(t, addr)
	saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret"))
	_, a := saslLogin(t, w, "PLAIN", plainToken("admin", "admin-secret"))
	if want := "Cannot change principals during re-authentication from User.alice: User.admin"; a.ErrorCode != kerr.SaslAuthenticationFailed.Code || a.ErrorMessage == nil || *a.ErrorMessage != want {
		t.Errorf("another principal: %+v", a)
	}
	w.expectClosed()

	// A wrong password fails the re-authentication with Kafka's message.
	w = dialWire(t, addr)
	saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret"))
	if _, a := saslLogin(t, w, "PLAIN", plainToken("alice", "wrong")); a.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("wrong password: %+v", a)
	}
	w.expectClosed()

	// Nor may the mechanism: the handshake is answered, the next
	// message closes.
	w = dialWire(t, addr)
	saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret"))
	hs.Mechanism = "SCRAM-SHA-256"
	if r := w.roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake with another mechanism: %+v", r)
	}
	a2 := kmsg.NewPtrSASLAuthenticateRequest()
	a2.SetVersion(2)
	a2.SASLAuthBytes = []byte("n,,n=alice,r=abc")
	w.send(a2)
	w.expectClosed()

	// Before the session began, ApiVersions is served; during a
	// re-authentication only the exchange.
	w = dialWire(t, addr)
	saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret"))
	hs.Mechanism = "PLAIN"
	w.roundTrip(hs)
	w.send(apiVersionsReq(3))
	w.expectClosed()

	// A mechanism without connections.max.reauth.ms has no session
	// lifetime: SaslHandshake is ILLEGAL_SASL_STATE, and time does not
	// end the session.
	tb2 := startBroker(t, noAuthDelay)
	addr2 := startSASLWith(t, tb2, &SASLConfig{Mechanisms: []string{"PLAIN"}})
	w = dialWire(t, addr2)
	if _, a := saslLogin(t, w, "PLAIN", plainToken("alice", "alice-secret")); a.ErrorCode != 0 || a.SessionLifetimeMillis != 0 {
		t.Fatalf("login: %+v", a)
	}
	tb2.clock.Advance(5 * time.Minute) // less than connections.max.idle.ms
	if r := w.roundTrip(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("handshake without a session lifetime: %+v", r)
	}
	w.roundTrip(kmsg.NewPtrMetadataRequest())
}

// An OAUTHBEARER session ends at the token's exp, or sooner with
// connections.max.reauth.ms.
func TestOAuthBearerSessionLifetime(t *testing.T) {
	tb := startBroker(t, noAuthDelay)
	exp := tb.clock.Now().Add(time.Minute).Unix()
	token := oauthFirst("", unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":`+strconv.FormatInt(exp, 10)+`}`))
	for _, tt := range []struct {
		maxReauth time.Duration
		want      int64
	}{{0, 60000}, {10 * time.Second, 10000}, {time.Hour, 60000}} {
		addr := startSASLWith(t, tb, &SASLConfig{Mechanisms: []string{MechanismOAuthBearer}, MaxReauth: map[string]time.Duration{MechanismOAuthBearer: tt.maxReauth}})
		w := dialWire(t, addr)
		if _, a := saslLogin(t, w, MechanismOAuthBearer, token); a.ErrorCode != 0 || a.SessionLifetimeMillis != tt.want {
			t.Errorf("max reauth %v: %+v, want lifetime %d", tt.maxReauth, a, tt.want)
		}
		if got := principals(tb.s); !containsString(got, "User:alice") {
			t.Errorf("principals %q", got)
		}
	}
	// A rejected token: the JSON status, then the failure.
	addr := startSASLWith(t, tb, &SASLConfig{Mechanisms: []string{MechanismOAuthBearer}})
	w := dialWire(t, addr)
	expired := oauthFirst("", unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":1}`))
	if _, a := saslLogin(t, w, MechanismOAuthBearer, expired); a.ErrorCode != 0 || string(a.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("expired token: %+v", a)
	}
	if a := saslAuth(t, w, []byte{1}); a.ErrorCode != kerr.SaslAuthenticationFailed.Code || a.ErrorMessage == nil || *a.ErrorMessage != `{"status":"invalid_token"}` {
		t.Errorf("after %%x01: %+v", a)
	}
	w.expectClosed()
}

// kgo re-authenticates in place when SessionLifetimeMs runs out (it does
// so a second before), and kgo's OAUTHBEARER logs in with an unsecured
// token; an expired one fails with the JSON status.
func TestSASLReauthWithKgo(t *testing.T) {
	tb := startBroker(t, noAuthDelay)
	addr := startSASLWith(t, tb, &SASLConfig{Mechanisms: []string{"PLAIN", MechanismOAuthBearer}, MaxReauth: map[string]time.Duration{"PLAIN": 1100 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// kgo re-authenticates 0.1 s (real time) after each login, before
	// its next request; the broker's session is 1.1 s on its clock,
	// which moves only here, by less than that and at least a second
	// between re-authentications, so none is refused or expires.
	waitReauths := func(n int64) {
		t.Helper()
		for i := 0; tb.s.saslReauthentications.Load() < n; i++ {
			if i == 200 {
				t.Fatalf("%d re-authentications, want %d", tb.s.saslReauthentications.Load(), n)
			}
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
				t.Fatalf("metadata: %v", err)
			}
			time.Sleep(20 * time.Millisecond) // for kgo's real-time expiry
		}
	}
	waitReauths(1)
	tb.clock.Advance(1050 * time.Millisecond)
	waitReauths(2)
	if n := tb.s.saslSessionsExpired.Load(); n != 0 {
		t.Errorf("%d sessions expired", n)
	}

	login := func(exp time.Time) error {
		tok := unsecuredJWS(`{"alg":"none"}`, `{"sub":"admin","exp":`+strconv.FormatInt(exp.Unix(), 10)+`}`)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.Ping(ctx)
	}
	if err := login(tb.clock.Now().Add(time.Hour)); err != nil {
		t.Errorf("OAUTHBEARER: %v", err)
	}
	if err := login(tb.clock.Now().Add(-time.Minute)); !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
		t.Errorf("expired token: %v", err)
	}
}
