package metrics

import (
	"math"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Helpers for the metric tests: a hand-made study and result set, so every
// expected value can be worked out on paper from the few answers listed.

// ans is one case: who answered which item, and what.
type ans struct {
	model, strategy string
	item            string // item id
	label           string // "" = unparsed
	conf            float64
	noConf          bool
	judge           map[string]any
	outputs         map[string]any
	acct            spec.Account
	err             string
	repeat          int // the sample index, under repeats
}

// tItem is an item with its gold label and fields.
type tItem struct {
	id     string
	gold   string
	fields map[string]any
}

func mkTask(name string, labels []string, positive string, items []tItem, subsets map[string]string) *spec.Task {
	ts := &spec.TaskSpec{Name: name, Gold: "gold", Subsets: subsets}
	if positive == "-" { // no gold field at all
		ts.Gold, positive = "", ""
	}
	ts.Answer.Positive = positive
	t := &spec.Task{Spec: ts, Name: name, Labels: labels, Positive: positive}
	for i, it := range items {
		f := map[string]any{"gold": it.gold}
		for k, v := range it.fields {
			f[k] = v
		}
		t.Items = append(t.Items, spec.Item{ID: it.id, Row: i + 1, Fields: f, Gold: it.gold})
	}
	return t
}

func mkStudy(seed int64, tasks ...*spec.Task) *spec.Study {
	return &spec.Study{File: "/tmp/run.yaml", Dir: "/tmp", Run: &spec.RunFile{Settings: spec.Settings{Seed: seed}}, Tasks: tasks}
}

// mkRS builds the result set of answers to one task.
func mkRS(st *spec.Study, policy string, t *spec.Task, answers ...ans) *spec.ResultSet {
	rs := &spec.ResultSet{Study: st, Policy: policy, Seed: uint64(st.Run.Settings.Seed)}
	items := map[string]*spec.Item{}
	for i := range t.Items {
		items[t.Items[i].ID] = &t.Items[i]
	}
	for i, a := range answers {
		it := items[a.item]
		if it == nil {
			panic("no item " + a.item)
		}
		r := &spec.Result{Done: true, Label: a.label, Parsed: a.label != "", Judge: a.judge, Outputs: a.outputs, Acct: a.acct, Err: a.err}
		if a.err != "" {
			r.Label, r.Parsed = "", false
		}
		if !a.noConf {
			c := a.conf
			r.Confidence = &c
		}
		if it.Gold != "" {
			ok := r.Parsed && r.Label == it.Gold
			r.Correct = &ok
		}
		c := &spec.Case{Ordinal: i, Model: &spec.Model{Name: a.model}, Strategy: &spec.Strategy{Name: a.strategy}, Task: t, Item: it, Repeat: a.repeat}
		rs.Rows = append(rs.Rows, spec.NewRowCell(c, a.model, a.strategy, nil).Row(c.Item, r))
	}
	return rs
}

// merge joins result sets of the same study (several tasks).
func merge(sets ...*spec.ResultSet) *spec.ResultSet {
	out := &spec.ResultSet{Study: sets[0].Study, Policy: sets[0].Policy, Seed: sets[0].Seed}
	for _, s := range sets {
		out.Rows = append(out.Rows, s.Rows...)
	}
	return out
}

// build compiles a metric config against the study; it fails the test on
// any diagnostic.
func build(t *testing.T, st *spec.Study, cfg spec.MetricConfig) spec.Metric {
	t.Helper()
	m, ds := tryBuild(st, cfg)
	if len(ds) > 0 {
		t.Fatalf("build: %v", ds)
	}
	return m
}

// tryDecodeBuild decodes src as the first metric block of a run file
// (kind: and all), as loading does, and builds it.
func tryDecodeBuild(st *spec.Study, src string) (spec.Metric, yamlstrict.Diags) {
	ds := yamlstrict.Diags{}
	n := yamlstrict.ParseYAML("run.yaml", []byte(src), &ds)
	var mn spec.MetricNode
	yamlstrict.NewDecoder("run.yaml", &ds).Decode(n, &mn, "metrics[0]")
	if mn.Config == nil {
		return nil, ds
	}
	m, more := tryBuild(st, mn.Config)
	return m, append(ds, more...)
}

func tryBuild(st *spec.Study, cfg spec.MetricConfig) (spec.Metric, yamlstrict.Diags) {
	ds := &yamlstrict.Diags{}
	yamlstrict.ApplyDefaults(cfg) // what decoding gives a block that leaves fields out
	base := cfg.Common()
	b := &spec.MetricBuild{Diags: ds, File: st.File, Study: st, Base: base, Lines: map[string]int{}}
	m := cfg.Build(b)
	noteBuilt(cfg, m)
	return m, *ds
}

func run(t *testing.T, m spec.Metric, rs *spec.ResultSet) *spec.MetricOutput {
	t.Helper()
	out, err := m.Compute(rs)
	if err != nil {
		t.Fatalf("compute: %v", err)
	}
	checkRows(t, m, out)
	return out
}

// find returns the row of a metric (model, strategy, subset, metric).
func find(t *testing.T, out *spec.MetricOutput, model, strategy, subset, metric string) spec.MetricRow {
	t.Helper()
	for _, r := range out.Rows {
		if r.Model == model && r.Strategy == strategy && r.Subset == subset && r.Metric == metric {
			return r
		}
	}
	var have []string
	for _, r := range out.Rows {
		have = append(have, r.Model+"/"+r.Strategy+"/"+r.Subset+"/"+r.Metric)
	}
	t.Fatalf("no row %s/%s/%s/%s; have %s", model, strategy, subset, metric, strings.Join(have, ", "))
	return spec.MetricRow{}
}

func has(out *spec.MetricOutput, model, strategy, subset, metric string) bool {
	for _, r := range out.Rows {
		if r.Model == model && r.Strategy == strategy && r.Subset == subset && r.Metric == metric {
			return true
		}
	}
	return false
}

const eps = 1e-9

// want checks a row's value and n. want NaN for "undefined".
func want(t *testing.T, r spec.MetricRow, v float64, n int) {
	t.Helper()
	switch {
	case math.IsNaN(v):
		if !math.IsNaN(r.Value) {
			t.Errorf("%s/%s/%s: value %v, want NaN", r.Strategy, r.Subset, r.Metric, r.Value)
		}
	case math.Abs(r.Value-v) > eps:
		t.Errorf("%s/%s/%s: value %.12g, want %.12g", r.Strategy, r.Subset, r.Metric, r.Value, v)
	}
	if r.N != n {
		t.Errorf("%s/%s/%s: n %d, want %d", r.Strategy, r.Subset, r.Metric, r.N, n)
	}
}

func near(t *testing.T, what string, got, wantV, tol float64) {
	t.Helper()
	if math.IsNaN(wantV) != math.IsNaN(got) || !math.IsNaN(wantV) && math.Abs(got-wantV) > tol {
		t.Errorf("%s = %.12g, want %.12g", what, got, wantV)
	}
}

func intp(n int) *int { return &n }

// table returns a CSV table of the output by name.
func table(t *testing.T, out *spec.MetricOutput, name string) spec.CSVTable {
	t.Helper()
	for _, tb := range out.Tables {
		if tb.Name == name {
			return tb
		}
	}
	t.Fatalf("no table %s", name)
	return spec.CSVTable{}
}

// cellOf reads a CSV table cell by its row's leading key and column name.
func cellOf(t *testing.T, tb spec.CSVTable, col string, key ...string) string {
	t.Helper()
	ci := -1
	for i, h := range tb.Header {
		if h == col {
			ci = i
		}
	}
	if ci < 0 {
		t.Fatalf("%s has no column %s (%v)", tb.Name, col, tb.Header)
	}
rows:
	for _, r := range tb.Rows {
		for i, k := range key {
			if r[i] != k {
				continue rows
			}
		}
		return r[ci]
	}
	t.Fatalf("%s has no row %v", tb.Name, key)
	return ""
}
