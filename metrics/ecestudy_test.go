package metrics

import (
	"math"

	"github.com/promoral/promoral/pipeline/stats"
)

// eceStudy is eceStudyOf over a list of answers, as TestECEPromoralBinning
// works it by hand: a p of exactly 0 is in no bin but counts in n.
func eceStudy(p []float64, y []bool, bins int) float64 {
	acc := stats.NewBinAcc(bins)
	q, n := 0, 0
	for i, v := range p {
		if math.IsNaN(v) {
			continue
		}
		n++
		if v > 0 {
			q++
			acc.Add(v, y[i])
		}
	}
	return eceStudyOf(acc, q, n)
}
