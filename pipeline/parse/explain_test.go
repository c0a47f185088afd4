package parse

import (
	"strings"
	"testing"
)

func TestExplainMisses(t *testing.T) {
	space := &Space{Labels: []Label{{Value: "acceptable"}, {Value: "unacceptable"}}}
	cases := []struct {
		name  string
		rules []Rule
		text  string
		shape string
		rule  string
		found string
		why   string // substring
		fix   string // substring; "" = no fix
	}{
		{
			name: "another header", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer"}},
			text:  "The act hurts no one.\nAnswer: Unacceptable",
			shape: "answer: ‹label›", rule: "prefix:Final Answer",
			why: `no line starts with "final answer"`, fix: `{kind: prefix, prefix: "Answer"} reads this reply as unacceptable`,
		},
		{
			name: "value outside the space", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer"}},
			text:  "Reasoning: unclear.\nFinal Answer: Context-dependent",
			shape: "final answer: ‹no label›", rule: "prefix:Final Answer", found: "Context-dependent",
			why: `it read "Context-dependent", which is no label or alias`, fix: "add it as an alias",
		},
		{
			name: "two labels", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer"}},
			text:  "Final Answer: acceptable or unacceptable",
			shape: "final answer: ‹several labels›", found: "acceptable or unacceptable",
			why: "names several labels (acceptable, unacceptable)",
		},
		{
			name: "exact match on a sentence", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer", Match: MatchExact}},
			text:  "Final Answer: it is unacceptable",
			shape: "final answer: ‹label› and more words", found: "it is unacceptable",
			why: "names unacceptable but is not exactly a label", fix: "set match: search",
		},
		{
			name: "other tag", rules: []Rule{{Kind: KindTag, Tag: "answer"}},
			text:  "<verdict>acceptable</verdict>",
			shape: "last line: ‹label› and more words", rule: "tag:answer",
			why: "uses <verdict>", fix: "{kind: tag, tag: verdict}",
		},
		{
			name: "case", rules: []Rule{{Kind: KindRegex, Name: "verdict", Pattern: `Verdict: (\w+)`}},
			text:  "VERDICT: acceptable",
			shape: "verdict: ‹label›", rule: "verdict",
			why: "only when letter case is ignored", fix: "(?i)",
		},
		{
			name: "markup", rules: []Rule{{Kind: KindRegex, Name: "line", Pattern: `(?m)^Final Answer: (\w+)$`}},
			text:  "Some thought.\n*Final Answer: Unacceptable*",
			shape: "final answer: ‹label›", rule: "line", found: "Unacceptable",
			why: "once markup", fix: `{kind: prefix, prefix: "Final Answer"} reads this reply as unacceptable`,
		},
		{
			name: "the nearest rule wins", rules: []Rule{{Kind: KindTag, Tag: "answer"}, {Kind: KindPrefix, Prefix: "Final Answer"}},
			text:  "Final Answer: maybe",
			shape: "final answer: ‹no label›", rule: "prefix:Final Answer", found: "maybe",
			why: `it read "maybe"`,
		},
		{
			name: "negated", rules: []Rule{{Kind: KindContains}},
			text:  "I would not call it acceptable.",
			shape: "last line: ‹negated label›", rule: "contains",
			why: "negated",
		},
		{
			name: "cut off", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer"}},
			text:  "A long discussion of the case.\nConfidence: 0.",
			shape: "confidence: ‹number›", rule: "prefix:Final Answer",
			why: "no line starts with",
		},
		{
			name: "prose ending is not a rule", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer"}},
			text:  "Overall the behaviour is widely acceptable to most people in most places where",
			shape: "last line: ‹label› and more words", why: "no line starts with",
		},
		{
			name: "bracketed header", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer"}},
			text:  "Some steps.\n\n[Answer Extraction]: acceptable",
			shape: "answer extraction: ‹label›", why: "no line starts with",
			fix: `{kind: regex, pattern: '(?im)^[^\pL\n]*Answer\W+Extraction[^\pL\n:]*:\s*(.+)$'} reads this reply as acceptable`,
		},
		{
			name: "empty", rules: []Rule{{Kind: KindPrefix, Prefix: "Final Answer"}},
			text: "  \n", shape: "(empty reply)", why: "the reply is empty",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := mustCompile(t, &Spec{Label: tc.rules}, space)
			if r := x.Extract(tc.text); r.Parsed {
				t.Fatalf("the reply parses (%s by %s): not a miss", r.Label, r.LabelRule)
			}
			m := x.Explain(tc.text)
			if m.Shape != tc.shape {
				t.Errorf("shape = %q, want %q", m.Shape, tc.shape)
			}
			if tc.rule != "" && m.Rule != tc.rule {
				t.Errorf("rule = %q, want %q", m.Rule, tc.rule)
			}
			if tc.found != "" && strings.TrimSpace(m.Found) != tc.found {
				t.Errorf("found = %q, want %q", m.Found, tc.found)
			}
			if !strings.Contains(m.Why, tc.why) {
				t.Errorf("why = %q, want it to contain %q", m.Why, tc.why)
			}
			if tc.fix == "" && m.Fix != "" && strings.Contains(m.Fix, "reads this reply") {
				t.Errorf("fix = %q, want no rule suggested", m.Fix)
			}
			if tc.fix != "" && !strings.Contains(m.Fix, tc.fix) {
				t.Errorf("fix = %q, want it to contain %q", m.Fix, tc.fix)
			}
		})
	}
}

// A suggested rule is one that reads the reply: check every suggestion on
// its own reply.
func TestExplainSuggestionsParse(t *testing.T) {
	space := &Space{Labels: []Label{{Value: "acceptable"}, {Value: "unacceptable"}}}
	x := mustCompile(t, &Spec{Label: []Rule{{Kind: KindTag, Tag: "answer"}}}, space)
	for _, text := range []string{
		"Verdict: unacceptable", "**Decision:** Acceptable.", "Thinking...\n\nunacceptable", "### My Conclusion - acceptable",
		"Steps.\n[Answer Extraction]: acceptable",
	} {
		m := x.Explain(text)
		if !strings.Contains(m.Fix, "reads this reply as") {
			t.Errorf("%q: no rule suggested (%+v)", text, m)
			continue
		}
		i := strings.Index(m.Fix, "{kind")
		j := strings.LastIndex(m.Fix, "}")
		rule := m.Fix[i : j+1]
		var r Rule
		switch {
		case strings.Contains(rule, "regex"):
			p := rule[strings.Index(rule, "'")+1 : strings.LastIndex(rule, "'")]
			r = Rule{Kind: KindRegex, Pattern: p}
		case strings.Contains(rule, "prefix"):
			p := rule[strings.Index(rule, `"`)+1 : strings.LastIndex(rule, `"`)]
			r = Rule{Kind: KindPrefix, Prefix: p}
		default:
			r = Rule{Kind: KindLastLine, Match: MatchSearch}
		}
		got := mustCompile(t, &Spec{Label: []Rule{r}}, space).Extract(text)
		if !got.Parsed || !strings.HasSuffix(m.Fix, got.Label) {
			t.Errorf("%q: suggested %s, which reads %q (parsed %v)", text, rule, got.Label, got.Parsed)
		}
	}
	if m := mustCompile(t, &Spec{Fields: map[string][]Rule{"why": {{Kind: KindPrefix, Prefix: "Why"}}}}, space).Explain("x"); !strings.Contains(m.Why, "no label rules") {
		t.Errorf("fields-only extraction: %+v", m)
	}
}
