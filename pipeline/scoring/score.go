package scoring

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/promoral/promoral/pipeline/audit"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder"
	"github.com/promoral/promoral/runfolder/manifest"
)

// metricColumns are metrics.parquet's columns (runfolder.MetricColumns).
func metricColumns(factors []string) []parquetio.Column { return runfolder.MetricColumns(factors) }

// NewResultSet pairs every case with its result, names as reported.
func NewResultSet(st *spec.Study, results []spec.Result, outDir string) *spec.ResultSet {
	rs := &spec.ResultSet{Study: st, Policy: st.UnparsedPolicy(), OutDir: outDir, Journal: filepath.Join(outDir, "journal.jsonl"),
		Seed: uint64(st.Run.Settings.Seed)}
	rs.Rows = make([]spec.ResultRow, 0, len(results))
	cells := spec.NewRowCells()
	st.EachCase(func(c *spec.Case) bool {
		if r := &results[c.Ordinal]; r.Done {
			rs.Rows = append(rs.Rows, cells.Of(st, c).Row(c.Item, r))
		}
		return true
	})
	return rs
}

// Scores is what the metric blocks computed over a result set.
type Scores struct {
	Factors []string
	Rows    []spec.MetricRow
	Tables  []spec.CSVTable // sorted by name, each with its block column first
	// Files are the files the blocks write into the run folder besides
	// their tables (a select_candidate block's chosen texts).
	Files []spec.OutFile
	Texts []string
	// Selection describes the part of the study the rows were computed
	// on ("" for the whole study): every row and table carries it.
	Selection string
}

// ComputeScores runs the study's metric blocks over a result set, without
// writing anything: every row gets its block, its policies and, under
// errors: incomplete, no value where its cell had errored cases. Two rows
// with one key, or two tables with one name, are an error.
func ComputeScores(rs *spec.ResultSet) (*Scores, error) {
	st := rs.Study
	if rs.People == nil && rs.Journal != "" {
		dir := filepath.Dir(rs.Journal)
		rs.People = func() ([]audit.Label, error) { return audit.ReadLabels(dir) }
	}
	sc := &Scores{Factors: st.Factors}
	tables := map[string]spec.CSVTable{}
	reductions := map[string]*reduced{}
	repeated := map[*spec.ResultSet]map[cellKey]bool{} // repeatedCells of each set a kind saw
	for i, m := range st.Metrics {
		// A study built by hand (a test) may list metrics without blocks.
		base := &spec.MetricBase{Kind: "metric", Name: fmt.Sprintf("block%d", i)}
		if i < len(st.Blocks) {
			base = st.Blocks[i]
		}
		in := rs
		red := reduceFor(rs, base, m, reductions) // reduce: (reduce.go)
		if red != nil {
			in = red.rs
		}
		out, err := m.Compute(in)
		if err != nil {
			return nil, fmt.Errorf("metric block %s: %w", base.BlockName(), err)
		}
		if red != nil {
			out.Rows = append(out.Rows, red.tieRows(out.Rows)...)
		}
		if own, ok := m.(spec.OwnReducer); !ok || !own.ReducesItself() {
			rc, ok := repeated[in]
			if !ok {
				rc = repeatedCells(in)
				repeated[in] = rc
			}
			flagUnclustered(rc, out.Rows)
		}
		unparsed := ""
		if up, ok := m.(spec.UnparsedPolicier); ok {
			if unparsed = up.UnparsedOverride(); unparsed == "" {
				unparsed = rs.Policy
			}
		}
		errs := base.ErrorsPolicy()
		for _, r := range out.Rows {
			r.Block = base.BlockName()
			if r.Unparsed == "" {
				r.Unparsed = unparsed
			}
			if r.Errors == "" {
				r.Errors = errs
			}
			settle(&r)
			sc.Rows = append(sc.Rows, r)
		}
		for _, t := range out.Tables {
			if _, dup := tables[t.Name]; dup {
				return nil, fmt.Errorf("two metric blocks write %s.csv; give one of them another name", t.Name)
			}
			t.Header = append([]string{"block"}, t.Header...)
			for j := range t.Rows {
				t.Rows[j] = append([]string{base.BlockName()}, t.Rows[j]...)
			}
			tables[t.Name] = t
		}
		for _, f := range out.Files {
			if !filepath.IsLocal(f.Name) {
				return nil, fmt.Errorf("metric block %s writes %s, outside the run folder: a bug in the metric kind, please report it", base.BlockName(), f.Name)
			}
			sc.Files = append(sc.Files, f)
		}
		if out.Text != "" {
			sc.Texts = append(sc.Texts, out.Text)
		}
	}
	sort.SliceStable(sc.Rows, func(i, j int) bool { return rowLess(&sc.Rows[i], &sc.Rows[j]) })
	for i := 1; i < len(sc.Rows); i++ {
		if a, b := &sc.Rows[i-1], &sc.Rows[i]; !rowLess(a, b) && !rowLess(b, a) {
			return nil, fmt.Errorf("metric block %s wrote two rows for %s: a bug in the metric kind, please report it", b.Block, b.Key())
		}
	}
	for _, n := range slices.Sorted(maps.Keys(tables)) {
		sc.Tables = append(sc.Tables, tables[n])
	}
	sc.markSelection(st.Selection)
	return sc, nil
}

// settle makes a row's status and value agree: a row that is not a clean
// figure carries no value, so nobody reads one off it.
func settle(r *spec.MetricRow) {
	if r.Status == "" {
		r.Status = spec.StatusOK
	}
	if r.Status == spec.StatusOK && r.NErrors > 0 && r.Errors == spec.ErrorsIncomplete {
		r.Status = spec.StatusIncomplete
	}
	if r.Status == spec.StatusOK && r.N == 0 && math.IsNaN(r.Value) {
		r.Status = spec.StatusEmpty
	}
	if r.Status != spec.StatusOK {
		r.Value, r.CILow, r.CIHigh = math.NaN(), math.NaN(), math.NaN()
	}
}

func rowLess(a, b *spec.MetricRow) bool {
	for _, p := range [][2]string{{a.Task, b.Task}, {a.Block, b.Block}, {a.Model, b.Model}, {a.Strategy, b.Strategy}, {a.Subset, b.Subset}} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	for i := 0; i < len(a.Factors) && i < len(b.Factors); i++ {
		if a.Factors[i] != b.Factors[i] {
			return a.Factors[i] < b.Factors[i]
		}
	}
	if len(a.Factors) != len(b.Factors) {
		return len(a.Factors) < len(b.Factors)
	}
	return a.Metric < b.Metric
}

// Score runs the study's metrics over a result set and writes
// metrics.parquet and each metric's CSV tables into the run folder, each
// replacing its old version only once complete. It returns the texts the
// metrics want printed.
func Score(rs *spec.ResultSet) ([]string, error) {
	if len(rs.Study.Metrics) == 0 {
		return nil, nil
	}
	sc, err := ComputeScores(rs)
	if err != nil {
		return nil, err
	}
	if err := sc.Write(rs.OutDir); err != nil {
		return nil, err
	}
	return sc.Texts, nil
}

// Write writes metrics.parquet and the CSV tables into dir.
func (sc *Scores) Write(dir string) error {
	w, err := parquetio.Create(filepath.Join(dir, "metrics.parquet"), metricColumns(sc.Factors))
	if err != nil {
		return err
	}
	vals := make([]any, 0, 32+len(sc.Factors))
	for _, r := range sc.Rows {
		m := runfolder.Metric{Block: r.Block, Model: r.Model, Strategy: r.Strategy, Task: r.Task, Subset: r.Subset, Factors: r.Factors,
			Metric: r.Metric, Value: r.Value, CILow: r.CILow, CIHigh: r.CIHigh, CIReps: r.CIReps, CIUndefined: r.CIUndefined, N: r.N,
			NCases: r.NCases, NUnparsed: r.NUnparsed, NErrors: r.NErrors, Status: r.Status, Unparsed: r.Unparsed, Errors: r.Errors,
			Convention: r.Convention, Selection: sc.Selection}
		vals = runfolder.AppendMetric(vals[:0], &m, len(sc.Factors))
		if err := w.Append(vals...); err != nil {
			w.Abort()
			return err
		}
	}
	if err := w.Commit(); err != nil {
		return err
	}
	for _, t := range sc.Tables {
		var buf bytes.Buffer
		cw := csv.NewWriter(&buf)
		cw.Write(t.Header)
		cw.WriteAll(t.Rows)
		if err := cw.Error(); err != nil {
			return err
		}
		if err := parquetio.WriteFileAtomic(filepath.Join(dir, t.Name+".csv"), buf.Bytes()); err != nil {
			return err
		}
	}
	for _, f := range sc.Files {
		path := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := parquetio.WriteFileAtomic(path, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// markSelection marks scores computed on part of a study: the selection on
// every metric row (metrics.parquet's selection column) and as a last
// column of every table, so no figure of a part passes for the study's.
func (sc *Scores) markSelection(sel *manifest.Selection) {
	if !sel.Partial() {
		return
	}
	sc.Selection = sel.Describe()
	for i := range sc.Tables {
		t := &sc.Tables[i]
		t.Header = append(t.Header, "selection")
		for j := range t.Rows {
			t.Rows[j] = append(t.Rows[j], sc.Selection)
		}
	}
}

// Scorer is the engine.Scorer an apply, a merge and re-scoring use: it
// reads back from results.parquet what the study's metric blocks read,
// runs the blocks and writes metrics.parquet and their tables beside it.
type Scorer struct{}

// New is the scorer to pass in engine.Options.Scorer and to
// engine.OpenOutputSet.
func New() *Scorer { return &Scorer{} }

// Score implements engine.Scorer.
func (*Scorer) Score(w engine.Written) ([]string, error) {
	if len(w.Study.Metrics) == 0 {
		return nil, nil
	}
	rs, err := ReadResultSet(w.Study, w.Results(), w.Order)
	if err != nil {
		return nil, err
	}
	rs.OutDir = w.Dir
	rs.Journal = w.Journal
	return Score(rs)
}

var _ engine.Scorer = (*Scorer)(nil)
