package spec

import (
	"fmt"

	"github.com/promoral/promoral/pipeline/llm"
)

// Exec is one case in flight, as a stage sees it while the engine walks
// the strategy graph for one model x strategy x task x item. The engine
// holds the case's running state (outputs, visits, calls made and their
// cost, the trace) and keeps it to itself; a stage reads and writes the
// case only through these methods.
type Exec interface {
	// Env is what templates (as .item, .task, .stages, ...) and
	// expressions (as item, task, stages, ...) see:
	//
	//	item      the item's fields
	//	task      the task's name, labels and rendered wording blocks
	//	stages    outputs of the stages run so far, by stage name (latest visit)
	//	visits    how often each stage has run
	//	params    the strategy's parameters
	//	model     name, id, provider and vars of the model
	//	strategy  name of the strategy
	Env() map[string]any
	// Model is the model the graph runs on (the judge's for a judge graph).
	Model() *Model
	// Task is the case's task.
	Task() *Task

	// Call sends a request for the named stage through the engine's
	// transport (journal first, then the provider) and accounts for it.
	Call(stage string, req *llm.Request) (*llm.Response, error)
	// Set publishes a stage's output fields as stages.<name>.
	Set(stage string, out map[string]any)
	// Get returns a stage's latest output fields (empty if it has not run).
	Get(stage string) map[string]any
	// Visits is how often a stage has run in this case.
	Visits(stage string) int
	// Conversation returns the messages of the most recently run of the
	// named prompt stages followed by its reply, so a later stage can
	// continue it (in a loop: the latest revision, or the first answer
	// before any).
	Conversation(stages ...string) ([]llm.Message, bool)
	// SetConversation records a prompt stage's full conversation.
	SetConversation(stage string, msgs []llm.Message)
	// Note attaches detail to the current stage's entry in the case's
	// trace (not its outputs: templates and expressions never see it).
	// Stages use it to explain themselves, e.g. why an extraction found
	// no label.
	Note(key string, v any)
	// Errorf makes a case error that names the stage and the item
	// (StageErrorf).
	Errorf(stage, format string, args ...any) error
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

// StageErrorf makes a case's error in a stage on an item. The first error
// among args stays reachable (errors.Is, errors.As), so the case's error
// class survives the wording.
func StageErrorf(stage, item, format string, args ...any) error {
	e := &StageError{Stage: stage, Item: item, Msg: fmt.Errorf(format, args...).Error()}
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
