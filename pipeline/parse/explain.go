package parse

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Miss explains a reply from which no label was read, so that a person
// can fix a rule: what the reply looks like where an answer would be (its
// Shape, with labels and other values masked so that like replies group
// together), the label rule that came closest, what that rule read, why it
// did not count, and a rule that would read it when one can be found (it
// is checked against this reply before it is suggested).
type Miss struct {
	Shape string `json:"shape"`
	Line  string `json:"line,omitempty"` // the answer line the shape describes
	Rule  string `json:"rule,omitempty"`
	Found string `json:"found,omitempty"`
	Why   string `json:"why"`
	Fix   string `json:"fix,omitempty"`
}

// Explain says why Extract read no label from text. It is for the few
// replies that miss, not the hot path: it may compile a suggested rule.
func (x *Extractor) Explain(text string) Miss {
	line := answerLine(text)
	line.class = x.classify(line.value)
	m := Miss{Shape: x.shape(line, text), Line: clip(line.line)}
	if strings.TrimSpace(text) == "" {
		m.Why = "the reply is empty (see its call: cut off, blocked by the provider, or an empty answer)"
		return m
	}
	if len(x.label) == 0 {
		m.Why = "the extraction has no label rules"
		m.Fix = "add label rules (extract.label) to the task or the extract stage"
		return m
	}
	for i := range x.label {
		c := &x.label[i]
		if a, raw, _, b := x.findLabel(c, text); b >= 0 {
			m.Rule, m.Found, m.Why = c.name, clip(raw), x.severalWhy(a, b)
			m.Fix = fmt.Sprintf("a reply that hedges stays unparsed; if the replies give a first judgement and then the final one, set occurrence: last (or first) on rule %s", c.name)
			return m
		}
	}
	best := diagnosis{score: -1}
	for i := range x.label {
		if d := x.diagnose(&x.label[i], text); d.score > best.score {
			best = d
		}
	}
	m.Rule, m.Found, m.Why, m.Fix = best.rule, clip(best.found), best.why, best.fix
	if s := x.suggest(line, text); s != "" {
		if m.Fix != "" {
			m.Fix += "; or "
		}
		m.Fix += s
	}
	if m.Fix == "" && line.answerish && line.class == classNone {
		m.Fix = fmt.Sprintf("the reply answers %q, which is no label: if that is a real answer, add it as an alias of the label it means; otherwise the case stays unparsed, counted under the metric's unparsed policy", clip(cleanValue(line.value)))
	}
	return m
}

// HasLabelRules reports whether the extractor reads labels at all (an
// extraction of free fields only never misses a label).
func (x *Extractor) HasLabelRules() bool { return len(x.label) > 0 }

type diagnosis struct {
	score           int // 3: read text that did not resolve; 2: a near variant would read; 1: nothing
	rule            string
	found, why, fix string
}

func (x *Extractor) diagnose(c *compiled, text string) diagnosis {
	d := diagnosis{rule: c.name, score: 1}
	switch c.kind {
	case KindPhrase:
		d.why = "no explicit choice phrase (\"the answer is X\", \"I choose X\") names a label"
		if labels, _ := x.mentions(text); len(labels) > 0 {
			d.why += fmt.Sprintf("; the reply mentions %s elsewhere", x.names(labels))
		}
		return d
	case KindContains:
		labels, neg := x.mentions(text)
		switch {
		case len(labels) > 1:
			d.score, d.why = 3, fmt.Sprintf("the reply names several labels (%s), so a search cannot pick one", x.names(labels))
			d.fix = "add a rule that reads the answer's own place (a prefix, tag or last line) before this one"
		case neg:
			d.score, d.why = 3, "every mention of a label is negated (\"not wrong\")"
			d.fix = "if the negated form is an answer, list it as an alias (e.g. \"not wrong\" of the opposite label)"
		default:
			d.why = "the reply names no label or alias of the answer space"
		}
		return d
	}
	raw, found := c.candidate(text)
	if found {
		d.score, d.found = 3, raw
		d.why, d.fix = x.unresolved(c, raw)
		return d
	}
	switch c.kind {
	case KindPrefix:
		d.why = fmt.Sprintf("no line starts with %q", strings.Join(c.prefix.words, " "))
		if i := indexFold(text, strings.Join(c.prefix.words, " ")); i >= 0 {
			d.score = 2
			d.found = snippet(text, lineStart(text, i))
			d.why += " followed by a separator; the words are in the reply, but inside a sentence"
		}
	case KindTag:
		d.why = fmt.Sprintf("the reply has no %s> tag", c.open)
		if indexFold(text, c.close) >= 0 {
			d.score, d.why = 2, fmt.Sprintf("the reply closes %s> but never opens it", c.close)
		} else if t := otherTag(text); t != "" {
			d.score, d.why = 2, fmt.Sprintf("the reply has no %s> tag but uses <%s>", c.open, t)
			d.fix = fmt.Sprintf("add the rule {kind: tag, tag: %s}", t)
		}
	case KindRegex:
		d.why = "the pattern matches nowhere in the reply"
		if raw, ok := c.candidate(stripMarkup(text)); ok {
			d.score, d.found = 2, raw
			d.why = "the pattern matches only once markup (*, _, #, >) is removed from the lines' ends"
			d.fix = "let the pattern allow the markup, e.g. [*_#>\\s]* where the line starts"
		} else if !strings.HasPrefix(c.re.String(), "(?i") {
			if re, err := regexp.Compile("(?i)" + c.re.String()); err == nil && re.MatchString(text) {
				d.score, d.why = 2, "the pattern matches only when letter case is ignored"
				d.fix = "start the pattern with (?i)"
			}
		}
	case KindJSON:
		d.why = "the reply has no JSON object"
		if strings.IndexByte(text, '{') >= 0 {
			d.score, d.why = 2, fmt.Sprintf("no JSON object in the reply parses with the key %q", strings.Join(c.keyPath, "."))
		}
	default:
		d.score, d.why = 0, "the reply has no text for this rule to read"
	}
	return d
}

// unresolved says why text a rule read is not a label.
func (x *Extractor) unresolved(c *compiled, raw string) (why, fix string) {
	v := cleanValue(raw)
	labels, neg := x.mentions(raw)
	switch {
	case v == "":
		return "it read an empty value", ""
	case len(labels) > 1:
		return fmt.Sprintf("it read %q, which names several labels (%s)", clip(v), x.names(labels)), ""
	case len(labels) == 1 && !c.search:
		return fmt.Sprintf("it read %q, which names %s but is not exactly a label or alias (the rule has match: exact)", clip(v), x.names(labels)),
			"set match: search on this rule, or add the text as an alias"
	case neg:
		return fmt.Sprintf("it read %q, where the only mention of a label is negated", clip(v)),
			"if the negated form is an answer, list it as an alias of the label it means"
	}
	return fmt.Sprintf("it read %q, which is no label or alias of the answer space (%s)", clip(v), x.names(x.allLabels())),
		"if the text is one of the labels in other words, add it as an alias (answer.labels[].aliases)"
}

// suggest proposes a rule that would read this reply's answer line, and
// only one that does.
func (x *Extractor) suggest(line answer, text string) string {
	if line.class != classLabel && line.class != classLabelMore {
		return ""
	}
	var tries []Rule
	var shown []string
	switch {
	case line.header != "":
		// A prefix rule when the header stands at a line's start; else a
		// pattern that allows what surrounds it ("[Answer Extraction]:").
		words := strings.Fields(line.header)
		for i, w := range words {
			words[i] = regexp.QuoteMeta(w)
		}
		pattern := `(?im)^[^\pL\n]*` + strings.Join(words, `\W+`) + `[^\pL\n:]*:\s*(.+)$`
		tries = []Rule{{Kind: KindPrefix, Prefix: line.header}, {Kind: KindRegex, Pattern: pattern}}
		shown = []string{fmt.Sprintf("{kind: prefix, prefix: %q}", line.header), fmt.Sprintf("{kind: regex, pattern: '%s'}", strings.ReplaceAll(pattern, "'", "''"))}
	case len(strings.Fields(line.line)) <= 6:
		tries = []Rule{{Kind: KindLastLine, Match: MatchSearch}}
		shown = []string{"{kind: last_line, match: search}"}
	default:
		return "" // a long last line is prose: reading a label from it would be a guess
	}
	sp := x.space
	for k, r := range tries {
		ex, err := Compile(&Spec{Label: []Rule{r}}, &sp)
		if err != nil {
			continue
		}
		if res := ex.Extract(text); res.Parsed {
			return fmt.Sprintf("the rule %s reads this reply as %s", shown[k], res.Label)
		}
	}
	return ""
}

func (x *Extractor) allLabels() []int {
	out := make([]int, len(x.space.Labels))
	for i := range out {
		out[i] = i
	}
	return out
}

func (x *Extractor) names(labels []int) string {
	s := make([]string, len(labels))
	for i, l := range labels {
		s[i] = x.space.Labels[l].Value
	}
	return strings.Join(s, ", ")
}

// mentions lists the labels s names (distinct, in order of first mention,
// negated mentions left out) and reports whether some mention is negated.
func (x *Extractor) mentions(s string) (labels []int, neg bool) {
	add := func(l int) {
		for _, k := range labels {
			if k == l {
				return
			}
		}
		labels = append(labels, l)
	}
	if x.index == nil {
		x.scan(s, func(l, _ int) bool { add(l); return true })
		return labels, false
	}
	for i := 0; i < len(s); {
		ts, te := nextToken(s, i)
		if ts >= len(s) {
			break
		}
		i = te
		for _, ai := range x.index.byFirst.get(s[ts:te]) {
			a := &x.index.aliases[ai]
			end, ok := a.matchAt(s, ts, te, x.index.cs)
			if !ok {
				continue
			}
			i = end
			if negated(s, ts) {
				neg = true
			} else {
				add(a.label)
			}
			break
		}
	}
	return labels, neg
}

// answer is the line of a reply most likely to state its answer, split
// into an optional header ("Final Answer") and its value.
type answer struct {
	line, header, value string
	answerish           bool // the header is an answer's own (answerWords)
	class               valueClass
}

type valueClass int

const (
	classEmpty     valueClass = iota
	classLabel                // exactly a label or alias
	classLabelMore            // one label and other words
	classSeveral              // two or more labels
	classNegated              // only negated mentions
	classNumber
	classNone // words, none of them a label
)

// answerWords mark a header as the answer's own ("Final Answer:",
// "Verdict:"), preferred over other headers such as "Confidence:".
var answerWords = []string{"answer", "verdict", "decision", "judgment", "judgement", "label", "choice", "conclusion", "classification", "final"}

func answerLine(text string) answer {
	var lastHeader, lastAnswerHeader, last answer
	for i := 0; i < len(text); {
		l, n := lineAt(text, i)
		i = n
		if cleanValue(l) == "" {
			continue
		}
		a := answer{line: strings.TrimSpace(l), value: l}
		if h, v, ok := splitHeader(l); ok {
			a.header, a.value = h, v
			lw := strings.ToLower(h)
			for _, w := range answerWords {
				if strings.Contains(lw, w) {
					a.answerish = true
					lastAnswerHeader = a
					break
				}
			}
			// A short header ending the reply ("Confidence: 0.5" with
			// nothing after it) says what the reply stopped at.
			if len(strings.Fields(h)) <= 2 {
				lastHeader = a
			}
		}
		last = a
	}
	switch {
	case lastAnswerHeader.line != "":
		return lastAnswerHeader
	case lastHeader.line != "" && lastHeader.line == last.line:
		return lastHeader
	}
	last.header, last.value = "", last.line
	return last
}

// splitHeader reads "**Final Answer:** X", "[Answer Extraction]: X" or
// "### Verdict - X": up to five words of letters before a separator.
func splitHeader(l string) (header, value string, ok bool) {
	k := 0
	for k < len(l) && (isLeadMarkup(l[k]) || l[k] == '[') {
		k++
	}
	rest := l[k:]
	sep := strings.IndexAny(rest, ":=\uff1a")
	if sep <= 0 || sep > 60 {
		return "", "", false
	}
	h := strings.TrimFunc(rest[:sep], func(r rune) bool { return r == '*' || r == '_' || r == ']' || r == ' ' || r == '`' })
	words := strings.Fields(h)
	if len(words) == 0 || len(words) > 5 {
		return "", "", false
	}
	for _, r := range h {
		if !unicode.IsLetter(r) && r != ' ' && r != '-' && r != '\'' {
			return "", "", false
		}
	}
	_, n := utf8.DecodeRuneInString(rest[sep:])
	return strings.Join(words, " "), rest[sep+n:], true
}

func (x *Extractor) classify(v string) valueClass {
	c := cleanValue(v)
	if c == "" {
		return classEmpty
	}
	if x.exact(c) >= 0 {
		return classLabel
	}
	labels, neg := x.mentions(c)
	switch {
	case len(labels) > 1:
		return classSeveral
	case len(labels) == 1:
		return classLabelMore
	case neg:
		return classNegated
	}
	if isNumberLike(c) {
		return classNumber
	}
	return classNone
}

func isNumberLike(s string) bool {
	digits := 0
	for _, r := range s {
		switch {
		case unicode.IsDigit(r):
			digits++
		case r == '.' || r == '%' || r == '/' || r == ' ':
		default:
			return false
		}
	}
	return digits > 0
}

var classNames = map[valueClass]string{
	classEmpty: "‹nothing›", classLabel: "‹label›", classLabelMore: "‹label› and more words",
	classSeveral: "‹several labels›", classNegated: "‹negated label›", classNumber: "‹number›", classNone: "‹no label›",
}

// shape names a reply's form where the answer should be: the answer line's
// header (lower case) and what kind of value follows it, or, without a
// header, what the last line holds. Replies that miss for the same reason
// share a shape.
func (x *Extractor) shape(a answer, text string) string {
	if strings.TrimSpace(text) == "" {
		return "(empty reply)"
	}
	if a.header != "" {
		return strings.ToLower(a.header) + ": " + classNames[a.class]
	}
	return "last line: " + classNames[a.class]
}

func lineStart(text string, i int) int {
	for i > 0 && text[i-1] != '\n' {
		i--
	}
	return i
}

// otherTag finds the name of an XML-like tag the reply uses, if any.
func otherTag(text string) string {
	for i := strings.IndexByte(text, '<'); i >= 0 && i+1 < len(text); {
		j := i + 1
		for j < len(text) && (isWordByte(text[j]) || text[j] == '-') {
			j++
		}
		if j > i+1 && j < len(text) && text[j] == '>' {
			return text[i+1 : j]
		}
		k := strings.IndexByte(text[i+1:], '<')
		if k < 0 {
			break
		}
		i += 1 + k
	}
	return ""
}

// stripMarkup removes emphasis and list markup from both ends of every line.
func stripMarkup(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimFunc(l, func(r rune) bool {
			return r == '*' || r == '_' || r == '#' || r == '>' || r == '`' || unicode.IsSpace(r)
		})
	}
	return strings.Join(lines, "\n")
}
