package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Bootstrap defaults.
const (
	DefaultReps  = 1000
	DefaultLevel = 0.95
)

// pcgStream is the fixed second word of the PCG state. Only the caller's
// seed varies, so one uint64 in a config reproduces a run.
const pcgStream = 0x9e3779b97f4a7c15

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, pcgStream)) }

func defaults(reps int, level float64) (int, float64) {
	if reps <= 0 {
		reps = DefaultReps
	}
	if !(level > 0 && level < 1) {
		level = DefaultLevel
	}
	return reps, level
}

// quantileSorted is the q-quantile of ascending v by linear interpolation
// between order statistics, numpy.percentile's default ("linear", Hyndman
// and Fan type 7), so intervals match the usual Python bootstrap code.
func quantileSorted(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	h := q * float64(len(v)-1)
	lo := int(math.Floor(h))
	if lo >= len(v)-1 {
		return v[len(v)-1]
	}
	return v[lo] + (h-float64(lo))*(v[lo+1]-v[lo])
}

// intervalOf sorts vals in place, drops NaN and returns the central level
// interval, with the count of the NaN replicates it dropped; NaN bounds when
// nothing remains.
func intervalOf(vals []float64, level float64) Interval {
	k := 0
	for _, v := range vals {
		if !math.IsNaN(v) {
			vals[k] = v
			k++
		}
	}
	iv := Interval{Reps: len(vals), Undefined: len(vals) - k, Level: level}
	vals = vals[:k]
	slices.Sort(vals)
	a := (1 - level) / 2
	iv.Lo, iv.Hi = quantileSorted(vals, a), quantileSorted(vals, 1-a)
	return iv
}

// Interval is a percentile bootstrap interval with the replicates it rests
// on. A replicate whose statistic is undefined (NaN: a kappa of a resample
// where everyone said one class, Spearman's ρ of a resample with no wrong
// answer) has no place among the quantiles and is left out; Undefined
// counts those, so a row can say how many, or withhold an interval that
// rests on too few (TooManyUndefined).
type Interval struct {
	Lo, Hi float64
	// Reps is the number of replicates drawn, 0 when no interval was
	// computed (no items, or intervals turned off).
	Reps int
	// Undefined is the number of replicates with no defined statistic.
	Undefined int
	// Level is the interval's coverage, e.g. 0.95.
	Level float64
}

// NoInterval is the Interval of a figure that has none.
var NoInterval = Interval{Lo: math.NaN(), Hi: math.NaN()}

// TooManyUndefined says that more replicates are undefined than the share
// 1 − Level (5% for a 95% interval) that the interval leaves out of its two
// tails: those replicates could then hold more than both tails, and the
// interval of the rest does not have the coverage it claims. The row's
// figure is withheld (status too_few) rather than shown with it.
func (iv Interval) TooManyUndefined() bool {
	return iv.Reps > 0 && float64(iv.Undefined) > (1-iv.Level)*float64(iv.Reps)+1e-9
}

// BootstrapInterval is a percentile bootstrap interval for a statistic of n
// items, with the replicates behind it (Interval.Reps, Interval.Undefined).
// Each of reps replicates draws n item indices with replacement from a PCG
// generator seeded by seed (math/rand/v2), calls stat on them and keeps the
// result; the interval is the central level quantile range of those results
// (numpy-style linear interpolation). reps <= 0 means DefaultReps and a level
// outside (0,1) means DefaultLevel. The same seed gives the same interval.
//
// The idx slice passed to stat is reused across replicates: read it, do not
// keep it. Replicates where stat returns NaN (e.g. precision of a resample
// with no predicted positives) are dropped before taking quantiles and
// counted as undefined. NoInterval when n <= 0; NaN bounds when every
// replicate was NaN.
func BootstrapInterval(n int, stat func(idx []int) float64, reps int, seed uint64, level float64) Interval {
	if n <= 0 {
		return NoInterval
	}
	reps, level = defaults(reps, level)
	r := newRand(seed)
	idx := make([]int, n)
	vals := make([]float64, reps)
	for b := range vals {
		for i := range idx {
			idx[i] = r.IntN(n)
		}
		vals[b] = stat(idx)
	}
	return intervalOf(vals, level)
}

// Paired compares system B with system A on the same items.
type Paired struct {
	N int
	// MeanDiff = accuracy(B) − accuracy(A); positive when B is better.
	MeanDiff float64
	// Lo, Hi is the 95% paired-bootstrap interval of MeanDiff: items are
	// resampled once per replicate and both systems scored on them, so the
	// interval reflects the per-item correlation of the two systems.
	Lo, Hi float64
	// B counts items A got right and B wrong; C items A got wrong and B
	// right (the usual McNemar b and c).
	B, C int
	// McNemarP is McNemar's exact two-sided p on b and c; see McNemarExact.
	McNemarP float64
	// CI is Lo, Hi with the replicates behind them.
	CI Interval
}

// PairedDiff compares per-item correctness of system A and system B. reps
// and seed are as in BootstrapInterval; the level is 95%. For n == 0, MeanDiff and
// the interval are NaN and McNemarP is 1.
func PairedDiff(correctA, correctB []bool, reps int, seed uint64) Paired {
	mustSameLen("PairedDiff", len(correctA), len(correctB))
	p := Paired{N: len(correctA)}
	for i := range correctA {
		switch {
		case correctA[i] && !correctB[i]:
			p.B++
		case !correctA[i] && correctB[i]:
			p.C++
		}
	}
	p.MeanDiff = math.NaN()
	if p.N > 0 {
		p.MeanDiff = float64(p.C-p.B) / float64(p.N)
	}
	// An item adds −1, 0 or +1 to B − A: three kinds, resampled as counts.
	p.CI = BootstrapCountInterval([]int{p.B, p.N - p.B - p.C, p.C}, func(w []int) float64 {
		return float64(w[2]-w[0]) / float64(p.N)
	}, reps, seed, DefaultLevel)
	p.Lo, p.Hi = p.CI.Lo, p.CI.Hi
	p.McNemarP = McNemarExact(p.B, p.C)
	return p
}

// McNemarExact is McNemar's exact test on discordant counts b and c: under
// H0 each discordant pair is a fair coin, so p = min(1, 2·P(X ≤ min(b,c)))
// with X ~ Binomial(b+c, 1/2). p = 1 when b + c = 0 (no evidence either way).
// Negative counts are treated as 0.
func McNemarExact(b, c int) float64 {
	b, c = max(b, 0), max(c, 0)
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	return math.Min(1, 2*distuv.Binomial{N: float64(n), P: 0.5}.CDF(float64(k)))
}

// Holm returns Holm's step-down adjusted p-values in the order given: sort
// ascending, multiply the j-th smallest (j from 0) by m − j, carry the running
// maximum so adjusted values never decrease with the raw ones, cap at 1.
// NaN entries stay NaN and do not count towards m (a comparison that could
// not be made is not a test). Empty in, empty out.
func Holm(p []float64) []float64 {
	out := make([]float64, len(p))
	order := make([]int, 0, len(p))
	for i, v := range p {
		out[i] = math.NaN()
		if !math.IsNaN(v) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	m := len(order)
	running := 0.0
	for j, i := range order {
		adj := math.Min(1, float64(m-j)*p[i])
		running = math.Max(running, adj)
		out[i] = running
	}
	return out
}

// BootstrapManyIntervals is BootstrapInterval for k statistics of the same
// items at once: every replicate draws one set of indices (the same draws
// BootstrapInterval makes with this seed) and stat writes the k values into
// out. It returns each statistic's Interval, with the replicates where it
// was undefined counted.
func BootstrapManyIntervals(n, k int, stat func(idx []int, out []float64), reps int, seed uint64, level float64) []Interval {
	if n <= 0 {
		return noIntervals(k)
	}
	reps, level = defaults(reps, level)
	r := newRand(seed)
	idx := make([]int, n)
	return replicateIntervals(k, reps, level, func(out []float64) {
		for i := range idx {
			idx[i] = r.IntN(n)
		}
		stat(idx, out)
	})
}

func noIntervals(k int) []Interval {
	out := make([]Interval, k)
	for j := range out {
		out[j] = NoInterval
	}
	return out
}

// replicateIntervals runs one replicate reps times (it writes the k
// statistics into out, preset to NaN) and gives each statistic's
// percentile interval: the part every bootstrap of k statistics shares,
// whatever it resamples.
func replicateIntervals(k, reps int, level float64, one func(out []float64)) []Interval {
	vals := make([][]float64, k)
	for j := range vals {
		vals[j] = make([]float64, reps)
	}
	out := make([]float64, k)
	for b := 0; b < reps; b++ {
		for j := range out {
			out[j] = math.NaN()
		}
		one(out)
		for j := range out {
			vals[j][b] = out[j]
		}
	}
	ivs := make([]Interval, k)
	for j := range vals {
		ivs[j] = intervalOf(vals[j], level)
	}
	return ivs
}
