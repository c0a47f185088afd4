package transport

import (
	"context"
	"fmt"
	"math"
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
	// Warn receives, once each, the account's warnings: a limit stated
	// in figures that cannot be true, or a server that answered where
	// its own headers left no room (nil = none; Stats keeps them too).
	Warn func(string)
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
	warned  map[string]bool
	warns   []string
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
	window    time.Duration
	header    string    // the headers that stated it ("x-ratelimit-*-tokens")
	paceAt    time.Time // when the next charge may go at the learned rate
	// ignored: the server's headers for this limit are not believed for
	// the rest of the run (it answered where they left no room).
	ignored bool
	// refunds: the server gives back, once a reply is written, the part
	// of its reservation the reply did not use (else it keeps counting
	// what it counted on admission: OpenAI's rule). rule holds the
	// evidence the replies gave for each rule (see learnRule).
	refunds bool
	rule    ruleEvidence
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

// use is one attempt's charge to one dimension.
type use struct {
	t   time.Time // when the server counted it (its arrival, as near as known)
	cum float64   // the dimension's cum once it was charged
	c   float64   // charged when sent: the estimate
	// adm is what the server counted on admission, fin what it counts
	// once the reply is written; both are c until the reply tells.
	adm, fin float64
	done     time.Time // when the reply came; zero while in flight
}

// n is what the server counts of u as of now, under the rule refunds.
func (u *use) n(refunds bool) float64 {
	if refunds && !u.done.IsZero() {
		return u.fin
	}
	return u.adm
}

// ticket is one attempt's charges, kept to settle them when it returns.
type ticket struct {
	charge [llm.NumDims]float64
	cum    [llm.NumDims]float64
	uses   [llm.NumDims]*use
	// forced: the dimensions whose learned limits this attempt went past,
	// having waited MaxWait for them.
	forced [llm.NumDims]bool
	model  string
}

// NewAccount returns an account with no limits known yet.
func NewAccount(o AccountOptions) *Account {
	if o.Share < 1 {
		o.Share = 1
	}
	a := &Account{o: o, changed: make(chan struct{}), now: time.Now, warned: map[string]bool{}}
	// Anthropic documents that output tokens are reserved as max_tokens
	// and corrected to the reply's; OpenAI that tokens count the prompt
	// plus max_tokens, uncorrected. Replies may prove either wrong.
	a.dims[llm.DimOutputTokens].refunds = true
	return a
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
// A wait for the limits the server states ends after maxWait (0 = none):
// the attempt then goes, and the server's answer tells whether they were
// true.
func (a *Account) acquire(ctx context.Context, charge [llm.NumDims]float64, maxWait time.Duration) (*ticket, error) {
	var waitedSince, learnedSince time.Time
	var forced [llm.NumDims]bool
	waitedFor := -1
	for {
		a.mu.Lock()
		now := a.now()
		wait, dim, learned := a.needLocked(now, &charge, &forced)
		if learned && maxWait > 0 {
			if learnedSince.IsZero() {
				learnedSince = now
			}
			if left := learnedSince.Add(maxWait).Sub(now); left <= 0 {
				// Waited long enough on the server's word: go past it.
				forced[dim] = true
				a.mu.Unlock()
				continue
			} else {
				wait = min(wait, left)
			}
		}
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
			tk := &ticket{charge: charge, forced: forced}
			for i := range a.dims {
				d := &a.dims[i]
				if charge[i] == 0 {
					continue
				}
				d.cum += charge[i]
				if d.cap > 0 {
					d.capAt = later(d.capAt, now).Add(d.capCost(charge[i]))
				}
				if p := d.paceCost(charge[i], a.o.Share); p > 0 && !forced[i] {
					// A wake-up a little late does not lose its time:
					// the pace may catch up by a twentieth of the window.
					d.paceAt = later(d.paceAt, now.Add(-d.window/20)).Add(p)
				}
				tk.cum[i] = d.cum
				u := &use{t: now, cum: d.cum, c: charge[i], adm: charge[i], fin: charge[i]}
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
// longest wait wins), and whether the wait is for a limit the server
// stated rather than a cap; 0 when it may go now. A dimension with a cap
// is paced by the cap alone: the user's figure wins over the server's.
// forced dimensions are past their learned limits.
func (a *Account) needLocked(now time.Time, charge *[llm.NumDims]float64, forced *[llm.NumDims]bool) (time.Duration, int, bool) {
	var wait time.Duration
	dim, learned := -1, false
	for i := range a.dims {
		d := &a.dims[i]
		c := charge[i]
		if c <= 0 {
			continue
		}
		d.prune(now, max(capWindow, d.window))
		if d.cap > 0 {
			if w := d.capAt.Sub(now); w > wait {
				wait, dim, learned = w, i, false
			}
			continue
		}
		if forced[i] || d.ignored {
			continue
		}
		if w := d.learnedWait(now, c, a.o.Share); w > wait {
			wait, dim, learned = w, i, true
		}
	}
	return wait, dim, learned
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
	avail := min(L, d.remaining+refill*elapsed.Seconds()) - d.spentSince()
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
		return logWait(d.log, now, d.window, min(c, budget), budget, d.refunds)
	}
	return 0
}

// spentSince is what the server counts of the charges sent after the
// request its newest word came from (the log's entries past atCum, and
// all of those pruned from it).
func (d *dimState) spentSince() float64 {
	spent := d.cum - d.atCum
	for i := len(d.log) - 1; i >= 0 && d.log[i].cum > d.atCum; i-- {
		spent -= d.log[i].c - d.log[i].n(d.refunds)
	}
	return max(spent, 0)
}

// logWait is how long until the charges logged in the last window plus c
// fit within budget. It reads only the window's entries (the log is in
// time order, near enough: an entry moves on only by its connection's
// setup).
func logWait(log []*use, now time.Time, window time.Duration, c, budget float64, refunds bool) time.Duration {
	start, sum := len(log), 0.0
	for start > 0 && now.Sub(log[start-1].t) < window {
		start--
		sum += log[start].n(refunds)
	}
	if sum+c <= budget {
		return 0
	}
	for _, u := range log[start:] {
		sum -= u.n(refunds)
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
// stated, and what the server counts of the attempt now that its usage
// is known. A request the server rejected for its rate spent no tokens,
// and its retry is charged afresh.
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
	answered := !rejected && usage != nil
	if rejected || answered && usage.PromptTokens+usage.CompletionTokens > 0 {
		// What the server counts of this attempt: on admission its
		// prompt plus the most it may write, once written what it wrote;
		// nothing when it was rejected.
		var adm, fin [llm.NumDims]float64
		if !rejected {
			in, out := float64(usage.PromptTokens), float64(usage.CompletionTokens)
			most := tk.charge[llm.DimOutputTokens]
			adm[llm.DimTokens], fin[llm.DimTokens] = in+most, in+out
			adm[llm.DimInputTokens], fin[llm.DimInputTokens] = in, in
			adm[llm.DimOutputTokens], fin[llm.DimOutputTokens] = most, out
		}
		for _, i := range []int{llm.DimTokens, llm.DimInputTokens, llm.DimOutputTokens} {
			if u := tk.uses[i]; u != nil {
				d := &a.dims[i]
				was := u.n(d.refunds)
				u.adm, u.fin, u.done = adm[i], fin[i], now
				d.moveOn(u.n(d.refunds)-was, now, a.o.Share, tk.forced[i])
			}
		}
		news = true
	}
	for _, u := range tk.uses {
		if u != nil && u.done.IsZero() {
			u.done = now
		}
	}
	for i, forced := range tk.forced {
		if d := &a.dims[i]; forced && answered && !d.ignored {
			// The server took a request its own word had held back
			// for the longest a wait may last: its word is not true.
			d.ignored = true
			reset := "no reset stated"
			if d.reset > 0 {
				reset = "reset in " + d.reset.String()
			}
			a.warnLocked(fmt.Sprint("held", i), fmt.Sprintf("%s: the server answered a request that its %s headers had held back (%g of %g left, %s); they are not believed for the rest of the run%s",
				modelName(tk.model), d.header, d.remaining, d.limit, reset, wayOut(i)))
		}
	}
	for i, w := range rl.Dims {
		if !w.Known {
			continue
		}
		d := &a.dims[i]
		if p := w.Problem(); p != "" {
			a.warnLocked(fmt.Sprint("bad", i), fmt.Sprintf("%s: %s; the %s it states are not believed%s",
				modelName(tk.model), p, llm.DimNames[i], wayOut(i)))
			continue
		}
		if d.ignored {
			continue
		}
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
		if d.known && tk.uses[i] != nil && (i == llm.DimTokens || i == llm.DimOutputTokens) {
			a.learnRule(d, w, tk.uses[i])
		}
		d.known, d.limit, d.remaining, d.reset, d.at, d.header = true, w.Limit, w.Remaining, w.Reset, at, w.HeaderName("*")
		if tk.charge[i] > 0 {
			d.atCum = tk.cum[i]
		} else {
			d.atCum = d.cum
		}
		news = true
	}
	if news {
		close(a.changed)
		a.changed = make(chan struct{})
	}
}

func modelName(name string) string {
	if name == "" {
		return "a model"
	}
	return "model " + name
}

// wayOut is what a user may set to pace dimension i by a figure of their
// own.
func wayOut(i int) string {
	switch i {
	case llm.DimRequests:
		return " (limits.rpm on the model sets a pace of your own)"
	case llm.DimTokens:
		return " (limits.tpm on the model sets a pace of your own)"
	}
	return ""
}

// warnLocked says msg once per key.
func (a *Account) warnLocked(key, msg string) {
	if a.warned[key] {
		return
	}
	a.warned[key] = true
	a.warns = append(a.warns, msg)
	if a.o.Warn != nil {
		a.o.Warn(msg)
	}
}

// moveOn moves the pacing of d on by what a charge grew by (diff > 0) or
// gives it back (diff < 0). forced: the charge went past the learned
// pace, which it did not move.
func (d *dimState) moveOn(diff float64, now time.Time, share int, forced bool) {
	if diff == 0 {
		return
	}
	if d.cap > 0 {
		if diff > 0 {
			d.capAt = later(d.capAt, now).Add(d.capCost(diff))
		} else {
			d.capAt = later(d.capAt.Add(-d.capCost(-diff)), now)
		}
	}
	if forced {
		return
	}
	if diff > 0 {
		if p := d.paceCost(diff, share); p > 0 {
			d.paceAt = later(d.paceAt, now.Add(-d.window/20)).Add(p)
		}
	} else if p := d.paceCost(-diff, share); p > 0 {
		d.paceAt = later(d.paceAt.Add(-p), now.Add(-d.window/20))
	}
}

// ruleEvidence weighs what the replies say about a token limit's rule:
// whether the server gives back, once a reply is written, what the reply
// left unused of its reservation. Each reply that states the limit is
// held against what four servers would have said given what this
// process sent: a sliding window and a refilling bucket, each keeping
// or giving back; the misses add up per server, and the rule of the
// server that missed least is taken.
type ruleEvidence struct {
	miss   [4]float64 // sliding keeps, sliding gives back, bucket keeps, bucket gives back
	spread float64    // how far apart the keeping and giving-back predictions were, in all
	n      int
}

// ruleReplies is how many replies are weighed at most: enough to know, and
// the weighing reads the whole log.
const ruleReplies = 400

// learnRule weighs the reply w to the request k against the newest word
// before it (d's).
func (a *Account) learnRule(d *dimState, w llm.RateWindow, k *use) {
	ev := &d.rule
	ak, aj := k.t, d.at
	if ev.n >= ruleReplies || d.window <= 0 || !ak.After(aj) {
		return
	}
	var slideKeep, slideBack, spent, back float64
	// What was sent before k is known by the order of sending (cum);
	// the times say only what the window still holds.
	for _, u := range d.log {
		if !u.done.IsZero() && u.done.After(aj) && !u.done.After(ak) {
			back += u.adm - u.fin
		}
		if u.cum > k.cum {
			continue
		}
		if ak.Sub(u.t) < d.window {
			slideKeep += u.adm
			if !u.done.IsZero() && !u.done.After(ak) {
				slideBack += u.fin
			} else {
				slideBack += u.adm
			}
		}
		if u.cum > d.atCum {
			spent += u.adm
		}
	}
	L := w.Limit
	rate := L / d.window.Seconds()
	if d.reset > 0 && d.remaining < d.limit {
		rate = (d.limit - d.remaining) / d.reset.Seconds() // exact for a bucket
	}
	level := d.remaining + rate*ak.Sub(aj).Seconds()
	if level > L {
		// A bucket full in between lost what it could not hold, and
		// when is not known: this reply cannot tell the rules apart.
		return
	}
	level -= spent
	pred := [4]float64{L - slideKeep, L - slideBack, level, level + back}
	for h, p := range pred {
		ev.miss[h] += math.Abs(w.Remaining - max(p, 0))
	}
	ev.spread += (pred[1] - pred[0] + pred[3] - pred[2]) / 2
	ev.n++
	if ev.n < 8 || ev.spread < L/4 {
		return // too little told the rules apart yet
	}
	best := 0
	for h := range ev.miss {
		if ev.miss[h] < ev.miss[best] {
			best = h
		}
	}
	if refunds := best%2 == 1; refunds != d.refunds {
		// What the last window's replies count changes with the rule.
		now := a.now()
		diff := 0.0
		for _, u := range d.log {
			if now.Sub(u.t) < d.window {
				diff += u.n(refunds) - u.n(d.refunds)
			}
		}
		d.refunds = refunds
		d.moveOn(diff, now, a.o.Share, false)
	}
}

// DimStats is one dimension of an AccountStats.
type DimStats struct {
	Learned float64       // the limit the provider states (0 = not stated)
	Window  time.Duration // the longest reset it has stated: its window as far as known
	Cap     float64       // the user's cap per minute (0 = none)
	// Used is what this process spent in the last window (Window, or the
	// cap's minute) as the server counts it, Budget what it may spend
	// there: the cap where there is one, else the learned limit ÷ Share,
	// less neither margin.
	Used, Budget float64
	// Bound: a request waited for this dimension within the last window.
	Bound    bool
	BoundFor time.Duration // all the time requests waited for it
	// Refunds: the server is taken to give back what a reply leaves
	// unused of its reservation (else it counts the reservation whole).
	Refunds bool
	// Ignored: the server's headers for this limit are not believed.
	Ignored bool
}

// AccountStats is a snapshot of what an Account knows and spends.
type AccountStats struct {
	Share    int
	Dims     [llm.NumDims]DimStats
	Warnings []string // each said once, in order
}

// Stats returns a snapshot.
func (a *Account) Stats() AccountStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	s := AccountStats{Share: a.o.Share, Warnings: append([]string(nil), a.warns...)}
	for i := range a.dims {
		d := &a.dims[i]
		ds := DimStats{Cap: d.cap, Window: d.window, BoundFor: d.boundFor, Refunds: d.refunds, Ignored: d.ignored}
		win := capWindow
		if d.known {
			ds.Learned = d.limit
		}
		switch {
		case d.cap > 0:
			ds.Budget = d.cap
		case d.known && !d.ignored:
			ds.Budget = d.limit / float64(a.o.Share)
			if d.window > 0 {
				win = d.window
			}
		}
		for _, u := range d.log {
			if now.Sub(u.t) < win {
				ds.Used += u.n(d.refunds)
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
