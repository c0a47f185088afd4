package stats

import "testing"

func TestAccuracyPolicies(t *testing.T) {
	pred := []string{"A", "B", "A", "A"}
	gold := []string{"A", "A", "A", "A"}
	parsed := []bool{true, true, true, false} // item 3's "A" must be ignored
	// Wrong: correct = items 0 and 2 = 2; n = 4 → 2/4.
	acc, n := Accuracy(pred, gold, parsed, UnparsedWrong)
	near(t, "wrong acc", acc, 0.5, tol)
	eqInt(t, "wrong n", n, 4)
	// Exclude: 2 correct of the 3 parsed → 2/3.
	acc, n = Accuracy(pred, gold, parsed, UnparsedExclude)
	near(t, "exclude acc", acc, 2.0/3, tol)
	eqInt(t, "exclude n", n, 3)
	// nil parsed = all parsed: items 0, 2, 3 correct → 3/4.
	acc, n = Accuracy(pred, gold, nil, UnparsedWrong)
	near(t, "nil parsed acc", acc, 0.75, tol)
	eqInt(t, "nil parsed n", n, 4)
}

func TestAccuracyEdges(t *testing.T) {
	allUn := []bool{false, false}
	// All unparsed: wrong → 0/2; exclude → nothing left, NaN.
	acc, n := Accuracy([]string{"", ""}, []string{"A", "B"}, allUn, UnparsedWrong)
	near(t, "all unparsed wrong", acc, 0, tol)
	eqInt(t, "n", n, 2)
	acc, n = Accuracy([]string{"", ""}, []string{"A", "B"}, allUn, UnparsedExclude)
	near(t, "all unparsed exclude", acc, nan, 0)
	eqInt(t, "n", n, 0)
	acc, n = Accuracy(nil, nil, nil, UnparsedWrong)
	near(t, "empty", acc, nan, 0)
	eqInt(t, "n", n, 0)
	mustPanic(t, "Accuracy", func() { Accuracy([]string{"A"}, nil, nil, UnparsedWrong) })
	mustPanic(t, "Accuracy", func() { Accuracy([]string{"A"}, []string{"A"}, []bool{}, UnparsedWrong) })
}

func TestUnparsedRateAndCorrect(t *testing.T) {
	near(t, "rate", UnparsedRate([]bool{true, false, false, true}), 0.5, tol) // 2/4
	near(t, "empty rate", UnparsedRate(nil), nan, 0)
	// An item is correct when it parsed and equals gold: weighing one item
	// at a time, only the first counts as right.
	pred, gold, parsed := []string{"A", "B", "A"}, []string{"A", "A", "A"}, []bool{true, true, false}
	for i, want := range []float64{1, 0, 0} {
		w := make([]int, 3)
		w[i] = 1
		acc, _ := AccuracyW(pred, gold, parsed, w, UnparsedWrong)
		near(t, "correct", acc, want, 0)
	}
}

func TestBinaryPRF(t *testing.T) {
	pred := []string{"pos", "pos", "neg", "neg", "pos", "pos"}
	gold := []string{"pos", "neg", "pos", "neg", "pos", "pos"}
	parsed := []bool{true, true, true, true, true, false}
	// Wrong: TP = items 0,4 = 2; FP = item 1; FN = item 2 and unparsed
	// item 5 = 2. P = 2/3, R = 2/4, F1 = 2·2/(4+1+2) = 4/7.
	r := BinaryPRF(pred, gold, parsed, UnparsedWrong, "pos")
	near(t, "P", r.Precision, 2.0/3, tol)
	near(t, "R", r.Recall, 0.5, tol)
	near(t, "F1", r.F1, 4.0/7, tol)
	eqInt(t, "support", r.Support, 4)
	// Exclude: FN = 1 → R = 2/3, F1 = 4/(4+1+1) = 2/3.
	r = BinaryPRF(pred, gold, parsed, UnparsedExclude, "pos")
	near(t, "R excl", r.Recall, 2.0/3, tol)
	near(t, "F1 excl", r.F1, 2.0/3, tol)
	eqInt(t, "support excl", r.Support, 3)
}

func TestBinaryPRFZeroDivision(t *testing.T) {
	// One class only, never positive: TP = FP = FN = 0, so every ratio is
	// 0/0, reported 0 as sklearn's zero_division=0 does (checked: sklearn
	// 1.2 precision_recall_fscore_support gives (0, 0, 0)).
	r := BinaryPRF([]string{"neg", "neg"}, []string{"neg", "neg"}, nil, UnparsedWrong, "pos")
	near(t, "P", r.Precision, 0, 0)
	near(t, "R", r.Recall, 0, 0)
	near(t, "F1", r.F1, 0, 0)
	// Only the positive class, all right: 1, 1, 1.
	r = BinaryPRF([]string{"pos"}, []string{"pos"}, nil, UnparsedWrong, "pos")
	near(t, "F1 all pos", r.F1, 1, 0)
	r = BinaryPRF(nil, nil, nil, UnparsedWrong, "pos")
	near(t, "F1 empty", r.F1, 0, 0)
	// All unparsed under Wrong: both gold positives are FN, R = 0/2 = 0.
	r = BinaryPRF([]string{"", ""}, []string{"pos", "pos"}, []bool{false, false}, UnparsedWrong, "pos")
	eqInt(t, "FN", r.FN, 2)
}

func TestMultiClassSklearnExample(t *testing.T) {
	// scikit-learn's documented precision_recall_fscore_support example:
	// average="weighted" gives (0.2222..., 0.3333..., 0.2666...).
	// By hand: cat TP 2, FP 1 (a dog called cat), FN 0 → P 2/3, R 1,
	// F1 0.8; dog and pig have TP 0 → 0. Support 2 each, so weighted
	// P = 2·(2/3)/6 = 2/9, R = 2·1/6 = 1/3, F1 = 2·0.8/6 = 4/15; macro
	// F1 = 0.8/3 = 4/15.
	gold := []string{"cat", "dog", "pig", "cat", "dog", "pig"}
	pred := []string{"cat", "pig", "dog", "cat", "cat", "dog"}
	m := MultiClassPRFW(pred, gold, nil, nil, UnparsedWrong, nil)
	near(t, "wP", m.WeightedPrecision, 2.0/9, tol)
	near(t, "wR", m.WeightedRecall, 1.0/3, tol)
	near(t, "wF1", m.WeightedF1, 4.0/15, tol)
	near(t, "macroF1", m.MacroF1, 4.0/15, tol)
	if len(m.Classes) != 3 || m.Classes[0].Label != "cat" || m.Classes[2].Label != "pig" {
		t.Fatalf("classes = %+v, want sorted cat, dog, pig", m.Classes)
	}
	near(t, "cat F1", m.Classes[0].F1, 0.8, tol)
}

func TestMultiClassUnparsedAndLabels(t *testing.T) {
	gold := []string{"a", "b", "b"}
	pred := []string{"a", "b", "a"} // item 2 unparsed: its "a" is ignored
	parsed := []bool{true, true, false}
	// Wrong: a TP1 → P=R=F1=1; b TP1 FN1 FP0 → P 1, R 1/2, F1 2/3.
	// Weighted F1 = (1·1 + 2·2/3)/3 = 7/9, weighted P = 1, weighted
	// R = (1 + 2·0.5)/3 = 2/3; macro F1 = (1 + 2/3)/2 = 5/6 (sklearn agrees
	// with the unparsed answer as a sentinel label left out of labels).
	m := MultiClassPRFW(pred, gold, parsed, nil, UnparsedWrong, nil)
	near(t, "wF1", m.WeightedF1, 7.0/9, tol)
	near(t, "wP", m.WeightedPrecision, 1, tol)
	near(t, "wR", m.WeightedRecall, 2.0/3, tol)
	near(t, "macroF1", m.MacroF1, 5.0/6, tol)
	eqInt(t, "N", m.N, 3)
	// An explicit label absent from the data joins the macro mean with
	// F1 0: (1 + 2/3 + 0)/3 = 5/9, but weighs nothing in weighted.
	m = MultiClassPRFW(pred, gold, parsed, nil, UnparsedWrong, []string{"a", "b", "c"})
	near(t, "macroF1 with c", m.MacroF1, 5.0/9, tol)
	near(t, "wF1 with c", m.WeightedF1, 7.0/9, tol)
	// Exclude: items 0, 1 only, both right → everything 1.
	m = MultiClassPRFW(pred, gold, parsed, nil, UnparsedExclude, nil)
	near(t, "excl wF1", m.WeightedF1, 1, tol)
	eqInt(t, "excl N", m.N, 2)
	// Empty: no labels, zero_division → 0.
	m = MultiClassPRFW(nil, nil, nil, nil, UnparsedWrong, nil)
	near(t, "empty macro", m.MacroF1, 0, 0)
	near(t, "empty weighted", m.WeightedF1, 0, 0)
}
