package review

import (
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
)

// costModel is the one account of what a case still costs, which plan and
// diff both use: a case walks its strategy graph on the journal (and the
// shared cache); what it still needs is its own calls at its model's price
// and, for a judged task, the judge's calls at the judge model's price, in
// live or batch mode as apply would send them. Prices are apply's
// (spec.Price), and a model without one is unpriced, as apply's $?.
type costModel struct {
	src      *engine.ReplySource
	hist     map[string]*stageStats
	o        PlanOptions
	shapes   map[*spec.Strategy]*spec.CallShape
	usedHist bool
	cb       *calibration
}

func newCostModel(src *engine.ReplySource, hist map[string]*stageStats, o PlanOptions) *costModel {
	return &costModel{src: src, hist: hist, o: o, shapes: map[*spec.Strategy]*spec.CallShape{}, cb: newCalibration()}
}

// shape is a strategy's calls per case, computed once.
func (cm *costModel) shape(s *spec.Strategy) *spec.CallShape {
	sh := cm.shapes[s]
	if sh == nil {
		sh = spec.ShapeOf(s)
		cm.shapes[s] = sh
	}
	return sh
}

// walk walks a case on journaled replies: the calls served, and whether it
// would finish without a new call (planWalk).
func (cm *costModel) walk(c *spec.Case) (hits int, done bool) {
	hits, done, _ = planWalk(cm.src, c)
	return hits, done
}

// add adds what an unfinished case still needs: its own calls past the
// hits the journal serves to own, its judge's calls to judge.
func (cm *costModel) add(c *spec.Case, hits int, own, judge *PlanRow) {
	addWork(own, c, cm.shape(c.Strategy), hits, cm.hist, &cm.usedHist, cm.cb, cm.o.BatchMode(c.Model))
	if jd := c.Task.Judge; jd != nil && jd.Model != nil && jd.Strategy != nil && judge != nil {
		// The judged reply is not known before the run, so the judge's
		// calls are always work.
		jc := &spec.Case{Ordinal: c.Ordinal, Cell: c.Cell, Model: jd.Model, Strategy: jd.Strategy, Task: c.Task, Item: c.Item, Repeat: c.Repeat}
		addWork(judge, jc, cm.shape(jd.Strategy), 0, cm.hist, &cm.usedHist, cm.cb, cm.o.BatchMode(jd.Model))
	}
}

// addWork adds the calls, tokens and cost a case still needs to a row, at
// batch prices when batch is set.
func addWork(row *PlanRow, c *spec.Case, sh *spec.CallShape, hits int, hist map[string]*stageStats, usedHist *bool, cb *calibration, batch bool) {
	if sh.Worst == 0 {
		return
	}
	best, worst := sh.Best-hits, sh.Worst-hits
	if best < 1 && sh.Best > 0 {
		best = 1 // an unfinished case makes at least one more call
	}
	best = max(best, 0)
	if worst < best {
		worst = best
	}
	row.CallsBest += best
	row.CallsWorst += worst
	if worst > 0 && c.Model.Unpriced() {
		row.Unpriced = true
	}
	in, outBest, outWorst, fromHist := estimateCase(c, sh, hist, cb)
	*usedHist = *usedHist || fromHist
	// Scale the whole-case estimates to the calls still to make.
	fb := float64(best) / float64(max(sh.Best, 1))
	fw := float64(worst) / float64(max(sh.Worst, 1))
	ib, iw := int(float64(in.best)*fb), int(float64(in.worst)*fw)
	ob, ow := int(float64(outBest)*fb), int(float64(outWorst)*fw)
	row.InputTokensBest += ib
	row.InputTokensWorst += iw
	row.OutputTokensBest += ob
	row.OutputTokensWorst += ow
	live := c.Model.Spec.Price
	price := live
	if batch {
		price = live.Batch()
	}
	row.CostBest += price.Cost(llm.Usage{PromptTokens: ib, CompletionTokens: ob})
	row.CostWorst += price.Cost(llm.Usage{PromptTokens: iw, CompletionTokens: ow})
	row.LiveCostBest += live.Cost(llm.Usage{PromptTokens: ib, CompletionTokens: ob})
	row.LiveCostWorst += live.Cost(llm.Usage{PromptTokens: iw, CompletionTokens: ow})
}

// sum adds a row's work to a total.
func (t *PlanRow) sum(r *PlanRow) {
	t.Cases += r.Cases
	t.CasesDone += r.CasesDone
	t.CallsJournaled += r.CallsJournaled
	t.CallsBest += r.CallsBest
	t.CallsWorst += r.CallsWorst
	t.InputTokensBest += r.InputTokensBest
	t.InputTokensWorst += r.InputTokensWorst
	t.OutputTokensBest += r.OutputTokensBest
	t.OutputTokensWorst += r.OutputTokensWorst
	t.CostBest += r.CostBest
	t.CostWorst += r.CostWorst
	t.LiveCostBest += r.LiveCostBest
	t.LiveCostWorst += r.LiveCostWorst
	t.Unpriced = t.Unpriced || r.Unpriced
}
