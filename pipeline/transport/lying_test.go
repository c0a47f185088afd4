package transport

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// A server whose rate-limit headers cannot be true does not stall the
// run: every request is answered (counted in calls, never in time), and
// one warning names the header and the model, however many replies repeat
// the lie. A lie that looks true (a day's reset with nothing left) holds a
// request no longer than MaxRetryAfter, and the server's answer to it
// retires those headers; a cap the user set paces by itself.
func TestLyingHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers map[string]string
		rpm     int
		want    string // in the one warning; "" = none
	}{
		{"a reset of ten years", map[string]string{
			"X-Ratelimit-Limit-Requests": "100", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "87600h"},
			0, "x-ratelimit-reset-requests 87600h0m0s is longer than a day"},
		{"a limit of 1e308", map[string]string{
			"X-Ratelimit-Limit-Tokens": "1e308", "X-Ratelimit-Remaining-Tokens": "99999999999999999999999999", "X-Ratelimit-Reset-Tokens": "999999h"},
			0, "x-ratelimit-limit-tokens 1e+308 is past any real limit"},
		{"a limit of 0", map[string]string{
			"X-Ratelimit-Limit-Requests": "0", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "1s"},
			0, "x-ratelimit-limit-requests 0 is not a limit"},
		{"more left than the limit", map[string]string{
			"Anthropic-Ratelimit-Input-Tokens-Limit": "1000", "Anthropic-Ratelimit-Input-Tokens-Remaining": "5000"},
			0, "anthropic-ratelimit-input-tokens-remaining 5000 is more than anthropic-ratelimit-input-tokens-limit 1000"},
		{"a day's reset with nothing left", map[string]string{
			"X-Ratelimit-Limit-Requests": "100", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "23h"},
			0, "the server answered a request that its x-ratelimit-*-requests headers had held back"},
		{"the same with limits.rpm", map[string]string{
			"X-Ratelimit-Limit-Requests": "100", "X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "23h"},
			60000, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			f := newFake(func(context.Context, string, int) (*llm.Response, error) {
				r := ok("x")
				r.Usage = llm.Usage{PromptTokens: 10, CompletionTokens: 5}
				r.RateLimits = llm.ParseRateLimits(h.Get, time.Now())
				return r, nil
			})
			var mu sync.Mutex
			var warns []string
			tr := New(f, Options{Name: "gpt-test", RPM: tc.rpm, MaxRetryAfter: 20 * time.Millisecond, Concurrency: 4,
				Warn: func(s string) { mu.Lock(); warns = append(warns, s); mu.Unlock() }})
			// A guard against a stall, not a measure: the assertion is on
			// the calls made.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			const n = 40
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { _, _ = tr.Do(ctx, req(string(rune('a'+i%26))+strings.Repeat("x", i)), nil) })
			}
			wg.Wait()
			if c := f.totalCalls(); c != n {
				t.Fatalf("%d calls of %d made: the run stalled on the headers", c, n)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.want == "" {
				if len(warns) != 0 {
					t.Errorf("warned %q; the cap paces alone", warns)
				}
				return
			}
			if len(warns) != 1 || !strings.Contains(warns[0], tc.want) || !strings.Contains(warns[0], "model gpt-test") {
				t.Errorf("warnings %q, want one naming the model and %q", warns, tc.want)
			}
			if st := tr.Stats(); len(st.Account.Warnings) != 1 {
				t.Errorf("stats keep %q", st.Account.Warnings)
			}
		})
	}
}
