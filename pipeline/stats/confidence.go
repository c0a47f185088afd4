package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// The confidence-study analyses take confidences and correct[i] saying
// whether answer i was right; NaN confidences (none stated) are skipped.
// promoral passes every confidence on the 0–1 scale (ConfTable); the
// functions below that take a 0–100 scale say so.

// Summary describes a sample.
type Summary struct {
	N                           int
	Mean, Std, Median, Min, Max float64
}

// Describe summarises x, skipping NaN. Std is the sample standard deviation
// (n − 1 denominator, as pandas' describe reports), NaN when N < 2; every
// field but N is NaN when N == 0. Median averages the two middle values for
// even N.
func Describe(x []float64) Summary {
	v := make([]float64, 0, len(x))
	for _, xi := range x {
		if !math.IsNaN(xi) {
			v = append(v, xi)
		}
	}
	nan := math.NaN()
	s := Summary{N: len(v), Mean: nan, Std: nan, Median: nan, Min: nan, Max: nan}
	if s.N == 0 {
		return s
	}
	slices.Sort(v)
	var sum float64
	for _, vi := range v {
		sum += vi
	}
	s.Mean = sum / float64(s.N)
	if s.N > 1 {
		// Two-pass sum of squared deviations: no cancellation on 0–100 data.
		var ss float64
		for _, vi := range v {
			d := vi - s.Mean
			ss += d * d
		}
		s.Std = math.Sqrt(ss / float64(s.N-1))
	}
	s.Min, s.Max = v[0], v[s.N-1]
	if s.N%2 == 1 {
		s.Median = v[s.N/2]
	} else {
		s.Median = (v[s.N/2-1] + v[s.N/2]) / 2
	}
	return s
}

// ConfBin is one fixed confidence bin of the confidence study.
type ConfBin struct {
	Lo, Hi             int // as labelled: 0–20, 21–40, ...
	N                  int
	Accuracy, MeanConf float64 // NaN when N == 0
}

// ConfidenceBinLabels are the study's fixed bins, inclusive integer edges as
// written in the protocol.
var ConfidenceBinLabels = [5][2]int{{0, 20}, {21, 40}, {41, 60}, {61, 80}, {81, 100}}

// OverconfidenceThreshold is the study's "confident" cut on the 0–1 scale:
// confidence > 0.7 (70 per cent).
const OverconfidenceThreshold = 0.7

// The study's minimum sample sizes: Spearman's ρ is reported from 10
// answers with a confidence, the Mann–Whitney test from 5 right and 5
// wrong ones. Below them the rows say too_few instead of a number.
const (
	MinSpearmanN    = 10
	MinMannWhitneyN = 5
)

// Overconfidence reports wrong answers given with confidence > threshold.
// Two rates are reported because "overconfident error rate" is read both
// ways in the literature; the names say which denominator each uses.
type Overconfidence struct {
	N                   int // answers with a stated confidence
	NWrong              int // of those, wrong
	NOverconfidentWrong int // confidence > threshold and wrong
	// OverconfidentErrorRate = NOverconfidentWrong / N: share of ALL
	// answers that are confident and wrong (the study's headline figure).
	OverconfidentErrorRate float64
	// OverconfidentShareOfErrors = NOverconfidentWrong / NWrong: of the
	// errors, the share made confidently. NaN when there are no errors.
	OverconfidentShareOfErrors float64
	NConfident                 int     // confidence > threshold
	ConfidentAccuracy          float64 // accuracy among those; NaN if none
}

// Correlation is a correlation coefficient with its two-sided p-value.
type Correlation struct {
	Rho, P float64
	N      int // pairs used
}

// spearmanP is ρ with its two-sided p from the t approximation (NaN when
// n < 3, 0 when |ρ| = 1).
func spearmanP(rho float64, n int) Correlation {
	c := Correlation{Rho: rho, P: math.NaN(), N: n}
	if n < 3 {
		return c
	}
	df := float64(n - 2)
	den := (1 - rho) * (1 + rho)
	if den <= 0 {
		c.P = 0
		return c
	}
	t := rho * math.Sqrt(df/den)
	c.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
	return c
}

// MannWhitney is a one-sided Mann-Whitney U test result.
type MannWhitney struct {
	U    float64 // U of the first sample x: R_x − n_x(n_x+1)/2
	Z, P float64
	N1   int // len(x) after dropping NaN
	N2   int // len(y) after dropping NaN
}
