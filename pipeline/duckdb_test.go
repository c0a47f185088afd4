package pipeline_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/needs"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// The outputs open in DuckDB, the tool users query them with. .ci/run
// installs DuckDB's Node package; without it (and node) the test is skipped
// with a notice, or fails under PROMORAL_REQUIRE_TOOLS=1 (see internal/needs).
func TestOutputsOpenInDuckDB(t *testing.T) {
	node, ci := needs.DuckDB(t)
	dir := writeTree(t, baseTree(map[string]string{
		"configs/run.yaml": baseTree(nil)["configs/run.yaml"] + "metrics: [{kind: classification, bootstrap: 0}]\n",
	}))
	out := filepath.Join(dir, "out")
	sum, _ := apply(t, mustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	metrics, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
	if err != nil || len(metrics) == 0 {
		t.Fatalf("metrics.parquet: %d rows, %v", len(metrics), err)
	}
	files := []string{filepath.Join(out, "results.parquet"), filepath.Join(out, "calls.parquet"), filepath.Join(out, "metrics.parquet")}
	cmd := exec.Command(node, append([]string{filepath.Join(ci, "duckdb-check.mjs")}, files...)...)
	cmd.Dir = ci
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.String())
	}
	want := map[string]int{files[0]: sum.Cases, files[1]: sum.CallsNew, files[2]: len(metrics)}
	sc := bufio.NewScanner(bytes.NewReader(data))
	seen := 0
	for sc.Scan() {
		var r struct {
			File    string
			Rows    int
			Columns []struct{ Column_name, Column_type string }
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Rows != want[r.File] || len(r.Columns) < 9 {
			t.Errorf("%s: DuckDB sees %d rows and %d columns, want %d rows", r.File, r.Rows, len(r.Columns), want[r.File])
		}
		seen++
	}
	if seen != 3 {
		t.Fatalf("DuckDB read %d files:\n%s", seen, data)
	}
}
