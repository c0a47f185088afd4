package stats

import (
	"fmt"
	"math"
	"sort"
)

// UnparsedPolicy says what an unparsed answer does to a classification metric.
type UnparsedPolicy int

const (
	// UnparsedWrong (the zero value, so the default) keeps unparsed answers in
	// n and counts them as wrong: a strategy that makes the model ramble past
	// the answer format pays for it.
	UnparsedWrong UnparsedPolicy = iota
	// UnparsedExclude drops unparsed answers from n. This is the ProMoral
	// study's own policy; report UnparsedRate next to it, because accuracy
	// alone then hides how many answers were lost.
	UnparsedExclude
)

func (p UnparsedPolicy) String() string {
	switch p {
	case UnparsedWrong:
		return "wrong"
	case UnparsedExclude:
		return "exclude"
	}
	return fmt.Sprintf("UnparsedPolicy(%d)", int(p))
}

// mustSameLen panics when parallel slices differ in length. A mismatch means
// items were misaligned upstream, and any number computed from them would be
// silently wrong.
func mustSameLen(fn string, n int, lens ...int) {
	for _, l := range lens {
		if l != n {
			panic(fmt.Sprintf("stats: %s: parallel slices differ in length (%d vs %d)", fn, n, l))
		}
	}
}

// mustParsed checks an optional parsed slice (nil = all parsed).
func mustParsed(fn string, n int, parsed []bool) {
	if parsed != nil {
		mustSameLen(fn, n, len(parsed))
	}
}

func isParsed(parsed []bool, i int) bool { return parsed == nil || parsed[i] }

// ratio is a/b, NaN when b == 0 (a share of nothing is undefined, not 0).
func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// safeDiv is a/b, 0 when b == 0: scikit-learn's zero_division=0, used only
// for precision, recall and F1.
func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Accuracy is the share of items whose parsed prediction equals gold, with
// unparsed items handled by policy. n is the denominator actually used, so
// under UnparsedExclude it is the number of parsed items. acc is NaN when
// n == 0 (no items, or all unparsed under UnparsedExclude).
func Accuracy(pred, gold []string, parsed []bool, policy UnparsedPolicy) (acc float64, n int) {
	return AccuracyW(pred, gold, parsed, nil, policy)
}

// AccuracyW is Accuracy with item i counted w[i] times (a bootstrap
// replicate over kinds of answers); a nil w counts each item once.
func AccuracyW(pred, gold []string, parsed []bool, w []int, policy UnparsedPolicy) (acc float64, n int) {
	mustSameLen("Accuracy", len(gold), len(pred))
	mustParsed("Accuracy", len(gold), parsed)
	mustWeights("Accuracy", len(gold), w)
	correct := 0
	for i := range gold {
		c := weight(w, i)
		if !isParsed(parsed, i) {
			if policy != UnparsedExclude {
				n += c
			}
			continue
		}
		n += c
		if pred[i] == gold[i] {
			correct += c
		}
	}
	return ratio(correct, n), n
}

// UnparsedRate is the share of items whose answer did not parse. It is NaN
// for an empty slice; a nil slice therefore also gives NaN, since it carries
// no item count.
func UnparsedRate(parsed []bool) float64 {
	un := 0
	for _, ok := range parsed {
		if !ok {
			un++
		}
	}
	return ratio(un, len(parsed))
}

// PRF is precision, recall and F1 for one class, with the counts behind them.
// Support is the number of gold items of the class (TP + FN).
type PRF struct {
	Precision, Recall, F1 float64
	TP, FP, FN, Support   int
}

func prfFromCounts(tp, fp, fn int) PRF {
	return PRF{
		Precision: safeDiv(float64(tp), float64(tp+fp)),
		Recall:    safeDiv(float64(tp), float64(tp+fn)),
		// 2TP/(2TP+FP+FN) equals 2PR/(P+R) wherever that is defined and is 0
		// (not NaN) when TP = 0, which is what sklearn reports.
		F1: safeDiv(float64(2*tp), float64(2*tp+fp+fn)),
		TP: tp, FP: fp, FN: fn, Support: tp + fn,
	}
}

// BinaryPRF is precision, recall and F1 of the class named positive.
// Division by zero gives 0, like scikit-learn's zero_division=0 (so an empty
// input gives all zeros; Support and the counts say why). Under UnparsedWrong
// an unparsed answer never predicts the positive class: it is a false negative
// when gold is positive and harmless otherwise. Under UnparsedExclude it is
// dropped.
func BinaryPRF(pred, gold []string, parsed []bool, policy UnparsedPolicy, positive string) PRF {
	return BinaryPRFW(pred, gold, parsed, nil, policy, positive)
}

// BinaryPRFW is BinaryPRF with item i counted w[i] times (nil: once).
func BinaryPRFW(pred, gold []string, parsed []bool, w []int, policy UnparsedPolicy, positive string) PRF {
	mustSameLen("BinaryPRF", len(gold), len(pred))
	mustParsed("BinaryPRF", len(gold), parsed)
	mustWeights("BinaryPRF", len(gold), w)
	var tp, fp, fn int
	for i := range gold {
		ok := isParsed(parsed, i)
		if !ok && policy == UnparsedExclude {
			continue
		}
		predPos := ok && pred[i] == positive
		goldPos := gold[i] == positive
		c := weight(w, i)
		switch {
		case predPos && goldPos:
			tp += c
		case predPos:
			fp += c
		case goldPos:
			fn += c
		}
	}
	return prfFromCounts(tp, fp, fn)
}

// ClassPRF is the PRF of one label.
type ClassPRF struct {
	Label string
	PRF
}

// MultiPRF is a multi-class report with scikit-learn's averages.
type MultiPRF struct {
	// Classes holds one entry per label, in the order of the labels argument
	// or, when that is nil, sorted.
	Classes []ClassPRF
	// Weighted* average the per-class values weighted by Support
	// (sklearn average="weighted"); 0 when total support is 0.
	WeightedPrecision, WeightedRecall, WeightedF1 float64
	// Macro* are unweighted means over Classes (sklearn average="macro"),
	// so a label that never occurs in gold still pulls the mean down; 0 when
	// there are no classes.
	MacroPrecision, MacroRecall, MacroF1 float64
	// N is the number of items scored (after UnparsedExclude).
	N int
}

// MultiClassPRFW computes per-class and averaged P/R/F1 with scikit-learn's
// semantics (zero_division=0). labels fixes the label set and order; nil
// means the sorted union of gold labels and parsed predictions, as sklearn
// does when labels=None. Under UnparsedWrong an unparsed answer predicts no
// label: it is a false negative for its gold class and a false positive for
// none, exactly what sklearn gives if unparsed answers carry a sentinel
// prediction that is left out of labels.
//
// Item i is counted w[i] times (nil: once); an item counted zero times
// does not name a label.
func MultiClassPRFW(pred, gold []string, parsed []bool, w []int, policy UnparsedPolicy, labels []string) MultiPRF {
	mustWeights("MultiClassPRF", len(gold), w)
	mustSameLen("MultiClassPRF", len(gold), len(pred))
	mustParsed("MultiClassPRF", len(gold), parsed)
	if labels == nil {
		seen := map[string]bool{}
		for i := range gold {
			if !isParsed(parsed, i) && policy == UnparsedExclude || weight(w, i) == 0 {
				continue
			}
			seen[gold[i]] = true
			if isParsed(parsed, i) {
				seen[pred[i]] = true
			}
		}
		for l := range seen {
			labels = append(labels, l)
		}
		sort.Strings(labels)
	}
	pos := make(map[string]int, len(labels))
	for k, l := range labels {
		pos[l] = k
	}
	tp := make([]int, len(labels))
	fp := make([]int, len(labels))
	fn := make([]int, len(labels))
	var out MultiPRF
	for i := range gold {
		ok := isParsed(parsed, i)
		if !ok && policy == UnparsedExclude {
			continue
		}
		c := weight(w, i)
		out.N += c
		g, gin := pos[gold[i]]
		p, pin := -1, false
		if ok {
			p, pin = pos[pred[i]]
		}
		if ok && gin && pin && p == g {
			tp[g] += c
			continue
		}
		if gin {
			fn[g] += c
		}
		if pin {
			fp[p] += c
		}
	}
	var support int
	for k, l := range labels {
		c := ClassPRF{Label: l, PRF: prfFromCounts(tp[k], fp[k], fn[k])}
		out.Classes = append(out.Classes, c)
		w := float64(c.Support)
		support += c.Support
		out.WeightedPrecision += w * c.Precision
		out.WeightedRecall += w * c.Recall
		out.WeightedF1 += w * c.F1
		out.MacroPrecision += c.Precision
		out.MacroRecall += c.Recall
		out.MacroF1 += c.F1
	}
	s := float64(support)
	out.WeightedPrecision = safeDiv(out.WeightedPrecision, s)
	out.WeightedRecall = safeDiv(out.WeightedRecall, s)
	out.WeightedF1 = safeDiv(out.WeightedF1, s)
	k := float64(len(labels))
	out.MacroPrecision = safeDiv(out.MacroPrecision, k)
	out.MacroRecall = safeDiv(out.MacroRecall, k)
	out.MacroF1 = safeDiv(out.MacroF1, k)
	return out
}

// weight is item i's count in a weighted call: w[i], or 1 when w is nil.
func weight(w []int, i int) int {
	if w == nil {
		return 1
	}
	return w[i]
}

func mustWeights(fn string, n int, w []int) {
	if w != nil {
		mustSameLen(fn, n, len(w))
	}
}
