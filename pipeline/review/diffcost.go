package review

import (
	"github.com/promoral/promoral/pipeline"
	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/spec"
)

// ChangePlan is what a config change costs against a journal: the cases it
// invalidates (answered under the old config, not under the new) and adds
// (in no cell of the old config), per model with their calls and cost; and,
// apart, the cases neither config has answered yet, which the change did
// not cause.
type ChangePlan struct {
	Journal     string
	Invalidated int
	Added       int
	// Models are the change's work per model: Cases is the cases it
	// invalidates or adds, Calls* and Cost* what running them takes.
	Models  []PlanRow
	Total   PlanRow
	Pending PlanRow // work neither config has done: not the change's
	// SharedCases are the new config's cases that finish on replies of
	// the shared response cache (SharedCache), not yet in the journal:
	// free, as in plan (apply copies them into the journal); SharedCalls
	// counts those replies.
	SharedCases, SharedCalls int
	SharedCache              string
}

// MakeChangePlan compares two studies against the journal in dir without a
// call. A case is known by its id (model/strategy/task/item); it is done
// when its strategy graph finishes on journaled replies (a judged task's
// judge is not planned, as in MakePlan).
func MakeChangePlan(old, new *spec.Study, dir string) (*ChangePlan, error) {
	jpath := dir + "/journal.jsonl"
	j, err := journal.OpenReadOnly(jpath)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	hist := completionHistory(j)
	// The journal, then the shared cache the new config's apply reads: a
	// reply there is not paid again.
	src := pipeline.NewReplySource(new, j)
	oldCases := map[string]*spec.Case{}
	old.EachCase(func(c *spec.Case) bool {
		cc := *c
		oldCases[c.ID()] = &cc
		return true
	})
	cp := &ChangePlan{Journal: jpath}
	rows := map[*spec.Model]*PlanRow{}
	for _, m := range new.Models {
		rows[m] = &PlanRow{Model: m.Name}
	}
	cp.Pending.Model = "pending"
	shapes := map[*spec.Strategy]*spec.CallShape{}
	used := false
	cb := newCalibration()
	new.EachCase(func(c *spec.Case) bool {
		row := rows[c.Model]
		before := src.SharedHits()
		hits, done := strategyDone(src, c)
		if done {
			if n := src.SharedHits() - before; n > 0 {
				cp.SharedCases++
				cp.SharedCalls += n
			}
			return true
		}
		sh := shapes[c.Strategy]
		if sh == nil {
			sh = spec.ShapeOf(c.Strategy)
			shapes[c.Strategy] = sh
		}
		if oc, ok := oldCases[c.ID()]; ok {
			if _, wasDone := strategyDone(src, oc); !wasDone {
				cp.Pending.Cases++
				addWork(&cp.Pending, c, sh, hits, hist, &used, cb)
				return true
			}
			cp.Invalidated++
		} else {
			cp.Added++
		}
		row.Cases++
		addWork(row, c, sh, hits, hist, &used, cb)
		return true
	})
	cp.SharedCache = src.SharedCache()
	t := &cp.Total
	t.Model = "total"
	for _, m := range new.Models {
		r := rows[m]
		if r.Cases == 0 {
			continue
		}
		cp.Models = append(cp.Models, *r)
		t.Cases += r.Cases
		t.CallsBest += r.CallsBest
		t.CallsWorst += r.CallsWorst
		t.CostBest += r.CostBest
		t.CostWorst += r.CostWorst
	}
	return cp, nil
}

// strategyDone walks a case's strategy graph on journaled (or shared
// cache) replies only.
func strategyDone(src *pipeline.ReplySource, c *spec.Case) (hits int, done bool) {
	hits, err := pipeline.WalkCase(src, c)
	return hits, err == nil
}
