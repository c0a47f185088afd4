package engine

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
)

// Flat columns: results.parquet holds the strategy's outputs, the judge's,
// the item's fields and the task subsets as JSON text (outputs, judge,
// item, subsets), which every reader parses. Beside them, after the factor
// columns, it has one typed column for each field the study declares, so
// DuckDB and pandas read them directly:
//
//	out_<name>     each output a strategy of the study declares (outputs:)
//	judge_<name>   each output a judge strategy of the study declares
//	item_<field>   each item field a task declares (keep, dataset.fields, dataset.types)
//	subset_<name>  each task subset: true, false, or null when the item's
//	               task does not declare it or its expression failed
//
// A column's type is what its values are, over the whole file (an order-
// independent rule, flatType): bool, int64 (every number whole), double, or
// string; a column whose values mix kinds, or hold lists or objects, is a
// string column holding each value as the JSON column has it (a string as
// itself, anything else as its JSON text). The JSON columns stay as they
// were: the flat columns only add.

// flatSource says which JSON column a flat column reads.
type flatSource uint8

const (
	flatOut flatSource = iota
	flatJudge
	flatItem
	flatSubset
)

var flatPrefix = [...]string{flatOut: "out_", flatJudge: "judge_", flatItem: "item_", flatSubset: "subset_"}

// flatJSONColumn is the JSON column each source mirrors.
var flatJSONColumn = [...]string{flatOut: "outputs", flatJudge: "judge", flatItem: "item", flatSubset: "subsets"}

// flatCol is one flat column: its name in the file, and the field it holds.
type flatCol struct {
	name string
	src  flatSource
	key  string
}

// flatColumns lists the flat columns of a study's results.parquet, in
// file order: outputs, judge outputs, item fields, subsets, each sorted by
// the declared name. A name that is taken already (compared without case,
// as DuckDB compares names) by a column of results.parquet, a factor or an
// earlier flat column gets one more _ after its prefix until it is free:
// item field id is item__id, since item_id is the item's id.
func flatColumns(st *spec.Study, taken []parquetio.Column) []flatCol {
	outs, judges, items, subsets := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	tasks := map[*spec.Task]bool{}
	for i := range st.Cells {
		c := &st.Cells[i]
		for k := range c.Strategy.Spec.Outputs {
			outs[k] = true
		}
		tasks[c.Task] = true
	}
	for t := range tasks {
		if t.Judge != nil && t.Judge.Strategy != nil {
			for k := range t.Judge.Strategy.Spec.Outputs {
				judges[k] = true
			}
		}
		for _, k := range t.Spec.Keep {
			items[k] = true
		}
		for k := range t.Spec.Dataset.Fields {
			items[k] = true
		}
		for k := range t.Spec.Dataset.Types {
			items[k] = true
		}
		for k := range t.Spec.Subsets {
			subsets[k] = true
		}
	}
	used := map[string]bool{}
	for _, c := range taken {
		used[strings.ToLower(c.Name)] = true
	}
	var cols []flatCol
	for src, names := range []map[string]bool{flatOut: outs, flatJudge: judges, flatItem: items, flatSubset: subsets} {
		keys := make([]string, 0, len(names))
		for k := range names {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			prefix := flatPrefix[src]
			name := prefix + k
			for used[strings.ToLower(name)] {
				prefix += "_"
				name = prefix + k
			}
			used[strings.ToLower(name)] = true
			cols = append(cols, flatCol{name: name, src: flatSource(src), key: k})
		}
	}
	return cols
}

// flatState is an engine's flat columns and what the subset columns need.
type flatState struct {
	once sync.Once
	cols []flatCol
	// subsets caches, per task and subsets column value, the subset
	// columns' values (few distinct values recur).
	mu      sync.Mutex
	subsets map[flatSubsetKey][]any
}

type flatSubsetKey struct {
	t  *spec.Task
	js string
}

func (e *Engine) flatCols() []flatCol {
	e.flat.once.Do(func() {
		e.flat.cols = flatColumns(e.study, e.baseResultColumns())
		e.flat.subsets = map[flatSubsetKey][]any{}
	})
	return e.flat.cols
}

// flatValues appends a row's flat values, as they are (resultsWriter
// types them): subsets is the row's subsets column value.
func (e *Engine) flatValues(vals []any, c *spec.Case, r *spec.Result, fields map[string]any, subsets any) []any {
	cols := e.flatCols()
	var subs []any
	si := 0
	for _, fc := range cols {
		var v any
		switch fc.src {
		case flatOut:
			v = r.Outputs[fc.key]
		case flatJudge:
			v = r.Judge[fc.key]
		case flatItem:
			v = fields[fc.key]
		case flatSubset:
			if subs == nil {
				js, _ := subsets.(string)
				subs = e.subsetFlags(c.Task, js)
			}
			v = subs[si]
			si++
		}
		vals = append(vals, v)
	}
	return vals
}

// subsetFlags are the subset columns' values for an item of t whose
// subsets column is js (a JSON list of the subsets it is in, "!name" for a
// subset whose expression failed on it; "" when t has no subsets): true or
// false for a subset t declares, null for one it does not or that failed.
func (e *Engine) subsetFlags(t *spec.Task, js string) []any {
	k := flatSubsetKey{t, js}
	e.flat.mu.Lock()
	out, ok := e.flat.subsets[k]
	e.flat.mu.Unlock()
	if ok {
		return out
	}
	out = subsetFlagsOf(e.flatCols(), t, js)
	e.flat.mu.Lock()
	e.flat.subsets[k] = out
	e.flat.mu.Unlock()
	return out
}

func subsetFlagsOf(cols []flatCol, t *spec.Task, js string) []any {
	var listed []string
	if js != "" {
		if json.Unmarshal([]byte(js), &listed) != nil {
			listed = nil
		}
	}
	in := map[string]any{}
	for _, n := range listed {
		if strings.HasPrefix(n, "!") {
			in[n[1:]] = nil
		} else {
			in[n] = true
		}
	}
	var out []any
	for _, fc := range cols {
		if fc.src != flatSubset {
			continue
		}
		var v any
		if _, declared := t.Spec.Subsets[fc.key]; declared && js != "" {
			v = false
			if x, ok := in[fc.key]; ok {
				v = x
			}
		}
		out = append(out, v)
	}
	return out
}
