package simulated

import (
	"fmt"
	"math"
	"testing"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/stats"
)

// simStudies runs studies of n items, k samples a side, comparing strategy
// a with three others (pairs a–b1, a–b2, a–b3, Holm across the three, as a
// compare block tests them); b1 is better by delta, b2 and b3 are not. It
// returns the share of studies in which the a–b1 pair is significant (Holm
// p < 0.05) and the share in which any pair is.
func simStudies(t *testing.T, studies, n, k int, delta float64) (power, anyReject float64) {
	t.Helper()
	hit, anyHit := 0, 0
	acc, corr, cons := 0.75, 0.5, 0.7
	m, err := New(&Spec{Accuracy: &acc, Correlation: &corr, Consistency: &cons, Effects: map[string]float64{"b1": delta}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < studies; s++ {
		m.seed = int64(s) + 1 // a study of its own: as simulate.seed does
		right := map[string][]int{}
		for _, strat := range []string{"a", "b1", "b2", "b3"} {
			rs := make([]int, n)
			for i := range rs {
				c := &llm.CaseInfo{Model: "m", Strategy: strat, Task: "t", Item: fmt.Sprint("item", i)}
				for r := 0; r < k; r++ {
					if m.Right(c, r, 0) {
						rs[i]++
					}
				}
			}
			right[strat] = rs
		}
		ks := make([]int, n)
		for i := range ks {
			ks[i] = k
		}
		ps := make([]float64, 3)
		for j, b := range []string{"b1", "b2", "b3"} {
			if k == 1 {
				ca, cb := make([]bool, n), make([]bool, n)
				for i := range ca {
					ca[i], cb[i] = right["a"][i] == 1, right[b][i] == 1
				}
				ps[j] = stats.PairedDiff(ca, cb, 1, 1).McNemarP
			} else {
				ps[j] = stats.PairedItems(right["a"], ks, right[b], ks, 1, 1).McNemarP
			}
		}
		holm := stats.Holm(ps)
		if holm[0] < 0.05 {
			hit++
		}
		if holm[0] < 0.05 || holm[1] < 0.05 || holm[2] < 0.05 {
			anyHit++
		}
	}
	return float64(hit) / float64(studies), float64(anyHit) / float64(studies)
}

// The power plan predicts is the power the study's own test has on the
// simulated model's answers: over 1,000 simulated studies at no
// difference, at the predicted MDE and at twice it, the share of studies
// whose a–b1 pair is significant after Holm across three pairs is the
// predicted power within 3 points, and under no difference the share of
// studies with any significant pair stays within α (plus 3 points of
// simulation error).
func TestPredictedPowerMatchesSimulatedStudies(t *testing.T) {
	const studies, alpha, pairs = 1000, 0.05, 3
	l := stats.LatentOf(stats.PowerAssumptions{Accuracy: 0.75, Correlation: 0.5, Consistency: 0.7})
	t.Logf("%-18s %8s %10s %10s %10s", "design", "delta", "predicted", "observed", "any pair")
	for _, d := range []struct{ n, k int }{{300, 1}, {150, 3}} {
		mde := l.MDE(0.75, d.n, d.k, alpha/pairs, stats.DefaultPower)
		if math.IsNaN(mde) || mde <= 0 || mde > 0.2 {
			t.Fatalf("%d items x %d: MDE %v", d.n, d.k, mde)
		}
		for _, delta := range []float64{0, mde, 2 * mde} {
			pred := l.PairPower(0.75, delta, d.n, d.k, alpha/pairs)
			obs, anyRej := simStudies(t, studies, d.n, d.k, delta)
			t.Logf("%4d items x %d rep %8.4f %10.3f %10.3f %10.3f", d.n, d.k, delta, pred, obs, anyRej)
			if math.Abs(obs-pred) > 0.03 {
				t.Errorf("%d items x %d repeats, delta %.4f: predicted power %.3f, observed %.3f of %d studies", d.n, d.k, delta, pred, obs, studies)
			}
			if delta == 0 && anyRej > alpha+0.03 {
				t.Errorf("%d items x %d repeats, no difference: %.3f of %d studies rejected some pair, above alpha %.2f", d.n, d.k, anyRej, studies, alpha)
			}
		}
	}
}
