package spec_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Loading a study needs no network code of its own: spec reaches the
// dataset hub only through dataset.HubSource, which pipeline/hub registers,
// so the stage and metric kinds that import spec do not build the hub
// client. (net/http still comes in through pipeline/llm and
// pipeline/dataset today; once they shed it, this test can ban it too.)
func TestSpecBuildsWithoutHub(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/promoral/promoral/pipeline/hub" {
			t.Errorf("pipeline/spec imports %s", p)
		}
	}
}
