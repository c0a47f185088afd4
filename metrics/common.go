package metrics

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Helpers shared by the metric kinds. Every metric reads the
// result set directly and groups it into cells: one task x reported model x
// reported strategy (report_as applied, so one re-scoring cell of recorded
// replies becomes one cell per recorded model x strategy).

// subsetAll is the subset column of rows over a cell's whole item set.
const subsetAll = "all"

// aggregate names the model or strategy column of rows that pool several
// models or strategies (UMSS tables, form agreement).
const aggregate = "all"

// policyOf is the block's override, else the run's policy.
func policyOf(override string, rs *spec.ResultSet) stats.UnparsedPolicy {
	p := override
	if p == "" {
		p = rs.Policy
	}
	if p == "exclude" {
		return stats.UnparsedExclude
	}
	return stats.UnparsedWrong
}

func seedOf(rs *spec.ResultSet) uint64 { return rs.Seed }

// inParallel calls fn(0) … fn(n-1) on as many goroutines as there are
// processors. fn must touch only what is its own.
func inParallel(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// ciJob is an interval still to compute: the row it belongs to and the
// statistic over a replicate's counts of kinds.
type ciJob struct {
	row  int
	stat func(w []int) float64
}

// withItemCIs fills the rows' intervals from one multinomial bootstrap
// over kinds of answers (counts per kind): every replicate draws new counts
// once and computes every job's statistic from them. No interval when reps
// is 0 or there is nothing to resample. When items is set and some item
// has several samples (repeats), each replicate draws items with all their
// samples, and the rows say so (spec.ClusteredNote).
func withItemCIs(rows []spec.MetricRow, jobs []ciJob, counts []int, items *stats.Clusters, reps int, seed uint64) []spec.MetricRow {
	if reps <= 0 || len(jobs) == 0 {
		return rows
	}
	all := func(w []int, out []float64) {
		for j, job := range jobs {
			out[j] = job.stat(w)
		}
	}
	var ivs []stats.Interval
	if items.Repeated() {
		ivs = items.BootstrapIntervals(len(counts), len(jobs), all, reps, seed, stats.DefaultLevel)
	} else {
		ivs = stats.BootstrapCountsIntervals(counts, len(jobs), all, reps, seed, stats.DefaultLevel)
	}
	for j, job := range jobs {
		r := &rows[job.row]
		spec.SetCI(r, ivs[j])
		if items.Repeated() {
			if r.Convention == "" {
				r.Convention = spec.ClusteredNote
			} else {
				r.Convention += "; " + spec.ClusteredNote
			}
		}
	}
	return rows
}

// itemKey names a result row's item within a block: its task and id, which
// every repeat of the item shares.
func itemKey(r *spec.ResultRow) string { return r.Task.Name + "\x00" + r.Item.ID }

// countCI is one interval over kinds of answers; stats.NoInterval when
// reps is 0 or there is nothing to resample.
func countCI(reps int, seed uint64, counts []int, stat func(w []int) float64) stats.Interval {
	if reps <= 0 {
		return stats.NoInterval
	}
	return stats.BootstrapCountInterval(counts, stat, reps, seed, stats.DefaultLevel)
}

// selectTasks resolves which tasks a block scores. fits returns "" when a
// task suits the metric, or why it does not. Named tasks (the block's
// tasks:) must exist and fit; with none named, every fitting task is taken.
// No fitting task at all is an error: a metric that scores nothing is a
// config mistake.
func selectTasks(b *spec.MetricBuild, fits func(t *spec.Task) string) map[string]*spec.Task {
	out := map[string]*spec.Task{}
	if len(b.Base.Tasks) > 0 {
		for i, name := range b.Base.Tasks {
			t := b.Study.Task(name)
			if t == nil {
				b.Errf(fmt.Sprintf("tasks[%d]", i), yamlstrict.NameHint(name, b.Study.TaskNames(), "name a task declared under tasks"), "no task %q", name)
				continue
			}
			if why := fits(t); why != "" {
				b.Errf(fmt.Sprintf("tasks[%d]", i), "", "metric %s cannot score task %s: %s", b.Base.Kind, name, why)
				continue
			}
			out[name] = t
		}
		return out
	}
	for _, t := range b.Study.Tasks {
		if fits(t) == "" {
			out[t.Name] = t
		}
	}
	if len(out) == 0 {
		b.Errf("", "add a task it can score, or remove the block", "metric %s applies to no task of this run", b.Base.Kind)
	}
	return out
}

// tableName is the CSV table a block writes: the kind's own name, or, for a
// block given a name of its own, <name>_<table>, so that two blocks of a
// kind can write their tables side by side.
func tableName(b *spec.MetricBase, table string) string {
	if b.Name == "" || b.Name == b.Kind {
		return table
	}
	return b.Name + "_" + table
}

// cell is one task x reported model x reported strategy (x condition
// factors), or one subset of it.
type cell struct {
	Task            *spec.Task
	Model, Strategy string
	Factors         []string
	// Rows are the cases scored: those that finished without an error,
	// and under errors: unparsed the errored ones too, as unparsed answers.
	Rows []*spec.ResultRow
	// Errored are the errored cases left out of Rows (errors: incomplete
	// or exclude); every row of the cell counts them in n_errors.
	Errored []*spec.ResultRow
}

// nCases is every case of the cell, errored ones included.
func (c *cell) nCases() int { return len(c.Rows) + len(c.Errored) }

// nErrors counts the cell's errored cases, in Rows or not.
func (c *cell) nErrors() int {
	n := len(c.Errored)
	for _, r := range c.Rows {
		if r.Errored() {
			n++
		}
	}
	return n
}

// nUnparsed counts the cases that finished without a parsed answer (an
// errored case is counted as errored, not here).
func (c *cell) nUnparsed() int {
	n := 0
	for _, r := range c.Rows {
		if !r.Parsed() && !r.Errored() {
			n++
		}
	}
	return n
}

// groupCells groups the result set into cells of the given tasks, in order
// of first appearance. Cases that did not run (interrupted) are skipped;
// errored cases go where the block's errors: policy puts them.
func groupCells(rs *spec.ResultSet, tasks map[string]*spec.Task, errs string) []*cell {
	type key struct{ t, m, s, f string }
	idx := map[key]*cell{}
	// Rows of one case cell share their RowCell: look each up once.
	byRowCell := map[*spec.RowCell]*cell{}
	var out []*cell
	// cellOf finds a row's cell (nil: not of these tasks); a case cell's
	// rows mostly come one after another.
	var lastRC *spec.RowCell
	var lastC *cell
	cellOf := func(r *spec.ResultRow) *cell {
		if r.RowCell == lastRC && lastRC != nil {
			return lastC
		}
		c, ok := byRowCell[r.RowCell]
		if !ok {
			t := r.Task
			if tasks[t.Name] != nil {
				k := key{t.Name, r.Model, r.Strategy, strings.Join(r.Factors, "\x00")}
				c = idx[k]
				if c == nil {
					c = &cell{Task: t, Model: r.Model, Strategy: r.Strategy, Factors: r.Factors}
					idx[k] = c
					out = append(out, c)
				}
			}
			byRowCell[r.RowCell] = c
		}
		lastRC, lastC = r.RowCell, c
		return c
	}
	// The first pass counts each cell's rows, so its lists are made at
	// their size: at 1,000,000 rows, growing them by doubling held up to
	// twice the 8 MB of pointers per block.
	nRows, nErr := map[*cell]int{}, map[*cell]int{}
	for i := range rs.Rows {
		r := &rs.Rows[i]
		if c := cellOf(r); c != nil {
			if r.Errored() && errs != spec.ErrorsUnparsed {
				nErr[c]++
			} else {
				nRows[c]++
			}
		}
	}
	for _, c := range out {
		c.Rows = make([]*spec.ResultRow, 0, nRows[c])
		if nErr[c] > 0 {
			c.Errored = make([]*spec.ResultRow, 0, nErr[c])
		}
	}
	for i := range rs.Rows {
		r := &rs.Rows[i]
		c := cellOf(r)
		switch {
		case c == nil:
		case !r.Errored():
			c.Rows = append(c.Rows, r)
		case errs != spec.ErrorsUnparsed:
			c.Errored = append(c.Errored, r)
		default:
			// An unparsed answer: no label, no confidence, not correct;
			// the error stays so the case is still counted as errored.
			u := r.AsUnparsed()
			c.Rows = append(c.Rows, &u)
		}
	}
	return out
}

// incomplete says a cell gives no figure: it has errored cases and the
// block's errors: policy is incomplete. Tables leave its numbers blank as
// metrics.parquet leaves its values null.
func incomplete(c *cell, errs string) bool {
	return errs == spec.ErrorsIncomplete && c.nErrors() > 0
}

// withheld blanks table values when inc.
func withheld(inc bool, vals ...string) []string {
	if inc {
		return make([]string, len(vals))
	}
	return vals
}

// pooledRow is a row over several cells (a model's forms, a UMSS score):
// their counts summed, and the factors they share (the others blank).
func pooledRow(cells []*cell, model, strategy, task, metric string, v float64, n int) spec.MetricRow {
	r := spec.MetricRow{Model: model, Strategy: strategy, Task: task, Subset: subsetAll, Metric: metric,
		Value: v, CILow: math.NaN(), CIHigh: math.NaN(), N: n}
	for i, c := range cells {
		r.NCases += c.nCases()
		r.NUnparsed += c.nUnparsed()
		r.NErrors += c.nErrors()
		if i == 0 {
			r.Factors = append([]string(nil), c.Factors...)
			continue
		}
		for j := range r.Factors {
			if j >= len(c.Factors) || c.Factors[j] != r.Factors[j] {
				r.Factors[j] = ""
			}
		}
	}
	return r
}

// idHeader is the leading columns of a per-cell CSV table: model,
// strategy, task and the study's condition factors, then extra.
func idHeader(rs *spec.ResultSet, extra ...string) []string {
	h := append([]string{"model", "strategy", "task"}, rs.Study.Factors...)
	return append(h, extra...)
}

// idCols is a cell's values of idHeader's leading columns.
func idCols(c *cell) []string {
	return append([]string{c.Model, c.Strategy, c.Task.Name}, c.Factors...)
}

// row is a metric row of a cell (or subset cell) without an interval, with
// the cell's counts.
func row(c *cell, subset, metric string, v float64, n int) spec.MetricRow {
	return spec.MetricRow{Model: c.Model, Strategy: c.Strategy, Task: c.Task.Name, Subset: subset, Factors: c.Factors, Metric: metric,
		Value: v, CILow: math.NaN(), CIHigh: math.NaN(), N: n, NCases: c.nCases(), NUnparsed: c.nUnparsed(), NErrors: c.nErrors()}
}

// subsets evaluates the tasks' named item subsets (task subsets:), caching
// each item's membership for one Compute.
type subsets struct {
	progs map[string]map[string]*vm.Program // task -> subset -> program
	cache map[*spec.Task]*subsetCache
	// rs is the result set of the Compute, whose marks place items
	// without reading their fields.
	rs *spec.ResultSet
}

// reset starts a Compute over rs: nothing cached.
func (s *subsets) reset(rs *spec.ResultSet) { s.cache, s.rs = nil, rs }

// subsetCache holds, per item of a task, whether it is in each subset: one
// bit per item and subset, every subset evaluated when an item is first
// asked about (its fields are read once, from disk for a large dataset).
type subsetCache struct {
	names  []string
	at     map[string]int
	done   []uint64
	in     [][]uint64
	errs   map[[2]int]error   // (item, subset) -> why the subset failed on it
	others map[*spec.Item]int // items not in the task's list (built by hand)
}

// compileSubsets compiles the subsets of the given tasks; only restricts
// them to those names when non-empty (a name no task has is an error).
func compileSubsets(b *spec.MetricBuild, tasks map[string]*spec.Task, only []string) *subsets {
	s := &subsets{progs: map[string]map[string]*vm.Program{}}
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	found := map[string]bool{}
	for _, t := range tasks {
		for name, src := range t.Spec.Subsets {
			if len(want) > 0 && !want[name] {
				continue
			}
			p, err := spec.CompileExpr(src, nil, true)
			if err != nil {
				continue // the task already reported it
			}
			if s.progs[t.Name] == nil {
				s.progs[t.Name] = map[string]*vm.Program{}
			}
			s.progs[t.Name][name] = p
			found[name] = true
		}
	}
	for i, n := range only {
		if !found[n] {
			b.Errf(fmt.Sprintf("subsets[%d]", i), yamlstrict.NameHint(n, subsetNames(tasks), "name a subset declared in the task's subsets:"), "no scored task has a subset %q", n)
		}
	}
	return s
}

// names lists a task's subsets in name order.
func (s *subsets) names(t *spec.Task) []string {
	var out []string
	for n := range s.progs[t.Name] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// in says whether an item belongs to a subset of its task.
func (s *subsets) in(t *spec.Task, name string, it *spec.Item) (bool, error) {
	if s.cache == nil {
		s.cache = map[*spec.Task]*subsetCache{}
	}
	sc := s.cache[t]
	if sc == nil {
		sc = &subsetCache{names: s.names(t), at: map[string]int{}, errs: map[[2]int]error{}, others: map[*spec.Item]int{}}
		n := len(t.Items)
		sc.done = make([]uint64, (n+63)/64)
		for i, name := range sc.names {
			sc.at[name] = i
			sc.in = append(sc.in, make([]uint64, (n+63)/64))
		}
		s.cache[t] = sc
	}
	k, ok := sc.at[name]
	if !ok {
		return false, fmt.Errorf("task %s has no subset %q", t.Name, name)
	}
	i, ok := t.Index(it)
	if !ok {
		// Not one of the task's items: numbered after them.
		if i, ok = sc.others[it]; !ok {
			i = len(t.Items) + len(sc.others)
			sc.others[it] = i
		}
	}
	for i/64 >= len(sc.done) {
		sc.done = append(sc.done, 0)
		for j := range sc.in {
			sc.in[j] = append(sc.in[j], 0)
		}
	}
	word, bit := i/64, uint64(1)<<(i%64)
	if sc.done[word]&bit == 0 && ok && s.marked(t, sc, i) {
		sc.done[word] |= bit
	}
	if sc.done[word]&bit == 0 && t.Data != nil && t.Data.Pending {
		// Stand-in items: placeholder text, nothing to place.
		return false, fmt.Errorf("task %s, subset %s: the task's data (%s) is not fetched yet, so no item can be placed in it; promoral data pull fetches it", t.Name, name, t.Data.Hub.ID)
	}
	if sc.done[word]&bit == 0 {
		env := map[string]any{"item": it.Values(), "task": map[string]any{"name": t.Name}}
		for j, n := range sc.names {
			v, err := expr.Run(s.progs[t.Name][n], env)
			if err != nil {
				sc.errs[[2]int{i, j}] = fmt.Errorf("task %s, subset %s, item %s: %v", t.Name, n, it.ID, err)
				continue
			}
			if b, _ := v.(bool); b {
				sc.in[j][word] |= bit
			}
		}
		sc.done[word] |= bit
	}
	if err := sc.errs[[2]int{i, k}]; err != nil {
		return false, err
	}
	return sc.in[k][word]&bit != 0, nil
}

// marked places item i of the task in every subset from the marks the
// results read back carry (ResultSet.SubsetMark), without reading its
// fields; false when one is missing.
func (s *subsets) marked(t *spec.Task, sc *subsetCache, i int) bool {
	if s.rs == nil {
		return false
	}
	for _, n := range sc.names {
		if _, ok := s.rs.SubsetMark(t, n, i); !ok {
			return false
		}
	}
	word, bit := i/64, uint64(1)<<(i%64)
	for j, n := range sc.names {
		if v, _ := s.rs.SubsetMark(t, n, i); v {
			sc.in[j][word] |= bit
		}
	}
	return true
}

// filter keeps the rows whose item is in the subset.
func (s *subsets) filter(t *spec.Task, name string, rows []*spec.ResultRow) ([]*spec.ResultRow, error) {
	var out []*spec.ResultRow
	for _, r := range rows {
		ok, err := s.in(t, name, r.Item)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// sub is the part of a cell whose items are in the subset, errored cases
// included, so its rows count the subset's own cases.
func (s *subsets) sub(c *cell, name string) (*cell, error) {
	rows, err := s.filter(c.Task, name, c.Rows)
	if err != nil {
		return nil, err
	}
	errored, err := s.filter(c.Task, name, c.Errored)
	if err != nil {
		return nil, err
	}
	return &cell{Task: c.Task, Model: c.Model, Strategy: c.Strategy, Factors: c.Factors, Rows: rows, Errored: errored}, nil
}

// fieldString reads an item field as a string ("" when missing or null).
func fieldString(it *spec.Item, field string) string {
	v, ok := it.Values()[field]
	if !ok || v == nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// fmtF formats a float for CSV tables: empty for NaN.
func fmtF(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

func fmtI(n int) string { return strconv.Itoa(n) }

// truthy reads a judge or strategy output as a boolean flag.
func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		b, err := strconv.ParseBool(x)
		return err == nil && b
	case float64:
		return x != 0
	case int:
		return x != 0
	}
	return false
}

// subsetNames lists the subsets the tasks declare, for hints.
func subsetNames(tasks map[string]*spec.Task) []string {
	var out []string
	for _, t := range tasks {
		for name := range t.Spec.Subsets {
			out = append(out, name)
		}
	}
	return out
}
