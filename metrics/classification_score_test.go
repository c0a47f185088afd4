package metrics

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

var ethicsLabels = []string{"unacceptable", "acceptable"}

const (
	U = "unacceptable"
	A = "acceptable"
)

// Five items, one model x strategy:
//
//	item  gold  answer       conf (in the chosen answer)
//	i1    U     U            0.9
//	i2    U     A            0.6
//	i3    A     A            0.8
//	i4    A     U            0.7
//	i5    U     (unparsed)   -
func fiveItems() (*spec.Task, []ans) {
	t := mkTask("toy", ethicsLabels, U, []tItem{
		{id: "i1", gold: U, fields: map[string]any{"short": true}},
		{id: "i2", gold: U, fields: map[string]any{"short": true}},
		{id: "i3", gold: A, fields: map[string]any{"short": false}},
		{id: "i4", gold: A, fields: map[string]any{"short": false}},
		{id: "i5", gold: U, fields: map[string]any{"short": false}},
	}, map[string]string{"short": "item.short == true"})
	a := []ans{
		{model: "m", strategy: "s", item: "i1", label: U, conf: 0.9},
		{model: "m", strategy: "s", item: "i2", label: A, conf: 0.6},
		{model: "m", strategy: "s", item: "i3", label: A, conf: 0.8},
		{model: "m", strategy: "s", item: "i4", label: U, conf: 0.7},
		{model: "m", strategy: "s", item: "i5", noConf: true},
	}
	return t, a
}

func TestClassificationUnparsedWrong(t *testing.T) {
	task, answers := fiveItems()
	st := mkStudy(7, task)
	m := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task, answers...))
	// Correct: i1, i3 -> 2/5. Positive U: TP i1; FP i4; FN i2 and i5 (an
	// unparsed answer never predicts the positive class).
	want(t, find(t, out, "m", "s", "all", "accuracy"), 2.0/5, 5)
	want(t, find(t, out, "m", "s", "all", "precision"), 1.0/2, 5)
	want(t, find(t, out, "m", "s", "all", "recall"), 1.0/3, 5)
	want(t, find(t, out, "m", "s", "all", "f1"), 2.0/5, 5) // 2·1/(2·1+1+2)
	want(t, find(t, out, "m", "s", "all", "unparsed_rate"), 1.0/5, 5)
	// Calibration, 4 items with a confidence. P(U): i1 0.9, i2 1−0.6 = 0.4,
	// i3 1−0.8 = 0.2, i4 0.7; y (gold U) = 1, 1, 0, 0.
	// Brier = (0.01 + 0.36 + 0.04 + 0.49)/4 = 0.225.
	want(t, find(t, out, "m", "s", "all", "brier"), 0.225, 4)
	// ece_pos: every item alone in its bin (9, 4, 1, 7), so the mean
	// |p − y| = (0.1 + 0.6 + 0.2 + 0.7)/4 = 0.4.
	want(t, find(t, out, "m", "s", "all", "ece_pos"), 0.4, 4)
	// Top-label ece: conf 0.9 ok, 0.6 wrong, 0.8 ok, 0.7 wrong, bins 9, 6,
	// 8, 7: (0.1 + 0.6 + 0.2 + 0.7)/4 = 0.4.
	want(t, find(t, out, "m", "s", "all", "ece"), 0.4, 4)
	if r := find(t, out, "m", "s", "all", "accuracy"); !math.IsNaN(r.CILow) {
		t.Errorf("bootstrap: 0 must leave no interval, got %v", r.CILow)
	}
	if has(out, "m", "s", "all", "ece_pos_promoral") {
		t.Error("ece_pos_promoral reported without ece_promoral")
	}
	// Subset short = {i1, i2}: i1 right, i2 wrong.
	want(t, find(t, out, "m", "s", "short", "accuracy"), 0.5, 2)
	// P(U) 0.9, 0.4 with y 1, 1: Brier (0.01 + 0.36)/2 = 0.185.
	want(t, find(t, out, "m", "s", "short", "brier"), 0.185, 2)
}

func TestClassificationUnparsedExclude(t *testing.T) {
	task, answers := fiveItems()
	st := mkStudy(7, task)
	// The block's own policy overrides the run's (wrong).
	m := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Unparsed: "exclude", Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task, answers...))
	// i5 is left out: 2/4; TP 1, FP 1, FN 1 -> P = R = F1 = 0.5.
	want(t, find(t, out, "m", "s", "all", "accuracy"), 0.5, 4)
	want(t, find(t, out, "m", "s", "all", "precision"), 0.5, 4)
	want(t, find(t, out, "m", "s", "all", "recall"), 0.5, 4)
	want(t, find(t, out, "m", "s", "all", "f1"), 0.5, 4)
	want(t, find(t, out, "m", "s", "all", "unparsed_rate"), 0.2, 5)
}

// require_confidence: an answer without a confidence is unparsed too.
func TestClassificationRequireConfidence(t *testing.T) {
	task, answers := fiveItems()
	answers[0].noConf = true // i1 answered U, right, but stated no confidence
	st := mkStudy(7, task)
	m := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Unparsed: "exclude", RequireConfidence: true, Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task, answers...))
	// Scored: i2 (wrong), i3 (right), i4 (wrong) -> 1/3. TP 0, FP 1 (i4),
	// FN 1 (i2): P = R = F1 = 0.
	want(t, find(t, out, "m", "s", "all", "accuracy"), 1.0/3, 3)
	want(t, find(t, out, "m", "s", "all", "f1"), 0, 3)
	want(t, find(t, out, "m", "s", "all", "unparsed_rate"), 2.0/5, 5)
	// Calibration has three items: P(U) 0.4, 0.2, 0.7 with y 1, 0, 0:
	// (0.36 + 0.04 + 0.49)/3 = 0.89/3.
	want(t, find(t, out, "m", "s", "all", "brier"), 0.89/3, 3)
}

// confidence: positive reads the stated number as P(positive) whatever the
// answer, and keeps a confidence even when the label did not parse.
// Two answers, both gold U:
//
//	j1  answered A, stated P(U) = 0.3 (so 0.7 in its own answer), wrong
//	j2  answered U, stated P(U) = 0.7, right
//	j3  unparsed,   stated P(U) = 0.2 (gold A)
func TestClassificationConfidencePositive(t *testing.T) {
	task := mkTask("toy", ethicsLabels, U, []tItem{{id: "j1", gold: U}, {id: "j2", gold: U}, {id: "j3", gold: A}}, nil)
	st := mkStudy(1, task)
	ans := []ans{
		{model: "m", strategy: "s", item: "j1", label: A, conf: 0.3},
		{model: "m", strategy: "s", item: "j2", label: U, conf: 0.7},
		{model: "m", strategy: "s", item: "j3", conf: 0.2},
	}
	pos := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Confidence: "positive", Bootstrap: intp(0)})
	out := run(t, pos, mkRS(st, "wrong", task, ans...))
	// p = 0.3 (y 1), 0.7 (y 1), 0.2 (y 0), all three (j3's label is not needed):
	// Brier = (0.49 + 0.09 + 0.04)/3 = 0.62/3. ece_pos: bins 3, 7, 2 alone:
	// (0.7 + 0.3 + 0.2)/3 = 0.4.
	want(t, find(t, out, "m", "s", "all", "brier"), 0.62/3, 3)
	want(t, find(t, out, "m", "s", "all", "ece_pos"), 0.4, 3)
	// Top-label: j1 0.7 (wrong), j2 0.7 (right), both in bin 7: mean conf
	// 0.7, accuracy 0.5 -> 0.2; j3 has no label, so n = 2.
	want(t, find(t, out, "m", "s", "all", "ece"), 0.2, 2)

	// The same numbers read as confidence in the chosen answer: j1's 0.3 in
	// A is P(U) = 0.7, j2 P(U) = 0.7: both bin 7, y = 1, 1 -> |0.7 − 1| = 0.3;
	// Brier (0.09 + 0.09)/2; top-label: 0.3 (wrong, bin 3) and 0.7 (right,
	// bin 7): (0.3 + 0.3)/2 = 0.3. j3 (no label) is left out.
	ch := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(0)})
	out = run(t, ch, mkRS(st, "wrong", task, ans...))
	want(t, find(t, out, "m", "s", "all", "brier"), 0.09, 2)
	want(t, find(t, out, "m", "s", "all", "ece_pos"), 0.3, 2)
	want(t, find(t, out, "m", "s", "all", "ece"), 0.3, 2)
}

// The study's binning: the same right-closed bins as the default, but a 0
// in no bin while n still counts it.
//
//	p     y   study bin      default bin
//	0     1   none           [0, 0.1]
//	0.1   0   (0, 0.1]       [0, 0.1]
//	0.8   1   (0.7, 0.8]     (0.7, 0.8]
//	0.85  0   (0.8, 0.9]     (0.8, 0.9]
//	1.0   1   (0.9, 1]       (0.9, 1]
//
// study:   (|0.1−0| + |0.8−1| + |0.85−0| + |1−1|)/5 = 1.15/5 = 0.23
// default: bin 0 mean p 0.05, share 0.5 -> 2·0.45 = 0.9; + 0.2 + 0.85 + 0
// -> 1.95/5 = 0.39
func TestECEPromoralBinning(t *testing.T) {
	p := []float64{0, 0.1, 0.8, 0.85, 1.0}
	y := []bool{true, false, true, false, true}
	near(t, "eceStudy", eceStudy(p, y, 10), 0.23, 1e-12)
	// Every edge k/10 belongs to the bin below it: p = 0.3 with y = 0 and
	// p = 0.31 with y = 1 are in different bins ((0.2,0.3] and (0.3,0.4]),
	// so (0.3 + 0.69)/2; were 0.3 in the upper bin they would share it.
	near(t, "eceStudy edge", eceStudy([]float64{0.3, 0.31}, []bool{false, true}, 10), (0.3+0.69)/2, 1e-12)
	for k := 1; k <= 10; k++ {
		e := float64(k) / 10
		// Alone at an edge, |p − y| with y = 0 is p.
		near(t, "eceStudy at edge", eceStudy([]float64{e}, []bool{false}, 10), e, 1e-12)
	}
	// Only zeros: nothing is binned, ECE 0; NaN only when nothing at all.
	near(t, "eceStudy zeros", eceStudy([]float64{0, 0}, []bool{true, false}, 10), 0, 0)
	near(t, "eceStudy empty", eceStudy([]float64{math.NaN()}, []bool{true}, 10), math.NaN(), 0)

	task := mkTask("toy", ethicsLabels, U, []tItem{{id: "a", gold: U}, {id: "b", gold: A}, {id: "c", gold: U}, {id: "d", gold: A}, {id: "e", gold: U}}, nil)
	st := mkStudy(1, task)
	m := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Confidence: "positive", ECEPromoral: true, Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task,
		ans{model: "m", strategy: "s", item: "a", label: A, conf: 0},
		ans{model: "m", strategy: "s", item: "b", label: A, conf: 0.1},
		ans{model: "m", strategy: "s", item: "c", label: U, conf: 0.8},
		ans{model: "m", strategy: "s", item: "d", label: U, conf: 0.85},
		ans{model: "m", strategy: "s", item: "e", label: U, conf: 1.0}))
	want(t, find(t, out, "m", "s", "all", "ece_pos_promoral"), 0.23, 5)
	want(t, find(t, out, "m", "s", "all", "ece_pos"), 0.39, 5)
}

// One class only, and every answer unparsed.
func TestClassificationEdges(t *testing.T) {
	task := mkTask("toy", ethicsLabels, U, []tItem{{id: "a", gold: U}, {id: "b", gold: U}}, nil)
	st := mkStudy(1, task)
	m := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task,
		ans{model: "m", strategy: "s", item: "a", label: U, conf: 1},
		ans{model: "m", strategy: "s", item: "b", label: U, conf: 1}))
	// All gold U, all answered U: accuracy, P, R, F1 = 1; perfectly
	// calibrated (p = 1, y = 1).
	for _, k := range []string{"accuracy", "precision", "recall", "f1"} {
		want(t, find(t, out, "m", "s", "all", k), 1, 2)
	}
	want(t, find(t, out, "m", "s", "all", "brier"), 0, 2)
	want(t, find(t, out, "m", "s", "all", "ece_pos"), 0, 2)

	unparsed := []ans{{model: "m", strategy: "s", item: "a", noConf: true}, {model: "m", strategy: "s", item: "b", noConf: true}}
	out = run(t, m, mkRS(st, "wrong", task, unparsed...))
	// Counted wrong: accuracy 0 of 2; F1 0 (sklearn's zero_division=0).
	want(t, find(t, out, "m", "s", "all", "accuracy"), 0, 2)
	want(t, find(t, out, "m", "s", "all", "f1"), 0, 2)
	want(t, find(t, out, "m", "s", "all", "unparsed_rate"), 1, 2)
	if has(out, "m", "s", "all", "brier") {
		t.Error("calibration rows without any confidence")
	}
	out = run(t, m, mkRS(st, "exclude", task, unparsed...))
	// Excluded: nothing left, accuracy undefined with n = 0.
	want(t, find(t, out, "m", "s", "all", "accuracy"), math.NaN(), 0)

	// A case that failed (API error) is left out of n and counted on every
	// row of its cell (ComputeScores then withholds the value under the
	// default errors: incomplete; see score_policy_test.go).
	out = run(t, m, mkRS(st, "wrong", task,
		ans{model: "m", strategy: "s", item: "a", label: U, conf: 1},
		ans{model: "m", strategy: "s", item: "b", err: "provider down", noConf: true}))
	r := find(t, out, "m", "s", "all", "accuracy")
	want(t, r, 1, 1)
	if r.NCases != 2 || r.NErrors != 1 || r.NUnparsed != 0 {
		t.Errorf("counts: cases %d, errors %d, unparsed %d; want 2, 1, 0", r.NCases, r.NErrors, r.NUnparsed)
	}
	if has(out, "m", "s", "all", "error_rate") {
		t.Error("an error_rate row: every row carries n_errors instead")
	}
}

// Scruples-style 5-way task, support-weighted P/R/F1, and the binarized space.
//
//	gold     answer
//	AUTHOR   AUTHOR
//	AUTHOR   OTHER
//	OTHER    OTHER
//	NOBODY   INFO
//
// accuracy 2/4. AUTHOR: TP 1, FN 1 -> P 1, R 0.5, F1 2/3 (support 2).
// OTHER: TP 1, FP 1 -> P 0.5, R 1, F1 2/3 (support 1). NOBODY: F1 0
// (support 1). INFO: FP 1, support 0. EVERYBODY: nothing.
// weighted P = (2·1 + 1·0.5)/4 = 0.625; R = (2·0.5 + 1·1)/4 = 0.5;
// F1 = (2·2/3 + 1·2/3)/4 = 0.5; macro F1 over 5 labels = (4/3)/5.
// Binarized (AUTHOR/EVERYBODY -> WRONG, OTHER/NOBODY -> RIGHT, positive
// WRONG): gold W W R R, answers W R R (INFO, unmapped) -> accuracy 2/4;
// TP 1, FN 1, FP 0 -> P 1, R 0.5, F1 2/3.
func TestClassificationMultiClassAndBinarized(t *testing.T) {
	labels := []string{"AUTHOR", "OTHER", "EVERYBODY", "NOBODY", "INFO"}
	task := mkTask("scruples", labels, "", []tItem{{id: "1", gold: "AUTHOR"}, {id: "2", gold: "AUTHOR"}, {id: "3", gold: "OTHER"}, {id: "4", gold: "NOBODY"}}, nil)
	st := mkStudy(1, task)
	m := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(0),
		Binarize: &Binarize{Positive: "WRONG", Labels: map[string]string{"AUTHOR": "WRONG", "EVERYBODY": "WRONG", "OTHER": "RIGHT", "NOBODY": "RIGHT"}}})
	out := run(t, m, mkRS(st, "wrong", task,
		ans{model: "m", strategy: "s", item: "1", label: "AUTHOR", noConf: true},
		ans{model: "m", strategy: "s", item: "2", label: "OTHER", noConf: true},
		ans{model: "m", strategy: "s", item: "3", label: "OTHER", noConf: true},
		ans{model: "m", strategy: "s", item: "4", label: "INFO", noConf: true}))
	want(t, find(t, out, "m", "s", "all", "accuracy"), 0.5, 4)
	want(t, find(t, out, "m", "s", "all", "weighted_precision"), 0.625, 4)
	want(t, find(t, out, "m", "s", "all", "weighted_recall"), 0.5, 4)
	want(t, find(t, out, "m", "s", "all", "weighted_f1"), 0.5, 4)
	want(t, find(t, out, "m", "s", "all", "macro_f1"), 4.0/3/5, 4)
	// f1 means the positive class only: a task without one has none.
	for _, k := range []string{"f1", "precision", "recall"} {
		if has(out, "m", "s", "all", k) {
			t.Errorf("%s on a multi-class task without a positive class", k)
		}
	}
	want(t, find(t, out, "m", "s", "binarized", "accuracy"), 0.5, 4)
	want(t, find(t, out, "m", "s", "binarized", "precision"), 1, 4)
	want(t, find(t, out, "m", "s", "binarized", "recall"), 0.5, 4)
	want(t, find(t, out, "m", "s", "binarized", "f1"), 2.0/3, 4)
}

func TestClassificationBootstrap(t *testing.T) {
	task, answers := fiveItems()
	st := mkStudy(42, task)
	cfg := &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(200)}
	m := build(t, st, cfg)
	a := run(t, m, mkRS(st, "wrong", task, answers...))
	b := run(t, m, mkRS(st, "wrong", task, answers...))
	for _, k := range []string{"accuracy", "f1", "brier", "ece_pos"} {
		r := find(t, a, "m", "s", "all", k)
		if math.IsNaN(r.CILow) || r.CILow > r.Value+eps || r.CIHigh < r.Value-eps || r.CILow > r.CIHigh {
			t.Errorf("%s: interval [%v, %v] around %v", k, r.CILow, r.CIHigh, r.Value)
		}
		if r2 := find(t, b, "m", "s", "all", k); r2.CILow != r.CILow || r2.CIHigh != r.CIHigh {
			t.Errorf("%s: the same seed gave [%v, %v] then [%v, %v]", k, r.CILow, r.CIHigh, r2.CILow, r2.CIHigh)
		}
	}
	// Accuracy of resampled 0/1 items lies in [0, 1] and, with 5 items,
	// on a multiple of 1/5.
	r := find(t, a, "m", "s", "all", "accuracy")
	if r.CILow < 0 || r.CIHigh > 1 {
		t.Errorf("accuracy interval [%v, %v] outside [0, 1]", r.CILow, r.CIHigh)
	}
	// Another seed, another draw (same shape).
	st2 := mkStudy(43, task)
	c := run(t, build(t, st2, cfg), mkRS(st2, "wrong", task, answers...))
	same := 0
	for _, k := range []string{"accuracy", "f1", "brier", "ece_pos"} {
		x, y := find(t, a, "m", "s", "all", k), find(t, c, "m", "s", "all", k)
		if x.CILow == y.CILow && x.CIHigh == y.CIHigh {
			same++
		}
	}
	if same == 4 {
		t.Error("seeds 42 and 43 gave identical intervals on every metric")
	}
}

func TestClassificationBuildErrors(t *testing.T) {
	task, _ := fiveItems()
	multi := mkTask("multi", []string{"A", "B", "C"}, "", []tItem{{id: "1", gold: "A"}}, nil)
	nogold := mkTask("choice", []string{"A", "B"}, "-", []tItem{{id: "1"}}, nil)
	st := mkStudy(1, task, multi, nogold)
	// Values off a field's enum or bounds are decoding's to report.
	for _, tc := range []struct{ src, want string }{
		{"kind: classification\nunparsed: skip\n", `metrics[0].unparsed: unknown unparsed "skip" (use wrong or exclude)`},
		{"kind: classification\nconfidence: maybe\n", `metrics[0].confidence: unknown confidence "maybe" (use chosen or positive)`},
		{"kind: classification\nbootstrap: -1\n", `metrics[0].bootstrap: -1 is out of range`},
	} {
		_, ds := tryDecodeBuild(st, tc.src)
		if len(ds) == 0 || !strings.Contains(ds.Error(), tc.want) {
			t.Errorf("%q: diagnostics %v, want one containing %q", tc.src, ds, tc.want)
		}
	}
	for _, tc := range []struct {
		cfg  *ClassificationConfig
		want string
	}{
		{&ClassificationConfig{MetricBase: spec.MetricBase{Tasks: []string{"multi"}}, Confidence: "positive"}, "needs a binary task"},
		{&ClassificationConfig{MetricBase: spec.MetricBase{Tasks: []string{"choice"}}}, "no gold field"},
		{&ClassificationConfig{MetricBase: spec.MetricBase{Tasks: []string{"nope"}}}, `no task "nope"`},
		{&ClassificationConfig{Subsets: []string{"long"}}, `no scored task has a subset "long"`},
		{&ClassificationConfig{Binarize: &Binarize{Positive: "W", Labels: map[string]string{"X": "W", "A": "R"}}}, `"X" is not a label`},
	} {
		tc.cfg.Kind = "classification"
		_, ds := tryBuild(st, tc.cfg)
		if len(ds) == 0 || !strings.Contains(ds.Error(), tc.want) {
			t.Errorf("%+v: diagnostics %v, want one containing %q", tc.cfg, ds, tc.want)
		}
	}
}

// With repeats, classification intervals resample items, each with all
// its samples. 40 items sampled 5 times, every item's samples alike (half
// the items right): the clustered interval is as wide as the interval of
// the 40 items sampled once, where treating the 200 samples as
// independent gives one about √5 times narrower.
func TestClassificationIntervalsResampleItemsUnderRepeats(t *testing.T) {
	var items []tItem
	for i := 0; i < 40; i++ {
		items = append(items, tItem{id: fmt.Sprint(i), gold: "yes"})
	}
	task := mkTask("toy", []string{"yes", "no"}, "yes", items, nil)
	answers := func(k int) []ans {
		var out []ans
		for i := 0; i < 40; i++ {
			label := "yes"
			if i%2 == 1 {
				label = "no"
			}
			for range k {
				out = append(out, ans{model: "m", strategy: "s", item: fmt.Sprint(i), label: label, conf: 0.6 + 0.01*float64(i%7)})
			}
		}
		return out
	}
	accuracy := func(st *spec.Study, k int) spec.MetricRow {
		m := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(4000)})
		return find(t, run(t, m, mkRS(st, "wrong", task, answers(k)...)), "m", "s", "all", "accuracy")
	}
	once := accuracy(mkStudy(1, task), 1)
	repeated := mkStudy(1, task)
	repeated.Cells = []spec.ResolvedCell{{Task: task, Repeat: 0}, {Task: task, Repeat: 4}}
	clustered := accuracy(repeated, 5)
	naive := accuracy(mkStudy(1, task), 5) // the same 200 rows, the study saying no repeats
	width := func(r spec.MetricRow) float64 { return r.CIHigh - r.CILow }
	t.Logf("interval widths: 40 items once %.4f, 5 repeats clustered %.4f, 200 samples as independent %.4f", width(once), width(clustered), width(naive))
	if clustered.Value != 0.5 || clustered.N != 200 {
		t.Fatalf("accuracy %v over %d; want 0.5 over 200 samples", clustered.Value, clustered.N)
	}
	if r := width(clustered) / width(once); r < 0.85 || r > 1.15 {
		t.Errorf("clustered width / the items' own width = %.3f; want about 1", r)
	}
	if r := width(naive) / width(once); r > 0.6 {
		t.Errorf("samples as independent: width ratio %.3f; want about 1/√5", r)
	}
	if !strings.Contains(clustered.Convention, spec.ClusteredNote) || strings.Contains(naive.Convention, spec.ClusteredNote) {
		t.Errorf("conventions: repeated %q, not repeated %q", clustered.Convention, naive.Convention)
	}
	for _, metric := range []string{"f1", "brier", "ece_pos"} {
		r := find(t, run(t, build(t, repeated, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(200)}),
			mkRS(repeated, "wrong", task, answers(5)...)), "m", "s", "all", metric)
		if math.IsNaN(r.CILow) || !strings.Contains(r.Convention, spec.ClusteredNote) {
			t.Errorf("%s under repeats: interval [%v, %v], convention %q", metric, r.CILow, r.CIHigh, r.Convention)
		}
	}
}
