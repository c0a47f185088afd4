package spec_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The kinds' contract builds light: spec reaches the dataset hub only
// through dataset.HubSource, which pipeline/hub registers, and Parquet only
// through the format pipeline/dataset/parquetfmt registers, so spec, and
// the stage and metric kinds that import it, build neither the hub client,
// net/http nor Apache Arrow.
func TestSpecBuildsWithoutHub(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		switch {
		case p == "github.com/promoral/promoral/pipeline/hub", p == "net/http",
			p == "github.com/promoral/promoral/pipeline/parquetio", p == "github.com/promoral/promoral/runfolder":
			t.Errorf("pipeline/spec imports %s", p)
		case strings.HasPrefix(p, "github.com/apache/arrow-go/"):
			t.Errorf("pipeline/spec imports Arrow's %s", p)
		}
	}
}
