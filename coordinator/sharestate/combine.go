package sharestate

import (
	"cmp"
	"slices"
)

// combineStateBatches merges the batches of a write into those so far,
// with the rules of Kafka's PersisterStateBatchCombiner:
//
//   - with startOffset not -1, batches ending below it are dropped and
//     one straddling it starts at it;
//   - overlapping batches, or adjacent ones with the same delivery count
//     and state, are merged pairwise in offset order until none are left:
//     where two overlap, the one with the higher delivery count (then the
//     higher state) wins the overlap and the other keeps what is outside
//     it; same count and state merge into one batch;
//   - identical batches count once.
//
// The result is sorted by first offset and has no overlaps.
func combineStateBatches(soFar, newer []StateBatch, startOffset int64) []StateBatch {
	all := make([]StateBatch, 0, len(soFar)+len(newer))
	for _, b := range slices.Concat(soFar, newer) {
		if startOffset != -1 {
			if b.LastOffset < startOffset {
				continue
			}
			b.FirstOffset = max(b.FirstOffset, startOffset)
		}
		all = append(all, b)
	}
	if len(all) < 2 {
		return all
	}
	slices.SortFunc(all, compareBatch)
	all = slices.Compact(all)

	out := make([]StateBatch, 0, len(all))
	for {
		i := mergeCandidate(all)
		if i < 0 {
			return append(out, all...)
		}
		// Everything before i overlaps nothing after it: done.
		out = append(out, all[:i]...)
		prev, cand := all[i], all[i+1]
		all = all[i+2:]
		for _, b := range mergePair(prev, cand) {
			all = insertBatch(all, b)
		}
	}
}

// mergeCandidate is the index of the first batch that overlaps its
// successor, or is adjacent to it with the same delivery info; -1 if none.
func mergeCandidate(s []StateBatch) int {
	for i := 0; i+1 < len(s); i++ {
		p, c := s[i], s[i+1]
		if c.FirstOffset <= p.LastOffset || (p.LastOffset+1 == c.FirstOffset && compareDelivery(p, c) == 0) {
			return i
		}
	}
	return -1
}

// mergePair resolves prev and cand, cand not before prev in batch order.
func mergePair(prev, cand StateBatch) []StateBatch {
	span := func(first, last int64, like StateBatch) StateBatch {
		like.FirstOffset, like.LastOffset = first, last
		return like
	}
	lower := compareDelivery(cand, prev) < 0 // prev wins the overlap
	switch {
	case compareDelivery(cand, prev) == 0:
		return []StateBatch{span(prev.FirstOffset, max(prev.LastOffset, cand.LastOffset), prev)}
	case cand.FirstOffset == prev.FirstOffset:
		switch {
		case cand.LastOffset == prev.LastOffset:
			return []StateBatch{cand}
		case lower:
			return []StateBatch{prev, span(prev.LastOffset+1, cand.LastOffset, cand)}
		default:
			return []StateBatch{cand}
		}
	case cand.LastOffset < prev.LastOffset:
		if lower {
			return []StateBatch{prev}
		}
		return []StateBatch{span(prev.FirstOffset, cand.FirstOffset-1, prev), cand, span(cand.LastOffset+1, prev.LastOffset, prev)}
	case cand.LastOffset == prev.LastOffset:
		if lower {
			return []StateBatch{prev}
		}
		return []StateBatch{span(prev.FirstOffset, cand.FirstOffset-1, prev), cand}
	default:
		if lower {
			return []StateBatch{prev, span(prev.LastOffset+1, cand.LastOffset, cand)}
		}
		return []StateBatch{span(prev.FirstOffset, cand.FirstOffset-1, prev), cand}
	}
}

// insertBatch adds b to the sorted s unless an equal batch is there.
func insertBatch(s []StateBatch, b StateBatch) []StateBatch {
	i, found := slices.BinarySearchFunc(s, b, compareBatch)
	if found {
		return s
	}
	return slices.Insert(s, i, b)
}

// compareBatch orders batches by first offset, last offset, delivery
// count, delivery state (PersisterStateBatch.compareTo).
func compareBatch(a, b StateBatch) int {
	if c := cmp.Compare(a.FirstOffset, b.FirstOffset); c != 0 {
		return c
	}
	if c := cmp.Compare(a.LastOffset, b.LastOffset); c != 0 {
		return c
	}
	return compareDelivery(a, b)
}

// compareDelivery orders by delivery count, then delivery state.
func compareDelivery(a, b StateBatch) int {
	if c := cmp.Compare(a.DeliveryCount, b.DeliveryCount); c != 0 {
		return c
	}
	return cmp.Compare(a.DeliveryState, b.DeliveryState)
}
