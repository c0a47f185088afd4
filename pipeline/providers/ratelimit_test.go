package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// The rate-limit headers of every reply reach the transport: a success
// carries them on the response, a 429 on the error.
func TestRateLimitHeadersPassThrough(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		calls++
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Ratelimit-Limit-Requests", "5000")
		h.Set("X-Ratelimit-Remaining-Requests", "4999")
		h.Set("X-Ratelimit-Reset-Requests", "12ms")
		h.Set("X-Ratelimit-Limit-Tokens", "160000")
		h.Set("X-Ratelimit-Remaining-Tokens", "159976")
		h.Set("X-Ratelimit-Reset-Tokens", "6m0s")
		if calls == 2 {
			h.Set("Retry-After", "2")
			w.WriteHeader(429)
			_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)
	}))
	defer srv.Close()
	p, err := New(Config{Provider: OpenAI, BaseURL: srv.URL + "/v1", APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	rl := resp.RateLimits
	if r := rl.Dims[llm.DimRequests]; !r.Known || r.Limit != 5000 || r.Remaining != 4999 || r.Reset != 12*time.Millisecond {
		t.Errorf("requests = %+v", r)
	}
	if r := rl.Dims[llm.DimTokens]; r.Limit != 160000 || r.Remaining != 159976 || r.Reset != 6*time.Minute {
		t.Errorf("tokens = %+v", r)
	}
	if rl.Wrote.IsZero() {
		t.Error("the time the request was written is missing")
	}
	_, err = p.Complete(context.Background(), req)
	var le *llm.Error
	if !errors.As(err, &le) || !le.RateLimited || le.RateLimits.Dims[llm.DimRequests].Limit != 5000 || le.RateLimits.RetryAfter != 2*time.Second {
		t.Fatalf("err = %v (%+v)", err, le)
	}
}

// Anthropic's and Together's names, and a header that is not a number.
func TestParseRateLimits(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{}
	h.Set("Anthropic-Ratelimit-Requests-Limit", "50")
	h.Set("Anthropic-Ratelimit-Requests-Remaining", "49")
	h.Set("Anthropic-Ratelimit-Requests-Reset", "2026-01-02T03:04:06Z")
	h.Set("Anthropic-Ratelimit-Input-Tokens-Limit", "30000")
	h.Set("Anthropic-Ratelimit-Input-Tokens-Remaining", "29000")
	h.Set("Anthropic-Ratelimit-Input-Tokens-Reset", "2026-01-02T03:04:07Z")
	h.Set("Anthropic-Ratelimit-Output-Tokens-Limit", "8000")
	h.Set("Anthropic-Ratelimit-Output-Tokens-Remaining", "oops")
	rl := llm.ParseRateLimits(h.Get, now)
	if r := rl.Dims[llm.DimRequests]; r.Limit != 50 || r.Remaining != 49 || r.Reset != time.Second {
		t.Errorf("requests = %+v", r)
	}
	if r := rl.Dims[llm.DimInputTokens]; r.Limit != 30000 || r.Remaining != 29000 || r.Reset != 2*time.Second {
		t.Errorf("input tokens = %+v", r)
	}
	if rl.Dims[llm.DimOutputTokens].Known || rl.Dims[llm.DimTokens].Known {
		t.Errorf("unreadable or absent limits taken: %+v", rl.Dims)
	}
	h = http.Header{}
	h.Set("X-Ratelimit-Limit", "600")
	h.Set("X-Ratelimit-Remaining", "598")
	h.Set("X-Ratelimit-Reset", "0.5")
	h.Set("X-Tokenlimit-Limit", "180000")
	h.Set("X-Tokenlimit-Remaining", "179000")
	rl = llm.ParseRateLimits(h.Get, now)
	if r := rl.Dims[llm.DimRequests]; r.Limit != 600 || r.Remaining != 598 || r.Reset != 500*time.Millisecond {
		t.Errorf("Together requests = %+v", r)
	}
	if r := rl.Dims[llm.DimTokens]; r.Limit != 180000 || r.Remaining != 179000 {
		t.Errorf("Together tokens = %+v", r)
	}
	if llm.ParseRateLimits(nil, now).Any() {
		t.Error("no headers, yet limits")
	}
}
