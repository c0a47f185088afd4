package llm

import (
	"errors"
	"fmt"
	"math"
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
// The figures are as the headers gave them; Problem says whether they
// can be believed.
type RateWindow struct {
	Known     bool // the reply named this limit
	Limit     float64
	Remaining float64
	Reset     time.Duration // 0 = not said
	// Header names the headers the figures came from, with %s for the
	// part: "x-ratelimit-%s-tokens" (see HeaderName).
	Header string
}

// Bounds past which a stated limit is not believed: no provider states a
// limit of more than MaxRateLimit per window, nor a window longer than
// MaxRateReset (its limits are per minute or, at the longest, per day).
const (
	MaxRateLimit = 1e11
	MaxRateReset = 24 * time.Hour
)

// HeaderName is the header that stated part ("limit", "remaining",
// "reset") of the window.
func (w RateWindow) HeaderName(part string) string {
	if w.Header == "" {
		return part
	}
	return fmt.Sprintf(w.Header, part)
}

// Problem says why the figures cannot be believed, naming the header
// ("x-ratelimit-reset-requests 87600h0m0s is longer than a day"), or ""
// when they can: a limit that is not a positive number or is past
// MaxRateLimit, a remaining budget below 0 or above the limit, a reset
// past MaxRateReset.
func (w RateWindow) Problem() string {
	switch {
	case !w.Known:
		return ""
	case !(w.Limit > 0) || math.IsInf(w.Limit, 0):
		return fmt.Sprintf("%s %g is not a limit (a positive number)", w.HeaderName("limit"), w.Limit)
	case w.Limit > MaxRateLimit:
		return fmt.Sprintf("%s %g is past any real limit (%g)", w.HeaderName("limit"), w.Limit, float64(MaxRateLimit))
	case !(w.Remaining >= 0) || math.IsInf(w.Remaining, 0):
		return fmt.Sprintf("%s %g is not a budget left (0 or more)", w.HeaderName("remaining"), w.Remaining)
	case w.Remaining > w.Limit:
		return fmt.Sprintf("%s %g is more than %s %g", w.HeaderName("remaining"), w.Remaining, w.HeaderName("limit"), w.Limit)
	case w.Reset > MaxRateReset:
		return fmt.Sprintf("%s %s is longer than a day", w.HeaderName("reset"), w.Reset)
	}
	return ""
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

// Header is a lookup of a reply's headers by name, as http.Header.Get
// does it (case aside; "" when absent). The contract takes a lookup, not
// an http.Header, so that it names no transport.
type Header func(name string) string

// ParseRateLimits reads the headers h looks up (nil: none) as of now;
// a provider passes its reply's http.Header.Get.
func ParseRateLimits(h Header, now time.Time) RateLimits {
	var r RateLimits
	if h == nil {
		return r
	}
	// Figures that are numbers are kept as they are, however unlikely:
	// the account judges them (RateWindow.Problem) and says so.
	set := func(dim int, header, limit, remaining string, reset time.Duration) {
		l, err1 := strconv.ParseFloat(strings.TrimSpace(limit), 64)
		rem, err2 := strconv.ParseFloat(strings.TrimSpace(remaining), 64)
		if err1 != nil && !errors.Is(err1, strconv.ErrRange) || err2 != nil && !errors.Is(err2, strconv.ErrRange) || r.Dims[dim].Known {
			return
		}
		r.Dims[dim] = RateWindow{Known: true, Limit: l, Remaining: rem, Reset: max(reset, 0), Header: header}
	}
	for dim, kind := range map[int]string{DimRequests: "requests", DimTokens: "tokens"} {
		if l := h("X-Ratelimit-Limit-" + kind); l != "" {
			d, _ := time.ParseDuration(strings.TrimSpace(h("X-Ratelimit-Reset-" + kind)))
			set(dim, "x-ratelimit-%s-"+kind, l, h("X-Ratelimit-Remaining-"+kind), d)
		}
	}
	for dim, kind := range map[int]string{DimRequests: "requests", DimTokens: "tokens", DimInputTokens: "input-tokens", DimOutputTokens: "output-tokens"} {
		p := "Anthropic-Ratelimit-" + kind + "-"
		if l := h(p + "Limit"); l != "" {
			var d time.Duration
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(h(p+"Reset"))); err == nil {
				d = t.Sub(now)
			}
			set(dim, "anthropic-ratelimit-"+kind+"-%s", l, h(p+"Remaining"), d)
		}
	}
	if l := h("X-Ratelimit-Limit"); l != "" {
		var d time.Duration
		if f, err := strconv.ParseFloat(strings.TrimSpace(h("X-Ratelimit-Reset")), 64); err == nil && f > 0 && f < 1e9 {
			d = time.Duration(f * float64(time.Second))
		}
		set(DimRequests, "x-ratelimit-%s", l, h("X-Ratelimit-Remaining"), d)
	}
	if l := h("X-Tokenlimit-Limit"); l != "" {
		set(DimTokens, "x-tokenlimit-%s", l, h("X-Tokenlimit-Remaining"), 0)
	}
	if v := strings.TrimSpace(h("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e12 {
			r.RetryAfter = time.Duration(f * float64(time.Millisecond))
		}
	} else if v := strings.TrimSpace(h("Retry-After")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e9 {
			r.RetryAfter = time.Duration(f * float64(time.Second))
		} else if t, err := parseHTTPTime(v); err == nil && t.After(now) {
			r.RetryAfter = t.Sub(now)
		}
	}
	return r
}

// httpTimeFormats are the date formats HTTP allows (RFC 9110, 5.6.7), the
// preferred one first, as net/http's ParseTime reads them.
var httpTimeFormats = []string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	time.RFC850,
	time.ANSIC,
}

// parseHTTPTime reads an HTTP date (a Retry-After that is not a number
// of seconds) in any of the formats HTTP allows.
func parseHTTPTime(v string) (t time.Time, err error) {
	for _, f := range httpTimeFormats {
		if t, err = time.Parse(f, v); err == nil {
			return t, nil
		}
	}
	return t, err
}
