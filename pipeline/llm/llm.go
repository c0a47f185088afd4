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
	// Transient errors are retried with backoff: 429, 5xx, timeouts, cut connections,
	// truncated bodies.
	Transient ErrorKind = iota
	// Permanent errors are not retried and stop that model's work: 400, 401, 403, 404.
	Permanent
)

// Error is a classified provider failure.
type Error struct {
	Kind   ErrorKind
	Status int // HTTP status when there was one
	// RetryAfter is the server's requested wait (Retry-After or a rate-limit
	// reset header); zero when it gave none.
	RetryAfter time.Duration
	// RateLimited marks 429s so the transport can back concurrency off.
	RateLimited bool
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

// IsPermanent reports whether err is a classified permanent provider error.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == Permanent
}
