package parse

// lead allows markup between a phrase and its label: spaces, emphasis,
// quotes and an opening bracket ("is **(B)**", "choose 'A'").
const lead = `[\s*_"'\x{201C}(\[]*`

// defaultPhrases are explicit statements of a final choice. They are kept
// narrow on purpose: generic "it is wrong" sentences also occur in reasoning
// that weighs both sides, so they are left to tag/prefix rules. Verbs allow no
// interposed "not"; a negation shortly before the phrase ("I don't think the
// answer is A") discards the match.
//
// Each pattern lists trigger words, one of which every match contains, and
// cheap context checks on the trigger's neighbours. Go's regexp has no fast
// path for case-insensitive patterns (~5 MB/s here), so Extract only runs a
// pattern on short windows around triggers that pass the checks; ordinary
// reasoning ("others would find this acceptable") costs a few byte scans.
var defaultPhrases = []phraseDef{
	{ // "The answer is B", "My final answer is: not wrong", "The correct option is (C)".
		`(?i:\b(?:my|the)\s+(?:final\s+|correct\s+|best\s+|right\s+|overall\s+)?(?:answer|option|choice|verdict|judge?ment|classification|decision|label)\s+(?:is|would\s+be|will\s+be)\s*:?)` +
			lead + `(?i:(?:option|choice)\s+)?` + lead + labelPlaceholder,
		[]string{"answer", "option", "choice", "verdict", "judgment", "judgement", "classification", "decision", "label"},
		nil, []string{"is", "would", "will"}, "",
	},
	{ // "I choose option A", "I would pick B", "I'd go with (B)".
		`(?i:\bI(?:\s+would|\s+will|\s+shall|'d|\x{2019}d|'ll|\x{2019}ll)?\s+(?:choose|pick|select|go\s+with|opt\s+for|prefer)\s*:?)` +
			lead + `(?i:(?:option|choice|answer)\s+)?` + lead + labelPlaceholder,
		[]string{"choose", "pick", "select", "go", "opt", "prefer"},
		[]string{"i", "i would", "i will", "i shall", "i'd", "i'll"}, nil, "",
	},
	{ // "Option B is the better choice", "Choice A is more ethical".
		`(?i:\b(?:option|choice)\s+)` + lead + labelPlaceholder +
			`[*_"'\x{201D})\]]*(?i:\s+is\s+(?:clearly\s+|definitely\s+)?(?:the\s+|a\s+)?(?:better|best|correct|right|preferable|preferred|(?:more|most)\s+(?:ethical|appropriate|moral|reasonable|acceptable))\b)`,
		[]string{"option", "choice"},
		nil, nil, "is",
	},
	{ // "I would classify this as not wrong", "I consider the action unacceptable".
		`(?i:\bI\s+(?:would\s+)?(?:classify|judge|rate|label|consider|deem|find)\s+(?:this|it|that|the\s+(?:action|behaviou?r|scenario|act|conduct|response))\s+(?:as\s+|to\s+be\s+)?)` +
			lead + labelPlaceholder,
		[]string{"classify", "judge", "rate", "label", "consider", "deem", "find"},
		[]string{"i", "i would"}, nil, "",
	},
}

// phraseDef is a phrase pattern with the lower-case words that any match
// contains (see defaultPhrases). Patterns with triggers must begin with \b.
// They are a pure speed-up: the checks only reject windows in which the
// pattern cannot match.
type phraseDef struct {
	pattern  string
	triggers []string // whole words, lower-case; nil: scan the whole reply
	prev     []string // if set, the words before the trigger are one of these
	next     []string // if set, the word after the trigger is one of these
	near     string   // if set, occurs within phraseWindowAfter bytes after the trigger
}

// phraseWindowBefore and phraseWindowAfter bound how far a default phrase
// reaches before and after its trigger word, label included.
const (
	phraseWindowBefore = 80
	phraseWindowAfter  = 200
)
