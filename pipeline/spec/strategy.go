package spec

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/expr-lang/expr/vm"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// End is the pseudo-stage that finishes a case.
const End = "end"

// Strategy is a compiled strategy graph.
type Strategy struct {
	Spec   *StrategySpec
	Name   string
	Params map[string]any
	Nodes  []*Node
	// Index is each stage's place in Nodes, by name.
	Index map[string]int
	// Outputs are the strategy's compiled outputs: expressions over the
	// case's environment once the graph ends.
	Outputs []NamedProg
	lines   map[string]int // field path -> line in Spec.File
	// broken names the stages that did not compile: the dry run spares
	// the stages that read them (dryrun.go).
	broken map[string]bool
	// promptsDir is where its template files are (readsBroken).
	promptsDir string
}

// NamedProg is a compiled expression with the name it is published as.
type NamedProg struct {
	Name string
	Prog *vm.Program
}

// Node is one compiled stage with its resolved edges (indexes into Nodes,
// -1 for end).
type Node struct {
	Base   *StageBase
	Config Config
	Stage  Stage
	// Next is the default edge; Exhausted is where the case goes instead
	// once the stage has run max_visits times.
	Next      int
	Exhausted int
	targets   map[string]int
}

// Lookup returns the index of a stage by name.
func (s *Strategy) Lookup(name string) (int, bool) {
	i, ok := s.Index[name]
	return i, ok
}

// OutputNames lists the strategy's declared outputs, sorted.
func (s *Strategy) OutputNames() []string {
	out := make([]string, len(s.Outputs))
	for i, o := range s.Outputs {
		out[i] = o.Name
	}
	return out
}

// Edges returns, for each stage, the stages it may go to next (for graph
// drawing and plan estimates).
func (s *Strategy) Edges() map[string][]string {
	out := map[string][]string{}
	name := func(i int) string {
		if i < 0 {
			return End
		}
		return s.Nodes[i].Base.Name
	}
	for _, n := range s.Nodes {
		seen := map[string]bool{}
		add := func(t string) {
			if !seen[t] {
				seen[t] = true
				out[n.Base.Name] = append(out[n.Base.Name], t)
			}
		}
		keys := make([]string, 0, len(n.targets))
		for k := range n.targets {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(name(n.targets[k]))
		}
		add(name(n.Next))
		if n.Base.MaxVisits > 0 {
			add(name(n.Exhausted))
		}
	}
	return out
}

// compileStrategy builds the graph and reports every problem it finds.
func compileStrategy(spec *StrategySpec, promptsDir string, ds *yamlstrict.Diags, lines map[string]int) *Strategy {
	s := &Strategy{Spec: spec, Name: spec.Name, Params: spec.Params, Index: map[string]int{}, lines: lines, broken: map[string]bool{}, promptsDir: promptsDir}
	names := map[string]bool{}
	before := len(*ds)
	for i, sn := range spec.Stages {
		if sn.Config == nil {
			names[sn.Name] = true // reported already; spare its references
			if sn.Name != "" {
				s.broken[sn.Name] = true
			}
			continue
		}
		b := sn.Config.Base()
		switch {
		case b.Name == End:
			ds.Addf(spec.File, b.Line, fmt.Sprintf("stages[%d].name", i), "pick another name", "%q is reserved for the end of the graph", End)
		case names[b.Name]:
			ds.Addf(spec.File, b.Line, fmt.Sprintf("stages[%d].name", i), "stage names must be unique within a strategy", "stage %q is declared twice", b.Name)
		}
		names[b.Name] = true
		s.Index[b.Name] = len(s.Nodes)
		s.Nodes = append(s.Nodes, &Node{Base: b, Config: sn.Config})
	}
	if len(s.Nodes) == 0 && len(*ds) == before {
		ds.Addf(spec.File, spec.Line, "stages", "add at least one stage", "the strategy has no stages")
	}
	resolve := func(n *Node, field, target string, dflt int) int {
		if target == "" {
			return dflt
		}
		if target == End {
			return -1
		}
		i, ok := s.Index[target]
		if !ok {
			line := n.Base.Line
			if l, ok := lines[fmt.Sprintf("stages[%d].%s", s.specIndex(n.Base), field)]; ok {
				line = l
			}
			ds.Addf(spec.File, line, fmt.Sprintf("stages[%s].%s", n.Base.Name, field), s.suggest(target), "no stage named %q", target)
			return -1
		}
		return i
	}
	var exprs []exprUse
	for i, n := range s.Nodes {
		b := &Build{Diags: ds, File: spec.File, Strategy: spec, Stage: n.Base, Index: s.specIndex(n.Base), Names: names, PromptsDir: promptsDir, Lines: lines, exprs: &exprs}
		mark := len(*ds)
		n.Stage = n.Config.Build(b)
		if n.Stage == nil || len(*ds) > mark {
			s.broken[n.Base.Name] = true
		}
		dflt := i + 1
		if dflt >= len(s.Nodes) {
			dflt = -1
		}
		n.Next = resolve(n, "next", n.Base.Next, dflt)
		n.Exhausted = resolve(n, "exhausted", n.Base.Exhausted, -1)
		if n.Base.MaxVisits < 0 {
			ds.Addf(spec.File, n.Base.Line, fmt.Sprintf("stages[%s].max_visits", n.Base.Name), "use a positive number", "max_visits must be positive")
		}
		// Decoding gives exhausted its default (end) when it is left out.
		_, wrote := lines[fmt.Sprintf("stages[%d].exhausted", s.specIndex(n.Base))]
		if (wrote || n.Base.Exhausted != End) && n.Base.MaxVisits == 0 {
			ds.Addf(spec.File, n.Base.Line, fmt.Sprintf("stages[%s].exhausted", n.Base.Name), "set max_visits too", "exhausted only applies to a stage with max_visits")
		}
		if t, ok := n.Config.(Targets); ok {
			n.targets = map[string]int{}
			for _, name := range t.Targets() {
				n.targets[name] = resolve(n, "goto", name, -1)
			}
		}
	}
	s.checkLoops(ds)
	if _, ok := spec.Outputs["label"]; !ok {
		ds.Addf(spec.File, spec.Line, "outputs.label", "e.g. label: stages.answer_parse.label", "the strategy must declare a label output")
	}
	keys := make([]string, 0, len(spec.Outputs))
	for k := range spec.Outputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		line := lines["outputs."+k]
		if line == 0 {
			line = spec.Line
		}
		p, err := CompileExpr(spec.Outputs[k], names, false)
		if err != nil {
			ds.Addf(spec.File, line, "outputs."+k, "", "%v", err)
			continue
		}
		s.Outputs = append(s.Outputs, NamedProg{k, p})
		exprs = append(exprs, exprUse{file: spec.File, path: "outputs." + k, line: line, src: spec.Outputs[k]})
	}
	for _, part := range slices.Sorted(maps.Keys(spec.Verdicts)) {
		out := spec.Verdicts[part]
		if _, ok := spec.Outputs[out]; !ok {
			line := lines["verdicts."+part]
			if line == 0 {
				line = spec.Line
			}
			ds.Addf(spec.File, line, "verdicts."+part, yamlstrict.NameHint(out, slices.Sorted(maps.Keys(spec.Outputs)), "name one of the strategy's outputs"), "verdict %s reads output %q, which the strategy does not declare", part, out)
		}
	}
	// Only expressions that compiled are type-checked, and the stages that
	// did not compile are open to the checker, so this runs whatever else
	// was reported: every independent problem shows in one pass.
	s.typeCheck(ds, exprs)
	return s
}

// specIndex is the stage's position in the strategy file's list.
func (s *Strategy) specIndex(b *StageBase) int {
	for i, sn := range s.Spec.Stages {
		if sn.Config != nil && sn.Config.Base() == b {
			return i
		}
	}
	return 0
}

func (s *Strategy) suggest(target string) string {
	names := make([]string, 0, len(s.Index)+1)
	for name := range s.Index {
		names = append(names, name)
	}
	if d := yamlstrict.DidYouMean(target, append(names, End)); d != "" {
		return d
	}
	return yamlstrict.NameHint(target, names, "name a stage of this strategy, or end")
}

// checkLoops rejects any cycle that does not pass through a stage with
// max_visits: with every bounded stage removed, the rest must be acyclic,
// which guarantees each case finishes.
func (s *Strategy) checkLoops(ds *yamlstrict.Diags) {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(s.Nodes))
	var stack []int
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, j := range s.succ(i) {
			if j < 0 || s.Nodes[j].Base.MaxVisits > 0 {
				continue
			}
			if color[j] == grey {
				// Report the cycle once, at the stage that closes it.
				var cyc []string
				for k := len(stack) - 1; k >= 0; k-- {
					cyc = append([]string{s.Nodes[stack[k]].Base.Name}, cyc...)
					if stack[k] == j {
						break
					}
				}
				cyc = append(cyc, s.Nodes[j].Base.Name)
				n := s.Nodes[i]
				ds.Addf(s.Spec.File, n.Base.Line, fmt.Sprintf("stages[%s]", n.Base.Name),
					"give one stage of the loop max_visits (and exhausted: where to go once it is reached)",
					"unbounded loop %v", cyc)
				return true
			}
			if color[j] == white && visit(j) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range s.Nodes {
		if color[i] == white && s.Nodes[i].Base.MaxVisits == 0 && visit(i) {
			return // one report per strategy; the second check would repeat it
		}
	}
	// Once a bounded stage is exhausted it only forwards to its exhausted
	// target. With every bounded stage exhausted the graph must be acyclic,
	// or a case could circle forever without running a bounded stage.
	state := make([]int, len(s.Nodes))
	var dfs func(i int) bool
	dfs = func(i int) bool {
		state[i] = grey
		next := s.succ(i)
		if s.Nodes[i].Base.MaxVisits > 0 {
			next = []int{s.Nodes[i].Exhausted}
		}
		for _, j := range next {
			if j < 0 {
				continue
			}
			if state[j] == grey {
				n := s.Nodes[i]
				ds.Addf(s.Spec.File, n.Base.Line, fmt.Sprintf("stages[%s]", n.Base.Name),
					"point exhausted at a stage outside the loop, or end",
					"once the loop's bounds are reached, %s and %s keep leading back to each other", n.Base.Name, s.Nodes[j].Base.Name)
				return true
			}
			if state[j] == white && dfs(j) {
				return true
			}
		}
		state[i] = black
		return false
	}
	for i := range s.Nodes {
		if state[i] == white && dfs(i) {
			break
		}
	}
}

func (s *Strategy) succ(i int) []int {
	n := s.Nodes[i]
	out := []int{n.Next}
	for _, t := range n.targets {
		out = append(out, t)
	}
	return out
}
