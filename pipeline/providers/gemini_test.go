package providers

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

const geminiFull = `{
 "candidates":[
  {"content":{"role":"model","parts":[{"text":"weighing it","thought":true},{"text":"answer "},{"text":"one"}]},"finishReason":"STOP","index":0,"avgLogprobs":-0.25},
  {"content":{"role":"model","parts":[{"text":"cut"}]},"finishReason":"MAX_TOKENS","index":1,"avgLogprobs":-1.5},
  {"finishReason":"SAFETY","index":2,"safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}
 ],
 "usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":20,"cachedContentTokenCount":3,"thoughtsTokenCount":7,"totalTokenCount":37},
 "modelVersion":"gemini-2.5-flash-001"
}`

func newGeminiTest(t *testing.T, status int, body string) (*wire, llm.Provider) {
	t.Helper()
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, status, body) })
	p, err := New(Config{Provider: Gemini, BaseURL: wr.srv.URL, APIKey: testKey, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return wr, p
}

func TestGeminiRequestAndResponse(t *testing.T) {
	wr, p := newGeminiTest(t, 200, geminiFull)
	req := &llm.Request{
		Model: "gemini-2.5-flash",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "rule one"},
			{Role: llm.RoleSystem, Content: "rule two"},
			{Role: llm.RoleUser, Content: "q1"},
			{Role: llm.RoleAssistant, Content: "a1"},
			{Role: llm.RoleUser, Content: "q2"},
		},
		Temperature: ptr(0.5), TopP: ptr(0.25), MaxTokens: 256, N: 3,
		Stop: []string{"END"}, Seed: ptr(int64(99)), Logprobs: true,
		Thinking: llm.Thinking{Enabled: true, Budget: 1500},
		Extra:    map[string]any{"safetySettings": []any{map[string]any{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}}},
	}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	body := wr.last(t).Body
	if got := dig(t, body, "systemInstruction", "parts"); !reflect.DeepEqual(got, []any{map[string]any{"text": "rule one\n\nrule two"}}) {
		t.Errorf("systemInstruction = %#v", body["systemInstruction"])
	}
	part := func(s string) []any { return []any{map[string]any{"text": s}} }
	wantContents := []any{
		map[string]any{"role": "user", "parts": part("q1")},
		map[string]any{"role": "model", "parts": part("a1")},
		map[string]any{"role": "user", "parts": part("q2")},
	}
	if !reflect.DeepEqual(body["contents"], wantContents) {
		t.Errorf("contents = %#v", body["contents"])
	}
	gc := "generationConfig"
	if num(t, body, gc, "temperature") != 0.5 || num(t, body, gc, "topP") != 0.25 || num(t, body, gc, "maxOutputTokens") != 256 ||
		num(t, body, gc, "candidateCount") != 3 || num(t, body, gc, "seed") != 99 || dig(t, body, gc, "responseLogprobs") != true {
		t.Errorf("generationConfig = %#v", body[gc])
	}
	if !reflect.DeepEqual(dig(t, body, gc, "stopSequences"), []any{"END"}) {
		t.Errorf("stopSequences = %#v", dig(t, body, gc, "stopSequences"))
	}
	if num(t, body, gc, "thinkingConfig", "thinkingBudget") != 1500 || dig(t, body, gc, "thinkingConfig", "includeThoughts") != true {
		t.Errorf("thinkingConfig = %#v", dig(t, body, gc, "thinkingConfig"))
	}
	if _, ok := body["safetySettings"].([]any); !ok {
		t.Errorf("extra safetySettings not merged into the body: %v", body)
	}

	want := llm.Usage{PromptTokens: 10, CompletionTokens: 27, CachedPromptTokens: 3, ThinkingTokens: 7}
	if resp.Usage != want || resp.ModelVersion != "gemini-2.5-flash-001" {
		t.Fatalf("usage = %+v, model = %q", resp.Usage, resp.ModelVersion)
	}
	if len(resp.Choices) != 3 {
		t.Fatalf("choices = %+v", resp.Choices)
	}
	c0, c1, c2 := resp.Choices[0], resp.Choices[1], resp.Choices[2]
	if c0.Text != "answer one" || c0.Thinking != "weighing it" || c0.FinishReason != llm.FinishStop || c0.Logprob == nil || *c0.Logprob != -0.25 {
		t.Errorf("choice 0 = %+v", c0)
	}
	if c1.Text != "cut" || c1.FinishReason != llm.FinishLength {
		t.Errorf("choice 1 = %+v", c1)
	}
	if c2.FinishReason != llm.FinishBlocked || c2.Text != "" {
		t.Errorf("choice 2 = %+v", c2)
	}
	var info geminiSafety
	if err := json.Unmarshal([]byte(resp.SafetyInfo), &info); err != nil || len(info.Candidates) != 1 ||
		info.Candidates[0].Index != 2 || info.Candidates[0].FinishReason != "SAFETY" || len(info.Candidates[0].SafetyRatings) != 1 {
		t.Errorf("SafetyInfo = %s (%v)", resp.SafetyInfo, err)
	}
}

func TestGeminiThinkingConfig(t *testing.T) {
	cases := []struct {
		name     string
		thinking llm.Thinking
		want     map[string]any // nil = no thinkingConfig
	}{
		{"off", llm.Thinking{}, nil},
		{"dynamic", llm.Thinking{Enabled: true}, map[string]any{"thinkingBudget": -1.0, "includeThoughts": true}},
		{"level wins over budget", llm.Thinking{Enabled: true, Budget: 900, Effort: "high"}, map[string]any{"thinkingLevel": "HIGH", "includeThoughts": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wr, p := newGeminiTest(t, 200, dialects[2].ok)
			req := simpleReq("gemini-3-pro-preview")
			req.Thinking = tc.thinking
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			gc, _ := wr.last(t).Body["generationConfig"].(map[string]any)
			got, present := gc["thinkingConfig"]
			if tc.want == nil {
				if present {
					t.Fatalf("thinkingConfig sent: %#v", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("thinkingConfig = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestGeminiBlockedPromptIsAChoiceNotAnError(t *testing.T) {
	_, p := newGeminiTest(t, 200, `{
	 "promptFeedback":{"blockReason":"PROHIBITED_CONTENT","safetyRatings":[{"category":"HARM_CATEGORY_SEXUALLY_EXPLICIT","probability":"HIGH","blocked":true}]},
	 "usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash-001"}`)
	req := simpleReq("gemini-2.5-flash")
	req.N = 2
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("a blocked prompt is a recorded outcome, not an error: %v", err)
	}
	if len(resp.Choices) != 2 {
		t.Fatalf("want one blocked choice per sample, got %+v", resp.Choices)
	}
	for _, c := range resp.Choices {
		if c.FinishReason != llm.FinishBlocked || c.Text != "" {
			t.Errorf("choice = %+v", c)
		}
	}
	if !strings.Contains(resp.SafetyInfo, "PROHIBITED_CONTENT") || !strings.Contains(resp.SafetyInfo, "HARM_CATEGORY_SEXUALLY_EXPLICIT") {
		t.Errorf("SafetyInfo = %q", resp.SafetyInfo)
	}
	if resp.Usage.PromptTokens != 12 {
		t.Errorf("usage = %+v", resp.Usage)
	}
}

func TestGeminiRetryInfoInBody(t *testing.T) {
	_, p := newGeminiTest(t, 429, `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED",
	 "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"27s"}]}}`)
	_, err := p.Complete(context.Background(), simpleReq("gemini-2.5-flash"))
	e := asLLMError(t, err)
	if !e.RateLimited || e.Kind != llm.Transient || e.RetryAfter != 27*time.Second {
		t.Fatalf("got %+v", e)
	}
}

// GenerateContent re-sends a request by itself while replies carry a
// continuation token; that must be off so one Complete is one HTTP request.
func TestGeminiNoAutomaticContinuation(t *testing.T) {
	wr, p := newGeminiTest(t, 200, `{"candidates":[{"content":{"role":"model","parts":[{"text":"part"}]},"index":0,"continuationToken":"dG9rZW4="}],"modelVersion":"m"}`)
	if _, err := p.Complete(context.Background(), simpleReq("gemini-2.5-flash")); err != nil {
		t.Fatal(err)
	}
	if n := wr.hits.Load(); n != 1 {
		t.Fatalf("server saw %d requests, want 1", n)
	}
}

func TestGeminiSeedOutOfRange(t *testing.T) {
	wr, p := newGeminiTest(t, 200, dialects[2].ok)
	req := simpleReq("gemini-2.5-flash")
	req.Seed = ptr(int64(1) << 40)
	if _, err := p.Complete(context.Background(), req); !llm.IsPermanent(err) {
		t.Fatalf("got %v, want a permanent error", err)
	}
	if wr.hits.Load() != 0 {
		t.Fatal("request was sent anyway")
	}
}
