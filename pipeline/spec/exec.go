package spec

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

	// Walk is the engine's side of the case; stages read and write the
	// case through Exec's methods instead.
	Walk WalkState

	convs map[string]conversation
	seq   int
}

// WalkState is what the engine keeps for a case in flight: the outputs and
// visit counts of the stages run so far, how calls are made and accounted,
// and the trace.
type WalkState struct {
	// Stages are the outputs of the stages run so far, by stage name
	// (Env's stages).
	Stages map[string]any
	// Visits counts how often each stage has run.
	Visits map[string]int
	// StagePrefix marks the calls of a judge graph in calls.parquet.
	StagePrefix string
	// Repeat is the sample index every request of the graph carries into
	// its cache key (llm.Request.Repeat): the case's for its strategy, 0
	// for its judge (the same answer judged twice is one call).
	Repeat int
	// Sweep holds the swept settings that win over the request's own
	// (sweep.go): the case's for its strategy, nil for its judge.
	Sweep *Sweep
	// Caller makes a stage's model call: the engine's transport (journal
	// first, then the provider), or a reply source that sends nothing.
	Caller func(x *Exec, stage string, req *llm.Request) (*llm.Response, error)
	// Acct is what the case has spent so far.
	Acct Account
	// Fields are the item's fields, read once for the case (Item.Values).
	Fields map[string]any
	// Trace and Notes feed results.parquet's trace column: the stages run
	// so far as JSON, and the notes the current stage left (Note).
	Trace []byte
	Notes []TraceNote
}

// NewExec is a case ready to walk strategy s for model m, its calls made
// by caller.
func NewExec(ctx context.Context, c *Case, m *Model, s *Strategy, caller func(x *Exec, stage string, req *llm.Request) (*llm.Response, error)) *Exec {
	return &Exec{
		Ctx: ctx, Case: c, Model: m, Task: c.Task, Item: c.Item, Strategy: s,
		Walk: WalkState{
			Stages: make(map[string]any, len(s.Nodes)),
			Visits: make(map[string]int, len(s.Nodes)),
			Caller: caller,
		},
		convs: map[string]conversation{},
	}
}

// TraceNote is a note a stage left for its trace entry (Exec.Note).
type TraceNote struct {
	Key string
	V   any
}

// Note attaches detail to the current stage's entry in the case's trace
// (not its outputs: templates and expressions never see it). Stages use it
// to explain themselves, e.g. why an extraction found no label.
func (x *Exec) Note(key string, v any) { x.Walk.Notes = append(x.Walk.Notes, TraceNote{key, v}) }

// ItemFields are the case's item fields, read once.
func (x *Exec) ItemFields() map[string]any {
	if x.Walk.Fields == nil {
		x.Walk.Fields = x.Item.Values()
	}
	return x.Walk.Fields
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
	req.Repeat = x.Walk.Repeat
	if x.Model != nil && x.Model.Spec != nil && x.Model.Spec.Provider == "simulated" {
		req.Case = x.caseInfo()
	}
	x.Walk.Sweep.Apply(req)
	resp, err := x.Walk.Caller(x, x.Walk.StagePrefix+stage, req)
	if err != nil {
		return nil, err
	}
	for _, c := range resp.Choices {
		switch c.FinishReason {
		case llm.FinishLength:
			x.Walk.Acct.Truncated = true
		case llm.FinishBlocked:
			x.Walk.Acct.Blocked = true
		}
	}
	return resp, nil
}

// Charge accounts for a reply the case received (cached: from the journal
// or the shared cache).
func (x *Exec) Charge(resp *llm.Response, cached bool) {
	x.Walk.Acct.Calls++
	if cached {
		x.Walk.Acct.CachedCalls++
	}
	x.Walk.Acct.PromptTokens += resp.Usage.PromptTokens
	x.Walk.Acct.CompletionTokens += resp.Usage.CompletionTokens
	x.Walk.Acct.ThinkingTokens += resp.Usage.ThinkingTokens
	x.Walk.Acct.CostUSD += x.Model.Spec.Price.CostOf(resp)
}

// Set publishes a stage's output fields as stages.<name>.
func (x *Exec) Set(stage string, out map[string]any) { x.Walk.Stages[stage] = out }

// Get returns a stage's latest output fields (empty if it has not run).
func (x *Exec) Get(stage string) map[string]any {
	m, _ := x.Walk.Stages[stage].(map[string]any)
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
func (x *Exec) Visits(stage string) int { return x.Walk.Visits[stage] }

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

// Result is one case's outcome.
type Result struct {
	Done    bool
	Outputs map[string]any
	// Judge holds the judge graph's outputs when the task has a judge; the
	// label and confidence then come from it.
	Judge      map[string]any
	JudgeAcct  Account
	Label      string
	Confidence *float64
	Parsed     bool
	Correct    *bool
	Err        string
	// ErrClass is Err's class (ErrorClass): offline_miss, transient,
	// rejected, empty_reply, auth, template, … ; "" when Err is.
	ErrClass string
	// KeptFrom names the earlier apply (its output generation) whose row
	// this is: the case errored in this apply, and that row came from the
	// same config and item. "" for a row computed in this apply.
	KeptFrom string
	Acct     Account
	Steps    int
	// Trace is the JSON of the stages run, strategy then judge.
	Trace string
	// KeptErr and KeptClass are this apply's error of a case that kept its
	// earlier row, for the summary.
	KeptErr, KeptClass string
	// ItemFields are the case's item fields as the walk read them, for its row
	// (then dropped: Item.Values reads a large dataset's from disk).
	ItemFields map[string]any
}
