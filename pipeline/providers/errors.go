package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/secret"
)

// apiFailure is what a provider could read from an SDK's HTTP error.
type apiFailure struct {
	status int
	msg    string // the server's own explanation
	code   string // the server's error code or type, e.g. "insufficient_quota"
	// retryAfter comes from the body where a provider puts it there
	// (Gemini's google.rpc.RetryInfo) rather than in headers.
	retryAfter time.Duration
}

// maxMsg bounds server text copied into error messages: enough to read the
// reason, not a whole HTML error page.
const maxMsg = 300

// classify turns whatever the SDK returned into the contract's error. The
// caller's own cancellation comes back unchanged so the engine can stop
// cleanly; everything else becomes an *llm.Error whose text is free of the key.
func (c *call) classify(err error, af apiFailure, cfg *Config) error {
	if cerr := c.caller.Err(); cerr != nil {
		return cerr
	}
	var tl *tooLargeError
	if errors.As(err, &tl) || strings.Contains(err.Error(), "over the bound of") {
		msg := "the reply is over its size bound"
		if tl != nil {
			msg = tl.Error()
		}
		return &llm.Error{Kind: llm.Permanent, Class: llm.ClassTooLarge,
			Msg: msg + " (limits.max_reply_bytes; the default follows max_tokens)"}
	}
	status, header := c.x.get()
	if af.status == 0 && status >= 400 {
		af.status = status
	}
	wrapped := &redactedError{err: err, key: cfg.APIKey}
	if af.status != 0 {
		e := statusError(af, header, cfg, wrapped, time.Now())
		e.RateLimits.Wrote = c.wrote()
		return e
	}
	switch {
	case errors.Is(c.ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || isNetTimeout(err):
		msg := "timed out"
		if cfg.Timeout > 0 {
			msg = fmt.Sprintf("no response within %s", cfg.Timeout)
		}
		return &llm.Error{Kind: llm.Transient, Msg: msg, Err: wrapped}
	case isBadJSON(err):
		return &llm.Error{Kind: llm.Transient, Msg: "response body cut off or malformed: " + clip(wrapped.Error()), Err: wrapped}
	case isCutConnection(err):
		return &llm.Error{Kind: llm.Transient, Msg: "connection failed: " + clip(wrapped.Error()), Err: wrapped}
	default:
		// SDK-side validation and configuration failures: retrying cannot help.
		return &llm.Error{Kind: llm.Permanent, Msg: clip(wrapped.Error()), Err: wrapped}
	}
}

func statusError(af apiFailure, header http.Header, cfg *Config, wrapped error, now time.Time) *llm.Error {
	e := &llm.Error{Status: af.status, Err: wrapped, Kind: llm.Permanent}
	var what string
	switch s := af.status; {
	case isQuota(af):
		// OpenAI reports an exhausted balance as 429, Anthropic as a 400
		// about the credit balance; waiting will not refill either.
		e.Class = llm.ClassQuota
		what = "quota exhausted: check billing for the account behind " + keyName(cfg)
	case s == http.StatusTooManyRequests:
		e.Kind, e.RateLimited = llm.Transient, true
		what = "rate limited"
	case s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500:
		// 529 is Anthropic's "overloaded"; 409 is a lock conflict both
		// OpenAI and Anthropic say to retry.
		e.Kind = llm.Transient
		what = "server error"
	case s == http.StatusUnauthorized:
		e.Class = llm.ClassAuth
		what = "authentication failed: check " + keyName(cfg)
	case s == http.StatusForbidden:
		e.Class = llm.ClassAuth
		what = "permission denied: check " + keyName(cfg) + " and the account's access to this model"
	case s == http.StatusNotFound:
		e.Class = llm.ClassNotFound
		what = "not found: check the model id and the base URL"
	default:
		// 400, 413, 422…: this request (too long, against a content
		// policy, a parameter the model does not take), not the model.
		e.Class = llm.ClassRejected
		what = "request rejected"
	}
	e.RateLimits = llm.ParseRateLimits(header.Get, now)
	if e.Kind == llm.Transient {
		e.RetryAfter = retryAfter(header, now)
		if e.RetryAfter == 0 {
			e.RetryAfter = af.retryAfter
		}
	}
	if m := strings.TrimSpace(redact(af.msg, cfg.APIKey)); m != "" {
		if rest, ok := cutPrefixFold(m, what); ok {
			// The server said it too ("Rate limited."): say it once.
			m = strings.TrimLeft(rest, " .:;,-")
		}
		if m != "" {
			what += ": " + clip(m)
		}
	}
	e.Msg = what
	return e
}

// cutPrefixFold is strings.CutPrefix ignoring case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// isQuota recognises an exhausted balance or quota, which no retry fixes.
func isQuota(af apiFailure) bool {
	if af.status == http.StatusPaymentRequired || af.code == "insufficient_quota" || af.code == "billing_error" {
		return true
	}
	m := strings.ToLower(af.msg)
	return af.status < 500 && af.status != http.StatusTooManyRequests &&
		(strings.Contains(m, "credit balance is too low") || strings.Contains(m, "exceeded your current quota"))
}

func keyName(cfg *Config) string {
	if cfg.KeyVar != "" {
		return "the key variable " + cfg.KeyVar
	}
	return "the API key"
}

// retryAfter reads the server's requested wait, in the order of how directly
// each header answers "when may I retry": explicit Retry-After first, then
// the rate-limit reset times. Zero means the server said nothing usable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 && f < 1e12 {
			return time.Duration(f * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			if f > 0 && f < 1e9 {
				return time.Duration(f * float64(time.Second))
			}
		} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
			return t.Sub(now)
		}
	}
	// Reset headers exist per limit (requests, tokens…). The one that ran out
	// is the one to wait for; if none says it ran out, the soonest reset is
	// the least we know.
	var exhausted, soonest time.Duration
	consider := func(d time.Duration, remaining string) {
		if d <= 0 {
			return
		}
		if strings.TrimSpace(remaining) == "0" && d > exhausted {
			exhausted = d
		}
		if soonest == 0 || d < soonest {
			soonest = d
		}
	}
	for _, kind := range []string{"requests", "tokens"} {
		if v := h.Get("X-Ratelimit-Reset-" + kind); v != "" {
			if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil {
				consider(d, h.Get("X-Ratelimit-Remaining-"+kind))
			}
		}
	}
	for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if v := h.Get("Anthropic-Ratelimit-" + kind + "-Reset"); v != "" {
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(v)); err == nil {
				consider(t.Sub(now), h.Get("Anthropic-Ratelimit-"+kind+"-Remaining"))
			}
		}
	}
	if exhausted > 0 {
		return exhausted
	}
	return soonest
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isCutConnection(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// Some cut connections surface only as text (HTTP/2 GOAWAY, a server
	// closing an idle connection between our write and its read).
	s := err.Error()
	for _, frag := range []string{"connection reset", "broken pipe", "server closed", "GOAWAY", "unexpected EOF"} {
		if strings.Contains(s, frag) {
			return true
		}
	}
	return false
}

func isBadJSON(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "unexpected end of JSON input") || strings.Contains(s, "error parsing response json") ||
		strings.Contains(s, "error unmarshalling response")
}

// redactedError keeps an SDK error reachable for errors.Is (context deadline,
// io.ErrUnexpectedEOF, syscall errors) while its text is scrubbed of the key.
// It deliberately has no Unwrap: the SDK error types hold the outgoing
// *http.Request, whose headers carry the key, and errors.As must not hand
// that to code that might print it.
type redactedError struct {
	err error
	key string
}

func (r *redactedError) Error() string { return redact(r.err.Error(), r.key) }

func (r *redactedError) Is(target error) bool { return errors.Is(r.err, target) }

// redact scrubs the key the provider sent and anything else that looks like
// a credential (an Authorization header a server echoed, a URL's password).
func redact(s, key string) string { return secret.RedactKey(s, key) }

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMsg {
		cut := maxMsg
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut] + "…"
	}
	return s
}
