package batch

import (
	"os/exec"
	"strings"
	"testing"
)

// The transports sit below the engine: batch and transport build without
// the engine (pipeline/engine), directly or not, so the engine may import
// them. (Their tests may still run them in an engine, from a _test
// package.)
func TestTransportsBuildWithoutEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{".", "../transport"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == "github.com/promoral/promoral/pipeline/engine" {
				t.Errorf("%s imports the engine (%s)", pkg, p)
			}
		}
	}
}
