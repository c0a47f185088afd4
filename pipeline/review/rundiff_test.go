package review_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/review"
)

// diff pairs two runs with repeats by item: an item's score is its share of
// right samples on each side, n counts items, and the difference is the
// mean over items of the new score minus the old.
func TestRunDiffPairsRepeatsByItem(t *testing.T) {
	t.Setenv("PROMORAL_TEST_KEY_REP", "sk-test-0000")
	var outs []string
	for _, seed := range []uint64{7, 8} {
		t.Setenv(engine.CacheEnv, t.TempDir())
		srv := studytest.NewRandomServer(t, seed)
		cfg := studytest.RepeatsStudy(t, "", srv, 3)
		out := filepath.Join(filepath.Dir(cfg), "..", "out")
		studytest.RunRepeats(t, cfg, out, context.Background())
		outs = append(outs, out)
	}
	share := func(out string) map[string]float64 {
		right, n := map[string]float64{}, map[string]float64{}
		for _, r := range studytest.ReadRows(t, filepath.Join(out, "results.parquet")) {
			id := r["item_id"].(string)
			n[id]++
			if r["correct"] == true {
				right[id]++
			}
		}
		for id := range n {
			right[id] /= n[id]
		}
		return right
	}
	a, b := share(outs[0]), share(outs[1])
	want, worse, better := 0.0, 0, 0
	for id := range a {
		want += (b[id] - a[id]) / float64(len(a))
		switch {
		case b[id] < a[id]:
			worse++
		case b[id] > a[id]:
			better++
		}
	}
	c, err := review.CompareRuns(outs[0], outs[1], review.RunDiffOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Cells) != 1 {
		t.Fatalf("%d cells", len(c.Cells))
	}
	cell := c.Cells[0]
	if !cell.Repeats || cell.Diff.N != 6 || math.Abs(cell.Diff.MeanDiff-want) > 1e-12 || cell.Diff.B != worse || cell.Diff.C != better || cell.Dropped != 0 {
		t.Errorf("paired by item: %+v; want 6 items, mean difference %.4f, %d worse, %d better", cell, want, worse, better)
	}
}
