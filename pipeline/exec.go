package pipeline

import (
	"context"
	"fmt"

	"github.com/promoral/promoral/pipeline/llm"
)

// Exec is one case in flight: the state a stage reads and writes while the
// engine walks the strategy graph for one model x strategy x task x item.
//
// Env is what templates (as .item, .task, .stages, ...) and expressions (as
// item, task, stages, ...) see:
//
//	item      the item's fields
//	task      the task's name, labels and rendered wording blocks
//	stages    outputs of the stages run so far, by stage name (latest visit)
//	visits    how often each stage has run
//	params    the strategy's parameters
//	model     name, id, provider and vars of the model
//	strategy  name of the strategy
type Exec struct {
	Ctx      context.Context
	Case     *Case
	Model    *Model
	Task     *Task
	Item     *Item
	Strategy *Strategy
	Env      map[string]any

	stages map[string]any
	visits map[string]int
	convs  map[string]conversation
	seq    int
	// stagePrefix marks the calls of a judge graph in calls.parquet.
	stagePrefix string
	// repeat is the sample index every request of the graph carries into
	// its cache key (llm.Request.Repeat): the case's for its strategy, 0
	// for its judge (the same answer judged twice is one call).
	repeat int
	// sweep holds the swept settings that win over the request's own
	// (sweep.go): the case's for its strategy, nil for its judge.
	sweep  *Sweep
	caller func(x *Exec, stage string, req *llm.Request) (*llm.Response, error)
	acct   Account
	// fields are the item's fields, read once for the case (Item.Values).
	fields map[string]any
	// trace and notes feed results.parquet's trace column (trace.go).
	trace []byte
	notes []traceNote
}

// itemFields are the case's item fields, read once.
func (x *Exec) itemFields() map[string]any {
	if x.fields == nil {
		x.fields = x.Item.Values()
	}
	return x.fields
}

// Account is what one case spent.
type Account struct {
	Calls            int
	CachedCalls      int
	PromptTokens     int
	CompletionTokens int
	ThinkingTokens   int
	CostUSD          float64
	Truncated        bool // some reply was cut off by max_tokens
	Blocked          bool // some reply was blocked by the provider's safety filter
}

// Call sends a request for the named stage through the engine's transport
// (journal first, then the provider) and accounts for it.
func (x *Exec) Call(stage string, req *llm.Request) (*llm.Response, error) {
	req.Repeat = x.repeat
	x.sweep.apply(req)
	resp, err := x.caller(x, x.stagePrefix+stage, req)
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

func (x *Exec) account(resp *llm.Response, cached bool) {
	x.acct.Calls++
	if cached {
		x.acct.CachedCalls++
	}
	x.acct.PromptTokens += resp.Usage.PromptTokens
	x.acct.CompletionTokens += resp.Usage.CompletionTokens
	x.acct.ThinkingTokens += resp.Usage.ThinkingTokens
	x.acct.CostUSD += x.Model.Spec.Price.CostOf(resp)
}

// Set publishes a stage's output fields as stages.<name>.
func (x *Exec) Set(stage string, out map[string]any) { x.stages[stage] = out }

// Get returns a stage's latest output fields (empty if it has not run).
func (x *Exec) Get(stage string) map[string]any {
	m, _ := x.stages[stage].(map[string]any)
	return m
}

type conversation struct {
	msgs []llm.Message
	seq  int
}

// Conversation returns the messages of the most recently run of the named
// prompt stages followed by its reply, so a later stage can continue it
// (in a loop: the latest revision, or the first answer before any).
func (x *Exec) Conversation(stages ...string) ([]llm.Message, bool) {
	best, found := conversation{}, false
	for _, s := range stages {
		if c, ok := x.convs[s]; ok && (!found || c.seq > best.seq) {
			best, found = c, true
		}
	}
	return best.msgs, found
}

// SetConversation records a prompt stage's full conversation.
func (x *Exec) SetConversation(stage string, msgs []llm.Message) {
	x.seq++
	x.convs[stage] = conversation{msgs, x.seq}
}

// Visits is how often a stage has run in this case.
func (x *Exec) Visits(stage string) int { return x.visits[stage] }

// Errorf makes a case error that names the stage and the item. The first
// error among args stays reachable (errors.Is, errors.As), so the case's
// error class survives the wording.
func (x *Exec) Errorf(stage, format string, args ...any) error {
	e := &StageError{Stage: stage, Item: x.Item.ID, Msg: fmt.Errorf(format, args...).Error()}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.Err = err
			break
		}
	}
	return e
}

// StageError is a case's failure in one stage.
type StageError struct {
	Stage, Item, Msg string
	Err              error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("stage %q, item %s: %s", e.Stage, e.Item, e.Msg)
}

func (e *StageError) Unwrap() error { return e.Err }
