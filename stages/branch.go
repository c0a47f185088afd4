package stages

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"github.com/promoral/promoral/pipeline/spec"
)

func init() {
	spec.Register(spec.Kind{
		Name: "branch",
		Doc:  "Picks the next stage: the goto of the first case whose condition (an expr-lang expression over earlier stages' fields) is true, else default, else the next stage.",
		New:  func() spec.Config { return &BranchConfig{} },
	})
}

// BranchConfig is the YAML of a branch stage.
type BranchConfig struct {
	spec.StageBase `yaml:",inline"`
	Cases          []BranchCase `yaml:"cases" required:"true" doc:"Conditions tried in order."`
	Default        string       `yaml:"default,omitempty" inherit:"next" doc:"Stage to go to when no condition holds (default: next)."`
}

// BranchCase is one condition and its target.
type BranchCase struct {
	When string `yaml:"when" required:"true" doc:"Boolean expr-lang expression, e.g. stages.check.label == stages.answer_parse.label."`
	Goto string `yaml:"goto" required:"true" doc:"Stage to go to when it holds, or end."`
}

type branch struct {
	name  string
	conds []*vm.Program
	gotos []string
	dflt  string
}

// Targets lists every stage the branch may jump to.
func (c *BranchConfig) Targets() []string {
	var out []string
	for _, k := range c.Cases {
		out = append(out, k.Goto)
	}
	if c.Default != "" {
		out = append(out, c.Default)
	}
	return out
}

// ConditionsTo lists the conditions of the cases that go to target, in
// order, each with its spacing folded (for a drawing of the graph).
func (c *BranchConfig) ConditionsTo(target string) []string {
	var out []string
	for _, k := range c.Cases {
		if k.Goto == target {
			out = append(out, strings.Join(strings.Fields(k.When), " "))
		}
	}
	return out
}

// FieldTypes: a branch publishes no fields.
func (c *BranchConfig) FieldTypes() map[string]types.Type { return map[string]types.Type{} }

// DefaultTarget is where the branch goes when no case holds.
func (c *BranchConfig) DefaultTarget() string { return c.Default }

// Build compiles the conditions.
func (c *BranchConfig) Build(b *spec.Build) spec.Stage {
	br := &branch{name: c.Name, dflt: c.Default}
	if len(c.Cases) == 0 {
		b.Errf("cases", "add at least one case", "a branch needs cases")
	}
	for i, k := range c.Cases {
		br.conds = append(br.conds, b.Expr(fmt.Sprintf("cases[%d].when", i), k.When, true))
		br.gotos = append(br.gotos, k.Goto)
	}
	return br
}

// Run evaluates the conditions in order.
func (br *branch) Run(x spec.Exec) (string, error) {
	for i, p := range br.conds {
		v, err := expr.Run(p, x.Env())
		if err != nil {
			return "", x.Errorf(br.name, "cases[%d].when: %v", i, err)
		}
		if b, _ := v.(bool); b {
			return br.gotos[i], nil
		}
	}
	return br.dflt, nil
}
