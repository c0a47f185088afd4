// Package providers implements llm.Provider on the official SDKs: OpenAI Chat
// Completions (also used for OpenAI-compatible servers such as Together,
// DeepSeek, Cohere's compatibility API, vLLM, Ollama and llama.cpp), the
// Anthropic Messages API and the Gemini API (google.golang.org/genai).
//
// Every provider makes exactly one HTTP request per Complete (Anthropic with
// N>1 makes N, see anthropic.go): the SDKs' own retries, Gemini's automatic
// continuation and similar hidden repeats are switched off, because the
// transport counts, paces and journals every attempt itself. Failures come
// back as *llm.Error classified for that retry policy, and no error text ever
// contains the API key.
package providers

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// Provider names accepted by Config.Provider.
const (
	OpenAI           = "openai"
	OpenAICompatible = "openai-compatible"
	Anthropic        = "anthropic"
	Gemini           = "gemini"
)

// Values for Config.MaxTokensField.
const (
	MaxTokensField           = "max_tokens"
	MaxCompletionTokensField = "max_completion_tokens"
)

// Config describes one provider endpoint. It carries the key but is never part
// of a request's cache key: nothing here may change a model's reply except
// through the wire format it selects.
type Config struct {
	// Provider is "openai", "openai-compatible", "anthropic" or "gemini".
	Provider string
	// BaseURL overrides the SDK's default endpoint. For OpenAI-style servers
	// it includes the version path (e.g. "https://api.together.xyz/v1");
	// for Anthropic and Gemini it is the host root.
	BaseURL string
	// APIKey is sent as the provider expects; empty means no credential
	// (local servers).
	APIKey string
	// KeyVar names the variable the key came from. It only appears in error
	// messages ("check the key variable X"), never the key itself.
	KeyVar string
	// Timeout bounds one HTTP attempt; 0 = only the caller's context.
	Timeout time.Duration
	// MaxTokensField selects "max_tokens" or "max_completion_tokens" for
	// OpenAI-style APIs. Empty = by model id: OpenAI reasoning models (o1,
	// o3, o4, gpt-5…) on the official API get max_completion_tokens, which
	// they require; everything else, including all compatible servers, gets
	// max_tokens, which older servers are the only ones to understand.
	MaxTokensField string
	// HTTPClient is used for all requests; nil = a shared client whose
	// transport keeps enough idle connections per host for high concurrency.
	HTTPClient *http.Client
	// MaxReplyBytes bounds the body of every reply; 0 = derived from each
	// request (llm.ReplyLimit). A longer body fails the call with
	// llm.ClassTooLarge before it is read into memory.
	MaxReplyBytes int64
}

// Named is implemented by every provider in this package so logs can say which
// endpoint a model runs on without printing its key.
type Named interface {
	Name() string
}

// New builds the provider cfg describes.
func New(cfg Config) (llm.Provider, error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("providers: negative timeout %s", cfg.Timeout)
	}
	switch cfg.MaxTokensField {
	case "", MaxTokensField, MaxCompletionTokensField:
	default:
		return nil, fmt.Errorf("providers: max tokens field %q is neither %q nor %q", cfg.MaxTokensField, MaxTokensField, MaxCompletionTokensField)
	}
	switch cfg.Provider {
	case OpenAI, OpenAICompatible:
		return newOpenAI(cfg)
	case Anthropic:
		return newAnthropic(cfg)
	case Gemini:
		return newGemini(cfg)
	default:
		return nil, fmt.Errorf("providers: unknown provider %q (want %q, %q, %q or %q)", cfg.Provider, OpenAI, OpenAICompatible, Anthropic, Gemini)
	}
}

var (
	sharedTransportOnce sync.Once
	sharedTransport     *http.Transport
)

// defaultTransport is shared by all providers built without an HTTPClient so
// that models on the same host reuse connections. net/http's default keeps
// only 2 idle connections per host, which at concurrency 64 means a new TCP
// (and TLS) handshake for most requests.
func defaultTransport() *http.Transport {
	sharedTransportOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 1024
		t.MaxIdleConnsPerHost = 256
		t.IdleConnTimeout = 90 * time.Second
		sharedTransport = t
	})
	return sharedTransport
}

// httpClient wraps the configured client's transport with the response
// recorder. The client is copied so a caller's client is not modified.
func httpClient(cfg Config) *http.Client {
	var c http.Client
	if cfg.HTTPClient != nil {
		c = *cfg.HTTPClient
	}
	next := c.Transport
	if next == nil {
		// Also for a caller's client without a transport: net/http's
		// default would keep only two idle connections per host.
		next = defaultTransport()
	}
	c.Transport = recorder{next: next}
	return &c
}

// exchange records the status and headers of the HTTP response to one
// Complete call. The SDKs hide headers in their errors (genai drops them
// entirely), yet Retry-After and the rate-limit reset headers live there, so
// we capture them below the SDK.
type exchange struct {
	mu     sync.Mutex
	status int
	header http.Header
	wrote  time.Time // when the request was written to the connection
	limit  int64     // most body bytes accepted; 0 = no bound
}

func (x *exchange) get() (int, http.Header) {
	if x == nil {
		return 0, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.status, x.header
}

type exchangeKey struct{}

// recorder is the RoundTripper that fills the exchange found in the request's
// context; requests without one (e.g. from another user of a shared client)
// pass straight through.
type recorder struct{ next http.RoundTripper }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if x != nil {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) {
				x.mu.Lock()
				x.wrote = time.Now()
				x.mu.Unlock()
			},
		}))
	}
	resp, err := r.next.RoundTrip(req)
	if x != nil && resp != nil {
		x.mu.Lock()
		x.status = resp.StatusCode
		// Every reply's headers: failures carry Retry-After, and every
		// reply carries the account's rate limits where the provider
		// sends them.
		x.header = resp.Header.Clone()
		limit := x.limit
		x.mu.Unlock()
		if limit > 0 {
			if resp.ContentLength > limit {
				// Declared too long: do not download it at all.
				resp.Body.Close()
				return nil, &tooLargeError{limit: limit, declared: resp.ContentLength}
			}
			resp.Body = &cappedBody{rc: resp.Body, left: limit, limit: limit}
		}
	}
	return resp, err
}

// tooLargeError is how a reply over its bound surfaces through the SDKs,
// which wrap (but keep) the error their body read returned.
type tooLargeError struct{ limit, declared int64 }

func (e *tooLargeError) Error() string {
	if e.declared > 0 {
		return fmt.Sprintf("the reply is %d bytes, over the bound of %d", e.declared, e.limit)
	}
	return fmt.Sprintf("the reply is over the bound of %d bytes", e.limit)
}

// cappedBody fails the read that would pass the bound, so no SDK ever holds
// more than the bound in memory, whatever the server sends.
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more proves the body is over the bound (and not exactly at it).
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, &tooLargeError{limit: b.limit}
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// call is the per-attempt state every provider sets up the same way: the
// per-request timeout and the response recorder.
type call struct {
	caller context.Context // the engine's context: its cancellation is not our failure
	ctx    context.Context // caller + Config.Timeout + recorder
	cancel context.CancelFunc
	x      *exchange
}

func startCall(caller context.Context, timeout time.Duration, limit int64) *call {
	c := &call{caller: caller, x: &exchange{limit: limit}}
	ctx := context.WithValue(caller, exchangeKey{}, c.x)
	if timeout > 0 {
		c.ctx, c.cancel = context.WithTimeout(ctx, timeout)
	} else {
		c.ctx, c.cancel = context.WithCancel(ctx)
	}
	return c
}

// IsLocalHost reports whether a base URL points at this machine, where
// servers (Ollama, vLLM, llama.cpp) run without keys.
// IsLocalHost reports whether a base URL points at this machine (a local
// server needs no key).
func IsLocalHost(baseURL string) bool {
	host := hostOf(baseURL)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

func hostOf(baseURL string) string {
	s := baseURL
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		s = h
	}
	return strings.ToLower(strings.Trim(s, "[]"))
}

// limits reads the rate-limit headers of the call's reply.
func (c *call) limits() llm.RateLimits {
	_, h := c.x.get()
	rl := llm.ParseRateLimits(h.Get, time.Now())
	rl.Wrote = c.wrote()
	return rl
}

// wrote is when the call's request was written to its connection.
func (c *call) wrote() time.Time {
	c.x.mu.Lock()
	defer c.x.mu.Unlock()
	return c.x.wrote
}

// withLimits attaches the reply's rate limits to a successful response.
func (c *call) withLimits(resp *llm.Response, err error) (*llm.Response, error) {
	if err == nil && resp != nil {
		resp.RateLimits = c.limits()
	}
	return resp, err
}

// answer applies the contract's rule of what a reply is (llm.Response.Problem)
// to what a provider made of a 200, so no provider can hand on an empty one.
func answer(resp *llm.Response) (*llm.Response, error) {
	if p := resp.Problem(); p != "" {
		return nil, &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: p}
	}
	return resp, nil
}

// joinSystem concatenates system messages: every API here takes one system
// prompt, and a blank line keeps the parts apart as the author wrote them.
func joinSystem(parts []string) string { return strings.Join(parts, "\n\n") }

func unknownRole(role string) error {
	return &llm.Error{Kind: llm.Permanent, Msg: fmt.Sprintf("unknown message role %q", role)}
}
