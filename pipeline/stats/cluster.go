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
// are as in BootstrapInterval. NaN and NoInterval when there is no sample.
func ClusterMean(sums []float64, counts []int, reps int, seed uint64, level float64) (mean float64, ci Interval) {
	mustSameLen("ClusterMean", len(sums), len(counts))
	total, n := 0.0, 0
	for i := range sums {
		total += sums[i]
		n += counts[i]
	}
	if n == 0 {
		return math.NaN(), NoInterval
	}
	ci = BootstrapInterval(len(sums), func(idx []int) float64 {
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
	return total / float64(n), ci
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

// PairedItems compares system B with system A on the same items when an
// item may have several samples on each side (repeats): item i's score is
// its share of right samples, aRight[i]/aN[i] and bRight[i]/bN[i]. MeanDiff
// is the mean over items of B's score minus A's; Lo, Hi its 95% bootstrap
// interval resampling items (with all their samples); B and C count the
// items whose score fell and rose; McNemarP is the exact sign test on those
// counts (McNemar's exact test when every item has one sample a side, where
// the result equals PairedDiff's). Items with no sample on a side must be
// left out by the caller.
func PairedItems(aRight, aN, bRight, bN []int, reps int, seed uint64) Paired {
	mustSameLen("PairedItems", len(aRight), len(aN), len(bRight), len(bN))
	n := len(aRight)
	p := Paired{N: n, MeanDiff: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), CI: NoInterval}
	d := make([]float64, n)
	sum := 0.0
	for i := range d {
		d[i] = float64(bRight[i])/float64(bN[i]) - float64(aRight[i])/float64(aN[i])
		sum += d[i]
		switch {
		case d[i] < 0:
			p.B++
		case d[i] > 0:
			p.C++
		}
	}
	if n > 0 {
		p.MeanDiff = sum / float64(n)
		p.CI = BootstrapInterval(n, func(idx []int) float64 {
			s := 0.0
			for _, i := range idx {
				s += d[i]
			}
			return s / float64(n)
		}, reps, seed, DefaultLevel)
		p.Lo, p.Hi = p.CI.Lo, p.CI.Hi
	}
	p.McNemarP = McNemarExact(p.B, p.C)
	return p
}

// Clusters groups the samples a kinds bootstrap resamples (see
// BootstrapCountsIntervals) by the item they belong to, so that an interval can
// resample items, each with all its samples, instead of samples as if
// independent. Add each sample's item and kind; Repeated says whether any
// item has more than one sample.
type Clusters struct {
	index map[string]int
	kinds [][]int32 // per item: its samples' kinds
	many  bool
}

// Add records one sample of item, of the kind with index kind.
func (c *Clusters) Add(item string, kind int) {
	if c.index == nil {
		c.index = map[string]int{}
	}
	i, ok := c.index[item]
	if !ok {
		i = len(c.kinds)
		c.index[item] = i
		c.kinds = append(c.kinds, nil)
	}
	c.kinds[i] = append(c.kinds[i], int32(kind))
	if len(c.kinds[i]) > 1 {
		c.many = true
	}
}

// Repeated says whether some item has more than one sample.
func (c *Clusters) Repeated() bool { return c != nil && c.many }

// BootstrapIntervals is BootstrapCountsIntervals over the items: each
// replicate draws as many items as there are, with replacement, and stat
// reads the resulting count of samples per sample kind (nKinds of them),
// as it would in BootstrapCountsIntervals. Items whose samples have the same kinds
// are one item kind, so the draw stays a multinomial over few kinds.
func (c *Clusters) BootstrapIntervals(nKinds, k int, stat func(w []int, out []float64), reps int, seed uint64, level float64) []Interval {
	var itemKinds Kinds[string]
	var members [][]int32 // per item kind: its samples' kinds
	key := make([]byte, 0, 64)
	for _, ks := range c.kinds {
		s := slices.Clone(ks)
		slices.Sort(s)
		key = key[:0]
		for _, x := range s {
			key = append(key, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		}
		if i := itemKinds.Add(string(key)); i == len(members) {
			members = append(members, s)
		}
	}
	w := make([]int, nKinds)
	return BootstrapCountsIntervals(itemKinds.Counts, k, func(wi []int, out []float64) {
		clear(w)
		for i, n := range wi {
			if n == 0 {
				continue
			}
			for _, x := range members[i] {
				w[x] += n
			}
		}
		stat(w, out)
	}, reps, seed, level)
}
