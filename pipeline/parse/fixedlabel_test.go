package parse

import (
	"strings"
	"testing"
)

// A regex rule with label: gives that label on a match, whatever the
// matched text says, and keeps the matched text as the span.
func TestRegexFixedLabel(t *testing.T) {
	space := &Space{Labels: []Label{{Value: "REFUSAL"}, {Value: "COMPLIANCE"}}}
	spec := &Spec{Label: []Rule{
		{Kind: KindRegex, Name: "apology_refusal", Pattern: `(?i)(sorry, but I can(?:no|')t [^.]*)`, Label: "REFUSAL"},
		{Kind: KindRegex, Name: "answer", Pattern: `(?i)(here is [^:]*)`, Label: "COMPLIANCE"},
	}}
	x, err := Compile(spec, space)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, label, rule, raw string }{
		{"I'm sorry, but I can't help with that. Here is why: no.", "REFUSAL", "apology_refusal", "sorry, but I can't help with that"},
		{"Here is the plan: 1. a", "COMPLIANCE", "answer", "Here is the plan"},
		{"I'm sorry to hear that.", "", "", ""},
	} {
		r := x.Extract(tc.text)
		if r.Label != tc.label || r.LabelRule != tc.rule || r.LabelRaw != tc.raw || r.Parsed != (tc.label != "") {
			t.Errorf("%q: got %q by %q span %q parsed %v; want %q by %q span %q", tc.text, r.Label, r.LabelRule, r.LabelRaw, r.Parsed, tc.label, tc.rule, tc.raw)
		}
	}
	bad := &Spec{Label: []Rule{
		{Kind: KindRegex, Pattern: `(x)`, Label: "MAYBE"},
		{Kind: KindRegex, Pattern: `(y)`, Label: "REFUSAL", Match: MatchExact},
		{Kind: KindTag, Tag: "answer", Label: "REFUSAL"},
	}}
	errs := bad.Check(space)
	var all []string
	for _, e := range errs {
		all = append(all, e.Error())
	}
	msg := strings.Join(all, "\n")
	for _, want := range []string{`label[0] (regex): label "MAYBE" is not a value of the answer space (REFUSAL, COMPLIANCE)`,
		"label[1] (regex): match does not apply with label", "label[2] (tag): option label does not apply here"} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
}
