package pipeline

import (
	"fmt"
)

// dryRun renders every template of every matrix cell against the cell's
// first item, with example outputs standing in for earlier stages, so a
// template that names a missing field fails before any model call.
func dryRun(st *Study, ds *Diags) {
	type key struct{ m, s, t string }
	seen := map[key]bool{}
	for _, c := range st.Cells {
		k := key{c.Model.Name, c.Strategy.Name, c.Task.Name}
		if seen[k] || len(c.Task.Items) == 0 {
			continue
		}
		seen[k] = true
		env := SampleEnv(c.Model, c.Strategy, c.Task, &c.Task.Items[0])
		taskEnv, err := c.Task.env(env)
		if err != nil {
			ds.Addf(c.Task.File, c.Task.Spec.Line, "blocks", "", "item %s: %v", c.Task.Items[0].ID, err)
			continue
		}
		env["task"] = taskEnv
		checkNodes(ds, c.Strategy, c.Model, c.Task, env)
		if j := c.Task.Judge; j != nil {
			jenv := SampleEnv(j.Model, j.Strategy, c.Task, &c.Task.Items[0])
			jenv["task"] = taskEnv
			subject := map[string]any{"model": c.Model.Name, "strategy": c.Strategy.Name}
			for _, name := range c.Strategy.OutputNames() {
				subject[name] = ""
			}
			jenv["subject"] = subject
			checkNodes(ds, j.Strategy, j.Model, c.Task, jenv)
		}
	}
}

func checkNodes(ds *Diags, s *Strategy, m *Model, t *Task, env map[string]any) {
	for _, n := range s.Nodes {
		ch, ok := n.Stage.(Checker)
		if !ok {
			continue
		}
		if err := ch.Check(t, env); err != nil {
			ds.Addf(s.Spec.File, n.Base.Line, fmt.Sprintf("stages[%s]", n.Base.Name),
				"the template reads a field this item, task or model does not have",
				"with model %s, task %s, item %s: %v", m.Name, t.Name, t.Items[0].ID, err)
		}
	}
}

// SampleEnv is a case environment for one item with example stage outputs,
// for dry runs, plans and rendering prompts for review.
func SampleEnv(m *Model, s *Strategy, t *Task, it *Item) map[string]any {
	stages := map[string]any{}
	visits := map[string]any{}
	for _, n := range s.Nodes {
		out := map[string]any{}
		if sp, ok := n.Config.(Sampler); ok {
			for k, v := range sp.Sample() {
				out[k] = v
			}
		}
		stages[n.Base.Name] = out
		visits[n.Base.Name] = 1
	}
	return map[string]any{
		"item": it.Fields, "stages": stages, "visits": visits, "params": s.Params,
		"model": m.Env, "strategy": map[string]any{"name": s.Name}, "subject": nil,
	}
}
