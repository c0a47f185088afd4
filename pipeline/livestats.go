package pipeline

import "sync/atomic"

// liveStats are the progress counters that tell live work from journal
// replays: a case whose replies all come from the journal finishes in
// microseconds and says nothing about how long the rest of a run takes.
// Judge models have their own cases: the cases they judge.
type liveStats struct {
	// Live counts finished cases that made at least one new model call, or
	// none at all (re-scoring recorded replies): work whose pace is real.
	Live atomic.Int64
	// JudgeTotal is the number of cases this model judges; Judged counts
	// those finished (judged, or skipped because the subject failed), and
	// JudgedLive those whose judging made a new call.
	JudgeTotal         int64
	Judged, JudgedLive atomic.Int64
	// rate is the model's Doer where it paces against rate limits.
	rate RateStatter
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
// otherwise be invisible.
func (e *Engine) addJudges() {
	for _, c := range e.study.Cells {
		if j := c.Task.Judge; j != nil && e.stats[j.Model] != nil {
			e.stats[j.Model].JudgeTotal += int64(len(c.Task.Items))
		}
	}
	for _, m := range e.study.Models {
		if st := e.stats[m]; st.Total == 0 && st.JudgeTotal > 0 {
			e.order = append(e.order, st)
		}
	}
}

// noteCase counts a finished case towards live speed and its judge.
func (e *Engine) noteCase(c *Case, r *Result) {
	if r.Acct.Calls > r.Acct.CachedCalls || r.Acct.Calls == 0 && r.Err == "" {
		e.stats[c.Model].Live.Add(1)
	}
	if j := c.Task.Judge; j != nil && e.stats[j.Model] != nil {
		js := e.stats[j.Model]
		js.Judged.Add(1)
		if r.JudgeAcct.Calls > r.JudgeAcct.CachedCalls {
			js.JudgedLive.Add(1)
		}
	}
}
