// Package transport sits between the engine's cache and one model's provider.
// It owns everything about getting an answer out of a rate-limited, flaky
// API: retries with backoff that respect the server's Retry-After, request-
// and token-per-minute pacing, adaptive (AIMD) concurrency that backs off on
// 429s, and a circuit breaker that stops the model on a permanent error so a
// bad key fails one request instead of thousands. Every provider call is
// reported to the caller as an Attempt so the engine can journal it.
//
// The package also states the engine's contract with whatever sends a
// model's calls: a Doer (a Transport is one, and so is a batch transport),
// the Attempts it reports, a Waver for a Doer that answers in waves, and
// CacheKey, the journal key a call is known by. The engine imports this
// package and this package imports nothing of the engine, so a Doer is
// written and tested without it.
package transport

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// Options configures a Transport; zero values take the defaults noted.
type Options struct {
	// Name identifies the model in errors ("model gpt-4.1 stopped …").
	Name string
	// MaxAttempts is the most provider calls per request that end in a real
	// error (default 5): 5xx, timeouts, cut connections, empty replies. A
	// rate-limit 429 is not one: it waits and tries again until
	// RateLimitWait has passed since the request began.
	MaxAttempts int
	// RateLimitWait bounds how long one request keeps waiting out rate
	// limits (default 15m); past it, the last 429 fails the request.
	RateLimitWait time.Duration
	// BaseBackoff and MaxBackoff bound the exponential backoff with full
	// jitter: attempt n waits rand·min(MaxBackoff, BaseBackoff·2^(n-1))
	// (defaults 1s and 60s).
	BaseBackoff, MaxBackoff time.Duration
	// MaxRetryAfter caps how long a server's Retry-After is honoured
	// (default 2m), and one wait for the limits its headers state: a
	// reset six minutes away is better probed again than slept through
	// with the request held.
	MaxRetryAfter time.Duration
	// RPM caps requests per minute (0 = none: the provider's stated limit
	// paces alone).
	RPM int
	// TPM caps tokens per minute (0 = none), charged before each call with
	// an estimate (CountTokens of the prompt plus max_tokens per sample,
	// as providers reserve it) and corrected from the reply's usage.
	TPM int
	// Account paces every model on one key and base URL together from the
	// limits the provider's replies state; nil = an account of this
	// Transport's own, which says its warnings to Warn.
	Account *Account
	Warn    func(string)
	// CountTokens counts a prompt's tokens with the model's tokenizer; nil
	// = four characters per token.
	CountTokens func(string) int
	// Concurrency is the most calls in flight (default 8); the adaptive limit
	// moves between 1 and this.
	Concurrency int
	// StopOn decides which permanent errors stop the model; nil = those
	// that belong to the model or the account (llm.Error.StopsModel: a
	// refused key, an unknown model, an exhausted quota). A rejection of
	// one request (400: context too long, content policy) fails that
	// request and the run goes on.
	StopOn func(*llm.Error) bool
	// Sleep waits for backoff and pacing; tests inject a fake. It must
	// return ctx.Err() when ctx ends first.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for jitter.
	Rand func() float64
}

// Stats is a snapshot of a Transport's counters.
type Stats struct {
	Requests    int64 // Do calls
	Succeeded   int64
	Failed      int64 // Do calls that returned an error, cancellations included
	Attempts    int64 // provider calls
	Retries     int64 // provider calls after a request's first
	RateLimited int64 // attempts that failed with a rate-limit error
	InFlight    int   // provider calls running now
	Waiting     int   // requests queued for a concurrency slot
	Limit       int   // current adaptive concurrency limit
	MaxLimit    int   // Options.Concurrency
	Stopped     bool
	StopReason  string // the error that stopped the model
	// Account is what the model's account knows of its limits and spends.
	Account AccountStats
}

// ErrStopped matches (errors.Is) every error from a stopped Transport.
// Only errors that belong to the model or the account stop it.
var ErrStopped = errors.New("model stopped")

// StoppedError is returned by Do once a permanent error has stopped the
// model. It matches ErrStopped and unwraps to the original error, so
// llm.IsPermanent holds for it too.
type StoppedError struct {
	Model string
	Cause error
}

func (e *StoppedError) Error() string {
	name := "model"
	if e.Model != "" {
		name += " " + e.Model
	}
	return name + " stopped after " + e.Cause.Error()
}

func (e *StoppedError) Unwrap() []error { return []error{ErrStopped, e.Cause} }

// requestCounter is implemented by providers that make several HTTP requests
// per Complete (Anthropic with N>1), so the RPM budget is charged for each.
type requestCounter interface {
	HTTPRequests(req *llm.Request) int
}

// Transport serves one model. It is safe for concurrent use.
type Transport struct {
	p   llm.Provider
	o   Options
	acc *Account

	mu       sync.Mutex
	inFlight int
	limit    int
	streak   int        // successes since the limit last moved
	seq      uint64     // attempts started
	cutSeq   uint64     // seq when the limit was last halved
	waiters  *list.List // of chan struct{}, FIFO
	stopErr  error

	requests, succeeded, failed, attempts, retries, rateLimited atomic.Int64
}

// New wraps p with the retry, pacing and concurrency policy in o.
func New(p llm.Provider, o Options) *Transport {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	o.MaxBackoff = max(o.MaxBackoff, o.BaseBackoff)
	if o.RateLimitWait <= 0 {
		o.RateLimitWait = 15 * time.Minute
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 2 * time.Minute
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	t := &Transport{p: p, o: o, limit: o.Concurrency, waiters: list.New(), acc: o.Account}
	if t.acc == nil {
		t.acc = NewAccount(AccountOptions{Warn: o.Warn})
	}
	t.acc.SetCap(llm.DimRequests, o.RPM)
	t.acc.SetCap(llm.DimTokens, o.TPM)
	return t
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do sends req, retrying transient failures, and reports every provider call
// to onAttempt (if not nil) before sending it and with its outcome. The
// caller's cancellation comes back as ctx.Err(). ctx governs waiting and
// retrying; a call already sent runs under llm.CallContext(ctx), so a caller
// can stop new attempts while letting the ones on the wire finish.
func (t *Transport) Do(ctx context.Context, req *llm.Request, onAttempt func(Attempt)) (*llm.Response, error) {
	t.requests.Add(1)
	resp, err := t.do(ctx, req, onAttempt)
	if err != nil {
		t.failed.Add(1)
	} else {
		t.succeeded.Add(1)
	}
	return resp, err
}

func (t *Transport) do(ctx context.Context, req *llm.Request, onAttempt func(Attempt)) (*llm.Response, error) {
	var last error
	began := time.Now()
	charge := t.charge(req)
	errs, limited := 0, 0 // attempts ended by a real error, by a rate limit
	for n := 1; ; n++ {
		if err := t.acquire(ctx); err != nil {
			return nil, err
		}
		// Pace after taking a slot: budget spent while still queued would
		// let queued requests leave together, as a burst.
		tk, err := t.acc.acquire(ctx, charge, t.o.MaxRetryAfter)
		if err != nil {
			t.release(0, nil)
			return nil, err
		}
		tk.model = t.o.Name
		seq, err := t.begin()
		if err != nil {
			t.acc.settle(tk, llm.RateLimits{}, nil, true)
			t.release(0, nil)
			return nil, err
		}
		start := time.Now()
		if onAttempt != nil {
			onAttempt(Attempt{N: n, Start: start, Sending: true})
		}
		resp, err := t.p.Complete(llm.CallContext(ctx), req)
		latency := time.Since(start)
		var le *llm.Error
		switch {
		case err == nil:
			t.acc.settle(tk, resp.RateLimits, &resp.Usage, false)
		case errors.As(err, &le):
			t.acc.settle(tk, le.RateLimits, nil, le.RateLimited)
		default:
			t.acc.settle(tk, llm.RateLimits{}, nil, false)
		}
		if err == nil {
			if p := resp.Problem(); p != "" {
				// The provider broke the contract; the reply is not one.
				resp, err = nil, &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: p}
			}
		}
		t.attempts.Add(1)
		if n > 1 {
			t.retries.Add(1)
		}
		t.release(seq, err)
		if onAttempt != nil {
			onAttempt(Attempt{N: n, Start: start, Latency: latency, Err: err, Resp: resp})
		}
		if err == nil {
			return resp, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if cerr := llm.CallContext(ctx).Err(); cerr != nil {
			return nil, cerr
		}
		if !errors.As(err, &le) {
			// Unclassified: the provider broke the contract or the engine's
			// own test provider failed on purpose. Not ours to retry, and
			// no reason to stop the model.
			return nil, err
		}
		if le.Kind == llm.Permanent {
			stops := le.StopsModel()
			if t.o.StopOn != nil {
				stops = t.o.StopOn(le)
			}
			if stops {
				t.stop(err)
			}
			return nil, err
		}
		last = err
		var wait time.Duration
		if le.RateLimited {
			// Not a failure: wait it out, with the server's Retry-After
			// and full jitter on top so the rejected do not return
			// together, until the request's deadline.
			limited++
			wait = t.rateWait(limited, le.RetryAfter)
			if time.Since(began)+wait > t.o.RateLimitWait {
				return nil, fmt.Errorf("still rate limited when the next try would pass the %s a request may wait (%d attempts answered 429): %w", t.o.RateLimitWait, limited, last)
			}
		} else {
			errs++
			if errs >= t.o.MaxAttempts {
				return nil, fmt.Errorf("gave up after %d attempts: %w", t.o.MaxAttempts, last)
			}
			wait = t.backoff(errs, le.RetryAfter)
		}
		if err := t.o.Sleep(ctx, wait); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			return nil, err
		}
	}
}

// rateWait is the wait after the n-th 429 of a request: the server's
// Retry-After (capped at MaxRetryAfter) plus full jitter over the
// exponential backoff, so that requests rejected together spread out.
func (t *Transport) rateWait(n int, retryAfter time.Duration) time.Duration {
	ceil := t.o.BaseBackoff
	for i := 1; i < n && ceil < t.o.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, t.o.MaxBackoff)
	return min(retryAfter, t.o.MaxRetryAfter) + time.Duration(t.o.Rand()*float64(ceil))
}

// backoff is full-jitter exponential backoff, but never shorter than the
// wait the server asked for (capped at MaxRetryAfter).
func (t *Transport) backoff(n int, retryAfter time.Duration) time.Duration {
	ceil := t.o.BaseBackoff
	for i := 1; i < n && ceil < t.o.MaxBackoff; i++ {
		ceil *= 2
	}
	ceil = min(ceil, t.o.MaxBackoff)
	d := time.Duration(t.o.Rand() * float64(ceil))
	if ra := min(retryAfter, t.o.MaxRetryAfter); d < ra {
		d = ra
	}
	return d
}

// charge is what one attempt at req costs the account: its HTTP requests,
// and its tokens as providers reserve them (the prompt plus the most the
// samples may write).
func (t *Transport) charge(req *llm.Request) [llm.NumDims]float64 {
	calls := 1
	if rc, ok := t.p.(requestCounter); ok {
		calls = max(rc.HTTPRequests(req), 1)
	}
	in, out := estimateTokens(req, t.o.CountTokens)
	var c [llm.NumDims]float64
	c[llm.DimRequests] = float64(calls)
	c[llm.DimInputTokens] = float64(in * calls)
	c[llm.DimOutputTokens] = float64(out)
	c[llm.DimTokens] = float64(in*calls + out)
	return c
}

// estimateTokens guesses a request's input and output tokens before the
// call: count (nil = about four characters per token) over the messages,
// plus the most the samples may write.
func estimateTokens(req *llm.Request, count func(string) int) (in, out int) {
	for _, m := range req.Messages {
		if count != nil {
			in += count(m.Content) + 4 // the role's framing
		} else {
			in += len(m.Content) / 4
		}
	}
	per := req.MaxTokens
	if per <= 0 {
		per = 512
	}
	if req.Thinking.Enabled {
		per += req.Thinking.Budget
	}
	return max(in, 1), per * req.Samples()
}

// acquire takes a concurrency slot, waiting in FIFO order while the
// adaptive limit is reached.
func (t *Transport) acquire(ctx context.Context) error {
	t.mu.Lock()
	if t.stopErr != nil {
		err := t.stoppedLocked()
		t.mu.Unlock()
		return err
	}
	if t.inFlight < t.limit && t.waiters.Len() == 0 {
		t.inFlight++
		t.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	elem := t.waiters.PushBack(ready)
	t.mu.Unlock()

	select {
	case <-ready:
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.stopErr != nil {
			// Woken by stop: give the slot back and fail now.
			t.inFlight--
			t.grantLocked()
			return t.stoppedLocked()
		}
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		select {
		case <-ready:
			// Granted just as we gave up: hand the slot on.
			t.inFlight--
			t.grantLocked()
		default:
			t.waiters.Remove(elem)
		}
		t.mu.Unlock()
		return ctx.Err()
	}
}

// begin numbers an attempt and re-checks the breaker, which may have tripped
// while this request waited.
func (t *Transport) begin() (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopErr != nil {
		return 0, t.stoppedLocked()
	}
	t.seq++
	return t.seq, nil
}

// release frees a slot and applies AIMD: halve the limit on a rate-limit
// error, add one after `limit` successes in a row. Only attempts started
// after the last cut may cut again, or one burst of 429s from calls that
// were all in flight together would collapse the limit to 1.
// seq 0 means the slot was never used for a call.
func (t *Transport) release(seq uint64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.inFlight--
	if seq != 0 {
		var le *llm.Error
		switch {
		case err == nil:
			t.streak++
			if t.streak >= t.limit && t.limit < t.o.Concurrency {
				t.limit++
				t.streak = 0
			}
		case errors.As(err, &le) && le.RateLimited:
			t.rateLimited.Add(1)
			t.streak = 0
			if seq > t.cutSeq {
				t.limit = max(1, t.limit/2)
				t.cutSeq = t.seq
			}
		}
	}
	t.grantLocked()
}

func (t *Transport) grantLocked() {
	for t.inFlight < t.limit && t.waiters.Len() > 0 {
		ready := t.waiters.Remove(t.waiters.Front()).(chan struct{})
		t.inFlight++
		close(ready)
	}
}

// stop trips the breaker. Queued requests are woken so they fail now rather
// than when a slot frees up.
func (t *Transport) stop(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopErr != nil {
		return
	}
	t.stopErr = cause
	for t.waiters.Len() > 0 {
		ready := t.waiters.Remove(t.waiters.Front()).(chan struct{})
		t.inFlight++ // handed over; acquire sees the breaker and gives it back
		close(ready)
	}
}

func (t *Transport) stoppedLocked() error {
	return &StoppedError{Model: t.o.Name, Cause: t.stopErr}
}

// Stats returns a snapshot of the counters.
func (t *Transport) Stats() Stats {
	t.mu.Lock()
	s := Stats{InFlight: t.inFlight, Waiting: t.waiters.Len(), Limit: t.limit, MaxLimit: t.o.Concurrency, Stopped: t.stopErr != nil}
	if t.stopErr != nil {
		s.StopReason = t.stopErr.Error()
	}
	t.mu.Unlock()
	s.Requests, s.Succeeded, s.Failed = t.requests.Load(), t.succeeded.Load(), t.failed.Load()
	s.Attempts, s.Retries, s.RateLimited = t.attempts.Load(), t.retries.Load(), t.rateLimited.Load()
	s.Account = t.acc.Stats()
	return s
}
