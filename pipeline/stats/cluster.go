package stats

import (
	"math"
	"slices"
)

// ClusterMean is the mean of per-sample scores that come in clusters (the
// k repeats of one item), with a percentile bootstrap interval that
// resamples whole clusters: the samples of one item are not independent,
// so resampling them one by one would make the interval too narrow. sums
// holds each cluster's summed score and counts its number of samples; the
// mean is Σ sums / Σ counts over the clusters drawn (a ratio estimator, so
// clusters of unequal size weigh by their samples). reps, seed and level
// are as in Bootstrap. NaN, NaN, NaN when there is no sample.
func ClusterMean(sums []float64, counts []int, reps int, seed uint64, level float64) (mean, lo, hi float64) {
	mustSameLen("ClusterMean", len(sums), len(counts))
	total, n := 0.0, 0
	for i := range sums {
		total += sums[i]
		n += counts[i]
	}
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	lo, hi = Bootstrap(len(sums), func(idx []int) float64 {
		s, c := 0.0, 0
		for _, i := range idx {
			s += sums[i]
			c += counts[i]
		}
		if c == 0 {
			return math.NaN()
		}
		return s / float64(c)
	}, reps, seed, level)
	return total / float64(n), lo, hi
}

// Spread is the spread of one statistic measured once per repeat: its
// mean, its sample standard deviation (n−1; NaN for fewer than two values)
// and its range.
type Spread struct {
	N        int
	Mean, SD float64
	Min, Max float64
}

// SpreadOf summarises per-repeat values; NaN values are left out.
func SpreadOf(vals []float64) Spread {
	v := slices.DeleteFunc(slices.Clone(vals), math.IsNaN)
	s := Spread{N: len(v), Mean: math.NaN(), SD: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	if len(v) == 0 {
		return s
	}
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	s.Mean = sum / float64(len(v))
	s.Min, s.Max = slices.Min(v), slices.Max(v)
	if len(v) > 1 {
		ss := 0.0
		for _, x := range v {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(v)-1))
	}
	return s
}
