package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
)

// A re-apply whose cases would compute exactly what the outputs in force
// hold (same results key: same code, configs, templates, data and matrix;
// metric blocks may differ) takes their good rows instead of walking those
// cases again: the results rows as they are (with this apply's run name and
// config hash), and their calls as served from the journal, as a walk would
// have served them. Errored and kept cases are walked again, so apply still
// retries them. The outputs are those a walk would write; only the time
// differs.

// orderFile holds, beside a generation's results.parquet, the case ordinal
// of each of its rows (little-endian int32), so its rows can be read back
// in case order without a lookup by case id.
const orderFile = ".order"

func writeOrder(dir string, order []int32) error {
	b := make([]byte, 4*len(order))
	for i, o := range order {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(o))
	}
	return parquetio.WriteFileAtomic(filepath.Join(dir, orderFile), b)
}

func readOrder(dir string) ([]int32, error) {
	b, err := os.ReadFile(filepath.Join(dir, orderFile))
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s is damaged", orderFile)
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// reuse is what this apply takes from the generation in force.
type reuse struct {
	dir   string
	order []int32
	// copied marks the cases whose rows are taken; rewalk holds, by id,
	// those whose rows are not (errored or kept): they are walked again.
	copied doneSet
	rewalk map[string]bool
	n      int
	// linkResults: every case is taken and the rows need no change (same
	// run name and config hash), so results.parquet is linked as it is;
	// linkCalls: every case is taken and the calls in force were all
	// served from the journal already, so calls.parquet is linked too.
	linkResults, linkCalls bool
}

// settledJournal is the journal's size recorded by the outputs in force
// when this apply may take their rows, or 0: up to there the journal holds
// no unsettled intent (an apply that finished every case wrote them), so
// opening it need not read that far unless a case is walked. A merge's
// journal joins the shards' as they were, so it is read whole.
func (e *Engine) settledJournal() int64 {
	if e.study.ResultsKey == "" || !e.opts.NoResults {
		return 0
	}
	cur := CurrentGeneration(e.opts.OutDir)
	if cur == "" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(cur, "manifest.json"))
	if err != nil {
		return 0
	}
	var m struct {
		ResultsKey   string          `json:"results_key"`
		JournalBytes int64           `json:"journal_bytes"`
		MergedFrom   json.RawMessage `json:"merged_from"`
		Interrupted  bool            `json:"interrupted"`
	}
	if json.Unmarshal(data, &m) != nil || m.ResultsKey != e.study.ResultsKey || len(m.MergedFrom) > 0 || m.Interrupted {
		return 0
	}
	return m.JournalBytes
}

// planReuse says whether the outputs in force may be taken, and which rows.
func (e *Engine) planReuse(journalBytes int64) *reuse {
	s := e.study
	if s.ResultsKey == "" || !e.opts.NoResults {
		// A caller that wants every result in memory gets them walked: a
		// result read back from Parquet is not the in-memory one.
		return nil
	}
	cur := CurrentGeneration(e.opts.OutDir)
	if cur == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(cur, "manifest.json"))
	if err != nil {
		return nil
	}
	var m struct {
		ResultsKey   string `json:"results_key"`
		JournalBytes int64  `json:"journal_bytes"`
		Cases        int    `json:"cases"`
		Run          string `json:"run"`
		ConfigHash   string `json:"config_hash"`
		CallsNew     int    `json:"calls_new"`
		Attempts     int    `json:"attempts"`
		CasesDigest  string `json:"cases_digest"`
	}
	// A journal shorter than when those rows were written is not the one
	// that served them.
	planned := s.NumCases()
	if json.Unmarshal(data, &m) != nil || m.ResultsKey != s.ResultsKey || m.Cases != planned || journalBytes < m.JournalBytes {
		return nil
	}
	// Rows are matched to cases by ordinal: only the very same cases line
	// up, not others of the same count (another selection, or an optional
	// model skipped for want of its key in one apply and another in the
	// next).
	if m.CasesDigest == "" || m.CasesDigest != s.CasesDigest() {
		return nil
	}
	order, err := readOrder(cur)
	if err != nil || len(order) != m.Cases {
		return nil
	}
	r := &reuse{dir: cur, order: order, copied: newDoneSet(planned), rewalk: map[string]bool{}}
	row := 0
	err = eachRecord(filepath.Join(cur, "results.parquet"), []string{"case_id", "error", "kept_from"}, func(rec arrow.RecordBatch) error {
		ids, errs, kept := rec.Column(0), rec.Column(1), rec.Column(2)
		for i := 0; i < int(rec.NumRows()); i++ {
			ord := int(order[row+i])
			if ord < 0 || ord >= planned || r.copied.has(ord) {
				return fmt.Errorf("row %d names case %d, out of range or twice", row+i, ord)
			}
			if errs.IsNull(i) && kept.IsNull(i) {
				r.copied.mark(ord)
				r.n++
			} else {
				id, _ := parquetio.StringAt(ids, i)
				r.rewalk[id] = true
			}
		}
		row += int(rec.NumRows())
		return nil
	})
	if err != nil || row != planned {
		return nil
	}
	all := len(r.rewalk) == 0
	r.linkResults = all && m.Run == s.Run.Name && m.ConfigHash == s.ConfigHash
	r.linkCalls = all && m.CallsNew == 0 && m.Attempts == 0
	return r
}

// countTaken counts the rows of a results.parquet linked as it is, as
// copySource counts each row it copies.
func (e *Engine) countTaken(r *reuse, tl *tally) error {
	c := &copySource{e: e, r: r, tl: tl, starts: caseStarts(e.study)}
	row := 0
	cols := []string{"calls", "prompt_tokens", "completion_tokens", "thinking_tokens", "cost_usd", "judge_cost_usd", "parsed", "truncated"}
	return eachRecord(filepath.Join(r.dir, "results.parquet"), cols, func(rec arrow.RecordBatch) error {
		cc := countColsOf(rec)
		for i := 0; i < int(rec.NumRows()); i++ {
			c.count(cc, i, int(r.order[row+i]))
		}
		row += int(rec.NumRows())
		return nil
	})
}

// countCalls counts the calls of a calls.parquet linked as it is.
func (e *Engine) countCalls(r *reuse) (int, error) {
	n := 0
	err := eachRecord(filepath.Join(r.dir, "calls.parquet"), []string{"model"}, func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			name, _ := parquetio.StringAt(rec.Column(0), i)
			if st := e.modelStats(name); st != nil {
				st.Calls.Add(1)
				st.Cached.Add(1)
			}
		}
		n += int(rec.NumRows())
		return nil
	})
	return n, err
}

// linkOrCopy puts a file of the generation in force into the new one.
func linkOrCopy(from, to string) error {
	if err := os.Link(from, to); err == nil {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return parquetio.WriteFileAtomic(to, data)
}

func caseStarts(s *spec.Study) []int {
	starts := make([]int, len(s.Cells)+1)
	for i, c := range s.Cells {
		starts[i+1] = starts[i] + len(c.Task.Items)
	}
	return starts
}

// copySource gives the good rows of the generation in force, in its file's
// order, with this apply's run name and config hash, counting each into the
// tally and its model's progress as it goes out.
type copySource struct {
	e      *Engine
	r      *reuse
	tl     *tally
	starts []int
	rr     parquetio.RecordReader
	rec    arrow.RecordBatch
	pos    int // next row of rec
	base   int // file row of rec's first
	done   bool
}

func (e *Engine) newCopySource(r *reuse, tl *tally) (*copySource, error) {
	f, rdr, fr, err := parquetio.Open(filepath.Join(r.dir, "results.parquet"))
	if err != nil {
		return nil, err
	}
	fr.Props.BatchSize = copyBatch
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		rdr.Close()
		f.Close()
		return nil, err
	}
	return &copySource{e: e, r: r, tl: tl, starts: caseStarts(e.study), rr: parquetio.Prefetch(closingReader{rr, rdr, f})}, nil
}

type closingReader struct {
	parquetio.RecordReader
	rdr interface{ Close() error }
	f   *os.File
}

func (c closingReader) Release() {
	c.RecordReader.Release()
	c.rdr.Close()
	c.f.Close()
}

func (c *copySource) close() { c.rr.Release() }

// emit writes the rows from the current one on, in file order, while their
// cases come before limit, appending their ordinals to order.
func (c *copySource) emit(limit int, w *resultsWriter, order *[]int32) error {
	for !c.done {
		if c.rec == nil || c.pos >= int(c.rec.NumRows()) {
			if c.rec != nil {
				c.base += int(c.rec.NumRows())
			}
			if !c.rr.Next() {
				c.done = true
				return c.rr.Err()
			}
			c.rec, c.pos = c.rr.RecordBatch(), 0
		}
		rec := c.rec
		col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		errs, kept := col("error"), col("kept_from")
		cc := countColsOf(rec)
		var runs [][2]int
		i := c.pos
		for ; i < int(rec.NumRows()); i++ {
			if !errs.IsNull(i) || !kept.IsNull(i) {
				continue // walked again: its row comes from this apply
			}
			ord := int(c.r.order[c.base+i])
			if ord >= limit {
				break
			}
			if len(runs) > 0 && runs[len(runs)-1][1] == i {
				runs[len(runs)-1][1] = i + 1
			} else {
				runs = append(runs, [2]int{i, i + 1})
			}
			*order = append(*order, int32(ord))
			c.count(cc, i, ord)
		}
		c.pos = i
		if len(runs) > 0 {
			out, err := takeRows(rec, runs, map[string]string{"run": c.e.study.Run.Name, "config_hash": c.e.study.ConfigHash})
			if err != nil {
				return err
			}
			err = w.WriteRecord(out)
			out.Release()
			if err != nil {
				return err
			}
		}
		if i < int(rec.NumRows()) {
			return nil // the next row waits for an earlier case of this apply
		}
	}
	return nil
}

// countCols are the columns of a results record count reads, looked up
// once per record.
type countCols struct {
	calls, prompt, completion, thinking, cost, judgeCost, parsed, truncated arrow.Array
}

func countColsOf(rec arrow.RecordBatch) *countCols {
	col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
	return &countCols{calls: col("calls"), prompt: col("prompt_tokens"), completion: col("completion_tokens"),
		thinking: col("thinking_tokens"), cost: col("cost_usd"), judgeCost: col("judge_cost_usd"),
		parsed: col("parsed"), truncated: col("truncated")}
}

// count adds a taken row to the tally (its calls were counted as they were
// copied) and to its model's progress.
func (c *copySource) count(cc *countCols, i, ord int) {
	num := func(a arrow.Array) int { n, _ := parquetio.IntAt(a, i); return int(n) }
	flag := func(a arrow.Array) bool { b, _ := parquetio.BoolAt(a, i); return b }
	cost, _ := parquetio.FloatAt(cc.cost, i)
	jcost, _ := parquetio.FloatAt(cc.judgeCost, i)
	res := spec.Result{Done: true, Parsed: flag(cc.parsed),
		Acct: spec.Account{Calls: num(cc.calls), PromptTokens: num(cc.prompt), CompletionTokens: num(cc.completion),
			ThinkingTokens: num(cc.thinking), CostUSD: cost, Truncated: flag(cc.truncated)},
		JudgeAcct: spec.Account{CostUSD: jcost}}
	c.tl.addCounts(&res)
	st := c.e.stats[c.e.study.Cells[cellOf(c.starts, ord)].Model]
	c.e.noteCopied(cellOf(c.starts, ord), res.Acct.Calls)
	st.Tokens.Add(int64(res.Acct.PromptTokens + res.Acct.CompletionTokens))
}

// copyCalls writes the calls of the cases taken, as a walk would have
// served them from the journal: the row whose reply the case used, cached,
// no attempt made, nothing paid. It returns how many it wrote.
func (e *Engine) copyCalls(r *reuse, w *parquetio.Writer) (int, error) {
	total := 0
	err := eachRecord(filepath.Join(r.dir, "calls.parquet"), nil, func(rec arrow.RecordBatch) error {
		n := int(rec.NumRows())
		col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		ids, final, models := col("case_id").(*array.String), col("final").(*array.Boolean), col("model")
		var runs [][2]int
		for i := 0; i < n; i++ {
			if final.IsNull(i) || !final.Value(i) || r.rewalk[ids.Value(i)] {
				continue
			}
			if len(runs) > 0 && runs[len(runs)-1][1] == i {
				runs[len(runs)-1][1] = i + 1
			} else {
				runs = append(runs, [2]int{i, i + 1})
			}
			name, _ := parquetio.StringAt(models, i)
			if st := e.modelStats(name); st != nil {
				st.Calls.Add(1)
				st.Cached.Add(1)
			}
			total++
		}
		if len(runs) == 0 {
			return nil
		}
		out, err := takeRows(rec, runs, nil)
		if err != nil {
			return err
		}
		defer out.Release()
		served, err := servedFromJournal(out)
		if err != nil {
			return err
		}
		defer served.Release()
		return w.WriteRecord(served)
	})
	return total, err
}

func (e *Engine) modelStats(name string) *ModelStats {
	for m, st := range e.stats {
		if m.Name == name {
			return st
		}
	}
	return nil
}

// cellOf is the cell of a case ordinal, given the cells' first ordinals.
func cellOf(starts []int, ord int) int {
	lo, hi := 0, len(starts)-1
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if starts[mid] <= ord {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// eachRecord reads the named columns (nil: all) of a Parquet file a batch
// of rows at a time.
func eachRecord(path string, cols []string, fn func(arrow.RecordBatch) error) error {
	f, rdr, fr, err := parquetio.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	defer rdr.Close()
	var idx []int
	for _, c := range cols {
		i := rdr.MetaData().Schema.ColumnIndexByName(c)
		if i < 0 {
			return fmt.Errorf("%s has no %s column", path, c)
		}
		idx = append(idx, i)
	}
	fr.Props.BatchSize = copyBatch
	pr, err := fr.GetRecordReader(context.Background(), idx, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rr := parquetio.Prefetch(pr)
	defer rr.Release()
	for rr.Next() {
		if err := fn(rr.RecordBatch()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// takeRows is the rows of rec in runs ([from, to) pairs), with the named
// string columns set to one value.
func takeRows(rec arrow.RecordBatch, runs [][2]int, set map[string]string) (arrow.RecordBatch, error) {
	n := 0
	for _, r := range runs {
		n += r[1] - r[0]
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c := range cols {
		name := rec.Schema().Field(c).Name
		if v, ok := set[name]; ok {
			b := array.NewStringBuilder(memory.DefaultAllocator)
			b.Reserve(n)
			for range n {
				b.Append(v)
			}
			cols[c] = b.NewArray()
			b.Release()
			continue
		}
		a := rec.Column(c)
		if len(runs) == 1 && runs[0][0] == 0 && runs[0][1] == a.Len() {
			a.Retain()
			cols[c] = a
			continue
		}
		parts := make([]arrow.Array, len(runs))
		for i, r := range runs {
			parts[i] = array.NewSlice(a, int64(r[0]), int64(r[1]))
		}
		joined, err := array.Concatenate(parts, memory.DefaultAllocator)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
		cols[c] = joined
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(n))
	return out, nil
}

// servedFromJournal marks calls rows as a journal hit: cached, no attempts,
// nothing paid (where there was a reply to pay for).
func servedFromJournal(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for c := range cols {
		a := rec.Column(c)
		switch rec.Schema().Field(c).Name {
		case "cached":
			b := array.NewBooleanBuilder(memory.DefaultAllocator)
			for range n {
				b.Append(true)
			}
			cols[c] = b.NewArray()
			b.Release()
		case "attempts":
			b := array.NewInt64Builder(memory.DefaultAllocator)
			for range n {
				b.Append(0)
			}
			cols[c] = b.NewArray()
			b.Release()
		case "cost_usd":
			b := array.NewFloat64Builder(memory.DefaultAllocator)
			for i := range n {
				if a.IsNull(i) {
					b.AppendNull()
				} else {
					b.Append(0)
				}
			}
			cols[c] = b.NewArray()
			b.Release()
		default:
			a.Retain()
			cols[c] = a
		}
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(n)), nil
}

// copyBatch is the rows read at a time when a file is copied or counted:
// a quarter of a row group, so the batches in hand (one written, one read
// ahead, one being read) stay small beside the heap's limit.
const copyBatch = parquetio.RowBatch / 4
