// Package configdef describes configuration properties the way Kafka's
// ConfigDef does: a name, a type, a default, a validator and the
// documentation, with Kafka's parsing rules and Kafka's wording for a bad
// value. It holds no property of its own: the packages that own a
// property's meaning (partition for topic configs, the root package for
// broker properties) declare their catalogs with it, and parsing,
// validation, DescribeConfigs and the README tables are derived from those
// catalogs.
package configdef

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is a ConfigDef type. The numbers are DescribeConfigs' ConfigType
// ids (KIP-569), so a Type converts to kmsg.ConfigType as it is.
type Type int8

// The ConfigDef types kcompatd's properties use.
const (
	Boolean Type = 1
	String  Type = 2
	Int     Type = 3
	Long    Type = 5
	Double  Type = 6
	List    Type = 7
	// Password is a STRING whose value is secret: DescribeConfigs answers
	// it as sensitive with no value, and printouts hide it.
	Password Type = 9
)

// String is the type's name as Kafka's error messages spell it.
func (t Type) String() string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case String:
		return "STRING"
	case Int:
		return "INT"
	case Long:
		return "LONG"
	case Double:
		return "DOUBLE"
	case List:
		return "LIST"
	case Password:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Range bounds a number, inclusive (Kafka's ConfigDef.Range). The zero
// Range is unbounded.
type Range struct {
	min, max float64 // NaN: that end is open
	bounded  bool
}

// AtLeast bounds a number from below.
func AtLeast(min float64) Range { return Range{min: min, max: math.NaN(), bounded: true} }

// Between bounds a number from both ends.
func Between(min, max float64) Range { return Range{min: min, max: max, bounded: true} }

// String words the range for documentation: "at least 14", "0 to 1".
func (r Range) String() string {
	switch {
	case !r.bounded:
		return ""
	case math.IsNaN(r.max):
		return "at least " + formatBound(r.min)
	}
	return formatBound(r.min) + " to " + formatBound(r.max)
}

// Check returns Kafka's reason for v out of range, or "".
func (r Range) Check(v float64) string {
	switch {
	case !r.bounded:
	case v < r.min:
		return "Value must be at least " + formatBound(r.min)
	case !math.IsNaN(r.max) && v > r.max:
		return "Value must be no more than " + formatBound(r.max)
	}
	return ""
}

// Def is one property.
type Def struct {
	Name string
	Type Type
	// Default is the default as Kafka prints it; NullDefault: there is
	// none (Kafka's null, as for log.retention.ms, whose default comes
	// from log.retention.hours).
	Default     string
	NullDefault bool
	// Range bounds a number (the zero Range: unbounded).
	Range Range
	// OneOf lists the valid values of a STRING, or of each item of a
	// LIST (Kafka's ValidString and ValidList); FoldCase compares them
	// ignoring case (CaseInsensitiveValidString).
	OneOf    []string
	FoldCase bool
	// Check is a further rule, run after the type, range and choices; it
	// gets the property's name and returns the reason a value is invalid,
	// or "".
	Check func(name string, v Value) string
	// Doc is Kafka's documentation of the property, which DescribeConfigs
	// returns (v3+ with IncludeDocumentation).
	Doc string
}

// Value is a parsed property value. Text is the value trimmed; the other
// fields hold it by its Type.
type Value struct {
	Text  string
	Int   int64   // INT, LONG
	Float float64 // DOUBLE (and INT, LONG as floats, for ranges)
	Bool  bool    // BOOLEAN
	List  []string
}

// Error is a value Kafka's ConfigException would refuse.
type Error struct {
	Name, Value, Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("Invalid value %s for configuration %s: %s", e.Value, e.Name, e.Reason)
}

// AsError returns err as an *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Parse parses and validates a value as Kafka's ConfigDef.parseType and the
// property's validator do: trimmed, booleans in any case, numbers in
// range, choices among OneOf. The error is an *Error worded as Kafka's.
func (d *Def) Parse(raw string) (Value, error) {
	v := Value{Text: strings.TrimSpace(raw)}
	fail := func(reason string) (Value, error) {
		return Value{}, &Error{Name: d.Name, Value: raw, Reason: reason}
	}
	switch d.Type {
	case Int, Long:
		bits := 64
		if d.Type == Int {
			bits = 32
		}
		n, err := strconv.ParseInt(v.Text, 10, bits)
		if err != nil {
			return fail("Not a number of type " + d.Type.String())
		}
		v.Int, v.Float = n, float64(n)
	case Double:
		f, err := strconv.ParseFloat(v.Text, 64)
		if err != nil || math.IsNaN(f) {
			return fail("Not a number of type DOUBLE")
		}
		v.Float = f
	case Boolean:
		switch {
		case strings.EqualFold(v.Text, "true"):
			v.Bool = true
		case strings.EqualFold(v.Text, "false"):
		default:
			return fail("Expected value to be either true or false")
		}
	case List:
		v.List = SplitList(v.Text)
	}
	if d.Type == Int || d.Type == Long || d.Type == Double {
		if reason := d.Range.Check(v.Float); reason != "" {
			return fail(reason)
		}
	}
	if d.OneOf != nil {
		items := []string{v.Text}
		if d.Type == List {
			items = v.List
		}
		for _, it := range items {
			if !d.oneOf(it) {
				return fail("String must be one of: " + strings.Join(d.OneOf, ", "))
			}
		}
	}
	if d.Check != nil {
		if reason := d.Check(d.Name, v); reason != "" {
			return fail(reason)
		}
	}
	return v, nil
}

func (d *Def) oneOf(s string) bool {
	for _, x := range d.OneOf {
		if x == s || (d.FoldCase && strings.EqualFold(x, s)) {
			return true
		}
	}
	return false
}

// Print prints a parsed value as Kafka's ConfigDef.convertToString does:
// trimmed, booleans in lower case, lists without blanks, doubles as Java
// prints them (1 -> "1.0").
func (d *Def) Print(v Value) string {
	switch d.Type {
	case Boolean:
		return strconv.FormatBool(v.Bool)
	case Int, Long:
		return strconv.FormatInt(v.Int, 10)
	case Double:
		return JavaDouble(v.Float)
	case List:
		return strings.Join(v.List, ",")
	}
	return v.Text
}

// Canonical parses raw and prints it as Kafka would; a value that does not
// parse is returned trimmed.
func (d *Def) Canonical(raw string) string {
	v, err := d.Parse(raw)
	if err != nil {
		return strings.TrimSpace(raw)
	}
	return d.Print(v)
}

// SplitList splits a LIST value as Kafka does: comma-separated, blanks
// trimmed, empty items dropped.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// JavaDouble formats f as Java's Double.toString does for ordinary values
// (1 -> "1.0").
func JavaDouble(f float64) string {
	if f == math.MaxFloat64 {
		return "1.7976931348623157E308"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func formatBound(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
