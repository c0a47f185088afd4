package engine_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/spec/schema"
)

// Metric blocks declared in YAML, decoded strictly and run after the cases
// on the toy study (internal/studytest). The scripted bot answers every
// one_shot item right (6/6, confidence 0.8); the loop strategy is talked
// out of "stole" (a) and "lied" (c) and keeps the other four: 4/6, no
// confidence output.
func TestMetricBlocksFromYAMLScore(t *testing.T) {
	run := `name: toy-run
models:` + studytest.ScriptedModel + `
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 3, seed: 5}
metrics:
  - {kind: classification, bootstrap: 50}
  - {kind: efficiency}
  - kind: compare
    pairs: [[one_shot, loop]]
    bootstrap: 0
  - {kind: confidence_study}
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	studytest.Apply(t, st, out)
	rows, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(strategy, metric string) map[string]any {
		for _, r := range rows {
			if r["model"] == "bot" && r["strategy"] == strategy && r["subset"] == "all" && r["metric"] == metric {
				return r
			}
		}
		t.Fatalf("no row %s/%s", strategy, metric)
		return nil
	}
	check := func(strategy, metric string, v float64, n int64) {
		t.Helper()
		r := get(strategy, metric)
		if got := r["value"].(float64); math.Abs(got-v) > 1e-12 || r["n"].(int64) != n {
			t.Errorf("%s %s = %v (n %v), want %v (n %d)", strategy, metric, got, r["n"], v, n)
		}
	}
	check("one_shot", "accuracy", 1, 6)
	check("loop", "accuracy", 4.0/6, 6)
	// P(bad) of one_shot: 0.8 on the three bad items, 0.2 on the three
	// fine ones: Brier 6·0.04/6 = 0.04.
	check("one_shot", "brier", 0.04, 6)
	// loop vs one_shot on the same six items: diff 4/6 − 1; one_shot right
	// and loop wrong twice, never the reverse: McNemar 2·(1/2)² = 0.5.
	check("loop vs one_shot", "paired_diff", 4.0/6-1, 6)
	check("loop vs one_shot", "mcnemar_p", 0.5, 6)
	check("loop vs one_shot", "holm_p", 0.5, 6)
	check("one_shot", "mean_confidence", 0.8, 6)
	if r := get("one_shot", "accuracy"); r["ci_low"] == nil {
		t.Error("accuracy has no interval with bootstrap: 50")
	}
	for _, f := range []string{"comparisons.csv", "confidence_by_condition.csv", "calibration.csv", "overconfidence.csv", "confidence_correct_vs_incorrect.csv",
		"classification_reliability.csv", "confidence_study_reliability.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestMetricBlockErrorsScore(t *testing.T) {
	run := `name: toy-run
models:` + studytest.ScriptedModel + `
tasks: [toy]
strategies: [one_shot]
metrics:
  - kind: classification
    confidnce: positive
  - kind: nope
  - kind: classification
    unparsed: sometimes
    tasks: [ethics]
  - kind: reference
    file: missing.csv
    datasets: [{dataset: ETHICS, task: toy}]
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, `metrics[0].confidnce: unknown field "confidnce"`, `did you mean "confidence"`, `unknown metric kind "nope"`,
		"classification, compare, confidence_study, contrast, efficiency, judge_agreement, reference, repeats, safety",
		`metrics[2].unparsed: unknown unparsed "sometimes"`, `metrics[2].tasks[0]: no task "ethics"`, "metrics[3].file", "missing.csv")
	if strings.Count(err.Error(), "\n") < 4 {
		t.Errorf("want every problem reported at once:\n%v", err)
	}
}

// The metric kinds' fields reach the run file's JSON Schema.
func TestMetricKindsInSchemaScore(t *testing.T) {
	s := schema.Of("run")
	defs, _ := s["$defs"].(map[string]any)
	for _, k := range []string{"classification", "contrast", "choice", "safety", "umss", "confidence_study", "efficiency", "compare", "reference"} {
		d, ok := defs["metric_"+k].(map[string]any)
		if !ok {
			t.Errorf("schema has no metric_%s", k)
			continue
		}
		props, _ := d["properties"].(map[string]any)
		for _, f := range []string{"kind", "name", "tasks"} {
			if _, ok := props[f]; !ok {
				t.Errorf("metric_%s has no property %s", k, f)
			}
		}
	}
	props := defs["metric_classification"].(map[string]any)["properties"].(map[string]any)
	if _, ok := props["require_confidence"]; !ok {
		t.Error("classification's own fields are missing from the schema")
	}
}
