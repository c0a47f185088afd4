package review

import (
	"github.com/promoral/promoral/pipeline/engine"
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
// when its strategy graph finishes on journaled replies. What a case still
// needs is costed as plan costs it (costModel): a judged task's cases carry
// their judge's calls, on the judge model's row, and a model in batch mode
// is priced at batch prices. A nil old is the empty config: every case of
// new is added, and the change costs what plan says new costs.
func MakeChangePlan(old, new *spec.Study, dir string) (*ChangePlan, error) {
	jpath := dir + "/journal.jsonl"
	j, err := journal.OpenReadOnly(jpath)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	// The journal, then the shared cache the new config's apply reads: a
	// reply there is not paid again.
	src := engine.NewReplySource(new, j)
	cm := newCostModel(src, completionHistory(j), PlanOptions{})
	oldCases := map[string]*spec.Case{}
	if old != nil {
		old.EachCase(func(c *spec.Case) bool {
			cc := *c
			oldCases[c.ID()] = &cc
			return true
		})
	}
	cp := &ChangePlan{Journal: jpath}
	rows := map[*spec.Model]*PlanRow{}
	for _, m := range new.Models {
		rows[m] = &PlanRow{Model: m.Name, Mode: spec.ModeLive}
		if cm.o.BatchMode(m) {
			rows[m].Mode = spec.ModeBatch
		}
	}
	cp.Pending.Model = "pending"
	new.EachCase(func(c *spec.Case) bool {
		row := rows[c.Model]
		var jrow *PlanRow
		if jd := c.Task.Judge; jd != nil {
			jrow = rows[jd.Model]
		}
		before := src.SharedHits()
		hits, done := cm.walk(c)
		if done {
			if n := src.SharedHits() - before; n > 0 {
				cp.SharedCases++
				cp.SharedCalls += n
			}
			return true
		}
		if oc, ok := oldCases[c.ID()]; ok {
			if _, wasDone := cm.walk(oc); !wasDone {
				cp.Pending.Cases++
				cm.add(c, hits, &cp.Pending, &cp.Pending)
				return true
			}
			cp.Invalidated++
		} else {
			cp.Added++
		}
		row.Cases++
		cm.add(c, hits, row, jrow)
		return true
	})
	cp.SharedCache = src.SharedCache()
	t := &cp.Total
	t.Model = "total"
	for _, m := range new.Models {
		r := rows[m]
		if r.Cases == 0 && r.CallsWorst == 0 {
			continue
		}
		cp.Models = append(cp.Models, *r)
		t.sum(r)
	}
	return cp, nil
}
