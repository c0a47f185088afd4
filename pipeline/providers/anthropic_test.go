package providers

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

const anthropicFull = `{
 "id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",
 "content":[
  {"type":"thinking","thinking":"let me think","signature":"sig"},
  {"type":"redacted_thinking","data":"opaque"},
  {"type":"text","text":"part one, "},
  {"type":"text","text":"part two"}
 ],
 "stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":10,"output_tokens":30,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}
}`

func newAnthropicTest(t *testing.T, body string) (*wire, llm.Provider) {
	t.Helper()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, body) })
	p, err := New(Config{Provider: Anthropic, BaseURL: wr.srv.URL, APIKey: testKey, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return wr, p
}

func TestAnthropicRequestAndResponse(t *testing.T) {
	wr, p := newAnthropicTest(t, anthropicFull)
	req := &llm.Request{
		Model: "claude-sonnet-4-5",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "rule one"},
			{Role: llm.RoleUser, Content: "q1"},
			{Role: llm.RoleUser, Content: "q1 continued"},
			{Role: llm.RoleSystem, Content: "rule two"},
			{Role: llm.RoleAssistant, Content: "a1"},
			{Role: llm.RoleUser, Content: "q2"},
		},
		Temperature: ptr(0.3), TopP: ptr(0.8), MaxTokens: 200,
		Stop: []string{"STOP"}, Seed: ptr(int64(7)), Logprobs: true,
		Extra: map[string]any{"top_k": 5},
	}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := wr.last(t)
	if got.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	body := got.Body
	if body["model"] != "claude-sonnet-4-5" || num(t, body, "temperature") != 0.3 || num(t, body, "top_p") != 0.8 ||
		num(t, body, "max_tokens") != 200 || num(t, body, "top_k") != 5 {
		t.Fatalf("body = %v", body)
	}
	if !reflect.DeepEqual(body["stop_sequences"], []any{"STOP"}) {
		t.Errorf("stop_sequences = %#v", body["stop_sequences"])
	}
	wantSystem := []any{map[string]any{"type": "text", "text": "rule one\n\nrule two"}}
	if !reflect.DeepEqual(body["system"], wantSystem) {
		t.Errorf("system = %#v", body["system"])
	}
	text := func(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }
	wantMsgs := []any{
		map[string]any{"role": "user", "content": text("q1\n\nq1 continued")},
		map[string]any{"role": "assistant", "content": text("a1")},
		map[string]any{"role": "user", "content": text("q2")},
	}
	if !reflect.DeepEqual(body["messages"], wantMsgs) {
		t.Errorf("messages = %#v", body["messages"])
	}
	for _, f := range []string{"thinking", "seed", "logprobs", "n"} {
		absent(t, body, f)
	}

	want := llm.Usage{PromptTokens: 17, CompletionTokens: 30, CachedPromptTokens: 5}
	if resp.Usage != want || resp.ModelVersion != "claude-sonnet-4-5-20250929" {
		t.Fatalf("usage = %+v, model = %q", resp.Usage, resp.ModelVersion)
	}
	c := resp.Choices[0]
	if len(resp.Choices) != 1 || c.Text != "part one, part two" || c.Thinking != "let me think" || c.FinishReason != llm.FinishStop {
		t.Fatalf("choices = %+v", resp.Choices)
	}
}

func TestAnthropicThinking(t *testing.T) {
	cases := []struct {
		name       string
		thinking   llm.Thinking
		maxTokens  int
		topP       *float64
		wantBudget float64
		wantMax    float64
		wantTopP   any
	}{
		{"default budget raises max", llm.Thinking{Enabled: true}, 1000, nil, 2048, 3048, nil},
		{"small budget clamped", llm.Thinking{Enabled: true, Budget: 500}, 100, ptr(0.5), 1024, 1124, nil},
		{"room already", llm.Thinking{Enabled: true, Budget: 4000}, 16000, ptr(0.97), 4000, 16000, 0.97},
		{"no max tokens", llm.Thinking{Enabled: true, Budget: 8000}, 0, nil, 8000, DefaultAnthropicMaxTokens + 8000, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wr, p := newAnthropicTest(t, anthropicFull)
			req := simpleReq("claude-sonnet-4-5")
			req.Thinking, req.MaxTokens, req.Temperature, req.TopP = tc.thinking, tc.maxTokens, ptr(0.7), tc.topP
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := wr.last(t).Body
			if dig(t, body, "thinking", "type") != "enabled" || num(t, body, "thinking", "budget_tokens") != tc.wantBudget {
				t.Errorf("thinking = %#v", body["thinking"])
			}
			if num(t, body, "max_tokens") != tc.wantMax {
				t.Errorf("max_tokens = %v, want %v", body["max_tokens"], tc.wantMax)
			}
			// The API rejects temperature with thinking on.
			absent(t, body, "temperature")
			if body["top_p"] != tc.wantTopP {
				t.Errorf("top_p = %#v, want %#v", body["top_p"], tc.wantTopP)
			}
		})
	}
	t.Run("effort", func(t *testing.T) {
		wr, p := newAnthropicTest(t, anthropicFull)
		req := simpleReq("claude-opus-4-5")
		req.Thinking = llm.Thinking{Effort: "low"}
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		body := wr.last(t).Body
		if dig(t, body, "output_config", "effort") != "low" {
			t.Errorf("output_config = %#v", body["output_config"])
		}
		absent(t, body, "thinking")
	})
}

func TestAnthropicSamplesAreSequentialCalls(t *testing.T) {
	wr, p := newAnthropicTest(t, anthropicFull)
	req := simpleReq("claude-sonnet-4-5")
	req.N = 3
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n := wr.hits.Load(); n != 3 {
		t.Fatalf("server saw %d requests, want 3", n)
	}
	absent(t, wr.last(t).Body, "n")
	want := llm.Usage{PromptTokens: 51, CompletionTokens: 90, CachedPromptTokens: 15}
	if len(resp.Choices) != 3 || resp.Usage != want {
		t.Fatalf("choices = %d, usage = %+v", len(resp.Choices), resp.Usage)
	}
	if got := p.(interface{ HTTPRequests(*llm.Request) int }).HTTPRequests(req); got != 3 {
		t.Errorf("HTTPRequests = %d", got)
	}
}

func TestAnthropicStopReasons(t *testing.T) {
	for reason, want := range map[string]string{
		"end_turn": llm.FinishStop, "stop_sequence": llm.FinishStop, "max_tokens": llm.FinishLength,
		"refusal": llm.FinishBlocked, "tool_use": llm.FinishOther, "model_context_window_exceeded": llm.FinishLength,
	} {
		_, p := newAnthropicTest(t, `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],"stop_reason":"`+reason+`","usage":{"input_tokens":1,"output_tokens":1,"output_tokens_details":{"thinking_tokens":0}}}`)
		resp, err := p.Complete(context.Background(), simpleReq("m"))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].FinishReason; got != want {
			t.Errorf("stop_reason %s → %s, want %s", reason, got, want)
		}
	}
}

func TestAnthropicRateLimitResetHeader(t *testing.T) {
	reset := time.Now().Add(20 * time.Second).UTC().Format(time.RFC3339)
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "0")
		w.Header().Set("Anthropic-Ratelimit-Requests-Reset", reset)
		w.Header().Set("Anthropic-Ratelimit-Tokens-Remaining", "5000")
		w.Header().Set("Anthropic-Ratelimit-Tokens-Reset", time.Now().Add(2*time.Second).UTC().Format(time.RFC3339))
		writeJSON(w, 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	})
	p, _ := New(Config{Provider: Anthropic, BaseURL: wr.srv.URL, APIKey: testKey})
	_, err := p.Complete(context.Background(), simpleReq("m"))
	e := asLLMError(t, err)
	// The exhausted limit (requests, ~20s) is the one to wait for; RFC 3339
	// has whole seconds and the clock moved, hence the window.
	if !e.RateLimited || e.RetryAfter < 17*time.Second || e.RetryAfter > 21*time.Second {
		t.Fatalf("got %+v", e)
	}
}
