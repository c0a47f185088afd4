package metrics

import (
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// A Scruples-like multi-class task and a binary task without a positive
// class get the top-label Brier, mean((confidence − correct)²), with its
// convention on the row:
//
//	item  gold      answer    conf  correct  (conf − correct)²
//	s1    AUTHOR    AUTHOR    0.9   1        0.01
//	s2    OTHER     AUTHOR    0.6   0        0.36
//	s3    NOBODY    NOBODY    0.5   1        0.25
//	s4    EVERYBODY OTHER     0.2   0        0.04
//	s5    AUTHOR    (none)    -     -        left out
//
// Brier = (0.01 + 0.36 + 0.25 + 0.04)/4 = 0.165.
func brierAnswers() []ans {
	return []ans{
		{model: "m", strategy: "s", item: "s1", label: "AUTHOR", conf: 0.9},
		{model: "m", strategy: "s", item: "s2", label: "AUTHOR", conf: 0.6},
		{model: "m", strategy: "s", item: "s3", label: "NOBODY", conf: 0.5},
		{model: "m", strategy: "s", item: "s4", label: "OTHER", conf: 0.2},
		{model: "m", strategy: "s", item: "s5", label: "AUTHOR", noConf: true},
	}
}

func brierTask(positive string) *spec.Task {
	return mkTask("scruples", []string{"AUTHOR", "OTHER", "EVERYBODY", "NOBODY"}, positive, []tItem{
		{id: "s1", gold: "AUTHOR"}, {id: "s2", gold: "OTHER"}, {id: "s3", gold: "NOBODY"}, {id: "s4", gold: "EVERYBODY"}, {id: "s5", gold: "AUTHOR"},
	}, nil)
}

func TestTopLabelBrierMultiClass(t *testing.T) {
	task := brierTask("")
	st := mkStudy(7, task)
	out := run(t, build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(200)}), mkRS(st, "wrong", task, brierAnswers()...))
	r := find(t, out, "m", "s", "all", "brier")
	want(t, r, 0.165, 4)
	if !strings.HasPrefix(r.Convention, "top-label") || !strings.Contains(r.Convention, "1 right, 0 wrong") {
		t.Errorf("convention %q does not name the top-label Brier", r.Convention)
	}
	if !(r.CILow <= 0.165 && 0.165 <= r.CIHigh) {
		t.Errorf("interval [%v, %v] does not hold the estimate", r.CILow, r.CIHigh)
	}
	if has(out, "m", "s", "all", "ece_pos") {
		t.Error("ece_pos reported without a positive class")
	}

	// The confidence study reports the same figure.
	cs := run(t, build(t, st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}, Bootstrap: intp(200)}), mkRS(st, "wrong", task, brierAnswers()...))
	r = find(t, cs, "m", "s", "all", "brier")
	want(t, r, 0.165, 4)
	if !strings.HasPrefix(r.Convention, "top-label") || !(r.CILow <= 0.165 && 0.165 <= r.CIHigh) {
		t.Errorf("confidence_study brier: convention %q, interval [%v, %v]", r.Convention, r.CILow, r.CIHigh)
	}
}

// Two labels and no answer.positive: no P(positive) to score, so the
// top-label Brier. With a positive class the row keeps P(positive), which
// equals the top-label figure when the confidence is in the chosen answer.
func TestTopLabelBrierBinaryWithoutPositive(t *testing.T) {
	items := []tItem{{id: "b1", gold: "YES"}, {id: "b2", gold: "NO"}, {id: "b3", gold: "NO"}}
	answers := []ans{
		{model: "m", strategy: "s", item: "b1", label: "YES", conf: 0.8}, // (0.8 − 1)² = 0.04
		{model: "m", strategy: "s", item: "b2", label: "YES", conf: 0.7}, // 0.49
		{model: "m", strategy: "s", item: "b3", label: "NO", conf: 0.6},  // 0.16
	}
	for _, positive := range []string{"", "YES"} {
		task := mkTask("yn", []string{"YES", "NO"}, positive, items, nil)
		st := mkStudy(7, task)
		out := run(t, build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(0)}), mkRS(st, "wrong", task, answers...))
		r := find(t, out, "m", "s", "all", "brier")
		want(t, r, (0.04+0.49+0.16)/3, 3)
		top := strings.HasPrefix(r.Convention, "top-label")
		if top != (positive == "") {
			t.Errorf("positive %q: convention %q", positive, r.Convention)
		}
	}
}
