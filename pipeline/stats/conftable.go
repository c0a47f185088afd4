package stats

import (
	"math"
	"slices"
)

// ConfTable holds stated confidences (on 0–1) as counts per distinct value,
// split by whether the answer was right: the sufficient statistics of every
// confidence-study statistic (summary, shares above a threshold, binned
// calibration, Spearman's ρ with correctness, Mann–Whitney U). A bootstrap
// replicate is then a new set of counts, never a new list of items.
type ConfTable struct {
	Values []float64 // distinct confidences, ascending
	// Right and Wrong count the answers at each value. Without gold every
	// answer is counted in Right and Graded is false.
	Right, Wrong []int
	Graded       bool
}

// NewConfTable tabulates conf (NaN skipped); correct may be nil when the
// task has no gold. It also returns, per item, its cell (2·value index +
// 1 if wrong; −1 when skipped).
func NewConfTable(conf []float64, correct []bool) (*ConfTable, []int) {
	if correct != nil {
		mustSameLen("NewConfTable", len(conf), len(correct))
	}
	var vs []float64
	for _, c := range conf {
		if !math.IsNaN(c) {
			vs = append(vs, c)
		}
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	t := &ConfTable{Values: vs, Right: make([]int, len(vs)), Wrong: make([]int, len(vs)), Graded: correct != nil}
	cells := make([]int, len(conf))
	for i, c := range conf {
		if math.IsNaN(c) {
			cells[i] = -1
			continue
		}
		k, _ := slices.BinarySearch(vs, c)
		if correct != nil && !correct[i] {
			t.Wrong[k]++
			cells[i] = 2*k + 1
		} else {
			t.Right[k]++
			cells[i] = 2 * k
		}
	}
	return t, cells
}

// Cells is the table as counts per cell in the order NewConfTable numbers
// them (2·value index, + 1 for the wrong answers), for BootstrapCountsIntervals.
func (t *ConfTable) Cells() []int {
	out := make([]int, 2*len(t.Values))
	for k := range t.Values {
		out[2*k], out[2*k+1] = t.Right[k], t.Wrong[k]
	}
	return out
}

// Reweigh fills into with the counts w gives the cells (a replicate of
// Cells), reusing its slices.
func (t *ConfTable) Reweigh(w []int, into *ConfTable) {
	into.Values, into.Graded = t.Values, t.Graded
	if len(into.Right) != len(t.Values) {
		into.Right, into.Wrong = make([]int, len(t.Values)), make([]int, len(t.Values))
	}
	for k := range t.Values {
		into.Right[k], into.Wrong[k] = w[2*k], w[2*k+1]
	}
}

// N is the number of answers with a confidence.
func (t *ConfTable) N() int {
	n := 0
	for k := range t.Values {
		n += t.Right[k] + t.Wrong[k]
	}
	return n
}

// Summary describes the confidences as Describe does.
func (t *ConfTable) Summary() Summary {
	nan := math.NaN()
	s := Summary{N: t.N(), Mean: nan, Std: nan, Median: nan, Min: nan, Max: nan}
	if s.N == 0 {
		return s
	}
	var sum float64
	first, last := -1, -1
	for k, v := range t.Values {
		c := t.Right[k] + t.Wrong[k]
		if c == 0 {
			continue
		}
		if first < 0 {
			first = k
		}
		last = k
		sum += float64(c) * v
	}
	s.Mean = sum / float64(s.N)
	if s.N > 1 {
		var ss float64
		for k, v := range t.Values {
			d := v - s.Mean
			ss += float64(t.Right[k]+t.Wrong[k]) * d * d
		}
		s.Std = math.Sqrt(ss / float64(s.N-1))
	}
	s.Min, s.Max = t.Values[first], t.Values[last]
	s.Median = (t.orderStat((s.N-1)/2) + t.orderStat(s.N/2)) / 2
	return s
}

// orderStat is the i-th smallest confidence (0-based).
func (t *ConfTable) orderStat(i int) float64 {
	for k, v := range t.Values {
		i -= t.Right[k] + t.Wrong[k]
		if i < 0 {
			return v
		}
	}
	return math.NaN()
}

// Above is the share of answers with confidence > threshold (NaN when
// there are none).
func (t *ConfTable) Above(threshold float64) float64 {
	a := 0
	for k, v := range t.Values {
		if v > threshold {
			a += t.Right[k] + t.Wrong[k]
		}
	}
	return ratio(a, t.N())
}

// Overconfident reports the wrong answers given with confidence above
// threshold (pass OverconfidenceThreshold for the study's 70 per cent); a
// confidence exactly at the threshold is not "confident", as the protocol
// says > 70. Graded tables only.
func (t *ConfTable) Overconfident(threshold float64) Overconfidence {
	var o Overconfidence
	nConfRight := 0
	for k, v := range t.Values {
		r, w := t.Right[k], t.Wrong[k]
		o.N += r + w
		o.NWrong += w
		if v > threshold {
			o.NConfident += r + w
			o.NOverconfidentWrong += w
			nConfRight += r
		}
	}
	o.OverconfidentErrorRate = ratio(o.NOverconfidentWrong, o.N)
	o.OverconfidentShareOfErrors = ratio(o.NOverconfidentWrong, o.NWrong)
	o.ConfidentAccuracy = ratio(nConfRight, o.NConfident)
	return o
}

// ranks gives each value its average rank among all answers (1-based) and
// returns Σ(t³ − t) over the tie groups.
func (t *ConfTable) ranks() ([]float64, float64) {
	rk := make([]float64, len(t.Values))
	var tie float64
	before := 0
	for k := range t.Values {
		c := t.Right[k] + t.Wrong[k]
		rk[k] = float64(before) + float64(c+1)/2
		before += c
		f := float64(c)
		tie += f*f*f - f
	}
	return rk, tie
}

// Spearman is Spearman's ρ of confidence against correctness (1 right, 0
// wrong) with its two-sided p: the Pearson correlation of average ranks, so
// ties are handled as scipy.stats.spearmanr does, and p from the same
// t-approximation, t = ρ·√((n−2)/(1−ρ²)) on n−2 degrees of freedom. Rho and
// P are NaN when every answer is right (or every one wrong), when all share
// one confidence, or n < 2; P is NaN when n < 3 and 0 when |ρ| = 1.
func (t *ConfTable) Spearman() Correlation {
	n := t.N()
	c := Correlation{Rho: math.NaN(), P: math.NaN(), N: n}
	if n < 2 {
		return c
	}
	rk, _ := t.ranks()
	var nr int
	for _, x := range t.Right {
		nr += x
	}
	nw := n - nr
	// Ranks of correctness: the wrong answers share (nw+1)/2, the right
	// ones nw + (nr+1)/2.
	rw, rr := float64(nw+1)/2, float64(nw)+float64(nr+1)/2
	m := float64(n+1) / 2
	var sxy, sxx float64
	for k := range t.Values {
		dx := rk[k] - m
		sxx += float64(t.Right[k]+t.Wrong[k]) * dx * dx
		sxy += dx * (float64(t.Right[k])*(rr-m) + float64(t.Wrong[k])*(rw-m))
	}
	syy := float64(nr)*(rr-m)*(rr-m) + float64(nw)*(rw-m)*(rw-m)
	if sxx == 0 || syy == 0 {
		return c
	}
	rho := math.Max(-1, math.Min(1, sxy/math.Sqrt(sxx*syy)))
	return spearmanP(rho, n)
}

// MannWhitney asks whether right answers carry higher confidence than wrong
// ones: the one-sided Mann–Whitney U test of the right answers' confidences
// against the wrong ones', as scipy.stats.mannwhitneyu(right, wrong,
// alternative="greater", method="asymptotic", use_continuity=True) gives
// it: z = (U − n1·n2/2 − 0.5)/σ with the tie-corrected
// σ = √(n1·n2/12 · ((n+1) − Σ(t³−t)/(n(n−1)))), p = P(Z ≥ z). When every
// value is tied σ = 0, z = −Inf and p = 1. All fields but the counts are NaN
// when either group is empty.
func (t *ConfTable) MannWhitney() MannWhitney {
	var n1, n2 int
	for k := range t.Values {
		n1 += t.Right[k]
		n2 += t.Wrong[k]
	}
	r := MannWhitney{U: math.NaN(), Z: math.NaN(), P: math.NaN(), N1: n1, N2: n2}
	if n1 == 0 || n2 == 0 {
		return r
	}
	rk, tie := t.ranks()
	var r1 float64
	for k := range t.Values {
		r1 += float64(t.Right[k]) * rk[k]
	}
	f1, f2, n := float64(n1), float64(n2), float64(n1+n2)
	r.U = r1 - f1*(f1+1)/2
	sigma := math.Sqrt(f1 * f2 / 12 * ((n + 1) - tie/(n*(n-1))))
	r.Z = (r.U - f1*f2/2 - 0.5) / sigma
	r.P = 0.5 * math.Erfc(r.Z/math.Sqrt2)
	return r
}

// Reliability bins the table as ReliabilityBins(conf, correct, bins) does.
func (t *ConfTable) Reliability(bins int) []ReliabilityBin {
	if bins <= 0 {
		bins = DefaultBins
	}
	out := make([]ReliabilityBin, bins)
	sumC := make([]float64, bins)
	sumY := make([]float64, bins)
	for k, v := range t.Values {
		c := t.Right[k] + t.Wrong[k]
		if c == 0 {
			continue
		}
		b := binIndex(v, bins)
		out[b].N += c
		sumC[b] += float64(c) * v
		sumY[b] += float64(t.Right[k])
	}
	for b := range out {
		out[b].Lo, out[b].Hi = binEdge(b, bins), binEdge(b+1, bins)
		out[b].MeanConf, out[b].Accuracy = math.NaN(), math.NaN()
		if out[b].N > 0 {
			out[b].MeanConf = sumC[b] / float64(out[b].N)
			out[b].Accuracy = sumY[b] / float64(out[b].N)
		}
	}
	return out
}

// ECE is the top-label ECE of the table, as ECEW(conf, correct, nil, bins).
func (t *ConfTable) ECE(bins int) float64 {
	return binsECE(t.Reliability(bins))
}

// Brier is the top-label Brier of the table, as BrierW(conf, correct, nil):
// mean((confidence − correct)²); NaN for an empty table.
func (t *ConfTable) Brier() float64 {
	var sum float64
	n := 0
	for k, v := range t.Values {
		r, w := t.Right[k], t.Wrong[k]
		sum += float64(r)*(v-1)*(v-1) + float64(w)*v*v
		n += r + w
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// StudyBins are the five fixed bins of the confidence study (0–20, 21–40,
// 41–60, 61–80, 81–100 per cent), read as right-closed on 0–1: (−∞, 0.2],
// (0.2, 0.4], ..., (0.8, ∞), so every whole per cent lands where the study's
// labels put it.
func (t *ConfTable) StudyBins() []ConfBin {
	out := make([]ConfBin, len(ConfidenceBinLabels))
	var sumC, nRight [5]float64
	for k, v := range t.Values {
		c := t.Right[k] + t.Wrong[k]
		if c == 0 {
			continue
		}
		b := unitBinIndex(v)
		out[b].N += c
		sumC[b] += float64(c) * v
		nRight[b] += float64(t.Right[k])
	}
	for b := range out {
		out[b].Lo, out[b].Hi = ConfidenceBinLabels[b][0], ConfidenceBinLabels[b][1]
		out[b].Accuracy, out[b].MeanConf = math.NaN(), math.NaN()
		if out[b].N > 0 {
			out[b].Accuracy = nRight[b] / float64(out[b].N)
			out[b].MeanConf = sumC[b] / float64(out[b].N)
		}
	}
	return out
}

// unitBinIndex places a confidence on the 0–1 scale in one of the five
// study bins, reading the labels as upper-inclusive intervals (−∞, 0.2],
// (0.2, 0.4], ..., (0.8, ∞): every whole per cent lands where its label
// says, and 0.205 goes to 21–40 because it is above 0.2. It compares with
// the edges themselves (0.2*100 is 20.000000000000004, which would cross
// 20).
func unitBinIndex(c float64) int {
	switch {
	case c <= 0.2:
		return 0
	case c <= 0.4:
		return 1
	case c <= 0.6:
		return 2
	case c <= 0.8:
		return 3
	}
	return 4
}
