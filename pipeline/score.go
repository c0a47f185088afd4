package pipeline

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"path/filepath"
	"sort"
)

var metricColumns = []Column{
	{"model", ColString, true}, {"strategy", ColString, true}, {"task", ColString, true},
	{"subset", ColString, true}, {"metric", ColString, true}, {"value", ColFloat, false},
	{"ci_low", ColFloat, false}, {"ci_high", ColFloat, false}, {"n", ColInt, false},
}

// NewResultSet pairs every case with its result, names as reported.
func NewResultSet(st *Study, results []Result, outDir string) *ResultSet {
	rs := &ResultSet{Study: st, Policy: st.UnparsedPolicy(), OutDir: outDir, Journal: filepath.Join(outDir, "journal.jsonl")}
	rs.Rows = make([]ResultRow, 0, len(results))
	st.EachCase(func(c *Case) bool {
		m, s := c.ReportedNames()
		rs.Rows = append(rs.Rows, ResultRow{Case: c, Model: m, Strategy: s, Result: &results[c.Ordinal]})
		return true
	})
	return rs
}

// Score runs the study's metrics over a result set and writes
// metrics.parquet and each metric's CSV tables into the run folder, each
// replacing its old version only once complete. It returns the texts the
// metrics want printed.
func Score(rs *ResultSet) ([]string, error) {
	st := rs.Study
	if len(st.Metrics) == 0 {
		return nil, nil
	}
	var rows []MetricRow
	var texts []string
	tables := map[string]CSVTable{}
	for _, m := range st.Metrics {
		out, err := m.Compute(rs)
		if err != nil {
			return nil, err
		}
		rows = append(rows, out.Rows...)
		for _, t := range out.Tables {
			if _, dup := tables[t.Name]; dup {
				return nil, fmt.Errorf("two metric blocks write %s.csv; give one of them another name", t.Name)
			}
			tables[t.Name] = t
		}
		if out.Text != "" {
			texts = append(texts, out.Text)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Task != b.Task {
			return a.Task < b.Task
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Strategy != b.Strategy {
			return a.Strategy < b.Strategy
		}
		if a.Subset != b.Subset {
			return a.Subset < b.Subset
		}
		return a.Metric < b.Metric
	})
	w, err := CreateParquet(filepath.Join(rs.OutDir, "metrics.parquet"), metricColumns)
	if err != nil {
		return nil, err
	}
	nullable := func(x float64) any {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return x
	}
	for _, r := range rows {
		if err := w.Append(r.Model, r.Strategy, r.Task, r.Subset, r.Metric, nullable(r.Value), nullable(r.CILow), nullable(r.CIHigh), r.N); err != nil {
			w.Abort()
			return nil, err
		}
	}
	if err := w.Commit(); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := tables[n]
		var buf bytes.Buffer
		cw := csv.NewWriter(&buf)
		cw.Write(t.Header)
		cw.WriteAll(t.Rows)
		if err := cw.Error(); err != nil {
			return nil, err
		}
		if err := WriteFileAtomic(filepath.Join(rs.OutDir, n+".csv"), buf.Bytes()); err != nil {
			return nil, err
		}
	}
	return texts, nil
}
