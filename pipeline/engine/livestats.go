package engine

import (
	"strings"
	"sync/atomic"

	"github.com/promoral/promoral/pipeline/spec"
)

// liveStats are the progress counters that tell live work from journal
// replays: a case whose replies all come from the journal finishes in
// microseconds and says nothing about how long the rest of a run takes.
// Judge models have their own cases: the cases they judge.
type liveStats struct {
	// Live counts finished cases that made at least one new model call, or
	// none at all (re-scoring recorded replies): work whose pace is real.
	Live atomic.Int64
	// JudgeTotal is the number of cases this model judges. JudgeDone counts
	// those finished, of which Judged the ones it gave a verdict on,
	// JudgeFails the ones whose judging failed, and JudgeSkipped the ones
	// never judged because the case failed before its judge ran;
	// JudgedLive counts those whose judging made a new call.
	JudgeTotal                                  int64
	JudgeDone, Judged, JudgeFails, JudgeSkipped atomic.Int64
	JudgedLive                                  atomic.Int64
	// Duplicates counts the calls (of those Cached counts) served by the
	// reply this apply got for an identical request: sent once, used
	// again, never a journal hit from an earlier apply.
	Duplicates atomic.Int64
	// Retried counts failed attempts that were sent again (a 429, a 5xx, a
	// timeout): not errors of a case, but failures all the same.
	Retried atomic.Int64
	// NoPrice: the model has no price, so its cost is unknown (not $0).
	NoPrice bool
	// shares are the model's work by strategy and role, for the calls
	// still to make (CallsLeft).
	shares map[string]*workShare
	// rate is the model's Doer where it paces against rate limits.
	rate RateStatter
}

// shareKey names a model's work of one kind: a strategy, as subject or as
// judge.
func shareKey(s *spec.Strategy, judge bool) string {
	if judge {
		return "judge:" + s.Name
	}
	return s.Name
}

// workShare is one strategy's cases for a model (as subject or as judge)
// and the calls they made.
type workShare struct {
	cases       int64
	best, worst int // calls per case on the shortest path and at most
	done, calls atomic.Int64
}

// perCase is the calls a case of this share makes: as measured once one
// has finished, else halfway between its fewest and its most.
func (w *workShare) perCase() float64 {
	if d := w.done.Load(); d > 0 {
		return float64(w.calls.Load()) / float64(d)
	}
	return float64(w.best+w.worst) / 2
}

// CallsLeft estimates the calls this model still has to make, over every
// strategy it runs or judges: the cases left times the calls per case.
// Cases differ by strategy (one call, or a loop of several), so the time
// left follows calls, not cases.
func (m *ModelStats) CallsLeft() float64 {
	if len(m.shares) == 0 { // sized by cases only: a call each
		return float64(max(0, m.Total-m.Done.Load()) + max(0, m.JudgeTotal-m.JudgeDone.Load()))
	}
	left := 0.0
	for _, w := range m.shares {
		if n := w.cases - w.done.Load(); n > 0 {
			left += float64(n) * w.perCase()
		}
	}
	return left
}

// JournalHits is the calls served by replies an earlier apply journaled.
func (m *ModelStats) JournalHits() int64 { return m.Cached.Load() - m.Duplicates.Load() }

// NewCalls is the calls this model made that were neither journal replays
// nor shared with an identical request: the work whose pace is real.
func (m *ModelStats) NewCalls() int64 { return m.Calls.Load() - m.Cached.Load() }

func (m *ModelStats) share(s *spec.Strategy, judge bool) *workShare {
	w := m.shares[shareKey(s, judge)]
	if w == nil {
		sh := spec.ShapeOf(s)
		m.Expect(shareKey(s, judge), 0, sh.Best, sh.Worst)
		w = m.shares[shareKey(s, judge)]
	}
	return w
}

// Expect adds cases of one kind (a strategy, as subject or judge) that
// make best to worst calls each. The engine sizes its models so before a
// run; tests of the display may too.
func (m *ModelStats) Expect(kind string, cases int64, best, worst int) {
	if m.shares == nil {
		m.shares = map[string]*workShare{}
	}
	w := m.shares[kind]
	if w == nil {
		w = &workShare{best: best, worst: worst}
		m.shares[kind] = w
	}
	w.cases += cases
}

// Finished counts a finished case of a kind and the calls it made.
func (m *ModelStats) Finished(kind string, calls int) {
	if w := m.shares[kind]; w != nil {
		w.done.Add(1)
		w.calls.Add(int64(calls))
	}
}

// Rate is what the model's transport says of its rate limits (zero when
// it has none: scripted models, batch, offline).
func (l *liveStats) Rate() RateStats {
	if l.rate == nil {
		return RateStats{}
	}
	return l.rate.RateStats()
}

// addJudges gives each judge model its share of cases and puts judge-only
// models in the progress display, whose calls, tokens and cost would
// otherwise be invisible; it also sizes every model's work by strategy.
func (e *Engine) addJudges() {
	for _, c := range e.study.Cells {
		n := int64(len(c.Task.Items))
		e.stats[c.Model].share(c.Strategy, false).cases += n
		if j := c.Task.Judge; j != nil && e.stats[j.Model] != nil {
			e.stats[j.Model].JudgeTotal += n
			e.stats[j.Model].share(j.Strategy, true).cases += n
		}
	}
	for _, m := range e.study.Models {
		e.stats[m].NoPrice = m.Unpriced()
		if st := e.stats[m]; st.Total == 0 && st.JudgeTotal > 0 {
			e.order = append(e.order, st)
		}
	}
}

// noteCase counts a finished case towards live speed and its judge.
func (e *Engine) noteCase(c *spec.Case, r *spec.Result) {
	st := e.stats[c.Model]
	if r.Acct.Calls > r.Acct.CachedCalls || r.Acct.Calls == 0 && r.Err == "" {
		st.Live.Add(1)
	}
	st.Finished(shareKey(c.Strategy, false), r.Acct.Calls)
	if j := c.Task.Judge; j != nil && e.stats[j.Model] != nil {
		js := e.stats[j.Model]
		switch {
		case r.Judge != nil:
			js.Judged.Add(1)
		case e.judgeFailed(c, r):
			js.JudgeFails.Add(1)
		default:
			js.JudgeSkipped.Add(1)
		}
		js.JudgeDone.Add(1)
		if r.JudgeAcct.Calls > r.JudgeAcct.CachedCalls {
			js.JudgedLive.Add(1)
		}
		js.Finished(shareKey(j.Strategy, true), r.JudgeAcct.Calls)
	}
}

// noteCopied counts a case taken whole from the earlier results (a finished,
// judged case) for its model and its judge.
func (e *Engine) noteCopied(cell int, calls int) {
	c := e.study.Cells[cell]
	st := e.stats[c.Model]
	st.Done.Add(1)
	st.Finished(shareKey(c.Strategy, false), calls)
	if j := c.Task.Judge; j != nil && e.stats[j.Model] != nil {
		js := e.stats[j.Model]
		js.Judged.Add(1)
		js.JudgeDone.Add(1)
		js.Finished(shareKey(j.Strategy, true), 0)
	}
}

// judgeFailed: the case failed at its judge, not before, and the judge
// model has a line of its own that counts the failure.
func (e *Engine) judgeFailed(c *spec.Case, r *spec.Result) bool {
	j := c.Task.Judge
	return j != nil && e.stats[j.Model] != nil && strings.HasPrefix(r.Err, "judge: ")
}
