package review

import (
	"fmt"
	"math"

	"github.com/promoral/promoral/pipeline/stats"
)

// setMDEs gives each paired cell of a run diff its minimum detectable
// difference: 80% power at Holm's first level over the cells tested (ps
// not NaN), on the cell's items and samples, at the old run's accuracy and
// the correlations the two runs' answers show (the defaults where they
// cannot say), as the compare block computes its MDE.
func setMDEs(cells []PairedCell, ps []float64) {
	tests := 0
	for _, p := range ps {
		if !math.IsNaN(p) {
			tests++
		}
	}
	fallback := stats.PowerAssumptions{Accuracy: stats.DefaultPowerAccuracy, Correlation: stats.DefaultPowerCorrelation, Consistency: stats.DefaultPowerConsistency}
	for i := range cells {
		c := &cells[i]
		c.MDE = math.NaN()
		if tests == 0 || math.IsNaN(ps[i]) || len(c.pp.ARight) < 2 {
			continue
		}
		a, k := stats.PairAssumptionsOf(c.pp, fallback)
		c.MDE = mdeOf(a, len(c.pp.ARight), k, stageAlpha/float64(tests))
	}
}

// mdeNote is the MDE beside a cell's interval, and whether the difference
// reaches it.
func mdeNote(c PairedCell) string {
	switch {
	case math.IsNaN(c.MDE):
		return "  MDE none"
	case math.Abs(c.Diff.MeanDiff) >= c.MDE:
		return fmt.Sprintf("  MDE %.4f, reached", c.MDE)
	}
	return fmt.Sprintf("  MDE %.4f, below: not powered", c.MDE)
}
