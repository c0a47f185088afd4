package stages

import (
	"fmt"
	"strings"
	"sync/atomic"
	"text/template"

	"github.com/expr-lang/expr/types"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

func init() {
	spec.Register(spec.Kind{
		Name: "prompt",
		Doc:  "Renders messages from templates, optionally continuing an earlier prompt stage's conversation, and asks the model. Publishes text, texts (all samples), finish_reason and truncated.",
		New:  func() spec.Config { return &PromptConfig{} },
	})
}

// PromptConfig is the YAML of a prompt stage.
type PromptConfig struct {
	spec.StageBase `yaml:",inline"`
	Continue       spec.StringList `yaml:"continue,omitempty" doc:"Prompt stage(s) whose conversation (messages and reply) comes before this stage's messages; with a list, the one that ran most recently (e.g. [revise, answer] in a loop)."`
	Messages       []Message       `yaml:"messages" required:"true" doc:"Messages to send, in order; system messages first."`
	spec.GenParams `yaml:",inline"`
}

// Message is one templated turn.
type Message struct {
	Role     string `yaml:"role" required:"true" enum:"system,user,assistant" doc:"system, user or assistant."`
	Text     string `yaml:"text,omitempty" doc:"Inline Go template (text/template) over .item, .task, .stages, .params, .model."`
	Template string `yaml:"template,omitempty" doc:"Template file, relative to the prompts folder."`
}

type prompt struct {
	name  string
	cont  []string
	roles []string
	tmpls []*template.Template
	// sizes are the last rendered length of each template: the next
	// message is written into a buffer of about that size at once, not
	// grown from nothing by doubling (the writes of a template are many
	// and small).
	sizes    []atomic.Int64
	params   spec.GenParams
	sampleOK bool
}

// Sample gives example outputs for dry runs.
func (c *PromptConfig) Sample() map[string]any {
	return map[string]any{"text": "(reply of " + c.Name + ")", "texts": []any{"(reply of " + c.Name + ")"}, "finish_reason": llm.FinishStop, "truncated": false, "thinking": ""}
}

// FieldTypes are the types of what the stage publishes, for the checker.
func (c *PromptConfig) FieldTypes() map[string]types.Type {
	return map[string]types.Type{"text": types.String, "texts": types.Array(types.Any), "finish_reason": types.String, "truncated": types.Bool, "thinking": types.String}
}

// TemplateFiles lists the template files the stage reads.
func (c *PromptConfig) TemplateFiles() []string {
	var out []string
	for _, m := range c.Messages {
		if m.Template != "" {
			out = append(out, m.Template)
		}
	}
	return out
}

// Build compiles the templates and checks roles and the continued stage.
func (c *PromptConfig) Build(b *spec.Build) spec.Stage {
	p := &prompt{name: c.Name, cont: c.Continue, params: c.GenParams}
	for _, name := range c.Continue {
		found := false
		for _, sn := range b.Strategy.Stages {
			if sc := sn.Config; sc != nil && sc.Base().Name == name {
				if _, ok := sc.(*PromptConfig); !ok {
					b.Errf("continue", "continue names prompt stages", "stage %q is not a prompt stage", name)
				}
				found = true
			}
		}
		if !found || name == c.Name && len(c.Continue) == 1 {
			b.Errf("continue", yamlstrict.NameHint(name, b.StageNames(), "name another prompt stage of this strategy"), "no stage %q to continue", name)
		}
	}
	if len(c.Messages) == 0 {
		b.Errf("messages", "add at least one message", "the prompt has no messages")
	}
	seenNonSystem := len(c.Continue) > 0
	for i, m := range c.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case llm.RoleSystem:
			if seenNonSystem {
				b.Errf(field+".role", "put system messages first, so the static part of the prompt leads and providers can cache it", "a system message after the conversation started")
			}
		default: // user or assistant (decoding holds role to its enum)
			seenNonSystem = true
		}
		if (m.Text == "") == (m.Template == "") {
			b.Errf(field, "give exactly one of text and template", "a message needs text or template")
			continue
		}
		t := b.Template(field, m.Text, m.Template)
		p.roles = append(p.roles, m.Role)
		p.tmpls = append(p.tmpls, t)
	}
	p.sizes = make([]atomic.Int64, len(p.tmpls))
	if c.N < 0 || c.MaxTokens < 0 {
		b.Errf("", "use positive numbers", "n and max_tokens must not be negative")
	}
	if c.Thinking != nil {
		switch c.Thinking.Effort {
		case "", "low", "medium", "high":
		default:
			b.Errf("thinking.effort", "use low, medium or high", "unknown effort %q", c.Thinking.Effort)
		}
	}
	return p
}

func (p *prompt) render(env map[string]any) ([]llm.Message, error) {
	msgs := make([]llm.Message, len(p.tmpls))
	var sb strings.Builder
	for i, t := range p.tmpls {
		sb.Reset()
		sb.Grow(int(p.sizes[i].Load()) + 64)
		if err := spec.ExecTemplate(t, &sb, env); err != nil {
			return nil, err
		}
		p.sizes[i].Store(int64(sb.Len()))
		msgs[i] = llm.Message{Role: p.roles[i], Content: sb.String()}
	}
	return msgs, nil
}

// Check renders the templates against a sample environment.
func (p *prompt) Check(_ *spec.Task, env map[string]any) error {
	_, err := p.render(env)
	return err
}

// Run renders the messages, asks the model and publishes its reply.
func (p *prompt) Run(x spec.Exec) (string, error) {
	var msgs []llm.Message
	if len(p.cont) > 0 {
		prev, ok := x.Conversation(p.cont...)
		if !ok {
			return "", x.Errorf(p.name, "continues %v, none of which has run in this case", p.cont)
		}
		msgs = append(msgs, prev...)
	}
	own, err := p.render(x.Env())
	if err != nil {
		return "", x.Errorf(p.name, "%v", err)
	}
	msgs = append(msgs, own...)
	req := &llm.Request{Model: x.Model().Spec.ID(), Messages: msgs}
	x.Model().Spec.Params.Over(p.params).Apply(req)
	resp, err := x.Call(p.name, req)
	if err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", x.Errorf(p.name, "the model returned no choices")
	}
	texts := make([]any, len(resp.Choices))
	truncated := false
	for i, c := range resp.Choices {
		texts[i] = c.Text
		if c.FinishReason == llm.FinishLength {
			truncated = true
		}
	}
	first := resp.Choices[0]
	x.Set(p.name, map[string]any{
		"text": first.Text, "texts": texts, "finish_reason": first.FinishReason,
		"truncated": truncated, "thinking": first.Thinking,
	})
	conv := make([]llm.Message, len(msgs), len(msgs)+1)
	copy(conv, msgs)
	x.SetConversation(p.name, append(conv, llm.Message{Role: llm.RoleAssistant, Content: first.Text}))
	return "", nil
}

// PlanCall renders the stage's own messages for plan, without calling.
func (p *prompt) PlanCall(env map[string]any) ([]llm.Message, spec.GenParams, []string, error) {
	msgs, err := p.render(env)
	return msgs, p.params, p.cont, err
}
