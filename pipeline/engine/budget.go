package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// The spend cap (apply --max-cost, settings.max_cost) bounds what one apply
// pays. Before a request is sent the engine reserves its worst case: its
// prompt at one token per byte (a byte-level tokenizer never makes more
// tokens than bytes; 16 tokens per message and 64 per request cover the
// chat markup) plus everything the request lets the model write (max_tokens,
// or DefaultReplyTokens where it sets none, plus the thinking budget), both
// times the samples, at the model's input and output prices (the higher of
// live and batch prices for a model in batch mode, which may fall back to
// live calls). A request goes out only while spent + the reservations of the
// calls in flight + its own stay within the cap; the first one that does not
// fit stops the apply from sending anything more. What a reply was billed
// moves from reserved to spent when it arrives (a reply the engine rejects
// and retries is billed too, and its retry needs room again). So the apply
// never pays more than the cap as long as no provider bills past the
// request's own bounds.
//
// The cap counts from zero in each apply: it bounds what the command about
// to run can spend, which is what a person typing it can weigh. Replies the
// journal holds cost nothing to reuse, so apply again with the same cap
// continues where the last one stopped and spends at most the cap on what is
// still missing.

// errCapped stops a case at the spend cap. It reads as an interruption:
// the case has no result in this apply and the next apply continues it.
var errCapped = fmt.Errorf("the spend cap is reached: %w", errInterrupted)

// budget is one apply's spend cap; nil means none.
type budget struct {
	cap     float64
	mu      sync.Mutex
	spent   float64
	held    float64
	stopped bool
	refused int
}

func newBudget(capUSD float64) *budget {
	if capUSD <= 0 {
		return nil
	}
	return &budget{cap: capUSD}
}

// fits allows for float rounding of sums of many small prices.
func (b *budget) fits(x float64) bool { return x <= b.cap*(1+1e-12) }

// reserve holds w for a call about to be sent, or refuses it (and every
// later call) when it does not fit. A call that costs nothing is never
// refused.
func (b *budget) reserve(w float64) bool {
	if b == nil || w <= 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || !b.fits(b.spent+b.held+w) {
		b.stopped = true
		b.refused++
		return false
	}
	b.held += w
	return true
}

// pay records what an attempt's reply was billed; it reports whether a
// further attempt of the same call (still holding its reservation) fits.
func (b *budget) pay(c float64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent += c
	if !b.fits(b.spent + b.held) {
		b.stopped = true
		return false
	}
	return true
}

// release ends a call's reservation.
func (b *budget) release(w float64) {
	if b == nil || w <= 0 {
		return
	}
	b.mu.Lock()
	b.held -= w
	b.mu.Unlock()
}

func (b *budget) hit() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// WorstCost is the most one request can be billed (see the comment at the
// top of this file); batched: the model's calls may go out at batch prices
// or live ones.
func WorstCost(m *spec.Model, req *llm.Request, batched bool) float64 {
	in := 64
	for _, msg := range req.Messages {
		in += len(msg.Content) + len(msg.Role) + 16
	}
	out := req.MaxTokens
	if out <= 0 {
		out = llm.DefaultReplyTokens
	}
	if req.Thinking.Enabled || req.Thinking.Effort != "" {
		b := req.Thinking.Budget
		if b <= 0 {
			b = llm.DefaultReplyTokens
		}
		out += b
	}
	// A provider without n sends one request per sample, each billing the
	// prompt again.
	in *= req.Samples()
	out *= req.Samples()
	u := llm.Usage{PromptTokens: in, CompletionTokens: out}
	p := m.Spec.Price
	c := p.Cost(u)
	if batched {
		c = max(c, p.Batch().Cost(u))
	}
	return c
}

// capStop sums up an apply the cap stopped.
func (e *Engine) capStop(done func(ordinal int) bool) *manifest.CapStop {
	b := e.budget
	b.mu.Lock()
	cs := &manifest.CapStop{CapUSD: b.cap, SpentUSD: b.spent, Refused: b.refused}
	b.mu.Unlock()
	by := map[string]int{}
	e.study.EachCase(func(c *spec.Case) bool {
		if !done(c.Ordinal) {
			cs.NotDone++
			by[c.Model.Name]++
			if cs.Example == "" {
				cs.Example = c.ID()
			}
		}
		return true
	})
	for m, n := range by {
		cs.ByModel = append(cs.ByModel, manifest.ModelCases{Model: m, Cases: n})
	}
	sort.Slice(cs.ByModel, func(i, j int) bool { return cs.ByModel[i].Model < cs.ByModel[j].Model })
	return cs
}

func describeCap(cs *manifest.CapStop, b *strings.Builder, s *Summary) {
	fmt.Fprintf(b, "%s: stopped at the spend cap of $%.4f after %d of %d cases; %d calls (%d new, %d cached), %d errors, %d unparsed, $%.4f billed for new calls",
		s.Run, cs.CapUSD, s.Cases, s.CasesPlanned, s.CallsNew+s.CallsCached, s.CallsNew, s.CallsCached, s.Errors, s.Unparsed, cs.SpentUSD)
	var by []string
	for _, m := range cs.ByModel {
		by = append(by, fmt.Sprintf("%s %d", m.Model, m.Cases))
	}
	fmt.Fprintf(b, "\n  %s left (%s), e.g. %s: the worst case of the next call would have passed the cap, so %s not sent",
		spec.Plural(cs.NotDone, "case", "cases"), strings.Join(by, ", "), cs.Example, spec.Plural(cs.Refused, "call was", "calls were"))
	fmt.Fprintf(b, "\n  nothing was written to %s (the earlier outputs stand); every reply paid for is journaled: apply again continues, and its cap counts from zero", s.OutDir)
}

// describeSelection notes an apply of part of the study.
func (s *Summary) describeSelection(b *strings.Builder) {
	if !s.Selection.Partial() {
		return
	}
	fmt.Fprintf(b, "\n  partial: %s; its metrics describe these cases only, not the study (metrics.parquet column selection)", s.Selection.Describe())
	if s.LastComplete != "" && s.Errors+s.Kept == 0 {
		fmt.Fprintf(b, "\n  the last outputs of the whole study are kept in %s; apply without the selection brings them back from the journal", s.LastComplete)
	}
}
