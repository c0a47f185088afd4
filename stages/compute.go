package stages

import (
	"sort"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"github.com/promoral/promoral/pipeline/spec"
)

func init() {
	spec.Register(spec.Kind{
		Name: "compute",
		Doc:  "Computes fields from expr-lang expressions over earlier stages (e.g. to remember the answer before a revision).",
		New:  func() spec.Config { return &ComputeConfig{} },
	})
}

// ComputeConfig is the YAML of a compute stage.
type ComputeConfig struct {
	spec.StageBase `yaml:",inline"`
	Set            map[string]string `yaml:"set" required:"true" doc:"Field name -> expression; published as stages.<name>.<field>."`
}

type compute struct {
	name  string
	keys  []string
	progs []*vm.Program
}

// Sample gives example outputs for dry runs.
func (c *ComputeConfig) Sample() map[string]any {
	out := map[string]any{}
	for k := range c.Set {
		out[k] = ""
	}
	return out
}

// FieldTypes: computed values are whatever their expressions give.
func (c *ComputeConfig) FieldTypes() map[string]types.Type {
	out := map[string]types.Type{}
	for k := range c.Set {
		out[k] = types.Any
	}
	return out
}

// Build compiles the expressions.
func (c *ComputeConfig) Build(b *spec.Build) spec.Stage {
	cp := &compute{name: c.Name}
	for k := range c.Set {
		cp.keys = append(cp.keys, k)
	}
	sort.Strings(cp.keys)
	for _, k := range cp.keys {
		cp.progs = append(cp.progs, b.Expr("set."+k, c.Set[k], false))
	}
	return cp
}

// Run evaluates every expression, then publishes them together.
func (cp *compute) Run(x spec.Exec) (string, error) {
	out := make(map[string]any, len(cp.keys))
	for i, p := range cp.progs {
		v, err := expr.Run(p, x.Env())
		if err != nil {
			return "", x.Errorf(cp.name, "set.%s: %v", cp.keys[i], err)
		}
		out[cp.keys[i]] = v
	}
	x.Set(cp.name, out)
	return "", nil
}
