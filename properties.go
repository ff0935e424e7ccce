package kcompatd

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
)

// ReadProperties reads a Kafka server.properties file: the format of
// java.util.Properties.load. Lines starting (after blanks) with '#' or '!'
// are comments; a pair is "key=value", "key: value" or "key value"; a line
// ending in an odd number of backslashes continues on the next line (whose
// leading blanks are dropped); escapes \t \n \r \f \uXXXX are decoded and a
// backslash before any other character stands for that character. A later
// duplicate key wins, as in Java.
//
// One deliberate difference: the bytes are read as UTF-8, where Java's
// Properties.load(InputStream) reads ISO-8859-1. The two agree on ASCII,
// which is all a server.properties normally holds.
func ReadProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	br := bufio.NewReader(r)
	lineNo := 0
	for {
		logical, first, err := readLogicalLine(br, &lineNo)
		if err == io.EOF {
			return props, nil
		}
		if err != nil {
			return nil, err
		}
		key, value, err := splitProperty(logical)
		if err != nil {
			return nil, fmt.Errorf("kcompatd: properties line %d: %w", first, err)
		}
		props[key] = value
	}
}

// isPropBlank is Java's notion of white space in a properties file.
func isPropBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// readLogicalLine returns the next non-blank, non-comment logical line with
// continuations joined (escapes still encoded), and the number of its first
// natural line. It returns io.EOF when no such line is left.
func readLogicalLine(br *bufio.Reader, lineNo *int) (string, int, error) {
	var b strings.Builder
	first := 0
	for {
		line, term, err := readNaturalLine(br)
		if err == io.EOF && line == "" {
			// Input ended right after a continued line.
			if b.Len() > 0 {
				return b.String(), first, nil
			}
			return "", 0, io.EOF
		}
		if err != nil && err != io.EOF {
			return "", 0, err
		}
		*lineNo++
		line = strings.TrimLeft(line, " \t\f")
		// As in Java, "new line" means nothing gathered yet, even after a
		// continuation: a line of just "\" continues into a line that can
		// still be a comment or blank.
		if b.Len() == 0 {
			if line == "" || line[0] == '#' || line[0] == '!' {
				if err == io.EOF {
					return "", 0, io.EOF
				}
				continue
			}
			first = *lineNo
		}
		// An odd number of trailing backslashes escapes the line end.
		n := 0
		for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
			n++
		}
		if n%2 == 1 {
			b.WriteString(line[:len(line)-1])
			if err == io.EOF {
				// Java drops the backslash and keeps the line, even
				// one that was only the backslash.
				return b.String(), first, nil
			}
			// Java's reader also keeps the line, even an empty one,
			// when the input ends right after a one-byte line end that
			// was escaped; after an escaped \r\n it does not.
			if _, perr := br.Peek(1); perr == io.EOF && term != "\r\n" {
				return b.String(), first, nil
			}
			continue
		}
		b.WriteString(line)
		return b.String(), first, nil
	}
}

// readNaturalLine reads up to a \n, \r or \r\n terminator, which it
// returns apart.
func readNaturalLine(br *bufio.Reader) (line, term string, err error) {
	var b []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			return string(b), "", err
		}
		switch c {
		case '\n':
			return string(b), "\n", nil
		case '\r':
			if next, err := br.Peek(1); err == nil && next[0] == '\n' {
				br.ReadByte() //nolint:errcheck // the byte was just peeked
				return string(b), "\r\n", nil
			}
			return string(b), "\r", nil
		}
		b = append(b, c)
	}
}

// splitProperty splits a logical line into its unescaped key and value.
// The key ends at the first unescaped '=', ':' or blank; blanks and one
// '=' or ':' separate it from the value.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++ // skip the escaped character
			continue
		}
		if c == '=' || c == ':' || isPropBlank(c) {
			end = i
			break
		}
	}
	rest := line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescapeProperty(line[:end])
	if err != nil {
		return "", "", err
	}
	value, err := unescapeProperty(rest)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescapeProperty decodes the escapes of java.util.Properties.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	var pendingHigh rune // a \u high surrogate waiting for its low half
	flushHigh := func() {
		if pendingHigh != 0 {
			b.WriteRune(utf16.DecodeRune(pendingHigh, 0)) // U+FFFD, as Java's String would hold a lone surrogate
			pendingHigh = 0
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flushHigh()
			if c != '\\' {
				b.WriteByte(c)
			}
			continue
		}
		i++
		c = s[i]
		if c == 'u' {
			if len(s)-(i+1) < 4 {
				return "", fmt.Errorf("malformed \\uxxxx encoding %q", s[i-1:])
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx encoding %q", s[i-1:i+5])
			}
			i += 4
			r := rune(v)
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00:
				flushHigh()
				pendingHigh = r
			case utf16.IsSurrogate(r) && pendingHigh != 0:
				b.WriteRune(utf16.DecodeRune(pendingHigh, r))
				pendingHigh = 0
			default:
				flushHigh()
				b.WriteRune(r)
			}
			continue
		}
		flushHigh()
		switch c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteByte(c)
		}
	}
	flushHigh()
	return b.String(), nil
}
