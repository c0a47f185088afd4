package scoring

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/promoral/promoral/pipeline/spec"
)

// Reducers (a block's reduce:, else each strategy's own; spec.Reducers
// lists them) make one answer per item of a repeated case from its k
// samples before the block's kind sees the rows:
//
//	majority  the label most samples gave (unparsed samples do not vote); a
//	          tie between labels is no answer (the item counts as unparsed),
//	          and the block reports the share of tied items as majority_ties
//	first     the sample of the lowest repeat
//	any       an item is a hit when any sample is: correct (items with gold),
//	          else the task's positive label; the first such sample
//	all       an item is a hit only when every sample is; the first sample
//	          that is not
//	mean      the per-item mean of a score: only kinds that average scores
//	          themselves take it (the repeats kind)
//
// A reduced row's cost and tokens are its samples' sum (self-consistency
// pays k calls per answer). An item with an errored sample reduces to that
// errored sample, so the block's errors: policy decides about the item.

// ReduceKey groups the samples of one item of one reported cell.
type reduceKey struct {
	task            *spec.Task
	model, strategy string
	factors         string
	item            *spec.Item
}

// cellKey names a reported cell (task, model, strategy, factors).
type cellKey struct {
	task, model, strategy, factors string
}

// ReduceStats counts what a reducer did in one reported cell.
type ReduceStats struct {
	Items, Ties int
	reducer     string
}

// ReduceRows reduces a result set's samples to one row per item of each
// reported cell, with the reducer pick names for the cell's rows (none: the
// samples stay rows of their own), in order of each item's first sample.
// stats counts the reduced items and the ties per cell.
func ReduceRows(rs *spec.ResultSet, pick func(r *spec.ResultRow) string) (*spec.ResultSet, map[cellKey]*ReduceStats) {
	groups := map[reduceKey][]*spec.ResultRow{}
	var order []reduceKey
	for i := range rs.Rows {
		row := &rs.Rows[i]
		k := reduceKey{row.Task, row.Model, row.Strategy, strings.Join(row.Factors, "\x00"), row.Item}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], row)
	}
	out := *rs
	out.Rows = make([]spec.ResultRow, 0, len(order))
	stats := map[cellKey]*ReduceStats{}
	for _, k := range order {
		g := groups[k]
		r := pick(g[0])
		if r == "" || r == spec.ReduceNone || r == spec.ReduceMean {
			for _, x := range g {
				out.Rows = append(out.Rows, *x)
			}
			continue
		}
		sort.SliceStable(g, func(a, b int) bool { return g[a].Repeat < g[b].Repeat })
		row, tie := reduceItem(g, r)
		ck := cellKey{k.task.Name, k.model, k.strategy, k.factors}
		s := stats[ck]
		if s == nil {
			s = &ReduceStats{reducer: r}
			stats[ck] = s
		}
		s.Items++
		if tie {
			s.Ties++
		}
		row.Cost, row.Tokens = 0, 0
		for _, x := range g {
			row.Cost += x.Cost
			row.Tokens += x.Tokens
		}
		out.Rows = append(out.Rows, row)
	}
	return &out, stats
}

// reduceItem makes one row of an item's samples (sorted by repeat); tie
// says a majority vote tied.
func reduceItem(g []*spec.ResultRow, r string) (spec.ResultRow, bool) {
	for _, x := range g {
		if x.Errored() {
			return *x, false
		}
	}
	switch r {
	case spec.ReduceFirst:
		return *g[0], false
	case spec.ReduceAny, spec.ReduceAll:
		want := r == spec.ReduceAny
		for _, x := range g {
			if hit(x) == want {
				return *x, false
			}
		}
		return *g[0], false
	}
	winner, tie := spec.MajorityLabel(g)
	if tie {
		return g[0].AsUnparsed(), true
	}
	if winner == "" {
		return *g[0], false // no sample parsed: unparsed
	}
	var first *spec.ResultRow
	sum, n := 0.0, 0
	for _, x := range g {
		if x.Parsed() && x.Label() == winner {
			if first == nil {
				first = x
			}
			if !math.IsNaN(x.Conf) {
				sum += x.Conf
				n++
			}
		}
	}
	row := *first
	row.Conf = math.NaN()
	if n > 0 {
		row.Conf = sum / float64(n)
	}
	return row, false
}

// hit is a sample's success for any and all: correct where the item has
// gold, else the task's positive label.
func hit(x *spec.ResultRow) bool {
	if c, ok := x.Correct(); ok {
		return c
	}
	return x.Parsed() && x.Task.Positive != "" && x.Label() == x.Task.Positive
}

// reduceFor is the result set a block's kind sees, and the tie rows a
// majority vote adds once the kind has scored (for the cells it scored):
// the block's reduce: for every cell, or, where the block sets none, each
// strategy's own reduce: (self-consistency declares majority). nil when
// no row is reduced.
func reduceFor(rs *spec.ResultSet, base *spec.MetricBase, m spec.Metric, cache map[string]*reduced) *reduced {
	r := base.Reduce
	if own, ok := m.(spec.OwnReducer); ok && own.ReducesItself() {
		return nil
	}
	if r == spec.ReduceNone || r == spec.ReduceMean {
		return nil
	}
	if r == "" && !anyStrategyReduces(rs.Study) {
		return nil
	}
	if c, ok := cache[r]; ok {
		return c
	}
	pick := func(*spec.ResultRow) string { return r }
	if r == "" {
		pick = func(x *spec.ResultRow) string { return x.RunStrategy.Spec.Reduce }
	}
	rrs, stats := ReduceRows(rs, pick)
	c := &reduced{rs: rrs, stats: stats}
	cache[r] = c
	return c
}

func anyStrategyReduces(st *spec.Study) bool {
	for _, s := range st.Strategies {
		if s.Spec.Reduce != "" && s.Spec.Reduce != spec.ReduceNone {
			return true
		}
	}
	return false
}

type reduced struct {
	rs    *spec.ResultSet
	stats map[cellKey]*ReduceStats
}

// tieRows are majority_ties rows for the cells the block's rows describe.
func (red *reduced) tieRows(rows []spec.MetricRow) []spec.MetricRow {
	seen := map[cellKey]bool{}
	var out []spec.MetricRow
	for _, r := range rows {
		if r.Subset != "" && r.Subset != "all" {
			continue // a subset's row: the tie row is the whole cell's
		}
		k := cellKey{r.Task, r.Model, r.Strategy, strings.Join(r.Factors, "\x00")}
		if seen[k] {
			continue
		}
		seen[k] = true
		s := red.stats[k]
		if s == nil || s.reducer != spec.ReduceMajority {
			continue
		}
		out = append(out, spec.MetricRow{Model: r.Model, Strategy: r.Strategy, Task: r.Task, Subset: r.Subset, Factors: r.Factors, Metric: "majority_ties",
			Value: float64(s.Ties) / float64(s.Items), CILow: math.NaN(), CIHigh: math.NaN(), N: s.Items, NCases: s.Items, NUnparsed: -1, NErrors: -1,
			Convention: fmt.Sprintf("share of items whose samples' majority vote tied (%d of %d); a tied item counts as an unparsed answer in this block", s.Ties, s.Items)})
	}
	return out
}

// unclusteredNote is added to the convention of a row with an interval
// computed over every sample of a cell with repeats.
const unclusteredNote = "the interval resamples the k samples of an item as if independent, so it is too narrow: kind repeats (or a reduce:) gives one that resamples items"

// repeatedCells are the reported cells whose rows hold more than one
// sample of an item (nil when the study has no repeats).
func repeatedCells(rs *spec.ResultSet) map[cellKey]bool {
	if rs.Study == nil || rs.Study.MaxRepeats() < 2 {
		return nil
	}
	repeated := map[cellKey]bool{}
	seen := map[reduceKey]bool{}
	for i := range rs.Rows {
		r := &rs.Rows[i]
		f := strings.Join(r.Factors, "\x00")
		k := reduceKey{r.Task, r.Model, r.Strategy, f, r.Item}
		if seen[k] {
			repeated[cellKey{r.Task.Name, r.Model, r.Strategy, f}] = true
		}
		seen[k] = true
	}
	return repeated
}

// flagUnclustered notes, on the rows with an interval of the cells in
// repeated, that the interval treats an item's samples as independent (a
// block that scores every sample).
func flagUnclustered(repeated map[cellKey]bool, rows []spec.MetricRow) {
	if len(repeated) == 0 {
		return
	}
	for i := range rows {
		r := &rows[i]
		if math.IsNaN(r.CILow) && math.IsNaN(r.CIHigh) || strings.Contains(r.Convention, spec.ClusteredNote) {
			continue
		}
		if !repeated[cellKey{r.Task, r.Model, r.Strategy, strings.Join(r.Factors, "\x00")}] {
			continue
		}
		if r.Convention == "" {
			r.Convention = unclusteredNote
		} else {
			r.Convention += "; " + unclusteredNote
		}
	}
}
