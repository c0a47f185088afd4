package configs_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// plan and diff cost work with one model: for every shipped config, what
// diff says the change from an empty config costs is what plan says the
// config costs (calls, tokens and dollars per model and in total, the
// judges' calls and batch prices included), on an empty journal. Each
// task is cut to its first items to keep the test quick; every cell,
// model and judge of the config stays in.
func TestPlanAndDiffAgreeOnEveryShippedConfig(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped configs: %v", err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			t.Setenv(engine.CacheEnv, t.TempDir())
			st, err := spec.LoadWith(f, spec.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Select(manifest.Selection{Limit: 40}); err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			plan, err := review.MakePlanWith(st, out, review.PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			change, err := review.MakeChangePlan(&spec.Study{}, st, out)
			if err != nil {
				t.Fatal(err)
			}
			if todo := plan.Total.Cases - plan.Total.CasesDone; change.Added != todo || change.Invalidated != 0 {
				t.Errorf("diff adds %d cases and invalidates %d; plan has %d to run", change.Added, change.Invalidated, todo)
			}
			same := func(what string, p, d review.PlanRow) {
				if p.CallsBest != d.CallsBest || p.CallsWorst != d.CallsWorst {
					t.Errorf("%s: plan %d–%d calls, diff %d–%d", what, p.CallsBest, p.CallsWorst, d.CallsBest, d.CallsWorst)
				}
				if p.InputTokensWorst != d.InputTokensWorst || p.OutputTokensWorst != d.OutputTokensWorst {
					t.Errorf("%s: plan %d+%d tokens, diff %d+%d", what, p.InputTokensWorst, p.OutputTokensWorst, d.InputTokensWorst, d.OutputTokensWorst)
				}
				near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) }
				if !near(p.CostBest, d.CostBest) || !near(p.CostWorst, d.CostWorst) {
					t.Errorf("%s: plan $%.4f–%.4f, diff $%.4f–%.4f", what, p.CostBest, p.CostWorst, d.CostBest, d.CostWorst)
				}
				if p.Unpriced != d.Unpriced {
					t.Errorf("%s: plan unpriced %v, diff unpriced %v", what, p.Unpriced, d.Unpriced)
				}
			}
			same("total", plan.Total, change.Total)
			// The models with work: a model whose cases all finish
			// without a call (recorded replies) has a row in plan only.
			var diffRows []review.PlanRow
			for _, r := range change.Models {
				if r.CallsWorst > 0 {
					diffRows = append(diffRows, r)
				}
			}
			i := 0
			for _, p := range plan.Models {
				if p.CallsWorst == 0 {
					continue
				}
				if i >= len(diffRows) {
					t.Fatalf("diff has no row for %s", p.Model)
				}
				same(p.Model, p, diffRows[i])
				i++
			}
			if i != len(diffRows) {
				t.Errorf("diff has %d model rows with work, plan %d", len(diffRows), i)
			}
			if plan.Total.CallsWorst == 0 {
				t.Errorf("the plan of %s has no work on an empty journal", f)
			}
		})
	}
}
