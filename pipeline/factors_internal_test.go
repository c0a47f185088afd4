package pipeline

import "testing"

// A factor may not take the name of a column results.parquet or
// metrics.parquet already has.
func TestReservedColumnsCoverTheOutputs(t *testing.T) {
	e := &Engine{study: &Study{}}
	for _, c := range append(e.baseResultColumns(), metricColumns(nil)...) {
		if !reservedColumns[c.Name] {
			t.Errorf("column %s is not reserved: a factor could shadow it", c.Name)
		}
	}
}
