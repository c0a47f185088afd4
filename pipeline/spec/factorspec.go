package spec

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// A factor's value is written where the condition is set: a literal
// ({level: "2"}), or derived from what the entry already says, so a
// condition is declared once:
//
//   - on a strategy, from its params and the cell's model
//     ({confidence_instruction: {expr: 'params.confidence ? "on" : "off"'}});
//   - on a model entry, from its own settings
//     ({thinking: {expr: 'params.thinking?.enabled == true ? "on" : "off"'}});
//   - on a task, from each item ({thinking: {from: item.thinking}}), so one
//     cell of recorded rows splits into one group per value.
//
// A literal of a factor that is also derived (a variant that still writes
// the value by hand) must agree with the derived value: it is a check, not
// an override.

// Factors are the condition factors an entry declares, by name. Loading
// reads them layer by layer (factorDecls), so that a value written after a
// derivation is checked against it rather than replacing it.
type Factors map[string]FactorValue

// FactorValue is one factor's declaration: a literal Value, or From (a
// field path) or Expr (an expression) that derives it.
type FactorValue struct {
	Value string `yaml:"-"`
	From  string `yaml:"from,omitempty" doc:"A field path the value is read from: item.<field> on a task, params.<name> on a strategy or model entry, model.<...> on a strategy; null (unset) where a step of it is missing."`
	Expr  string `yaml:"expr,omitempty" doc:"An expression (expr-lang) over the same names as from: the value, as text (true/false, a number, a string; null leaves the factor unset)."`
	// Line is where the value is written.
	Line int `yaml:"-"`
}

// Derived says the value is computed, not written.
func (f FactorValue) Derived() bool { return f.From != "" || f.Expr != "" }

// source is the expression that computes a derived value: a from: path
// reads null where any step of it is missing.
func (f FactorValue) source() string {
	if f.From != "" {
		return strings.ReplaceAll(f.From, ".", "?.")
	}
	return f.Expr
}

// describe names a derived value as written ("from: x", "expr: y").
func (f FactorValue) describe() string {
	if f.From != "" {
		return "from: " + f.From
	}
	return "expr: " + f.Expr
}

var factorPath = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// DecodeNode reads a scalar as a literal and a mapping as {from: ...} or
// {expr: ...}.
func (f *FactorValue) DecodeNode(d *yamlstrict.Decoder, n *yaml.Node, path string) {
	f.Line = n.Line
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" || n.Value == "" {
			d.Errf(n, path, `write a value ("on"), or {from: <field>} or {expr: <expression>} to derive it`, "factor %s has no value", lastField(path))
			return
		}
		f.Value = n.Value
	case yaml.MappingNode:
		var spec struct {
			From string `yaml:"from,omitempty"`
			Expr string `yaml:"expr,omitempty"`
		}
		d.Decode(n, &spec, path)
		f.From, f.Expr = spec.From, spec.Expr
		switch {
		case f.From == "" && f.Expr == "":
			d.Errf(n, path, "give from: <field path> or expr: <expression>", "factor %s derives its value from nothing", lastField(path))
		case f.From != "" && f.Expr != "":
			d.Errf(n, path, "keep one of them", "factor %s has both from: and expr:", lastField(path))
		case f.From != "" && !factorPath.MatchString(f.From):
			d.Errf(n, path+".from", "from: is a field path like item.thinking; write an expression as expr:", "%q is not a field path", f.From)
		}
	default:
		d.Errf(n, path, `write a value, {from: <field>} or {expr: <expression>}`, "expected a factor value, got %s", yamlstrict.KindName(n))
	}
}

func lastField(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// factorDecl is one declaration of a factor in one layer of an entry (a
// file, a variant, a model it extends), with where it is written.
type factorDecl struct {
	FactorValue
	file, field string
}

// factorDecls reads every layer's factors: declarations, in layer order,
// so a literal beside a derived value can be checked rather than lost in
// the overlay. Problems were reported when the layers were decoded.
func factorDecls(layers []layer) map[string][]factorDecl {
	var out map[string][]factorDecl
	for _, ly := range layers {
		fn := yamlstrict.ResolveAlias(fieldNode(yamlstrict.ResolveAlias(ly.node), "factors"))
		if fn == nil || fn.Kind != yaml.MappingNode {
			continue
		}
		var scratch yamlstrict.Diags
		d := yamlstrict.NewDecoder(ly.file, &scratch)
		for i := 0; i+1 < len(fn.Content); i += 2 {
			k := fn.Content[i].Value
			field := yamlstrict.JoinPath(ly.path, "factors."+k)
			var v FactorValue
			v.DecodeNode(d, yamlstrict.ResolveAlias(fn.Content[i+1]), field)
			if out == nil {
				out = map[string][]factorDecl{}
			}
			out[k] = append(out[k], factorDecl{v, ly.file, field})
		}
	}
	return out
}

// factorDef is a factor as an entry defines it: a literal, or a compiled
// program, with the literals written beside a derived value to check.
type factorDef struct {
	name   string
	lit    string
	prog   *vm.Program
	at     factorDecl
	checks []factorDecl
}

// factorEnvs are the names each place's expressions read.
var (
	modelFactorEnv    = map[string]any{"params": map[string]any{}, "model": map[string]any{}}
	strategyFactorEnv = map[string]any{"params": map[string]any{}, "strategy": map[string]any{}, "model": map[string]any{}}
	taskFactorEnv     = map[string]any{"item": map[string]any{}, "task": map[string]any{}}
)

// defineFactors compiles an entry's factor declarations: the last derived
// one defines a factor when there is one (the literals after it become
// checks), else the last literal.
func (l *loader) defineFactors(decls map[string][]factorDecl, env map[string]any, where string) map[string]*factorDef {
	if len(decls) == 0 {
		return nil
	}
	out := map[string]*factorDef{}
	for _, name := range slices.Sorted(maps.Keys(decls)) {
		ds := decls[name]
		def := &factorDef{name: name}
		derived := -1
		for i, d := range ds {
			if d.Derived() {
				derived = i
			}
		}
		if derived < 0 {
			def.at = ds[len(ds)-1]
			def.lit = def.at.Value
			out[name] = def
			continue
		}
		// A derivation replaces the values of the layers before it (the
		// model a variant extends, the file a variant uses); a value
		// written after it must agree with it.
		def.at = ds[derived]
		for _, d := range ds[derived+1:] {
			if d.Value != "" {
				def.checks = append(def.checks, d)
			}
		}
		p, err := expr.Compile(def.at.source(), expr.Env(env))
		if err != nil {
			l.ds.Addf(def.at.file, def.at.Line, def.at.field, "a factor on "+where+" reads "+envNames(env),
				"factor %s: %s does not compile: %s", name, def.at.describe(), firstLine(err.Error()))
			continue
		}
		def.prog = p
		out[name] = def
	}
	return out
}

func envNames(env map[string]any) string {
	names := slices.Sorted(maps.Keys(env))
	return strings.Join(names, ", ")
}

// value is the factor's value in env ("" = unset).
func (d *factorDef) value(env map[string]any) (string, error) {
	if d.prog == nil {
		return d.lit, nil
	}
	v, err := expr.Run(d.prog, env)
	if err != nil {
		return "", fmt.Errorf("%s: %s", d.at.describe(), firstLine(err.Error()))
	}
	s, err := factorText(v)
	if err != nil {
		return "", fmt.Errorf("%s gives %s", d.at.describe(), err)
	}
	return s, nil
}

// factorText is a derived value as the factor's text: strings as they
// are, true/false, numbers in their shortest form, null as unset.
func factorText(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("%v, not a value a column can group by", x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case float32, int8, int16, int32, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), nil
	}
	what := fmt.Sprintf("a %T", v)
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Struct:
		what = "a mapping"
	case reflect.Slice, reflect.Array:
		what = "a list"
	}
	return "", fmt.Errorf("%s, not text, a number or true/false", what)
}

// modelEnvOf is what a model entry's factors read: its params (as
// written in YAML) and its name, id, provider and vars.
func modelEnvOf(m *Model) map[string]any {
	var params map[string]any
	if b, err := yaml.Marshal(m.Spec.Params); err == nil {
		_ = yaml.Unmarshal(b, &params)
	}
	if params == nil {
		params = map[string]any{}
	}
	vars := map[string]any{}
	for k, v := range m.Spec.Vars {
		vars[k] = v
	}
	return map[string]any{"name": m.Name, "id": m.Spec.ID(), "provider": m.Spec.Provider, "params": params, "vars": vars}
}

// itemFactors are the factors a task reads from its items: their places
// in Study.Factors, and each item's values as a place in a table of the
// distinct value tuples (one small number per item, not strings).
type itemFactors struct {
	at     []int
	defs   []*factorDef
	task   map[string]any
	combo  []uint32
	mu     sync.Mutex
	tuples [][]string
	index  map[string]uint32
}

// tupleOf interns a tuple of values.
func (f *itemFactors) tupleOf(vs []string) uint32 {
	k := strings.Join(vs, "\x00")
	f.mu.Lock()
	defer f.mu.Unlock()
	if i, ok := f.index[k]; ok {
		return i
	}
	i := uint32(len(f.tuples))
	f.index[k] = i
	f.tuples = append(f.tuples, vs)
	return i
}

// eval is an item's values; on failure, bad is the place in defs of the
// factor that failed.
func (f *itemFactors) eval(it *Item) (vs []string, bad int, err error) {
	env := map[string]any{"item": it.Values(), "task": f.task}
	vs = make([]string, len(f.defs))
	for j, d := range f.defs {
		v, err := d.value(env)
		if err != nil {
			return nil, j, err
		}
		vs[j] = v
	}
	return vs, -1, nil
}

// comboOf is the item's place in the tuples: looked up for one of the
// task's items, computed for any other (an item built by hand).
func (f *itemFactors) comboOf(t *Task, it *Item) uint32 {
	if i, ok := t.Index(it); ok && i < len(f.combo) {
		return f.combo[i]
	}
	vs, _, err := f.eval(it)
	if err != nil {
		vs = make([]string, len(f.defs))
	}
	return f.tupleOf(vs)
}

func (f *itemFactors) tuple(i uint32) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tuples[i]
}

// narrow keeps the values of the items at keep (a selection's items, in
// order).
func (f *itemFactors) narrow(keep []int) {
	combo := make([]uint32, len(keep))
	for i, k := range keep {
		combo[i] = f.combo[k]
	}
	f.combo = combo
}

// narrowItemFactors follows Select's narrowing of a task's items.
func (t *Task) narrowItemFactors(keep []int) {
	if t.itemFactors != nil {
		t.itemFactors.narrow(keep)
	}
}

// resolveItemFactors evaluates a task's item factors on every item, once:
// an item of a large dataset is read back from the store here, not at
// each row written or scored. At most a few failing items are listed.
func (l *loader) resolveItemFactors(t *Task, defs []*factorDef, at []int) {
	f := &itemFactors{at: at, defs: defs, task: map[string]any{"name": t.Name}, index: map[string]uint32{}, combo: make([]uint32, len(t.Items))}
	const shown = 3
	bad := make([]int, len(defs))
	for i := range t.Items {
		vs, j, err := f.eval(&t.Items[i])
		if err != nil {
			if bad[j]++; bad[j] <= shown {
				d := defs[j]
				l.ds.Addf(d.at.file, d.at.Line, d.at.field, "make it give text, a number, true/false or null for every item (e.g. item.x ?? \"none\" for a missing field)",
					"factor %s, task %s, item %s: %v", d.name, t.Name, t.Items[i].ID, err)
			}
			vs = make([]string, len(defs))
		}
		f.combo[i] = f.tupleOf(vs)
	}
	for j, n := range bad {
		if n > shown {
			d := defs[j]
			l.ds.Addf(d.at.file, d.at.Line, d.at.field, "", "factor %s, task %s: fails on %d more items", d.name, t.Name, n-shown)
		}
	}
	t.itemFactors = f
}

// sortedDefs are defs' values by name.
func sortedDefs(defs map[string]*factorDef) []*factorDef {
	out := make([]*factorDef, 0, len(defs))
	for _, d := range defs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// noteFactors keeps the factor declarations of a spec's layers.
func (l *loader) noteFactors(spec any, layers []layer) {
	if ds := factorDecls(layers); ds != nil {
		if l.factorDecls == nil {
			l.factorDecls = map[any]map[string][]factorDecl{}
		}
		l.factorDecls[spec] = ds
	}
}
