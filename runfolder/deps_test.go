package runfolder

import (
	"os/exec"
	"strings"
	"testing"
)

// The readers of a run folder build without the engine or a provider SDK:
// runfolder, view and report import neither, directly or not.
func TestReadersBuildWithoutEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".", "../view", "../report").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	banned := []string{"github.com/openai/", "github.com/anthropics/", "google.golang.org/genai"}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/promoral/promoral/pipeline/engine" || p == "github.com/promoral/promoral/pipeline/providers" ||
			p == "github.com/promoral/promoral/pipeline/transport" {
			t.Errorf("a reader imports the engine's %s", p)
		}
		for _, b := range banned {
			if strings.HasPrefix(p, b) {
				t.Errorf("a reader imports the provider SDK package %s", p)
				break
			}
		}
	}
}
