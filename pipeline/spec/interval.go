package spec

import (
	"fmt"
	"math"

	"github.com/promoral/promoral/pipeline/stats"
)

// A bootstrap replicate whose statistic is undefined (a kappa where the
// resample holds one class only, Spearman's rho of a resample with no wrong
// answer) cannot take part in the percentile interval. Every row with an
// interval counts those replicates (ci_reps, ci_undefined in
// metrics.parquet) and says so; past the share the interval leaves to its
// tails (stats.Interval.TooManyUndefined), the row's figure and interval
// are withheld with status too_few.

// ClusteredNote is on the convention of a row whose interval was drawn
// over items, each with all its samples, in a cell with repeats (a block
// that scores every sample but resamples items): it is not too narrow, so
// scoring leaves the row alone where it flags intervals that treat an
// item's samples as independent.
const ClusteredNote = "the interval resamples items, each with all its samples"

// SetCI puts a bootstrap interval on the row with the count of its
// undefined replicates, and withholds the figure (status too_few) when
// they are too many.
func SetCI(r *MetricRow, iv stats.Interval) {
	r.CILow, r.CIHigh = iv.Lo, iv.Hi
	if iv.Reps <= 0 {
		return
	}
	r.CIReps, r.CIUndefined = iv.Reps, iv.Undefined
	if r.Status != "" && r.Status != StatusOK {
		// No figure to give an interval for (the row says why).
		r.CILow, r.CIHigh = math.NaN(), math.NaN()
		return
	}
	if r.Convention != "" && iv.Undefined > 0 {
		r.Convention += "; "
	}
	switch {
	case iv.TooManyUndefined():
		r.Convention += fmt.Sprintf("too_few: %d of %d bootstrap replicates have no defined value, more than the %.3g%% a %.3g%% interval leaves to its tails, so neither the figure nor its interval is given",
			iv.Undefined, iv.Reps, 100*(1-iv.Level), 100*iv.Level)
		r.CILow, r.CIHigh = math.NaN(), math.NaN()
		if r.Status == "" || r.Status == StatusOK {
			r.Status = StatusTooFew // settle withholds the figure too
		}
	case iv.Undefined > 0:
		r.Convention += fmt.Sprintf("%d of %d bootstrap replicates have no defined value and are left out of the %.3g%% interval (up to %.3g%% may be)",
			iv.Undefined, iv.Reps, 100*iv.Level, 100*(1-iv.Level))
	}
}
