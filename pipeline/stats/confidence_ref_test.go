package stats

import (
	"math"
	"slices"
	"testing"
)

// confBinIndex takes a confidence on 0–100 and reads the labels as upper-inclusive intervals (−∞,20],
// (20,40], (40,60], (60,80], (80,∞): that matches every integer exactly as
// written, and a non-integer such as 20.5 goes to 21–40 because it is above
// 20. Out-of-range values are clamped into the end bins.
func confBinIndex(c float64) int {
	switch {
	case c <= 20:
		return 0
	case c <= 40:
		return 1
	case c <= 60:
		return 2
	case c <= 80:
		return 3
	}
	return 4
}

// ConfidenceBins is accuracy, count and mean confidence in each of the five
// fixed bins (see confBinIndex for how non-integers are placed). All five bins
// are always returned; empty ones have N = 0 and NaN values.
func ConfidenceBins(conf []float64, correct []bool) []ConfBin {
	mustSameLen("ConfidenceBins", len(conf), len(correct))
	out := make([]ConfBin, len(ConfidenceBinLabels))
	var sumC, nCorrect [5]float64
	for i, c := range conf {
		if math.IsNaN(c) {
			continue
		}
		b := confBinIndex(c)
		out[b].N++
		sumC[b] += c
		nCorrect[b] += b2f(correct[i])
	}
	for b := range out {
		out[b].Lo, out[b].Hi = ConfidenceBinLabels[b][0], ConfidenceBinLabels[b][1]
		out[b].Accuracy, out[b].MeanConf = math.NaN(), math.NaN()
		if out[b].N > 0 {
			out[b].Accuracy = nCorrect[b] / float64(out[b].N)
			out[b].MeanConf = sumC[b] / float64(out[b].N)
		}
	}
	return out
}

// Overconfident computes Overconfidence with the given threshold (pass
// OverconfidenceThreshold for the study's 70). Confidence exactly at the
// threshold is not "confident": the protocol says > 70.
func Overconfident(conf []float64, correct []bool, threshold float64) Overconfidence {
	mustSameLen("Overconfident", len(conf), len(correct))
	var o Overconfidence
	nConfCorrect := 0
	for i, c := range conf {
		if math.IsNaN(c) {
			continue
		}
		o.N++
		if !correct[i] {
			o.NWrong++
		}
		if c > threshold {
			o.NConfident++
			if correct[i] {
				nConfCorrect++
			} else {
				o.NOverconfidentWrong++
			}
		}
	}
	o.OverconfidentErrorRate = ratio(o.NOverconfidentWrong, o.N)
	o.OverconfidentShareOfErrors = ratio(o.NOverconfidentWrong, o.NWrong)
	o.ConfidentAccuracy = ratio(nConfCorrect, o.NConfident)
	return o
}

// Bools maps false/true to 0/1, to feed correctness to Spearman.
func Bools(b []bool) []float64 {
	out := make([]float64, len(b))
	for i, v := range b {
		out[i] = b2f(v)
	}
	return out
}

// averageRanks writes the 1-based ranks of x into out, ties sharing the mean
// of the ranks they span (scipy.stats.rankdata method="average"). It returns
// Σ(t³ − t) over tie groups of size t, the Mann-Whitney tie term.
func averageRanks(x, out []float64) (tieTerm float64) {
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case x[a] < x[b]:
			return -1
		case x[a] > x[b]:
			return 1
		}
		return 0
	})
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && x[order[j]] == x[order[i]] {
			j++
		}
		// Positions i..j-1 hold ranks i+1..j; their mean is (i+1+j)/2.
		r := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			out[order[k]] = r
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	return tieTerm
}

// Spearman is Spearman's ρ of x and y (pairs with a NaN in either are
// dropped): the Pearson correlation of average ranks, so ties are handled as
// scipy.stats.spearmanr does. The two-sided p uses the same t-approximation
// as spearmanr, t = ρ·√((n−2)/(1−ρ²)) on n−2 degrees of freedom. Rho and P
// are NaN when either variable is constant (e.g. every answer correct) or
// n < 2; P is NaN when n < 3 (no degrees of freedom) and 0 when |ρ| = 1.
// Pass Bools(correct) as y for confidence vs correctness.
func Spearman(x, y []float64) Correlation {
	mustSameLen("Spearman", len(x), len(y))
	var xs, ys []float64
	for i := range x {
		if !math.IsNaN(x[i]) && !math.IsNaN(y[i]) {
			xs = append(xs, x[i])
			ys = append(ys, y[i])
		}
	}
	n := len(xs)
	c := Correlation{Rho: math.NaN(), P: math.NaN(), N: n}
	if n < 2 {
		return c
	}
	rx := make([]float64, n)
	ry := make([]float64, n)
	averageRanks(xs, rx)
	averageRanks(ys, ry)
	// Mean rank is (n+1)/2 exactly, whatever the ties.
	m := float64(n+1) / 2
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-m, ry[i]-m
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return c
	}
	rho := sxy / math.Sqrt(sxx*syy)
	// Rounding can push |ρ| a hair past 1; clamp so the t below stays real.
	rho = math.Max(-1, math.Min(1, rho))
	return spearmanP(rho, n)
}

// MannWhitneyGreater tests whether x tends to exceed y (alternative
// "greater"), matching scipy.stats.mannwhitneyu(x, y, alternative="greater",
// method="asymptotic", use_continuity=True): U is x's statistic,
// z = (U − n1·n2/2 − 0.5)/σ with the tie-corrected
// σ = √(n1·n2/12 · ((n+1) − Σ(t³−t)/(n(n−1)))), and p = P(Z ≥ z). As in
// scipy, when every value is tied σ = 0, z = −Inf and p = 1. All fields but
// the counts are NaN when either sample is empty.
func MannWhitneyGreater(x, y []float64) MannWhitney {
	all := make([]float64, 0, len(x)+len(y))
	for _, v := range x {
		if !math.IsNaN(v) {
			all = append(all, v)
		}
	}
	n1 := len(all)
	for _, v := range y {
		if !math.IsNaN(v) {
			all = append(all, v)
		}
	}
	n2 := len(all) - n1
	r := MannWhitney{U: math.NaN(), Z: math.NaN(), P: math.NaN(), N1: n1, N2: n2}
	if n1 == 0 || n2 == 0 {
		return r
	}
	ranks := make([]float64, len(all))
	tie := averageRanks(all, ranks)
	var r1 float64
	for _, rk := range ranks[:n1] {
		r1 += rk
	}
	f1, f2, n := float64(n1), float64(n2), float64(n1+n2)
	r.U = r1 - f1*(f1+1)/2
	sigma := math.Sqrt(f1 * f2 / 12 * ((n + 1) - tie/(n*(n-1))))
	// −0.5 continuity correction, as scipy applies before its survival
	// function; −0.5/0 gives −Inf when everything is tied.
	r.Z = (r.U - f1*f2/2 - 0.5) / sigma
	// Erfc keeps precision far in the upper tail, where 1 − Φ(z) would
	// round to 0 (scipy's norm.sf does the same).
	r.P = 0.5 * math.Erfc(r.Z/math.Sqrt2)
	return r
}

// MannWhitneyConfidence asks whether correct answers carry higher confidence
// than incorrect ones: MannWhitneyGreater(confidences of correct answers,
// confidences of incorrect answers).
func MannWhitneyConfidence(conf []float64, correct []bool) MannWhitney {
	mustSameLen("MannWhitneyConfidence", len(conf), len(correct))
	var x, y []float64
	for i, c := range conf {
		if correct[i] {
			x = append(x, c)
		} else {
			y = append(y, c)
		}
	}
	return MannWhitneyGreater(x, y)
}

// mannWhitneyBoth is the Mann–Whitney test of x (the right answers'
// confidences) against y (the wrong ones') as scoring computes it, over a
// ConfTable; it fails t unless the item-level MannWhitneyGreater agrees.
func mannWhitneyBoth(t *testing.T, x, y []float64) MannWhitney {
	t.Helper()
	conf := append(slices.Clone(x), y...)
	correct := make([]bool, len(conf))
	for i := range x {
		correct[i] = true
	}
	tb, _ := NewConfTable(conf, correct)
	got, ref := tb.MannWhitney(), MannWhitneyGreater(x, y)
	eqInt(t, "table n1", got.N1, ref.N1)
	eqInt(t, "table n2", got.N2, ref.N2)
	for _, v := range [][3]any{{"U", got.U, ref.U}, {"z", got.Z, ref.Z}, {"p", got.P, ref.P}} {
		g, w := v[1].(float64), v[2].(float64)
		if !(g == w || math.Abs(g-w) <= 1e-12 || math.IsNaN(g) && math.IsNaN(w)) {
			t.Errorf("table %s = %v, items %v", v[0], g, w)
		}
	}
	return got
}
