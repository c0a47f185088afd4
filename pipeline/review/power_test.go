package review_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/stats"
)

// powerTree is the toy task over n items, a priced simulated model and a
// compare block over one_shot and loop; extra is added to the run file.
func powerTree(n int, model, extra string) map[string]string {
	var items strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&items, `{"id":"i%03d","text":"I did thing %d.","gold":"%d"}`+"\n", i, i, i%2)
	}
	return studytest.BaseTree(map[string]string{
		"data/items.jsonl": items.String(),
		"configs/run.yaml": `name: power-run
models:
  - ` + model + `
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 4}
metrics:
  - {kind: compare, pairs: [[one_shot, loop]], bootstrap: 0` + extra + `}
`,
	})
}

// Plan's MDE is the power analysis of the block's one test at the study's
// items, from the declared assumptions; --detect gives designs cheapest
// first whose power reaches 80%.
func TestPlanPowerFromDeclaredAssumptions(t *testing.T) {
	dir := studytest.WriteTree(t, powerTree(300, "{name: sim, provider: simulated, price: {input: 1, output: 4}}", ", power: {accuracy: 0.7, correlation: 0.4, consistency: 0.6}"))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	p, err := review.MakePlanWith(st, filepath.Join(dir, "out"), review.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := review.MakePower(st, p, review.PowerOptions{Detect: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if len(pw.Blocks) != 1 || pw.Blocks[0].Tests != 1 || len(pw.Blocks[0].Rows) != 1 {
		t.Fatalf("one block, one test, one row: %+v", pw.Blocks)
	}
	r := pw.Blocks[0].Rows[0]
	a := stats.PowerAssumptions{Accuracy: 0.7, Correlation: 0.4, Consistency: 0.6}
	want := stats.LatentOf(a).MDE(0.7, 300, 1, 0.05, 0.8)
	if r.Items != 300 || r.Repeats != 1 || r.Source != "declared" || r.Assumptions != a || math.Abs(float64(r.MDE)-want) > 1e-9 {
		t.Errorf("row %+v, want 300 items, 1 repeat, declared, MDE %.4f", r, want)
	}
	if pow := stats.LatentOf(a).PairPower(0.7, float64(r.MDE), 300, 1, 0.05); math.Abs(pow-0.8) > 0.01 {
		t.Errorf("power at the MDE %.4f, want 0.8", pow)
	}
	d := pw.Blocks[0].Detect
	if len(d) != 1 || len(d[0].Options) == 0 {
		t.Fatalf("detect: %+v", d)
	}
	for i, o := range d[0].Options {
		if pow := stats.LatentOf(a).PairPower(0.7, 0.05, o.Items, o.Repeats, 0.05); pow < 0.8 {
			t.Errorf("option %d x %d has power %.3f", o.Items, o.Repeats, pow)
		}
		if o.CostBest <= 0 || (i > 0 && o.CostBest+o.CostWorst < d[0].Options[i-1].CostBest+d[0].Options[i-1].CostWorst) {
			t.Errorf("options not priced cheapest first: %+v", d[0].Options)
		}
	}
}

// A pilot run of a simulated model with a known effect gives each pair's
// assumptions near the simulated ones, with a range for the MDE.
func TestPlanPowerFromPilot(t *testing.T) {
	model := "{name: sim, provider: simulated, simulate: {accuracy: 0.7, correlation: 0.5, consistency: 0.8, unparsed: 0}}"
	dir := studytest.WriteTree(t, powerTree(400, model, ""))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	pilot := filepath.Join(dir, "pilot")
	studytest.Apply(t, st, pilot)
	p, err := review.MakePlanWith(st, filepath.Join(dir, "out"), review.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw, err := review.MakePower(st, p, review.PowerOptions{Pilot: pilot})
	if err != nil {
		t.Fatal(err)
	}
	r := pw.Blocks[0].Rows[0]
	if !strings.HasPrefix(r.Source, "pilot, 400 items") || r.Pair != "sim: one_shot vs loop" {
		t.Fatalf("row %+v", r)
	}
	if math.Abs(r.Assumptions.Accuracy-0.7) > 0.05 || math.Abs(r.Assumptions.Correlation-0.5) > 0.12 {
		t.Errorf("pilot assumptions %+v, want about accuracy 0.7, correlation 0.5", r.Assumptions)
	}
	if !(r.MDELo <= r.MDE && r.MDE <= r.MDEHi && r.MDEHi < 0.3) {
		t.Errorf("MDE %.4f with range %.4f–%.4f", r.MDE, r.MDELo, r.MDEHi)
	}
	if _, err := review.MakePower(st, p, review.PowerOptions{Pilot: filepath.Join(dir, "nowhere")}); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("a missing pilot: %v", err)
	}
}

// A run diff gives each cell's MDE beside its interval, and says whether
// the difference reaches it: a true gain of 0.2 does, no change does not.
func TestRunDiffGivesTheMDE(t *testing.T) {
	old := studytest.WriteTree(t, powerTree(300, "{name: sim, provider: simulated, simulate: {unparsed: 0}}", ""))
	neu := studytest.WriteTree(t, powerTree(300, "{name: sim, provider: simulated, simulate: {unparsed: 0, effects: {one_shot: 0.2}}}", ""))
	a, b := filepath.Join(old, "out"), filepath.Join(neu, "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(old, "configs/run.yaml")), a)
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(neu, "configs/run.yaml")), b)
	c, err := review.CompareRuns(a, b, review.RunDiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]review.PairedCell{}
	for _, cell := range c.Cells {
		got[cell.Strategy] = cell
	}
	one, loop := got["one_shot"], got["loop"]
	if !(one.MDE > 0.02 && one.MDE < 0.15) || math.Abs(one.Diff.MeanDiff) < one.MDE {
		t.Errorf("one_shot: diff %.4f, MDE %.4f: want a gain of about 0.2 above an MDE under 0.15", one.Diff.MeanDiff, one.MDE)
	}
	if loop.Diff.MeanDiff != 0 || !(loop.MDE > 0) {
		t.Errorf("loop: diff %.4f, MDE %.4f: the same replies, and an MDE", loop.Diff.MeanDiff, loop.MDE)
	}
	text := strings.Join(c.Lines(false), "\n")
	if !strings.Contains(text, "reached") || !strings.Contains(text, "below: not powered") {
		t.Errorf("the diff's lines do not say which differences reach the MDE:\n%s", text)
	}
}
