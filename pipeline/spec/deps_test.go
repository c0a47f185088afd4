package spec_test

import (
	"testing"

	"github.com/promoral/promoral/internal/deptest"
)

// The kinds' contract builds light: spec reaches the dataset hub only
// through dataset.HubSource, which pipeline/hub registers, and Parquet only
// through the format pipeline/dataset/parquetfmt registers, so spec, and
// the stage and metric kinds that import it, build neither the hub client,
// net/http nor Apache Arrow.
func TestSpecBuildsWithoutHub(t *testing.T) {
	m := deptest.Module
	deptest.Forbid(t, ".", func(dep string) string {
		switch {
		case dep == m+"pipeline/hub" || dep == "net/http":
			return "loading reaches the hub through dataset.HubSource"
		case dep == m+"pipeline/parquetio" || dep == m+"runfolder" || deptest.HasPrefix(dep, deptest.Arrow):
			return "Parquet comes in through pipeline/dataset/parquetfmt"
		}
		return ""
	})
}
