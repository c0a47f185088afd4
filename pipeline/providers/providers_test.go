package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// testKey is distinctive so a leak is found by substring search.
const testKey = "sk-test-SECRET-4f9c2a7e1b5d"

// seen is one request as it arrived on the wire.
type seen struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// wire is an httptest server speaking a provider's protocol through handle,
// recording every request it receives.
type wire struct {
	srv  *httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	reqs []seen
}

func newWire(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *wire {
	t.Helper()
	wr := &wire{}
	wr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wr.hits.Add(1)
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		wr.mu.Lock()
		wr.reqs = append(wr.reqs, seen{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		wr.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(wr.srv.Close)
	return wr
}

func (wr *wire) last(t *testing.T) seen {
	t.Helper()
	wr.mu.Lock()
	defer wr.mu.Unlock()
	if len(wr.reqs) == 0 {
		t.Fatal("server saw no request")
	}
	return wr.reqs[len(wr.reqs)-1]
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// cutBody sends a 200 with JSON headers and the first half of body, then
// drops the connection. withLength announces the full length (the client sees
// an unexpected EOF); without it the body ends early and decoding fails.
func cutBody(w http.ResponseWriter, body string, withLength bool) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n")
	if withLength {
		fmt.Fprintf(buf, "Content-Length: %d\r\n", len(body))
	}
	fmt.Fprintf(buf, "\r\n%s", body[:len(body)/2])
	_ = buf.Flush()
}

// dialect is what the cross-provider tests need to know about a protocol.
type dialect struct {
	provider string
	base     func(srvURL string) string
	path     string
	model    string
	ok       string // a valid success body
	errBody  func(status int, msg string) string
	keyOf    func(h http.Header) string // where the credential travels
}

var dialects = []dialect{
	{
		provider: OpenAI,
		base:     func(u string) string { return u + "/v1" },
		path:     "/v1/chat/completions",
		model:    "gpt-4.1",
		ok:       `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4.1-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
		errBody: func(status int, msg string) string {
			return fmt.Sprintf(`{"error":{"message":%q,"type":"invalid_request_error","param":null,"code":"x"}}`, msg)
		},
		keyOf: func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") },
	},
	{
		provider: Anthropic,
		base:     func(u string) string { return u },
		path:     "/v1/messages",
		model:    "claude-sonnet-4-5",
		ok:       `{"id":"m1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"hello there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`,
		errBody: func(status int, msg string) string {
			return fmt.Sprintf(`{"type":"error","error":{"type":"some_error","message":%q}}`, msg)
		},
		keyOf: func(h http.Header) string { return h.Get("X-Api-Key") },
	},
	{
		provider: Gemini,
		base:     func(u string) string { return u },
		path:     "/v1beta/models/gemini-2.5-flash:generateContent",
		model:    "gemini-2.5-flash",
		ok:       `{"candidates":[{"content":{"role":"model","parts":[{"text":"hello there"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"modelVersion":"gemini-2.5-flash-001"}`,
		errBody: func(status int, msg string) string {
			return fmt.Sprintf(`{"error":{"code":%d,"message":%q,"status":"SOME_STATUS"}}`, status, msg)
		},
		keyOf: func(h http.Header) string { return h.Get("X-Goog-Api-Key") },
	},
}

func (d dialect) newProvider(t *testing.T, srvURL string, timeout time.Duration) llm.Provider {
	t.Helper()
	p, err := New(Config{Provider: d.provider, BaseURL: d.base(srvURL), APIKey: testKey, KeyVar: "PROMORAL_TEST_KEY", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func simpleReq(model string) *llm.Request {
	return &llm.Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, MaxTokens: 50}
}

func asLLMError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	return e
}

// noKey fails if the key shows anywhere a log line could take it from.
func noKey(t *testing.T, err error) {
	t.Helper()
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, testKey) {
			t.Fatalf("error text contains the API key: %s", s)
		}
	}
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) {
			t.Fatalf("wrapped error contains the API key: %s", e.Error())
		}
	}
}

func TestSuccessAndKeyOnWire(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, d.ok) })
			resp, err := d.newProvider(t, wr.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != "hello there" || resp.Usage.PromptTokens != 3 || resp.Usage.CompletionTokens != 2 {
				t.Fatalf("response = %+v", resp)
			}
			if len(resp.Choices) != 1 || resp.Choices[0].FinishReason != llm.FinishStop {
				t.Fatalf("choices = %+v", resp.Choices)
			}
			got := wr.last(t)
			if got.Path != d.path {
				t.Errorf("path = %q, want %q", got.Path, d.path)
			}
			if k := d.keyOf(got.Header); k != testKey {
				t.Errorf("credential on the wire = %q, want the configured key", k)
			}
		})
	}
}

func TestErrorClassification(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		header      map[string]string
		kind        llm.ErrorKind
		rateLimited bool
		retryAfter  time.Duration
		class       string
		stops       bool
	}{
		{name: "429 retry-after", status: 429, header: map[string]string{"Retry-After": "7"}, kind: llm.Transient, rateLimited: true, retryAfter: 7 * time.Second},
		{name: "429 retry-after-ms", status: 429, header: map[string]string{"Retry-After-Ms": "1500"}, kind: llm.Transient, rateLimited: true, retryAfter: 1500 * time.Millisecond},
		{name: "500", status: 500, kind: llm.Transient},
		{name: "503 with retry-after", status: 503, header: map[string]string{"Retry-After": "2"}, kind: llm.Transient, retryAfter: 2 * time.Second},
		{name: "529 overloaded", status: 529, kind: llm.Transient},
		{name: "408", status: 408, kind: llm.Transient},
		{name: "409", status: 409, kind: llm.Transient},
		{name: "400", status: 400, kind: llm.Permanent, class: llm.ClassRejected},
		{name: "401", status: 401, kind: llm.Permanent, class: llm.ClassAuth, stops: true},
		{name: "402", status: 402, kind: llm.Permanent, class: llm.ClassQuota, stops: true},
		{name: "403", status: 403, kind: llm.Permanent, class: llm.ClassAuth, stops: true},
		{name: "404", status: 404, kind: llm.Permanent, class: llm.ClassNotFound, stops: true},
		{name: "413", status: 413, kind: llm.Permanent, class: llm.ClassRejected},
		{name: "422", status: 422, kind: llm.Permanent, class: llm.ClassRejected},
	}
	for _, d := range dialects {
		for _, tc := range cases {
			t.Run(d.provider+"/"+tc.name, func(t *testing.T) {
				wr := newWire(t, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					// Echo the credential back, as real servers partly do
					// ("Incorrect API key provided: sk-…"), to prove we scrub it.
					writeJSON(w, tc.status, d.errBody(tc.status, "failure for key "+d.keyOf(r.Header)))
				})
				_, err := d.newProvider(t, wr.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model))
				if err == nil {
					t.Fatal("no error")
				}
				e := asLLMError(t, err)
				if e.Kind != tc.kind || e.Status != tc.status || e.RateLimited != tc.rateLimited || e.RetryAfter != tc.retryAfter {
					t.Fatalf("got kind=%v status=%d rateLimited=%v retryAfter=%v (%v); want kind=%v status=%d rateLimited=%v retryAfter=%v",
						e.Kind, e.Status, e.RateLimited, e.RetryAfter, err, tc.kind, tc.status, tc.rateLimited, tc.retryAfter)
				}
				class := tc.class
				if class == "" {
					class = llm.ClassTransient
				}
				if e.ClassName() != class || e.StopsModel() != tc.stops {
					t.Fatalf("class %q stops %v; want %q stops %v", e.ClassName(), e.StopsModel(), class, tc.stops)
				}
				if llm.IsPermanent(err) != (tc.kind == llm.Permanent) {
					t.Fatalf("IsPermanent = %v", llm.IsPermanent(err))
				}
				noKey(t, err)
				if !strings.Contains(err.Error(), "failure for key") {
					t.Errorf("server's message lost: %v", err)
				}
				if tc.status == 401 && !strings.Contains(err.Error(), "PROMORAL_TEST_KEY") {
					t.Errorf("401 should name the key variable: %v", err)
				}
				// The SDK's own retries are off: one Complete, one request.
				if n := wr.hits.Load(); n != 1 {
					t.Fatalf("server saw %d requests, want exactly 1", n)
				}
			})
		}
	}
}

func TestTimeoutIsTransient(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // until the client gives up
			})
			_, err := d.newProvider(t, wr.srv.URL, 50*time.Millisecond).Complete(context.Background(), simpleReq(d.model))
			e := asLLMError(t, err)
			if e.Kind != llm.Transient || !strings.Contains(e.Msg, "no response within 50ms") {
				t.Fatalf("got %v", err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("timeout should still match context.DeadlineExceeded: %v", err)
			}
			if n := wr.hits.Load(); n != 1 {
				t.Fatalf("server saw %d requests, want 1", n)
			}
			noKey(t, err)
		})
	}
}

func TestCallerCancellationIsNotAProviderError(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				<-r.Context().Done()
			})
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-arrived; cancel() }()
			_, err := d.newProvider(t, wr.srv.URL, 0).Complete(ctx, simpleReq(d.model))
			if err != context.Canceled {
				t.Fatalf("got %v (%T), want context.Canceled itself", err, err)
			}
		})
	}
}

func TestCutBodyIsTransient(t *testing.T) {
	for _, d := range dialects {
		for _, withLength := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/length=%v", d.provider, withLength), func(t *testing.T) {
				wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { cutBody(w, d.ok, withLength) })
				_, err := d.newProvider(t, wr.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model))
				e := asLLMError(t, err)
				if e.Kind != llm.Transient {
					t.Fatalf("got %v, want transient", err)
				}
				if n := wr.hits.Load(); n != 1 {
					t.Fatalf("server saw %d requests, want 1", n)
				}
			})
		}
	}
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			srv := httptest.NewServer(http.NotFoundHandler())
			url := srv.URL
			srv.Close()
			_, err := d.newProvider(t, url, 5*time.Second).Complete(context.Background(), simpleReq(d.model))
			if e := asLLMError(t, err); e.Kind != llm.Transient {
				t.Fatalf("got %v, want transient", err)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Provider: "bedrock"},
		{Provider: OpenAICompatible, APIKey: "k"},
		{Provider: Gemini},
		{Provider: OpenAI, MaxTokensField: "max_output_tokens"},
		{Provider: OpenAI, Timeout: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	p, err := New(Config{Provider: OpenAICompatible, BaseURL: "http://localhost:8000/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.(Named).Name(); n != "openai-compatible http://localhost:8000/v1" {
		t.Errorf("Name() = %q", n)
	}
}

// The SDKs read credentials and endpoints from the environment by default; a
// config must never pick those up (and send the OpenAI key to another host).
func TestEnvironmentIsIgnored(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "env-openai-key")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("ANTHROPIC_API_KEY", "env-anthropic-key")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1")
	for _, d := range dialects {
		t.Run(d.provider, func(t *testing.T) {
			wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, d.ok) })
			if _, err := d.newProvider(t, wr.srv.URL, 5*time.Second).Complete(context.Background(), simpleReq(d.model)); err != nil {
				t.Fatal(err)
			}
			got := wr.last(t)
			if k := d.keyOf(got.Header); k != testKey {
				t.Fatalf("credential = %q, want the configured key", k)
			}
			if got.Path != d.path {
				t.Fatalf("path = %q, want %q", got.Path, d.path)
			}
		})
	}
	t.Run("keyless local server", func(t *testing.T) {
		d := dialects[0]
		wr := newWire(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, d.ok) })
		p, err := New(Config{Provider: OpenAICompatible, BaseURL: wr.srv.URL + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(context.Background(), simpleReq("llama3")); err != nil {
			t.Fatal(err)
		}
		if h := wr.last(t).Header.Get("Authorization"); h != "" {
			t.Fatalf("keyless provider sent Authorization %q", h)
		}
	})
}

func TestUnknownRoleIsPermanent(t *testing.T) {
	for _, d := range dialects {
		p := d.newProvider(t, "http://127.0.0.1:1", time.Second)
		req := simpleReq(d.model)
		req.Messages = append(req.Messages, llm.Message{Role: "tool", Content: "x"})
		_, err := p.Complete(context.Background(), req)
		if !llm.IsPermanent(err) {
			t.Errorf("%s: got %v, want permanent", d.provider, err)
		}
	}
}

// body helpers for wire assertions

func num(t *testing.T, m map[string]any, path ...string) float64 {
	t.Helper()
	v := dig(t, m, path...)
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%v = %#v, not a number", path, v)
	}
	return f
}

func dig(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%v: %#v is not an object", path, cur)
		}
		cur, ok = mm[p]
		if !ok {
			t.Fatalf("%v: field %q missing in %v", path, p, mm)
		}
	}
	return cur
}

func absent(t *testing.T, m map[string]any, field string) {
	t.Helper()
	if v, ok := m[field]; ok {
		t.Errorf("field %q = %#v should not be sent", field, v)
	}
}

func ptr[T any](v T) *T { return &v }
