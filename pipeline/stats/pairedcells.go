package stats

import "math"

// PairedCounts is one cell of a paired comparison of two sides, A and B,
// on the same items: item i has AR[i] right answers of AN[i] scored on
// side A, and BR[i] of BN[i] on side B.
type PairedCounts struct {
	AR, AN, BR, BN []int
	// Void: the cell gets no paired figure (a side counts errored answers
	// as incomplete and has some here); its p enters the Holm adjustment
	// as NaN.
	Void bool
}

// PairedCells compares each cell's two sides and adjusts their p-values
// over the cells (Holm). A cell whose every item has one answer a side is
// compared answer by answer (PairedDiff: paired bootstrap interval and
// McNemar's exact p); otherwise each item is scored by its share of right
// answers (PairedItems: the interval resamples items, the test is a sign
// test), and repeats says so. A void or empty cell's Holm p is NaN.
// `promoral diff` and `promoral view` both compare runs with it.
func PairedCells(cells []PairedCounts, reps int, seed uint64) (diffs []Paired, repeats []bool, holm []float64) {
	ps := make([]float64, len(cells))
	diffs, repeats = make([]Paired, len(cells)), make([]bool, len(cells))
	for k, c := range cells {
		mustSameLen("PairedCells", len(c.AR), len(c.AN), len(c.BR), len(c.BN))
		one := true
		for i := range c.AN {
			one = one && c.AN[i] == 1 && c.BN[i] == 1
		}
		if one {
			a, b := make([]bool, len(c.AR)), make([]bool, len(c.BR))
			for i := range c.AR {
				a[i], b[i] = c.AR[i] == 1, c.BR[i] == 1
			}
			diffs[k] = PairedDiff(a, b, reps, seed)
		} else {
			diffs[k], repeats[k] = PairedItems(c.AR, c.AN, c.BR, c.BN, reps, seed), true
		}
		ps[k] = diffs[k].McNemarP
		if c.Void || diffs[k].N == 0 {
			ps[k] = math.NaN()
		}
	}
	return diffs, repeats, Holm(ps)
}
