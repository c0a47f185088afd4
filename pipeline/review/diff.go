package review

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// ConfigDiff is a semantic comparison of two loaded studies, for review.
type ConfigDiff struct {
	Old, New *spec.Study
	Lines    []string // the readable diff, section by section
	Changed  bool
}

// DiffStudies compares two studies: models, tasks, strategies (stages,
// edges, parameters, outputs), the rendered prompts on a fixed item, the
// matrix cells, the run settings (seed, unparsed policy, ...) and the
// metric blocks (by block name).
func DiffStudies(old, new *spec.Study) *ConfigDiff {
	d := &ConfigDiff{Old: old, New: new}
	d.section("models", namesOf(old.Models, func(m *spec.Model) string { return m.Name }), namesOf(new.Models, func(m *spec.Model) string { return m.Name }),
		func(name string) []string {
			return fieldChanges(specJSON(old.Model(name).Spec), specJSON(new.Model(name).Spec))
		})
	d.section("tasks", namesOf(old.Tasks, func(t *spec.Task) string { return t.Name }), namesOf(new.Tasks, func(t *spec.Task) string { return t.Name }),
		func(name string) []string {
			ot, nt := old.Task(name), new.Task(name)
			ch := fieldChanges(specJSON(ot.Spec), specJSON(nt.Spec))
			if len(ot.Items) != len(nt.Items) {
				ch = append(ch, fmt.Sprintf("items: %d -> %d", len(ot.Items), len(nt.Items)))
			}
			return ch
		})
	d.section("strategies", namesOf(old.Strategies, func(s *spec.Strategy) string { return s.Name }), namesOf(new.Strategies, func(s *spec.Strategy) string { return s.Name }),
		func(name string) []string { return strategyChanges(old.Strategy(name), new.Strategy(name)) })
	d.prompts()
	d.cells()
	if ch := fieldChanges(specJSON(old.Run.Settings), specJSON(new.Run.Settings)); len(ch) > 0 {
		d.Changed = true
		d.add("settings:")
		for _, c := range ch {
			d.add("  ~ %s", c)
		}
	}
	blocks := func(st *spec.Study) map[string]spec.MetricConfig {
		m := map[string]spec.MetricConfig{}
		for _, mn := range st.Run.Metrics {
			if mn.Config != nil {
				m[mn.Config.Common().BlockName()] = mn.Config
			}
		}
		return m
	}
	ob, nb := blocks(old), blocks(new)
	names := func(m map[string]spec.MetricConfig) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	d.section("metric blocks", names(ob), names(nb), func(name string) []string {
		return fieldChanges(specJSON(ob[name]), specJSON(nb[name]))
	})
	return d
}

func namesOf[T any](xs []T, name func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = name(x)
	}
	return out
}

func (d *ConfigDiff) add(format string, args ...any) {
	d.Lines = append(d.Lines, fmt.Sprintf(format, args...))
}

// section lists what was added, removed and changed among named things.
func (d *ConfigDiff) section(title string, old, new []string, changes func(string) []string) {
	inOld, inNew := set(old), set(new)
	var lines []string
	for _, n := range new {
		if !inOld[n] {
			lines = append(lines, "  + "+n)
		}
	}
	for _, n := range old {
		if !inNew[n] {
			lines = append(lines, "  - "+n)
		}
	}
	for _, n := range new {
		if inOld[n] {
			if ch := changes(n); len(ch) > 0 {
				lines = append(lines, "  ~ "+n)
				for _, c := range ch {
					lines = append(lines, "      "+c)
				}
			}
		}
	}
	if len(lines) > 0 {
		d.Changed = true
		d.add("%s:", title)
		d.Lines = append(d.Lines, lines...)
	}
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// specJSON flattens a config struct to dotted YAML field paths and values
// (through its yaml tags, so paths read as the user wrote them).
func specJSON(v any) map[string]string {
	b, err := yaml.Marshal(v)
	out := map[string]string{}
	if err != nil {
		return out
	}
	var m any
	if yaml.Unmarshal(b, &m) != nil {
		return out
	}
	flatten("", m, out)
	return out
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "File" || k == "Line" {
				continue
			}
			flatten(yamlstrict.JoinPath(prefix, k), e, out)
		}
	case []any:
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	default:
		if v != nil {
			b, _ := json.Marshal(v)
			out[prefix] = string(b)
		}
	}
}

// fieldChanges lists fields whose values differ, one line each.
func fieldChanges(old, new map[string]string) []string {
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range new {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		o, okO := old[k]
		n, okN := new[k]
		switch {
		case okO && okN && o != n:
			o, n = around(o, n)
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, o, n))
		case okO && !okN:
			out = append(out, fmt.Sprintf("%s: %s -> (unset)", k, clip(o)))
		case !okO && okN:
			out = append(out, fmt.Sprintf("%s: (unset) -> %s", k, clip(n)))
		}
	}
	return out
}

// around shortens two long values to the part where they differ, so a
// one-word change in a long text is visible.
func around(a, b string) (string, string) {
	if len(a) <= 80 && len(b) <= 80 {
		return a, b
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	j := 0
	for j < len(a)-i && j < len(b)-i && a[len(a)-1-j] == b[len(b)-1-j] {
		j++
	}
	start := max(0, i-25)
	cut := func(s string) string {
		end := min(len(s), len(s)-j+25)
		out := s[start:end]
		if start > 0 {
			out = "..." + out
		}
		if end < len(s) {
			out += "..."
		}
		return out
	}
	return cut(a), cut(b)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// strategyChanges compares two strategies stage by stage.
func strategyChanges(o, n *spec.Strategy) []string {
	var out []string
	on, nn := map[string]*spec.Node{}, map[string]*spec.Node{}
	var oNames, nNames []string
	for _, x := range o.Nodes {
		on[x.Base.Name] = x
		oNames = append(oNames, x.Base.Name)
	}
	for _, x := range n.Nodes {
		nn[x.Base.Name] = x
		nNames = append(nNames, x.Base.Name)
	}
	for _, name := range nNames {
		if on[name] == nil {
			out = append(out, fmt.Sprintf("+ stage %s (%s)", name, nn[name].Base.Kind))
		}
	}
	for _, name := range oNames {
		if nn[name] == nil {
			out = append(out, fmt.Sprintf("- stage %s (%s)", name, on[name].Base.Kind))
		}
	}
	for _, name := range nNames {
		if on[name] == nil {
			continue
		}
		for _, c := range fieldChanges(specJSON(on[name].Config), specJSON(nn[name].Config)) {
			out = append(out, fmt.Sprintf("~ stage %s: %s", name, c))
		}
	}
	oe, ne := o.Edges(), n.Edges()
	for _, name := range nNames {
		if on[name] == nil {
			continue
		}
		if !reflect.DeepEqual(oe[name], ne[name]) {
			out = append(out, fmt.Sprintf("~ edges from %s: %v -> %v", name, oe[name], ne[name]))
		}
	}
	if !reflect.DeepEqual(oNames, nNames) && len(out) == 0 {
		out = append(out, fmt.Sprintf("~ stage order: %v -> %v", oNames, nNames))
	}
	for _, c := range fieldChanges(specJSON(map[string]any{"params": o.Spec.Params, "outputs": o.Spec.Outputs}),
		specJSON(map[string]any{"params": n.Spec.Params, "outputs": n.Spec.Outputs})) {
		out = append(out, "~ "+c)
	}
	return out
}

// prompts renders every prompt stage of every strategy in both studies on
// one fixed item (the first item of the strategy's first task in the
// matrix) and shows the unified text diff of what changed.
func (d *ConfigDiff) prompts() {
	type key struct{ strategy, task string }
	firstCell := func(st *spec.Study) map[string]spec.ResolvedCell {
		m := map[string]spec.ResolvedCell{}
		for _, c := range st.Cells {
			if _, ok := m[c.Strategy.Name]; !ok && len(c.Task.Items) > 0 {
				m[c.Strategy.Name] = c
			}
		}
		return m
	}
	oc, nc := firstCell(d.Old), firstCell(d.New)
	var names []string
	for n := range nc {
		names = append(names, n)
	}
	sort.Strings(names)
	var lines []string
	for _, name := range names {
		c := nc[name]
		newText := RenderPrompts(c.Model, c.Strategy, c.Task, &c.Task.Items[0])
		oldText := ""
		label := "(new strategy)"
		if o, ok := oc[name]; ok {
			// Render the old strategy on the same task and item when the old
			// study has them, so only the strategy's change shows.
			task := d.Old.Task(c.Task.Name)
			if task == nil {
				task = o.Task
			}
			item := &task.Items[0]
			for i := range task.Items {
				if task.Items[i].ID == c.Task.Items[0].ID {
					item = &task.Items[i]
				}
			}
			model := d.Old.Model(c.Model.Name)
			if model == nil {
				model = o.Model
			}
			oldText = RenderPrompts(model, o.Strategy, task, item)
			label = fmt.Sprintf("(task %s, item %s)", c.Task.Name, c.Task.Items[0].ID)
		}
		if oldText == newText {
			continue
		}
		diff := udiff.Unified("old/"+name, "new/"+name, oldText, newText)
		lines = append(lines, fmt.Sprintf("  %s %s:", name, label))
		for _, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
			lines = append(lines, "    "+l)
		}
	}
	if len(lines) > 0 {
		d.Changed = true
		d.add("rendered prompts:")
		d.Lines = append(d.Lines, lines...)
	}
}

// RenderPrompts renders every prompt stage of a strategy for one item, with
// example outputs standing in for earlier stages, as readable text.
func RenderPrompts(m *spec.Model, s *spec.Strategy, t *spec.Task, it *spec.Item) string {
	env := spec.PromptEnv(m, s, t, it)
	var b strings.Builder
	for _, n := range s.Nodes {
		cp, ok := n.Stage.(spec.CallPlanner)
		if !ok {
			continue
		}
		msgs, _, cont, err := cp.PlanCall(env)
		fmt.Fprintf(&b, "### stage %s", n.Base.Name)
		if len(cont) > 0 {
			fmt.Fprintf(&b, " (continues %s)", strings.Join(cont, " / "))
		}
		b.WriteString("\n")
		if err != nil {
			fmt.Fprintf(&b, "(cannot render: %v)\n", err)
			continue
		}
		writeMessages(&b, msgs)
	}
	return b.String()
}

func writeMessages(w io.Writer, msgs []llm.Message) {
	for _, m := range msgs {
		fmt.Fprintf(w, "[%s]\n%s\n", m.Role, strings.TrimRight(m.Content, "\n"))
	}
}

func (d *ConfigDiff) cells() {
	key := func(c spec.ResolvedCell) string {
		return c.Model.Name + " x " + c.Strategy.Name + " x " + c.Task.Name
	}
	o, n := map[string]bool{}, map[string]bool{}
	for _, c := range d.Old.Cells {
		o[key(c)] = true
	}
	for _, c := range d.New.Cells {
		n[key(c)] = true
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		if !o[k] {
			lines = append(lines, "  + "+k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o)) {
		if !n[k] {
			lines = append(lines, "  - "+k)
		}
	}
	if len(lines) > 0 {
		d.Changed = true
		d.add("matrix cells:")
		d.Lines = append(d.Lines, lines...)
	}
}
