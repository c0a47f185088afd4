package stages

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"

	"github.com/promoral/promoral/pipeline/parse"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

func init() {
	spec.Register(spec.Kind{
		Name: "extract",
		Doc:  "Turns a reply into typed fields with ordered rules: label (from the answer space), confidence (0-1), and free fields. A miss publishes parsed: false, never a wrong label.",
		New:  func() spec.Config { return &ExtractConfig{} },
	})
}

// ExtractConfig is the YAML of an extract stage.
type ExtractConfig struct {
	spec.StageBase `yaml:",inline"`
	From           string                  `yaml:"from,omitempty" doc:"Prompt stage whose reply to read (default: the nearest prompt stage before this one)."`
	Text           string                  `yaml:"text,omitempty" doc:"Expression giving the text to read instead of a reply, e.g. item.reply to re-score recorded replies."`
	Rules          *parse.Spec             `yaml:"rules,omitempty" doc:"Extraction rules (default: the task's extract rules)."`
	Answer         *parse.Space            `yaml:"answer,omitempty" doc:"Answer space (default: the task's), e.g. REFUSAL/COMPLIANCE for a judge."`
	Fields         map[string][]parse.Rule `yaml:"fields,omitempty" doc:"Extra free-text fields to read on top of the rules in force (the task's or rules:), e.g. tagged reasoning steps."`
	OnMiss         string                  `yaml:"on_miss,omitempty" enum:"unparsed,error" default:"unparsed" doc:"What a reply without a label does: unparsed (default: the stage publishes parsed: false and the strategy goes on) or error (the case fails with error class unreadable, or refused when the refusal pattern matches: a judge's own refusal or garbled verdict is counted as an error of the judge, never read as a label)."`
	Refusal        string                  `yaml:"refusal,omitempty" doc:"With on_miss: error, a Go regex that marks a reply without a label as a refusal to answer (error class refused instead of unreadable)."`
}

type extract struct {
	name     string
	from     string
	text     *vm.Program
	rules    *parse.Spec
	space    *parse.Space
	compiled sync.Map // *spec.Task -> *parse.Extractor or error
	fields   []string
	extra    map[string][]parse.Rule
	strict   bool
	refusal  *regexp.Regexp
}

// Sample gives example outputs for dry runs.
func (c *ExtractConfig) Sample() map[string]any {
	out := map[string]any{"label": "", "parsed": true, "label_rule": "", "label_raw": "", "confidence": 0.5, "confidence_parsed": true, "confidence_bin": "moderate"}
	if c.Rules != nil {
		for k := range c.Rules.Fields {
			out[k] = ""
		}
	}
	for k := range c.Fields {
		out[k] = ""
	}
	return out
}

// FieldTypes are the types of what the stage publishes, for the checker;
// a confidence and the free fields may be missing (nil), so they stay open.
func (c *ExtractConfig) FieldTypes() map[string]types.Type {
	out := map[string]types.Type{"label": types.String, "parsed": types.Bool, "label_rule": types.String, "label_raw": types.String,
		"confidence": types.Any, "confidence_parsed": types.Bool, "confidence_bin": types.String}
	if c.Rules != nil {
		for k := range c.Rules.Fields {
			out[k] = types.Any
		}
	}
	for k := range c.Fields {
		out[k] = types.Any
	}
	return out
}

var extractReserved = map[string]bool{"label": true, "parsed": true, "label_rule": true, "label_raw": true, "confidence": true, "confidence_parsed": true, "confidence_bin": true}

// Build checks the source and any own rules.
func (c *ExtractConfig) Build(b *spec.Build) spec.Stage {
	x := &extract{name: c.Name, from: c.From, rules: c.Rules, space: c.Answer, extra: c.Fields, strict: c.OnMiss == "error"}
	if c.Refusal != "" {
		re, err := regexp.Compile(c.Refusal)
		switch {
		case err != nil:
			b.Errf("refusal", "write a Go (RE2) regular expression", "refusal: %v", err)
		case !x.strict:
			b.Errf("refusal", "add on_miss: error", "refusal only applies with on_miss: error")
		}
		x.refusal = re
	}
	switch {
	case c.From != "" && c.Text != "":
		b.Errf("from", "give from or text, not both", "both from and text are set")
	case c.Text != "":
		x.text = b.Expr("text", c.Text, false)
	case c.From != "":
		if !b.Names[c.From] {
			b.Errf("from", yamlstrict.NameHint(c.From, b.StageNames(), "name a prompt stage of this strategy"), "no stage %q", c.From)
		}
	default:
		for i := b.Index - 1; i >= 0; i-- {
			if sc := b.Strategy.Stages[i].Config; sc != nil {
				if _, ok := sc.(*PromptConfig); ok {
					x.from = sc.Base().Name
					break
				}
			}
		}
		if x.from == "" {
			b.Errf("from", "set from or text", "no prompt stage before this extract stage to read")
		}
	}
	if c.Answer != nil {
		for _, err := range c.Answer.Check() {
			b.Errf("answer", "", "%v", err)
		}
	}
	for k := range c.Fields {
		if extractReserved[k] {
			b.Errf("fields."+k, "rename the field", "%q is a built-in extract output", k)
		}
		if c.Rules != nil && c.Rules.Fields[k] != nil {
			b.Errf("fields."+k, "declare it once", "field %q is also in rules.fields", k)
		}
		x.fields = append(x.fields, k)
	}
	for k := range c.Fields {
		if extractReserved[k] {
			b.Errf("fields."+k, "rename the field", "%q is a built-in extract output", k)
		}
		if c.Rules != nil && c.Rules.Fields[k] != nil {
			b.Errf("fields."+k, "declare it once", "field %q is also in rules.fields", k)
		}
		x.fields = append(x.fields, k)
	}
	if c.Rules != nil {
		for k := range c.Rules.Fields {
			if extractReserved[k] {
				b.Errf("rules.fields."+k, "rename the field", "%q is a built-in extract output", k)
			}
			x.fields = append(x.fields, k)
		}
		if c.Answer != nil {
			for _, err := range c.Rules.Check(c.Answer) {
				b.Errf("rules", "", "%v", err)
			}
		}
	}
	return x
}

// extractor compiles (once per task) the rules against the answer space.
func (x *extract) extractor(t *spec.Task) (*parse.Extractor, error) {
	if x.rules == nil && x.space == nil && len(x.extra) == 0 {
		if t.Extract == nil {
			return nil, fmt.Errorf("task %s declares no answer labels, so give this stage its own rules and answer", t.Name)
		}
		return t.Extract, nil
	}
	if v, ok := x.compiled.Load(t); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*parse.Extractor), nil
	}
	space := x.space
	if space == nil {
		space = t.Space
	}
	rules := x.rules
	if rules == nil {
		rules = &t.Spec.Extract
	}
	if len(x.extra) > 0 {
		merged := *rules
		merged.Fields = map[string][]parse.Rule{}
		for k, v := range rules.Fields {
			merged.Fields[k] = v
		}
		for k, v := range x.extra {
			merged.Fields[k] = v
		}
		rules = &merged
	}
	var res any
	if space == nil {
		res = fmt.Errorf("task %s declares no answer labels, so give this stage an answer space", t.Name)
	} else if ex, err := parse.Compile(rules, space); err != nil {
		res = err
	} else {
		res = ex
	}
	x.compiled.Store(t, res)
	if err, isErr := res.(error); isErr {
		return nil, err
	}
	return res.(*parse.Extractor), nil
}

// Check compiles the extractor for the task, and evaluates the text
// expression, so bad rules or a text naming a missing field fail early.
func (x *extract) Check(t *spec.Task, env map[string]any) error {
	if _, err := x.extractor(t); err != nil {
		return err
	}
	if x.text != nil {
		if err := spec.CheckFields(x.text, env, "item", "subject"); err != nil {
			return fmt.Errorf("text: %v", err)
		}
		v, err := expr.Run(x.text, env)
		if err != nil {
			return fmt.Errorf("text: %v", err)
		}
		if v == nil {
			return fmt.Errorf("text gives nothing for this item, so every case would be unparsed")
		}
	}
	return nil
}

// missError is the failure of a strict stage that read no label: the
// reply's refusal, or its unreadable answer, with where it fell short.
func (x *extract) missError(text string, m parse.Miss) *spec.ClassError {
	reply := clipReply(text, 160)
	if x.refusal != nil && x.refusal.MatchString(text) {
		return &spec.ClassError{Class: spec.ClassRefused, Msg: fmt.Sprintf("the reply declines to answer instead of giving a label: %q", reply)}
	}
	return &spec.ClassError{Class: spec.ClassUnreadable, Msg: fmt.Sprintf("no label in the reply (%s): %q", m.Why, reply)}
}

// clipReply is the reply on one line, cut to about n bytes.
func clipReply(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Run reads the text and publishes the fields.
func (x *extract) Run(ex spec.Exec) (string, error) {
	var text string
	if x.text != nil {
		v, err := expr.Run(x.text, ex.Env())
		if err != nil {
			return "", ex.Errorf(x.name, "text: %v", err)
		}
		if v != nil {
			text = fmt.Sprint(v)
		}
	} else {
		if ex.Visits(x.from) == 0 {
			return "", ex.Errorf(x.name, "reads stage %q, which has not run in this case", x.from)
		}
		text, _ = ex.Get(x.from)["text"].(string)
	}
	e, err := x.extractor(ex.Task())
	if err != nil {
		return "", ex.Errorf(x.name, "%v", err)
	}
	r := e.Extract(text)
	if x.text != nil {
		ex.Note("source", "text")
	} else {
		ex.Note("source", x.from)
	}
	if !r.Parsed && e.HasLabelRules() {
		miss := e.Explain(text)
		ex.Note("miss", miss)
		if x.strict {
			return "", ex.Errorf(x.name, "%w", x.missError(text, miss))
		}
	}
	out := map[string]any{
		"label": r.Label, "parsed": r.Parsed, "label_rule": r.LabelRule, "label_raw": r.LabelRaw,
		"confidence": nil, "confidence_parsed": r.ConfidenceParsed, "confidence_bin": "",
	}
	if r.Confidence != nil {
		out["confidence"] = *r.Confidence
		out["confidence_bin"] = parse.Bin(*r.Confidence)
	}
	for _, k := range x.fields {
		out[k] = r.Fields[k]
	}
	ex.Set(x.name, out)
	return "", nil
}
