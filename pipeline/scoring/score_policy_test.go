package scoring_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// A bot that fails item e ("I hit my brother.") with an HTTP 400 and
// answers the other five right.
const failingModel = `
  - name: bot
    provider: scripted
    script:
      replies:
        - match: "hit my brother"
          status: 400
        - text: "Confidence: 0.8\nAnswer: {{if find \"(stole|lied|hit)\" .last}}wrong{{else}}not wrong{{end}}"
`

// Errored cases under each errors: policy. One of six cases fails:
//
//	incomplete  no value, status incomplete, n 5 of 6 cases, n_errors 1
//	exclude     accuracy 5/5, n 5, n_errors 1
//	unparsed    the failure is an unparsed answer, wrong: accuracy 5/6, n 6
//
// and every row carries its block, its counts and its policies, with keys
// unique.
func TestErrorsPolicyScore(t *testing.T) {
	run := `name: toy-run
models:` + failingModel + `
tasks: [toy]
strategies: [one_shot]
settings: {seed: 3}
metrics:
  - {kind: classification, name: inc, bootstrap: 20}
  - {kind: classification, name: exc, errors: exclude, bootstrap: 20}
  - {kind: classification, name: unp, errors: unparsed, bootstrap: 0}
  - {kind: confidence_study, name: conf, bootstrap: 0}
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	sum, _ := studytest.Apply(t, st, out)
	if sum.Errors != 1 {
		t.Fatalf("summary: %s", sum)
	}
	rows, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	studytest.AssertUniqueKeys(t, rows, nil)
	get := func(block, metric string) map[string]any {
		t.Helper()
		for _, r := range rows {
			if r["block"] == block && r["subset"] == "all" && r["metric"] == metric {
				return r
			}
		}
		t.Fatalf("no row %s %s", block, metric)
		return nil
	}
	for _, tc := range []struct {
		block, status, policy string
		value                 float64 // NaN: no value
		n, unparsed           int64
	}{
		{"inc", "incomplete", "incomplete", math.NaN(), 5, 0},
		{"exc", "ok", "exclude", 1, 5, 0},
		{"unp", "ok", "unparsed", 5.0 / 6, 6, 0},
	} {
		r := get(tc.block, "accuracy")
		v, hasV := r["value"].(float64)
		switch {
		case math.IsNaN(tc.value) && (hasV || r["ci_low"] != nil):
			t.Errorf("%s: value %v [%v, %v], want none (a cell with errored cases is not a clean figure)", tc.block, r["value"], r["ci_low"], r["ci_high"])
		case !math.IsNaN(tc.value) && (!hasV || math.Abs(v-tc.value) > 1e-12):
			t.Errorf("%s: value %v, want %v", tc.block, r["value"], tc.value)
		}
		if r["status"] != tc.status || r["errors_policy"] != tc.policy || r["unparsed_policy"] != "wrong" {
			t.Errorf("%s: status %v errors_policy %v unparsed_policy %v", tc.block, r["status"], r["errors_policy"], r["unparsed_policy"])
		}
		if r["n"] != tc.n || r["n_cases"] != int64(6) || r["n_errors"] != int64(1) || r["n_unparsed"] != tc.unparsed {
			t.Errorf("%s: n %v n_cases %v n_errors %v n_unparsed %v; want %d, 6, 1, %d", tc.block, r["n"], r["n_cases"], r["n_errors"], r["n_unparsed"], tc.n, tc.unparsed)
		}
	}
	// The tables withhold what metrics.parquet withholds: no bins for the
	// incomplete cell, and a status with blank figures in the study's tables.
	if _, err := os.Stat(filepath.Join(out, "inc_reliability.csv")); err == nil {
		t.Error("inc_reliability.csv has bins of a cell that gives no figure")
	}
	if _, err := os.Stat(filepath.Join(out, "exc_reliability.csv")); err != nil {
		t.Errorf("exc_reliability.csv: %v", err)
	}
	f, err := os.Open(filepath.Join(out, "conf_confidence_by_condition.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 2 {
		t.Fatalf("conf_confidence_by_condition.csv: %v, %d rows", err, len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if r := recs[1]; r[col["status"]] != "incomplete" || r[col["mean"]] != "" || r[col["n_errors"]] != "1" || r[col["n"]] != "5" {
		t.Errorf("confidence_by_condition row %v: want status incomplete, blank mean, n_errors 1, n 5", r)
	}
	// The manifest records each block's policies.
	data, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man manifest.Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range man.Metrics {
		got = append(got, b.Name+":"+b.Kind+":"+b.Unparsed+":"+b.Errors+":"+fmt.Sprint(b.Settings["bootstrap"]))
	}
	if want := "inc:classification:wrong:incomplete:20,exc:classification:wrong:exclude:20,unp:classification:wrong:unparsed:0,conf:confidence_study:wrong:incomplete:0"; strings.Join(got, ",") != want {
		t.Errorf("manifest blocks %v, want %s", got, want)
	}
	// The row says which class its F1 is of.
	if r := get("exc", "f1"); r["convention"] != "positive class: bad" {
		t.Errorf("f1 convention %v", r["convention"])
	}
}

// Condition factors declared on strategies (and a variant) and on a model
// variant become columns of results.parquet and metrics.parquet.
func TestFactorsBecomeColumnsScore(t *testing.T) {
	run := `name: toy-run
models:` + studytest.ScriptedModel + `
  - {name: bot-think, extends: bot, factors: {thinking: "on"}}
tasks: [toy]
strategies:
  - one_shot
  - {use: one_shot, name: one_shot_conf, factors: {instruction: "on"}}
settings: {seed: 3}
metrics:
  - {kind: classification, bootstrap: 0}
`
	files := studytest.BaseTree(map[string]string{"configs/run.yaml": run})
	files["configs/strategies/one_shot.yaml"] = strings.Replace(studytest.OneShotYAML, "name: one_shot\n", "name: one_shot\nfactors: {level: 0, instruction: \"off\"}\n", 1)
	dir := studytest.WriteTree(t, files)
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if strings.Join(st.Factors, ",") != "instruction,level,thinking" {
		t.Fatalf("factors %v", st.Factors)
	}
	out := filepath.Join(dir, "out")
	studytest.Apply(t, st, out)
	res, err := parquetio.Read(filepath.Join(out, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]any{ // model/strategy -> instruction, level, thinking
		"bot/one_shot":            {"off", "0", nil},
		"bot/one_shot_conf":       {"on", "0", nil},
		"bot-think/one_shot":      {"off", "0", "on"},
		"bot-think/one_shot_conf": {"on", "0", "on"},
	}
	for _, r := range res {
		w := want[fmt.Sprint(r["model"], "/", r["strategy"])]
		if r["instruction"] != w[0] || r["level"] != w[1] || r["thinking"] != w[2] {
			t.Errorf("%v/%v: instruction %v level %v thinking %v, want %v", r["model"], r["strategy"], r["instruction"], r["level"], r["thinking"], w)
		}
	}
	rows, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	studytest.AssertUniqueKeys(t, rows, st.Factors)
	n := 0
	for _, r := range rows {
		if r["metric"] == "accuracy" && r["subset"] == "all" {
			n++
			w := want[fmt.Sprint(r["model"], "/", r["strategy"])]
			if r["instruction"] != w[0] || r["level"] != w[1] || r["thinking"] != w[2] {
				t.Errorf("metrics %v/%v: factors %v %v %v", r["model"], r["strategy"], r["instruction"], r["level"], r["thinking"])
			}
		}
	}
	if n != 4 {
		t.Errorf("%d accuracy rows, want 4", n)
	}
}

// Mistakes in blocks and factors are load errors naming the field.
func TestBlockAndFactorErrorsScore(t *testing.T) {
	run := `name: toy-run
models:
  - name: bot
    provider: scripted
    factors: {Model: x, thinking: "on"}
    script: {replies: [{text: "Answer: wrong"}]}
tasks: [toy]
strategies:
  - {use: one_shot, factors: {thinking: "off", n: 1}}
metrics:
  - {kind: classification}
  - {kind: classification}
  - {kind: efficiency, errors: sometimes}
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, `metrics[1].name: a second metric block named "classification"`, "give this block or metrics[0] a name",
		`metrics[2].errors: unknown errors "sometimes"`, `factor name "Model" is not a column name`,
		`factor "n" would shadow the n column`, `factor thinking is "on" on model bot but "off" on strategy one_shot`)
}

// Re-scoring from the journal gives the numbers apply wrote, without a
// call; a study whose requests the journal lacks gets incomplete cells,
// not invented ones.
func TestScoreFromJournalMatchesApply(t *testing.T) {
	run := `name: toy-run
models:` + studytest.ScriptedModel + `
tasks: [toy]
strategies: [one_shot, loop]
settings: {seed: 4}
metrics:
  - {kind: classification, bootstrap: 50}
  - {kind: compare, bootstrap: 50}
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	studytest.Apply(t, st, out)
	written, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	sc, misses, err := scoring.ScoreFromJournal(studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), filepath.Join(out, "journal.jsonl"))
	if err != nil || misses != 0 {
		t.Fatalf("rescore: %v, %d misses", err, misses)
	}
	if len(sc.Rows) != len(written) {
		t.Fatalf("%d rows re-scored, %d written", len(sc.Rows), len(written))
	}
	for i, r := range sc.Rows {
		w := written[i]
		v, _ := w["value"].(float64)
		if r.Block != w["block"] || r.Metric != w["metric"] || math.Abs(r.Value-v) > 1e-12 && !(math.IsNaN(r.Value) && w["value"] == nil) {
			t.Errorf("row %d: re-scored %s %v, written %v %v %v", i, r.Key(), r.Value, w["block"], w["metric"], w["value"])
		}
	}
	if ch := scoring.DiffScores(sc, sc); len(ch) != 0 {
		t.Errorf("a score set differs from itself: %v", ch)
	}
	// Another prompt: every request misses, every cell is incomplete.
	other := strings.Replace(studytest.OneShotYAML, "{{.task.question}}", "Say: {{.task.question}}", 1)
	dir2 := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run, "configs/strategies/one_shot.yaml": other}))
	sc2, misses, err := scoring.ScoreFromJournal(studytest.MustLoad(t, filepath.Join(dir2, "configs/run.yaml")), filepath.Join(out, "journal.jsonl"))
	if err != nil || misses != 6 {
		t.Fatalf("rescore of the changed study: %v, %d misses (want the 6 one_shot cases)", err, misses)
	}
	ch := scoring.DiffScores(sc, sc2)
	found := false
	for _, c := range ch {
		if c.New != nil && c.New.Metric == "accuracy" && c.New.Strategy == "one_shot" && c.New.Subset == "all" {
			found = true
			if c.New.Status != spec.StatusIncomplete || !math.IsNaN(c.New.Value) {
				t.Errorf("one_shot accuracy without its replies: %s", c.Describe())
			}
		}
	}
	if !found {
		t.Errorf("no change of one_shot's accuracy in %v", ch)
	}
}
