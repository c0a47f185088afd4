package scripted

import (
	"context"
	"errors"
	"testing"

	"github.com/promoral/promoral/pipeline/llm"
)

func req(system, user string, n int) *llm.Request {
	return &llm.Request{Model: "s", N: n, Messages: []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}}
}

func TestScriptedRepliesByRuleAndTemplate(t *testing.T) {
	p, err := Compile(&Script{Replies: []Reply{
		{Match: "(?i)critique", Text: "no problems"},
		{Match: "judge", In: "system", Text: "Decision: REFUSAL"},
		{Match: "boom", Status: 503},
		{Match: "denied", Status: 401},
		{Text: `{{find "Scenario: (.*)" .last}}|{{pick (hash "x") "a" "b"}}|{{.sample}}/{{.n}}`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, _ := p.Complete(ctx, req("", "Please CRITIQUE it", 1)); r.Text() != "no problems" {
		t.Errorf("first rule: %q", r.Text())
	}
	if r, _ := p.Complete(ctx, req("you judge", "hello", 1)); r.Text() != "Decision: REFUSAL" {
		t.Errorf("system rule: %q", r.Text())
	}
	r, err := p.Complete(ctx, req("", "Scenario: I fed the cat", 3))
	if err != nil || len(r.Choices) != 3 {
		t.Fatalf("samples: %v %v", r, err)
	}
	// hash("x") is fixed, so pick is deterministic; samples are numbered.
	want0 := "I fed the cat|" + map[bool]string{true: "a", false: "b"}[hashOf("x")%2 == 0] + "|0/3"
	if r.Choices[0].Text != want0 || r.Choices[2].Text[len(r.Choices[2].Text)-3:] != "2/3" {
		t.Errorf("templated samples: %q, %q (want %q)", r.Choices[0].Text, r.Choices[2].Text, want0)
	}
	if r.Usage.PromptTokens == 0 || r.Usage.CompletionTokens == 0 || r.Choices[0].FinishReason != llm.FinishStop {
		t.Errorf("usage/finish: %+v", r)
	}
	var le *llm.Error
	if _, err := p.Complete(ctx, req("", "boom", 1)); !errors.As(err, &le) || le.Kind != llm.Transient || le.Status != 503 {
		t.Errorf("503 should be transient: %v", err)
	}
	if _, err := p.Complete(ctx, req("", "denied", 1)); !llm.IsPermanent(err) {
		t.Errorf("401 should be permanent: %v", err)
	}
	if p.Calls() != 5 {
		t.Errorf("calls = %d", p.Calls())
	}
}

func hashOf(s string) int { return funcs["hash"].(func(string) int)(s) }

func TestScriptErrors(t *testing.T) {
	for _, s := range []Script{
		{},
		{Replies: []Reply{{Match: "(", Text: "x"}}},
		{Replies: []Reply{{In: "everywhere", Text: "x"}}},
		{Replies: []Reply{{Finish: "tired", Text: "x"}}},
		{Replies: []Reply{{Text: "{{.nope"}}},
	} {
		if _, err := Compile(&s); err == nil {
			t.Errorf("script %+v compiled", s)
		}
	}
	p, _ := Compile(&Script{Replies: []Reply{{Match: "only this", Text: "x"}}})
	if _, err := p.Complete(context.Background(), req("", "something else", 1)); !llm.IsPermanent(err) {
		t.Errorf("no matching rule must be a clear permanent error: %v", err)
	}
}
