package kcompatd

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// The expectations follow java.util.Properties.load; the comment on each
// case says which rule it pins.
func TestReadProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"equals", "a=b\n", map[string]string{"a": "b"}},
		{"colon", "a:b", map[string]string{"a": "b"}},
		{"blank separator", "a b", map[string]string{"a": "b"}},
		{"blanks around separator", "  a \t= \f b", map[string]string{"a": "b"}},
		{"trailing blanks kept", "a=b  ", map[string]string{"a": "b  "}},
		{"only the first separator counts", "a=b=c:d", map[string]string{"a": "b=c:d"}},
		{"blank then separator", "a  :  b", map[string]string{"a": "b"}},
		{"key without value", "a\nb=\nc:", map[string]string{"a": "", "b": "", "c": ""}},
		{"hash comment", "# a=b\nc=d", map[string]string{"c": "d"}},
		{"bang comment", "  ! a=b\nc=d", map[string]string{"c": "d"}},
		{"hash inside a value is data", "a=b#c", map[string]string{"a": "b#c"}},
		{"blank lines", "\n\n  \t\na=b\n\n", map[string]string{"a": "b"}},
		{"CRLF and CR line ends", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"continuation drops the next line's leading blanks", "a=one, \\\n    two", map[string]string{"a": "one, two"}},
		{"continuation over CRLF", "a=x\\\r\n  y", map[string]string{"a": "xy"}},
		{"several continuations", "a=1\\\n2\\\n 3\nb=4", map[string]string{"a": "123", "b": "4"}},
		{"continued line may start with #", "a=1\\\n#2", map[string]string{"a": "1#2"}},
		{"comment line does not continue", "# x\\\na=b", map[string]string{"a": "b"}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", map[string]string{"a": `x\`, "b": "y"}},
		{"trailing backslash at EOF is dropped", "a=x\\", map[string]string{"a": "x"}},
		{"continuation into EOF", "a=x\\\n", map[string]string{"a": "x"}},
		{"escaped separator in key", `a\=b\:c\ d=e`, map[string]string{"a=b:c d": "e"}},
		{"escapes", `a=\t\n\r\f\\\q\"`, map[string]string{"a": "\t\n\r\f\\q\""}},
		{"unicode escape", `a=caf\u00e9 \u20AC`, map[string]string{"a": "café €"}},
		{"surrogate pair", `a=\uD83D\uDE00`, map[string]string{"a": "😀"}},
		{"utf-8 passes through", "a=日本", map[string]string{"a": "日本"}},
		{"later duplicate wins", "a=1\na=2", map[string]string{"a": "2"}},
		// Edge cases checked against Java 17's Properties.load.
		{"a line of just a backslash continues into a comment", "\\\n!x\nk=v", map[string]string{"k": "v"}},
		{"a line of just a backslash continues into a blank line", "\\\n\nk=v", map[string]string{"k": "v"}},
		{"input ending after an escaped LF keeps an empty line", "\\\n", map[string]string{"": ""}},
		{"input ending after an escaped CRLF does not", "\\\r\n", map[string]string{}},
		{"blanks after a final continuation", " \\\n  ", map[string]string{}},
		{"continued key then blank line", "k\\\n\n", map[string]string{"k": ""}},
		{"kafka server.properties excerpt", `
############################# Server Basics #############################
# The role of this server.
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
log.dirs=/tmp/kraft-combined-logs
`, map[string]string{
			"process.roles": "broker,controller",
			"node.id":       "1",
			"listeners":     "PLAINTEXT://:9092,CONTROLLER://:9093",
			"log.dirs":      "/tmp/kraft-combined-logs",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("ReadProperties: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReadPropertiesMalformedUnicode(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uZZZZ`, "x=1\n" + `\u00=b`} {
		_, err := ReadProperties(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%q: got %v, want a malformed \\uxxxx error", in, err)
		}
	}
	_, err := ReadProperties(strings.NewReader("x=1\n\n" + `a=\u1`))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("got %v, want the error to name line 3", err)
	}
}

// FuzzReadProperties: never panics; every key and value read back from a
// file written with escaped pairs is what was written.
func FuzzReadProperties(f *testing.F) {
	f.Add("a=b\n# c\nd: e \\\n f\n")
	f.Add(`k\ ey=\u0041\t`)
	f.Add("a=\\uD83D\\uDE00\r\nb\\\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		props, err := ReadProperties(strings.NewReader(in))
		if err != nil {
			return
		}
		var b strings.Builder
		for k, v := range props {
			b.WriteString(escapeProperty(k, true))
			b.WriteByte('=')
			b.WriteString(escapeProperty(v, false))
			b.WriteByte('\n')
		}
		again, err := ReadProperties(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("re-reading %q: %v", b.String(), err)
		}
		if !maps.Equal(props, again) {
			t.Fatalf("round trip: %q became %q", props, again)
		}
	})
}

// escapeProperty escapes s the way java.util.Properties.store does, for
// the round-trip check.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '=', ':', '#', '!':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case ' ':
			if key || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// TestReadPropertiesMatchesJava reads random files made of the characters
// that matter to the format with ReadProperties and with Java's own
// Properties.load (testdata/PropertiesOracle.java), and wants the same
// result. It skips without a java on PATH. Results with a lone UTF-16
// surrogate, which a Go string cannot hold (it becomes U+FFFD), are not
// compared.
func TestReadPropertiesMatchesJava(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("no java on PATH")
	}
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	alphabet := []string{"a", "b", "=", ":", " ", "\t", "\f", `\`, `\`, "\n", "\r", "\r\n",
		"#", "!", "u", "0", "4", "é", `\u0041`, `\uD83D\uDE00`, `\u00`}
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	inputs := map[string]string{}
	var files []string
	for i := range 2000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		f := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		inputs[f] = b.String()
		files = append(files, f)
	}
	cmd := exec.Command(java, append([]string{filepath.Join("testdata", "PropertiesOracle.java")}, files...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("java could not run the oracle: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("oracle printed %d lines for %d files", len(lines), len(files))
	}
	mismatches := 0
	for _, line := range lines {
		f, want, _ := strings.Cut(line, " ")
		got := "ERROR"
		if props, err := ReadProperties(strings.NewReader(inputs[f])); err == nil {
			got = javaStyleJSON(props)
		}
		// A lone surrogate (a pair token split by an escaped
		// backslash before it) is U+FFFD in Go: not comparable.
		if got != want && !strings.Contains(got, `\ufffd`) {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("seed %d, input %q:\n java %s\n go   %s", seed, inputs[f], want, got)
			}
		}
	}
}

// javaStyleJSON prints props as PropertiesOracle.java does: sorted by
// UTF-16 code units, non-printable-ASCII as \uXXXX escapes of UTF-16.
func javaStyleJSON(props map[string]string) string {
	quote := func(s string) string {
		var b strings.Builder
		b.WriteByte('"')
		for _, u := range utf16.Encode([]rune(s)) {
			switch {
			case u == '"' || u == '\\':
				b.WriteByte('\\')
				b.WriteByte(byte(u))
			case u < 0x20 || u > 0x7e:
				fmt.Fprintf(&b, "\\u%04x", u)
			default:
				b.WriteByte(byte(u))
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	keys := slices.Collect(maps.Keys(props))
	slices.SortFunc(keys, func(a, b string) int {
		return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = quote(k) + ":" + quote(props[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}
