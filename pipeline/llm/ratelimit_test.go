package llm

import (
	"testing"
	"time"
)

// A Retry-After that is an HTTP date is read in each of the three forms
// HTTP allows; one in the past, or not a date, is no wait.
func TestRetryAfterHTTPDate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"Fri, 02 Jan 2026 03:04:15 GMT":  10 * time.Second,
		"Friday, 02-Jan-26 03:04:15 GMT": 10 * time.Second,
		"Fri Jan  2 03:04:15 2026":       10 * time.Second,
		"Fri, 02 Jan 2026 03:04:00 GMT":  0,
		"2026-01-02T03:04:15Z":           0,
		"3":                              3 * time.Second,
	} {
		h := map[string]string{"Retry-After": v}
		get := func(name string) string { return h[name] }
		if got := ParseRateLimits(get, now).RetryAfter; got != want {
			t.Errorf("Retry-After %q: wait %s, want %s", v, got, want)
		}
	}
	if ParseRateLimits(nil, now).RetryAfter != 0 {
		t.Error("no headers, yet a wait")
	}
}
