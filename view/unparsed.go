package view

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/promoral/promoral/pipeline/parse"
)

// missInfo is what the trace says about an unparsed case: the last
// extraction that read no label, and why.
type missInfo struct {
	Stage string
	parse.Miss
}

// MissGroup is the unparsed replies of one shape.
type MissGroup struct {
	Stage    string     `json:"stage"`
	Shape    string     `json:"shape"`
	N        int        `json:"n"`
	Why      []Count    `json:"why"` // nearest rule and reason, most common first
	Fix      []Count    `json:"fix,omitempty"`
	Examples []MissCase `json:"examples"`
	Cases    []int32    `json:"cases"`
	Models   []Count    `json:"models"`
}

// Count is a value and how often it occurs.
type Count struct {
	Value string `json:"value"`
	N     int    `json:"n"`
}

// MissCase is one unparsed reply in a group.
type MissCase struct {
	I     int32  `json:"i"`
	ID    string `json:"id"`
	Line  string `json:"line,omitempty"`
	Found string `json:"found,omitempty"`
	Rule  string `json:"rule,omitempty"`
	Why   string `json:"why"`
	Fix   string `json:"fix,omitempty"`
}

// Unparsed is the unparsed-replies page.
type Unparsed struct {
	Total  int         `json:"total"`
	Groups []MissGroup `json:"groups"`
	Config string      `json:"config,omitempty"`
	Trace  bool        `json:"trace"`
}

// Unparsed groups the unparsed cases among cases by the shape of their
// reply and the rule that came closest, reading the trace column of the
// row groups that hold them (once: the answer is kept).
func (r *Run) Unparsed(cases []int32) (*Unparsed, error) {
	var want []int32
	for _, i := range cases {
		if r.parsed[i] != 1 && r.errc[i] == 0 {
			want = append(want, i)
		}
	}
	if err := r.loadMisses(want); err != nil {
		return nil, err
	}
	out := &Unparsed{Total: len(want), Trace: r.hasTrace, Groups: []MissGroup{}}
	if f, ok := r.Manifest["config_file"].(string); ok {
		out.Config = f
	}
	type key struct{ stage, shape string }
	groups := map[key]*MissGroup{}
	var order []key
	tallies := map[key][3]map[string]int{}
	for _, i := range want {
		m := r.missOf(i)
		shape := "(no extraction missed: the strategy's label output is empty)"
		if !r.hasTrace {
			shape = "(this run has no trace column: apply it again to see why)"
		}
		stage := ""
		if m != nil {
			shape, stage = m.Shape, m.Stage
		}
		if r.truncated[i] == 1 {
			shape = "cut off · " + shape
		}
		k := key{stage, shape}
		g := groups[k]
		if g == nil {
			g = &MissGroup{Stage: stage, Shape: shape, Examples: []MissCase{}}
			groups[k] = g
			order = append(order, k)
			tallies[k] = [3]map[string]int{{}, {}, {}}
		}
		g.N++
		g.Cases = append(g.Cases, i)
		t := tallies[k]
		t[2][r.val("model", r.model[i])]++
		if m != nil {
			why := m.Why
			if m.Rule != "" {
				why = m.Rule + ": " + why
			}
			t[0][generalise(why)]++
			if m.Fix != "" {
				t[1][generalise(m.Fix)]++
			}
			if len(g.Examples) < 6 {
				g.Examples = append(g.Examples, MissCase{I: i, ID: r.id[i], Line: m.Line, Found: m.Found, Rule: m.Rule, Why: m.Why, Fix: m.Fix})
			}
		} else if len(g.Examples) < 6 {
			g.Examples = append(g.Examples, MissCase{I: i, ID: r.id[i], Why: "no extract stage of this case recorded a miss"})
		}
	}
	for _, k := range order {
		g := groups[k]
		t := tallies[k]
		g.Why, g.Fix, g.Models = counts(t[0]), counts(t[1]), counts(t[2])
		out.Groups = append(out.Groups, *g)
	}
	sort.SliceStable(out.Groups, func(a, b int) bool { return out.Groups[a].N > out.Groups[b].N })
	return out, nil
}

// generalise folds the quoted text out of a reason, so that "it read
// "Maybe"" and "it read "Perhaps"" count as one reason.
func generalise(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		if r == '"' {
			if !in {
				b.WriteString("\"…\"")
			}
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func counts(m map[string]int) []Count {
	out := []Count{}
	for v, n := range m {
		out = append(out, Count{v, n})
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].N != out[b].N {
			return out[a].N > out[b].N
		}
		return out[a].Value < out[b].Value
	})
	return out
}

func (r *Run) missOf(i int32) *missInfo {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.misses[i]
}

// loadMisses reads the trace of the given cases not read yet.
func (r *Run) loadMisses(cases []int32) error {
	if !r.hasTrace {
		return nil
	}
	r.mu.Lock()
	if r.misses == nil {
		r.misses = map[int32]*missInfo{}
		r.missRead = map[int32]bool{}
	}
	byGroup := map[int][]int32{}
	for _, i := range cases {
		if !r.missRead[i] {
			g := int(i) / max(r.rowsPerGroup, 1)
			byGroup[g] = append(byGroup[g], i)
		}
	}
	r.mu.Unlock()
	if len(byGroup) == 0 {
		return nil
	}
	p, err := openPQ(filepath.Join(r.Dir, "results.parquet"))
	if err != nil {
		return err
	}
	defer p.Close()
	// Row groups may differ in size: find each case's group for real.
	exact := map[int][]int32{}
	for _, cs := range byGroup {
		for _, i := range cs {
			g := p.groupOf(int(i))
			exact[g] = append(exact[g], i)
		}
	}
	for g, cs := range exact {
		b, err := p.read(g, "trace")
		if err != nil {
			return err
		}
		found := map[int32]*missInfo{}
		for _, i := range cs {
			s, ok := b.strRef("trace", int(i)-p.start[g])
			if !ok {
				continue
			}
			var steps []TraceStep
			if err := json.Unmarshal([]byte(s), &steps); err != nil {
				return fmt.Errorf("%s: case %s: the trace does not parse: %v", p.path, r.id[i], err)
			}
			for k := len(steps) - 1; k >= 0; k-- {
				raw, ok := steps[k].Note["miss"]
				if !ok {
					continue
				}
				data, _ := json.Marshal(raw)
				var m parse.Miss
				if json.Unmarshal(data, &m) == nil {
					found[i] = &missInfo{Stage: steps[k].Stage, Miss: m}
				}
				break
			}
		}
		b.release()
		r.mu.Lock()
		for _, i := range cs {
			r.missRead[i] = true
			if m := found[i]; m != nil {
				r.misses[i] = m
			}
		}
		r.mu.Unlock()
	}
	return nil
}
