package sharestate

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// b is a state batch: offsets first..last, delivery state, delivery count.
func b(first, last int64, state int8, count int16) StateBatch {
	return StateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
}

// TestCombineStateBatches is the table of PersisterStateBatchCombiner's
// rules: pruning at the start offset, same-state merges of overlapping
// and adjacent batches, and the higher delivery count (then state)
// winning an overlap, in each alignment of the two batches.
func TestCombineStateBatches(t *testing.T) {
	const avail, acked, archived = 0, 2, 4
	for _, tc := range []struct {
		name         string
		soFar, newer []StateBatch
		start        int64
		want         []StateBatch
	}{
		{"both empty", nil, nil, -1, []StateBatch{}},
		{"only new", nil, []StateBatch{b(1, 5, avail, 1)}, -1, []StateBatch{b(1, 5, avail, 1)}},
		{"disjoint kept sorted", []StateBatch{b(10, 12, acked, 1)}, []StateBatch{b(1, 5, avail, 1)}, -1,
			[]StateBatch{b(1, 5, avail, 1), b(10, 12, acked, 1)}},
		{"adjacent same state merges", []StateBatch{b(1, 5, avail, 1)}, []StateBatch{b(6, 9, avail, 1)}, -1,
			[]StateBatch{b(1, 9, avail, 1)}},
		{"adjacent different state stays apart", []StateBatch{b(1, 5, avail, 1)}, []StateBatch{b(6, 9, acked, 1)}, -1,
			[]StateBatch{b(1, 5, avail, 1), b(6, 9, acked, 1)}},
		{"overlap same state merges", []StateBatch{b(1, 5, avail, 1)}, []StateBatch{b(3, 9, avail, 1)}, -1,
			[]StateBatch{b(1, 9, avail, 1)}},
		{"identical counted once", []StateBatch{b(1, 5, avail, 1)}, []StateBatch{b(1, 5, avail, 1)}, -1,
			[]StateBatch{b(1, 5, avail, 1)}},
		{"same range, higher count wins", []StateBatch{b(1, 5, avail, 1)}, []StateBatch{b(1, 5, acked, 2)}, -1,
			[]StateBatch{b(1, 5, acked, 2)}},
		{"same range, same count, higher state wins", []StateBatch{b(1, 5, acked, 1)}, []StateBatch{b(1, 5, avail, 1)}, -1,
			[]StateBatch{b(1, 5, acked, 1)}},
		{"same first, longer lower count keeps its tail", []StateBatch{b(1, 3, acked, 2)}, []StateBatch{b(1, 6, avail, 1)}, -1,
			[]StateBatch{b(1, 3, acked, 2), b(4, 6, avail, 1)}},
		{"same first, longer higher count swallows", []StateBatch{b(1, 3, avail, 1)}, []StateBatch{b(1, 6, acked, 2)}, -1,
			[]StateBatch{b(1, 6, acked, 2)}},
		{"inside, higher count splits", []StateBatch{b(1, 10, avail, 1)}, []StateBatch{b(4, 6, acked, 2)}, -1,
			[]StateBatch{b(1, 3, avail, 1), b(4, 6, acked, 2), b(7, 10, avail, 1)}},
		{"inside, lower count swallowed", []StateBatch{b(1, 10, acked, 3)}, []StateBatch{b(4, 6, avail, 1)}, -1,
			[]StateBatch{b(1, 10, acked, 3)}},
		{"same last, higher count cuts the front", []StateBatch{b(1, 10, avail, 1)}, []StateBatch{b(4, 10, archived, 5)}, -1,
			[]StateBatch{b(1, 3, avail, 1), b(4, 10, archived, 5)}},
		{"same last, lower count swallowed", []StateBatch{b(1, 10, acked, 2)}, []StateBatch{b(4, 10, avail, 1)}, -1,
			[]StateBatch{b(1, 10, acked, 2)}},
		{"overlap past the end, higher count", []StateBatch{b(1, 6, avail, 1)}, []StateBatch{b(4, 10, acked, 2)}, -1,
			[]StateBatch{b(1, 3, avail, 1), b(4, 10, acked, 2)}},
		{"overlap past the end, lower count keeps its tail", []StateBatch{b(1, 6, acked, 2)}, []StateBatch{b(4, 10, avail, 1)}, -1,
			[]StateBatch{b(1, 6, acked, 2), b(7, 10, avail, 1)}},
		{"start offset prunes and trims", []StateBatch{b(1, 3, acked, 1), b(4, 8, avail, 1)}, []StateBatch{b(9, 9, acked, 1)}, 6,
			[]StateBatch{b(6, 8, avail, 1), b(9, 9, acked, 1)}},
		{"start offset past everything", []StateBatch{b(1, 3, acked, 1)}, nil, 10, []StateBatch{}},
		{"a chain of merges", []StateBatch{b(0, 0, acked, 1), b(1, 1, avail, 1), b(2, 2, acked, 1), b(3, 3, avail, 1)},
			[]StateBatch{b(1, 1, acked, 2), b(3, 3, acked, 2)}, -1,
			[]StateBatch{b(0, 0, acked, 1), b(1, 1, acked, 2), b(2, 2, acked, 1), b(3, 3, acked, 2)}},
		{"new batch spanning several", []StateBatch{b(0, 2, avail, 1), b(5, 7, avail, 1)}, []StateBatch{b(0, 9, acked, 2)}, -1,
			[]StateBatch{b(0, 9, acked, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := combineStateBatches(tc.soFar, tc.newer, tc.start)
			if got == nil {
				got = []StateBatch{}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCombineKafkaHistory replays the batches Kafka 4.3.1 wrote for the
// compat run (testdata): the first delivery acknowledged the even offsets
// and released the odd ones, the redelivery acknowledged those, and the
// start offset moved to 1 (everything below 10 then complete).
func TestCombineKafkaHistory(t *testing.T) {
	var first []StateBatch
	for i := int64(0); i < 10; i++ {
		first = append(first, b(i, i, int8(2*(1-i%2)), 1))
	}
	state := combineStateBatches(nil, first, 0)
	if len(state) != 10 {
		t.Fatalf("first write: %v", state)
	}
	state = combineStateBatches(state, []StateBatch{b(1, 1, 2, 2), b(3, 3, 2, 2), b(5, 5, 2, 2), b(7, 7, 2, 2), b(9, 9, 2, 2)}, 1)
	want := []StateBatch{b(1, 1, 2, 2), b(2, 2, 2, 1), b(3, 3, 2, 2), b(4, 4, 2, 1), b(5, 5, 2, 2), b(6, 6, 2, 1), b(7, 7, 2, 2), b(8, 8, 2, 1), b(9, 9, 2, 2)}
	if !slices.Equal(state, want) {
		t.Fatalf("got %v, want %v", state, want)
	}
	if state = combineStateBatches(state, []StateBatch{b(10, 12, 0, 1)}, 10); !slices.Equal(state, []StateBatch{b(10, 12, 0, 1)}) {
		t.Fatalf("after start offset 10: %v", state)
	}
}

// TestCombineMatchesKafka compares combineStateBatches with what Kafka
// 4.3.1's own PersisterStateBatchCombiner returned for 400 random cases
// (testdata/combine-kafka-4.3.1.txt, one per line:
// start|soFar|new|result, each batch first:last:state:count).
func TestCombineMatchesKafka(t *testing.T) {
	data, err := os.ReadFile("testdata/combine-kafka-4.3.1.txt")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(s string) []StateBatch {
		out := []StateBatch{}
		if s == "" {
			return out
		}
		for _, p := range strings.Split(s, ",") {
			var x StateBatch
			if _, err := fmt.Sscanf(p, "%d:%d:%d:%d", &x.FirstOffset, &x.LastOffset, &x.DeliveryState, &x.DeliveryCount); err != nil {
				t.Fatalf("bad batch %q: %v", p, err)
			}
			out = append(out, x)
		}
		return out
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, line := range lines {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			t.Fatalf("line %d: %q", i+1, line)
		}
		start, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got := combineStateBatches(parse(f[1]), parse(f[2]), start)
		if got == nil {
			got = []StateBatch{}
		}
		if want := parse(f[3]); !slices.Equal(got, want) {
			t.Errorf("line %d (%s): got %v, want %v", i+1, line, got, want)
		}
	}
}

// FuzzCombineStateBatches: for any valid batches the merge ends, and its
// result is sorted, without overlaps, and covers exactly the offsets of
// the inputs at or above the start offset.
func FuzzCombineStateBatches(f *testing.F) {
	f.Add([]byte{0, 5, 0, 1, 3, 9, 2, 2}, []byte{2, 4, 4, 3}, int64(-1))
	f.Add([]byte{1, 1, 0, 1}, []byte{1, 1, 2, 2, 2, 2, 0, 1}, int64(2))
	f.Fuzz(func(t *testing.T, so, nw []byte, start int64) {
		if start < -1 || start > 300 {
			return
		}
		batches := func(p []byte) []StateBatch {
			var out []StateBatch
			for ; len(p) >= 4 && len(out) < 16; p = p[4:] {
				first := int64(p[0])
				out = append(out, StateBatch{FirstOffset: first, LastOffset: first + int64(p[1]%16), DeliveryState: int8(p[2] % 5), DeliveryCount: int16(p[3] % 4)})
			}
			return out
		}
		a, bs := batches(so), batches(nw)
		got := combineStateBatches(a, bs, start)
		covered := map[int64]bool{}
		for _, x := range slices.Concat(a, bs) {
			for o := max(x.FirstOffset, start); o <= x.LastOffset; o++ {
				covered[o] = true
			}
		}
		n := 0
		for i, x := range got {
			if x.FirstOffset > x.LastOffset || (i > 0 && got[i-1].LastOffset >= x.FirstOffset) {
				t.Fatalf("result %v not sorted and disjoint", got)
			}
			for o := x.FirstOffset; o <= x.LastOffset; o++ {
				if !covered[o] {
					t.Fatalf("result %v covers %d, not in the inputs", got, o)
				}
				n++
			}
		}
		if n != len(covered) {
			t.Fatalf("result %v covers %d offsets, the inputs %d", got, n, len(covered))
		}
	})
}
