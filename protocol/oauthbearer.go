package protocol

// SASL/OAUTHBEARER (RFC 7628) as Kafka's OAuthBearerSaslServer runs it
// with its default validator, OAuthBearerUnsecuredValidatorCallbackHandler,
// which local setups use: the token is an unsecured JWS (header
// {"alg":"none"}, the claims, an empty signature), accepted when its
// principal claim (sub, or unsecuredValidatorPrincipalClaimName) is a
// non-blank string, exp is present and not past (less
// unsecuredValidatorAllowableClockSkewMs), iat (if any) is not in the
// future, exp is after iat, and its scope claim holds every scope of
// unsecuredValidatorRequiredScope. Those options come from the
// listener's OAuthBearerLoginModule JAAS entry.
//
// The exchange: the client-first message "n,[a=authzid],^Aauth=Bearer
// <token>^A[key=value^A]*^A". A token that fails validation is answered,
// without an error, by the JSON status {"status":"invalid_token"} (or
// "insufficient_scope" with the required scope); the client then sends
// %x01 and gets SASL_AUTHENTICATION_FAILED with that JSON as the message.
// A malformed client-first message fails at once with the generic
// message. The principal is User:<principal claim>, and the session
// lasts until exp (re-authentication, KIP-368).
//
// Deliberate differences: a header without "alg" and a scheme other than
// Bearer make Kafka throw an unchecked exception that closes the
// connection without an answer; kcompatd answers them as Kafka meant, as
// an invalid token and a malformed message.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MechanismOAuthBearer is the SASL mechanism name.
const MechanismOAuthBearer = "OAUTHBEARER"

// OAuthBearerConfig is the unsecured validator's options (the
// unsecuredValidator* options of the listener's OAuthBearerLoginModule).
type OAuthBearerConfig struct {
	// PrincipalClaim names the claim holding the principal ("" : sub).
	PrincipalClaim string
	// ScopeClaim names the claim holding the scope ("": scope).
	ScopeClaim string
	// RequiredScope is the scope a token must hold (space-delimited in
	// the option).
	RequiredScope []string
	// AllowableClockSkew is how far exp and iat may be off.
	AllowableClockSkew time.Duration
}

// ParseOAuthBearerScope splits a space-delimited scope as Kafka's
// OAuthBearerScopeUtils.parseScope, refusing items with characters
// outside RFC 6749's scope-token.
func ParseOAuthBearerScope(s string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(s, " ") {
		if item == "" {
			continue
		}
		for i := 0; i < len(item); i++ {
			if c := item[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return nil, fmt.Errorf("invalid scope value: %s", item)
			}
		}
		out = append(out, item)
	}
	return out, nil
}

// oauthClientFirst is a parsed client-first message.
type oauthClientFirst struct {
	authzid    string
	token      string
	extensions map[string]string
}

// errOAuthMessage is a malformed client-first message.
var errOAuthMessage = errors.New("protocol: invalid OAUTHBEARER client first message")

// parseOAuthClientFirst parses RFC 7628's client-first message as Kafka's
// OAuthBearerClientInitialResponse (its regular expression, by hand). It
// never panics on any input (FuzzOAuthBearer).
func parseOAuthClientFirst(msg []byte) (oauthClientFirst, error) {
	var cf oauthClientFirst
	rest, ok := bytes.CutPrefix(msg, []byte("n,"))
	if !ok {
		return cf, errOAuthMessage
	}
	if a, ok := bytes.CutPrefix(rest, []byte("a=")); ok {
		name, after, ok := bytes.Cut(a, []byte(","))
		if !ok || !validOAuthSaslName(name) {
			return cf, errOAuthMessage
		}
		cf.authzid, rest = string(name), after
	} else if rest, ok = bytes.CutPrefix(rest, []byte(",")); !ok {
		return cf, errOAuthMessage
	}
	// \x01 (key=value\x01)* \x01
	rest, ok = bytes.CutPrefix(rest, []byte{1})
	if !ok {
		return cf, errOAuthMessage
	}
	rest, ok = bytes.CutSuffix(rest, []byte{1})
	if !ok {
		return cf, errOAuthMessage
	}
	kv := map[string]string{}
	for len(rest) > 0 {
		pair, after, ok := bytes.Cut(rest, []byte{1})
		if !ok {
			return cf, errOAuthMessage
		}
		rest = after
		k, v, ok := bytes.Cut(pair, []byte("="))
		if !ok || !validOAuthKey(k) || !validOAuthValue(v) {
			return cf, errOAuthMessage
		}
		kv[string(k)] = string(v) // a repeated key: the last wins, as Utils.parseMap
	}
	auth, ok := kv["auth"]
	if !ok {
		return cf, fmt.Errorf("%w: 'auth' not specified", errOAuthMessage)
	}
	delete(kv, "auth")
	cf.extensions = kv
	// auth: scheme SP+ token, the token base64-ish with '=' padding.
	i := strings.IndexByte(auth, ' ')
	if i <= 0 {
		return cf, fmt.Errorf("%w: invalid 'auth' format", errOAuthMessage)
	}
	scheme, token := auth[:i], strings.TrimLeft(auth[i:], " ")
	body := strings.TrimRight(token, "=")
	if !allBytes(scheme, isWordByte) || body == "" || !allBytes(body, isTokenByte) {
		return cf, fmt.Errorf("%w: invalid 'auth' format", errOAuthMessage)
	}
	if !strings.EqualFold(scheme, "bearer") {
		return cf, fmt.Errorf("%w: invalid scheme %s", errOAuthMessage, scheme)
	}
	cf.token = token
	return cf, nil
}

// validOAuthSaslName is RFC 7628's saslname: %x01-7F except '=' and ','
// or the escapes =2C and =3D, at least one.
func validOAuthSaslName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '=':
			if !bytes.HasPrefix(b[i:], []byte("=2C")) && !bytes.HasPrefix(b[i:], []byte("=3D")) {
				return false
			}
			i += 2
		case c == 0 || c > 0x7f || c == ',':
			return false
		}
	}
	return true
}

// validOAuthKey and validOAuthValue are RFC 7628's key (letters) and
// value (printable ASCII, space, tab, CR, LF), at least one character.
func validOAuthKey(b []byte) bool {
	return len(b) > 0 && allBytes(string(b), func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' })
}

func validOAuthValue(b []byte) bool {
	return len(b) > 0 && allBytes(string(b), func(c byte) bool {
		return 0x21 <= c && c <= 0x7e || c == ' ' || c == '\t' || c == '\r' || c == '\n'
	})
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

func isTokenByte(c byte) bool {
	return isWordByte(c) || c == '-' || c == '~' || c == '+' || c == '/' || c == '.'
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// jwsToken is an unsecured JWS's claims as the validator reads them.
type jwsToken struct {
	principal string
	scope     []string
	expMs     int64 // exp, in Unix milliseconds
	iatMs     int64 // iat, in Unix milliseconds, if hasIat
	hasIat    bool
	exp, iat  float64 // the claims, in seconds
}

// errIllegalToken is a token that fails validation: the client is told
// invalid_token (or insufficient_scope).
var errIllegalToken = errors.New("protocol: illegal OAUTHBEARER token")

// scopeFailure is a token that lacks a required scope.
type scopeFailure struct{ required []string }

func (e *scopeFailure) Error() string {
	return fmt.Sprintf("%v: missing a required scope of %v", errIllegalToken, e.required)
}
func (e *scopeFailure) Unwrap() error { return errIllegalToken }

// claimNumber, claimList: the claims JSON values turn into, as Kafka's
// OAuthBearerUnsecuredJws.convert (Jackson): numbers, lists of their
// elements' text, and the text of anything else.
type claimNumber float64

type claimList []string

// parseUnsecuredJWS parses and validates token as Kafka's
// OAuthBearerUnsecuredJws and OAuthBearerUnsecuredValidatorCallbackHandler
// at time now. It never panics on any input (FuzzOAuthBearer).
func parseUnsecuredJWS(token string, cfg *OAuthBearerConfig, now time.Time) (jwsToken, error) {
	var t jwsToken
	fail := func(format string, args ...any) (jwsToken, error) {
		return jwsToken{}, fmt.Errorf("%w: "+format, append([]any{errIllegalToken}, args...)...)
	}
	if strings.Contains(token, "..") {
		return fail("malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fail("unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := jwsPart(parts[0])
	if err != nil {
		return fail("header: %v", err)
	}
	claims, err := jwsPart(parts[1])
	if err != nil {
		return fail("claims: %v", err)
	}
	if alg, ok := header["alg"]; !ok || claimText(alg) != "none" {
		return fail("unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return fail("unsecured JWS must not contain a digital signature")
	}
	principalClaim := cmp(strings.TrimSpace(cfg.PrincipalClaim), "sub")
	scopeClaim := cmp(strings.TrimSpace(cfg.ScopeClaim), "scope")
	switch v := claims[scopeClaim].(type) {
	case nil:
	case string:
		if s := javaTrim(v); s != "" {
			t.scope = []string{s}
		}
	case claimList:
		for _, s := range v {
			if s = javaTrim(s); s != "" && !slices.Contains(t.scope, s) {
				t.scope = append(t.scope, s)
			}
		}
	default:
		return fail("the '%s' claim was not of type List", scopeClaim)
	}
	exp, ok := claims["exp"].(claimNumber)
	switch {
	case claims["exp"] == nil:
		return fail("no expiration time in JWT")
	case !ok:
		return fail("the 'exp' claim was not of type Number")
	}
	t.exp, t.expMs = float64(exp), secondsToMillis(float64(exp))
	principal, ok := claims[principalClaim].(string)
	if claims[principalClaim] != nil && !ok {
		return fail("the '%s' claim was not of type String", principalClaim)
	}
	if javaTrim(principal) == "" {
		return fail("no principal name in JWT claim: %s", principalClaim)
	}
	t.principal = principal
	if v := claims["iat"]; v != nil {
		iat, ok := v.(claimNumber)
		if !ok {
			return fail("the 'iat' claim was not of type Number")
		}
		t.iat, t.iatMs, t.hasIat = float64(iat), secondsToMillis(float64(iat)), true
	}

	nowMs, skewMs := now.UnixMilli(), cfg.AllowableClockSkew.Milliseconds()
	if t.hasIat && 1000*t.iat > float64(nowMs+skewMs) {
		return fail("the Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)", t.iat, nowMs, skewMs)
	}
	if float64(nowMs-skewMs) >= 1000*t.exp {
		return fail("the indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)", nowMs, skewMs, t.exp)
	}
	if t.hasIat && t.exp <= t.iat {
		return fail("the Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", t.exp, t.iat)
	}
	for _, s := range cfg.RequiredScope {
		if !slices.Contains(t.scope, s) {
			return jwsToken{}, &scopeFailure{required: cfg.RequiredScope}
		}
	}
	return t, nil
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// javaTrim is Java's String.trim: it strips characters up to ' '.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// secondsToMillis is Math.round(seconds * 1000), saturating as Java's.
func secondsToMillis(s float64) int64 {
	v := math.Floor(s*1000 + 0.5)
	switch {
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return int64(v)
}

// jwsPart decodes one base64url part of a JWS into its JSON object's
// members, converted as Kafka converts them. Like Jackson's readTree,
// what follows the first JSON value is ignored, and a value that is not
// an object has no members.
func jwsPart(part string) (map[string]any, error) {
	enc := base64.RawURLEncoding
	if strings.HasSuffix(part, "=") {
		enc = base64.URLEncoding // Java's URL decoder takes padding too
	}
	b, err := enc.DecodeString(part)
	if err != nil {
		return nil, errors.New("malformed Base64 URL encoded value")
	}
	out := map[string]any{}
	if len(bytes.TrimSpace(b)) == 0 {
		return out, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, errors.New("malformed JSON")
	}
	obj, _ := v.(map[string]any)
	for k, x := range obj {
		switch x := x.(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, errors.New("malformed JSON")
			}
			out[k] = claimNumber(f)
		case []any:
			l := make(claimList, 0, len(x))
			for _, e := range x {
				l = append(l, claimText(e))
			}
			out[k] = l
		default:
			out[k] = claimText(x)
		}
	}
	return out, nil
}

// claimText is Jackson's JsonNode.asText of a decoded JSON value.
func claimText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	case claimNumber:
		return strconv.FormatFloat(float64(v), 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	}
	return "" // objects and arrays
}

// oauthServer is one OAUTHBEARER exchange.
type oauthServer struct {
	cfg *OAuthBearerConfig
	now func() time.Time
	// errorStatus is the JSON status sent for a rejected token, awaiting
	// the client's %x01.
	errorStatus string
	rejected    error // why the token was refused, for the log
	user        string
	expMs       int64
}

func (o *oauthServer) User() string { return o.user }

// Rejected is why the last token was refused (nil if it was not).
func (o *oauthServer) Rejected() error { return o.rejected }

// CredentialExpiry is the token's exp: the session's end.
func (o *oauthServer) CredentialExpiry() time.Time { return time.UnixMilli(o.expMs) }

func (o *oauthServer) Next(msg []byte) ([]byte, bool, error) {
	if len(msg) == 1 && msg[0] == 1 && o.errorStatus != "" {
		return nil, false, &authFailure{msg: o.errorStatus, err: fmt.Errorf("%w: OAUTHBEARER: %s", errAuthentication, o.errorStatus)}
	}
	o.errorStatus, o.rejected = "", nil
	cf, err := parseOAuthClientFirst(msg)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", errAuthentication, err)
	}
	tok, err := parseUnsecuredJWS(cf.token, o.cfg, o.now())
	if err != nil {
		o.rejected = err
		o.errorStatus = `{"status":"invalid_token"}`
		var sf *scopeFailure
		if errors.As(err, &sf) {
			// Java's List.toString of the required scope.
			o.errorStatus = `{"status":"insufficient_scope", "scope":"[` + strings.Join(sf.required, ", ") + `]"}`
		}
		return []byte(o.errorStatus), false, nil
	}
	if cf.authzid != "" && cf.authzid != tok.principal {
		msg := fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", cf.authzid, tok.principal)
		return nil, false, &authFailure{msg: msg, err: fmt.Errorf("%w: OAUTHBEARER: %s", errAuthentication, msg)}
	}
	o.user, o.expMs = tok.principal, tok.expMs
	return []byte{}, true, nil
}
