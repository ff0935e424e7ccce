package recordbatch

import (
	"math"
	"testing"
)

func TestVarint(t *testing.T) {
	cases := []struct {
		v    int32
		wire []byte
	}{
		{0, []byte{0x00}},
		{-1, []byte{0x01}},
		{1, []byte{0x02}},
		{-64, []byte{0x7f}},
		{63, []byte{0x7e}},
		{64, []byte{0x80, 0x01}},
		{-65, []byte{0x81, 0x01}},
		{300, []byte{0xd8, 0x04}},
		{math.MaxInt32, []byte{0xfe, 0xff, 0xff, 0xff, 0x0f}},
		{math.MinInt32, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, c := range cases {
		got := appendVarint(nil, c.v)
		if string(got) != string(c.wire) || sizeVarint(c.v) != len(c.wire) {
			t.Errorf("appendVarint(%d) = %x (size %d), want %x", c.v, got, sizeVarint(c.v), c.wire)
		}
		v, n := readVarint(append(c.wire, 0xaa))
		if v != c.v || n != len(c.wire) {
			t.Errorf("readVarint(%x) = %d, %d", c.wire, v, n)
		}
	}
	bad := []struct {
		name string
		b    []byte
		n    int
	}{
		{"empty", nil, 0},
		{"unterminated 1", []byte{0x80}, 0},
		{"unterminated 4", []byte{0x80, 0x80, 0x80, 0x80}, 0},
		{"six bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, -1},
	}
	for _, c := range bad {
		if _, n := readVarint(c.b); n != c.n {
			t.Errorf("%s: n = %d, want %d", c.name, n, c.n)
		}
	}
	// Java's ByteUtils.readVarint drops overflowing bits of the fifth byte.
	if v, n := readVarint([]byte{0xfe, 0xff, 0xff, 0xff, 0x7f}); n != 5 || v != math.MaxInt32 {
		t.Errorf("overflowing fifth byte: %d, %d", v, n)
	}
}

func TestVarlong(t *testing.T) {
	cases := []struct {
		v    int64
		wire []byte
	}{
		{0, []byte{0x00}},
		{-1, []byte{0x01}},
		{-5, []byte{0x09}},
		{1700000000000, nil},
		{math.MaxInt64, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{math.MinInt64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	}
	for _, c := range cases {
		got := appendVarlong(nil, c.v)
		if c.wire != nil && string(got) != string(c.wire) {
			t.Errorf("appendVarlong(%d) = %x, want %x", c.v, got, c.wire)
		}
		if sizeVarlong(c.v) != len(got) {
			t.Errorf("sizeVarlong(%d) = %d, len %d", c.v, sizeVarlong(c.v), len(got))
		}
		v, n := readVarlong(got)
		if v != c.v || n != len(got) {
			t.Errorf("readVarlong(%x) = %d, %d", got, v, n)
		}
	}
	if _, n := readVarlong([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}); n != -1 {
		t.Errorf("eleven bytes: n = %d", n)
	}
	if _, n := readVarlong([]byte{0x80, 0x80}); n != 0 {
		t.Errorf("unterminated: n = %d", n)
	}
}
