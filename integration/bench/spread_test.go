package main

import (
	"slices"
	"testing"
)

// TestSpread checks how the table prints a figure of several rounds: the
// median in the verb and unit, then the lowest and highest.
func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		name, verb, unit string
		vs               []float64
		want             string
	}{
		{"one round", "%.1f", " MB", []float64{91}, "91.0 MB (91.0-91.0)"},
		{"odd rounds, unsorted", "%.2f", " CPU-s/GB", []float64{2.31, 2.19, 2.25}, "2.25 CPU-s/GB (2.19-2.31)"},
		{"even rounds take the upper median", "%.0f", " ms", []float64{900, 700, 1100, 800}, "900 ms (700-1100)"},
		{"no unit", "%.0f", "", []float64{3, 1, 2}, "2 (1-3)"},
		{"below zero", "%.1f", " MB", []float64{-8.9, -1.5, 0.5}, "-1.5 MB (-8.9 to 0.5)"},
		{"zero is not below zero", "%.1f", " MB", []float64{0, 1, 2}, "1.0 MB (0.0-2.0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.vs)
			if got := spread(tc.verb, tc.unit, in); got != tc.want {
				t.Errorf("spread(%q, %q, %v) = %q, want %q", tc.verb, tc.unit, tc.vs, got, tc.want)
			}
			if !slices.Equal(in, tc.vs) {
				t.Errorf("spread reordered its input: %v, was %v", in, tc.vs)
			}
		})
	}
}

// TestMBSpread checks that byte counts are printed in MB (10^6 bytes)
// after the prefix.
func TestMBSpread(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		vs     []float64
		want   string
	}{
		{"", []float64{91.04e6, 89.96e6, 93e6}, "91.0 MB (90.0-93.0)"},
		{"live heap ", []float64{35.8e6}, "live heap 35.8 MB (35.8-35.8)"},
		{"", []float64{-2e6, 26.2e6, 30e6}, "26.2 MB (-2.0 to 30.0)"},
	} {
		if got := mbSpread(tc.prefix, tc.vs); got != tc.want {
			t.Errorf("mbSpread(%q, %v) = %q, want %q", tc.prefix, tc.vs, got, tc.want)
		}
	}
}

// TestMapVals checks that mapVals keeps the rounds' order.
func TestMapVals(t *testing.T) {
	type round struct{ a, b float64 }
	for _, tc := range []struct {
		name string
		in   []round
		want []float64
	}{
		{"none", nil, []float64{}},
		{"in order", []round{{1, 10}, {3, 30}, {2, 20}}, []float64{10, 30, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mapVals(tc.in, func(r round) float64 { return r.b }); !slices.Equal(got, tc.want) {
				t.Errorf("mapVals = %v, want %v", got, tc.want)
			}
		})
	}
}
