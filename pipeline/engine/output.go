package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
	"unique"

	"github.com/promoral/promoral"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/secret"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder"
	"github.com/promoral/promoral/runfolder/manifest"
)

// CallRow is one row of calls.parquet: one attempt at one model call, or a
// reply served from the journal or shared with an identical request in
// flight (cached). Final marks the row whose reply the case used (or the
// failed last attempt); Attempts is how many attempts this apply made for the
// call (0 when it was served), on every row of the call. The worker that made
// the call formats it (JSON of the messages), so the single Parquet writer
// only appends.
type CallRow struct {
	Final     bool
	Attempts  int
	Case      *spec.Case
	Stage     string
	Attempt   int
	Key       string
	Messages  string
	Params    string
	Resp      *llm.Response
	LatencyMS float64
	Time      time.Time
	Cached    bool
	Err       string
	Price     spec.Price
	// caseDone marks the end of a case's rows (no row of its own): the
	// case's calls can go out in case order.
	caseDone bool
}

// paramsJSON is request_params: the request without its messages (they
// are request_messages), with no "messages":null standing in for them.
func paramsJSON(req *llm.Request) string {
	var buf [256]byte
	b, ok := req.AppendParams(buf[:0])
	if !ok {
		params := *req
		params.Messages = nil
		b = []byte(spec.JSONString(&params))
	}
	// The model's name is a JSON string (its quotes escaped), so the first
	// match is the messages field, which follows it.
	return string(bytes.Replace(b, []byte(`,"messages":null`), nil, 1))
}

// callColumns are calls.parquet's columns (runfolder.CallSchema).
var callColumns = runfolder.CallSchema.Columns()

// values is the row's calls.parquet values, in callColumns' order.
func (r *CallRow) values() []any {
	c := r.Case
	row := runfolder.Call{CaseID: c.ID(), Model: c.Model.Name, Strategy: c.Strategy.Name, Task: c.Task.Name, ItemID: c.Item.ID,
		Repeat: c.Repeat, Stage: r.Stage, Attempt: r.Attempt, RequestHash: r.Key, RequestMessages: r.Messages, RequestParams: r.Params,
		LatencyMS: r.LatencyMS, Cached: r.Cached, Error: r.Err, Time: r.Time, Final: r.Final, Attempts: r.Attempts}
	if r.Resp != nil {
		row.Replied, row.ResponseText, row.ModelVersion, row.BatchID = true, r.Resp.Text(), r.Resp.ModelVersion, r.Resp.Batch
		if len(r.Resp.Choices) > 0 {
			row.FinishReason = r.Resp.Choices[0].FinishReason
		}
		if len(r.Resp.Choices) > 1 {
			row.ResponseChoices = spec.JSONString(r.Resp.Choices)
		}
		u := r.Resp.Usage
		row.PromptTokens, row.CompletionTokens, row.CachedPromptTokens, row.ThinkingTokens = u.PromptTokens, u.CompletionTokens, u.CachedPromptTokens, u.ThinkingTokens
		if !r.Cached { // nothing was paid for a cached row
			row.CostUSD = r.Price.CostOf(r.Resp)
		}
	}
	return runfolder.CallSchema.Append(make([]any, 0, len(runfolder.CallSchema)), &row)
}

// baseResultColumns are the columns of results.parquet before the flat
// ones (flatcols.go): its own (runfolder.ResultSchema), then the factors.
func (e *Engine) baseResultColumns() []parquetio.Column {
	return append(runfolder.ResultSchema.Columns(), factorColumns(e.study)...)
}

// resultValues is a case's results.parquet row: the base columns, then the
// flat columns' values as they are (resultsWriter types them).
func (e *Engine) resultValues(c *spec.Case, r *spec.Result) []any {
	// Every field, so a row is read without the dataset at hand.
	fields := r.ItemFields
	if fields == nil {
		fields = c.Item.Values()
	}
	// The three JSON columns are written into one reused buffer and
	// copied out as one string: a buffer grown from nothing for each,
	// for every case, would be a twentieth of what apply allocates.
	var outputs, judge, item string
	bp := jsonScratch.Get().(*[]byte)
	b := (*bp)[:0]
	if r.Outputs != nil {
		b = appendTraceValue(b, r.Outputs, false)
	}
	o := len(b)
	if r.Judge != nil {
		b = appendTraceValue(b, r.Judge, false)
	}
	j := len(b)
	if len(fields) > 0 {
		b = appendTraceValue(b, fields, false)
	}
	all := string(b)
	if cap(b) <= 1<<16 {
		*bp = b
		jsonScratch.Put(bp)
	}
	if r.Outputs != nil {
		outputs = all[:o]
	}
	if r.Judge != nil {
		judge = all[o:j]
	}
	if len(fields) > 0 {
		item = all[j:]
	}
	// The row outlives the item's fields (it may wait in the sink for an
	// earlier case), and a name read from a stored item is a view of that
	// item's whole buffer (dataset.readString): the names are interned
	// (few, so this allocates nothing after the first of each), not kept
	// as views.
	model, strategy := c.ReportedNamesIn(fields)
	if c.Task.Spec.ReportAs != nil {
		model, strategy = unique.Make(model).Value(), unique.Make(strategy).Value()
	}
	a, ja := r.Acct, r.JudgeAcct
	subsetsVal := e.subsets.of(c, fields)
	subsets, _ := subsetsVal.(string)
	row := runfolder.Result{CaseID: c.ID(), Model: model, Strategy: strategy, Task: c.Task.Name, ItemID: c.Item.ID, Repeat: c.Repeat,
		Gold: c.Item.Gold, Label: r.Label, Confidence: r.Confidence, Parsed: r.Parsed, Correct: r.Correct,
		Truncated: a.Truncated, Blocked: a.Blocked, Outputs: outputs, Judge: judge, Item: item, Calls: a.Calls,
		PromptTokens: a.PromptTokens, CompletionTokens: a.CompletionTokens, ThinkingTokens: a.ThinkingTokens, CostUSD: a.CostUSD,
		JudgeTokens: ja.PromptTokens + ja.CompletionTokens, JudgeCostUSD: ja.CostUSD, Steps: r.Steps,
		Error: r.Err, ErrorClass: r.ErrClass, KeptFrom: r.KeptFrom, Run: e.study.Run.Name, ConfigHash: e.study.ConfigHash,
		Subsets: subsets, Trace: r.Trace}
	vals := make([]any, 0, len(runfolder.ResultSchema)+len(e.study.Factors)+len(e.flatCols()))
	vals = runfolder.ResultSchema.Append(vals, &row)
	vals = append(vals, factorValues(e.study, c)...)
	return e.flatValues(vals, c, r, fields, subsetsVal)
}

func (e *Engine) writeManifest(path string, sum *Summary, started time.Time) error {
	s := e.study
	m := manifest.Manifest{
		Summary: manifest.Summary(*sum), Format: manifest.FormatVersion, Version: promoral.Version, ConfigFile: s.File, ConfigHash: s.ConfigHash,
		Files: map[string]string{}, Started: started, Finished: time.Now().UTC(),
		Seed: s.Run.Settings.Seed, Unparsed: s.UnparsedPolicy(), ModelVersions: e.ModelVersions(),
	}
	for _, f := range s.Files {
		if data, err := os.ReadFile(f); err == nil {
			h := sha256.Sum256(data)
			m.Files[f] = hex.EncodeToString(h[:])
		}
	}
	for _, md := range s.Models {
		m.Models = append(m.Models, manifest.Model{Name: md.Name, Provider: md.Spec.Provider, Model: md.Spec.ID(), BaseURL: secret.URL(md.Spec.BaseURL), Price: manifest.Price(md.Spec.Price),
			Extends: md.Spec.Extends, Factors: md.Factors})
	}
	m.Factors, m.Metrics = s.Factors, spec.ManifestBlocks(s)
	for i := range m.Metrics { // aligned with s.Metrics, as ManifestBlocks made them
		if d, ok := s.Metrics[i].(manifest.BlockDrawer); ok {
			draw := d.BlockDraw()
			m.Metrics[i].Draw = &draw
		}
	}
	m.ResultsKey, m.JournalBytes, m.CasesDigest = s.ResultsKey, e.journal.Size(), s.CasesDigest()
	for _, st := range s.Strategies {
		m.Strategies = append(m.Strategies, st.Name)
	}
	sort.Strings(m.Strategies)
	for _, t := range s.Tasks {
		m.Tasks = append(m.Tasks, manifest.Task{Name: t.Name, Items: len(t.Items), Data: spec.ManifestDataOf(t), Judge: t.JudgeName()})
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return parquetio.WriteFileAtomic(path, append(data, '\n'))
}

// keepEarlierRows gives an errored case the row an earlier apply computed
// for it, when that row is good and was computed from the same config (the
// config hash covers every config, strategy, task and template file) and
// the same item: it is then exactly what this apply would have written had
// the call not failed (a journal record lost, the server down). The row is
// marked with kept_from (the earlier apply's output generation) and counted
// in the summary as kept; this apply's error goes to the summary. A case
// whose config or item changed keeps its error row: an earlier figure of
// another config would be a silently wrong number.
func (e *Engine) keepEarlierRows(held []heldCase) error {
	cur := CurrentGeneration(e.opts.OutDir)
	path := filepath.Join(cur, "results.parquet")
	if cur == "" {
		return nil
	}
	want := map[string]int{}
	for i := range held {
		want[held[i].c.ID()] = i
	}
	// Only the row groups that hold one of these cases are read.
	groups, err := parquetio.RowGroups(path, "case_id", func(v any) bool {
		id, _ := v.(string)
		_, ok := want[id]
		return ok
	})
	if err != nil || len(groups) == 0 {
		return err
	}
	gen := filepath.Base(cur)
	return parquetio.Scan(path, nil, groups, func(row map[string]any) {
		id, _ := row["case_id"].(string)
		i, ok := want[id]
		if !ok || row["error"] != nil || row["config_hash"] != e.study.ConfigHash {
			return
		}
		h := &held[i]
		if fields := h.c.Item.Values(); len(fields) == 0 && row["item"] != nil || len(fields) > 0 && row["item"] != itemJSON(fields) {
			return
		}
		kept := resultFromRow(row)
		kept.KeptFrom = gen
		if k, _ := row["kept_from"].(string); k != "" {
			kept.KeptFrom = k
		}
		kept.KeptErr, kept.KeptClass = h.r.Err, h.r.ErrClass
		h.r = kept
	})
}

// itemJSON is the item column: written (resultValues) and compared by the
// same encoder, so an unchanged item always matches its earlier row.
func itemJSON(fields map[string]any) string { return string(appendTraceValue(nil, fields, false)) }

// jsonScratch recycles the buffer a results row's JSON columns are
// written into.
var jsonScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// resultFromRow rebuilds a Result from a results.parquet row.
func resultFromRow(row map[string]any) spec.Result {
	str := func(k string) string { s, _ := row[k].(string); return s }
	num := func(k string) int { n, _ := row[k].(int64); return int(n) }
	flt := func(k string) float64 { f, _ := row[k].(float64); return f }
	flag := func(k string) bool { b, _ := row[k].(bool); return b }
	obj := func(k string) map[string]any {
		s := str(k)
		if s == "" {
			return nil
		}
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return nil
		}
		return m
	}
	r := spec.Result{Done: true, Label: str("label"), Parsed: flag("parsed"), Outputs: obj("outputs"), Judge: obj("judge"), Steps: num("steps")}
	if f, ok := row["confidence"].(float64); ok {
		r.Confidence = &f
	}
	if b, ok := row["correct"].(bool); ok {
		r.Correct = &b
	}
	r.Acct = spec.Account{Calls: num("calls"), PromptTokens: num("prompt_tokens"), CompletionTokens: num("completion_tokens"),
		ThinkingTokens: num("thinking_tokens"), CostUSD: flt("cost_usd"), Truncated: flag("truncated"), Blocked: flag("blocked")}
	// The judge's tokens are kept as one total; it is all the row holds.
	r.JudgeAcct = spec.Account{CompletionTokens: num("judge_tokens"), CostUSD: flt("judge_cost_usd")}
	return r
}

// factorColumns are the factor columns of results.parquet, after its own.
func factorColumns(st *spec.Study) []parquetio.Column {
	cols := make([]parquetio.Column, len(st.Factors))
	for i, f := range st.Factors {
		cols[i] = col(f, parquetio.ColString, true)
	}
	return cols
}

// factorValues are a case's values of factorColumns (null where unset).
func factorValues(st *spec.Study, c *spec.Case) []any {
	if len(st.Factors) == 0 {
		return nil
	}
	vs := st.FactorValues(c)
	out := make([]any, len(st.Factors))
	for i := range out {
		if i < len(vs) && vs[i] != "" {
			out[i] = vs[i]
		}
	}
	return out
}
