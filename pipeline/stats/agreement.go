package stats

import (
	"math"
)

// Agreement counts one binary judge against people on the same items. The
// positive class is the one the judge is meant to find (COMPLIANCE with a
// harmful request, for an attack-success judge). A judge may also give no
// verdict (an unsure heuristic): Miss counts those, split by what people
// said, so that every statistic can say how it treats them.
type Agreement struct {
	TP, FN, MissP int // people said positive: the judge said positive, negative, nothing
	FP, TN, MissN int // people said negative: the judge said positive, negative, nothing
}

// Add counts one item. person and judge are the two verdicts, judge == ""
// for no verdict; positive names the positive class. person must be a
// verdict (callers leave unlabelled items out).
func (a *Agreement) Add(person, judge, positive string) {
	pp := person == positive
	switch {
	case judge == "" && pp:
		a.MissP++
	case judge == "":
		a.MissN++
	case pp && judge == positive:
		a.TP++
	case pp:
		a.FN++
	case judge == positive:
		a.FP++
	default:
		a.TN++
	}
}

// N is every item counted, those without a verdict included.
func (a Agreement) N() int { return a.TP + a.FN + a.MissP + a.FP + a.TN + a.MissN }

// Positives and Negatives are the items people put in each class.
func (a Agreement) Positives() int { return a.TP + a.FN + a.MissP }
func (a Agreement) Negatives() int { return a.FP + a.TN + a.MissN }

// Accuracy is the share of items where the judge says what people said; an
// item without a verdict is a disagreement. NaN for no items.
func (a Agreement) Accuracy() float64 { return ratio(a.TP+a.TN, a.N()) }

// Sensitivity is the share of the people's positives the judge calls
// positive (no verdict is a miss). NaN when people found no positive.
func (a Agreement) Sensitivity() float64 { return ratio(a.TP, a.Positives()) }

// Specificity is the share of the people's negatives the judge calls
// negative (no verdict is a miss). NaN when people found no negative.
func (a Agreement) Specificity() float64 { return ratio(a.TN, a.Negatives()) }

// Kappa is Cohen's kappa between people and judge, with "no verdict" as a
// third category of the judge's that people never use: it counts against
// observed agreement and adds nothing to chance agreement. NaN for no items,
// and when chance agreement is 1 (people and judge each say one and the same
// class on every item), where kappa is 0/0.
func (a Agreement) Kappa() float64 {
	n := float64(a.N())
	if n == 0 {
		return math.NaN()
	}
	po := float64(a.TP+a.TN) / n
	pe := float64(a.Positives())/n*float64(a.TP+a.FP)/n + float64(a.Negatives())/n*float64(a.FN+a.TN)/n
	if pe >= 1 {
		return math.NaN()
	}
	return (po - pe) / (1 - pe)
}

// CallRates are the judge's rates as a test for "calls positive": the
// sensitivity (positives called positive) and the specificity (negatives
// not called positive; no verdict is not a positive call). These are what
// a rate of positive calls, such as an ASR that counts unjudged replies as
// not complied, must be corrected with. Without misses they equal
// Sensitivity and Specificity.
func (a Agreement) CallRates() (sens, spec float64) {
	return ratio(a.TP, a.Positives()), ratio(a.TN+a.MissN, a.Negatives())
}

// RoganGladen corrects an observed rate of positive calls for the judge's
// misclassification: (observed + spec − 1) / (sens + spec − 1), the
// estimator of Rogan and Gladen (1978). It is undefined (NaN, false) when
// sens + spec ≤ 1: such a judge calls positive no more often on positives
// than on negatives, so its calls say nothing about the true rate. The
// estimate may leave [0, 1] (sampling noise in the rates); Clamp01 says so.
func RoganGladen(observed, sens, spec float64) (float64, bool) {
	j := sens + spec - 1
	if math.IsNaN(observed) || math.IsNaN(j) || j <= 0 {
		return math.NaN(), false
	}
	return (observed + spec - 1) / j, true
}

// Clamp01 is x limited to [0, 1], and whether it had to be moved.
func Clamp01(x float64) (float64, bool) {
	switch {
	case x < 0:
		return 0, true
	case x > 1:
		return 1, true
	}
	return x, false
}

// Bootstrap2ManyIntervals is a percentile bootstrap interval for each of k
// statistics of two independent samples, of n1 and n2 items: each replicate
// draws n1 indices into the first and n2 into the second (with
// replacement, from one PCG generator seeded by seed) and stat writes the k
// values for both into out. The interval so carries the uncertainty of both
// samples, e.g. a judge's error rates measured on labelled items and the
// rate it gives on the items it judged. A sample may be empty (its index
// slice then is). Replicates where a statistic is NaN are left out of its
// interval and counted as undefined; NoInterval when both samples are
// empty.
func Bootstrap2ManyIntervals(n1, n2, k int, stat func(idx1, idx2 []int, out []float64), reps int, seed uint64, level float64) []Interval {
	n1, n2 = max(n1, 0), max(n2, 0)
	if n1+n2 == 0 {
		return noIntervals(k)
	}
	reps, level = defaults(reps, level)
	r := newRand(seed)
	idx1, idx2 := make([]int, n1), make([]int, n2)
	vals := make([][]float64, k)
	for j := range vals {
		vals[j] = make([]float64, reps)
	}
	out := make([]float64, k)
	for b := 0; b < reps; b++ {
		for i := range idx1 {
			idx1[i] = r.IntN(n1)
		}
		for i := range idx2 {
			idx2[i] = r.IntN(n2)
		}
		for j := range out {
			out[j] = math.NaN()
		}
		stat(idx1, idx2, out)
		for j, v := range out {
			vals[j][b] = v
		}
	}
	ivs := make([]Interval, k)
	for j := range vals {
		ivs[j] = intervalOf(vals[j], level)
	}
	return ivs
}
