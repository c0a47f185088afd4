package spec

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/promoral/promoral/pipeline/llm"
)

// Sampling sweeps: a model entry's sweep: runs its cells once per value of
// a sampling setting (temperature, top_p, seed, thinking_budget; several
// settings cross),
// without a copy of the model. Like repeats, a swept cell becomes one cell
// per combination; the setting is a condition factor (a column of every
// output) and its value wins over the model's and the stages' own for
// every request of the strategy's graph, so a stage that fixes
// temperature: 0 is swept too. The requests differ, so each value has its
// own journal keys. A judge's requests keep their own settings.

// sweepKeys are the settings a sweep may vary.
var sweepKeys = []string{"seed", "temperature", "thinking_budget", "top_p"}

// Sweep is one combination of swept settings of a cell.
type Sweep struct {
	// Tag names the combination in case ids: {temperature=0.7,top_p=0.9}.
	Tag         string
	Temperature *float64
	TopP        *float64
	Seed        *int64
	// ThinkingBudget: 0 turns thinking off, more turns it on with that
	// budget in tokens.
	ThinkingBudget *int
}

// Apply writes the swept settings into a request.
func (s *Sweep) Apply(r *llm.Request) {
	if s == nil {
		return
	}
	if s.Temperature != nil {
		r.Temperature = s.Temperature
	}
	if s.TopP != nil {
		r.TopP = s.TopP
	}
	if s.Seed != nil {
		r.Seed = s.Seed
	}
	if s.ThinkingBudget != nil {
		r.Thinking = llm.Thinking{}
		if b := *s.ThinkingBudget; b > 0 {
			r.Thinking = llm.Thinking{Enabled: true, Budget: b}
		}
	}
}

// sweepValue is a swept value as its factor column reads it.
func sweepValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// checkSweep checks one model's sweep: known settings, values in range,
// no value twice.
func (l *loader) checkSweep(m *Model) {
	sp := m.Spec
	for _, k := range sweptKeys(sp.Sweep) {
		path := "sweep." + k
		line := l.modelFieldLine(sp, path)
		vals := sp.Sweep[k]
		lo, hi := 0.0, 0.0
		switch k {
		case "temperature":
			lo, hi = 0, 2
		case "top_p":
			lo, hi = 0, 1
		case "seed":
			lo, hi = -(1 << 53), 1<<53
		case "thinking_budget":
			lo, hi = 0, 1<<24
		default:
			l.ds.Addf(sp.File, line, path, "sweep one of "+strings.Join(sweepKeys, ", ")+"; for other settings declare a model variant ({name: ..., extends: "+sp.Name+", params: {...}, factors: {...}})",
				"model %s cannot sweep %q", sp.Name, k)
			continue
		}
		if len(vals) == 0 {
			l.ds.Addf(sp.File, line, path, "list the values, e.g. [0, 0.7]", "sweep.%s of model %s lists no value", k, sp.Name)
		}
		seen := map[float64]bool{}
		for _, v := range vals {
			switch {
			case v < lo || v > hi:
				l.ds.Addf(sp.File, line, path, fmt.Sprintf("use values from %s to %s", sweepValue(lo), sweepValue(hi)), "sweep.%s of model %s: %s is out of range", k, sp.Name, sweepValue(v))
			case (k == "seed" || k == "thinking_budget") && v != float64(int64(v)):
				l.ds.Addf(sp.File, line, path, "use whole numbers", "sweep.%s of model %s: %s is not a whole number", k, sp.Name, sweepValue(v))
			case seen[v]:
				l.ds.Addf(sp.File, line, path, "list each value once", "sweep.%s of model %s lists %s twice", k, sp.Name, sweepValue(v))
			}
			seen[v] = true
		}
		if reservedColumns[k] {
			l.ds.Addf(sp.File, line, path, "", "sweep.%s would shadow a column", k)
		}
	}
}

// sweepsOf is every combination of a model's swept values, in the order
// the lists give them (nil: no sweep).
func sweepsOf(sp *ModelSpec) []*Sweep {
	keys := sweptKeys(sp.Sweep)
	if len(keys) == 0 {
		return nil
	}
	out := []*Sweep{{}}
	for _, k := range keys {
		var next []*Sweep
		for _, base := range out {
			for _, v := range sp.Sweep[k] {
				s := *base
				v := v
				switch k {
				case "temperature":
					s.Temperature = &v
				case "top_p":
					s.TopP = &v
				case "seed":
					n := int64(v)
					s.Seed = &n
				case "thinking_budget":
					n := int(v)
					s.ThinkingBudget = &n
				}
				next = append(next, &s)
			}
		}
		out = next
	}
	for _, s := range out {
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+s.value(k))
		}
		s.Tag = "{" + strings.Join(parts, ",") + "}"
	}
	return out
}

// value is the combination's value of a swept setting, as its factor
// column reads it.
func (s *Sweep) value(k string) string {
	switch {
	case k == "temperature" && s.Temperature != nil:
		return sweepValue(*s.Temperature)
	case k == "top_p" && s.TopP != nil:
		return sweepValue(*s.TopP)
	case k == "seed" && s.Seed != nil:
		return strconv.FormatInt(*s.Seed, 10)
	case k == "thinking_budget" && s.ThinkingBudget != nil:
		return strconv.Itoa(*s.ThinkingBudget)
	}
	return ""
}

// expandSweeps turns every cell of a swept model into one cell per
// combination, and makes each swept setting a factor (after
// resolveFactors: a factor a model or strategy sets by hand must not have
// a swept setting's name).
func (l *loader) expandSweeps(st *Study) {
	swept := map[string]bool{}
	for _, m := range st.Models {
		l.checkSweep(m)
		for k := range m.Spec.Sweep {
			swept[k] = true
		}
	}
	if len(swept) == 0 {
		return
	}
	inCells := map[*Model]bool{}
	for _, c := range st.Cells {
		inCells[c.Model] = true
	}
	for _, m := range st.Models {
		if len(m.Spec.Sweep) > 0 && !inCells[m] {
			l.ds.Addf(m.Spec.File, l.modelFieldLine(m.Spec, "sweep"), "sweep", "remove the sweep, or run the model in the matrix (a judge's requests keep their own settings)",
				"model %s sweeps %s but runs no cell of the matrix", m.Name, strings.Join(sweptKeys(m.Spec.Sweep), ", "))
		}
	}
	for _, f := range st.Factors {
		if swept[f] {
			for _, m := range st.Models {
				if _, ok := m.Spec.Sweep[f]; ok {
					l.ds.Addf(m.Spec.File, l.modelFieldLine(m.Spec, "sweep."+f), "sweep."+f, "rename the factor declared by hand",
						"%s is both a swept setting and a factor declared on a model or strategy", f)
				}
			}
			return
		}
	}
	old := st.Factors
	names := append(append([]string(nil), old...), slices.Sorted(maps.Keys(swept))...)
	sort.Strings(names)
	at := map[string]int{}
	for i, f := range old {
		at[f] = i
	}
	var cells []ResolvedCell
	for _, c := range st.Cells {
		combos := sweepsOf(c.Model.Spec)
		if combos == nil {
			combos = []*Sweep{nil}
		}
		for _, s := range combos {
			nc := c
			nc.Sweep = s
			nc.Factors = make([]string, len(names))
			for j, f := range names {
				if i, ok := at[f]; ok && i < len(c.Factors) {
					nc.Factors[j] = c.Factors[i]
				} else if s != nil {
					nc.Factors[j] = s.value(f)
				}
			}
			cells = append(cells, nc)
		}
	}
	st.Cells, st.Factors = cells, names
}

func sweptKeys(m map[string][]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tag is the sweep's tag in a case id ("" for none).
func (s *Sweep) tag() string {
	if s == nil {
		return ""
	}
	return s.Tag
}

// modelFieldLine is the line of a field of a model entry: in its own file,
// or under models[i] of the run file that declares it inline.
func (l *loader) modelFieldLine(sp *ModelSpec, path string) int {
	if n, ok := l.lines[sp.File][path]; ok {
		return n
	}
	for p, n := range l.lines[sp.File] {
		if strings.HasPrefix(p, "models[") && strings.HasSuffix(p, "]."+path) {
			if i, ok := l.lines[sp.File][p[:len(p)-len(path)-1]]; ok && i == sp.Line {
				return n
			}
		}
	}
	return sp.Line
}
