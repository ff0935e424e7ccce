package protocol

// Principals of TLS clients, as Kafka's DefaultKafkaPrincipalBuilder
// builds them: the client certificate's subject as an X.500 distinguished
// name in RFC 2253 form (what Java's X500Principal.getName() returns),
// mapped by ssl.principal.mapping.rules (SslPrincipalMapper), as
// User:<name>; a TLS client without a certificate is User:ANONYMOUS.

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// AnonymousPrincipal is the principal of a client that did not
// authenticate (PLAINTEXT, or TLS without a client certificate).
const AnonymousPrincipal = "User:ANONYMOUS"

// dnKeywords are the attribute types Java's RFC 2253 form names by keyword;
// every other type is written as its dotted OID and the BER value in hex.
var dnKeywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// DistinguishedName formats a certificate subject (its raw DER, as in
// x509.Certificate.RawSubject) in RFC 2253 form as Java does: the RDNs
// last to first, attributes of a multi-valued RDN joined by "+", known
// types by keyword with their string values escaped, others as
// OID=#hex of the encoded value.
func DistinguishedName(rawSubject []byte) (string, error) {
	var rdns pkix.RDNSequence
	rest, err := asn1.Unmarshal(rawSubject, &rdns)
	if err != nil {
		return "", fmt.Errorf("protocol: certificate subject: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("protocol: certificate subject: trailing bytes")
	}
	// pkix.AttributeTypeAndValue has lost the raw bytes of values, which
	// the #hex form needs: parse the raw values once more.
	var raw []asn1.RawValue
	if _, err := asn1.Unmarshal(rawSubject, &raw); err != nil {
		return "", fmt.Errorf("protocol: certificate subject: %w", err)
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		var set []struct {
			Type  asn1.ObjectIdentifier
			Value asn1.RawValue
		}
		if _, err := asn1.UnmarshalWithParams(raw[i].FullBytes, &set, "set"); err != nil {
			return "", fmt.Errorf("protocol: certificate subject: %w", err)
		}
		for j, atv := range set {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			kw, known := dnKeywords[oid]
			s, isString := rdns[i][j].Value.(string)
			if known && isString {
				b.WriteString(kw)
				b.WriteByte('=')
				b.WriteString(escapeDNValue(s))
				continue
			}
			b.WriteString(oid)
			b.WriteString("=#")
			b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		}
	}
	return b.String(), nil
}

// escapeDNValue escapes a string value as RFC 2253 section 2.4 says:
// , + " \ < > ; with a backslash, and a leading # or space and a
// trailing space.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(",+\"\\<>;", r),
			i == 0 && (r == '#' || r == ' '),
			i == len(s)-1 && r == ' ':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PrincipalMapper maps a distinguished name to a principal's name by
// ssl.principal.mapping.rules.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault   bool
	pattern     *regexp.Regexp // the rule's pattern, unanchored
	full        *regexp.Regexp // the same, matching the whole name
	replacement string
	lower       bool
	upper       bool
}

// errNoMatchingRule is a DN that no mapping rule applies to: Kafka fails
// the authentication.
var errNoMatchingRule = errors.New("protocol: no ssl.principal.mapping.rules rule applies")

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules as
// Kafka's SslPrincipalMapper does: a comma-separated list of DEFAULT and
// RULE:pattern/replacement/[L|U] entries, where the pattern and the
// replacement may hold commas and a backslash escapes the next character
// (a "/" in particular); surrounding blanks and empty entries are
// ignored. Patterns are Go regular expressions (RE2: no back references
// or lookaround, which Java's allow); replacements name groups as $1.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	s = strings.TrimSpace(s)
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			break
		}
		if s[0] == ',' { // an empty entry
			s = s[1:]
			continue
		}
		var r mappingRule
		var err error
		switch {
		case strings.HasPrefix(s, "DEFAULT"):
			r.isDefault = true
			s = s[len("DEFAULT"):]
		case strings.HasPrefix(s, "RULE:"):
			s = s[len("RULE:"):]
			var pattern string
			if pattern, s, err = cutEscaped(s); err != nil {
				return nil, err
			}
			if r.replacement, s, err = cutEscaped(s); err != nil {
				return nil, err
			}
			if s != "" && (s[0] == 'L' || s[0] == 'U') {
				r.lower, r.upper = s[0] == 'L', s[0] == 'U'
				s = s[1:]
			}
			if r.pattern, err = regexp.Compile(pattern); err != nil {
				return nil, fmt.Errorf("invalid rule pattern %q: %v", pattern, err)
			}
			r.full = regexp.MustCompile(`^(?:` + pattern + `)$`)
		default:
			entry, _, _ := strings.Cut(s, ",")
			return nil, fmt.Errorf("invalid rule: %s", strings.TrimSpace(entry))
		}
		// Only blanks may follow, up to the next comma or the end.
		rest := strings.TrimLeft(s, " \t\r\n")
		if rest != "" && rest[0] != ',' {
			entry, _, _ := strings.Cut(rest, ",")
			return nil, fmt.Errorf("invalid rule: unmatched substring %q", entry)
		}
		s = rest
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// cutEscaped returns s up to its first "/" not escaped by a backslash
// (the escapes kept), and what follows that "/".
func cutEscaped(s string) (string, string, error) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], nil
		}
	}
	return "", "", errors.New("invalid rule: a RULE needs RULE:pattern/replacement/")
}

// Map returns the name the first applicable rule gives dn.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.full.MatchString(dn) {
			continue
		}
		// Java's replaceAll: every match replaced, the text between kept.
		var b strings.Builder
		last := 0
		for _, loc := range r.pattern.FindAllStringSubmatchIndex(dn, -1) {
			b.WriteString(dn[last:loc[0]])
			groups := make([]string, len(loc)/2)
			for g := range groups {
				if loc[2*g] >= 0 {
					groups[g] = dn[loc[2*g]:loc[2*g+1]]
				}
			}
			b.WriteString(expandJavaReplacement(groups, r.replacement))
			last = loc[1]
		}
		b.WriteString(dn[last:])
		out := b.String()
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w: %s", errNoMatchingRule, dn)
}

// expandJavaReplacement expands a replacement as Java's Matcher does for
// one match: \x is x, $n is group n, taking as many digits as still name
// a group; a $n naming no group stays literal (as Kafka makes it).
func expandJavaReplacement(groups []string, repl string) string {
	n := len(groups) - 1
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		switch {
		case c == '\\' && i+1 < len(repl):
			i++
			b.WriteByte(repl[i])
		case c == '$' && i+1 < len(repl) && repl[i+1] >= '1' && repl[i+1] <= '9' && int(repl[i+1]-'0') <= n:
			g := int(repl[i+1] - '0')
			i++
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' && g*10+int(repl[i+1]-'0') <= n {
				g = g*10 + int(repl[i+1]-'0')
				i++
			}
			b.WriteString(groups[g])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
