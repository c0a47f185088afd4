package view

import (
	"encoding/json"
	"fmt"

	"github.com/promoral/promoral/pipeline/audit"
)

// Case is everything the case page shows about one case.
type Case struct {
	Row     Row             `json:"row"`
	Fields  map[string]any  `json:"fields"` // the results.parquet row, text columns aside
	Item    json.RawMessage `json:"item,omitempty"`
	Outputs json.RawMessage `json:"outputs,omitempty"`
	Judge   json.RawMessage `json:"judge,omitempty"`
	Steps   []Step          `json:"steps"`
	Calls   []CallGroup     `json:"calls,omitempty"` // calls no trace step claims (runs without a trace)
	Labels  []audit.Label   `json:"labels,omitempty"`
	// Samples are every repeat of the case's item under its model,
	// strategy and task, this case among them, by repeat (repeats: k).
	Samples []Sample `json:"samples,omitempty"`
	Error   string   `json:"error,omitempty"`
	Notes   []string `json:"notes,omitempty"`
	Trace   bool     `json:"trace"`
}

// Step is one stage run with the calls it made.
type Step struct {
	TraceStep
	Calls *CallGroup `json:"call,omitempty"`
}

// CallGroup is one model call: its attempts in order, the last one being
// the reply the case used (or the final failure).
type CallGroup struct {
	Stage    string `json:"stage"`
	Attempts []Call `json:"attempts"`
}

// Call is one row of calls.parquet.
type Call struct {
	Stage       string          `json:"stage"`
	Attempt     int64           `json:"attempt"`
	Hash        string          `json:"request_hash,omitempty"`
	Messages    json.RawMessage `json:"messages,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
	Reply       *string         `json:"reply"`
	Choices     json.RawMessage `json:"choices,omitempty"`
	Finish      string          `json:"finish_reason,omitempty"`
	Prompt      *int64          `json:"prompt_tokens,omitempty"`
	Completion  *int64          `json:"completion_tokens,omitempty"`
	CachedTok   *int64          `json:"cached_prompt_tokens,omitempty"`
	Thinking    *int64          `json:"thinking_tokens,omitempty"`
	LatencyMS   any             `json:"latency_ms,omitempty"`
	FromJournal bool            `json:"from_journal"`
	Error       string          `json:"error,omitempty"`
	Version     string          `json:"model_version,omitempty"`
	Cost        any             `json:"cost_usd,omitempty"`
	Time        any             `json:"time,omitempty"`
	Final       any             `json:"final,omitempty"`
	Tries       any             `json:"attempts,omitempty"`
}

var textCols = map[string]bool{"item": true, "outputs": true, "judge": true, "trace": true}

// Case reads case i: its results row, its calls, and its trace.
func (r *Run) Case(i int) (*Case, error) {
	if i < 0 || i >= r.n {
		return nil, fmt.Errorf("no case %d: the run has %d", i, r.n)
	}
	if r.caseOf != nil {
		return r.caseOf(i)
	}
	cr := r.newCaseReader()
	defer cr.close()
	return cr.read(i)
}

// read reads case i through the reader's open files and row groups.
func (cr *caseReader) read(i int) (*Case, error) {
	r := cr.r
	p, err := cr.results()
	if err != nil {
		return nil, err
	}
	g := p.groupOf(i)
	b, err := cr.group(g)
	if err != nil {
		return nil, err
	}
	k := i - p.start[g]
	if id, _ := b.strRef("case_id", k); id != r.id[i] {
		return nil, fmt.Errorf("%s changed since the view opened it (case %d is now %q): reload the page", p.path, i, id)
	}
	c := &Case{Row: r.row(int32(i)), Fields: map[string]any{}, Labels: r.labelsOf(i), Trace: r.hasTrace}
	if c.Samples, err = r.sampleRows(p, cr.group, int32(i)); err != nil {
		c.Notes = append(c.Notes, "the other samples of this item could not be read: "+err.Error())
	}
	for _, col := range cr.cols {
		if textCols[col] {
			continue
		}
		c.Fields[col] = b.value(col, k)
	}
	raw := func(col string) json.RawMessage {
		s, ok := b.str(col, k)
		if !ok || !json.Valid([]byte(s)) {
			return nil
		}
		return json.RawMessage(s)
	}
	c.Item, c.Outputs, c.Judge = raw("item"), raw("outputs"), raw("judge")
	if e, ok := b.str("error", k); ok {
		c.Error = e
	}
	var trace []TraceStep
	if s, ok := b.str("trace", k); ok {
		if trace, err = readTrace(s); err != nil {
			c.Notes = append(c.Notes, "the trace column of this case does not parse: "+err.Error())
		}
	}
	groups, err := cr.calls(i)
	if err != nil {
		c.Notes = append(c.Notes, err.Error())
	}
	c.Steps, c.Calls = pair(trace, groups)
	if !r.hasTrace {
		c.Notes = append(c.Notes, "This run was written before results.parquet had a trace column: the page shows its calls but not the other stages. `promoral apply` on the same config re-scores it from the journal, without a model call, and writes the trace.")
	}
	return c, nil
}

// calls reads the calls.parquet rows of case i, grouped into calls.
func (cr *caseReader) calls(i int) ([]CallGroup, error) {
	r := cr.r
	if !r.hasCalls {
		return nil, nil
	}
	gs := r.idx.callGroups(i)
	if r.idx.callsErr != nil {
		return nil, r.idx.callsErr
	}
	if len(gs) == 0 {
		return nil, nil
	}
	var rows []Call
	for _, g := range gs {
		b, err := cr.callGroup(g)
		if err != nil {
			return nil, err
		}
		for k := 0; k < b.n; k++ {
			if id, _ := b.strRef("case_id", k); id != r.id[i] {
				continue
			}
			c := Call{Finish: str(b, "finish_reason", k), Hash: str(b, "request_hash", k), Error: str(b, "error", k),
				Version: str(b, "model_version", k), Stage: str(b, "stage", k), LatencyMS: b.value("latency_ms", k),
				Cost: b.value("cost_usd", k), Time: b.value("time", k), Final: b.value("final", k), Tries: b.value("attempts", k),
				FromJournal: b.tri("cached", k) == 1}
			c.Attempt, _ = b.int("attempt", k)
			if s, ok := b.str("response_text", k); ok {
				c.Reply = &s
			}
			for col, dst := range map[string]*json.RawMessage{"request_messages": &c.Messages, "request_params": &c.Params, "response_choices": &c.Choices} {
				if s, ok := b.str(col, k); ok && json.Valid([]byte(s)) {
					*dst = json.RawMessage(s)
				}
			}
			for col, dst := range map[string]**int64{"prompt_tokens": &c.Prompt, "completion_tokens": &c.Completion, "cached_prompt_tokens": &c.CachedTok, "thinking_tokens": &c.Thinking} {
				if v, ok := b.int(col, k); ok {
					*dst = &v
				}
			}
			rows = append(rows, c)
		}
	}
	// Attempts of one call are consecutive rows of one stage numbered 1,
	// 2, …; a reply from the journal (attempt of the original call, or 0
	// when another case's identical call was shared) is a call of its own.
	var out []CallGroup
	open := map[string]int{} // stage -> index in out of a call still failing
	for _, c := range rows {
		if j, ok := open[c.Stage]; ok && !c.FromJournal && c.Attempt > 1 {
			last := out[j].Attempts[len(out[j].Attempts)-1]
			if last.Error != "" && last.Attempt == c.Attempt-1 {
				out[j].Attempts = append(out[j].Attempts, c)
				if c.Error == "" {
					delete(open, c.Stage)
				}
				continue
			}
		}
		out = append(out, CallGroup{Stage: c.Stage, Attempts: []Call{c}})
		if c.Error != "" {
			open[c.Stage] = len(out) - 1
		} else {
			delete(open, c.Stage)
		}
	}
	return out, nil
}

func str(b *batch, col string, k int) string {
	s, _ := b.str(col, k)
	return s
}

// pair gives each trace step the call it made: the n-th visit of a prompt
// stage made the stage's n-th call. Calls no step claims are returned
// apart (a run without a trace has only those).
func pair(trace []TraceStep, groups []CallGroup) ([]Step, []CallGroup) {
	queue := map[string][]int{}
	for j, g := range groups {
		queue[g.Stage] = append(queue[g.Stage], j)
	}
	used := make([]bool, len(groups))
	steps := make([]Step, len(trace))
	for k, t := range trace {
		steps[k] = Step{TraceStep: t}
		if q := queue[t.Stage]; len(q) > 0 {
			steps[k].Calls = &groups[q[0]]
			used[q[0]] = true
			queue[t.Stage] = q[1:]
		}
	}
	var rest []CallGroup
	for j, g := range groups {
		if !used[j] {
			rest = append(rest, g)
		}
	}
	return steps, rest
}
