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

// The contract stage and metric kinds build against names the manifest
// and the model calls, not how run folders are read or calls are sent:
// runfolder/manifest and pipeline/llm import neither Arrow nor net/http,
// and pipeline/spec reaches the manifest without runfolder's readers.
func TestContractsBuildWithoutArrowOrHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/promoral/promoral/"
	for _, pkg := range []string{"./manifest", "../pipeline/llm", "../pipeline/spec"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			switch {
			case pkg == "../pipeline/spec":
				if p == mod+"runfolder" {
					t.Errorf("%s imports %s, which reads Parquet", pkg, p)
				}
			case strings.HasPrefix(p, "github.com/apache/arrow-go/"):
				t.Errorf("%s imports Arrow's %s", pkg, p)
			case p == "net/http":
				t.Errorf("%s imports net/http", pkg)
			}
		}
	}
}
