package kcompatd

// JAAS configuration as Kafka reads sasl.jaas.config (JaasConfig, over
// Java's StreamTokenizer): one login module, its control flag and its
// options, ended by a semicolon:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret"
//	    user_admin="admin-secret" user_alice="alice-secret";
//
// Values are quoted strings (with backslash escapes) or bare words;
// // and /* */ comments are skipped. The broker's PLAIN users are the
// user_<name> options of a PlainLoginModule.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kcompatd/kcompatd/protocol"
)

// plainLoginModule is the login module whose options name PLAIN's users.
const plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// oauthBearerLoginModule is OAUTHBEARER's login module, whose options
// configure the unsecured validator.
const oauthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

// jaasEntry is one login module of a JAAS configuration.
type jaasEntry struct {
	module  string
	flag    string // required, requisite, sufficient or optional
	options map[string]string
	order   []string // option names in the order given
}

// maxJAASBytes bounds the text parsed (it comes from configuration, but
// a bound costs nothing).
const maxJAASBytes = 1 << 20

// parseJAAS parses a sasl.jaas.config value; Kafka requires exactly one
// login module. It never panics (FuzzParseJAAS).
func parseJAAS(text string) (jaasEntry, error) {
	var e jaasEntry
	if len(text) > maxJAASBytes {
		return e, errors.New("JAAS config too large")
	}
	toks, err := jaasTokens(text)
	if err != nil {
		return e, err
	}
	if len(toks) == 0 {
		return e, errors.New("JAAS config entry not terminated by semi-colon")
	}
	// module flag (name = value)* ;
	i := 0
	word := func() (string, bool) {
		if i < len(toks) && !toks[i].punct {
			i++
			return toks[i-1].text, true
		}
		return "", false
	}
	punct := func(c string) bool {
		if i < len(toks) && toks[i].punct && toks[i].text == c {
			i++
			return true
		}
		return false
	}
	var ok bool
	if e.module, ok = word(); !ok || toks[i-1].quoted {
		return e, errors.New("JAAS config: expected a login module class name")
	}
	flag, ok := word()
	switch strings.ToLower(flag) {
	case "required", "requisite", "sufficient", "optional":
		e.flag = strings.ToLower(flag)
	default:
		if !ok {
			return e, errors.New("JAAS config: expected a control flag")
		}
		return e, fmt.Errorf("JAAS config: invalid control flag %s", flag)
	}
	e.options = map[string]string{}
	for !punct(";") {
		name, ok := word()
		if !ok {
			return e, errors.New("JAAS config entry not terminated by semi-colon")
		}
		if !punct("=") {
			return e, fmt.Errorf("JAAS config: option %s has no value", name)
		}
		value, ok := word()
		if !ok {
			return e, fmt.Errorf("JAAS config: option %s has no value", name)
		}
		if _, dup := e.options[name]; !dup {
			e.order = append(e.order, name)
		}
		e.options[name] = value
	}
	if i != len(toks) {
		return e, fmt.Errorf("JAAS config property contains more than one login module, should be 1 module")
	}
	return e, nil
}

type jaasToken struct {
	text          string
	punct, quoted bool
}

// jaasTokens splits text as StreamTokenizer does for JAAS: words of
// anything but blanks, quotes, "=" and ";"; quoted strings; "=" and ";";
// comments skipped.
func jaasTokens(text string) ([]jaasToken, error) {
	var toks []jaasToken
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case strings.HasPrefix(text[i:], "//"):
			j := strings.IndexByte(text[i:], '\n')
			if j < 0 {
				return toks, nil
			}
			i += j + 1
		case strings.HasPrefix(text[i:], "/*"):
			j := strings.Index(text[i+2:], "*/")
			if j < 0 {
				return nil, errors.New("JAAS config: unterminated comment")
			}
			i += j + 4
		case c == '=' || c == ';':
			toks = append(toks, jaasToken{text: string(c), punct: true})
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(text) && text[j] != c; j++ {
				if text[j] == '\\' && j+1 < len(text) {
					j++
					switch text[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					default:
						b.WriteByte(text[j])
					}
					continue
				}
				b.WriteByte(text[j])
			}
			if j >= len(text) {
				return nil, errors.New("JAAS config: unterminated quoted value")
			}
			toks = append(toks, jaasToken{text: b.String(), quoted: true})
			i = j + 1
		default:
			j := i
			for j < len(text) && !strings.ContainsRune(" \t\r\n=;\"'", rune(text[j])) && !strings.HasPrefix(text[j:], "//") && !strings.HasPrefix(text[j:], "/*") {
				j++
			}
			toks = append(toks, jaasToken{text: text[i:j]})
			i = j
		}
	}
	return toks, nil
}

// plainUsers returns the user_<name> options of a PlainLoginModule entry.
func (e jaasEntry) plainUsers() (map[string]string, error) {
	if e.module != plainLoginModule {
		return nil, fmt.Errorf("PLAIN needs %s, not %s", plainLoginModule, e.module)
	}
	users := map[string]string{}
	for _, name := range e.order {
		if u, ok := strings.CutPrefix(name, "user_"); ok && u != "" {
			users[u] = e.options[name]
		}
	}
	return users, nil
}

// oauthBearerValidator reads the unsecured validator's options of an
// OAuthBearerLoginModule entry, as Kafka's
// OAuthBearerUnsecuredValidatorCallbackHandler does (Kafka checks the
// clock skew and the scope at the first login; kcompatd at start-up).
func (e jaasEntry) oauthBearerValidator() (protocol.OAuthBearerConfig, error) {
	var ob protocol.OAuthBearerConfig
	if e.module != oauthBearerLoginModule {
		return ob, fmt.Errorf("OAUTHBEARER needs %s, not %s", oauthBearerLoginModule, e.module)
	}
	ob.PrincipalClaim = strings.TrimSpace(e.options["unsecuredValidatorPrincipalClaimName"])
	ob.ScopeClaim = strings.TrimSpace(e.options["unsecuredValidatorScopeClaimName"])
	scope, err := protocol.ParseOAuthBearerScope(strings.TrimSpace(e.options["unsecuredValidatorRequiredScope"]))
	if err != nil {
		return ob, fmt.Errorf("unsecuredValidatorRequiredScope: %v", err)
	}
	ob.RequiredScope = scope
	if v := strings.TrimSpace(e.options["unsecuredValidatorAllowableClockSkewMs"]); v != "" {
		ms, err := strconv.ParseInt(v, 10, 32)
		if err != nil || ms < 0 {
			return ob, fmt.Errorf("unsecuredValidatorAllowableClockSkewMs must be a non-negative int, not %q", v)
		}
		ob.AllowableClockSkew = time.Duration(ms) * time.Millisecond
	}
	return ob, nil
}
