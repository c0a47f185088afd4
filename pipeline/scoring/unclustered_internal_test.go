package scoring

import (
	"math"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// In a cell with repeats, a row whose interval treats the samples as
// independent is flagged as too narrow; one drawn over items
// (spec.ClusteredNote) is not, nor is a row without an interval or of a cell
// without repeats.
func TestFlagUnclustered(t *testing.T) {
	repeated := map[cellKey]bool{{"toy", "m", "s", ""}: true}
	rows := []spec.MetricRow{
		{Task: "toy", Model: "m", Strategy: "s", Metric: "a", CILow: 0.1, CIHigh: 0.2},
		{Task: "toy", Model: "m", Strategy: "s", Metric: "b", CILow: 0.1, CIHigh: 0.2, Convention: "x; " + spec.ClusteredNote},
		{Task: "toy", Model: "m", Strategy: "s", Metric: "c", CILow: math.NaN(), CIHigh: math.NaN()},
		{Task: "toy", Model: "m", Strategy: "other", Metric: "d", CILow: 0.1, CIHigh: 0.2},
	}
	flagUnclustered(repeated, rows)
	for i, want := range []bool{true, false, false, false} {
		if got := strings.Contains(rows[i].Convention, unclusteredNote); got != want {
			t.Errorf("row %s: flagged %v, want %v (%q)", rows[i].Metric, got, want, rows[i].Convention)
		}
	}
}
