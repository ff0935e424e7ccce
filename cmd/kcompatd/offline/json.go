package offline

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// obj is a JSON object whose keys keep their order, as Kafka's generated
// JSON converters (Jackson ObjectNode) print them. Values are int64 and
// the other integer types, bool, string, []byte (base64, as Jackson
// writes binary nodes), nil (null), obj, arr and raw (already JSON).
type obj []field

type field struct {
	k string
	v any
}

type arr []any

type raw string

func (o obj) add(k string, v any) obj { return append(o, field{k, v}) }

func (o obj) String() string { return string(appendJSON(nil, o)) }

func appendJSON(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case obj:
		b = append(b, '{')
		for i, f := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.k)
			b = append(b, ':')
			b = appendJSON(b, f.v)
		}
		return append(b, '}')
	case arr:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case raw:
		return append(b, v...)
	case string:
		return appendJSONString(b, v)
	case *string:
		if v == nil {
			return append(b, "null"...)
		}
		return appendJSONString(b, *v)
	case []byte:
		if v == nil {
			return append(b, "null"...)
		}
		return appendJSONString(b, base64.StdEncoding.EncodeToString(v))
	case bool:
		return strconv.AppendBool(b, v)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case int32:
		return strconv.AppendInt(b, int64(v), 10)
	case int16:
		return strconv.AppendInt(b, int64(v), 10)
	case int8:
		return strconv.AppendInt(b, int64(v), 10)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10)
	case []int32:
		a := make(arr, len(v))
		for i, x := range v {
			a[i] = x
		}
		return appendJSON(b, a)
	case []string:
		a := make(arr, len(v))
		for i, x := range v {
			a[i] = x
		}
		return appendJSON(b, a)
	}
	panic("offline: no JSON encoding for a value of this type") // a programming error, never input
}

// appendJSONString quotes s as Jackson does: the two-character escapes
// for quote, backslash and \b \t \n \f \r, \u00XX for the other control
// characters, everything else (non-ASCII included) as is; invalid UTF-8
// has already become U+FFFD (javaString).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// javaString is b decoded as Java's new String(b, UTF_8) decodes it (what
// Kafka's StringDecoder prints): each byte of a malformed sequence
// becomes U+FFFD.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
			b = b[1:]
			continue
		}
		out = append(out, b[:n]...)
		b = b[n:]
	}
	return string(out)
}
