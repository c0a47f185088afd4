package review_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/spec"
)

// Batch mode prices calls at the batch fields and counts waves: each call
// of a case is one wave, at most batch_cases cases in flight, a finished
// case's slot taken by the next in time for the next wave.
func TestPlanBatchPricesAndWaves(t *testing.T) {
	for _, tc := range []struct {
		limits     string
		best, wrst int
	}{
		// 6 one-call cases, then 6 loop cases (2 calls best, 4 worst).
		{"{mode: batch, batch_cases: 2}", 3 + 3*2, 3 + 3*4},
		{"{mode: batch}", 2, 4},
	} {
		dir := studytest.WriteTree(t, studytest.BatchPlanTree(tc.limits))
		st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
		p, err := review.MakePlanWith(st, filepath.Join(dir, "out"), review.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := p.Models[0]
		if r.Mode != spec.ModeBatch || r.WavesBest != tc.best || r.WavesWorst != tc.wrst {
			t.Errorf("%s: mode %s, waves %d–%d, want %d–%d", tc.limits, r.Mode, r.WavesBest, r.WavesWorst, tc.best, tc.wrst)
		}
		if math.Abs(r.CostWorst-r.LiveCostWorst/2) > 1e-9 || r.CostBest <= 0 {
			t.Errorf("batch cost %.4f–%.4f, live %.4f–%.4f (want half)", r.CostBest, r.CostWorst, r.LiveCostBest, r.LiveCostWorst)
		}
		if len(p.Strategies) != 2 || p.Strategies[1].WavesBest != 2 || p.Strategies[1].WavesWorst != 4 {
			t.Errorf("strategy waves: %+v", p.Strategies)
		}
		if !strings.Contains(strings.Join(p.Notes, "\n"), "up to") {
			t.Errorf("no latency note: %v", p.Notes)
		}
	}
	// Live: the same model without mode batch, unless --batch.
	dir := studytest.WriteTree(t, studytest.BatchPlanTree("{rpm: 10}"))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	live, _ := review.MakePlanWith(st, filepath.Join(dir, "out"), review.PlanOptions{})
	batched, _ := review.MakePlanWith(st, filepath.Join(dir, "out"), review.PlanOptions{Batch: true})
	if live.Models[0].Mode != spec.ModeLive || live.Models[0].WavesWorst != 0 || live.Total.CostWorst != live.Total.LiveCostWorst {
		t.Errorf("live plan: %+v", live.Models[0])
	}
	if batched.Models[0].Mode != spec.ModeBatch || math.Abs(batched.Total.CostWorst-live.Total.CostWorst/2) > 1e-9 {
		t.Errorf("--batch plan: %+v", batched.Models[0])
	}
}
