package spec

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/template"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Build is what a stage config gets while it compiles: where it is (for
// diagnostics) and helpers to compile expressions and templates the same way
// everywhere.
type Build struct {
	Diags      *yamlstrict.Diags
	File       string
	Strategy   *StrategySpec
	Stage      *StageBase
	Index      int             // position of the stage in the strategy's list
	Names      map[string]bool // every stage name of the strategy
	PromptsDir string
	Lines      map[string]int // field path -> line in File
	// exprs collects every expression compiled through Expr, for the
	// strategy's type check once all its stages are known.
	exprs *[]exprUse
}

// exprUse is one expression of a stage, where it was written.
type exprUse struct {
	file, path string
	line       int
	src        string
	asBool     bool
}

// Path is the dotted field path of a field of the current stage.
func (b *Build) Path(field string) string {
	p := fmt.Sprintf("stages[%d]", b.Index)
	if b.Stage != nil && b.Stage.Name != "" {
		p = fmt.Sprintf("stages[%s]", b.Stage.Name)
	}
	if field != "" {
		p += "." + field
	}
	return p
}

// Line is the line of a field of the current stage (the stage's own line
// when the field was not written).
func (b *Build) Line(field string) int {
	line := 0
	if b.Stage != nil {
		line = b.Stage.Line
	}
	if field == "" {
		return line
	}
	if l, ok := b.Lines[fmt.Sprintf("stages[%d].%s", b.Index, field)]; ok {
		return l
	}
	return line
}

// Errf records a problem with a field of the current stage.
func (b *Build) Errf(field, hint, format string, args ...any) {
	line := b.Line(field)
	b.Diags.Addf(b.File, line, b.Path(field), hint, format, args...)
}

// exprEnv is the compile-time environment of every expression; values are
// only there to give the checker the top-level names.
func exprEnv() map[string]any {
	return map[string]any{
		"item":     map[string]any{},
		"task":     map[string]any{},
		"stages":   map[string]any{},
		"visits":   map[string]any{},
		"params":   map[string]any{},
		"model":    map[string]any{},
		"strategy": map[string]any{},
		"subject":  map[string]any{},
	}
}

// CompileExpr compiles an expr-lang expression over the case environment,
// checking that every stages.<name> it reads names a stage of the strategy.
func CompileExpr(src string, names map[string]bool, asBool bool) (*vm.Program, error) {
	opts := []expr.Option{expr.Env(exprEnv())}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	tree, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("expression %q does not compile: %s", src, firstLine(err.Error()))
	}
	if names != nil {
		v := &stageRefs{}
		node := tree.Node()
		ast.Walk(&node, v)
		for _, r := range v.refs {
			if !names[r] {
				known := make([]string, 0, len(names))
				for n := range names {
					known = append(known, n)
				}
				msg := fmt.Sprintf("expression %q reads stages.%s, but the strategy has no stage %q", src, r, r)
				if d := yamlstrict.DidYouMean(r, known); d != "" {
					msg += "; " + d
				}
				return nil, errors.New(msg)
			}
		}
	}
	return tree, nil
}

type stageRefs struct{ refs []string }

func (v *stageRefs) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "stages" {
		return
	}
	if s, ok := m.Property.(*ast.StringNode); ok {
		v.refs = append(v.refs, s.Value)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Expr compiles an expression for a field of the current stage.
func (b *Build) Expr(field, src string, asBool bool) *vm.Program {
	p, err := CompileExpr(src, b.Names, asBool)
	if err != nil {
		b.Errf(field, "see https://expr-lang.org/docs/language-definition", "%v", err)
		return nil
	}
	if b.exprs != nil {
		*b.exprs = append(*b.exprs, exprUse{file: b.File, path: b.Path(field), line: b.Line(field), src: src, asBool: asBool})
	}
	return p
}

// Template compiles a Go text/template given inline or as a file under the
// prompts folder. Missing keys are errors when it runs, never "<no value>".
func (b *Build) Template(field, inline, file string) *template.Template {
	name := fmt.Sprintf("%s:%d %s", b.File, b.Line(field), b.Path(field))
	src := inline
	if file != "" {
		path := promptFile(b.PromptsDir, file)
		data, err := os.ReadFile(path)
		if err != nil {
			b.Errf(field, fileHint(b.PromptsDir, file, "(template paths are relative to the prompts folder "+b.PromptsDir+", then to the shipped library's prompts; paths.prompts sets the folder)"), "cannot read template: %v", err)
			return nil
		}
		src, name = string(data), path
	}
	t, err := parseTemplate(name, src)
	if err != nil {
		b.Errf(field, "fix the template syntax", "%v", err)
		return nil
	}
	return t
}

// parseTemplate parses a template with promoral's functions and strict keys.
func parseTemplate(name, src string) (*template.Template, error) {
	return template.New(name).Funcs(templateFuncs).Option("missingkey=error").Parse(src)
}

// templateFuncs are available in every prompt and wording template.
var templateFuncs = template.FuncMap{
	"join": func(sep string, xs any) string {
		switch v := xs.(type) {
		case []string:
			return strings.Join(v, sep)
		case []any:
			s := make([]string, len(v))
			for i, x := range v {
				s[i] = fmt.Sprint(x)
			}
			return strings.Join(s, sep)
		}
		return fmt.Sprint(xs)
	},
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"title": func(s string) string {
		if s == "" {
			return s
		}
		return strings.ToUpper(s[:1]) + s[1:]
	},
	"trim":   strings.TrimSpace,
	"letter": func(i int) string { return string(rune('A' + i)) },
	"add":    func(a, b int) int { return a + b },
	"sub":    func(a, b int) int { return a - b },
	"indent": func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	},
	"percent": func(x any) string {
		switch v := x.(type) {
		case float64:
			return strconv.Itoa(int(v*100 + 0.5))
		case int:
			return strconv.Itoa(v)
		}
		return fmt.Sprint(x)
	},
	"quote": strconv.Quote,
}
