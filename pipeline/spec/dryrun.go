package spec

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// dryRun renders every template of every matrix cell (and checks what
// extract stages read) against the cell's items, with example outputs
// standing in for earlier stages, so a template that names a field some item
// lacks fails validation instead of that item's case. Items are checked one
// per itemShape (the set of fields an item has): every item's fields are
// covered at the cost of a handful of renders.
func dryRun(st *Study, ds *yamlstrict.Diags) {
	type key struct{ m, s, t string }
	seen := map[key]bool{}
	reported := map[string]bool{} // one report per stage or output, whichever item shows it first
	for _, c := range st.Cells {
		k := key{c.Model.Name, c.Strategy.Name, c.Task.Name}
		if seen[k] || c.Task.faulty || len(c.Task.Items) == 0 || c.Task.Data != nil && c.Task.Data.Pending {
			continue
		}
		seen[k] = true
		for _, sh := range c.Task.shapes() {
			it := &c.Task.Items[sh.first]
			env := sampleEnv(c.Model, c.Strategy, c.Task, it)
			taskEnv, err := c.Task.Env(env)
			if err != nil {
				if r := c.Task.File + " blocks"; !reported[r] {
					reported[r] = true
					ds.Addf(c.Task.File, c.Task.Spec.Line, "blocks", "a block reads a field this item does not have", "item %s%s: %v", it.ID, sh.others(), err)
				}
				continue
			}
			env["task"] = taskEnv
			checkNodes(ds, c.Strategy, c.Model, c.Task, it, sh, env, reported)
			if j := c.Task.Judge; j != nil && j.Model != nil && j.Strategy != nil {
				jenv := sampleEnv(j.Model, j.Strategy, c.Task, it)
				jenv["task"] = taskEnv
				subject := map[string]any{"model": c.Model.Name, "strategy": c.Strategy.Name}
				for _, name := range c.Strategy.OutputNames() {
					subject[name] = ""
				}
				jenv["subject"] = subject
				checkNodes(ds, j.Strategy, j.Model, c.Task, it, sh, jenv, reported)
			}
		}
	}
}

// itemShape is a set of item fields and the items that have exactly those.
type itemShape struct {
	first, count int
}

func (s itemShape) others() string {
	if s.count <= 1 {
		return ""
	}
	return fmt.Sprintf(" (and %d more item(s) with the same fields)", s.count-1)
}

// shapes groups the task's items by the fields they have, in item order.
func (t *Task) shapes() []itemShape {
	t.shapeOnce.Do(func() {
		idx := map[string]int{}
		keys := make([]string, 0, 16)
		for i := range t.Items {
			var sig string
			if src := t.Items[i].src; src != nil {
				sig = src.shape
			} else { // an item built by hand
				keys = keys[:0]
				for k := range t.Items[i].Values() {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				sig = strings.Join(keys, "\x00")
			}
			if j, ok := idx[sig]; ok {
				t.shapeList[j].count++
				continue
			}
			idx[sig] = len(t.shapeList)
			t.shapeList = append(t.shapeList, itemShape{first: i, count: 1})
		}
	})
	return t.shapeList
}

func checkNodes(ds *yamlstrict.Diags, s *Strategy, m *Model, t *Task, it *Item, sh itemShape, env map[string]any, reported map[string]bool) {
	for _, n := range s.Nodes {
		ch, ok := n.Stage.(Checker)
		if !ok {
			continue
		}
		if s.broken[n.Base.Name] {
			continue // reported already
		}
		err := ch.Check(t, env)
		r := s.Spec.File + "\x00" + n.Base.Name
		if err == nil || reported[r] || s.readsBroken(n, err) {
			continue
		}
		reported[r] = true
		ds.Addf(s.Spec.File, n.Base.Line, fmt.Sprintf("stages[%s]", n.Base.Name),
			"the stage reads a field this item, task or model does not have, or a value of another type",
			"with model %s, task %s, item %s%s: %v", m.Name, t.Name, it.ID, sh.others(), err)
	}
}

// sampleEnv is a case environment for one item with example stage outputs,
// for dry runs, plans and rendering prompts for review.
func sampleEnv(m *Model, s *Strategy, t *Task, it *Item) map[string]any {
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
		"item": it.Values(), "stages": stages, "visits": visits, "params": s.Params,
		"model": m.Env, "strategy": map[string]any{"name": s.Name}, "subject": nil,
	}
}

// PromptEnv is SampleEnv with the task's wording blocks rendered in as
// .task, as a prompt stage sees them; without .task when a block cannot be
// rendered for this item. Plan sizes prompts on it; diff renders them.
func PromptEnv(m *Model, s *Strategy, t *Task, it *Item) map[string]any {
	env := sampleEnv(m, s, t, it)
	if te, err := t.Env(env); err == nil {
		env["task"] = te
	}
	return env
}

// exprFields lists the fields an expression reads directly under root
// (root.<field> or root["field"]), e.g. the item fields of item.reply.
func exprFields(p *vm.Program, root string) []string {
	if p == nil {
		return nil
	}
	v := &fieldRefs{root: root}
	node := p.Node()
	ast.Walk(&node, v)
	return v.refs
}

type fieldRefs struct {
	root string
	refs []string
}

func (v *fieldRefs) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != v.root {
		return
	}
	if s, ok := m.Property.(*ast.StringNode); ok {
		v.refs = append(v.refs, s.Value)
	}
}

// CheckFields reports the first field an expression reads under root that
// env's root mapping lacks: a typo there reads nothing at run time (expr
// gives nil for a missing key), which no error would ever show.
func CheckFields(p *vm.Program, env map[string]any, roots ...string) error {
	for _, root := range roots {
		m, ok := env[root].(map[string]any)
		if !ok {
			continue
		}
		for _, f := range exprFields(p, root) {
			if _, has := m[f]; !has {
				names := make([]string, 0, len(m))
				for k := range m {
					names = append(names, k)
				}
				sort.Strings(names)
				return fmt.Errorf("reads %s.%s, which is not there (%s has: %s)", root, f, root, strings.Join(names, ", "))
			}
		}
	}
	return nil
}

// readsBroken tells whether a stage's failed check may follow from a stage
// of the strategy that did not compile (and is reported already): the
// error, the stage's own fields or its template files name it as
// stages.<name>, visits.<name> or a quoted "<name>". Such a stage is
// checked once the other one compiles.
func (s *Strategy) readsBroken(n *Node, err error) bool {
	if len(s.broken) == 0 {
		return false
	}
	var src strings.Builder
	src.WriteString(err.Error())
	if b, merr := yaml.Marshal(n.Config); merr == nil {
		src.Write(b)
	}
	if tf, ok := n.Config.(interface{ TemplateFiles() []string }); ok && s.promptsDir != "" {
		for _, f := range tf.TemplateFiles() {
			if b, rerr := os.ReadFile(promptFile(s.promptsDir, f)); rerr == nil {
				src.Write(b)
			}
		}
	}
	text := src.String()
	for name := range s.broken {
		q := regexp.QuoteMeta(name)
		if regexp.MustCompile(`(stages|visits)\s*\.\s*` + q + `\b|["'\x60]` + q + `["'\x60]`).MatchString(text) {
			return true
		}
	}
	return false
}
