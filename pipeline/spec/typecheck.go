package spec

import (
	"fmt"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// typeCheck compiles every expression of the strategy again, against the
// types its stages publish (a prompt's text is text, an extract's label is
// text and parsed a boolean, visits are counts), so an expression that
// cannot work (comparing a label with a number, adding text to a count,
// reading a field a stage never publishes) fails validation instead of every
// case at run time, or silently. What the stages do not pin down (item
// fields, computed values, a confidence that may be missing) stays open.
func (s *Strategy) typeCheck(ds *yamlstrict.Diags, uses []exprUse) {
	env := s.typedEnv()
	for _, u := range uses {
		opts := []expr.Option{expr.Env(env)}
		if u.asBool {
			opts = append(opts, expr.AsBool())
		}
		p, err := expr.Compile(u.src, opts...)
		if err != nil {
			ds.Addf(u.file, u.line, u.path, "see https://expr-lang.org/docs/language-definition", "expression %q: %s", u.src, firstLine(err.Error()))
			continue
		}
		t := p.Node().Type()
		if t == nil || t.Kind() == reflect.Interface {
			continue
		}
		switch u.path {
		case "outputs.label":
			if t.Kind() != reflect.String {
				ds.Addf(u.file, u.line, u.path, "the label is text, e.g. stages.answer_parse.label", "expression %q gives %s, and a label must be text (every case would be unparsed)", u.src, t)
			}
		case "outputs.confidence":
			switch t.Kind() {
			case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64:
			default:
				ds.Addf(u.file, u.line, u.path, "the confidence is a number, e.g. stages.answer_parse.confidence", "expression %q gives %s, and a confidence must be a number", u.src, t)
			}
		}
	}
}

// typedEnv describes the case environment for expr's type checker.
func (s *Strategy) typedEnv() types.Map {
	open := types.Map{types.Extra: types.Any}
	stages := types.Map{}
	visits := types.Map{}
	for _, sn := range s.Spec.Stages {
		if sn.Config == nil && sn.Name != "" {
			// Reported already; its references are spared follow-on errors.
			stages[sn.Name], visits[sn.Name] = open, types.Int
		}
	}
	for _, n := range s.Nodes {
		visits[n.Base.Name] = types.Int
		ty, ok := n.Config.(FieldTyper)
		if !ok {
			stages[n.Base.Name] = open
			continue
		}
		fields := types.Map{}
		for k, v := range ty.FieldTypes() {
			fields[k] = v
		}
		stages[n.Base.Name] = fields
	}
	return types.Map{
		"item": open, "task": open, "stages": stages, "visits": visits, "params": open,
		"model": open, "strategy": open, "subject": open,
	}
}

// FieldTyper is implemented by stage configs that know the types of the
// fields they publish (types.Any where a value may be missing or vary), so
// expressions over them are type-checked. A stage kind without it publishes
// fields of any name and type as far as the checker knows.
type FieldTyper interface {
	FieldTypes() map[string]types.Type
}

func (u exprUse) String() string { return fmt.Sprintf("%s:%d %s", u.file, u.line, u.path) }
