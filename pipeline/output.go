package pipeline

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

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/secret"
	"github.com/promoral/promoral/pipeline/spec"
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

var callColumns = []parquetio.Column{
	col("case_id", parquetio.ColString, false), col("model", parquetio.ColString, true), col("strategy", parquetio.ColString, true), col("task", parquetio.ColString, true),
	col("item_id", parquetio.ColString, false), col("repeat", parquetio.ColInt, false), col("stage", parquetio.ColString, true), col("attempt", parquetio.ColInt, false), col("request_hash", parquetio.ColString, false),
	col("request_messages", parquetio.ColString, false), col("request_params", parquetio.ColString, true), col("response_text", parquetio.ColString, false),
	col("response_choices", parquetio.ColString, false), col("finish_reason", parquetio.ColString, true),
	col("prompt_tokens", parquetio.ColInt, false), col("completion_tokens", parquetio.ColInt, false), col("cached_prompt_tokens", parquetio.ColInt, false),
	col("thinking_tokens", parquetio.ColInt, false), col("latency_ms", parquetio.ColFloat, false), col("cached", parquetio.ColBool, false), col("error", parquetio.ColString, false),
	col("model_version", parquetio.ColString, true), col("cost_usd", parquetio.ColFloat, false), col("time", parquetio.ColTime, false),
	col("final", parquetio.ColBool, false), col("attempts", parquetio.ColInt, false), col("batch_id", parquetio.ColString, true),
}

// values is the row's calls.parquet values, in callColumns' order.
func (r *CallRow) values() []any {
	c := r.Case
	var text, finish, version any
	var choices any
	var pt, ct, cpt, tt, cost any
	var errText, batch any
	if r.Resp != nil && r.Resp.Batch != "" {
		batch = r.Resp.Batch
	}
	if r.Resp != nil {
		text, finish, version = r.Resp.Text(), "", r.Resp.ModelVersion
		if len(r.Resp.Choices) > 0 {
			finish = r.Resp.Choices[0].FinishReason
		}
		if len(r.Resp.Choices) > 1 {
			choices = spec.JSONString(r.Resp.Choices)
		}
		u := r.Resp.Usage
		pt, ct, cpt, tt = u.PromptTokens, u.CompletionTokens, u.CachedPromptTokens, u.ThinkingTokens
		cost = r.Price.CostOf(r.Resp)
		if r.Cached {
			cost = 0.0 // nothing was paid for this row
		}
	}
	if r.Err != "" {
		errText = r.Err
	}
	return []any{c.ID(), c.Model.Name, c.Strategy.Name, c.Task.Name, c.Item.ID, c.Repeat, r.Stage, r.Attempt, r.Key,
		r.Messages, r.Params, text, choices, finish, pt, ct, cpt, tt, r.LatencyMS, r.Cached, errText, version, cost, r.Time,
		r.Final, r.Attempts, batch}
}

// baseResultColumns are the columns of results.parquet before the flat
// ones (flatcols.go).
func (e *Engine) baseResultColumns() []parquetio.Column {
	return append([]parquetio.Column{
		col("case_id", parquetio.ColString, false), col("model", parquetio.ColString, true), col("strategy", parquetio.ColString, true), col("task", parquetio.ColString, true),
		col("item_id", parquetio.ColString, false), col("repeat", parquetio.ColInt, false), col("gold", parquetio.ColString, true), col("label", parquetio.ColString, true), col("confidence", parquetio.ColFloat, false),
		col("parsed", parquetio.ColBool, false), col("correct", parquetio.ColBool, false), col("truncated", parquetio.ColBool, false), col("blocked", parquetio.ColBool, false),
		col("outputs", parquetio.ColString, false), col("judge", parquetio.ColString, false), col("item", parquetio.ColString, false), col("calls", parquetio.ColInt, false),
		col("prompt_tokens", parquetio.ColInt, false), col("completion_tokens", parquetio.ColInt, false), col("thinking_tokens", parquetio.ColInt, false),
		col("total_tokens", parquetio.ColInt, false), col("cost_usd", parquetio.ColFloat, false), col("judge_tokens", parquetio.ColInt, false),
		col("judge_cost_usd", parquetio.ColFloat, false), col("steps", parquetio.ColInt, false), col("error", parquetio.ColString, false),
		col("error_class", parquetio.ColString, true), col("kept_from", parquetio.ColString, true), col("run", parquetio.ColString, true), col("config_hash", parquetio.ColString, true),
		col("subsets", parquetio.ColString, true), col("trace", parquetio.ColString, false),
	}, factorColumns(e.study)...)
}

// resultValues is a case's results.parquet row: the base columns, then the
// flat columns' values as they are (resultsWriter types them).
func (e *Engine) resultValues(c *spec.Case, r *spec.Result) []any {
	var gold, label, errText, errClass, keptFrom any
	if c.Item.Gold != "" {
		gold = c.Item.Gold
	}
	if r.Label != "" {
		label = r.Label
	}
	if r.Err != "" {
		errText, errClass = r.Err, r.ErrClass
	}
	if r.KeptFrom != "" {
		keptFrom = r.KeptFrom
	}
	// Every field, so a row is read without the dataset at hand.
	fields := r.ItemFields
	if fields == nil {
		fields = c.Item.Values()
	}
	var item, trace any
	if r.Trace != "" {
		trace = r.Trace
	}
	var correct any
	if r.Correct != nil {
		correct = *r.Correct
	}
	// The three JSON columns are written into one reused buffer and
	// copied out as one string: a buffer grown from nothing for each,
	// for every case, would be a twentieth of what apply allocates.
	var outputs, judge any
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
	subsets := e.subsets.of(c, fields)
	vals := make([]any, 0, 32+len(e.study.Factors)+len(e.flatCols()))
	vals = append(vals, []any{c.ID(), model, strategy, c.Task.Name, c.Item.ID, c.Repeat, gold, label, r.Confidence,
		r.Parsed, correct, a.Truncated, a.Blocked, outputs, judge, item, a.Calls,
		a.PromptTokens, a.CompletionTokens, a.ThinkingTokens, a.PromptTokens + a.CompletionTokens, a.CostUSD,
		ja.PromptTokens + ja.CompletionTokens, ja.CostUSD, r.Steps, errText,
		errClass, keptFrom, e.study.Run.Name, e.study.ConfigHash, subsets, trace}...)
	vals = append(vals, factorValues(e.study, c)...)
	return e.flatValues(vals, c, r, fields, subsets)
}

// Manifest is manifest.json: what ran, on which config, with what outcome.
type Manifest struct {
	Summary
	Version       string              `json:"version"`
	ConfigFile    string              `json:"config_file"`
	ConfigHash    string              `json:"config_hash"`
	Files         map[string]string   `json:"files"`
	Started       time.Time           `json:"started"`
	Finished      time.Time           `json:"finished"`
	Seed          int64               `json:"seed"`
	Unparsed      string              `json:"unparsed_policy"`
	Models        []ManifestModel     `json:"models"`
	ModelVersions map[string][]string `json:"model_versions"`
	Strategies    []string            `json:"strategies"`
	Tasks         []ManifestTask      `json:"tasks"`
	// Factors are the condition factor columns; Metrics every metric
	// block with the policies it scored under (numbers).
	Factors []string             `json:"factors,omitempty"`
	Metrics []spec.ManifestBlock `json:"metrics,omitempty"`
	// ResultsKey names what the results depend on (not the metric blocks),
	// JournalBytes the journal's size when they were written: a re-apply
	// with the same key takes their good rows instead of walking again.
	ResultsKey   string `json:"results_key,omitempty"`
	JournalBytes int64  `json:"journal_bytes,omitempty"`
	// CasesDigest names the cases the rows are, in ordinal order: the rows
	// are matched to cases by ordinal, so only the same cases line up.
	CasesDigest string `json:"cases_digest,omitempty"`
}

// ManifestModel records a model entry without anything secret.
type ManifestModel struct {
	Name     string     `json:"name"`
	Provider string     `json:"provider"`
	Model    string     `json:"model"`
	BaseURL  string     `json:"base_url,omitempty"`
	Price    spec.Price `json:"price"`
	// Extends and Factors say which model a variant varies and how.
	Extends string            `json:"extends,omitempty"`
	Factors map[string]string `json:"factors,omitempty"`
}

// ManifestTask records a task and its item count.
type ManifestTask struct {
	Name  string             `json:"name"`
	Items int                `json:"items"`
	Data  *spec.ManifestData `json:"data,omitempty"`
	Judge string             `json:"judge,omitempty"` // the task's judge: strategy, and "on <model>" when it calls one
}

func (e *Engine) writeManifest(path string, sum *Summary, started time.Time) error {
	s := e.study
	m := Manifest{
		Summary: *sum, Version: spec.Version, ConfigFile: s.File, ConfigHash: s.ConfigHash,
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
		m.Models = append(m.Models, ManifestModel{Name: md.Name, Provider: md.Spec.Provider, Model: md.Spec.ID(), BaseURL: secret.URL(md.Spec.BaseURL), Price: md.Spec.Price,
			Extends: md.Spec.Extends, Factors: md.Factors})
	}
	m.Factors, m.Metrics = s.Factors, spec.ManifestBlocks(s)
	m.ResultsKey, m.JournalBytes, m.CasesDigest = s.ResultsKey, e.journal.Size(), s.CasesDigest()
	for _, st := range s.Strategies {
		m.Strategies = append(m.Strategies, st.Name)
	}
	sort.Strings(m.Strategies)
	for _, t := range s.Tasks {
		m.Tasks = append(m.Tasks, ManifestTask{Name: t.Name, Items: len(t.Items), Data: spec.ManifestDataOf(t), Judge: t.JudgeName()})
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
