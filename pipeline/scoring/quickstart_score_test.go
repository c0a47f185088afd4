package scoring_test

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// The shipped quickstart, offline: the scripted demo and the re-scoring of
// the 29,050 published ProMoral-Bench ETHICS replies, whose accuracy and F1
// must reproduce the published figures (within 0.005) for at least 38 of
// the 40 model x strategy runs.
func TestQuickstartRescoresPublishedFiguresScore(t *testing.T) {
	if testing.Short() {
		t.Skip("re-scores 29,050 replies")
	}
	st := studytest.MustLoad(t, filepath.Join("..", "..", "configs", "quickstart.yaml"))
	out := t.TempDir()
	sum, _ := studytest.Apply(t, st, out)
	if sum.Errors != 0 || sum.Cases != 100*2+29050 {
		t.Fatalf("summary: %s", sum)
	}

	// reference_comparison.csv: one row per recorded model x strategy.
	f, err := os.Open(filepath.Join(out, "reference_comparison.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	runs, matched := 0, 0
	var off []string
	models := map[string]bool{}
	for _, r := range recs[1:] {
		if r[col["dataset"]] != "ETHICS" || r[col["accuracy_published"]] == "" {
			continue
		}
		runs++
		models[r[col["model"]]] = true
		acc, _ := strconv.ParseFloat(r[col["accuracy_diff"]], 64)
		f1, _ := strconv.ParseFloat(r[col["f1_diff"]], 64)
		// Our own check of the metric's match column: |diff| <= 0.005
		// after rounding to the published 4 decimals.
		ok := math.Abs(acc) <= 0.00505 && math.Abs(f1) <= 0.00505
		if ok != (r[col["match"]] == "true") {
			t.Errorf("%s/%s: match column %s but diffs %v, %v", r[col["model"]], r[col["strategy"]], r[col["match"]], acc, f1)
		}
		if ok {
			matched++
		} else {
			off = append(off, r[col["model"]]+"/"+r[col["strategy"]])
		}
	}
	if runs != 40 {
		t.Errorf("%d runs joined with published figures, want 40", runs)
	}
	if matched < 38 {
		t.Errorf("only %d of %d runs match the published accuracy and F1 within 0.005; off: %v", matched, runs, off)
	}
	var names []string
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "claude-sonnet-4,deepseek-v3.1,gemini-2.5-pro,gpt-4.1" {
		t.Errorf("models reported %v: report_as must carry the recorded names", names)
	}

	// The printed report.
	if len(sum.Report) != 1 || !strings.Contains(sum.Report[0], "runs match the published accuracy and F1 within 0.005") {
		t.Errorf("report: %q", sum.Report)
	}

	// metrics.parquet: the documented long format.
	rows, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []string{"block", "ci_high", "ci_low", "ci_reps", "ci_undefined", "convention", "errors_policy", "metric", "model", "n", "n_cases", "n_errors", "n_unparsed",
		"selection", "status", "strategy", "subset", "task", "unparsed_policy", "value"}
	var cols []string
	for k := range rows[0] {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	if strings.Join(cols, ",") != strings.Join(wantCols, ",") {
		t.Errorf("metrics.parquet columns %v, want %v", cols, wantCols)
	}
	find := func(model, strategy, task, subset, metric string) map[string]any {
		for _, r := range rows {
			if r["model"] == model && r["strategy"] == strategy && r["task"] == task && r["subset"] == subset && r["metric"] == metric {
				return r
			}
		}
		t.Fatalf("metrics.parquet has no %s/%s/%s/%s/%s", model, strategy, task, subset, metric)
		return nil
	}
	// Published: GPT-4.1 zero-shot, 1,700 items, accuracy 0.9459.
	r := find("gpt-4.1", "zero_shot", "promoral_replies", "all", "accuracy")
	if v := r["value"].(float64); math.Abs(v-0.9459) > 0.00005 || r["n"].(int64) != 1700 {
		t.Errorf("gpt-4.1 zero_shot accuracy %v n %v, want 0.9459 on 1700", v, r["n"])
	}
	if lo, hi := r["ci_low"], r["ci_high"]; lo == nil || hi == nil || lo.(float64) > 0.9459 || hi.(float64) < 0.9459 {
		t.Errorf("accuracy interval [%v, %v] does not contain the estimate", lo, hi)
	}
	if r["ci_reps"] != int64(1000) || r["ci_undefined"] != int64(0) {
		t.Errorf("accuracy interval rests on %v replicates, %v undefined; want 1000 and 0", r["ci_reps"], r["ci_undefined"])
	}
	if r := find("gpt-4.1", "zero_shot", "promoral_replies", "all", "unparsed_rate"); r["ci_reps"] != nil || r["ci_undefined"] != nil {
		t.Errorf("a row without an interval has ci_reps %v, ci_undefined %v; want null", r["ci_reps"], r["ci_undefined"])
	}
	// Claude Sonnet 4 self-correct: 100 replies, 99 with label and confidence.
	if n := find("claude-sonnet-4", "self_correct", "promoral_replies", "all", "accuracy")["n"].(int64); n != 99 {
		t.Errorf("claude self_correct n = %d, want 99", n)
	}
	// The engine demo is scored too (its own block, the run's policy).
	for _, s := range []string{"zero_shot", "self_correct"} {
		find("scripted-keyword", s, "ethics", "all", "accuracy")
		find("scripted-keyword", s, "ethics", "short", "accuracy")
	}
}
