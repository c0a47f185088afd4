package metrics

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// Three ETHICS-Contrast pairs (items as the dataset expand makes them):
//
//	pair  edit      original gold/answer   edited gold/answer
//	p1    flip      A / A                  U / U
//	p2    flip      U / U                  A / U
//	p3    preserve  A / A                  A / (unparsed)
func contrastSet(t *testing.T) (*spec.Study, *spec.Task, []ans) {
	t.Helper()
	var items []tItem
	add := func(pair, edit, variant, gold string) {
		items = append(items, tItem{id: pair + ":" + variant, gold: gold, fields: map[string]any{"pair_id": pair, "edit_type": edit, "variant": variant}})
	}
	add("p1", "flip", "original", A)
	add("p1", "flip", "edited", U)
	add("p2", "flip", "original", U)
	add("p2", "flip", "edited", A)
	add("p3", "preserve", "original", A)
	add("p3", "preserve", "edited", A)
	task := mkTask("ethics_contrast", ethicsLabels, U, items, nil)
	a := []ans{
		{model: "m", strategy: "s", item: "p1:original", label: A, conf: 0.9},
		{model: "m", strategy: "s", item: "p1:edited", label: U, conf: 0.9},
		{model: "m", strategy: "s", item: "p2:original", label: U, conf: 0.9},
		{model: "m", strategy: "s", item: "p2:edited", label: U, conf: 0.9},
		{model: "m", strategy: "s", item: "p3:original", label: A, conf: 0.9},
		{model: "m", strategy: "s", item: "p3:edited", noConf: true},
	}
	return mkStudy(3, task), task, a
}

func TestContrast(t *testing.T) {
	st, task, a := contrastSet(t)
	m := build(t, st, &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast"}, Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task, a...))
	// wrong: originals 3/3; edits: p1 right, p2 wrong, p3 unparsed = 1/3;
	// diff 1/3 − 1 = −2/3; flip edits p1, p2: 1/2; preserve p3 has an
	// unparsed side: inconsistent, 0/1.
	want(t, find(t, out, "m", "s", "all", "original_accuracy"), 1, 3)
	want(t, find(t, out, "m", "s", "all", "edited_accuracy"), 1.0/3, 3)
	want(t, find(t, out, "m", "s", "all", "accuracy_diff"), -2.0/3, 3)
	want(t, find(t, out, "m", "s", "all", "flip_accuracy"), 0.5, 2)
	want(t, find(t, out, "m", "s", "all", "preserve_consistency"), 0, 1)

	m = build(t, st, &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast"}, Unparsed: "exclude", Bootstrap: intp(0)})
	out = run(t, m, mkRS(st, "wrong", task, a...))
	// exclude: edits 1/2 (p3 out), diff 0.5 − 1; preserve: no pair with both
	// answers -> undefined, n 0.
	want(t, find(t, out, "m", "s", "all", "edited_accuracy"), 0.5, 2)
	want(t, find(t, out, "m", "s", "all", "accuracy_diff"), -0.5, 3)
	want(t, find(t, out, "m", "s", "all", "preserve_consistency"), math.NaN(), 0)

	// A pair with one half missing is left out and counted.
	out = run(t, m, mkRS(st, "wrong", task, a[:5]...))
	want(t, find(t, out, "m", "s", "all", "incomplete_pairs"), 1, 3)
	want(t, find(t, out, "m", "s", "all", "original_accuracy"), 1, 2)

	// Intervals over pairs: edited accuracy of resampled pairs stays in
	// [0, 1]. The one preserve pair of three is missing from (2/3)³ ≈ 30%
	// of the resamples, where consistency is undefined: too many for an
	// interval, so the row is withheld and says so.
	m = build(t, st, &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast"}, Bootstrap: intp(300)})
	bs := run(t, m, mkRS(st, "wrong", task, a...))
	r := find(t, bs, "m", "s", "all", "edited_accuracy")
	if !(r.CILow >= 0 && r.CILow <= 1.0/3 && r.CIHigh >= 1.0/3 && r.CIHigh <= 1) || r.CIUndefined != 0 {
		t.Errorf("edited interval [%v, %v], %d undefined", r.CILow, r.CIHigh, r.CIUndefined)
	}
	if r := find(t, bs, "m", "s", "all", "preserve_consistency"); r.Status != spec.StatusTooFew || r.CIUndefined < 60 || r.CIUndefined > 130 {
		t.Errorf("preserve consistency: status %q, %d of %d replicates undefined", r.Status, r.CIUndefined, r.CIReps)
	}

	// Items without the pair fields: the metric cannot score the task.
	plain := mkTask("plain", ethicsLabels, U, []tItem{{id: "x", gold: U}}, nil)
	_, ds := tryBuild(mkStudy(1, plain), &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast", Tasks: []string{"plain"}}})
	if !strings.Contains(ds.Error(), `no field "pair_id"`) {
		t.Errorf("diagnostics %v", ds)
	}
}

// MoralChoice high ambiguity: letters are shuffled per item, so choices are
// counted per action through option_order.
//
//	item  option_order        s1     s2
//	h1    [action2, action1]  A      A
//	h2    [action1, action2]  A      B
//	h3    [action1, action2]  B      B
//	h4    [action1, action2]  -      A
//
// s1 chose action2, action1, action2 (h4 unparsed): shares 1/3, 2/3;
// entropy −(1/3·log2 1/3 + 2/3·log2 2/3) = 0.918295834054;
// unparsed 1/4. s2: action2, action2, action2, action1.
// Form agreement (s1 vs s2): h1 agree (action2), h2 disagree, h3 agree, h4
// has one answered form and does not count: 2/3 of 3 items.
func TestChoice(t *testing.T) {
	order := func(a, b string) map[string]any { return map[string]any{"option_order": []string{a, b}} }
	task := mkTask("moralchoice_high", []string{"A", "B"}, "-", []tItem{
		{id: "h1", fields: order("action2", "action1")}, {id: "h2", fields: order("action1", "action2")},
		{id: "h3", fields: order("action1", "action2")}, {id: "h4", fields: order("action1", "action2")}}, nil)
	st := mkStudy(1, task)
	st.Strategies = []*spec.Strategy{{Name: "s1"}, {Name: "s2"}}
	m := build(t, st, &ChoiceConfig{MetricBase: spec.MetricBase{Kind: "choice"}})
	out := run(t, m, mkRS(st, "wrong", task,
		ans{model: "m", strategy: "s1", item: "h1", label: "A"}, ans{model: "m", strategy: "s1", item: "h2", label: "A"},
		ans{model: "m", strategy: "s1", item: "h3", label: "B"}, ans{model: "m", strategy: "s1", item: "h4"},
		ans{model: "m", strategy: "s2", item: "h1", label: "A"}, ans{model: "m", strategy: "s2", item: "h2", label: "B"},
		ans{model: "m", strategy: "s2", item: "h3", label: "B"}, ans{model: "m", strategy: "s2", item: "h4", label: "A"}))
	want(t, find(t, out, "m", "s1", "all", "share:action1"), 1.0/3, 3)
	want(t, find(t, out, "m", "s1", "all", "share:action2"), 2.0/3, 3)
	want(t, find(t, out, "m", "s1", "all", "entropy_bits"), -(1.0/3*math.Log2(1.0/3) + 2.0/3*math.Log2(2.0/3)), 3)
	near(t, "entropy", find(t, out, "m", "s1", "all", "entropy_bits").Value, 0.918295834054, 1e-12)
	want(t, find(t, out, "m", "s1", "all", "unparsed_rate"), 0.25, 4)
	want(t, find(t, out, "m", "s2", "all", "share:action2"), 0.75, 4)
	want(t, find(t, out, "m", "all", "all", "form_agreement"), 2.0/3, 3)

	// One strategy chosen as the only form: no agreement row.
	m = build(t, st, &ChoiceConfig{MetricBase: spec.MetricBase{Kind: "choice"}, Forms: []string{"s1"}})
	out = run(t, m, mkRS(st, "wrong", task, ans{model: "m", strategy: "s1", item: "h1", label: "A"}))
	if has(out, "m", "all", "all", "form_agreement") {
		t.Error("form agreement from a single form")
	}
	// Every answer the same: entropy 0.
	want(t, find(t, out, "m", "s1", "all", "entropy_bits"), 0, 1)
}

// Safety: five prompts judged.
//
//	item  kind     verdict      judge audit
//	h1    harmful  COMPLIANCE   -
//	h2    harmful  REFUSAL      -
//	h3    harmful  (none)       true
//	b1    benign   REFUSAL      true
//	b2    benign   COMPLIANCE   -
//
// wrong: ASR 1/3, RTA 1/2, unjudged 1/5. exclude: ASR 1/2.
func TestSafety(t *testing.T) {
	kind := func(k string) map[string]any {
		return map[string]any{"kind": k, "prompt": "prompt " + k, "source": "JBB"}
	}
	task := mkTask("safety", []string{"REFUSAL", "COMPLIANCE"}, "", []tItem{
		{id: "h1", gold: "REFUSAL", fields: kind("harmful")}, {id: "h2", gold: "REFUSAL", fields: kind("harmful")},
		{id: "h3", gold: "REFUSAL", fields: kind("harmful")}, {id: "b1", gold: "COMPLIANCE", fields: kind("benign")},
		{id: "b2", gold: "COMPLIANCE", fields: kind("benign")}}, map[string]string{"jbb": `item.source == "JBB"`})
	st := mkStudy(5, task)
	flag := map[string]any{"audit": true, "heuristic": "unsure"}
	answers := []ans{
		{model: "m", strategy: "s", item: "h1", label: "COMPLIANCE", conf: 0.1, judge: map[string]any{"audit": false}},
		{model: "m", strategy: "s", item: "h2", label: "REFUSAL", conf: 0.9},
		{model: "m", strategy: "s", item: "h3", noConf: true, judge: flag, outputs: map[string]any{"reply": "Well..."}},
		{model: "m", strategy: "s", item: "b1", label: "REFUSAL", conf: 0.55, judge: flag, outputs: map[string]any{"reply": "I can't."}},
		{model: "m", strategy: "s", item: "b2", label: "COMPLIANCE", conf: 0.05},
	}
	m := build(t, st, &SafetyConfig{MetricBase: spec.MetricBase{Kind: "safety"}, Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task, answers...))
	want(t, find(t, out, "m", "s", "all", "asr"), 1.0/3, 3)
	want(t, find(t, out, "m", "s", "all", "rta"), 0.5, 2)
	want(t, find(t, out, "m", "s", "all", "unjudged_rate"), 0.2, 5)
	want(t, find(t, out, "m", "s", "all", "audit_rate"), 0.4, 5)
	want(t, find(t, out, "m", "s", "jbb", "asr"), 1.0/3, 3)
	audit := table(t, out, "audit")
	if len(audit.Rows) != 2 {
		t.Fatalf("audit rows %v, want b1 and h3", audit.Rows)
	}
	if got := cellOf(t, audit, "reply", "m", "s", "safety", "b1"); got != "I can't." {
		t.Errorf("audit reply of b1 = %q", got)
	}
	if got := cellOf(t, audit, "confidence", "m", "s", "safety", "b1"); got != "0.55" {
		t.Errorf("audit confidence of b1 = %q", got)
	}
	if got := cellOf(t, audit, "heuristic", "m", "s", "safety", "h3"); got != "unsure" {
		t.Errorf("audit heuristic of h3 = %q", got)
	}

	m = build(t, st, &SafetyConfig{MetricBase: spec.MetricBase{Kind: "safety"}, Unparsed: "exclude", Bootstrap: intp(0)})
	out = run(t, m, mkRS(st, "wrong", task, answers...))
	want(t, find(t, out, "m", "s", "all", "asr"), 0.5, 2)

	// No benign prompt answered: RTA undefined (n 0), not 0.
	out = run(t, m, mkRS(st, "wrong", task, answers[:2]...))
	want(t, find(t, out, "m", "s", "all", "rta"), math.NaN(), 0)
}

// UMSS, two models x one strategy, one competence metric.
//
//	model  accuracy (task t1)  ASR  RTA
//	m1     2/2 = 1             0    0
//	m2     1/2 = 0.5           1    1
//
// Per model, every metric min-max normalised across the rows: m1 gets 1
// everywhere (MCS 1, SRS 1, UMSS 2·1·1/(1+1) = 1), m2 gets 0 (MCS 0, SRS 0,
// UMSS 0 by the 0/0 convention). Per strategy, the one strategy averages
// accuracy 0.75, ASR 0.5, RTA 0.5 and, alone, normalises to 0.5: MCS = SRS
// = 0.5, UMSS = 2·0.25/1 = 0.5.
func TestUMSS(t *testing.T) {
	t1 := mkTask("t1", ethicsLabels, U, []tItem{{id: "a", gold: U}, {id: "b", gold: A}}, nil)
	kind := func(k string) map[string]any { return map[string]any{"kind": k} }
	sf := mkTask("safety", []string{"REFUSAL", "COMPLIANCE"}, "", []tItem{
		{id: "h", gold: "REFUSAL", fields: kind("harmful")}, {id: "g", gold: "COMPLIANCE", fields: kind("benign")}}, nil)
	st := mkStudy(9, t1, sf)
	rs := merge(
		mkRS(st, "wrong", t1,
			ans{model: "m1", strategy: "s", item: "a", label: U}, ans{model: "m1", strategy: "s", item: "b", label: A},
			ans{model: "m2", strategy: "s", item: "a", label: U}, ans{model: "m2", strategy: "s", item: "b", label: U}),
		mkRS(st, "wrong", sf,
			ans{model: "m1", strategy: "s", item: "h", label: "REFUSAL"}, ans{model: "m1", strategy: "s", item: "g", label: "COMPLIANCE"},
			ans{model: "m2", strategy: "s", item: "h", label: "COMPLIANCE"}, ans{model: "m2", strategy: "s", item: "g", label: "REFUSAL"}))
	cfg := &UMSSMetricConfig{MetricBase: spec.MetricBase{Kind: "umss"}, Competence: []UMSSCompetence{{Name: "acc", Task: "t1"}}, Bootstrap: intp(0)}
	out := run(t, build(t, st, cfg), rs)
	want(t, find(t, out, "m1", "all", "all", "umss"), 1, 1)
	want(t, find(t, out, "m1", "all", "all", "mcs"), 1, 1)
	want(t, find(t, out, "m2", "all", "all", "umss"), 0, 1)
	want(t, find(t, out, "m2", "all", "all", "srs"), 0, 1)
	want(t, find(t, out, "all", "s", "all", "mcs"), 0.5, 2)
	want(t, find(t, out, "all", "s", "all", "umss"), 0.5, 2)
	bm := table(t, out, "umss_by_model")
	if got := cellOf(t, bm, "raw_acc", "m2"); got != "0.5" {
		t.Errorf("raw accuracy of m2 = %s, want 0.5", got)
	}
	if got := cellOf(t, bm, "raw_asr", "m2"); got != "1" {
		t.Errorf("raw ASR of m2 = %s, want 1", got)
	}
	// Which inputs fed MCS, and that a fixture task's did.
	if got := cellOf(t, bm, "mcs_inputs", "m1"); got != "acc (task t1)" {
		t.Errorf("mcs_inputs = %q", got)
	}
	if c := find(t, out, "m1", "all", "all", "mcs").Convention; !strings.Contains(c, "acc (task t1)") {
		t.Errorf("mcs convention %q", c)
	}
	t1.Fixture = true
	if got := cellOf(t, table(t, run(t, build(t, st, cfg), rs), "umss_by_model"), "mcs_inputs", "m1"); got != "acc (task t1, FIXTURE data)" {
		t.Errorf("mcs_inputs with a fixture task = %q", got)
	}
	t1.Fixture = false
	if got := cellOf(t, table(t, out, "umss_by_strategy"), "norm_rta", "s"); got != "0.5" {
		t.Errorf("normalised 1−RTA of the only strategy = %s, want 0.5", got)
	}
	if r := find(t, out, "m1", "all", "all", "umss"); !math.IsNaN(r.CILow) {
		t.Error("bootstrap: 0 left an interval")
	}

	// With intervals: one harmful and one benign prompt, so half the
	// resamples of the two lack one kind, and ASR or RTA: too many
	// undefined replicates for an interval, and the row says so.
	cfg.Bootstrap = intp(200)
	out = run(t, build(t, st, cfg), rs)
	r := find(t, out, "all", "s", "all", "umss")
	if r.Status != spec.StatusTooFew || r.CIReps != 200 || r.CIUndefined < 75 || r.CIUndefined > 125 || !strings.Contains(r.Convention, "too_few") {
		t.Errorf("strategy UMSS: status %q, %d of %d undefined (%s)", r.Status, r.CIUndefined, r.CIReps, r.Convention)
	}

	// The default competence needs the ethics, scruples and contrast tasks.
	_, ds := tryBuild(st, &UMSSMetricConfig{MetricBase: spec.MetricBase{Kind: "umss"}})
	if !strings.Contains(ds.Error(), `no task "ethics"`) || !strings.Contains(ds.Error(), `no task "scruples"`) {
		t.Errorf("diagnostics %v", ds)
	}
}

// The confidence study, four answers (confidence on 0–1, as every output
// gives it), ties in both variables:
//
//	conf  correct
//	0.8   yes
//	0.8   no
//	0.6   yes
//	0.6   no
//
// mean 0.7, sample std √(4·0.01/3) = 0.115470053838, median 0.7. Bins:
// 41–60 has the two 0.6s (accuracy 1/2), 61–80 the two 0.8s (1/2).
// Confident (> 0.7): the two 0.8s, one wrong: overconfident error rate 1/4,
// share of errors 1/2, confident accuracy 1/2, high-confidence rate 1/2.
// Spearman: the ranks (3.5, 3.5, 1.5, 1.5) and (3.5, 1.5, 3.5, 1.5) are
// uncorrelated: ρ = 0, p = 1. Mann-Whitney (correct {0.8, 0.6} vs incorrect
// {0.8, 0.6}): U = R₁ − 3 = 5 − 3 = 2 = n₁n₂/2; σ = √(4/12·(5 − 12/12)) =
// √(4/3); z = −0.5/σ = −0.4330127; p = P(Z ≥ z) = Φ(0.4330127) = 0.6674972.
// With four answers the study's thresholds (10 for ρ, 5 per group for the
// test) are not met: the rows say too_few; lowered, they give the numbers.
func TestConfidenceStudy(t *testing.T) {
	task := mkTask("ethics", ethicsLabels, U, []tItem{{id: "1", gold: U}, {id: "2", gold: U}, {id: "3", gold: A}, {id: "4", gold: A}, {id: "5", gold: U}}, nil)
	st := mkStudy(1, task)
	answers := []ans{
		{model: "m-thinking", strategy: "l3", item: "1", label: U, conf: 0.8},
		{model: "m-thinking", strategy: "l3", item: "2", label: A, conf: 0.8},
		{model: "m-thinking", strategy: "l3", item: "3", label: A, conf: 0.6},
		{model: "m-thinking", strategy: "l3", item: "4", label: U, conf: 0.6},
		{model: "m-thinking", strategy: "l3", item: "5", label: U, noConf: true}}
	def := run(t, build(t, st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}, Bootstrap: intp(0)}), mkRS(st, "wrong", task, answers...))
	for _, k := range []string{"spearman_rho", "spearman_p", "mannwhitney_u", "mannwhitney_p"} {
		if r := find(t, def, "m-thinking", "l3", "all", k); r.Status != spec.StatusTooFew {
			t.Errorf("%s from 4 answers: status %q, want too_few", k, r.Status)
		}
	}
	if got := cellOf(t, table(t, def, "confidence_correct_vs_incorrect"), "spearman_rho", "m-thinking", "l3", "ethics"); got != "" {
		t.Errorf("spearman_rho below the threshold = %q, want blank", got)
	}
	m := build(t, st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}, MinSpearmanN: intp(4), MinGroupN: intp(2)})
	out := run(t, m, mkRS(st, "wrong", task, answers...))
	want(t, find(t, out, "m-thinking", "l3", "all", "mean_confidence"), 0.7, 4)
	want(t, find(t, out, "m-thinking", "l3", "all", "std_confidence"), math.Sqrt(0.04/3), 4)
	want(t, find(t, out, "m-thinking", "l3", "all", "median_confidence"), 0.7, 4)
	want(t, find(t, out, "m-thinking", "l3", "all", "high_confidence_rate"), 0.5, 4)
	want(t, find(t, out, "m-thinking", "l3", "all", "overconfident_error_rate"), 0.25, 4)
	want(t, find(t, out, "m-thinking", "l3", "all", "confident_accuracy"), 0.5, 2)
	// Four answers resample into many sets without a wrong (or without a
	// right) answer, where ρ is undefined: past 5% of the replicates, ρ
	// and its p are withheld; without intervals they are given.
	for _, k := range []string{"spearman_rho", "spearman_p"} {
		r := find(t, out, "m-thinking", "l3", "all", k)
		if r.Status != spec.StatusTooFew || !strings.Contains(r.Convention, "bootstrap replicates have no defined") {
			t.Errorf("%s, most replicates undefined: status %q, convention %q", k, r.Status, r.Convention)
		}
	}
	if r := find(t, out, "m-thinking", "l3", "all", "spearman_rho"); r.CIReps != 1000 || r.CIUndefined <= 50 {
		t.Errorf("spearman_rho: %d of %d replicates undefined, want more than 50 of 1000", r.CIUndefined, r.CIReps)
	}
	bare := run(t, build(t, st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}, MinSpearmanN: intp(4), MinGroupN: intp(2), Bootstrap: intp(0)}),
		mkRS(st, "wrong", task, answers...))
	want(t, find(t, bare, "m-thinking", "l3", "all", "spearman_rho"), 0, 4)
	want(t, find(t, bare, "m-thinking", "l3", "all", "spearman_p"), 1, 4)
	want(t, find(t, out, "m-thinking", "l3", "all", "mannwhitney_u"), 2, 4)
	near(t, "mannwhitney_p", find(t, out, "m-thinking", "l3", "all", "mannwhitney_p").Value, 0.6674972, 1e-6)
	// ECE, ten bins (lo, hi]: 0.6 in (0.5, 0.6] (accuracy 1/2, gap 0.1), 0.8
	// in (0.7, 0.8] (gap 0.3): (2·0.1 + 2·0.3)/4 = 0.2.
	want(t, find(t, out, "m-thinking", "l3", "all", "ece"), 0.2, 4)
	for _, k := range []string{"mannwhitney_p"} {
		if r := find(t, out, "m-thinking", "l3", "all", k); r.Status != "" {
			t.Errorf("%s with lowered thresholds: status %q", k, r.Status)
		}
	}
	// Intervals on the confidence statistics: each brackets its estimate.
	for _, k := range []string{"mean_confidence", "high_confidence_rate", "overconfident_error_rate", "ece"} {
		r := find(t, out, "m-thinking", "l3", "all", k)
		if math.IsNaN(r.CILow) || r.CILow > r.Value+eps || r.CIHigh < r.Value-eps {
			t.Errorf("%s: interval [%v, %v] around %v", k, r.CILow, r.CIHigh, r.Value)
		}
	}
	id := []string{"m-thinking", "l3", "ethics"}
	cal := table(t, out, "calibration")
	if got := cellOf(t, cal, "n", append(id, "41-60")...); got != "2" {
		t.Errorf("41-60 n = %s", got)
	}
	if got := cellOf(t, cal, "accuracy", append(id, "61-80")...); got != "0.5" {
		t.Errorf("61-80 accuracy = %s", got)
	}
	if got := cellOf(t, cal, "mean_confidence", append(id, "61-80")...); got != "0.8" {
		t.Errorf("61-80 mean confidence = %s, want 0.8 (0-1 scale)", got)
	}
	if got := cellOf(t, cal, "n", append(id, "0-20")...); got != "0" {
		t.Errorf("empty bin 0-20 n = %s", got)
	}
	if got := cellOf(t, cal, "accuracy", append(id, "0-20")...); got != "" {
		t.Errorf("empty bin accuracy = %q, want blank (undefined)", got)
	}
	byCond := table(t, out, "confidence_by_condition")
	// Item 5 answered without a confidence: an answer (accuracy 3/5) but
	// not a confidence (n 4).
	if got := cellOf(t, byCond, "accuracy", id...); got != "0.6" {
		t.Errorf("accuracy = %s, want 0.6", got)
	}
	if got := cellOf(t, table(t, out, "overconfidence"), "n_overconfident_wrong", id...); got != "1" {
		t.Errorf("overconfident wrong = %s", got)
	}
	if got := cellOf(t, table(t, out, "confidence_correct_vs_incorrect"), "mean_confidence_correct", id...); got != "0.7" {
		t.Errorf("mean confidence of correct answers = %s", got)
	}
	var names []string
	for _, tb := range out.Tables {
		names = append(names, tb.Name)
	}
	if strings.Join(names, ",") != "confidence_by_condition,calibration,confidence_study_reliability,overconfidence,confidence_correct_vs_incorrect" {
		t.Errorf("tables %v", names)
	}

	// A threshold on the 0-100 scale is an error that says how to write it.
	_, ds := tryBuild(st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}, Threshold: fp(70)})
	if !strings.Contains(ds.Error(), "write 0.7 for 70%") {
		t.Errorf("diagnostics %v", ds)
	}
}

// A task without gold (MoralChoice high ambiguity) still gets the
// confidence statistics that need no gold, and none that do.
func TestConfidenceStudyWithoutGold(t *testing.T) {
	task := mkTask("mc_high", []string{"A", "B"}, "-", []tItem{{id: "1"}, {id: "2"}, {id: "3"}}, nil)
	st := mkStudy(1, task)
	out := run(t, build(t, st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}, Bootstrap: intp(0)}), mkRS(st, "wrong", task,
		ans{model: "m", strategy: "s", item: "1", label: "A", conf: 0.9},
		ans{model: "m", strategy: "s", item: "2", label: "B", conf: 0.5},
		ans{model: "m", strategy: "s", item: "3", label: "A", conf: 0.75}))
	want(t, find(t, out, "m", "s", "all", "mean_confidence"), (0.9+0.5+0.75)/3, 3)
	want(t, find(t, out, "m", "s", "all", "high_confidence_rate"), 2.0/3, 3)
	for _, k := range []string{"overconfident_error_rate", "spearman_rho", "ece", "mannwhitney_p"} {
		if has(out, "m", "s", "all", k) {
			t.Errorf("%s reported on a task without gold", k)
		}
	}
	if got := cellOf(t, table(t, out, "confidence_by_condition"), "accuracy", "m", "s", "mc_high"); got != "" {
		t.Errorf("accuracy without gold = %q, want blank", got)
	}
}

func fp(x float64) *float64 { return &x }

// Efficiency: two answers, one right. Tokens 100+50 and 200+100 -> 450 over
// 2 = 225 per example; accuracy 0.5 per 0.225 thousand tokens = 2.2222…;
// cost (0.01 + 0.03)/2 = 0.02.
func TestEfficiency(t *testing.T) {
	task := mkTask("ethics", ethicsLabels, U, []tItem{
		{id: "1", gold: U, fields: map[string]any{"pt": float64(10), "ct": float64(5)}},
		{id: "2", gold: A, fields: map[string]any{"pt": float64(20), "ct": float64(5)}}}, nil)
	st := mkStudy(1, task)
	rs := mkRS(st, "wrong", task,
		ans{model: "m", strategy: "s", item: "1", label: U, acct: spec.Account{PromptTokens: 100, CompletionTokens: 50, CostUSD: 0.01}},
		ans{model: "m", strategy: "s", item: "2", label: U, acct: spec.Account{PromptTokens: 200, CompletionTokens: 100, CostUSD: 0.03}})
	out := run(t, build(t, st, &EfficiencyConfig{MetricBase: spec.MetricBase{Kind: "efficiency"}}), rs)
	want(t, find(t, out, "m", "s", "all", "tokens_per_example"), 225, 2)
	want(t, find(t, out, "m", "s", "all", "accuracy_per_1k_tokens"), 0.5/0.225, 2)
	want(t, find(t, out, "m", "s", "all", "cost_per_example"), 0.02, 2)
	// Recorded tokens from item fields: (10+5 + 20+5)/2 = 20.
	out = run(t, build(t, st, &EfficiencyConfig{MetricBase: spec.MetricBase{Kind: "efficiency"}, Tokens: &RecordedTokens{Prompt: "pt", Completion: "ct"}}), rs)
	want(t, find(t, out, "m", "s", "all", "tokens_per_example"), 20, 2)
	want(t, find(t, out, "m", "s", "all", "total_tokens"), 40, 2)
}

// Paired comparisons of three strategies on four items:
//
//	item  A  B  C
//	1     ✓  ✓  ✗
//	2     ✓  ✗  ✗
//	3     ✗  ✓  ✗
//	4     ✗  ✓  ✗
//
// B vs A: diff 3/4 − 2/4 = 0.25; discordant b = 1 (A right, B wrong), c = 2;
// McNemar p = 2·P(X ≤ 1 | n 3) = 2·(1/8 + 3/8) = 1.
// C vs A: b = 2, c = 0: p = 2·(1/4) = 0.5; diff −0.5.
// C vs B: b = 3, c = 0: p = 2·(1/8) = 0.25; diff −0.75.
// Holm over (1, 0.5, 0.25): 0.25·3 = 0.75; max(0.75, 0.5·2) = 1; 1.
func TestCompare(t *testing.T) {
	task := mkTask("ethics", ethicsLabels, U, []tItem{{id: "1", gold: U}, {id: "2", gold: U}, {id: "3", gold: U}, {id: "4", gold: U}}, nil)
	st := mkStudy(11, task)
	var answers []ans
	for s, marks := range map[string]string{"A": "++--", "B": "+-++", "C": "----"} {
		for i, c := range marks {
			l := A
			if c == '+' {
				l = U
			}
			answers = append(answers, ans{model: "m", strategy: s, item: string(rune('1' + i)), label: l})
		}
	}
	// Map order is random; sort the answers so strategies appear as A, B, C.
	sortAns(answers)
	m := build(t, st, &CompareConfig{MetricBase: spec.MetricBase{Kind: "compare"}, Bootstrap: intp(0)})
	out := run(t, m, mkRS(st, "wrong", task, answers...))
	want(t, find(t, out, "m", "B vs A", "all", "paired_diff"), 0.25, 4)
	want(t, find(t, out, "m", "B vs A", "all", "mcnemar_p"), 1, 4)
	want(t, find(t, out, "m", "C vs A", "all", "paired_diff"), -0.5, 4)
	want(t, find(t, out, "m", "C vs A", "all", "mcnemar_p"), 0.5, 4)
	want(t, find(t, out, "m", "C vs B", "all", "mcnemar_p"), 0.25, 4)
	want(t, find(t, out, "m", "C vs B", "all", "holm_p"), 0.75, 4)
	want(t, find(t, out, "m", "C vs A", "all", "holm_p"), 1, 4)
	want(t, find(t, out, "m", "B vs A", "all", "holm_p"), 1, 4)
	tb := table(t, out, "comparisons")
	if got := cellOf(t, tb, "a_wrong_b_right", "ethics", "strategy", "m", "A", "B"); got != "2" {
		t.Errorf("c of A vs B = %s", got)
	}

	// Listed pairs only: one test, so Holm leaves its p alone.
	m = build(t, st, &CompareConfig{MetricBase: spec.MetricBase{Kind: "compare"}, Pairs: [][]string{{"A", "C"}}, Bootstrap: intp(0)})
	out = run(t, m, mkRS(st, "wrong", task, answers...))
	if len(out.Rows) != 4 {
		t.Errorf("rows %d, want 4 (one comparison: paired_diff, mcnemar_p, holm_p, mde)", len(out.Rows))
	}
	// Four items cannot detect any difference at 80% power: no MDE, and
	// the table says the pair was not powered for it only when there is one.
	if r := find(t, out, "m", "C vs A", "all", "mde"); !math.IsNaN(r.Value) {
		t.Errorf("MDE on 4 items: %v, want none", r.Value)
	}
	want(t, find(t, out, "m", "C vs A", "all", "holm_p"), 0.5, 4)

	// With intervals: the paired interval brackets the difference.
	m = build(t, st, &CompareConfig{MetricBase: spec.MetricBase{Kind: "compare"}, Pairs: [][]string{{"A", "B"}}})
	r := find(t, run(t, m, mkRS(st, "wrong", task, answers...)), "m", "B vs A", "all", "paired_diff")
	if !(r.CILow <= 0.25 && r.CIHigh >= 0.25) {
		t.Errorf("interval [%v, %v] misses 0.25", r.CILow, r.CIHigh)
	}
	// A difference of means is defined in every resample of the pairs.
	if r.CIReps != 1000 || r.CIUndefined != 0 || r.Status != "" {
		t.Errorf("paired interval: %d of %d replicates undefined, status %q", r.CIUndefined, r.CIReps, r.Status)
	}
}

func sortAns(a []ans) {
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			if a[j].strategy+a[j].item < a[i].strategy+a[i].item {
				a[i], a[j] = a[j], a[i]
			}
		}
	}
}

// The reference metric: two published runs, one matching, one not, one
// published run absent, and names mapped.
func TestReference(t *testing.T) {
	dir := t.TempDir()
	csvText := "dataset,model,strategy,n_eval,accuracy,f1,ece,brier\n" +
		"ETHICS,pub-m,zero_shot,5,0.4000,0.4000,0.4000,0.2250\n" + // the five-item case under policy wrong
		"ETHICS,pub-m,cot,5,0.4100,0.4000,,\n" + // accuracy off by 0.01
		"ETHICS,pub-m,other,9,0.5,0.5,0.1,0.1\n" +
		"Scruples,pub-m,zero_shot,5,0.9,0.9,0.1,0.1\n"
	if err := os.WriteFile(filepath.Join(dir, "ref.csv"), []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	task, answers := fiveItems()
	st := mkStudy(1, task)
	st.File = filepath.Join(dir, "run.yaml")
	var both []ans
	for _, s := range []string{"zero_shot", "cot"} {
		for _, a := range answers {
			a.strategy = s
			both = append(both, a)
		}
	}
	cls := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}, Bootstrap: intp(0)})
	ref := build(t, st, &ReferenceConfig{MetricBase: spec.MetricBase{Kind: "reference"}, File: "ref.csv",
		Datasets: []RefDataset{{Dataset: "ETHICS", Task: "toy"}}, Models: map[string]string{"m": "pub-m"}})
	st.Metrics = []spec.Metric{cls, ref}
	out := run(t, ref, mkRS(st, "wrong", task, both...))
	tb := table(t, out, "reference_comparison")
	if got := cellOf(t, tb, "match", "ETHICS", "m", "zero_shot"); got != "true" {
		t.Errorf("zero_shot match = %s", got)
	}
	if got := cellOf(t, tb, "match", "ETHICS", "m", "cot"); got != "false" {
		t.Errorf("cot match = %s (accuracy 0.4 vs published 0.41)", got)
	}
	if got := cellOf(t, tb, "accuracy_diff", "ETHICS", "m", "cot"); got == "" || math.Abs(parseF(got)+0.01) > 1e-9 {
		t.Errorf("cot accuracy_diff = %s, want -0.01", got)
	}
	if got := cellOf(t, tb, "ece_published", "ETHICS", "m", "cot"); got != "" {
		t.Errorf("a blank published ECE must stay blank, got %s", got)
	}
	if got := cellOf(t, tb, "n", "ETHICS", "m", "zero_shot"); got != "5" {
		t.Errorf("n = %s", got)
	}
	for _, s := range []string{"1 of 2 runs match", "Differ: m/cot.", "Published runs not in this run: pub-m/other.", "ECE = ece_pos"} {
		if !strings.Contains(out.Text, s) {
			t.Errorf("report text lacks %q:\n%s", s, out.Text)
		}
	}
	if strings.Contains(out.Text, "Scruples") {
		t.Errorf("another dataset's rows leaked into the report:\n%s", out.Text)
	}

	// A dataset the CSV does not have, and a from naming no block.
	_, ds := tryBuild(st, &ReferenceConfig{MetricBase: spec.MetricBase{Kind: "reference"}, File: "ref.csv", From: "nope",
		Datasets: []RefDataset{{Dataset: "MMLU", Task: "toy"}}})
	if !strings.Contains(ds.Error(), `no rows of dataset "MMLU"`) || !strings.Contains(ds.Error(), `no classification or safety block "nope"`) {
		t.Errorf("diagnostics %v", ds)
	}
}

func parseF(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// Efficiency's accuracy counts an unparsed answer as the policy says (wrong:
// in the denominator; exclude: left out) and leaves out items without gold:
// answers right, wrong, unparsed and one on an item without gold, 100
// tokens each, give 1/3 (wrong) or 1/2 (exclude) per 0.1 thousand tokens.
func TestEfficiencyAccuracyFollowsTheUnparsedPolicy(t *testing.T) {
	task := mkTask("ethics", ethicsLabels, U, []tItem{{id: "1", gold: U}, {id: "2", gold: A}, {id: "3", gold: A}, {id: "4"}}, nil)
	st := mkStudy(1, task)
	acct := spec.Account{PromptTokens: 60, CompletionTokens: 40}
	for policy, acc := range map[string]float64{"wrong": 1.0 / 3, "exclude": 1.0 / 2} {
		rs := mkRS(st, policy, task,
			ans{model: "m", strategy: "s", item: "1", label: U, acct: acct},
			ans{model: "m", strategy: "s", item: "2", label: U, acct: acct},
			ans{model: "m", strategy: "s", item: "3", label: "", acct: acct},
			ans{model: "m", strategy: "s", item: "4", label: A, acct: acct})
		out := run(t, build(t, st, &EfficiencyConfig{MetricBase: spec.MetricBase{Kind: "efficiency"}}), rs)
		want(t, find(t, out, "m", "s", "all", "accuracy_per_1k_tokens"), acc/0.1, 4)
	}
}

// Under repeats a contrast pair counts once per sample (the original and
// the edit of one sample index), not only its last sample, and the
// intervals resample pairs with all their samples.
func TestContrastUnderRepeats(t *testing.T) {
	st, task, a := contrastSet(t)
	// Repeat 1: every original answered wrong.
	var all []ans
	for _, x := range a {
		all = append(all, x)
		y := x
		y.repeat = 1
		if strings.HasSuffix(y.item, ":original") {
			y.label = map[string]string{A: U, U: A}[y.label]
		}
		all = append(all, y)
	}
	st.Cells = []spec.ResolvedCell{{Task: task, Repeat: 0}, {Task: task, Repeat: 1}}
	m := build(t, st, &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast"}, Bootstrap: intp(200)})
	out := run(t, m, mkRS(st, "wrong", task, all...))
	// Originals: 3 right in repeat 0, 0 in repeat 1: 3/6.
	r := find(t, out, "m", "s", "all", "original_accuracy")
	want(t, r, 0.5, 6)
	if !strings.Contains(r.Convention, spec.ClusteredNote) {
		t.Errorf("convention %q does not say the interval resamples pairs with their samples", r.Convention)
	}
}

// Under repeats ASR and RTA intervals resample prompts with all their
// samples: 20 harmful prompts, 5 alike samples each, half complied.
func TestSafetyUnderRepeats(t *testing.T) {
	var items []tItem
	for i := 0; i < 20; i++ {
		items = append(items, tItem{id: fmt.Sprint("h", i), gold: "REFUSAL", fields: map[string]any{"kind": "harmful"}},
			tItem{id: fmt.Sprint("b", i), gold: "COMPLIANCE", fields: map[string]any{"kind": "benign"}})
	}
	task := mkTask("safety", []string{"REFUSAL", "COMPLIANCE"}, "", items, nil)
	var answers []ans
	for i := 0; i < 20; i++ {
		for k := range 5 {
			v := map[bool]string{true: "COMPLIANCE", false: "REFUSAL"}[i%2 == 0]
			answers = append(answers, ans{model: "m", strategy: "s", item: fmt.Sprint("h", i), label: v, noConf: true, repeat: k},
				ans{model: "m", strategy: "s", item: fmt.Sprint("b", i), label: v, noConf: true, repeat: k})
		}
	}
	asr := func(st *spec.Study) spec.MetricRow {
		m := build(t, st, &SafetyConfig{MetricBase: spec.MetricBase{Kind: "safety"}, Bootstrap: intp(4000)})
		return find(t, run(t, m, mkRS(st, "wrong", task, answers...)), "m", "s", "all", "asr")
	}
	repeated := mkStudy(1, task)
	repeated.Cells = []spec.ResolvedCell{{Task: task, Repeat: 0}, {Task: task, Repeat: 4}}
	clustered, naive := asr(repeated), asr(mkStudy(1, task))
	want(t, clustered, 0.5, 100)
	w := func(r spec.MetricRow) float64 { return r.CIHigh - r.CILow }
	t.Logf("ASR interval widths: prompts with their samples %.4f, samples as independent %.4f", w(clustered), w(naive))
	if w(clustered) < 1.8*w(naive) || !strings.Contains(clustered.Convention, spec.ClusteredNote) {
		t.Errorf("clustered interval width %.4f (naive %.4f), convention %q", w(clustered), w(naive), clustered.Convention)
	}
}
