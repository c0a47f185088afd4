package providers

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

const openAIFull = `{
 "id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1-2025-04-14",
 "choices":[
  {"index":0,"message":{"role":"assistant","content":"yes","reasoning_content":"because"},"finish_reason":"stop",
   "logprobs":{"content":[{"token":"y","logprob":-0.5,"bytes":[121],"top_logprobs":[]},{"token":"es","logprob":-1.5,"bytes":[101,115],"top_logprobs":[]}],"refusal":null}},
  {"index":1,"message":{"role":"assistant","content":"no"},"finish_reason":"length","logprobs":{"content":[{"token":"no","logprob":-2,"bytes":[],"top_logprobs":[]}],"refusal":null}},
  {"index":2,"message":{"role":"assistant","content":""},"finish_reason":"content_filter","logprobs":null},
  {"index":3,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop","logprobs":null}
 ],
 "usage":{"prompt_tokens":100,"completion_tokens":40,"total_tokens":140,
  "prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":12}}
}`

func TestOpenAIRequestAndResponse(t *testing.T) {
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, openAIFull) })
	p, err := New(Config{Provider: OpenAI, BaseURL: wr.srv.URL + "/v1", APIKey: testKey, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{
		Model: "gpt-4.1",
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "be brief"},
			{Role: llm.RoleUser, Content: "q1"},
			{Role: llm.RoleAssistant, Content: "a1"},
			{Role: llm.RoleUser, Content: "q2"},
		},
		Temperature: ptr(0.7), TopP: ptr(0.9), MaxTokens: 100, N: 4,
		Stop: []string{"END", "###"}, Seed: ptr(int64(42)), Logprobs: true,
		Extra: map[string]any{"presence_penalty": 0.5, "service.tier": "flex"},
	}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}

	body := wr.last(t).Body
	if body["model"] != "gpt-4.1" || num(t, body, "temperature") != 0.7 || num(t, body, "top_p") != 0.9 ||
		num(t, body, "max_tokens") != 100 || num(t, body, "n") != 4 || num(t, body, "seed") != 42 || body["logprobs"] != true {
		t.Fatalf("body = %v", body)
	}
	absent(t, body, "max_completion_tokens")
	absent(t, body, "reasoning_effort")
	if !reflect.DeepEqual(body["stop"], []any{"END", "###"}) {
		t.Errorf("stop = %#v", body["stop"])
	}
	wantMsgs := []any{
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": "q1"},
		map[string]any{"role": "assistant", "content": "a1"},
		map[string]any{"role": "user", "content": "q2"},
	}
	if !reflect.DeepEqual(body["messages"], wantMsgs) {
		t.Errorf("messages = %#v", body["messages"])
	}
	if body["presence_penalty"] != 0.5 || body["service.tier"] != "flex" {
		t.Errorf("extra fields not sent literally: %v", body)
	}

	wantUsage := llm.Usage{PromptTokens: 100, CompletionTokens: 40, CachedPromptTokens: 64, ThinkingTokens: 12}
	if resp.Usage != wantUsage || resp.ModelVersion != "gpt-4.1-2025-04-14" {
		t.Fatalf("usage = %+v model = %q", resp.Usage, resp.ModelVersion)
	}
	if len(resp.Choices) != 4 {
		t.Fatalf("choices = %+v", resp.Choices)
	}
	c0, c1, c2, c3 := resp.Choices[0], resp.Choices[1], resp.Choices[2], resp.Choices[3]
	if c0.Text != "yes" || c0.FinishReason != llm.FinishStop || c0.Thinking != "because" || c0.Logprob == nil || *c0.Logprob != -1.0 {
		t.Errorf("choice 0 = %+v (logprob %v)", c0, c0.Logprob)
	}
	if c1.Text != "no" || c1.FinishReason != llm.FinishLength || c1.Logprob == nil || *c1.Logprob != -2 {
		t.Errorf("choice 1 = %+v", c1)
	}
	if c2.FinishReason != llm.FinishBlocked || c2.Logprob != nil {
		t.Errorf("choice 2 = %+v", c2)
	}
	if c3.FinishReason != llm.FinishBlocked || c3.Text != "I can't help with that." {
		t.Errorf("choice 3 = %+v", c3)
	}
}

func TestOpenAIReasoningParameters(t *testing.T) {
	cases := []struct {
		name      string
		provider  string
		field     string // Config.MaxTokensField
		model     string
		thinking  llm.Thinking
		wantField string
		wantEff   any // nil = absent
	}{
		{"o3 effort", OpenAI, "", "o3-mini", llm.Thinking{Effort: "high"}, "max_completion_tokens", "high"},
		{"o4 enabled", OpenAI, "", "o4-mini", llm.Thinking{Enabled: true}, "max_completion_tokens", "medium"},
		{"gpt-5 off", OpenAI, "", "gpt-5", llm.Thinking{}, "max_completion_tokens", nil},
		{"gpt-4.1 enabled ignored", OpenAI, "", "gpt-4.1", llm.Thinking{Enabled: true}, "max_tokens", nil},
		{"o3 forced max_tokens", OpenAI, MaxTokensField, "o3", llm.Thinking{Effort: "low"}, "max_tokens", "low"},
		{"compatible default", OpenAICompatible, "", "gpt-5", llm.Thinking{}, "max_tokens", nil},
		{"compatible forced", OpenAICompatible, MaxCompletionTokensField, "deepseek-ai/DeepSeek-V3", llm.Thinking{}, "max_completion_tokens", nil},
		{"compatible explicit effort", OpenAICompatible, "", "Qwen/QwQ-32B", llm.Thinking{Effort: "low"}, "max_tokens", "low"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, dialects[0].ok) })
			p, err := New(Config{Provider: tc.provider, BaseURL: wr.srv.URL + "/v1", APIKey: testKey, MaxTokensField: tc.field})
			if err != nil {
				t.Fatal(err)
			}
			req := simpleReq(tc.model)
			req.MaxTokens = 300
			req.Thinking = tc.thinking
			if _, err := p.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := wr.last(t).Body
			if num(t, body, tc.wantField) != 300 {
				t.Errorf("%s = %v", tc.wantField, body[tc.wantField])
			}
			other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tc.wantField]
			absent(t, body, other)
			if got := body["reasoning_effort"]; got != tc.wantEff {
				t.Errorf("reasoning_effort = %#v, want %#v", got, tc.wantEff)
			}
		})
	}
}

func TestIsOpenAIReasoningModel(t *testing.T) {
	for model, want := range map[string]bool{
		"o1": true, "o1-mini": true, "o3-2025-04-16": true, "o4-mini": true, "gpt-5": true, "gpt-5-mini": true, "gpt-5.1": true,
		"openai/gpt-5": true, "gpt-4o": false, "gpt-4.1": false, "omni": false, "o30": false, "deepseek-chat": false,
	} {
		if got := isOpenAIReasoningModel(model); got != want {
			t.Errorf("isOpenAIReasoningModel(%q) = %v", model, got)
		}
	}
}

func TestOpenAIInsufficientQuotaIsPermanent(t *testing.T) {
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	})
	p, _ := New(Config{Provider: OpenAI, BaseURL: wr.srv.URL + "/v1", APIKey: testKey, KeyVar: "OPENAI_API_KEY"})
	_, err := p.Complete(context.Background(), simpleReq("gpt-4.1"))
	if e := asLLMError(t, err); e.Kind != llm.Permanent || e.RateLimited {
		t.Fatalf("got %+v", e)
	}
}

func TestOpenAIMeanLogprobNotSentUnlessAsked(t *testing.T) {
	wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, openAIFull) })
	p, _ := New(Config{Provider: OpenAI, BaseURL: wr.srv.URL + "/v1", APIKey: testKey})
	resp, err := p.Complete(context.Background(), simpleReq("gpt-4.1"))
	if err != nil {
		t.Fatal(err)
	}
	absent(t, wr.last(t).Body, "logprobs")
	if resp.Choices[0].Logprob != nil {
		t.Errorf("logprob reported though not requested: %v", *resp.Choices[0].Logprob)
	}
}
