package transport

import (
	"context"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// Margin is the share of every limit left unused: a request whose charge
// would take the account within Margin of a limit waits, so estimates that
// fall a little short and clocks that disagree a little do not end in a 429.
const Margin = 0.02

// probeHold is the longest the other requests wait for the probe's reply.
const probeHold = 5 * time.Second

// capWindow is the window of the caps a user sets (limits.rpm, limits.tpm).
const capWindow = time.Minute

// AccountOptions configures an Account.
type AccountOptions struct {
	// Share: this process takes 1/Share of every learned limit (default 1);
	// `apply --shard k/N` sets N, as the other shards spend the rest.
	Share int
	// Probe sends one request alone before any other (for up to 5 s), so
	// that the limits its reply states pace the rest from the start
	// instead of a first burst at full concurrency finding them.
	Probe bool
}

// Account paces every model that shares one API key and base URL, from the
// limits the provider's replies state (see llm.RateLimits), within the caps
// the models' entries set. One Account is shared by all their Transports.
type Account struct {
	o       AccountOptions
	mu      sync.Mutex
	dims    [llm.NumDims]dimState
	changed chan struct{} // closed and replaced when a reply brings news
	probing int           // 1 while the probe is out, 2 once it has returned
	probeAt time.Time     // when the probe went
	now     func() time.Time
}

// dimState is what the account knows and has spent of one dimension.
type dimState struct {
	// Learned from the newest reply that stated this limit.
	known     bool
	limit     float64
	remaining float64
	reset     time.Duration
	at        time.Time
	atCum     float64 // cum when the reply's request was sent (its own charge included)
	credit    float64 // refunds of requests sent after that one
	window    time.Duration
	paceAt    time.Time // when the next charge may go at the learned rate
	// cap is the user's cap per minute; 0 = none. Caps pace evenly (the
	// generic cell rate algorithm without burst): each charge moves capAt,
	// the earliest time the next may go, on by charge ÷ rate.
	cap   float64
	capAt time.Time
	// cum is everything charged so far; log the charges of the last window.
	cum float64
	log []*use
	// boundAt is when a request last had to wait for this dimension.
	boundAt  time.Time
	boundFor time.Duration // total wait on this dimension
}

type use struct {
	t time.Time
	n float64
}

// ticket is one attempt's charges, kept to settle them when it returns.
type ticket struct {
	charge [llm.NumDims]float64
	cum    [llm.NumDims]float64
	uses   [llm.NumDims]*use
}

// NewAccount returns an account with no limits known yet.
func NewAccount(o AccountOptions) *Account {
	if o.Share < 1 {
		o.Share = 1
	}
	return &Account{o: o, changed: make(chan struct{}), now: time.Now}
}

// SetCap caps a dimension at n per minute (the lowest cap of the models
// sharing the account wins); n ≤ 0 leaves it as it is.
func (a *Account) SetCap(dim int, n int) {
	if n <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if d := &a.dims[dim]; d.cap == 0 || float64(n) < d.cap {
		d.cap = float64(n)
	}
}

// Share is the part of each learned limit this process takes (1/Share).
func (a *Account) Share() int { return a.o.Share }

// acquire waits until every dimension has room for charge, then spends it.
func (a *Account) acquire(ctx context.Context, charge [llm.NumDims]float64) (*ticket, error) {
	var waitedSince time.Time
	waitedFor := -1
	for {
		a.mu.Lock()
		now := a.now()
		wait, dim := a.needLocked(now, &charge)
		if a.o.Probe && a.probing == 1 {
			if left := probeHold - now.Sub(a.probeAt); left > 0 {
				wait, dim = max(wait, left), -1 // until the probe returns
			} else {
				a.probing = 2 // a slow first reply holds the rest no longer
			}
		}
		if wait <= 0 {
			if a.o.Probe && a.probing == 0 {
				a.probing, a.probeAt = 1, now
			}
			tk := &ticket{charge: charge}
			for i := range a.dims {
				d := &a.dims[i]
				if charge[i] == 0 {
					continue
				}
				d.cum += charge[i]
				if d.cap > 0 {
					d.capAt = later(d.capAt, now).Add(d.capCost(charge[i]))
				}
				if p := d.paceCost(charge[i], a.o.Share); p > 0 {
					// A wake-up a little late does not lose its time:
					// the pace may catch up by a twentieth of the window.
					d.paceAt = later(d.paceAt, now.Add(-d.window/20)).Add(p)
				}
				tk.cum[i] = d.cum
				u := &use{t: now, n: charge[i]}
				d.log = append(d.log, u)
				tk.uses[i] = u
			}
			if !waitedSince.IsZero() && waitedFor >= 0 {
				a.dims[waitedFor].boundFor += now.Sub(waitedSince)
			}
			a.mu.Unlock()
			return tk, nil
		}
		if dim >= 0 {
			a.dims[dim].boundAt = now
			waitedFor = dim
		}
		if waitedSince.IsZero() {
			waitedSince = now
		}
		ch := a.changed
		a.mu.Unlock()
		tm := time.NewTimer(wait)
		select {
		case <-tm.C:
		case <-ch:
			tm.Stop()
		case <-ctx.Done():
			tm.Stop()
			return nil, ctx.Err()
		}
	}
}

// needLocked is how long charge must wait, and for which dimension (the
// longest wait wins); 0 when it may go now.
func (a *Account) needLocked(now time.Time, charge *[llm.NumDims]float64) (time.Duration, int) {
	var wait time.Duration
	dim := -1
	for i := range a.dims {
		d := &a.dims[i]
		c := charge[i]
		if c <= 0 {
			continue
		}
		d.prune(now, max(capWindow, d.window))
		if w := d.learnedWait(now, c, a.o.Share); w > wait {
			wait, dim = w, i
		}
		if w := d.capAt.Sub(now); d.cap > 0 && w > wait {
			wait, dim = w, i
		}
	}
	return wait, dim
}

// learnedWait applies what the newest reply said: the server had
// `remaining` left then, refilling linearly to `limit` over `reset` (exact
// for a refilling bucket; for a sliding window it assumes the window's
// spending was even); everything sent since is spent on top.
func (d *dimState) learnedWait(now time.Time, c float64, share int) time.Duration {
	if !d.known {
		return 0
	}
	L := d.limit
	T := d.reset
	if T <= 0 {
		T = max(d.window, time.Second)
	}
	elapsed := now.Sub(d.at)
	refill := (L - d.remaining) / T.Seconds() // per second
	if refill <= 0 {
		refill = L / max(d.window, T).Seconds()
	}
	avail := min(L, d.remaining+refill*elapsed.Seconds()) - max(d.cum-d.atCum-d.credit, 0)
	// An eighth of the margin here and in the log below: the pace keeps
	// the margin, and these two must leave room for the reservations of
	// requests in flight (max_tokens held until the reply).
	need := min(c, L*(1-2*Margin)) + Margin/8*L
	// Each gate's wait is a least wait: the first that says wait is
	// slept, and all are asked again after it (the log's is the dearest).
	if avail < need {
		return max(time.Duration((need-avail)/refill*float64(time.Second)), time.Millisecond)
	}
	// Evenly at the limit's rate (less the margin), so no window of a
	// server that counts in small slices sees a burst.
	if w := d.paceAt.Sub(now); w > 0 {
		return w
	}
	// What this process sent in the last window stays within the limit
	// (its share of it): exact for a sliding window, and what a bucket
	// allows too; the reply's word above covers what others spend.
	if d.window > 0 {
		budget := L / float64(share) * (1 - Margin/8)
		return logWait(d.log, now, d.window, min(c, budget), budget)
	}
	return 0
}

// logWait is how long until the charges logged in the last window plus c
// fit within budget. It reads only the window's entries (the log is in
// time order, near enough: an entry moves on only by its connection's
// setup).
func logWait(log []*use, now time.Time, window time.Duration, c, budget float64) time.Duration {
	start, sum := len(log), 0.0
	for start > 0 && now.Sub(log[start-1].t) < window {
		start--
		sum += log[start].n
	}
	if sum+c <= budget {
		return 0
	}
	for _, u := range log[start:] {
		sum -= u.n
		if sum+c <= budget {
			return max(u.t.Add(window).Sub(now), time.Millisecond)
		}
	}
	return window
}

// paceCost is how far a charge of n moves the learned pacing on: n at the
// rate of the limit's share over its window; 0 while the window is unknown.
func (d *dimState) paceCost(n float64, share int) time.Duration {
	if !d.known || d.window <= 0 {
		return 0
	}
	budget := d.limit / float64(share) * (1 - Margin)
	return time.Duration(min(n, budget) / budget * float64(d.window))
}

// capCost is how far a charge of n moves the cap's pacing on.
func (d *dimState) capCost(n float64) time.Duration {
	return time.Duration(n / (d.cap * (1 - Margin)) * float64(capWindow))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (d *dimState) prune(now time.Time, horizon time.Duration) {
	i := 0
	for i < len(d.log) && now.Sub(d.log[i].t) >= horizon {
		i++
	}
	if i > 0 {
		d.log = append(d.log[:0], d.log[i:]...)
	}
}

// settle records what an attempt's reply said: the limits its headers
// stated, and the tokens it used (refunding the estimate's excess). A
// request the server rejected for its rate gives its tokens back: it spent
// none, and its retry is charged afresh.
func (a *Account) settle(tk *ticket, rl llm.RateLimits, usage *llm.Usage, rejected bool) {
	if tk == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if w := rl.Wrote; !w.IsZero() && !w.After(now) {
		// The server counted the request when it arrived, not when it
		// was sent: a connection that took long to open moves its
		// window on.
		for _, u := range tk.uses {
			if u != nil && w.After(u.t) {
				u.t = w
			}
		}
	}
	news := a.probing == 1
	if news {
		a.probing = 2
	}
	for i, w := range rl.Dims {
		if !w.Known {
			continue
		}
		d := &a.dims[i]
		if w.Remaining > 0 {
			// The longest reset stated is the window as far as known
			// (a bucket's reset reaches it only as it runs dry), up to
			// the minute the providers' limits are stated per. Not from
			// an empty one: a server counting rejected requests may be
			// in debt past its window.
			d.window = max(d.window, min(w.Reset, time.Minute))
		}
		if tk.charge[i] > 0 && tk.cum[i] < d.atCum {
			continue // an older request's word; a newer one has spoken
		}
		// The server's word holds as of the request's arrival, not the
		// reply's: what refilled since counts.
		at := now
		if !rl.Wrote.IsZero() && rl.Wrote.Before(now) {
			at = rl.Wrote
		}
		d.known, d.limit, d.remaining, d.reset, d.at = true, w.Limit, w.Remaining, w.Reset, at
		if tk.charge[i] > 0 {
			d.atCum = tk.cum[i]
		} else {
			d.atCum = d.cum
		}
		d.credit = 0
		news = true
	}
	refund := func(i int, actual float64) {
		if tk.uses[i] == nil || actual >= tk.charge[i] {
			return
		}
		diff := tk.charge[i] - actual
		tk.uses[i].n = actual
		d := &a.dims[i]
		if tk.cum[i] > d.atCum {
			d.credit += diff
		}
		if d.cap > 0 {
			d.capAt = later(d.capAt.Add(-d.capCost(diff)), now)
		}
		if p := d.paceCost(diff, a.o.Share); p > 0 {
			d.paceAt = later(d.paceAt.Add(-p), now.Add(-d.window/20))
		}
		news = true
	}
	switch {
	case rejected:
		for _, i := range []int{llm.DimTokens, llm.DimInputTokens, llm.DimOutputTokens} {
			refund(i, 0)
		}
	case usage != nil && usage.PromptTokens+usage.CompletionTokens > 0:
		refund(llm.DimTokens, float64(usage.PromptTokens+usage.CompletionTokens))
		refund(llm.DimInputTokens, float64(usage.PromptTokens))
		refund(llm.DimOutputTokens, float64(usage.CompletionTokens))
	}
	if news {
		close(a.changed)
		a.changed = make(chan struct{})
	}
}

// DimStats is one dimension of an AccountStats.
type DimStats struct {
	Learned float64       // the limit the provider states (0 = not stated)
	Window  time.Duration // the longest reset it has stated: its window as far as known
	Cap     float64       // the user's cap per minute (0 = none)
	// Used is what this process spent in the last window (Window, or the
	// cap's minute), Budget what it may spend there: the learned limit ÷
	// Share, or the cap, whichever is lower, less neither margin.
	Used, Budget float64
	// Bound: a request waited for this dimension within the last window.
	Bound    bool
	BoundFor time.Duration // all the time requests waited for it
}

// AccountStats is a snapshot of what an Account knows and spends.
type AccountStats struct {
	Share int
	Dims  [llm.NumDims]DimStats
}

// Stats returns a snapshot.
func (a *Account) Stats() AccountStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	s := AccountStats{Share: a.o.Share}
	for i := range a.dims {
		d := &a.dims[i]
		ds := DimStats{Cap: d.cap, Window: d.window, BoundFor: d.boundFor}
		win := capWindow
		if d.known {
			ds.Learned = d.limit
			ds.Budget = d.limit / float64(a.o.Share)
			if d.window > 0 {
				win = d.window
			}
		}
		if c := d.cap * float64(win) / float64(capWindow); d.cap > 0 && (ds.Budget == 0 || c < ds.Budget) {
			ds.Budget = c
		}
		for _, u := range d.log {
			if now.Sub(u.t) < win {
				ds.Used += u.n
			}
		}
		ds.Bound = !d.boundAt.IsZero() && now.Sub(d.boundAt) < win
		s.Dims[i] = ds
	}
	return s
}

// Limiting names the dimension the account is bound by, with how much of
// its budget the last window used ("tokens per minute", 0.98); ok is false
// when no request waited for a limit within the last window.
func (s AccountStats) Limiting() (name string, used float64, ok bool) {
	best := -1.0
	for i, d := range s.Dims {
		if d.Bound && d.Budget > 0 && d.Used/d.Budget > best {
			best, name, ok = d.Used/d.Budget, llm.DimNames[i], true
		}
	}
	return name, best, ok
}
