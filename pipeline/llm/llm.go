// Package llm is the narrow contract between promoral's engine and the model
// providers: a provider-neutral request, its response, and the errors the
// transport needs to tell retryable failures from permanent ones.
//
// Providers (OpenAI, Anthropic, Gemini, OpenAI-compatible servers, the scripted
// test provider) implement Provider; the engine never sees an SDK type.
package llm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Roles of a message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Thinking asks a model to reason before answering. Zero value = off.
// Providers map it to their own knobs: Anthropic extended thinking
// (budget_tokens), Gemini thinking budget / level, OpenAI reasoning effort.
type Thinking struct {
	Enabled bool   `json:"enabled,omitempty"`
	Budget  int    `json:"budget,omitempty"` // tokens; 0 = provider default
	Effort  string `json:"effort,omitempty"` // "low" | "medium" | "high" for effort-style APIs
}

// Request is everything that determines a model's reply. Its canonical JSON
// form (see Key) is the cache and journal key, so every field that changes the
// reply must live here, and nothing that does not (no timeouts, no keys).
type Request struct {
	// Model is the provider's model id (e.g. "gpt-4.1"), not promoral's name for it.
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
	TopP        *float64  `json:"top_p,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	N           int       `json:"n,omitempty"` // samples; 0 or 1 = one
	Stop        []string  `json:"stop,omitempty"`
	Seed        *int64    `json:"seed,omitempty"`
	Thinking    Thinking  `json:"thinking,omitempty"`
	Logprobs    bool      `json:"logprobs,omitempty"`
	// Extra carries provider-specific parameters declared in YAML. They are
	// part of the key because they can change the reply.
	Extra map[string]any `json:"extra,omitempty"`
	// Repeat is the sample index of a repeated case (repeats: k): part of
	// the cache key, so the k samples of one prompt are k calls, and never
	// sent to a provider. 0 (the first sample) leaves the key as it was
	// before repeats existed.
	Repeat int `json:"repeat,omitempty"`
	// Case says which case the request is for, to a provider that plays a
	// model from the case itself (provider simulated). Set only for such
	// models; never part of the key, never sent.
	Case *CaseInfo `json:"-"`
}

// CaseInfo is what a simulated model knows of the case a request is for:
// promoral's names of the model, strategy and task, the item id, its gold
// label ("" when it has none) and the task's labels. Judged: the task's
// answer is decided by a judge from the reply (a safety task), and the
// request is the strategy's, not the judge's.
type CaseInfo struct {
	Model, Strategy, Task, Item, Gold string
	Labels                            []string
	Judged                            bool
}

// Samples is the number of choices the request asks for (at least 1).
func (r *Request) Samples() int {
	if r.N < 1 {
		return 1
	}
	return r.N
}

// Finish reasons, normalised across providers.
const (
	FinishStop    = "stop"
	FinishLength  = "length"  // cut off by max_tokens
	FinishBlocked = "blocked" // provider safety filter / refusal by policy
	FinishOther   = "other"
)

// Choice is one sampled reply.
type Choice struct {
	Text         string `json:"text"`
	FinishReason string `json:"finish_reason"`
	// Thinking holds visible reasoning text where the provider returns it.
	Thinking string `json:"thinking,omitempty"`
	// Logprob is the mean token log-probability where the provider offers it.
	Logprob *float64 `json:"logprob,omitempty"`
}

// Usage is the token accounting the provider reported for one call.
type Usage struct {
	PromptTokens       int `json:"prompt_tokens"`
	CompletionTokens   int `json:"completion_tokens"`
	CachedPromptTokens int `json:"cached_prompt_tokens,omitempty"`
	ThinkingTokens     int `json:"thinking_tokens,omitempty"`
}

// Response is a provider's answer to one Request.
type Response struct {
	Choices []Choice `json:"choices"`
	Usage   Usage    `json:"usage"`
	// ModelVersion is the model id/version the provider says answered.
	ModelVersion string `json:"model_version,omitempty"`
	// SafetyInfo is provider-reported safety metadata (e.g. Gemini block
	// reasons), kept verbatim for audit.
	SafetyInfo string `json:"safety_info,omitempty"`
	// Batch is the provider's id of the batch job that answered; empty for
	// a live call. Batch replies are billed at batch prices.
	Batch string `json:"batch,omitempty"`
	// RateLimits is what the reply's headers said about the account's
	// limits (the transport paces from it); not part of the record.
	RateLimits RateLimits `json:"-"`
}

// Problem says why a response cannot serve as a reply, or "" when it can.
// A reply has at least one choice, and every choice has text unless it was
// cut off by max_tokens (all of it spent thinking, say) or blocked by a
// filter: those are outcomes the metrics count (truncated, refused). An
// empty text that simply stopped is a failed call, retried like one.
func (r *Response) Problem() string {
	if r == nil {
		return "no response"
	}
	if len(r.Choices) == 0 {
		return "the reply has no choices"
	}
	for i, c := range r.Choices {
		if c.Text == "" && c.FinishReason != FinishLength && c.FinishReason != FinishBlocked {
			if len(r.Choices) == 1 {
				return fmt.Sprintf("the reply has no content (finish reason %q)", c.FinishReason)
			}
			return fmt.Sprintf("choice %d of the reply has no content (finish reason %q)", i+1, c.FinishReason)
		}
	}
	return ""
}

// Size is the reply's text in bytes (answers and visible thinking).
func (r *Response) Size() int64 {
	if r == nil {
		return 0
	}
	var n int64
	for _, c := range r.Choices {
		n += int64(len(c.Text) + len(c.Thinking))
	}
	return n
}

// DefaultReplyTokens stands in for max_tokens when a request sets none:
// the most the models promoral targets write in one reply.
const DefaultReplyTokens = 32768

// MaxReplyBytesLimit is the largest limits.max_reply_bytes (8 MiB, about
// two million tokens of text): a journal line stays small enough to read
// whole.
const MaxReplyBytesLimit = 8 << 20

// ReplyLimit is the most bytes a reply to req may take on the wire: set
// when the model's limits.max_reply_bytes gives it, else derived from what
// the request allows the model to write (max_tokens and the thinking budget,
// per sample) at a generous 32 bytes per token (JSON escapes included),
// 1 KiB per token with logprobs, plus 256 KiB for the envelope. A reply
// over it is a runaway or a broken server, not an answer worth its memory.
func ReplyLimit(req *Request, set int64) int64 {
	if set > 0 {
		return set
	}
	tokens := int64(req.MaxTokens)
	if tokens <= 0 {
		tokens = DefaultReplyTokens
	}
	if req.Thinking.Enabled || req.Thinking.Effort != "" {
		b := int64(req.Thinking.Budget)
		if b <= 0 {
			b = DefaultReplyTokens
		}
		tokens += b
	}
	per := int64(32)
	if req.Logprobs {
		per = 1024
	}
	return 256<<10 + tokens*per*int64(req.Samples())
}

type callCtxKey struct{}

// WithCallContext returns ctx carrying call: the context a request runs
// under once it has been sent. ctx itself governs waiting and retrying, so
// an interrupted run stops starting requests (ctx ends) while the ones on
// the wire, already paid for, finish and are journaled (call lives on).
func WithCallContext(ctx, call context.Context) context.Context {
	return context.WithValue(ctx, callCtxKey{}, call)
}

// CallContext is the context to send a request under: the one
// WithCallContext attached, else ctx.
func CallContext(ctx context.Context) context.Context {
	if c, ok := ctx.Value(callCtxKey{}).(context.Context); ok {
		return c
	}
	return ctx
}

// Text returns the first choice's text ("" when there is none).
func (r *Response) Text() string {
	if r == nil || len(r.Choices) == 0 {
		return ""
	}
	return r.Choices[0].Text
}

// Provider fulfils requests. Implementations must be safe for concurrent use,
// must not retry on their own (the transport counts and journals every
// attempt), and must return *Error for failures the transport should classify.
type Provider interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// ErrorKind classifies a failed call for the retry policy.
type ErrorKind int

const (
	// Transient errors are retried with backoff: 429, 5xx, timeouts, cut
	// connections, truncated bodies, replies without an answer.
	Transient ErrorKind = iota
	// Permanent errors are not retried: 400, 401, 403, 404, a reply over
	// its size bound. Only some of them stop the model (see StopsModel).
	Permanent
)

// Error classes: short, stable names for what went wrong, written to
// results.parquet (error_class) and counted in the summary.
const (
	// ClassTransient: the server failed (429, 5xx, timeout, cut
	// connection) on every attempt the retry bound allowed.
	ClassTransient = "transient"
	// ClassRejected: the server refused this request (400: context too
	// long, content policy, a parameter it does not take); other requests
	// to the same model may well succeed.
	ClassRejected = "rejected"
	// ClassEmptyReply: a 200 without an answer: no choices, null or missing
	// content.
	ClassEmptyReply = "empty_reply"
	// ClassFailedReply: a 200 whose body says the generation failed (an
	// error object, finish reason "error").
	ClassFailedReply = "failed_reply"
	// ClassTooLarge: the reply exceeded its size bound (limits.max_reply_bytes).
	ClassTooLarge = "reply_too_large"
	// ClassAuth: the key was refused (401, 403). Stops the model.
	ClassAuth = "auth"
	// ClassNotFound: the model or endpoint does not exist (404). Stops the model.
	ClassNotFound = "not_found"
	// ClassQuota: the account's quota or balance is exhausted. Stops the model.
	ClassQuota = "quota"
)

// Error is a classified provider failure.
type Error struct {
	Kind ErrorKind
	// Class is one of the Class constants; empty means the Kind's default
	// (ClassTransient or ClassRejected).
	Class  string
	Status int // HTTP status when there was one
	// RetryAfter is the server's requested wait (Retry-After or a rate-limit
	// reset header); zero when it gave none.
	RetryAfter time.Duration
	// RateLimited marks 429s so the transport can back concurrency off.
	RateLimited bool
	// RateLimits is what the failed reply's headers said about the
	// account's limits (a 429 says the most).
	RateLimits RateLimits
	// Msg must never contain credentials.
	Msg string
	Err error
}

func (e *Error) Error() string {
	kind := "transient"
	if e.Kind == Permanent {
		kind = "permanent"
	}
	s := kind + " error"
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ClassName is the error's class, defaulting by kind.
func (e *Error) ClassName() string {
	switch {
	case e.Class != "":
		return e.Class
	case e.Kind == Transient:
		return ClassTransient
	}
	return ClassRejected
}

// StopsModel reports whether the error belongs to the model or the account
// rather than to one request, so every later request would fail the same
// way: a refused key, an unknown model, an exhausted quota.
func (e *Error) StopsModel() bool {
	switch e.ClassName() {
	case ClassAuth, ClassNotFound, ClassQuota:
		return true
	}
	return false
}

// IsPermanent reports whether err is a classified permanent provider error.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == Permanent
}
