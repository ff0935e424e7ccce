package configdef

import (
	"math"
	"testing"
)

func TestParse(t *testing.T) {
	segment := Def{Name: "segment.bytes", Type: Int, Range: AtLeast(14)}
	ratio := Def{Name: "min.cleanable.dirty.ratio", Type: Double, Range: Between(0, 1)}
	policy := Def{Name: "cleanup.policy", Type: List, OneOf: []string{"compact", "delete"}}
	codec := Def{Name: "compression.type", Type: String, OneOf: []string{"gzip", "producer"}, FoldCase: true}
	flag := Def{Name: "preallocate", Type: Boolean}
	long := Def{Name: "retention.ms", Type: Long}
	odd := Def{Name: "level", Type: Int, Check: func(_ string, v Value) string {
		if v.Int%2 == 0 {
			return "Value must be odd"
		}
		return ""
	}}
	for _, tc := range []struct {
		def     Def
		in      string
		printed string // "" with err
		err     string
	}{
		{segment, " 1000 ", "1000", ""},
		{segment, "+14", "14", ""},
		{segment, "13", "", "Invalid value 13 for configuration segment.bytes: Value must be at least 14"},
		{segment, "2147483648", "", "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"},
		{segment, "1_000", "", "Invalid value 1_000 for configuration segment.bytes: Not a number of type INT"},
		{long, "9223372036854775807", "9223372036854775807", ""},
		{long, "9223372036854775808", "", "Invalid value 9223372036854775808 for configuration retention.ms: Not a number of type LONG"},
		{ratio, "1", "1.0", ""},
		{ratio, "0.25", "0.25", ""},
		{ratio, "1.5", "", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{ratio, "NaN", "", "Invalid value NaN for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"},
		{policy, "compact, delete", "compact,delete", ""},
		{policy, " , compact,", "compact", ""},
		{policy, "", "", ""},
		{policy, "compact,remove", "", "Invalid value compact,remove for configuration cleanup.policy: String must be one of: compact, delete"},
		{codec, "GZIP", "GZIP", ""},
		{codec, "brotli", "", "Invalid value brotli for configuration compression.type: String must be one of: gzip, producer"},
		{flag, " TRUE ", "true", ""},
		{flag, "1", "", "Invalid value 1 for configuration preallocate: Expected value to be either true or false"},
		{odd, "3", "3", ""},
		{odd, "4", "", "Invalid value 4 for configuration level: Value must be odd"},
	} {
		v, err := tc.def.Parse(tc.in)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s=%q: error %v, want %q", tc.def.Name, tc.in, err, tc.err)
			}
			if _, ok := AsError(err); err != nil && !ok {
				t.Errorf("%s=%q: error %T is not an *Error", tc.def.Name, tc.in, err)
			}
		case err != nil:
			t.Errorf("%s=%q: %v", tc.def.Name, tc.in, err)
		case tc.def.Print(v) != tc.printed:
			t.Errorf("%s=%q printed %q, want %q", tc.def.Name, tc.in, tc.def.Print(v), tc.printed)
		}
	}
}

func TestRangeString(t *testing.T) {
	for r, want := range map[Range]string{{}: "", AtLeast(14): "at least 14", Between(-1, 0.5): "-1 to 0.5"} {
		if got := r.String(); got != want {
			t.Errorf("%+v: %q, want %q", r, got, want)
		}
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{1: "1.0", 0.5: "0.5", math.MaxFloat64: "1.7976931348623157E308"} {
		if got := JavaDouble(f); got != want {
			t.Errorf("%v: %q, want %q", f, got, want)
		}
	}
}

// FuzzParse: Parse never panics, and a value it accepts prints to text
// that parses to the same print (Canonical is idempotent).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"1", " -2 ", "0.5", "true", "compact, delete", "", "NaN", "1e309", "9223372036854775807"} {
		f.Add(s)
	}
	defs := []Def{
		{Name: "i", Type: Int, Range: AtLeast(0)},
		{Name: "l", Type: Long},
		{Name: "d", Type: Double, Range: Between(0, 1)},
		{Name: "b", Type: Boolean},
		{Name: "s", Type: String, OneOf: []string{"a", "B"}, FoldCase: true},
		{Name: "list", Type: List, OneOf: []string{"compact", "delete"}},
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range defs {
			v, err := d.Parse(s)
			if err != nil {
				continue
			}
			p := d.Print(v)
			if d.Canonical(p) != p {
				t.Fatalf("%s: %q printed %q, which prints %q", d.Name, s, p, d.Canonical(p))
			}
		}
	})
}
