package studytest

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// CheckDeclaredRows fails t for each row of the run folder's
// metrics.parquet whose metric the kind of its block (as manifest.json
// records it) does not declare (spec.MetricKind.Rows), and returns the
// metric names written, by kind.
func CheckDeclaredRows(t testing.TB, outDir string) map[string]map[string]bool {
	t.Helper()
	man, err := manifest.Read(outDir)
	if err != nil {
		t.Fatal(err)
	}
	kindOf := map[string]string{}
	for _, b := range man.Metrics {
		kindOf[b.Name] = b.Kind
	}
	decl := map[string]spec.RowsDoc{}
	for _, k := range spec.MetricKinds() {
		decl[k.Name] = k.Rows
	}
	rows, err := parquetio.Read(filepath.Join(outDir, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]map[string]bool{}
	undeclared := map[[2]string]int{} // block, metric -> rows
	var order [][2]string
	for _, r := range rows {
		block, metric := fmt.Sprint(r["block"]), fmt.Sprint(r["metric"])
		kind, ok := kindOf[block]
		if !ok {
			t.Errorf("metrics.parquet: block %q is not in manifest.json", block)
			continue
		}
		if !decl[kind].Declares(metric) {
			k := [2]string{block, metric}
			if undeclared[k] == 0 {
				order = append(order, k)
			}
			undeclared[k]++
		}
		if written[kind] == nil {
			written[kind] = map[string]bool{}
		}
		written[kind][metric] = true
	}
	for _, k := range order {
		t.Errorf("block %s (kind %s) writes metric %q (%d rows), which its kind does not declare: add it to the Rows of its spec.RegisterMetric (and run go run ./cmd/promoral docs)", k[0], kindOf[k[0]], k[1], undeclared[k])
	}
	return written
}
