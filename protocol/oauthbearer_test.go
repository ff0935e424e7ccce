package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// unsecuredJWS is an unsecured JWS of the header and claims JSON.
func unsecuredJWS(header, claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(claims)) + "."
}

// oauthFirst is the client-first message of a token, as Kafka's and
// franz-go's clients write it.
func oauthFirst(authzid, token string, ext ...string) []byte {
	a := ""
	if authzid != "" {
		a = "a=" + authzid
	}
	e := ""
	for _, x := range ext {
		e += x + "\x01"
	}
	return []byte("n," + a + ",\x01auth=Bearer " + token + "\x01" + e + "\x01")
}

// Client-first messages as Kafka's OAuthBearerClientInitialResponse reads
// them.
func TestOAuthClientFirst(t *testing.T) {
	for _, tt := range []struct {
		msg, token, authzid string
		ext                 map[string]string
		bad                 bool
	}{
		{msg: "n,,\x01auth=Bearer abc.def.\x01\x01", token: "abc.def."},
		{msg: "n,a=alice,\x01auth=bearer  abc==\x01\x01", token: "abc==", authzid: "alice"},
		{msg: "n,a=a=2Cb,\x01auth=Bearer t\x01\x01", token: "t", authzid: "a=2Cb"},
		{msg: "n,,\x01auth=Bearer t\x01x=1 2=\x01x=3\x01\x01", token: "t", ext: map[string]string{"x": "3"}},
		{msg: "n,,\x01traceId=abc\x01auth=Bearer t\x01\x01", token: "t", ext: map[string]string{"traceId": "abc"}},
		{msg: "", bad: true},
		{msg: "y,,\x01auth=Bearer t\x01\x01", bad: true},
		{msg: "n,a=,\x01auth=Bearer t\x01\x01", bad: true},
		{msg: "n,a=x=2,\x01auth=Bearer t\x01\x01", bad: true},
		{msg: "n,,\x01auth=Bearer t\x01", bad: true},
		{msg: "n,,auth=Bearer t\x01\x01", bad: true},
		{msg: "n,,\x01\x01", bad: true},                          // no auth
		{msg: "n,,\x01auth=Basic t\x01\x01", bad: true},          // another scheme
		{msg: "n,,\x01auth=Bearer\x01\x01", bad: true},           // no token
		{msg: "n,,\x01auth=Bearer a b\x01\x01", bad: true},       // a space in the token
		{msg: "n,,\x01auth=Bearer a=b\x01\x01", bad: true},       // '=' inside the token
		{msg: "n,,\x01auth=Bearer t\x011x=1\x01\x01", bad: true}, // a key of letters only
		{msg: "n,,\x01auth=Bearer t\x01x=\x01\x01", bad: true},   // an empty value
		{msg: "n,,\x01auth=Bearer t\x01x=\xc3\xa9\x01\x01", bad: true},
	} {
		cf, err := parseOAuthClientFirst([]byte(tt.msg))
		if tt.bad {
			if err == nil {
				t.Errorf("%q accepted: %+v", tt.msg, cf)
			}
			continue
		}
		if err != nil || cf.token != tt.token || cf.authzid != tt.authzid || len(cf.extensions) != len(tt.ext) {
			t.Errorf("%q: %+v %v", tt.msg, cf, err)
			continue
		}
		for k, v := range tt.ext {
			if cf.extensions[k] != v {
				t.Errorf("%q: extension %s=%q, want %q", tt.msg, k, cf.extensions[k], v)
			}
		}
	}
}

// Unsecured JWSs as Kafka's OAuthBearerUnsecuredJws and its validator
// take or refuse them.
func TestUnsecuredJWS(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	exp := now.Unix() + 3600
	none := `{"alg":"none"}`
	for _, tt := range []struct {
		name      string
		token     string
		cfg       OAuthBearerConfig
		principal string
		expMs     int64
		scope     bool // a scope failure
		bad       bool
	}{
		{name: "sub", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"alice","exp":%d}`, exp)), principal: "alice", expMs: exp * 1000},
		{name: "padded parts", token: base64.URLEncoding.EncodeToString([]byte(none)) + "." + base64.URLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"sub":"al","exp":%d}`, exp))) + ".", principal: "al", expMs: exp * 1000},
		{name: "fractional exp", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d.0005}`, exp)), principal: "a", expMs: exp*1000 + 1},
		{name: "iat", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d,"iat":%d}`, exp, now.Unix())), principal: "a", expMs: exp * 1000},
		{name: "named principal claim", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","user":"bob","exp":%d}`, exp)), cfg: OAuthBearerConfig{PrincipalClaim: "user"}, principal: "bob", expMs: exp * 1000},
		{name: "a boolean principal is its text", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":true,"exp":%d}`, exp)), principal: "true", expMs: exp * 1000},
		{name: "scope string", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d,"scope":" read "}`, exp)), cfg: OAuthBearerConfig{RequiredScope: []string{"read"}}, principal: "a", expMs: exp * 1000},
		{name: "scope list", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d,"perms":["read","write"]}`, exp)), cfg: OAuthBearerConfig{ScopeClaim: "perms", RequiredScope: []string{"write", "read"}}, principal: "a", expMs: exp * 1000},
		{name: "expired within skew", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d}`, now.Unix()-1)), cfg: OAuthBearerConfig{AllowableClockSkew: 2 * time.Second}, principal: "a", expMs: (now.Unix() - 1) * 1000},
		{name: "trailing JSON ignored", token: unsecuredJWS(none+" x", fmt.Sprintf(`{"sub":"a","exp":%d} y`, exp)), principal: "a", expMs: exp * 1000},

		{name: "missing scope", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d,"scope":["read"]}`, exp)), cfg: OAuthBearerConfig{RequiredScope: []string{"read", "write"}}, scope: true, bad: true},
		{name: "expired", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d}`, now.Unix())), bad: true},
		{name: "no exp", token: unsecuredJWS(none, `{"sub":"a"}`), bad: true},
		{name: "string exp", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":"%d"}`, exp)), bad: true},
		{name: "no sub", token: unsecuredJWS(none, fmt.Sprintf(`{"exp":%d}`, exp)), bad: true},
		{name: "blank sub", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":" ","exp":%d}`, exp)), bad: true},
		{name: "numeric sub", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":1,"exp":%d}`, exp)), bad: true},
		{name: "iat in the future", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d,"iat":%d}`, exp, now.Unix()+10)), bad: true},
		{name: "exp not after iat", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d,"iat":%d}`, now.Unix()+5, now.Unix()+5)), cfg: OAuthBearerConfig{AllowableClockSkew: 10 * time.Second}, bad: true},
		{name: "numeric scope", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d,"scope":1}`, exp)), bad: true},
		{name: "alg HS256", token: unsecuredJWS(`{"alg":"HS256"}`, fmt.Sprintf(`{"sub":"a","exp":%d}`, exp)), bad: true},
		{name: "no alg", token: unsecuredJWS(`{}`, fmt.Sprintf(`{"sub":"a","exp":%d}`, exp)), bad: true},
		{name: "signed", token: unsecuredJWS(none, fmt.Sprintf(`{"sub":"a","exp":%d}`, exp)) + "c2ln", bad: true},
		{name: "two parts", token: "eyJhbGciOiJub25lIn0.e30", bad: true},
		{name: "double dot", token: "a..b", bad: true},
		{name: "bad base64", token: "!!!.e30.", bad: true},
		{name: "bad JSON", token: unsecuredJWS(none, `{"sub":`), bad: true},
	} {
		tok, err := parseUnsecuredJWS(tt.token, &tt.cfg, now)
		if tt.bad {
			var sf *scopeFailure
			if !errors.Is(err, errIllegalToken) || errors.As(err, &sf) != tt.scope {
				t.Errorf("%s: %+v %v", tt.name, tok, err)
			}
			continue
		}
		if err != nil || tok.principal != tt.principal || tok.expMs != tt.expMs {
			t.Errorf("%s: %+v %v, want %q exp %d", tt.name, tok, err, tt.principal, tt.expMs)
		}
	}
}

// The exchange, byte for byte: success with an empty answer, and a
// rejected token answered by Kafka's JSON status, then failed with it
// once the client sends %x01.
func TestOAuthBearerExchange(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	good := unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":1700003600}`)
	expired := unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":1600000000}`)
	newServer := func(cfg OAuthBearerConfig) *oauthServer {
		return &oauthServer{cfg: &cfg, now: func() time.Time { return now }}
	}
	o := newServer(OAuthBearerConfig{})
	out, done, err := o.Next(oauthFirst("", good))
	if err != nil || !done || out == nil || len(out) != 0 || o.User() != "alice" || !o.CredentialExpiry().Equal(time.Unix(1700003600, 0)) {
		t.Fatalf("good token: %q %v %v %q %v", out, done, err, o.User(), o.CredentialExpiry())
	}

	for _, tt := range []struct {
		cfg    OAuthBearerConfig
		token  string
		status string
	}{
		{token: expired, status: `{"status":"invalid_token"}`},
		{cfg: OAuthBearerConfig{RequiredScope: []string{"a", "b"}}, token: good, status: `{"status":"insufficient_scope", "scope":"[a, b]"}`},
	} {
		o := newServer(tt.cfg)
		out, done, err := o.Next(oauthFirst("", tt.token))
		if err != nil || done || string(out) != tt.status {
			t.Fatalf("rejected token: %q %v %v, want %q", out, done, err, tt.status)
		}
		_, _, err = o.Next([]byte{1})
		var af *authFailure
		if !errors.As(err, &af) || af.msg != tt.status {
			t.Errorf("after %%x01: %v, want the failure %q", err, tt.status)
		}
	}

	// After a rejection the client may send another token instead.
	o = newServer(OAuthBearerConfig{})
	o.Next(oauthFirst("", expired))
	if _, done, err := o.Next(oauthFirst("", good)); !done || err != nil {
		t.Errorf("a second token after a rejection: %v %v", done, err)
	}
	// %x01 with no rejection before is a malformed message.
	if _, _, err := newServer(OAuthBearerConfig{}).Next([]byte{1}); !errors.Is(err, errOAuthMessage) {
		t.Errorf("%%x01 first: %v", err)
	}
	// An authorization id must be the principal.
	_, _, err = newServer(OAuthBearerConfig{}).Next(oauthFirst("bob", good))
	var af *authFailure
	if want := "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"; !errors.As(err, &af) || af.msg != want {
		t.Errorf("authzid bob: %v", err)
	}
	if _, done, err := newServer(OAuthBearerConfig{}).Next(oauthFirst("alice", good)); !done || err != nil {
		t.Errorf("authzid alice: %v %v", done, err)
	}
}

// FuzzOAuthBearer feeds arbitrary client-first messages (and so tokens)
// to the OAUTHBEARER server: never a panic, and an authentication only
// with a token the validator accepts.
func FuzzOAuthBearer(f *testing.F) {
	f.Add(oauthFirst("", unsecuredJWS(`{"alg":"none"}`, `{"sub":"alice","exp":1700003600}`)))
	f.Add(oauthFirst("a", unsecuredJWS(`{"alg":"none"}`, `{"sub":"a","exp":1.7e9,"iat":1,"scope":["x",1,null,{}]}`), "k=v"))
	f.Add([]byte("n,,\x01auth=Bearer e30.e30.\x01\x01"))
	f.Add([]byte{1})
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, msg []byte) {
		o := &oauthServer{cfg: &OAuthBearerConfig{RequiredScope: []string{"x"}}, now: func() time.Time { return now }}
		out, done, err := o.Next(msg)
		if !done {
			if err == nil && !strings.HasPrefix(string(out), `{"status":`) {
				t.Fatalf("%q: not done, no error, answer %q", msg, out)
			}
			return
		}
		cf, perr := parseOAuthClientFirst(msg)
		if err != nil || perr != nil || strings.TrimSpace(o.User()) == "" {
			t.Fatalf("%q authenticated %q (%v, %v)", msg, o.User(), err, perr)
		}
		if _, verr := parseUnsecuredJWS(cf.token, o.cfg, now); verr != nil {
			t.Fatalf("%q authenticated with a token the validator refuses: %v", msg, verr)
		}
	})
}
