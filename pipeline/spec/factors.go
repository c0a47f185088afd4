package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/promoral/promoral/pipeline/yamlstrict"
	"gopkg.in/yaml.v3"
)

// Condition factors are what a study varies besides the model and the
// strategy's name: a reflection level, whether the confidence instruction is
// given, whether the model thinks. They are declared where they are set (on
// a strategy file, a strategy variant or a model variant), so the condition
// does not hide in a name, and become columns of results.parquet and
// metrics.parquet that every table groups by.

var factorName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// reservedColumns are the columns of results.parquet and metrics.parquet a
// factor must not shadow.
var reservedColumns = map[string]bool{
	"block": true, "run": true, "case_id": true, "model": true, "strategy": true, "task": true, "subset": true, "item_id": true, "item": true, "repeat": true,
	"gold": true, "label": true, "confidence": true, "parsed": true, "correct": true, "truncated": true, "blocked": true,
	"outputs": true, "judge": true, "calls": true, "prompt_tokens": true, "completion_tokens": true, "thinking_tokens": true,
	"total_tokens": true, "cost_usd": true, "judge_tokens": true, "judge_cost_usd": true, "steps": true, "error": true,
	"error_class": true, "config_hash": true, "metric": true, "value": true, "ci_low": true, "ci_high": true, "n": true,
	"n_cases": true, "n_unparsed": true, "n_errors": true, "status": true, "unparsed_policy": true, "errors_policy": true,
	"convention": true, "selection": true, "kept_from": true, "subsets": true, "trace": true,
	"ci_reps": true, "ci_undefined": true,
}

// ReservedColumn says whether name is a column of results.parquet or
// metrics.parquet, which a factor must not shadow.
func ReservedColumn(name string) bool { return reservedColumns[name] }

// resolveFactors checks the declared factor names, collects them into
// st.Factors and gives every matrix cell its values, and every task that
// reads factors from its items each item's. A factor set in two places of
// a cell (its model, strategy or task) must agree; one read from items
// must be set nowhere else in the cell.
func (l *loader) resolveFactors(st *Study) {
	names := map[string]bool{}
	check := func(decls map[string][]factorDecl) {
		for _, k := range slices.Sorted(maps.Keys(decls)) {
			d := decls[k][len(decls[k])-1]
			switch {
			case !factorName.MatchString(k):
				l.ds.Addf(d.file, d.Line, d.field, "use lower-case letters, digits and _, starting with a letter", "factor name %q is not a column name", k)
			case reservedColumns[k]:
				l.ds.Addf(d.file, d.Line, d.field, "choose another name", "factor %q would shadow the %s column of the outputs", k, k)
			default:
				names[k] = true
			}
		}
	}
	once := map[string]bool{}
	addOnce := func(d factorDecl, hint, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if k := d.file + "\x00" + d.field + "\x00" + msg; !once[k] {
			once[k] = true
			l.ds.Addf(d.file, d.Line, d.field, hint, "%s", msg)
		}
	}
	seen := map[string]bool{}
	checkLits := func(d *factorDef, got, subject string) {
		for _, c := range d.checks {
			k := c.file + "\x00" + c.field
			if c.Value == got || seen[k] {
				continue
			}
			seen[k] = true
			l.ds.Addf(c.file, c.Line, c.field, fmt.Sprintf("remove this value (the factor is derived by %s at %s:%d) or change what it reads", d.at.describe(), d.at.file, d.at.Line),
				"factor %s is %q here, but %s gives %q for %s", d.name, c.Value, d.at.describe(), got, subject)
		}
	}

	modelEnvs := map[*Model]map[string]any{}
	for _, m := range st.Models {
		decls := l.factorDecls[m.Spec]
		check(decls)
		env := modelEnvOf(m)
		modelEnvs[m] = env
		for _, d := range sortedDefs(l.defineFactors(decls, modelFactorEnv, "a model entry")) {
			v, err := d.value(map[string]any{"params": env["params"], "model": env})
			if err != nil {
				addOnce(d.at, "", "factor %s of model %s: %v", d.name, m.Name, err)
				continue
			}
			checkLits(d, v, "model "+m.Name)
			if v != "" {
				if m.Factors == nil {
					m.Factors = map[string]string{}
				}
				m.Factors[d.name] = v
			}
		}
	}
	stratDefs := map[*Strategy]map[string]*factorDef{}
	for _, s := range st.Strategies {
		decls := l.factorDecls[s.Spec]
		check(decls)
		stratDefs[s] = l.defineFactors(decls, strategyFactorEnv, "a strategy")
	}
	taskDefs := map[*Task]map[string]*factorDef{}
	for _, t := range st.Tasks {
		decls := l.factorDecls[t.Spec]
		check(decls)
		taskDefs[t] = l.defineFactors(decls, taskFactorEnv, "a task")
	}
	for n := range names {
		st.Factors = append(st.Factors, n)
	}
	sort.Strings(st.Factors)
	if len(st.Factors) == 0 {
		return
	}
	byItems := map[*Task]bool{}
	for i := range st.Cells {
		c := &st.Cells[i]
		c.Factors = make([]string, len(st.Factors))
		params := c.Strategy.Params
		if params == nil {
			params = map[string]any{}
		}
		senv := map[string]any{"params": params, "strategy": map[string]any{"name": c.Strategy.Name, "params": params}, "model": modelEnvs[c.Model]}
		for j, f := range st.Factors {
			type setting struct {
				v, on string
				at    factorDecl
			}
			var set []setting
			if v, ok := c.Model.Factors[f]; ok {
				ds := l.factorDecls[c.Model.Spec][f]
				set = append(set, setting{v, "model " + c.Model.Name, ds[len(ds)-1]})
			}
			if d := stratDefs[c.Strategy][f]; d != nil {
				v, err := d.value(senv)
				if err != nil {
					addOnce(d.at, "", "factor %s of strategy %s (model %s): %v", f, c.Strategy.Name, c.Model.Name, err)
				} else {
					checkLits(d, v, fmt.Sprintf("strategy %s with model %s", c.Strategy.Name, c.Model.Name))
					if v != "" {
						set = append(set, setting{v, "strategy " + c.Strategy.Name, d.at})
					}
				}
			}
			d := taskDefs[c.Task][f]
			if d != nil && d.prog == nil && d.lit != "" {
				set = append(set, setting{d.lit, "task " + c.Task.Name, d.at})
			}
			if d != nil && d.prog != nil {
				byItems[c.Task] = true
				for _, s := range set {
					addOnce(s.at, "set the factor in one place: on the task (from its items) or on the "+strings.Fields(s.on)[0],
						"factor %s is read from task %s's items (%s) and also set on %s", f, c.Task.Name, d.at.describe(), s.on)
				}
				continue
			}
			for _, s := range set[min(1, len(set)):] {
				if s.v != set[0].v {
					addOnce(s.at, "set the factor in one place, or give it one value",
						"factor %s is %q on %s but %q on %s", f, set[0].v, set[0].on, s.v, s.on)
				}
			}
			if len(set) > 0 {
				c.Factors[j] = set[0].v
			}
		}
	}
	for _, t := range st.Tasks {
		if !byItems[t] {
			continue
		}
		var defs []*factorDef
		var at []int
		for j, f := range st.Factors {
			if d := taskDefs[t][f]; d != nil && d.prog != nil {
				defs, at = append(defs, d), append(at, j)
			}
		}
		l.resolveItemFactors(t, defs, at)
	}
}

// fixtureStands says whether a task's fixture: mark still applies: it does
// unless a layer after the one that set it points dataset.path elsewhere.
func fixtureStands(layers []layer) bool {
	mark := -1
	for i, ly := range layers {
		n := yamlstrict.ResolveAlias(ly.node)
		if fieldNode(n, "fixture") != nil {
			mark = i
		}
		if ds := fieldNode(n, "dataset"); ds != nil && (fieldNode(yamlstrict.ResolveAlias(ds), "path") != nil || fieldNode(yamlstrict.ResolveAlias(ds), "hub") != nil) && i > mark && mark >= 0 {
			return false
		}
	}
	return mark >= 0
}

// fieldNode is the value node of key in a mapping, or nil.
func fieldNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
