package metrics

import (
	"testing"

	"github.com/promoral/promoral/internal/deptest"
)

// Kinds build without the engine: the metric kinds and the stage kinds
// import neither the engine, scoring (which runs them), the transport, a
// provider SDK, net/http nor Apache Arrow, directly or not.
func TestKindsBuildWithoutEngine(t *testing.T) {
	m := deptest.Module
	banned := map[string]bool{m + "pipeline/engine": true, m + "pipeline/scoring": true, m + "pipeline/review": true,
		m + "pipeline/batch": true, m + "pipeline/providers": true, m + "pipeline/transport": true, m + "pipeline/hub": true,
		m + "pipeline/parquetio": true}
	for _, pkg := range []string{".", "../stages"} {
		deptest.Forbid(t, pkg, func(dep string) string {
			switch {
			case banned[dep]:
				return "a kind runs inside the engine, not on it"
			case deptest.HasPrefix(dep, deptest.SDKs...):
				return "a provider SDK"
			case dep == "net/http" || deptest.HasPrefix(dep, deptest.Arrow):
				return "no kind needs it"
			}
			return ""
		})
	}
}
