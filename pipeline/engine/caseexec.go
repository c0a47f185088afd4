package engine

import (
	"context"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
)

// caseExec is one case in flight: the engine's running state of a case
// while it walks the strategy graph (or the task's judge graph) for one
// model x strategy x task x item. Stages see it as a spec.Exec; the rest
// of it is the engine's own.
type caseExec struct {
	ctx      context.Context
	c        *spec.Case
	model    *spec.Model
	strategy *spec.Strategy
	env      map[string]any

	// stages are the outputs of the stages run so far, by stage name
	// (env's stages); visits counts how often each stage has run.
	stages map[string]any
	visits map[string]int
	// prefix marks the calls of a judge graph in calls.parquet.
	prefix string
	// repeat is the sample index every request of the graph carries into
	// its cache key (llm.Request.Repeat): the case's for its strategy, 0
	// for its judge (the same answer judged twice is one call).
	repeat int
	// sweep holds the swept settings that win over the request's own
	// (spec.Sweep): the case's for its strategy, nil for its judge.
	sweep *spec.Sweep
	// caller makes a stage's model call: the engine's transport (journal
	// first, then the provider), or a reply source that sends nothing.
	caller func(x *caseExec, stage string, req *llm.Request) (*llm.Response, error)
	// acct is what the case has spent so far.
	acct spec.Account
	// fields are the item's fields, read once for the case (Item.Values).
	fields map[string]any
	// trace and notes feed results.parquet's trace column: the stages run
	// so far as JSON, and the notes the current stage left (Note).
	trace []byte
	notes []traceNote

	convs map[string]conversation
	seq   int
}

var _ spec.Exec = (*caseExec)(nil)

// traceNote is a note a stage left for its trace entry (Note).
type traceNote struct {
	key string
	v   any
}

type conversation struct {
	msgs []llm.Message
	seq  int
}

// newCaseExec is case c ready to walk strategy s for model m, its calls
// made by caller.
func newCaseExec(ctx context.Context, c *spec.Case, m *spec.Model, s *spec.Strategy, caller func(x *caseExec, stage string, req *llm.Request) (*llm.Response, error)) *caseExec {
	return &caseExec{
		ctx: ctx, c: c, model: m, strategy: s,
		stages: make(map[string]any, len(s.Nodes)),
		visits: make(map[string]int, len(s.Nodes)),
		caller: caller,
		convs:  map[string]conversation{},
	}
}

func (x *caseExec) Env() map[string]any { return x.env }
func (x *caseExec) Model() *spec.Model  { return x.model }
func (x *caseExec) Task() *spec.Task    { return x.c.Task }

// Note attaches detail to the current stage's entry in the case's trace.
func (x *caseExec) Note(key string, v any) { x.notes = append(x.notes, traceNote{key, v}) }

// itemFields are the case's item fields, read once.
func (x *caseExec) itemFields() map[string]any {
	if x.fields == nil {
		x.fields = x.c.Item.Values()
	}
	return x.fields
}

// Call sends a request for the named stage through the case's caller and
// notes a reply cut short or blocked.
func (x *caseExec) Call(stage string, req *llm.Request) (*llm.Response, error) {
	req.Repeat = x.repeat
	if x.model != nil && x.model.Spec != nil && x.model.Spec.Provider == "simulated" {
		req.Case = x.caseInfo()
	}
	x.sweep.Apply(req)
	resp, err := x.caller(x, x.prefix+stage, req)
	if err != nil {
		return nil, err
	}
	for _, c := range resp.Choices {
		switch c.FinishReason {
		case llm.FinishLength:
			x.acct.Truncated = true
		case llm.FinishBlocked:
			x.acct.Blocked = true
		}
	}
	return resp, nil
}

// caseInfo is what a simulated model is told of the case (llm.CaseInfo).
func (x *caseExec) caseInfo() *llm.CaseInfo {
	t, it := x.c.Task, x.c.Item
	judged := x.prefix == "" && (t.Judge != nil || (t.Spec != nil && t.Spec.Type == "judge"))
	return &llm.CaseInfo{Model: x.model.Name, Strategy: x.strategy.Name, Task: t.Name, Item: it.ID, Gold: it.Gold, Labels: t.Labels, Judged: judged}
}

// charge accounts for a reply the case received (cached: from the journal
// or the shared cache).
func (x *caseExec) charge(resp *llm.Response, cached bool) {
	x.acct.Calls++
	if cached {
		x.acct.CachedCalls++
	}
	x.acct.PromptTokens += resp.Usage.PromptTokens
	x.acct.CompletionTokens += resp.Usage.CompletionTokens
	x.acct.ThinkingTokens += resp.Usage.ThinkingTokens
	x.acct.CostUSD += x.model.Spec.Price.CostOf(resp)
}

func (x *caseExec) Set(stage string, out map[string]any) { x.stages[stage] = out }

func (x *caseExec) Get(stage string) map[string]any {
	m, _ := x.stages[stage].(map[string]any)
	return m
}

func (x *caseExec) Conversation(stages ...string) ([]llm.Message, bool) {
	best, found := conversation{}, false
	for _, s := range stages {
		if c, ok := x.convs[s]; ok && (!found || c.seq > best.seq) {
			best, found = c, true
		}
	}
	return best.msgs, found
}

func (x *caseExec) SetConversation(stage string, msgs []llm.Message) {
	x.seq++
	x.convs[stage] = conversation{msgs, x.seq}
}

func (x *caseExec) Visits(stage string) int { return x.visits[stage] }

func (x *caseExec) Errorf(stage, format string, args ...any) error {
	return spec.StageErrorf(stage, x.c.Item.ID, format, args...)
}
