package metrics

import (
	"os/exec"
	"strings"
	"testing"
)

// Kinds build without the engine: the metric kinds and the stage kinds
// import neither the engine, scoring (which runs them), the transport, a
// provider SDK, net/http nor Apache Arrow, directly or not.
func TestKindsBuildWithoutEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/promoral/promoral/"
	banned := []string{mod + "pipeline/engine", mod + "pipeline/scoring", mod + "pipeline/review", mod + "pipeline/batch",
		mod + "pipeline/providers", mod + "pipeline/transport", mod + "pipeline/hub", mod + "pipeline/parquetio"}
	sdks := []string{"github.com/openai/", "github.com/anthropics/", "google.golang.org/genai"}
	for _, pkg := range []string{".", "../stages"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			for _, b := range banned {
				if p == b {
					t.Errorf("%s imports %s", pkg, p)
				}
			}
			if p == "net/http" || strings.HasPrefix(p, "github.com/apache/arrow-go/") {
				t.Errorf("%s imports %s, which no kind needs", pkg, p)
			}
			for _, b := range sdks {
				if strings.HasPrefix(p, b) {
					t.Errorf("%s imports the provider SDK package %s", pkg, p)
					break
				}
			}
		}
	}
}
