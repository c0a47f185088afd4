package scoring

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
)

// ReadResultSet reads the rows metrics score from a results.parquet the
// study's apply wrote, one row group at a time and only the columns the
// metrics read: label, confidence, parsed, correct, error, tokens and cost,
// and the strategy's and judge's outputs only for the tasks a metric reads
// them from (spec.OutputReader). order gives the case ordinal of each
// of the file's rows (engine.Written.Order); the rows come back in case
// order, whatever order the file holds them in. The subsets column, where
// the file has one, becomes each task's subset marks (Task.SubsetMark).
func ReadResultSet(st *spec.Study, path string, order []int32) (*spec.ResultSet, error) {
	rs := &spec.ResultSet{Study: st, Policy: st.UnparsedPolicy(), Seed: uint64(st.Run.Settings.Seed), Outputs: outputReaders(st)}
	f, rdr, fr, err := parquetio.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	defer rdr.Close()
	if n := rdr.NumRows(); n != int64(len(order)) {
		return nil, fmt.Errorf("%s holds %d rows, the apply wrote %d", path, n, len(order))
	}
	cols := []string{"label", "confidence", "parsed", "correct", "error", "prompt_tokens", "completion_tokens", "cost_usd", "judge_cost_usd", "outputs", "judge"}
	idx := make([]int, len(cols))
	for i, c := range cols {
		if idx[i] = rdr.MetaData().Schema.ColumnIndexByName(c); idx[i] < 0 {
			return nil, fmt.Errorf("%s has no %s column", path, c)
		}
	}
	starts := make([]int, len(st.Cells)+1)
	for i, c := range st.Cells {
		starts[i+1] = starts[i] + len(c.Task.Items)
	}
	wantOut := make([]bool, len(st.Cells))
	anyOut := false
	for i, c := range st.Cells {
		wantOut[i] = rs.Outputs(c.Task)
		anyOut = anyOut || wantOut[i]
	}
	read := idx
	if !anyOut {
		read = idx[:len(idx)-2]
	}
	// The subsets column places the items of tasks with subsets.
	marks := make([]*subsetMarks, len(st.Cells))
	subsetsAt := -1
	if sc := rdr.MetaData().Schema.ColumnIndexByName("subsets"); sc >= 0 {
		byTask := map[*spec.Task]*subsetMarks{}
		for i, c := range st.Cells {
			if len(c.Task.Spec.Subsets) == 0 {
				continue
			}
			if byTask[c.Task] == nil {
				byTask[c.Task] = newSubsetMarks(c.Task)
			}
			marks[i] = byTask[c.Task]
		}
		if len(byTask) > 0 {
			subsetsAt = len(read)
			read = append(read[:len(read):len(read)], sc)
		}
	}
	// Rows of a task that reports its items' model and strategy (report_as)
	// take the names from their row: asking the item would read a large
	// dataset's fields back from its store.
	names := -1
	for _, c := range st.Cells {
		if c.Task.Spec.ReportAs != nil {
			m, s := rdr.MetaData().Schema.ColumnIndexByName("model"), rdr.MetaData().Schema.ColumnIndexByName("strategy")
			if m < 0 || s < 0 {
				return nil, fmt.Errorf("%s has no model or strategy column", path)
			}
			names = len(read)
			read = append(read[:len(read):len(read)], m, s)
			break
		}
	}
	// Where a row's Correct points (none of the rows keeps the pointer).
	yes, no := true, false
	rows := make([]spec.ResultRow, starts[len(st.Cells)])
	have := make([]bool, len(rows))
	cells := spec.NewRowCells()
	row := 0
	for g := 0; g < rdr.NumRowGroups(); g++ {
		tbl, err := fr.ReadRowGroups(context.Background(), read, []int{g})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		n := int(tbl.NumRows())
		cs := make([]arrow.Array, len(read))
		for c := range read {
			cs[c] = concatChunks(tbl.Column(c).Data())
		}
		for i := 0; i < n; i++ {
			ord := int(order[row+i])
			if ord < 0 || ord >= len(rows) || have[ord] {
				tbl.Release()
				return nil, fmt.Errorf("%s: row %d is case %d, which is out of range or read twice", path, row+i, ord)
			}
			have[ord] = true
			ci := sort.SearchInts(starts, ord+1) - 1
			cell := &st.Cells[ci]
			c := spec.Case{Ordinal: ord, Cell: ci, Model: cell.Model, Strategy: cell.Strategy, Task: cell.Task, Item: &cell.Task.Items[ord-starts[ci]], Repeat: cell.Repeat, Sweep: cell.Sweep}
			var rc *spec.RowCell
			if names >= 0 && c.Task.Spec.ReportAs != nil {
				m, mok := parquetio.StringAt(cs[names], i)
				s, sok := parquetio.StringAt(cs[names+1], i)
				if mok && sok {
					rc = cells.Named(st, &c, m, s)
				}
			}
			if rc == nil {
				rc = cells.Of(st, &c)
			}
			// The row as the Result it was written from, as far as the
			// metrics read it.
			res := spec.Result{Done: true}
			res.Label, _ = parquetio.StringAt(cs[0], i)
			res.Parsed, _ = parquetio.BoolAt(cs[2], i)
			if v, ok := parquetio.BoolAt(cs[3], i); ok {
				res.Correct = &no
				if v {
					res.Correct = &yes
				}
			}
			if !cs[4].IsNull(i) {
				res.Err = errored
			}
			pt, _ := parquetio.IntAt(cs[5], i)
			ct, _ := parquetio.IntAt(cs[6], i)
			res.Acct.PromptTokens, res.Acct.CompletionTokens = int(pt), int(ct)
			res.Acct.CostUSD, _ = parquetio.FloatAt(cs[7], i)
			res.JudgeAcct.CostUSD, _ = parquetio.FloatAt(cs[8], i)
			if wantOut[ci] {
				var err error
				if res.Outputs, err = jsonObject(cs[9], i); err != nil {
					tbl.Release()
					return nil, fmt.Errorf("%s: case %s: outputs: %w", path, c.ID(), err)
				}
				if res.Judge, err = jsonObject(cs[10], i); err != nil {
					tbl.Release()
					return nil, fmt.Errorf("%s: case %s: judge: %w", path, c.ID(), err)
				}
			}
			r := rc.Row(c.Item, &res)
			if v, ok := parquetio.FloatAt(cs[1], i); ok {
				r.Conf = v
			}
			if m := marks[ci]; m != nil {
				if s, ok := parquetio.StringAt(cs[subsetsAt], i); ok {
					m.mark(ord-starts[ci], s)
				}
			}
			rows[ord] = r
		}
		row += n
		for _, a := range cs {
			a.Release()
		}
		tbl.Release()
	}
	// A complete apply has a row for every case; any other result set
	// keeps its rows in case order.
	k := 0
	for i := range rows {
		if have[i] {
			rows[k] = rows[i]
			k++
		}
	}
	rs.Rows = rows[:k]
	for ci, m := range marks {
		if m != nil {
			if rs.Marks == nil {
				rs.Marks = map[*spec.Task]spec.SubsetMarker{}
			}
			rs.Marks[st.Cells[ci].Task] = m
		}
	}
	return rs, nil
}

// outputReaders says which tasks' outputs some metric of the study reads.
func outputReaders(st *spec.Study) func(t *spec.Task) bool {
	var readers []spec.OutputReader
	for _, m := range st.Metrics {
		if r, ok := m.(spec.OutputReader); ok {
			readers = append(readers, r)
		}
	}
	return func(t *spec.Task) bool {
		for _, r := range readers {
			if r.ReadsOutputs(t) {
				return true
			}
		}
		return false
	}
}

// jsonObject decodes a JSON column's value (nil when null).
func jsonObject(a arrow.Array, i int) (map[string]any, error) {
	s, ok := parquetio.StringAt(a, i)
	if !ok {
		return nil, nil
	}
	var m map[string]any
	err := json.Unmarshal([]byte(s), &m)
	return m, err
}

// errored stands for the error of a row read back: the metrics read only
// that there was one.
const errored = "error"

// concatChunks is a column of one row group as one array.
func concatChunks(c *arrow.Chunked) arrow.Array {
	if len(c.Chunks()) == 1 {
		a := c.Chunks()[0]
		a.Retain()
		return a
	}
	a, err := array.Concatenate(c.Chunks(), memory.DefaultAllocator)
	if err != nil {
		panic(err) // the chunks of one column share a type
	}
	return a
}
