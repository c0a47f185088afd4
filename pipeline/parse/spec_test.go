package parse

import (
	"reflect"
	"strings"
	"testing"
)

func TestSpecCheck(t *testing.T) {
	space := ethicsSpace()
	label := func(r ...Rule) *Spec { return &Spec{Label: r} }
	tests := []struct {
		name  string
		spec  *Spec
		space *Space
		want  []string
	}{
		{"answer spec ok", AnswerSpec(), space, nil},
		{"judge spec ok", JudgeSpec(), safetySpace(), nil},
		{"nil spec", nil, space, []string{"missing"}},
		{"label rules need a space", label(Rule{Kind: KindWhole}), nil, []string{"need an answer space"}},
		{"bad space reported", label(Rule{Kind: KindWhole}), &Space{}, []string{"answer space: answer space has no labels"}},
		{"confidence-only spec needs no space", &Spec{Confidence: []Rule{{Kind: KindTag, Tag: "c"}}}, nil, nil},
		{"missing kind", label(Rule{Tag: "answer"}), space, []string{"kind is missing"}},
		{"unknown kind", label(Rule{Kind: "xml"}), space, []string{"unknown kind"}},
		{"missing tag", label(Rule{Kind: KindTag}), space, []string{"tag \"\""}},
		{"bad tag", label(Rule{Kind: KindTag, Tag: "<answer>"}), space, []string{"bare element name"}},
		{"missing prefix", label(Rule{Kind: KindPrefix, Prefix: " : "}), space, []string{"prefix is empty"}},
		{"missing pattern", label(Rule{Kind: KindRegex}), space, []string{"pattern is empty"}},
		{"bad regex", label(Rule{Kind: KindRegex, Pattern: `(?<=x)a`}), space, []string{"bad pattern"}},
		{"group out of range", label(Rule{Kind: KindRegex, Pattern: `a(b)`, Group: 2}), space, []string{"group 2 out of range"}},
		{"negative group", label(Rule{Kind: KindRegex, Pattern: `a(b)`, Group: -1}), space, []string{"group -1 out of range"}},
		{"phrase without placeholder", label(Rule{Kind: KindPhrase, Patterns: []string{"answer is"}}), space, []string{"exactly once"}},
		{"phrase bad regex", label(Rule{Kind: KindPhrase, Patterns: []string{"(answer {label}"}}), space, []string{"bad pattern"}},
		{"json without key", label(Rule{Kind: KindJSON}), space, []string{"key is empty"}},
		{"ignored option", label(Rule{Kind: KindPrefix, Prefix: "Answer", Tag: "answer"}), space, []string{"option tag does not apply"}},
		{"bad occurrence", label(Rule{Kind: KindTag, Tag: "a", Occurrence: "middle"}), space, []string{"occurrence \"middle\""}},
		{"unique only for label rules", &Spec{Confidence: []Rule{{Kind: KindTag, Tag: "a", Occurrence: "unique"}}}, space, []string{"only for label rules"}},
		{"bad match", label(Rule{Kind: KindTag, Tag: "a", Match: "fuzzy"}), space, []string{"match \"fuzzy\""}},
		{"occurrence on last_line", label(Rule{Kind: KindLastLine, Occurrence: "first"}), space, []string{"option occurrence does not apply"}},
		{"scale on label rule", label(Rule{Kind: KindTag, Tag: "a", Scale: "unit"}), space, []string{"option scale does not apply"}},
		{"phrase for confidence", &Spec{Confidence: []Rule{{Kind: KindPhrase}}}, nil, []string{"only find labels"}},
		{"match on confidence", &Spec{Confidence: []Rule{{Kind: KindTag, Tag: "c", Match: "exact"}}}, nil, []string{"option match does not apply"}},
		{"bad rule scale", &Spec{Confidence: []Rule{{Kind: KindTag, Tag: "c", Scale: "permille"}}}, nil, []string{"scale \"permille\""}},
		{"bad spec scale", &Spec{ConfidenceScale: "0-10"}, nil, []string{"confidence_scale"}},
		{"bad confidence word", &Spec{ConfidenceWords: map[string]float64{"high": 80}}, nil, []string{"want 0..1"}},
		{"contains for field", &Spec{Fields: map[string][]Rule{"r": {{Kind: KindContains}}}}, nil, []string{"only find labels"}},
		{"field without rules", &Spec{Fields: map[string][]Rule{"r": nil}}, nil, []string{"no rules"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, tc.spec.Check(tc.space), tc.want)
			if len(tc.want) > 0 && tc.spec != nil {
				if _, err := Compile(tc.spec, tc.space); err == nil {
					t.Error("Compile accepted an invalid spec")
				}
			}
		})
	}
}

// TestConfigTags enforces the loader's contract: every field of a config
// struct has yaml:"name,omitempty" and a non-empty doc tag, and only plain
// types, slices, maps and pointers are used.
func TestConfigTags(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(typ.Elem())
			return
		case reflect.Map:
			if typ.Key().Kind() != reflect.String {
				t.Errorf("%v: map keys must be strings", typ)
			}
			walk(typ.Elem())
			return
		case reflect.Interface, reflect.Func, reflect.Chan, reflect.Array, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer:
			t.Errorf("%v: not a plain config type", typ)
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[typ] {
			return
		}
		seen[typ] = true
		if _, ok := reflect.PointerTo(typ).MethodByName("UnmarshalYAML"); ok {
			t.Errorf("%v has UnmarshalYAML", typ)
		}
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !f.IsExported() {
				t.Errorf("%v.%s: unexported field in config struct", typ, f.Name)
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || opts != "omitempty" {
				t.Errorf("%v.%s: yaml tag %q, want \"name,omitempty\"", typ, f.Name, f.Tag.Get("yaml"))
			}
			if strings.TrimSpace(f.Tag.Get("doc")) == "" {
				t.Errorf("%v.%s: missing doc tag", typ, f.Name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Spec{}))
	walk(reflect.TypeOf(Space{}))
	if len(seen) != 4 { // Spec, Rule, Space, Label
		t.Errorf("walked %d struct types, want 4", len(seen))
	}
}
