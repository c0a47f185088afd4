package stats

// percentileInterval sorts vals in place, drops NaN and returns the central
// level interval; NaN, NaN when nothing remains.
func percentileInterval(vals []float64, level float64) (lo, hi float64) {
	iv := intervalOf(vals, level)
	return iv.Lo, iv.Hi
}

// Bootstrap is a percentile bootstrap interval for a statistic of n items.
// Each of reps replicates draws n item indices with replacement from a PCG
// generator seeded by seed (math/rand/v2), calls stat on them and keeps the
// result; the interval is the central level quantile range of those results
// (numpy-style linear interpolation). reps <= 0 means DefaultReps and a level
// outside (0,1) means DefaultLevel. The same seed gives the same interval.
//
// The idx slice passed to stat is reused across replicates: read it, do not
// keep it. Replicates where stat returns NaN (e.g. precision of a resample
// with no predicted positives) are dropped before taking quantiles. Returns
// NaN, NaN when n <= 0 or every replicate was NaN.
func Bootstrap(n int, stat func(idx []int) float64, reps int, seed uint64, level float64) (lo, hi float64) {
	iv := BootstrapInterval(n, stat, reps, seed, level)
	return iv.Lo, iv.Hi
}

// BootstrapMany is Bootstrap for k statistics of the same items at once:
// every replicate draws one set of indices (the same draws Bootstrap makes
// with this seed) and stat writes the k values into out. It returns the k
// intervals; NaN where n <= 0 or every replicate of that statistic was NaN.
func BootstrapMany(n, k int, stat func(idx []int, out []float64), reps int, seed uint64, level float64) (lo, hi []float64) {
	return bounds(BootstrapManyIntervals(n, k, stat, reps, seed, level))
}

// bounds are the intervals' ends.
func bounds(ivs []Interval) (lo, hi []float64) {
	lo, hi = make([]float64, len(ivs)), make([]float64, len(ivs))
	for j, iv := range ivs {
		lo[j], hi[j] = iv.Lo, iv.Hi
	}
	return lo, hi
}

// Bootstrap2 is a percentile bootstrap interval for a statistic of two
// independent samples, of n1 and n2 items: each replicate draws n1 indices
// into the first and n2 into the second (with replacement, from one PCG
// generator seeded by seed) and calls stat on both. The interval so carries
// the uncertainty of both samples, e.g. a judge's error rates measured on
// labelled items and the rate it gives on the items it judged. A sample
// may be empty (its index slice then is). Replicates where stat is NaN are
// dropped and counted in dropped. Returns NaN, NaN when both samples are
// empty or every replicate was NaN.
func Bootstrap2(n1, n2 int, stat func(idx1, idx2 []int) float64, reps int, seed uint64, level float64) (lo, hi float64, dropped int) {
	los, his, ds := Bootstrap2Many(n1, n2, 1, func(idx1, idx2 []int, out []float64) { out[0] = stat(idx1, idx2) }, reps, seed, level)
	return los[0], his[0], ds[0]
}

// Bootstrap2Many is Bootstrap2 for k statistics of the same two samples:
// every replicate draws once (the draws Bootstrap2 makes with this seed)
// and stat writes the k values into out. dropped counts each statistic's
// NaN replicates.
func Bootstrap2Many(n1, n2, k int, stat func(idx1, idx2 []int, out []float64), reps int, seed uint64, level float64) (lo, hi []float64, dropped []int) {
	ivs := Bootstrap2ManyIntervals(n1, n2, k, stat, reps, seed, level)
	lo, hi = bounds(ivs)
	dropped = make([]int, k)
	for j, iv := range ivs {
		dropped[j] = iv.Undefined
	}
	return lo, hi, dropped
}

// BootstrapCount is BootstrapCountInterval's bounds.
func BootstrapCount(counts []int, stat func(w []int) float64, reps int, seed uint64, level float64) (lo, hi float64) {
	iv := BootstrapCountInterval(counts, stat, reps, seed, level)
	return iv.Lo, iv.Hi
}

// Resample fills into with the counts of the items idx picks (indices into
// cells), reusing its slices.
func (t *ConfTable) Resample(cells, idx []int, into *ConfTable) {
	into.Values, into.Graded = t.Values, t.Graded
	if len(into.Right) != len(t.Values) {
		into.Right, into.Wrong = make([]int, len(t.Values)), make([]int, len(t.Values))
	}
	clear(into.Right)
	clear(into.Wrong)
	for _, i := range idx {
		c := cells[i]
		switch {
		case c < 0:
		case c%2 == 1:
			into.Wrong[c/2]++
		default:
			into.Right[c/2]++
		}
	}
}

// Items is the number of items added.
func (c *Clusters) Items() int {
	if c == nil {
		return 0
	}
	return len(c.kinds)
}
