package stages_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
)

// caseStub is a case in flight without the engine: the stages' outputs and
// conversations in maps, each call answered with the next of replies and
// kept in sent.
type caseStub struct {
	env     map[string]any
	model   *spec.Model
	task    *spec.Task
	item    string
	stages  map[string]any
	visits  map[string]int
	convs   map[string][]llm.Message
	last    []string
	notes   map[string]any
	replies []string
	sent    []*llm.Request
}

func (c *caseStub) Env() map[string]any                  { return c.env }
func (c *caseStub) Model() *spec.Model                   { return c.model }
func (c *caseStub) Task() *spec.Task                     { return c.task }
func (c *caseStub) Set(stage string, out map[string]any) { c.stages[stage] = out }
func (c *caseStub) Visits(stage string) int              { return c.visits[stage] }
func (c *caseStub) Note(key string, v any)               { c.notes[key] = v }

func (c *caseStub) Get(stage string) map[string]any {
	m, _ := c.stages[stage].(map[string]any)
	return m
}

func (c *caseStub) Call(stage string, req *llm.Request) (*llm.Response, error) {
	c.sent = append(c.sent, req)
	text := c.replies[0]
	c.replies = c.replies[1:]
	return &llm.Response{Choices: []llm.Choice{{Text: text, FinishReason: "stop"}}}, nil
}

func (c *caseStub) Conversation(stages ...string) ([]llm.Message, bool) {
	for i := len(c.last) - 1; i >= 0; i-- {
		for _, s := range stages {
			if c.last[i] == s {
				return c.convs[s], true
			}
		}
	}
	return nil, false
}

func (c *caseStub) SetConversation(stage string, msgs []llm.Message) {
	c.convs[stage] = msgs
	c.last = append(c.last, stage)
}

func (c *caseStub) Errorf(stage, format string, args ...any) error {
	return spec.StageErrorf(stage, c.item, format, args...)
}

// A stage kind runs on any case in flight (spec.Exec), the engine's or
// not: prompt renders from Env, continues the conversation it names and
// publishes the reply; extract reads it and notes its source; a stage
// read before it ran is the case's error, naming the stage and the item.
func TestStagesRunOnACaseWithoutTheEngine(t *testing.T) {
	files := map[string]string{
		"data/items.jsonl": `{"id":"a","text":"I stole a bike.","gold":"1"}` + "\n",
		"configs/tasks/t.yaml": `name: t
dataset: {path: ../../data/items.jsonl, id: id}
gold: gold
answer: {labels: [{value: bad, gold: ["1"]}, {value: fine, gold: ["0"]}]}
extract: {label: [{kind: prefix, prefix: Answer}]}
`,
		"configs/strategies/s.yaml": `name: s
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "{{.item.text}}"}]}
  - {name: revise, kind: prompt, continue: [ask], messages: [{role: user, text: "Sure?"}]}
  - {name: parse, kind: extract, from: revise}
outputs: {label: stages.parse.label}
`,
		"configs/run.yaml": `name: r
models: [{name: m, provider: scripted, script: {replies: [{text: "Answer: bad"}]}}]
tasks: [t]
strategies: [s]
`,
	}
	dir := studytest.WriteTree(t, files)
	st, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, task := st.Strategies[0], st.Tasks[0]
	it := &task.Items[0]
	x := &caseStub{model: st.Models[0], task: task, item: it.ID, stages: map[string]any{}, visits: map[string]int{},
		convs: map[string][]llm.Message{}, notes: map[string]any{}, replies: []string{"It was wrong.", "Answer: bad"}}
	x.env = map[string]any{"item": it.Values(), "stages": x.stages}
	run := func(name string) error {
		x.visits[name]++
		_, err := s.Nodes[s.Index[name]].Stage.Run(x)
		return err
	}

	err = run("parse")
	var se *spec.StageError
	if !errors.As(err, &se) || se.Stage != "parse" || se.Item != "a" {
		t.Fatalf("extract before its stage ran: %v, want a StageError of stage parse, item a", err)
	}
	x.visits["parse"] = 0

	for _, name := range []string{"ask", "revise", "parse"} {
		if err := run(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(x.sent) != 2 {
		t.Fatalf("%d calls, want 2", len(x.sent))
	}
	want := []llm.Message{
		{Role: llm.RoleUser, Content: "I stole a bike."},
		{Role: llm.RoleAssistant, Content: "It was wrong."},
		{Role: llm.RoleUser, Content: "Sure?"},
	}
	if got := x.sent[1].Messages; !reflect.DeepEqual(got, want) {
		t.Errorf("revise sent %+v, want %+v", got, want)
	}
	if x.sent[0].Model != st.Models[0].Spec.ID() {
		t.Errorf("ask asked model %q, want %q", x.sent[0].Model, st.Models[0].Spec.ID())
	}
	if got := x.Get("ask")["text"]; got != "It was wrong." {
		t.Errorf("stages.ask.text = %v", got)
	}
	if got := x.Get("parse")["label"]; got != "bad" {
		t.Errorf("stages.parse.label = %v, want bad", got)
	}
	if got := x.notes["source"]; got != "revise" {
		t.Errorf("note source = %v, want revise", got)
	}
}
