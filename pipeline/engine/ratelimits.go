package engine

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/promoral/promoral/pipeline/providers"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
)

// RateOptions say how a run's models share the rate limits of their
// accounts.
type RateOptions struct {
	// Concurrency is the default of limits.concurrency.
	Concurrency int
	// Share: this process takes 1/Share of each limit the providers state
	// (apply --shard k/N sets N unless --shard-rate whole); 0 or 1 = all.
	Share int
	// Log receives, once each, the warnings of the accounts: rate-limit
	// headers not believed (nil = none; RateStats keeps them too).
	Log io.Writer
}

// accounts holds one transport.Account per API key and endpoint, so that
// the model entries on one key pace together from one budget.
type accounts struct {
	o  RateOptions
	mu sync.Mutex
	m  map[string]*transport.Account
}

// AccountKey names the account a model's calls are charged to: its
// provider, its endpoint and the variable its key comes from (never the
// key). Entries that agree on all three share their limits.
func AccountKey(ms *spec.ModelSpec) string {
	keyVar := ms.KeyEnv
	if keyVar == "" {
		keyVar = providers.DefaultKeyVar(ms.Provider, ms.BaseURL)
	}
	base := strings.TrimRight(ms.BaseURL, "/")
	return ms.Provider + " " + base + " " + keyVar
}

func (a *accounts) get(ms *spec.ModelSpec) *transport.Account {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := AccountKey(ms)
	acc := a.m[k]
	if acc == nil {
		o := transport.AccountOptions{Share: a.o.Share, Probe: true}
		if log := a.o.Log; log != nil {
			o.Warn = func(s string) { fmt.Fprintln(log, "promoral: warning:", s) }
		}
		acc = transport.NewAccount(o)
		a.m[k] = acc
	}
	return acc
}

// TransportsShared is the Options.Doer of a real run: retries with
// backoff, rate limits and adaptive concurrency per model (scripted,
// simulated and none models answer directly, once), with the account-wide
// limits of o: the model entries on one key and endpoint share one
// account, which paces from the limits the provider states on every reply,
// within each entry's limits.rpm and limits.tpm (the lowest cap of the
// entries wins).
func TransportsShared(o RateOptions) func(m *spec.Model) (transport.Doer, error) {
	accs := &accounts{o: o, m: map[string]*transport.Account{}}
	return func(m *spec.Model) (transport.Doer, error) {
		if m.Provider == nil {
			return nil, fmt.Errorf("model %s is not connected", m.Name)
		}
		switch m.Spec.Provider {
		case "scripted", "simulated", "none":
			return Direct{m.Provider}, nil
		}
		conc := m.Spec.Limits.Concurrency
		if conc == 0 {
			conc = o.Concurrency
		}
		count, _, _ := Tokenizer(m.Spec)
		t := transport.New(m.Provider, transport.Options{
			Name: m.Name, MaxAttempts: m.Spec.Limits.MaxAttempts, BaseBackoff: m.Spec.Limits.Backoff,
			RPM: m.Spec.Limits.RPM, TPM: m.Spec.Limits.TPM, Concurrency: conc,
			Account: accs.get(m.Spec), CountTokens: count,
		})
		return transportDoer{t}, nil
	}
}

// RateStats is what a model's transport says of its rate limits, for
// progress and the summary.
type RateStats struct {
	RateLimited int64 // attempts answered 429 (rate, not quota)
	Attempts    int64
	// Limiting names the limit the model waited for within its last
	// window ("tokens per minute"), with the share of its budget the
	// window used; empty when it was not bound by a limit.
	Limiting string
	Used     float64
	Share    int // 1/Share of each stated limit is this process's
	// Warnings: rate-limit headers of the model's account not believed,
	// each once.
	Warnings []string
}

// RateStatter is implemented by Doers that pace against rate limits.
type RateStatter interface{ RateStats() RateStats }

func (d transportDoer) RateStats() RateStats {
	st := d.t.Stats()
	rs := RateStats{RateLimited: st.RateLimited, Attempts: st.Attempts, Share: st.Account.Share, Warnings: st.Account.Warnings}
	if name, used, ok := st.Account.Limiting(); ok {
		rs.Limiting, rs.Used = name, used
	}
	return rs
}

// String is the rate part of a progress or summary line: "limited by
// tokens per minute, 98 % of the limit; 3 × 429 of 1,200 attempts", or
// only the 429s, or "".
func (r RateStats) String() string { return strings.Join(r.Parts(), "; ") }

// Parts are String's clauses: what bound the model, and its 429s.
func (r RateStats) Parts() []string {
	var parts []string
	if r.Limiting != "" {
		lim := "the limit"
		if r.Share > 1 {
			lim = fmt.Sprintf("this shard's 1/%d of the limit", r.Share)
		}
		parts = append(parts, fmt.Sprintf("limited by %s, %.0f %% of %s", r.Limiting, 100*r.Used, lim))
	}
	if r.RateLimited > 0 {
		parts = append(parts, fmt.Sprintf("%d × 429 of %d attempts", r.RateLimited, r.Attempts))
	}
	return parts
}
