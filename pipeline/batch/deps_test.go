package batch

import (
	"testing"

	"github.com/promoral/promoral/internal/deptest"
)

// The transports sit below the engine: batch and transport build without
// the engine (pipeline/engine), directly or not, so the engine may import
// them. (Their tests may still run them in an engine, from a _test
// package.)
func TestTransportsBuildWithoutEngine(t *testing.T) {
	for _, pkg := range []string{".", "../transport"} {
		deptest.Forbid(t, pkg, func(dep string) string {
			if dep == deptest.Module+"pipeline/engine" {
				return "the engine sits above the transports"
			}
			return ""
		})
	}
}
