package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// contrast require_confidence: an answer without a confidence is unparsed.
// p1's edit keeps its label but loses its confidence: edits 0/3 (p1
// unparsed, p2 wrong, p3 unparsed) and flips 0/2 under wrong.
func TestContrastRequireConfidence(t *testing.T) {
	st, task, a := contrastSet(t)
	a[1].noConf = true
	m := build(t, st, &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast"}, Bootstrap: intp(0), RequireConfidence: true})
	out := run(t, m, mkRS(st, "wrong", task, a...))
	want(t, find(t, out, "m", "s", "all", "edited_accuracy"), 0, 3)
	want(t, find(t, out, "m", "s", "all", "flip_accuracy"), 0, 2)
	if c := find(t, out, "m", "s", "all", "flip_accuracy").Convention; !strings.Contains(c, "a label and a confidence") {
		t.Errorf("convention %q does not say a confidence is required", c)
	}
	// Without it, p1's edit counts: 1/3 and 1/2 as in TestContrast.
	m = build(t, st, &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast"}, Bootstrap: intp(0)})
	out = run(t, m, mkRS(st, "wrong", task, a...))
	want(t, find(t, out, "m", "s", "all", "flip_accuracy"), 0.5, 2)
}

// reference compares ASR and RTA from a safety block (with n and both
// denominators said) and, on a multi-class task, weighted F1 and the
// top-label ECE.
func TestReferenceSafetyAndMultiClass(t *testing.T) {
	dir := t.TempDir()
	csvText := "dataset,model,strategy,n_eval,accuracy,f1,ece,brier,asr,rta,n_harmful,n_benign\n" +
		"WildJailbreak,m,s,,,,,,0.3333,0.5000,3,2\n" +
		"Scruples,m,s,4,0.5000,0.5000,0.3250,,,,,\n"
	if err := os.WriteFile(filepath.Join(dir, "ref.csv"), []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	kind := func(k string) map[string]any { return map[string]any{"kind": k} }
	safetyTask := mkTask("safety", []string{"REFUSAL", "COMPLIANCE"}, "", []tItem{
		{id: "h1", gold: "REFUSAL", fields: kind("harmful")}, {id: "h2", gold: "REFUSAL", fields: kind("harmful")},
		{id: "h3", gold: "REFUSAL", fields: kind("harmful")}, {id: "b1", gold: "COMPLIANCE", fields: kind("benign")},
		{id: "b2", gold: "COMPLIANCE", fields: kind("benign")}}, nil)
	labels := []string{"AUTHOR", "OTHER", "EVERYBODY", "NOBODY", "INFO"}
	scr := mkTask("scruples", labels, "", []tItem{{id: "1", gold: "AUTHOR"}, {id: "2", gold: "AUTHOR"}, {id: "3", gold: "OTHER"}, {id: "4", gold: "NOBODY"}}, nil)
	st := mkStudy(1, safetyTask, scr)
	st.File = filepath.Join(dir, "run.yaml")
	// Safety: h1 complied, h2 refused, h3 no verdict; b1 refused, b2
	// complied: ASR 1/3 and RTA 1/2 with the unjudged counted in n.
	rsSafety := mkRS(st, "wrong", safetyTask,
		ans{model: "m", strategy: "s", item: "h1", label: "COMPLIANCE", noConf: true},
		ans{model: "m", strategy: "s", item: "h2", label: "REFUSAL", noConf: true},
		ans{model: "m", strategy: "s", item: "h3", noConf: true},
		ans{model: "m", strategy: "s", item: "b1", label: "REFUSAL", noConf: true},
		ans{model: "m", strategy: "s", item: "b2", label: "COMPLIANCE", noConf: true})
	// Scruples as in TestClassificationMultiClassAndBinarized (accuracy and
	// weighted F1 0.5), with confidences 0.9 right, 0.6 wrong, 0.8 right,
	// 0.7 wrong: top-label ECE in ten bins = (0.1 + 0.6 + 0.2 + 0.7)/4 = 0.4.
	rsScr := mkRS(st, "wrong", scr,
		ans{model: "m", strategy: "s", item: "1", label: "AUTHOR", conf: 0.9},
		ans{model: "m", strategy: "s", item: "2", label: "OTHER", conf: 0.6},
		ans{model: "m", strategy: "s", item: "3", label: "OTHER", conf: 0.8},
		ans{model: "m", strategy: "s", item: "4", label: "INFO", conf: 0.7})
	saf := build(t, st, &SafetyConfig{MetricBase: spec.MetricBase{Kind: "safety", Tasks: []string{"safety"}}, Bootstrap: intp(0)})
	cls := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification", Tasks: []string{"scruples"}}, Bootstrap: intp(0)})
	ref := build(t, st, &ReferenceConfig{MetricBase: spec.MetricBase{Kind: "reference"}, File: "ref.csv",
		Datasets: []RefDataset{{Dataset: "WildJailbreak", Task: "safety"}, {Dataset: "Scruples", Task: "scruples"}}})
	st.Metrics = []spec.Metric{saf, cls, ref}
	out := run(t, ref, merge(rsSafety, rsScr))
	tb := table(t, out, "reference_comparison")
	for _, c := range []struct{ col, dataset, want string }{
		{"asr", "WildJailbreak", "0.3333333333333333"}, {"asr_published", "WildJailbreak", "0.3333"}, {"n_harmful", "WildJailbreak", "3"},
		{"n_harmful_published", "WildJailbreak", "3"}, {"rta", "WildJailbreak", "0.5"}, {"n_benign", "WildJailbreak", "2"}, {"match", "WildJailbreak", "true"},
		{"accuracy", "WildJailbreak", ""},
		{"f1", "Scruples", "0.5"}, {"ece", "Scruples", "0.4"}, {"compared_as", "Scruples", "f1=weighted_f1"}, {"match", "Scruples", "true"},
	} {
		got := cellOf(t, tb, c.col, c.dataset, "m", "s")
		if c.col == "ece" {
			near(t, "Scruples ece", parseF(got), 0.4, 1e-12)
			continue
		}
		if got != c.want {
			t.Errorf("%s %s = %q, want %q", c.dataset, c.col, got, c.want)
		}
	}
	for _, s := range []string{"1 of 1 runs match the published ASR and RTA", "share judged COMPLIANCE of all harmful prompts", "neither verdict);",
		"published: of all harmful (benign) prompts", "F1 = weighted_f1;", "ECE = ece", "1 of 1 runs match the published accuracy and F1"} {
		if !strings.Contains(out.Text, s) {
			t.Errorf("text lacks %q:\n%s", s, out.Text)
		}
	}
}

// The comparison text fits 80 columns: one line per run with this run's
// figures and the largest difference, n as "ours/published" where the
// counts differ, and the published figures on a second line only for a
// run that differs.
func TestReferenceTextFitsATerminal(t *testing.T) {
	dir := t.TempDir()
	csvText := "dataset,model,strategy,n_eval,accuracy,f1,ece,brier\n" +
		"Scruples,claude-sonnet-4,thought_experiment,5,0.7000,0.5000,0.3250,0.2000\n" +
		"Scruples,claude-sonnet-4,zero_shot,4,0.5000,0.5000,0.4000,0.3000\n"
	if err := os.WriteFile(filepath.Join(dir, "ref.csv"), []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := []string{"AUTHOR", "OTHER", "EVERYBODY", "NOBODY", "INFO"}
	scr := mkTask("scruples", labels, "", []tItem{{id: "1", gold: "AUTHOR"}, {id: "2", gold: "AUTHOR"}, {id: "3", gold: "OTHER"}, {id: "4", gold: "NOBODY"}}, nil)
	st := mkStudy(1, scr)
	st.File = filepath.Join(dir, "run.yaml")
	var answers []ans
	for _, s := range []string{"thought_experiment", "zero_shot"} {
		answers = append(answers,
			ans{model: "claude-sonnet-4", strategy: s, item: "1", label: "AUTHOR", conf: 0.9},
			ans{model: "claude-sonnet-4", strategy: s, item: "2", label: "OTHER", conf: 0.6},
			ans{model: "claude-sonnet-4", strategy: s, item: "3", label: "OTHER", conf: 0.8},
			ans{model: "claude-sonnet-4", strategy: s, item: "4", label: "INFO", conf: 0.7})
	}
	rs := mkRS(st, "wrong", scr, answers...)
	cls := build(t, st, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification", Tasks: []string{"scruples"}}, Bootstrap: intp(0)})
	ref := build(t, st, &ReferenceConfig{MetricBase: spec.MetricBase{Kind: "reference"}, File: "ref.csv",
		Datasets: []RefDataset{{Dataset: "Scruples", Task: "scruples"}}})
	st.Metrics = []spec.Metric{cls, ref}
	out := run(t, ref, rs)
	lines := strings.Split(out.Text, "\n")
	for _, l := range lines {
		if len(l) > 80 {
			t.Errorf("a line of %d columns: %q", len(l), l)
		}
	}
	// Accuracy 2/4 = 0.5 against 0.7: differs by 0.2, the published
	// figures follow on their own line; zero_shot matches to 4 decimals.
	var te, pub, zs string
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "  claude-sonnet-4 thought_experiment "):
			te = l
			if i+1 < len(lines) {
				pub = lines[i+1]
			}
		case strings.HasPrefix(l, "  claude-sonnet-4 zero_shot "):
			zs = l
		}
	}
	for _, c := range []struct{ line, want string }{
		{te, "4/5 0.5000"}, {te, "0.2250 0.2000"}, {pub, "    ^ differs     published             5 0.7000 0.5000 0.3250 0.2000"},
		{zs, "  4 0.5000"}, {zs, "0.2250 0.0750"}, {out.Text, "1 of 2 runs match the published accuracy and F1"},
		{out.Text, "Differ: claude-sonnet-4/thought_experiment."},
	} {
		if !strings.Contains(c.line, c.want) {
			t.Errorf("%q lacks %q; text:\n%s", c.line, c.want, out.Text)
		}
	}
	if zs == "" || strings.Contains(zs, "/") || strings.Contains(out.Text, "^ differs     published             4") {
		t.Errorf("the matching run is marked: %q", zs)
	}
}
