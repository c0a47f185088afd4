package providers

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterHeaders(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "12"}, 12 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"zero", map[string]string{"Retry-After": "0"}, 0},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"http date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"ms beats seconds", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{"openai requests exhausted", map[string]string{
			"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "6m0s",
			"X-Ratelimit-Remaining-Tokens": "900", "X-Ratelimit-Reset-Tokens": "20ms",
		}, 6 * time.Minute},
		{"openai tokens exhausted", map[string]string{
			"X-Ratelimit-Remaining-Requests": "10", "X-Ratelimit-Reset-Requests": "6m0s",
			"X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "1s",
		}, time.Second},
		{"openai nothing exhausted: soonest", map[string]string{"X-Ratelimit-Reset-Requests": "1m30s", "X-Ratelimit-Reset-Tokens": "20ms"}, 20 * time.Millisecond},
		{"retry-after beats reset", map[string]string{"Retry-After": "3", "X-Ratelimit-Reset-Requests": "6m0s", "X-Ratelimit-Remaining-Requests": "0"}, 3 * time.Second},
		{"anthropic reset", map[string]string{
			"Anthropic-Ratelimit-Output-Tokens-Remaining": "0", "Anthropic-Ratelimit-Output-Tokens-Reset": now.Add(40 * time.Second).Format(time.RFC3339),
			"Anthropic-Ratelimit-Requests-Remaining": "49", "Anthropic-Ratelimit-Requests-Reset": now.Add(time.Second).Format(time.RFC3339),
		}, 40 * time.Second},
		{"anthropic bad time", map[string]string{"Anthropic-Ratelimit-Requests-Reset": "tomorrow"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tc.want {
				t.Fatalf("retryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClipKeepsUTF8(t *testing.T) {
	s := ""
	for len(s) < 2*maxMsg {
		s += "é"
	}
	got := clip(s)
	if len(got) > maxMsg+len("…") {
		t.Fatalf("clip kept %d bytes", len(got))
	}
	for _, r := range got {
		if r == '\uFFFD' {
			t.Fatal("clip split a rune")
		}
	}
}

func TestIsLocalHost(t *testing.T) {
	for url, want := range map[string]bool{
		"http://localhost:11434/v1": true, "http://127.0.0.1:8000/v1": true, "http://[::1]:8080": true,
		"http://0.0.0.0:8000": true, "http://user@localhost/v1": true, "https://api.together.xyz/v1": false,
		"https://localhost.evil.com/v1": false, "http://127.0.0.2": true,
	} {
		if got := IsLocalHost(url); got != want {
			t.Errorf("IsLocalHost(%q) = %v", url, got)
		}
	}
}

// A server whose message repeats what the status says is not echoed: one
// "rate limited", then whatever else it said.
func TestStatusMessageNotRepeated(t *testing.T) {
	for msg, want := range map[string]string{
		"rate limited":              "rate limited",
		"Rate limited.":             "rate limited",
		"Rate limited: retry in 2s": "rate limited: retry in 2s",
		"slow down":                 "rate limited: slow down",
	} {
		e := statusError(apiFailure{status: http.StatusTooManyRequests, msg: msg}, nil, &Config{}, nil, time.Now())
		if e.Msg != want {
			t.Errorf("server said %q: %q, want %q", msg, e.Msg, want)
		}
	}
}
