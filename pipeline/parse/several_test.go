package parse

import (
	"strings"
	"testing"
)

// A hedged reply, two different answers where a rule reads its answer, is
// unparsed with the reason "several answers", whatever the rule's kind; a
// later, weaker rule does not pick one of them. occurrence: first or last
// takes that answer alone.
func TestSeveralAnswers(t *testing.T) {
	letters := letterSpace("A", "B", "C")
	cases := []struct {
		name, text string
		rule       Rule
		want       string // "" = several answers
	}{
		{"tags", "<answer>A</answer> or <answer>B</answer>", Rule{Kind: KindTag, Tag: "answer"}, ""},
		{"tags last", "<answer>A</answer> or <answer>B</answer>", Rule{Kind: KindTag, Tag: "answer", Occurrence: OccurrenceLast}, "B"},
		{"tags first", "<answer>A</answer> or <answer>B</answer>", Rule{Kind: KindTag, Tag: "answer", Occurrence: OccurrenceFirst}, "A"},
		{"tags unique, written", "<answer>A</answer> or <answer>B</answer>", Rule{Kind: KindTag, Tag: "answer", Occurrence: OccurrenceUnique}, ""},
		{"tags agree", "<answer>A</answer>\n\n<answer>(A)</answer>", Rule{Kind: KindTag, Tag: "answer"}, "A"},
		{"tags, one not a label", "<answer>your letter</answer> ... <answer>C</answer>", Rule{Kind: KindTag, Tag: "answer"}, "C"},
		{"tags, a third differs", "<answer>A</answer> <answer>A</answer> <answer>C</answer>", Rule{Kind: KindTag, Tag: "answer"}, ""},
		{"prefix lines", "Final Answer: A\nOn second thought...\nFinal Answer: B", Rule{Kind: KindPrefix, Prefix: "Final Answer"}, ""},
		{"prefix lines last", "Final Answer: A\nOn second thought...\nFinal Answer: B", Rule{Kind: KindPrefix, Prefix: "Final Answer", Occurrence: OccurrenceLast}, "B"},
		{"prefix mid-line", "so. Final Answer: A\nor else. Final Answer: C", Rule{Kind: KindPrefix, Prefix: "Final Answer"}, ""},
		{"regex", "pick=A; pick=B", Rule{Kind: KindRegex, Pattern: `pick=(\w)`}, ""},
		{"regex one match", "pick=B", Rule{Kind: KindRegex, Pattern: `pick=(\w)`}, "B"},
		{"regex at line starts", "Choice: A\nChoice: A\nChoice: C", Rule{Kind: KindRegex, Pattern: `(?m)^Choice: (\w)`}, ""},
		{"regex agree", "Choice: A\nChoice: A", Rule{Kind: KindRegex, Pattern: `(?m)^Choice: (\w)`}, "A"},
		{"json", `{"answer": "A"} {"answer": "C"}`, Rule{Kind: KindJSON, Key: "answer"}, ""},
		{"json last", `{"answer": "A"} {"answer": "C"}`, Rule{Kind: KindJSON, Key: "answer", Occurrence: OccurrenceLast}, "C"},
		{"phrases", "I choose A. Then again, the answer is B.", Rule{Kind: KindPhrase}, ""},
		{"phrases last", "I choose A. Then again, the answer is B.", Rule{Kind: KindPhrase, Occurrence: OccurrenceLast}, "B"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A last_line rule after it would read "B" from the hedge's
			// last line: it must not get the chance.
			x := mustCompile(t, &Spec{Label: []Rule{tc.rule, {Kind: KindLastLine, Match: MatchSearch}}}, letters)
			r := x.Extract(tc.text)
			if tc.want != "" {
				if r.Label != tc.want || r.Several {
					t.Errorf("read %q (several %v), want %q", r.Label, r.Several, tc.want)
				}
				return
			}
			if r.Parsed || !r.Several {
				t.Fatalf("read %q (parsed %v, several %v, rule %s), want unparsed: several answers", r.Label, r.Parsed, r.Several, r.LabelRule)
			}
			m := x.Explain(tc.text)
			if !strings.HasPrefix(m.Why, SeveralAnswers+": ") || m.Rule != x.label[0].name {
				t.Errorf("explained by rule %q as %q, want rule %q and %q", m.Rule, m.Why, x.label[0].name, SeveralAnswers)
			}
			if !strings.Contains(m.Fix, "occurrence: last") {
				t.Errorf("the fix does not name the opt-in: %q", m.Fix)
			}
			if r.LabelRaw == "" || !strings.Contains(r.LabelRaw, "…") {
				t.Errorf("label_raw %q does not show both answers", r.LabelRaw)
			}
		})
	}
}

// The case with the shipped ETHICS rules: a hedge is unparsed, as
// the ETHICS answer space reads it.
func TestSeveralAnswersEthicsDefaults(t *testing.T) {
	x := mustCompile(t, AnswerSpec(), ethicsSpace())
	r := x.Extract("<answer>wrong</answer> or <answer>not wrong</answer>\n<confidence>60</confidence>")
	if r.Parsed || !r.Several {
		t.Fatalf("read %q (several %v)", r.Label, r.Several)
	}
	if !r.ConfidenceParsed {
		t.Error("the confidence of a hedged reply is still read")
	}
	if why := x.Explain("<answer>wrong</answer> or <answer>not wrong</answer>").Why; why != "several answers: the reply gives both unacceptable and acceptable" {
		t.Errorf("why = %q", why)
	}
}
