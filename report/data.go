package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/runfolder/manifest"
)

// run is everything the report reads from a run folder. Each part is
// optional: a section shows only when its data is there.
type run struct {
	dir      string
	manifest *manifest.Manifest
	results  []result
	metrics  []metric
	csv      map[string]*csvTable

	models, strategies, tasks []string // in display order
	modelColor                map[string]string
	// factors are the condition factor columns of metrics.parquet.
	factors []string
	// pooled are the task names of rows that pool several tasks into one
	// score (pooledTasks): no task of the run.
	pooled map[string]bool
	// ran are the models, strategies and tasks results.parquet has: what
	// this run scored, as opposed to names a table mentions (published
	// runs, pooled rows).
	ran struct{ models, strategies, tasks []string }
}

// result is one row of results.parquet, without the bulky columns.
type result struct {
	CaseID, Model, Strategy, Task, ItemID, Gold, Label string
	Conf                                               float64 // NaN = none
	Parsed                                             bool
	Correct                                            *bool
	Calls                                              int
	PromptTokens, CompletionTokens, TotalTokens        int64
	Cost                                               float64
	Judged                                             bool
	Judge                                              string // the judge's outputs, JSON
	Err                                                string
	Item                                               string // kept item fields, JSON
}

// metric is one row of metrics.parquet.
type metric struct {
	Block, Model, Strategy, Task, Subset, Metric string
	Value, Lo, Hi                                float64 // NaN = none
	N                                            int
	// NCases, NUnparsed, NErrors: -1 when the run's file has no such
	// column (written before they existed).
	NCases, NUnparsed, NErrors int
	Status, Unparsed, Errors   string
	Convention                 string
	Factors                    map[string]string
}

// ok says the row is a figure: its status is ok (or unknown) and it has a
// value.
func (x metric) ok() bool {
	return (x.Status == "" || x.Status == "ok") && !math.IsNaN(x.Value)
}

// degenerate: a figure that says nothing about the cell, because nothing
// was counted or every answer was unparsed (a "best" 0.000 of a run that
// parsed nothing).
func (x metric) degenerate() bool {
	return !x.ok() || x.N == 0 || (x.NCases > 0 && x.NUnparsed >= x.NCases)
}

// csvTable is a metric CSV (header + rows).
type csvTable struct {
	Name   string
	Header []string
	Rows   [][]string
	col    map[string]int
}

func (t *csvTable) has(col string) bool { _, ok := t.col[col]; return ok }

// get is the cell of row i in column col ("" when there is none).
func (t *csvTable) get(i int, col string) string {
	j, ok := t.col[col]
	if !ok || j >= len(t.Rows[i]) {
		return ""
	}
	return t.Rows[i][j]
}

// num is the cell as a number, NaN when empty or not a number.
func (t *csvTable) num(i int, col string) float64 {
	return parseNum(t.get(i, col))
}

func parseNum(s string) float64 {
	s = strings.TrimSpace(s)
	if s == "" {
		return math.NaN()
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// loadRun reads what a run folder has. A missing part is no error; a part
// that is there but unreadable is.
func loadRun(dir string) (*run, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no run folder %s", dir)
	} else if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a run folder", dir)
	}
	r := &run{dir: dir, csv: map[string]*csvTable{}}
	found := false
	if m, err := manifest.Read(dir); err == nil {
		r.manifest, found = m, true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if p := filepath.Join(dir, "results.parquet"); exists(p) {
		if r.results, err = readResults(p); err != nil {
			return nil, err
		}
		found = true
	}
	if p := filepath.Join(dir, "metrics.parquet"); exists(p) {
		if r.metrics, r.factors, err = readMetrics(p); err != nil {
			return nil, err
		}
		found = true
	}
	if r.manifest != nil && len(r.manifest.Factors) > 0 {
		r.factors = r.manifest.Factors
	}
	csvs, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	sort.Strings(csvs)
	for _, p := range csvs {
		t, err := readCSV(p)
		if err != nil {
			return nil, err
		}
		r.csv[t.Name] = t
		found = true
	}
	if !found {
		return nil, fmt.Errorf("%s holds no run output (manifest.json, results.parquet, metrics.parquet or metric CSVs); run `promoral apply` first", dir)
	}
	r.pooled = r.pooledTasks()
	r.order()
	return r, nil
}

// pooledTasks are the task names that blocks declare for rows pooling
// several tasks. A run with no blocks in its manifest declares none; its
// rows show them instead: a task no row of one model and one strategy
// scores (every row of it pools models or strategies, "all").
func (r *run) pooledTasks() map[string]bool {
	out := map[string]bool{}
	if r.manifest != nil && len(r.manifest.Metrics) > 0 {
		for _, b := range r.manifest.Metrics {
			if t := b.Drawn().PooledTask; t != "" {
				out[t] = true
			}
		}
		return out
	}
	cell := map[string]bool{}
	for _, x := range r.metrics {
		if x.Model != "all" && x.Strategy != "all" {
			cell[x.Task] = true
		}
	}
	for _, x := range r.metrics {
		if !cell[x.Task] {
			out[x.Task] = true
		}
	}
	return out
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// order fixes the display order: models alphabetically (so a model keeps
// its colour across runs), strategies and tasks as they first appear.
func (r *run) order() {
	seenM, seenS, seenT := map[string]bool{}, map[string]bool{}, map[string]bool{}
	addM := func(m string) {
		if m != "" && m != "all" && !seenM[m] && !strings.Contains(m, " vs ") {
			seenM[m] = true
			r.models = append(r.models, m)
		}
	}
	addS := func(s string) {
		// Paired comparisons name their pair ("a vs b"): not a strategy.
		if s != "" && s != "all" && !seenS[s] && !strings.Contains(s, " vs ") {
			seenS[s] = true
			r.strategies = append(r.strategies, s)
		}
	}
	addT := func(t string) {
		if t != "" && !seenT[t] {
			seenT[t] = true
			r.tasks = append(r.tasks, t)
		}
	}
	for _, x := range r.results {
		addM(x.Model)
		addS(x.Strategy)
		addT(x.Task)
	}
	r.ran.models = append([]string(nil), r.models...)
	r.ran.strategies = append([]string(nil), r.strategies...)
	r.ran.tasks = append([]string(nil), r.tasks...)
	sort.Strings(r.ran.models)
	judges := r.judgeBlocks()
	for _, x := range r.metrics {
		if !r.pooled[x.Task] {
			addT(x.Task)
		}
		// A judge's rows name the judge, not a model and strategy under test.
		if judgeRow(judges, x) {
			continue
		}
		addM(x.Model)
		addS(x.Strategy)
	}
	for _, name := range slices.Sorted(maps.Keys(r.csv)) {
		t := r.csv[name]
		for i := range t.Rows {
			addM(t.get(i, "model"))
			addS(t.get(i, "strategy"))
		}
	}
	sort.Strings(r.models)
	r.modelColor = map[string]string{}
	for i, m := range r.models {
		r.modelColor[m] = paletteHex[i%len(paletteHex)]
	}
}

func (r *run) color(model string) string {
	if c, ok := r.modelColor[model]; ok {
		return c
	}
	return "#8c8c8c"
}

func readCSV(path string) (*csvTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	t := &csvTable{Name: strings.TrimSuffix(filepath.Base(path), ".csv"), col: map[string]int{}}
	if len(recs) > 0 {
		t.Header, t.Rows = recs[0], recs[1:]
	}
	for i, h := range t.Header {
		t.col[h] = i
	}
	return t, nil
}

var resultCols = []string{"case_id", "model", "strategy", "task", "item_id", "gold", "label", "confidence", "parsed", "correct",
	"calls", "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd", "judge", "error", "item"}

func readResults(path string) ([]result, error) {
	var out []result
	err := parquetio.Scan(path, resultCols, nil, func(row map[string]any) {
		x := result{
			CaseID: str(row["case_id"]), Model: str(row["model"]), Strategy: str(row["strategy"]), Task: str(row["task"]),
			ItemID: str(row["item_id"]), Gold: str(row["gold"]), Label: str(row["label"]), Conf: flt(row["confidence"]),
			Parsed: row["parsed"] == true, Calls: int(i64(row["calls"])), PromptTokens: i64(row["prompt_tokens"]),
			CompletionTokens: i64(row["completion_tokens"]), TotalTokens: i64(row["total_tokens"]), Cost: zeroNaN(flt(row["cost_usd"])),
			Judged: row["judge"] != nil, Judge: str(row["judge"]), Err: str(row["error"]), Item: str(row["item"]),
		}
		if c, ok := row["correct"].(bool); ok {
			x.Correct = &c
		}
		out = append(out, x)
	})
	return out, err
}

// metricCols are metrics.parquet's own columns; any other column is a
// condition factor.
var metricCols = map[string]bool{"block": true, "model": true, "strategy": true, "task": true, "subset": true, "metric": true, "value": true,
	"ci_low": true, "ci_high": true, "ci_reps": true, "ci_undefined": true, "n": true, "n_cases": true, "n_unparsed": true, "n_errors": true, "status": true,
	"unparsed_policy": true, "errors_policy": true, "convention": true, "selection": true}

func readMetrics(path string) ([]metric, []string, error) {
	var out []metric
	factors := map[string]bool{}
	count := func(v any) int {
		if v == nil {
			return -1
		}
		return int(i64(v))
	}
	err := parquetio.Scan(path, nil, nil, func(row map[string]any) {
		x := metric{Block: str(row["block"]), Model: str(row["model"]), Strategy: str(row["strategy"]), Task: str(row["task"]), Subset: str(row["subset"]),
			Metric: str(row["metric"]), Value: flt(row["value"]), Lo: flt(row["ci_low"]), Hi: flt(row["ci_high"]), N: int(i64(row["n"])),
			NCases: count(row["n_cases"]), NUnparsed: count(row["n_unparsed"]), NErrors: count(row["n_errors"]),
			Status: str(row["status"]), Unparsed: str(row["unparsed_policy"]), Errors: str(row["errors_policy"]), Convention: str(row["convention"])}
		for k, v := range row {
			if !metricCols[k] {
				factors[k] = true
				if s := str(v); s != "" {
					if x.Factors == nil {
						x.Factors = map[string]string{}
					}
					x.Factors[k] = s
				}
			}
		}
		out = append(out, x)
	})
	return out, slices.Sorted(maps.Keys(factors)), err
}

// call is one row of calls.parquet.
type call struct {
	Stage, Messages, Reply, Finish, Err, Time string
	Attempt                                   int
	PromptTokens, CompletionTokens, Thinking  int64
	LatencyMS                                 float64
	Cached                                    bool
}

// readCalls returns the calls of one case in file order (the order they
// were made). It reads the case_id column first and then only the row
// groups holding that case, so a large calls.parquet stays cheap.
func readCalls(path, caseID string) ([]call, error) {
	groups, err := parquetio.RowGroups(path, "case_id", func(v any) bool { return v == caseID })
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, nil
	}
	cols := []string{"case_id", "stage", "attempt", "request_messages", "response_text", "finish_reason", "prompt_tokens",
		"completion_tokens", "thinking_tokens", "latency_ms", "cached", "error", "time"}
	var out []call
	err = parquetio.Scan(path, cols, groups, func(row map[string]any) {
		if str(row["case_id"]) != caseID {
			return
		}
		c := call{Stage: str(row["stage"]), Messages: str(row["request_messages"]), Reply: str(row["response_text"]),
			Finish: str(row["finish_reason"]), Err: str(row["error"]), Attempt: int(i64(row["attempt"])),
			PromptTokens: i64(row["prompt_tokens"]), CompletionTokens: i64(row["completion_tokens"]), Thinking: i64(row["thinking_tokens"]),
			LatencyMS: flt(row["latency_ms"]), Cached: row["cached"] == true}
		if t, ok := row["time"].(interface{ Format(string) string }); ok {
			c.Time = t.Format("15:04:05.000")
		}
		out = append(out, c)
	})
	return out, err
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

func flt(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return math.NaN()
}

func i64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

func zeroNaN(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return x
}
