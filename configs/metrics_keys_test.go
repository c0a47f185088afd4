package configs_test

import (
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
)

// Every shipped run file, run on two items per task with the fake model
// (fixture tasks allowed), writes a metrics.parquet whose keys (block,
// model, strategy, task, subset, factors..., metric) are unique, whose
// every row says its status and errors policy, and whose factor columns
// match the ones results.parquet has.
func TestShippedConfigsMetricKeysAreUnique(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(configsDir, "*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("run files %v (%v)", files, err)
	}
	written := map[string]map[string]bool{} // kind -> metric names, over every file
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			st, err := spec.LoadWith(file, spec.LoadOptions{AllowFixtures: true})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			for _, task := range st.Tasks {
				if len(task.Items) > 2 {
					task.Items = task.Items[:2]
				}
			}
			fake := newFake(st, true)
			for _, m := range st.Models {
				switch m.Spec.Provider {
				case "scripted", "none":
				default:
					m.Provider = fake
				}
			}
			out, _, _ := run(t, st)
			// Every row is one its block's kind declares.
			for kind, names := range studytest.CheckDeclaredRows(t, out) {
				if written[kind] == nil {
					written[kind] = map[string]bool{}
				}
				for n := range names {
					written[kind][n] = true
				}
			}
			rows, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 0 {
				t.Fatal("no metric rows")
			}
			seen := map[string]bool{}
			for _, r := range rows {
				k := fmt.Sprint(r["block"], "|", r["model"], "|", r["strategy"], "|", r["task"], "|", r["subset"])
				for _, f := range st.Factors {
					v, ok := r[f]
					if !ok {
						t.Fatalf("metrics.parquet has no column %s", f)
					}
					k += fmt.Sprint("|", v)
				}
				k += fmt.Sprint("|", r["metric"])
				if seen[k] {
					t.Errorf("two rows with key %s", k)
				}
				seen[k] = true
				if r["status"] == nil || r["errors_policy"] == nil || r["block"] == nil {
					t.Errorf("%s: status %v, errors_policy %v", k, r["status"], r["errors_policy"])
				}
				if strings.HasPrefix(fmt.Sprint(r["metric"]), "error_rate") {
					t.Errorf("%s: an error_rate row (n_errors is on every row)", k)
				}
			}
			res, err := parquetio.Read(filepath.Join(out, "results.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range st.Factors {
				if _, ok := res[0][f]; !ok {
					t.Errorf("results.parquet has no factor column %s", f)
				}
			}
		})
	}
	// judge_agreement's rows are written here, not by the metrics
	// package's fixtures: each it declares is written by a shipped study,
	// or by the test named.
	if strings.Contains(flag.Lookup("test.run").Value.String(), "/") {
		return // not every file ran
	}
	elsewhere := map[string]string{
		"three_way_kappa": "pipeline/scoring TestJudgeAgreementThreeWayAndManyJudges (a three-way judge)", "three_way_weighted_kappa": "as three_way_kappa",
		"three_way_accuracy": "as three_way_kappa", "sensitivity_<class>": "as three_way_kappa",
		"rta_human": "pipeline/scoring TestJudgeAgreementByHand (people's labels of benign replies in a cell)",
	}
	for _, k := range spec.MetricKinds() {
		if k.Name != "judge_agreement" {
			continue
		}
		for _, r := range k.Rows.Rows {
			for _, name := range r.Names {
				hit := elsewhere[name] != ""
				for m := range written[k.Name] {
					hit = hit || spec.NameMatches(name, m)
				}
				if !hit {
					t.Errorf("judge_agreement declares %s, which no shipped study writes", name)
				}
			}
		}
	}
}

// The confidence study declares its conditions as factors, so they are
// columns, not parts of names.
func TestReflectionDeclaresItsConditions(t *testing.T) {
	st, err := spec.LoadWith(filepath.Join(configsDir, "reflection.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(st.Factors, ","); got != "confidence_instruction,level,thinking" {
		t.Fatalf("factors %s", got)
	}
	seen := map[string]bool{}
	for _, c := range st.Cells {
		k := strings.Join(c.Factors, "/")
		seen[k] = true
		for i, v := range c.Factors {
			if v == "" {
				t.Errorf("%s x %s: factor %s unset", c.Model.Name, c.Strategy.Name, st.Factors[i])
			}
		}
	}
	if len(seen) != 2*6*2 {
		t.Errorf("%d distinct conditions, want 24 (instruction x level x thinking)", len(seen))
	}
	// Each condition is declared once and the factors derive from it:
	// confidence_instruction from the strategy's params.confidence,
	// thinking from the model's params.thinking, level from the file.
	for _, c := range st.Cells {
		conf, _ := c.Strategy.Params["confidence"].(bool)
		think := c.Model.Spec.Params.Thinking != nil && c.Model.Spec.Params.Thinking.Enabled
		want := []string{map[bool]string{false: "off", true: "on"}[conf], c.Strategy.Name[len("reflection_l"):][:1], map[bool]string{false: "off", true: "on"}[think]}
		if got := strings.Join(c.Factors, "/"); got != strings.Join(want, "/") {
			t.Errorf("%s x %s: factors %s, want %s", c.Model.Name, c.Strategy.Name, got, strings.Join(want, "/"))
		}
		if strings.HasSuffix(c.Strategy.Name, "_conf") != conf || strings.HasSuffix(c.Model.Name, "-thinking") != think {
			t.Errorf("%s x %s: params confidence %v thinking %v", c.Model.Name, c.Strategy.Name, conf, think)
		}
	}
}

// The task files declare the scale of every confidence rule whose prompt
// fixes it: the 0-100 tags read "1" as 1%, the 0.0-1.0 Confidence: line
// reads "1" as certain and refuses 85 (out of its range, so unparsed, not
// guessed).
func TestTaskConfidenceScalesAreDeclared(t *testing.T) {
	st, _ := loadAll(t, []string{"zero_shot"}, taskNames(t), 1, false)
	checked := 0
	defer func() {
		if checked < 5 {
			t.Errorf("only %d tasks with confidence rules checked", checked)
		}
	}()
	for _, task := range st.Tasks {
		if task.Extract == nil || len(task.Spec.Extract.Confidence) == 0 {
			continue
		}
		checked++
		for i, r := range task.Spec.Extract.Confidence {
			if r.Scale == "" || r.Scale == "auto" {
				t.Errorf("task %s: confidence rule %d (%s) guesses its scale", task.Name, i, r.Kind)
			}
		}
		answer := task.Labels[0]
		for _, tc := range []struct {
			reply string
			want  float64 // NaN: unparsed
		}{
			{"<answer>" + answer + "</answer>\nYour confidence (0-100): <confidence>1</confidence>", 0.01},
			{"<answer>" + answer + "</answer>\nYour confidence (0-100): <confidence>85</confidence>", 0.85},
			{"Confidence: 1\nFinal Answer: " + answer, 1},
			{"Confidence: 0.85\nFinal Answer: " + answer, 0.85},
			{"Confidence: 85\nFinal Answer: " + answer, math.NaN()},
		} {
			res := task.Extract.Extract(tc.reply)
			switch {
			case math.IsNaN(tc.want) && res.ConfidenceParsed:
				t.Errorf("task %s: %q read as confidence %v, want unparsed", task.Name, tc.reply, *res.Confidence)
			case !math.IsNaN(tc.want) && (!res.ConfidenceParsed || math.Abs(*res.Confidence-tc.want) > 1e-12):
				t.Errorf("task %s: %q read as %v (parsed %v), want %v", task.Name, tc.reply, res.Confidence, res.ConfidenceParsed, tc.want)
			}
		}
	}
}
