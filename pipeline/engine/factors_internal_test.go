package engine

import (
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// A factor may not take the name of a column results.parquet already has
// (package scoring checks metrics.parquet's).
func TestReservedColumnsCoverTheOutputs(t *testing.T) {
	e := &Engine{study: &spec.Study{}}
	for _, c := range e.baseResultColumns() {
		if !spec.ReservedColumn(c.Name) {
			t.Errorf("column %s is not reserved: a factor could shadow it", c.Name)
		}
	}
}
