package pipeline

import (
	"regexp"
	"sort"

	"github.com/promoral/promoral/pipeline/parquetio"
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
	"convention": true, "selection": true,
}

// resolveFactors checks the declared factor names, collects them into
// st.Factors and gives every matrix cell its values. A factor set on both
// the model and the strategy of a cell must agree.
func (l *loader) resolveFactors(st *Study) {
	names := map[string]bool{}
	check := func(file string, line int, path string, fs map[string]string) {
		for _, k := range sortedKeys(boolKeys(fs)) {
			switch {
			case !factorName.MatchString(k):
				l.ds.Addf(file, l.line(file, path+"."+k, line), path+"."+k, "use lower-case letters, digits and _, starting with a letter", "factor name %q is not a column name", k)
			case reservedColumns[k]:
				l.ds.Addf(file, l.line(file, path+"."+k, line), path+"."+k, "choose another name", "factor %q would shadow the %s column of the outputs", k, k)
			default:
				names[k] = true
			}
		}
	}
	for _, m := range st.Models {
		check(m.Spec.File, m.Spec.Line, "factors", m.Spec.Factors)
	}
	for _, s := range st.Strategies {
		check(s.Spec.File, s.Spec.Line, "factors", s.Spec.Factors)
	}
	for n := range names {
		st.Factors = append(st.Factors, n)
	}
	sort.Strings(st.Factors)
	if len(st.Factors) == 0 {
		return
	}
	for i := range st.Cells {
		c := &st.Cells[i]
		c.Factors = make([]string, len(st.Factors))
		for j, f := range st.Factors {
			mv, mok := c.Model.Spec.Factors[f]
			sv, sok := c.Strategy.Spec.Factors[f]
			switch {
			case mok && sok && mv != sv:
				l.ds.Addf(c.Model.Spec.File, c.Model.Spec.Line, "factors."+f, "set the factor on the model or on the strategy, not both",
					"factor %s is %q on model %s but %q on strategy %s", f, mv, c.Model.Name, sv, c.Strategy.Name)
			case mok:
				c.Factors[j] = mv
			case sok:
				c.Factors[j] = sv
			}
		}
	}
}

func boolKeys(m map[string]string) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
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

// factorColumns are the factor columns of results.parquet, after its own.
func factorColumns(st *Study) []parquetio.Column {
	cols := make([]parquetio.Column, len(st.Factors))
	for i, f := range st.Factors {
		cols[i] = col(f, parquetio.ColString, true)
	}
	return cols
}

// factorValues are a case's values of factorColumns (null where unset).
func factorValues(st *Study, c *Case) []any {
	if len(st.Factors) == 0 {
		return nil
	}
	vs := st.FactorValues(c)
	out := make([]any, len(st.Factors))
	for i := range out {
		if i < len(vs) && vs[i] != "" {
			out[i] = vs[i]
		}
	}
	return out
}
