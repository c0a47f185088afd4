package report

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/promoral/promoral/runfolder/manifest"
)

// The report knows no metric kind: a block of a kind it has never heard
// of is described and drawn by what the block declares in the manifest
// (draw), and its settings, whatever they say, are not read for it.
func TestReportDrawsWhatBlocksDeclare(t *testing.T) {
	thr := 0.55
	r := &run{manifest: &manifest.Manifest{Metrics: []manifest.Block{
		{Name: "graded", Kind: "novel_grader", Tasks: []string{"ethics"}, Unparsed: "exclude", Errors: "incomplete",
			// Settings a kind the report once knew would read: ignored.
			Settings: map[string]any{"confidence": "chosen", "bins": 10.0, "threshold": 0.9},
			Draw:     &manifest.BlockDraw{Counting: []string{"a grade above 3 counts as a pass"}, Bins: 15, Confidence: "positive", ConfidentAbove: &thr}},
		{Name: "raters", Kind: "novel_raters", Unparsed: "wrong", Errors: "incomplete", Draw: &manifest.BlockDraw{Judges: true}},
		{Name: "combined", Kind: "novel_pool", Unparsed: "wrong", Errors: "incomplete", Draw: &manifest.BlockDraw{PooledTask: "overall"}},
		{Name: "quoted", Kind: "novel_quote", Draw: &manifest.BlockDraw{Summary: "quotes the published figures."}},
		{Name: "novel_plain", Kind: "novel_plain", Errors: "incomplete", Settings: map[string]any{"confidence": "positive", "bins": 10.0}, Draw: &manifest.BlockDraw{}},
	}}}
	row := func(block, model, strategy, task, name, conv string) metric {
		return metric{Block: block, Model: model, Strategy: strategy, Task: task, Subset: "all", Metric: name, Value: 0.5, Lo: math.NaN(), Hi: math.NaN(), N: 10, Convention: conv}
	}
	r.metrics = []metric{
		row("graded", "m1", "s1", "ethics", "f1", "positive class: wrong"),
		row("graded", "m1", "s1", "ethics", "ece", "…; 15 equal-width bins (lo, hi], the first [0, hi]"),
		row("raters", "judge-x", "judge_prompt", "ethics", "kappa", ""),
		row("combined", "all", "s1", "overall", "umss", ""),
		row("combined", "m1", "all", "overall", "umss", ""),
		row("novel_plain", "m1", "s1", "ethics", "ece", "…; 12 equal-width bins (lo, hi], the first [0, hi]"),
	}
	r.pooled = r.pooledTasks()
	r.order()

	lines := strings.Join(r.policyLines(), "\n")
	for _, want := range []string{
		"Block graded (novel_grader on ethics): unparsed answers are left out of n; errored cases: incomplete (a figure whose cell has any is withheld); a grade above 3 counts as a pass.",
		"Block quoted (novel_quote): quotes the published figures.",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("the policy lines lack %q:\n%s", want, lines)
		}
	}
	for _, not := range []string{"chosen answer", "probability of the positive class", "ECE in 10"} {
		if strings.Contains(lines, not) {
			t.Errorf("the policy lines read a setting (%q):\n%s", not, lines)
		}
	}
	if pos, known := r.statedPositive("ethics"); pos != "wrong" || !known {
		t.Errorf("statedPositive = %q, %v; want wrong, true (declared confidence: positive)", pos, known)
	}
	if !r.judgeBlocks()["raters"] || len(r.judgeBlocks()) != 1 {
		t.Errorf("judge blocks %v, want raters alone", r.judgeBlocks())
	}
	if slices.Contains(r.models, "judge-x") || !slices.Contains(r.models, "m1") {
		t.Errorf("models %v: the judge is a model under test, or m1 is missing", r.models)
	}
	if slices.Contains(r.tasks, "overall") || !slices.Contains(r.tasks, "ethics") {
		t.Errorf("tasks %v: the pooled task counts as a task, or ethics is missing", r.tasks)
	}
	if _, _, tasks := r.metricNames(); slices.Contains(tasks, "overall") {
		t.Errorf("metric names count the pooled task: %v", tasks)
	}
	if n := r.blockBins("graded"); n != 15 {
		t.Errorf("graded bins %d, want the declared 15", n)
	}
	// A block that declares no bins: its ECE rows' convention says them.
	if n := r.blockBins("novel_plain"); n != 12 {
		t.Errorf("novel_plain bins %d, want 12 from its rows", n)
	}
	if !r.namedBlock("graded") || r.namedBlock("novel_plain") {
		t.Error("a block named after its kind counts as named, or one of its own name does not")
	}
}

// A folder of no manifest blocks: the rows say which task pools the
// others (no row of one model and one strategy scores it).
func TestReportPooledTaskFromRows(t *testing.T) {
	r := &run{metrics: []metric{
		{Block: "b", Model: "m1", Strategy: "s1", Task: "ethics", Metric: "accuracy"},
		{Block: "b", Model: "all", Strategy: "s1", Task: "ethics", Metric: "accuracy"},
		{Block: "u", Model: "all", Strategy: "s1", Task: "overall", Metric: "umss"},
		{Block: "u", Model: "m1", Strategy: "all", Task: "overall", Metric: "umss"},
	}}
	r.pooled = r.pooledTasks()
	r.order()
	if !slices.Equal(r.tasks, []string{"ethics"}) {
		t.Errorf("tasks %v, want [ethics]", r.tasks)
	}
}
