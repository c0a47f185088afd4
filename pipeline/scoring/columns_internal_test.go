package scoring

import (
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// A factor may not take the name of a column metrics.parquet already has.
func TestReservedColumnsCoverTheMetrics(t *testing.T) {
	for _, c := range metricColumns(nil) {
		if !spec.ReservedColumn(c.Name) {
			t.Errorf("column %s is not reserved: a factor could shadow it", c.Name)
		}
	}
}
