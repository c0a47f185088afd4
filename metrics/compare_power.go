package metrics

import (
	"math"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
)

// Alpha is the level the compare table marks significance at (Holm p <
// 0.05), and the level its MDE is for.
const Alpha = 0.05

const mdeConvention = "the smallest |b − a| the block's test (McNemar, or with repeats the sign test on items) detects with 80% power at Holm's first level (0.05 / the tests of the block), on these items and samples, at the pair's observed accuracy of a and correlations (the block's power: assumptions where the data cannot say)"

// Comparisons implements spec.Comparer: plan reads the block's pairs.
func (m *compare) Comparisons() spec.Comparisons {
	return spec.Comparisons{Block: m.name, ByModel: m.byModel, Pairs: m.pairs, Tasks: m.tasks, Power: m.power}
}

// mdes is each comparison's minimum detectable difference at 80% power,
// at Holm's first level over the block's tests (the comparisons whose p is
// not NaN), from the comparison's own items: a's accuracy and the
// correlations its data show (PilotPair.Assumptions), the block's power:
// assumptions for what it cannot show (the consistency without repeats).
func (m *compare) mdes(pps []stats.PilotPair, ps []float64) []float64 {
	tests := 0
	for _, p := range ps {
		if !math.IsNaN(p) {
			tests++
		}
	}
	out := make([]float64, len(pps))
	for i, pp := range pps {
		out[i] = math.NaN()
		if tests == 0 || math.IsNaN(ps[i]) || len(pp.ARight) < 2 {
			continue
		}
		a, k := stats.PairAssumptionsOf(pp, m.power.Assumptions())
		out[i] = stats.LatentOf(a).MDE(a.Accuracy, len(pp.ARight), k, Alpha/float64(tests), stats.DefaultPower)
	}
	return out
}

// powered says whether an observed difference reaches the MDE.
func powered(diff, mde float64) string {
	switch {
	case math.IsNaN(diff) || math.IsNaN(mde):
		return ""
	case math.Abs(diff) >= mde:
		return "yes"
	}
	return "no"
}
