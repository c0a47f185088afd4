package metrics

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// A cell of 100 answers with nright right ones: the right answers' confidences
// spread over 0.50-0.99, the wrong ones' near the middle, so ρ is small
// and far from significant.
func rightWrongCell(nright int) (*spec.Task, []ans) {
	var items []tItem
	var answers []ans
	for i := range 100 {
		id := fmt.Sprintf("i%d", i)
		items = append(items, tItem{id: id, gold: U})
		a := ans{model: "m", strategy: "s", item: id, label: U, conf: 0.5 + float64(i%50)/100}
		if i >= nright {
			a.label, a.conf = A, 0.7+float64(i%3)/100
		}
		answers = append(answers, a)
	}
	return mkTask("ethics", ethicsLabels, U, items, nil), answers
}

// The case: 98 right and 2 wrong. A resample holds no wrong answer
// with probability 0.98^100 ≈ 13%, and then ρ is undefined; dropping those
// replicates silently left an interval that excluded 0 while p = 0.84. The
// row counts them, and as they are more than 5% of the replicates, neither
// ρ nor its p nor the interval is given (status too_few), and the row says
// why. With 4 wrong (0.96^100 ≈ 1.7% undefined) the interval stands and
// the row counts what it left out; with 20 wrong none is undefined.
func TestSpearmanUndefinedReplicates(t *testing.T) {
	for _, c := range []struct {
		nright       int
		status       string
		lowU, highU  int // expected range of undefined replicates of 1000
		conventionIs string
	}{
		{98, spec.StatusTooFew, 90, 180, "too_few: "},
		{96, "", 5, 40, "left out of the 95% interval (up to 5% may be)"},
		{80, "", 0, 0, ""},
	} {
		task, answers := rightWrongCell(c.nright)
		st := mkStudy(3, task)
		out := run(t, build(t, st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}}), mkRS(st, "wrong", task, answers...))
		rho := find(t, out, "m", "s", "all", "spearman_rho")
		p := find(t, out, "m", "s", "all", "spearman_p")
		if rho.Status != c.status || p.Status != c.status {
			t.Errorf("%d right: status %q and %q, want %q", c.nright, rho.Status, p.Status, c.status)
		}
		if rho.CIReps != 1000 || rho.CIUndefined < c.lowU || rho.CIUndefined > c.highU {
			t.Errorf("%d right: %d of %d replicates undefined, want %d-%d of 1000", c.nright, rho.CIUndefined, rho.CIReps, c.lowU, c.highU)
		}
		if c.conventionIs != "" && !strings.Contains(rho.Convention, c.conventionIs) {
			t.Errorf("%d right: convention %q does not say %q", c.nright, rho.Convention, c.conventionIs)
		}
		if c.conventionIs == "" && strings.Contains(rho.Convention, "replicates") {
			t.Errorf("%d right: convention %q speaks of undefined replicates", c.nright, rho.Convention)
		}
		if c.status == spec.StatusTooFew {
			if !strings.Contains(rho.Convention, fmt.Sprintf("%d of 1000 bootstrap replicates have no defined value, more than the 5%% a 95%% interval", rho.CIUndefined)) {
				t.Errorf("the withheld row does not state the count and the threshold: %q", rho.Convention)
			}
			if cell := cellOf(t, table(t, out, "confidence_correct_vs_incorrect"), "spearman_status", "m", "s", "ethics"); cell != spec.StatusTooFew {
				t.Errorf("confidence_correct_vs_incorrect.csv spearman_status %q", cell)
			}
			// The point estimate exists: only the bootstrap is unstable.
			bare := run(t, build(t, st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}, Bootstrap: intp(0)}), mkRS(st, "wrong", task, answers...))
			if r := find(t, bare, "m", "s", "all", "spearman_p"); r.Status != "" || !(r.Value > 0.5) {
				t.Errorf("without intervals: p = %v (status %q), want a large p", r.Value, r.Status)
			}
			continue
		}
		if math.IsNaN(rho.CILow) || rho.CILow > rho.Value || rho.CIHigh < rho.Value {
			t.Errorf("%d right: interval [%v, %v] around %v", c.nright, rho.CILow, rho.CIHigh, rho.Value)
		}
	}
}

// Every bootstrapped figure counts its undefined replicates: the Brier
// score of a cell where one answer of 60 states a confidence is undefined
// in a resample without that answer, (59/60)^60 ≈ 36% of them.
func TestClassificationUndefinedReplicates(t *testing.T) {
	var items []tItem
	var answers []ans
	for i := range 60 {
		id := fmt.Sprintf("i%d", i)
		items = append(items, tItem{id: id, gold: A})
		a := ans{model: "m", strategy: "s", item: id, label: A, noConf: true}
		if i == 0 {
			a.noConf, a.conf = false, 0.8
		}
		answers = append(answers, a)
	}
	task := mkTask("ethics", ethicsLabels, U, items, nil)
	st := mkStudy(5, task)
	out := run(t, build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}}), mkRS(st, "wrong", task, answers...))
	brier := find(t, out, "m", "s", "all", "brier")
	if brier.Status != spec.StatusTooFew || brier.CIUndefined < 300 || brier.CIUndefined > 430 || brier.CIReps != 1000 || !math.IsNaN(brier.CILow) {
		t.Errorf("brier: status %q, %d of %d undefined, interval [%v, %v]", brier.Status, brier.CIUndefined, brier.CIReps, brier.CILow, brier.CIHigh)
	}
	acc := find(t, out, "m", "s", "all", "accuracy")
	if acc.Status != "" || acc.CIReps != 1000 || acc.CIUndefined != 0 {
		t.Errorf("accuracy: status %q, %d of %d undefined", acc.Status, acc.CIUndefined, acc.CIReps)
	}
	bare := run(t, build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(0)}), mkRS(st, "wrong", task, answers...))
	if r := find(t, bare, "m", "s", "all", "brier"); r.Status != "" || r.CIReps != 0 || math.Abs(r.Value-0.04) > 1e-12 {
		t.Errorf("without intervals: brier %v (status %q, %d replicates), want 0.04", r.Value, r.Status, r.CIReps)
	}
}
