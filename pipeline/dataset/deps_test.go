package dataset

import (
	"testing"

	"github.com/promoral/promoral/internal/deptest"
)

// dataset and simulated, which stage and metric kinds reach through the
// study's types, link no Apache Arrow, directly or not: Parquet comes in
// through pipeline/dataset/parquetfmt, which only programs import.
func TestBuildsWithoutArrow(t *testing.T) {
	for _, pkg := range []string{deptest.Module + "pipeline/dataset", deptest.Module + "pipeline/simulated"} {
		deptest.Forbid(t, pkg, func(dep string) string {
			if deptest.HasPrefix(dep, deptest.Arrow) {
				return "Arrow; read Parquet in pipeline/dataset/parquetfmt"
			}
			return ""
		})
	}
}
