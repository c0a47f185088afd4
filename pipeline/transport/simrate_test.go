package transport

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// simLimit is one limit of a simulated server: a sliding window or a
// refilling bucket of limit per window.
type simLimit struct {
	limit  float64
	window time.Duration
	bucket bool
	log    []*entry // sliding window
	level  float64  // bucket
	last   time.Time
}

func (l *simLimit) advance(now time.Time) {
	if l.bucket {
		if l.last.IsZero() {
			l.level = l.limit
		} else {
			l.level = math.Min(l.limit, l.level+now.Sub(l.last).Seconds()/l.window.Seconds()*l.limit)
		}
		l.last = now
		return
	}
	i := 0
	for i < len(l.log) && now.Sub(l.log[i].t) >= l.window {
		i++
	}
	l.log = l.log[i:]
}

func (l *simLimit) used() float64 {
	u := 0.0
	for _, e := range l.log {
		u += e.n
	}
	return u
}

func (l *simLimit) fits(n float64) bool {
	if l.bucket {
		return l.level >= n
	}
	return l.used()+n <= l.limit
}

// take counts n; the entry lets a refund change it later.
func (l *simLimit) take(now time.Time, n float64) *entry {
	if l.bucket {
		l.level -= n
		return nil
	}
	e := &entry{now, n}
	l.log = append(l.log, e)
	return e
}

func (l *simLimit) giveBack(e *entry, n float64) {
	if l.bucket {
		l.level = math.Min(l.limit, l.level+n)
	} else {
		e.n -= n
	}
}

// state is what the headers say now.
func (l *simLimit) state(now time.Time) llm.RateWindow {
	w := llm.RateWindow{Known: true, Limit: l.limit, Header: "x-ratelimit-%s-sim"}
	if l.bucket {
		w.Remaining = math.Max(l.level, 0)
		w.Reset = time.Duration((l.limit - w.Remaining) / l.limit * float64(l.window))
	} else {
		w.Remaining = math.Max(l.limit-l.used(), 0)
		if n := len(l.log); n > 0 {
			w.Reset = l.log[n-1].t.Add(l.window).Sub(now)
		}
	}
	return w
}

type simResult struct {
	share              float64 // of the binding limit, as the server counts, after the first window
	accepted, rejected int
	st                 AccountStats
}

// simulate drives an Account on a fake clock against a server with a
// request limit and a token limit: total requests of prompt 100 tokens
// and max_tokens 300 whose replies write 12, at most 16 in flight,
// replies 50 ms after admission. refund: the server gives back what a
// reply does not use (else it keeps counting the prompt plus max_tokens,
// as OpenAI does).
func simulate(t *testing.T, reqs, toks simLimit, refund bool, total int) simResult {
	t.Helper()
	a := NewAccount(AccountOptions{Probe: true})
	clock := time.Unix(1000, 0)
	a.now = func() time.Time { return clock }
	const prompt, most, wrote = 100.0, 300.0, 12.0
	const latency = 50 * time.Millisecond
	type reply struct {
		at     time.Time
		tk     *ticket
		rl     llm.RateLimits
		ok     bool
		tokens *entry
	}
	var inFlight []reply
	var res simResult
	var first time.Time
	var served []entry
	var charge [llm.NumDims]float64
	charge[llm.DimRequests], charge[llm.DimTokens] = 1, prompt+most
	charge[llm.DimInputTokens], charge[llm.DimOutputTokens] = prompt, most
	var queue int // requests to send again after a 429
	sent := 0
	for sent < total || queue > 0 || len(inFlight) > 0 {
		// Replies due now.
		next := time.Time{}
		for i := 0; i < len(inFlight); {
			r := inFlight[i]
			if r.at.After(clock) {
				if next.IsZero() || r.at.Before(next) {
					next = r.at
				}
				i++
				continue
			}
			inFlight = append(inFlight[:i], inFlight[i+1:]...)
			if r.ok {
				if refund {
					toks.advance(clock)
					toks.giveBack(r.tokens, most-wrote)
				}
				a.settle(r.tk, r.rl, &llm.Usage{PromptTokens: int(prompt), CompletionTokens: int(wrote)}, false)
			} else {
				a.settle(r.tk, r.rl, nil, true)
				queue++
			}
		}
		if len(inFlight) < 16 && (sent < total || queue > 0) {
			a.mu.Lock()
			wait, dim, _ := a.needLocked(clock, &charge, &[llm.NumDims]bool{})
			if wait > 0 && dim >= 0 {
				a.dims[dim].boundAt = clock // as acquire marks it
			}
			if a.probing == 1 {
				wait = max(wait, time.Millisecond)
			}
			a.mu.Unlock()
			if wait <= 0 {
				tk, err := a.acquire(context.Background(), charge, 0)
				if err != nil {
					t.Fatal(err)
				}
				if queue > 0 {
					queue--
				} else {
					sent++
				}
				if first.IsZero() {
					first = clock
				}
				reqs.advance(clock)
				toks.advance(clock)
				r := reply{at: clock.Add(latency), tk: tk, ok: reqs.fits(1) && toks.fits(prompt+most)}
				reqs.take(clock, 1)
				if r.ok {
					r.tokens = toks.take(clock, prompt+most)
					res.accepted++
					n := prompt + most
					if refund {
						n = prompt + wrote
					}
					served = append(served, entry{clock, n})
				} else {
					res.rejected++
					r.at = clock.Add(time.Millisecond)
				}
				r.rl.Dims[llm.DimRequests] = reqs.state(clock)
				r.rl.Dims[llm.DimTokens] = toks.state(clock)
				r.rl.Wrote = clock
				inFlight = append(inFlight, r)
				continue
			}
			if next.IsZero() || clock.Add(wait).Before(next) {
				next = clock.Add(wait)
			}
		}
		if next.IsZero() {
			if len(inFlight) == 0 && sent == total && queue == 0 {
				break
			}
			t.Fatalf("stalled with %d sent", sent)
		}
		clock = next
	}
	// The share of the tighter limit after the first window, as the
	// server counts, to the last admission.
	from := first.Add(reqs.window)
	span := clock.Sub(from).Seconds() / reqs.window.Seconds()
	n, tk := 0.0, 0.0
	for _, e := range served {
		if !e.t.Before(from) {
			n++
			tk += e.n
		}
	}
	res.share = max(n/(reqs.limit*span), tk/(toks.limit*span))
	res.st = a.Stats()
	return res
}

// On a fake clock, against the four regimes (a request or a token limit
// binding, a sliding window or a refilling bucket) and both token rules
// (OpenAI's: a request counts its prompt plus max_tokens whatever its
// reply uses; or the unused part given back), with nothing set: at
// least 97 % of the binding limit after the first window, at most 1 % of
// attempts answered 429, the rule learned from the remaining-tokens
// headers, and the binding limit named by the summary's "limited by".
func TestRateRegimesSimulated(t *testing.T) {
	const window = 10 * time.Second
	for _, tc := range []struct {
		name       string
		bucket     bool
		reqs, toks float64
		dim        int
	}{
		{"requests, sliding", false, 100, 1e6, llm.DimRequests},
		{"requests, bucket", true, 100, 1e6, llm.DimRequests},
		// A request reserves 400 tokens, 0.4 % of the limit: a server
		// that gives back admits no more than the limit less one
		// reservation and those in flight.
		{"tokens, sliding", false, 5000, 100000, llm.DimTokens},
		{"tokens, bucket", true, 5000, 100000, llm.DimTokens},
	} {
		for _, refund := range []bool{false, true} {
			name := tc.name + ", keeps max_tokens"
			if refund {
				name = tc.name + ", gives back"
			}
			t.Run(name, func(t *testing.T) {
				r := simulate(t, simLimit{limit: tc.reqs, window: window, bucket: tc.bucket},
					simLimit{limit: tc.toks, window: window, bucket: tc.bucket}, refund, 4000)
				attempts := r.accepted + r.rejected
				name, used, ok := r.st.Limiting()
				t.Logf("%.1f %% of the limit after the first window, %d × 429 of %d attempts; limited by %s, %.0f %%; refunds %v",
					100*r.share, r.rejected, attempts, name, 100*used, r.st.Dims[llm.DimTokens].Refunds)
				if r.share < 0.97 {
					t.Errorf("%.1f %% of the limit, want at least 97 %%", 100*r.share)
				}
				if r.rejected*100 > attempts {
					t.Errorf("%d × 429 of %d attempts, want at most 1 %%", r.rejected, attempts)
				}
				if !ok || name != llm.DimNames[tc.dim] || used < 0.9 || used > 1.02 {
					t.Errorf("limited by %q, %.0f %% (bound: %v); want %s near the whole limit", name, 100*used, ok, llm.DimNames[tc.dim])
				}
				if tc.dim == llm.DimTokens && r.st.Dims[llm.DimTokens].Refunds != refund {
					t.Errorf("learned refunds = %v, the server's rule is %v", r.st.Dims[llm.DimTokens].Refunds, refund)
				}
			})
		}
	}
}
