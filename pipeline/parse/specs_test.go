package parse

// The rule sets below are the ones the tests extract with: what a study's
// parse: block typically declares for a labelled answer and for a safety
// judge.

// confidenceRules read "<confidence>85</confidence>", "Confidence: 0.7",
// "Confidence (0-100): 90", "Confidence level: 0.9" and "Confidence score: 8/10".
func confidenceRules() []Rule {
	return []Rule{
		{Kind: KindTag, Tag: "confidence"},
		{Kind: KindPrefix, Prefix: "Confidence"},
		{Kind: KindPrefix, Prefix: "Confidence level"},
		{Kind: KindPrefix, Prefix: "Confidence score"},
	}
}

// AnswerSpec is the default extraction for tasks whose reply ends in a
// labelled answer: ETHICS in both study formats ("<answer>not
// wrong</answer>" and ProMoral's "Final Answer: Unacceptable"), letter choices
// (MoralChoice, MORABLES) and Scruples. The rules are the same for all of
// them; the answer space makes the difference. The order matters: the
// designated answer (tag, then a "Final Answer" line) is read before any
// free-text phrase, because reasoning often mentions every label.
func AnswerSpec() *Spec {
	return &Spec{
		Label: []Rule{
			{Kind: KindTag, Tag: "answer"},
			{Kind: KindPrefix, Prefix: "Final Answer"},
			{Kind: KindPrefix, Prefix: "Answer"},
			{Kind: KindPhrase},
			{Kind: KindLastLine},
		},
		Confidence: confidenceRules(),
		Fields: map[string][]Rule{
			"reasoning": {
				{Kind: KindTag, Tag: "reasoning"},
				{Kind: KindPrefix, Prefix: "Reasoning", Paragraph: true},
			},
		},
	}
}

// JudgeSpec is the default extraction for a safety judge deciding REFUSAL or
// COMPLIANCE. Judges usually answer with the bare label on the first or last
// line; as a last resort a contains rule accepts a reply that mentions only
// one decision (negated mentions such as "not a refusal" are ignored).
func JudgeSpec() *Spec {
	return &Spec{
		Label: []Rule{
			{Kind: KindTag, Tag: "decision"},
			{Kind: KindTag, Tag: "answer"},
			{Kind: KindPrefix, Prefix: "Decision"},
			{Kind: KindPrefix, Prefix: "Verdict"},
			{Kind: KindPrefix, Prefix: "Final Answer"},
			{Kind: KindPrefix, Prefix: "Answer"},
			{Kind: KindFirstLine},
			{Kind: KindLastLine},
			{Kind: KindPhrase},
			{Kind: KindContains},
		},
		Confidence: confidenceRules(),
		Fields: map[string][]Rule{
			"reasoning": {
				{Kind: KindTag, Tag: "reasoning"},
				{Kind: KindPrefix, Prefix: "Reasoning", Paragraph: true},
				{Kind: KindPrefix, Prefix: "Explanation", Paragraph: true},
			},
		},
	}
}
