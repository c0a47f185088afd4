package dataset

import (
	"os/exec"
	"strings"
	"testing"
)

// dataset and simulated, which stage and metric kinds reach through the
// study's types, link no Apache Arrow, directly or not: Parquet comes in
// through pipeline/dataset/parquetfmt, which only programs import.
func TestBuildsWithoutArrow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"github.com/promoral/promoral/pipeline/dataset", "github.com/promoral/promoral/pipeline/simulated"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "github.com/apache/arrow-go/") {
				t.Errorf("%s imports %s (Arrow); read Parquet in pipeline/dataset/parquetfmt", pkg, p)
				break
			}
		}
	}
}
