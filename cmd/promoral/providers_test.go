package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/promoral/promoral/pipeline/parquetio"
)

// A study against a local OpenAI-compatible server runs through the real SDK,
// the transport (a 429 with Retry-After is retried) and the journal.
func TestApplyAgainstLocalOpenAICompatibleServer(t *testing.T) {
	var calls, limited atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		n := calls.Add(1)
		if n == 2 {
			limited.Add(1)
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
			return
		}
		var req struct {
			Model    string                     `json:"model"`
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		answer := "not wrong"
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "stole") {
			answer = "wrong"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.9\nAnswer: %s"}}],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`, answer)
	}))
	defer srv.Close()
	dir := killStudy(t, 6)
	run := fmt.Sprintf(`name: local
models:
  - name: local
    provider: openai-compatible
    model: llama-local
    base_url: %s/v1
    price: {input: 1, output: 2}
tasks: [toy]
strategies: [once]
settings: {concurrency: 2}
`, srv.URL)
	os.WriteFile(filepath.Join(dir, "configs/local.yaml"), []byte(run), 0o644)
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, "apply", "-q", filepath.Join(dir, "configs/local.yaml"), "--out", out)
	if code != 0 {
		t.Fatalf("apply failed (%d): %s", code, stderr)
	}
	if !strings.Contains(stdout, "6 cases, 6 calls (6 new, 0 cached), 0 errors") || limited.Load() != 1 || calls.Load() != 7 {
		t.Fatalf("stdout %q, %d calls, %d rate-limited", stdout, calls.Load(), limited.Load())
	}
	rows, err := parquetio.Read(filepath.Join(out, "calls.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	attempts2 := 0
	for _, r := range rows {
		if r["model_version"] == "local-v1" && r["attempt"] == int64(2) {
			attempts2++
		}
	}
	if len(rows) != 7 || attempts2 != 1 {
		t.Errorf("calls.parquet: %d rows (want 7: one failed attempt), %d second attempts", len(rows), attempts2)
	}
	var m map[string]any
	data, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	json.Unmarshal(data, &m)
	if v := fmt.Sprint(m["model_versions"]); !strings.Contains(v, "local-v1") {
		t.Errorf("manifest model versions: %v", v)
	}
	// Second run: nothing is sent.
	before := calls.Load()
	stdout, _, _ = runCLI(t, "apply", "-q", filepath.Join(dir, "configs/local.yaml"), "--out", out)
	if calls.Load() != before || !strings.Contains(stdout, "0 new, 6 cached") {
		t.Fatalf("resume called the server: %s", stdout)
	}
}

func TestApplyWithoutKeysListsThemAndCallsNothing(t *testing.T) {
	dir := killStudy(t, 2)
	run := `name: keys
models:
  - {name: a, provider: openai, model: gpt-4.1}
  - {name: b, provider: anthropic, model: claude-sonnet-4-20250514}
  - {name: c, provider: gemini, model: gemini-2.5-pro}
tasks: [toy]
strategies: [once]
`
	os.WriteFile(filepath.Join(dir, "configs/keys.yaml"), []byte(run), 0o644)
	cmd := cli(t, "apply", filepath.Join(dir, "configs/keys.yaml"), "--out", filepath.Join(dir, "out"))
	var env []string
	for _, kv := range cmd.Env {
		if !strings.Contains(kv, "_API_KEY=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.Dir = dir
	outb, _ := cmd.CombinedOutput()
	out := string(outb)
	for _, want := range []string{"3 models have no API key", "OPENAI_API_KEY (environment or .env)", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY or GEMINI_API_KEY"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	fitsEighty(t, out)
	if cmd.ProcessState.ExitCode() != 1 {
		t.Errorf("exit code %d", cmd.ProcessState.ExitCode())
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("the output folder was created although nothing could run")
	}
}

// A 429 storm (30% of requests) and some 500s: the run completes with every
// case answered or recorded as an error, none lost, no request answered 500
// more often than its retry bound, and none failed for a 429 (they wait).
func TestApplyThroughA429Storm(t *testing.T) {
	var mu sync.Mutex
	perRequest := map[string]int{} // 500s per request
	var total atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := total.Add(1)
		body, _ := io.ReadAll(r.Body)
		switch {
		case n%10 < 3:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"rate limited"}}`)
			return
		case n%17 == 0:
			mu.Lock()
			perRequest[string(body)]++
			mu.Unlock()
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"boom"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.6\nAnswer: wrong"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
	}))
	defer srv.Close()
	dir := killStudy(t, 60)
	run := fmt.Sprintf(`name: storm
models:
  - name: local
    provider: openai-compatible
    model: m
    base_url: %s/v1
    limits: {concurrency: 8, max_attempts: 4, backoff: 1ms}
tasks: [toy]
strategies: [once]
`, srv.URL)
	os.WriteFile(filepath.Join(dir, "configs/storm.yaml"), []byte(run), 0o644)
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, "apply", "-q", filepath.Join(dir, "configs/storm.yaml"), "--out", out)
	if code != 0 && code != exitErrored {
		t.Fatalf("apply failed (%d): %s", code, stderr)
	}
	rows, err := parquetio.Read(filepath.Join(out, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	answered, failed := 0, 0
	for _, r := range rows {
		if r["error"] != nil {
			failed++
		} else if r["label"] == "bad" {
			answered++
		}
	}
	if len(rows) != 60 || answered+failed != 60 || answered < 50 {
		t.Fatalf("%d rows: %d answered, %d errors (stdout %s)", len(rows), answered, failed, stdout)
	}
	// Cases that ran out of attempts are errors, and the exit code says so.
	if (failed > 0) != (code == exitErrored) {
		t.Fatalf("%d errored cases, exit %d", failed, code)
	}
	failedBy500 := 0
	for body, n := range perRequest {
		if n > 4 {
			t.Fatalf("a request was answered 500 %d times (bound 4): %.80s", n, body)
		}
		if n == 4 {
			failedBy500++
		}
	}
	if failed != failedBy500 {
		t.Errorf("%d cases errored, %d ran out of attempts on 500s: a 429 failed a case", failed, failedBy500)
	}
	calls, _ := parquetio.Read(filepath.Join(out, "calls.parquet"))
	if int64(len(calls)) != total.Load() {
		t.Errorf("calls.parquet has %d attempts, the server saw %d", len(calls), total.Load())
	}
}
