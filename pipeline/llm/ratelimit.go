package llm

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Rate-limit dimensions a provider may report on its replies.
const (
	DimRequests     = iota // requests per window
	DimTokens              // input + output tokens per window
	DimInputTokens         // input tokens per window (Anthropic)
	DimOutputTokens        // output tokens per window (Anthropic)
	NumDims
)

// DimNames name the dimensions in messages ("limited by tokens per minute").
var DimNames = [NumDims]string{"requests per minute", "tokens per minute", "input tokens per minute", "output tokens per minute"}

// RateWindow is what a reply said about one limit: the budget of the
// window, what is left of it, and how long until it is whole again.
type RateWindow struct {
	Known     bool // the reply named this limit
	Limit     float64
	Remaining float64
	Reset     time.Duration // 0 = not said
}

// RateLimits is what one reply said about the account's limits, read from
// whichever headers the provider sends:
//
//   - OpenAI (and servers copying it): x-ratelimit-limit-requests,
//     x-ratelimit-remaining-requests, x-ratelimit-reset-requests ("6m0s",
//     "1s", "20ms"), and the same with -tokens;
//   - Anthropic: anthropic-ratelimit-{requests,tokens,input-tokens,
//     output-tokens}-{limit,remaining,reset}, reset in RFC 3339;
//   - Together: x-ratelimit-limit, x-ratelimit-remaining, x-ratelimit-reset
//     (seconds) for requests, x-tokenlimit-limit and x-tokenlimit-remaining
//     for tokens.
//
// Gemini sends no such headers; its 429s carry a RetryInfo in the body,
// which the provider turns into Error.RetryAfter.
type RateLimits struct {
	Dims [NumDims]RateWindow
	// RetryAfter is the server's Retry-After (or retry-after-ms); 0 = none.
	RetryAfter time.Duration
	// Wrote is when the request was written to its connection (zero =
	// unknown): the server counted it no earlier, however long the
	// connection took to open.
	Wrote time.Time
}

// Any reports whether the reply named at least one limit.
func (r RateLimits) Any() bool {
	for _, d := range r.Dims {
		if d.Known {
			return true
		}
	}
	return false
}

// ParseRateLimits reads h (nil is fine) as of now.
func ParseRateLimits(h http.Header, now time.Time) RateLimits {
	var r RateLimits
	if h == nil {
		return r
	}
	set := func(dim int, limit, remaining string, reset time.Duration) {
		l, err1 := strconv.ParseFloat(strings.TrimSpace(limit), 64)
		rem, err2 := strconv.ParseFloat(strings.TrimSpace(remaining), 64)
		if err1 != nil || err2 != nil || l <= 0 || rem < 0 || r.Dims[dim].Known {
			return
		}
		r.Dims[dim] = RateWindow{Known: true, Limit: l, Remaining: min(rem, l), Reset: max(reset, 0)}
	}
	for dim, kind := range map[int]string{DimRequests: "requests", DimTokens: "tokens"} {
		if l := h.Get("X-Ratelimit-Limit-" + kind); l != "" {
			d, _ := time.ParseDuration(strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + kind)))
			set(dim, l, h.Get("X-Ratelimit-Remaining-"+kind), d)
		}
	}
	for dim, kind := range map[int]string{DimRequests: "requests", DimTokens: "tokens", DimInputTokens: "input-tokens", DimOutputTokens: "output-tokens"} {
		p := "Anthropic-Ratelimit-" + kind + "-"
		if l := h.Get(p + "Limit"); l != "" {
			var d time.Duration
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get(p+"Reset"))); err == nil {
				d = t.Sub(now)
			}
			set(dim, l, h.Get(p+"Remaining"), d)
		}
	}
	if l := h.Get("X-Ratelimit-Limit"); l != "" {
		var d time.Duration
		if f, err := strconv.ParseFloat(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 64); err == nil && f > 0 && f < 1e6 {
			d = time.Duration(f * float64(time.Second))
		}
		set(DimRequests, l, h.Get("X-Ratelimit-Remaining"), d)
	}
	if l := h.Get("X-Tokenlimit-Limit"); l != "" {
		set(DimTokens, l, h.Get("X-Tokenlimit-Remaining"), 0)
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e12 {
			r.RetryAfter = time.Duration(f * float64(time.Millisecond))
		}
	} else if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e9 {
			r.RetryAfter = time.Duration(f * float64(time.Second))
		} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
			r.RetryAfter = t.Sub(now)
		}
	}
	return r
}
