package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fitsTerminal fails on a line past 80 columns, unless the line is one word
// (a long path or URL, which cannot wrap, on a line of its own).
func fitsTerminal(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > 80 && len(strings.Fields(l)) > 1 {
			t.Errorf("%s: a line of %d columns:\n%s", what, utf8.RuneCountInString(l), l)
		}
	}
}

// Every message apply, plan, validate, data and report print fits 80
// columns, on their warning and error paths too: a model without a price
// under a spend cap, part of a study (--limit), failed cases with their
// examples, a stop at the spend cap, an unreadable run file, a missing run
// folder. The interrupted summary is in TestCtrlCShowsStoppingUntilExit.
func TestMessagesFitEightyColumns(t *testing.T) {
	// A model "broken" gets a long refusal of every request; the others an
	// answer.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(body), `"model":"broken"`) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"this request was refused because the organisation's usage policy for the selected project does not allow the requested model with these parameters at this time","type":"invalid_request_error"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.9\nAnswer: wrong"}}],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`)
	}))
	defer srv.Close()
	dir := killStudy(t, 6)
	write := func(name, text string) string {
		p := filepath.Join(dir, "configs", name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := write("widths.yaml", fmt.Sprintf(`name: widths-of-every-message-at-a-terminal
models:
  - {name: priced-model-with-a-long-name, provider: openai-compatible, model: a, base_url: %[1]s/v1, price: {input: 1, output: 2}}
  - {name: fake-c, provider: openai-compatible, model: c, base_url: %[1]s/v1}
  - {name: broken, provider: openai-compatible, model: broken, base_url: %[1]s/v1, price: {input: 1, output: 2}, limits: {max_attempts: 1}}
tasks: [toy]
strategies: [once, loop]
settings: {concurrency: 2}
`, srv.URL))
	capped := write("capped.yaml", fmt.Sprintf(`name: capped
models:
  - {name: dear, provider: openai-compatible, model: dear-model, base_url: %s/v1, price: {input: 100000, output: 100000}}
tasks: [toy]
strategies: [once]
settings: {concurrency: 1}
`, srv.URL))
	bad := write("bad.yaml", `name: bad
models:
  - {name: m, provider: opnai, model: a, colour: blue}
tasks: [toy, no-such-task-anywhere]
strategies: [once]
`)
	out := filepath.Join(dir, "out")
	runs := []struct {
		what string
		args []string
	}{
		{"validate", []string{"validate", cfg}},
		{"validate a bad file", []string{"validate", bad}},
		{"plan", []string{"plan", cfg, "--out", out}},
		{"plan a bad file", []string{"plan", bad}},
		{"apply with errors and a cap", []string{"apply", "-q", cfg, "--out", out, "--max-cost", "50"}},
		{"apply --limit", []string{"apply", "-q", cfg, "--out", out + "-part", "--limit", "2"}},
		{"apply with progress off a terminal", []string{"apply", cfg, "--out", out + "-plain"}},
		{"apply at the spend cap", []string{"apply", "-q", capped, "--out", out + "-capped", "--max-cost", "0.000001"}},
		{"apply a bad file", []string{"apply", "-q", bad}},
		{"report", []string{"report", out}},
		{"report of no run", []string{"report", filepath.Join(dir, "no-such-run")}},
		{"data pull", []string{"data", "pull", cfg}},
		{"data pull of a bad file", []string{"data", "pull", bad}},
		{"data list", []string{"data", "list"}},
	}
	seen := map[string]bool{}
	for _, r := range runs {
		stdout, stderr, code := runCLI(t, r.args...)
		fitsTerminal(t, r.what+" (stdout)", stdout)
		fitsTerminal(t, r.what+" (stderr)", stderr)
		all := words(stdout + stderr)
		for _, s := range []string{"has no price", "partial:", "e.g.", "stopped at the spend cap", "opnai", "nothing was written to"} {
			if strings.Contains(all, s) {
				seen[s] = true
			}
		}
		t.Logf("%s: exit %d", r.what, code)
	}
	// The paths the test means to drive were driven.
	for _, s := range []string{"has no price", "partial:", "e.g.", "stopped at the spend cap", "opnai", "nothing was written to"} {
		if !seen[s] {
			t.Errorf("no message said %q: a path was not driven", s)
		}
	}
}
