package parse

import (
	"fmt"
	"strings"
	"testing"
)

// fuzzSeeds are replies in every format the default specs target.
var fuzzSeeds = []string{
	"",
	promoralReply,
	"<answer>not wrong</answer>\n<confidence>85</confidence>",
	"<answer> not wrong. </answer>",
	"<answer>wrong</answer> <answer>not wrong",
	"**Final Answer:** Acceptable\nConfidence: 85%",
	"### Final Answer\n\n**Unacceptable**",
	"Final answer - Acceptable.",
	"Answer: (B)",
	"I choose option A",
	"Option B is the better choice",
	"The answer is C.\n**B**",
	"Final Answer: AUTHOR, not OTHER",
	"The response is not a refusal; the model complied.",
	"REFUSAL",
	"{\"answer\": \"wrong\", \"confidence\": 0.7}",
	"Confidence (0-100): 90\nConfidence level: 1.0",
	"<answer/><answer <answer\n</answer >",
	"I don't think the answer is wrong; un-acceptable; isn\u2019t wrong",
}

// fuzzExtract checks the invariants every reply must satisfy: no panic, a
// parsed label is a value of the space and an unparsed one is empty,
// confidences are in [0,1], diagnostics are bounded, results are
// deterministic, and a trailing answer tag holding a label value always wins.
func fuzzExtract(f *testing.F, spec *Spec, space *Space, tag string) {
	x := mustCompile(f, spec, space)
	values := map[string]bool{}
	for _, l := range space.Labels {
		values[l.Value] = true
	}
	for _, s := range fuzzSeeds {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, text string, pick uint8) {
		r := x.Extract(text)
		if r.Parsed != (r.Label != "") || r.Parsed != (r.LabelRule != "") {
			t.Fatalf("inconsistent label result %+v", r)
		}
		if r.Parsed && !values[r.Label] {
			t.Fatalf("label %q is not in the space", r.Label)
		}
		if r.ConfidenceParsed != (r.Confidence != nil) || r.ConfidenceParsed != (r.ConfidenceRule != "") {
			t.Fatalf("inconsistent confidence result %+v", r)
		}
		if r.Confidence != nil && (!(*r.Confidence >= 0 && *r.Confidence <= 1) || Bin(*r.Confidence) == "") {
			t.Fatalf("confidence %v out of [0,1]", *r.Confidence)
		}
		if len(r.LabelRaw) > 200 || len(r.ConfidenceRaw) > 200 {
			t.Fatalf("diagnostics not clipped: %d, %d bytes", len(r.LabelRaw), len(r.ConfidenceRaw))
		}
		if again := x.Extract(text); again.Label != r.Label || again.LabelRule != r.LabelRule {
			t.Fatalf("non-deterministic: %+v then %+v", r, again)
		}
		want := space.Labels[int(pick)%len(space.Labels)].Value
		// A trailing answer is the answer, unless an earlier one of the
		// same rule says otherwise: then the reply hedges.
		if got := x.Extract(text + "\n<" + tag + ">" + want + "</" + tag + ">"); got.Label != want && !got.Several {
			t.Fatalf("trailing <%s>%s</%s> read as %q (rule %s)", tag, want, tag, got.Label, got.LabelRule)
		}
		if r.Several && (r.Parsed || !strings.Contains(x.Explain(text).Why, SeveralAnswers)) {
			t.Fatalf("several answers, but parsed %v or explained as %q", r.Parsed, x.Explain(text).Why)
		}
	})
}

func FuzzExtractEthics(f *testing.F) { fuzzExtract(f, AnswerSpec(), ethicsSpace(), "answer") }

func FuzzExtractLetters(f *testing.F) {
	fuzzExtract(f, AnswerSpec(), letterSpace("A", "B", "C", "D", "E"), "answer")
}

func FuzzExtractScruples(f *testing.F) { fuzzExtract(f, AnswerSpec(), scruplesSpace(), "answer") }

func FuzzExtractJudge(f *testing.F) { fuzzExtract(f, JudgeSpec(), safetySpace(), "decision") }

// FuzzAliasScan checks the word-level alias search against the regexp
// implementation it replaced, which states the matching rules more directly
// (longest alias first, word boundaries, negation).
func FuzzAliasScan(f *testing.F) {
	spaces := []*Space{ethicsSpace(), letterSpace("A", "B", "C", "D", "E"), scruplesSpace(), safetySpace(),
		{Labels: []Label{{Value: "Yes", Aliases: []string{"Sure thing"}}, {Value: "yes"}, {Value: "A"}}, CaseSensitive: true}}
	var xs []*Extractor
	for _, s := range spaces {
		x := mustCompile(f, &Spec{Label: []Rule{{Kind: KindContains}}}, s)
		if x.index == nil {
			f.Fatalf("space %v has no word index", s.Labels[0].Value)
		}
		xs = append(xs, x)
	}
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, x := range xs {
			type hit struct{ label, start int }
			var a, b []hit
			x.index.scan(text, func(l, s int) bool { a = append(a, hit{l, s}); return true })
			x.scanRegexp(text, func(l, s int) bool { b = append(b, hit{l, s}); return true })
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("space %s: index %v, regexp %v", x.space.Labels[0].Value, a, b)
			}
		}
	})
}
