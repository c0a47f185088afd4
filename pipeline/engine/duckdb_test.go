package engine_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/needs"
	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// The outputs open in DuckDB, the tool users query them with. .ci/run
// installs DuckDB's Node package; without it (and node) the test is skipped
// with a notice, or fails under PROMORAL_REQUIRE_TOOLS=1 (see internal/needs).
func TestOutputsOpenInDuckDB(t *testing.T) {
	node, ci := needs.DuckDB(t)
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/run.yaml": studytest.BaseTree(nil)["configs/run.yaml"] + "metrics: [{kind: classification, bootstrap: 0}]\n",
	}))
	out := filepath.Join(dir, "out")
	sum, _ := studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
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

// The flat columns read in DuckDB without JSON parsing: typed as the data
// shows, and equal to what the JSON columns hold.
func TestFlatColumnsInDuckDB(t *testing.T) {
	node, ci := needs.DuckDB(t)
	dir := studytest.WriteTree(t, flatTree())
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	res := strings.ReplaceAll(filepath.Join(out, "results.parquet"), "'", "''")
	queries := []string{
		// Types as DuckDB sees them.
		`SELECT column_name AS c, column_type AS t FROM (DESCRIBE SELECT * FROM '` + res + `')
		 WHERE column_name LIKE 'out\_%' ESCAPE '\' OR column_name LIKE 'subset\_%' ESCAPE '\' OR column_name IN ('item__id', 'item_score', 'item_note', 'item_tags') ORDER BY c`,
		// Each flat column against its JSON column: no row differs.
		`SELECT count(*) FILTER (WHERE out_label IS DISTINCT FROM json_extract_string(outputs, '$.label')) AS label,
		        count(*) FILTER (WHERE out_confidence IS DISTINCT FROM CAST(json_extract(outputs, '$.confidence') AS DOUBLE)) AS confidence,
		        count(*) FILTER (WHERE out_rounds IS DISTINCT FROM CAST(json_extract(outputs, '$.rounds') AS BIGINT)) AS rounds,
		        count(*) FILTER (WHERE item_score IS DISTINCT FROM CAST(json_extract(item, '$.score') AS DOUBLE)) AS score,
		        count(*) FILTER (WHERE item__id IS DISTINCT FROM json_extract_string(item, '$.id')) AS id,
		        count(*) FILTER (WHERE subset_stolen IS DISTINCT FROM (CASE WHEN task = 'toy' THEN list_contains(CAST(subsets AS VARCHAR[]), 'stolen') END)) AS stolen
		 FROM '` + res + `'`,
		// What a study asks: accuracy by subset, from typed columns only.
		`SELECT subset_stolen AS stolen, count(*) AS n, sum(correct::INT) AS right, round(avg(out_confidence), 3) AS conf
		 FROM '` + res + `' WHERE task = 'toy' GROUP BY ALL ORDER BY ALL`,
	}
	cmd := exec.Command(node, append([]string{filepath.Join(ci, "duckdb-query.mjs")}, queries...)...)
	cmd.Dir = ci
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		t.Fatalf("DuckDB answered %d queries:\n%s", len(lines), data)
	}
	var types []struct{ C, T string }
	json.Unmarshal([]byte(lines[0]), &types)
	gotTypes := map[string]string{}
	for _, r := range types {
		gotTypes[r.C] = r.T
	}
	wantTypes := map[string]string{"out_confidence": "DOUBLE", "out_flag": "BOOLEAN", "out_half": "DOUBLE", "out_label": "VARCHAR",
		"out_mixed": "VARCHAR", "out_pair": "VARCHAR", "out_rounds": "BIGINT", "item__id": "VARCHAR", "item_note": "VARCHAR",
		"item_score": "DOUBLE", "item_tags": "VARCHAR", "subset_high": "BOOLEAN", "subset_stolen": "BOOLEAN"}
	if !reflect.DeepEqual(gotTypes, wantTypes) {
		t.Errorf("DuckDB types:\n got %v\nwant %v", gotTypes, wantTypes)
	}
	if want := `[{"label":"0","confidence":"0","rounds":"0","score":"0","id":"0","stolen":"0"}]`; lines[1] != want {
		t.Errorf("rows where a flat column differs from its JSON column: %s, want %s", lines[1], want)
	}
	// The same figures from the results read in Go.
	rows, err := parquetio.Read(filepath.Join(out, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	type agg struct {
		n, right, nconf int
		conf            float64
	}
	by := map[bool]*agg{false: {}, true: {}}
	for _, r := range rows {
		if r["task"] != "toy" {
			continue
		}
		a := by[strings.Contains(r["subsets"].(string), `"stolen"`)]
		a.n++
		if c, _ := r["correct"].(bool); c {
			a.right++
		}
		if c, ok := r["confidence"].(float64); ok {
			a.conf += c
			a.nconf++
		}
	}
	var want []string
	for _, k := range []bool{false, true} {
		a := by[k]
		want = append(want, fmt.Sprintf(`{"stolen":%v,"n":"%d","right":"%d","conf":%s}`, k, a.n, a.right, strconv.FormatFloat(math.Round(a.conf/float64(a.nconf)*1000)/1000, 'f', -1, 64)))
	}
	if got := lines[2]; got != "["+strings.Join(want, ",")+"]" {
		t.Errorf("accuracy by subset in DuckDB: %s\nfrom Go: [%s]", got, strings.Join(want, ","))
	}
}
