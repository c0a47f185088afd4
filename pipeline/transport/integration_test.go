package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/providers"
)

// openAIReply is a minimal valid Chat Completions response.
func openAIReply(text string) string {
	return fmt.Sprintf(`{"id":"c","object":"chat.completion","created":1,"model":"m-1","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`, text)
}

// requestID reads the id the tests put in the (only) user message.
func requestID(r *http.Request) string {
	var body struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	if len(body.Messages) == 0 {
		return ""
	}
	return body.Messages[0].Content
}

// The real OpenAI provider over HTTP, against a server that answers 30% of
// requests with 429 (Retry-After: 0) and 5% with 500: every request is
// accounted for, none fails for a 429 (they wait), and the server never
// answers one with a 500 more than MaxAttempts times.
func TestIntegrationOpenAIFlakyServer(t *testing.T) {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 11))
	hits, errs := map[string]int{}, map[string]int{}
	var total atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := requestID(r)
		total.Add(1)
		mu.Lock()
		hits[id]++
		x := rng.Float64()
		if x >= 0.30 && x < 0.35 {
			errs[id]++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case x < 0.30:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
			_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		case x < 0.35:
			w.WriteHeader(500)
			_, _ = io.WriteString(w, `{"error":{"message":"internal","type":"server_error"}}`)
		default:
			_, _ = io.WriteString(w, openAIReply("ok "+id))
		}
	}))
	defer srv.Close()

	p, err := providers.New(providers.Config{Provider: providers.OpenAI, BaseURL: srv.URL + "/v1", APIKey: "sk-test", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const n, maxAttempts = 200, 5
	tr := New(p, Options{Concurrency: 32, MaxAttempts: maxAttempts, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	var reported, answered, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("case-", i)
			r := &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{{Role: llm.RoleUser, Content: id}}, MaxTokens: 5}
			resp, err := tr.Do(context.Background(), r, func(a Attempt) {
				if !a.Sending {
					reported.Add(1)
				}
			})
			switch {
			case err == nil && resp.Text() == "ok "+id:
				answered.Add(1)
			case err != nil && !llm.IsPermanent(err) && strings.Contains(err.Error(), "HTTP 500"):
				failed.Add(1)
			default:
				t.Errorf("%s: resp=%v err=%v", id, resp.Text(), err)
			}
		})
	}
	wg.Wait()
	if answered.Load()+failed.Load() != n {
		t.Fatalf("answered %d + failed %d != %d", answered.Load(), failed.Load(), n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != n {
		t.Errorf("server saw %d distinct requests, want %d", len(hits), n)
	}
	for id, h := range errs {
		if h > maxAttempts {
			t.Errorf("%s was answered 500 %d times", id, h)
		}
	}
	st := tr.Stats()
	if total.Load() != st.Attempts || st.Attempts != reported.Load() {
		t.Errorf("server hits %d, transport attempts %d, reported %d: the SDK retried behind our back or we lost count",
			total.Load(), st.Attempts, reported.Load())
	}
	if st.RateLimited == 0 || st.Stopped || st.InFlight != 0 {
		t.Errorf("stats = %+v", st)
	}
	t.Logf("answered %d, failed %d, server hits %d, rate limited %d, final limit %d", answered.Load(), failed.Load(), total.Load(), st.RateLimited, st.Limit)
}
