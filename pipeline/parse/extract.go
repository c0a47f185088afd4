package parse

import (
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Result is what Extract read from one reply.
type Result struct {
	Label     string `json:"label,omitempty"`      // canonical label; "" unless Parsed
	Parsed    bool   `json:"parsed"`               // a label rule matched a label of the space
	LabelRule string `json:"label_rule,omitempty"` // name of the winning rule, e.g. "tag:answer"
	// LabelRaw is the text the winning rule resolved or, when unparsed, the
	// first text a rule found but could not resolve (e.g. "isn't wrong"),
	// trimmed to 200 bytes, to make misses diagnosable.
	LabelRaw string `json:"label_raw,omitempty"`

	Confidence       *float64 `json:"confidence,omitempty"` // 0..1; nil unless ConfidenceParsed
	ConfidenceParsed bool     `json:"confidence_parsed"`
	ConfidenceRule   string   `json:"confidence_rule,omitempty"`
	// ConfidenceRaw is the text of the winning confidence rule or, when
	// unparsed, of the first rule that found something (e.g. "150").
	ConfidenceRaw string `json:"confidence_raw,omitempty"`

	Fields map[string]string `json:"fields,omitempty"` // only fields that were found
	// Several says the reply gave two different answers where a label rule
	// reads every match (occurrence unique): it is unparsed, the reason
	// SeveralAnswers.
	Several bool `json:"several_answers,omitempty"`
}

// Extractor is a compiled Spec. It is immutable, so one Extractor may serve
// any number of goroutines.
type Extractor struct {
	space  Space // deep copy: later edits to the caller's Space cannot race
	keys   []aliasKey
	index  *aliasIndex    // word-level alias search; nil if an alias is not plain words
	search *regexp.Regexp // all aliases, longest first: used when index is nil, and as the reference in FuzzAliasScan
	label  []compiled
	conf   []compiled
	fields []fieldRules
	scale  string
	words  []confWord
}

type aliasKey struct {
	text  string // cleaned value or alias
	label int
}

type fieldRules struct {
	name  string
	rules []compiled
}

type compiled struct {
	kind      string
	name      string
	last      bool
	unique    bool // contains: all mentions must agree
	hedge     bool // every match must name the same label, else several answers (several.go)
	search    bool // label: fall back to searching inside the candidate
	scale     string
	paragraph bool

	open, close string // tag
	prefix      prefixMatcher
	re          *regexp.Regexp
	run         regexRun // how re is searched
	group       int
	phrases     []phrase
	triggers    wordSet // trigger word -> indexes into phrases
	keyPath     []string
	fixed       int // regex with label: the label a match gives (else -1)
}

type phrase struct {
	re    *regexp.Regexp
	group int  // index of the {label} group
	words bool // the group is genericLabel, resolved with aliasAt
	atEnd bool // {label} ends the pattern, so the alias may extend past the group
	phraseDef
}

// genericLabel stands for {label} in default phrases: up to six words,
// lazily, so the rest of the pattern decides where the label ends.
const genericLabel = `(?P<label>[\pL\pN_][\pL\pN_'\x{2018}\x{2019}\x{02BC}\-]*(?:[\t\n\v\f\r\x{85}\p{Z}]+[\pL\pN_][\pL\pN_'\x{2018}\x{2019}\x{02BC}\-]*){0,5}?)`

// labelPlaceholder marks where a phrase pattern expects the label.
const labelPlaceholder = "{label}"

// Compile checks spec against space and prepares an Extractor. All regexes,
// including the alias alternation and the phrase patterns, are compiled here
// so Extract never compiles.
func Compile(spec *Spec, space *Space) (*Extractor, error) {
	if errs := spec.Check(space); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	x := &Extractor{scale: spec.ConfidenceScale}
	if space != nil {
		x.space = Space{Positive: space.Positive, CaseSensitive: space.CaseSensitive}
		for _, l := range space.Labels {
			x.space.Labels = append(x.space.Labels, Label{
				Value:   l.Value,
				Aliases: append([]string(nil), l.Aliases...),
				Gold:    append([]string(nil), l.Gold...),
			})
		}
		for i, l := range x.space.Labels {
			x.keys = append(x.keys, aliasKey{cleanValue(l.Value), i})
			for _, a := range l.Aliases {
				x.keys = append(x.keys, aliasKey{cleanValue(a), i})
			}
		}
		// Longest first: at a given position the regexp prefers the earlier
		// alternative, so "not wrong" beats "wrong" and "unacceptable" beats
		// "acceptable".
		sort.SliceStable(x.keys, func(i, j int) bool {
			return utf8.RuneCountInString(x.keys[i].text) > utf8.RuneCountInString(x.keys[j].text)
		})
		if len(x.keys) > 0 {
			re, err := regexp.Compile(x.alternation())
			if err != nil {
				return nil, err
			}
			x.search = re
		}
		x.index = newAliasIndex(x.keys, space.CaseSensitive)
	}
	for _, w := range slices.Sorted(maps.Keys(spec.ConfidenceWords)) {
		x.words = append(x.words, confWord{cleanValue(w), spec.ConfidenceWords[w]})
	}
	var err error
	if x.label, err = x.compileRules(spec.Label, ruleLabel); err != nil {
		return nil, err
	}
	if x.conf, err = x.compileRules(spec.Confidence, ruleConfidence); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(spec.Fields)) {
		rules, err := x.compileRules(spec.Fields[name], ruleField)
		if err != nil {
			return nil, err
		}
		x.fields = append(x.fields, fieldRules{name, rules})
	}
	return x, nil
}

// Normalize is Space.Normalize on the extractor's own copy of the space.
func (x *Extractor) Normalize(raw string) (string, bool) { return x.space.Normalize(raw) }

// Gold is Space.Gold on the extractor's own copy of the space.
func (x *Extractor) Gold(raw any) (string, bool) { return x.space.Gold(raw) }

// alternation is the regexp matching any alias, longest first. Multi-letter
// aliases fold case (unless the space is case-sensitive); one-letter aliases
// only match upper case so that the article "a" is not option A. Words may be
// separated by any whitespace ("not  wrong", "not\nwrong").
func (x *Extractor) alternation() string {
	alts := make([]string, 0, len(x.keys))
	for _, k := range x.keys {
		words := strings.Fields(k.text)
		for i, w := range words {
			// Either apostrophe matches, as in equalNorm.
			w = regexp.QuoteMeta(strings.Map(straightQuote, w))
			words[i] = strings.ReplaceAll(w, "'", `['\x{2018}\x{2019}\x{02BC}]`)
		}
		// The separator is unicode.IsSpace, as in equalNorm (RE2's \s is ASCII).
		p := strings.Join(words, `[\t\n\v\f\r\x{85}\p{Z}]+`)
		switch {
		case utf8.RuneCountInString(k.text) == 1 && !x.space.CaseSensitive:
			p = regexp.QuoteMeta(strings.ToUpper(k.text))
		case !x.space.CaseSensitive:
			p = "(?i:" + p + ")"
		}
		alts = append(alts, p)
	}
	return "(?:" + strings.Join(alts, "|") + ")"
}

func (x *Extractor) compileRules(rules []Rule, role ruleRole) ([]compiled, error) {
	out := make([]compiled, 0, len(rules))
	for i := range rules {
		r := &rules[i]
		c := compiled{
			kind:      r.Kind,
			name:      r.Name,
			last:      r.Occurrence != OccurrenceFirst,
			scale:     r.Scale,
			paragraph: r.Paragraph,
			fixed:     -1,
		}
		if r.Label != "" {
			c.fixed = x.space.index(r.Label)
		}
		c.hedge = role == ruleLabel && hedges(r.Kind) && (r.Occurrence == "" || r.Occurrence == OccurrenceUnique)
		if c.scale == "" {
			c.scale = x.scale
		}
		switch r.Kind {
		case KindFirstLine, KindLastLine, KindWhole:
			c.search = r.Match == MatchSearch
		default:
			c.search = r.Match != MatchExact
		}
		key := ""
		switch r.Kind {
		case KindTag:
			tag := lowerASCIIString(r.Tag)
			c.open, c.close, key = "<"+tag, "</"+tag, r.Tag
		case KindPrefix:
			c.prefix = newPrefixMatcher(r.Prefix)
			key = strings.Join(prefixWords(r.Prefix), " ")
		case KindRegex:
			c.re = regexp.MustCompile(r.Pattern) // Check compiled it already
			c.group = r.Group
			if c.group == 0 && c.re.NumSubexp() > 0 {
				c.group = 1
			}
			c.run = newRegexRun(c.re, c.group)
			key = "#" + strconv.Itoa(i+1)
		case KindPhrase:
			defs := defaultPhrases
			if len(r.Patterns) > 0 {
				defs = nil
				for _, p := range r.Patterns {
					defs = append(defs, phraseDef{pattern: p})
				}
			}
			alternation := "(?P<label>" + x.alternation() + ")"
			for _, d := range defs {
				// Triggered (default) patterns capture any words where the
				// label goes and resolve them with the alias index: the
				// program stays small enough for regexp's fast backtracker.
				// Other patterns embed the alias alternation.
				words := d.triggers != nil && x.index != nil
				label := alternation
				if words {
					label = genericLabel
				}
				re, err := regexp.Compile(strings.Replace(d.pattern, labelPlaceholder, label, 1))
				if err != nil {
					return nil, err
				}
				for _, tr := range d.triggers {
					c.triggers.add(tr, len(c.phrases))
				}
				c.phrases = append(c.phrases, phrase{re, re.SubexpIndex("label"), words,
					strings.HasSuffix(d.pattern, labelPlaceholder), d})
			}
		case KindContains:
			c.last = r.Occurrence == OccurrenceLast
			c.unique = r.Occurrence == "" || r.Occurrence == OccurrenceUnique
		case KindJSON:
			c.keyPath = strings.Split(r.Key, ".")
			key = r.Key
		}
		if c.name == "" {
			c.name = r.Kind
			if key != "" {
				if key[0] != '#' {
					c.name += ":"
				}
				c.name += key
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// jsonValueAt decodes the JSON object text starts with and returns the
// value at path as text.
func jsonValueAt(text string, path []string) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", false
	}
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[k]; !ok {
			return "", false
		}
	}
	switch t := v.(type) {
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	case bool:
		return strconv.FormatBool(t), true
	}
	return "", false
}

// Extract reads label, confidence and fields from one reply. It never panics
// on any input and does not compile regexps; a reply whose answer cannot be
// read yields Parsed=false and Label="".
func (x *Extractor) Extract(text string) Result {
	var r Result
	for i := range x.label {
		c := &x.label[i]
		label, raw, found, other := x.findLabel(c, text)
		if other >= 0 {
			// Two different answers: the reply hedges, and no later,
			// weaker rule reads one of them as its answer.
			r.LabelRaw, r.Several = clip(raw), true
			break
		}
		if label >= 0 {
			r.Label, r.Parsed, r.LabelRule, r.LabelRaw = x.space.Labels[label].Value, true, c.name, clip(raw)
			break
		}
		if found && r.LabelRaw == "" {
			r.LabelRaw = clip(raw)
		}
	}
	for i := range x.conf {
		c := &x.conf[i]
		raw, found := c.candidate(text)
		if !found {
			continue
		}
		if v, ok := parseConfidence(raw, c.scale, x.words); ok {
			r.Confidence, r.ConfidenceParsed, r.ConfidenceRule, r.ConfidenceRaw = &v, true, c.name, clip(raw)
			break
		}
		if r.ConfidenceRaw == "" {
			r.ConfidenceRaw = clip(raw)
		}
	}
	for _, f := range x.fields {
		for i := range f.rules {
			raw, found := f.rules[i].candidate(text)
			if v := strings.TrimSpace(raw); found && cleanValue(v) != "" {
				if r.Fields == nil {
					r.Fields = make(map[string]string, len(x.fields))
				}
				r.Fields[f.name] = v
				break
			}
		}
	}
	return r
}

// findLabel applies one label rule. found reports that the rule located some
// text (raw) even if it did not resolve to a label; other is a second,
// different label the rule read (several answers), else -1.
func (x *Extractor) findLabel(c *compiled, text string) (label int, raw string, found bool, other int) {
	switch c.kind {
	case KindPhrase:
		return x.findPhrase(c, text)
	case KindContains:
		label, raw, found = x.findContains(c, text)
		return label, raw, found, -1
	}
	if c.hedge {
		return x.findEvery(c, text)
	}
	label, raw, found = x.findOne(c, text)
	return label, raw, found, -1
}

// findOne applies a rule that reads one match (or a line, or the whole
// reply).
func (x *Extractor) findOne(c *compiled, text string) (label int, raw string, found bool) {
	raw, found = c.candidate(text)
	if !found {
		return -1, "", false
	}
	if c.fixed >= 0 {
		return c.fixed, raw, true
	}
	if l := x.exact(raw); l >= 0 {
		return l, raw, true
	}
	if c.search {
		return x.unique(raw), raw, true
	}
	return -1, raw, true
}

// candidate returns the text a non-search rule designates.
func (c *compiled) candidate(text string) (string, bool) {
	switch c.kind {
	case KindTag:
		return findTag(text, c.open, c.close, c.last)
	case KindPrefix:
		v, ok := c.prefix.find(text, c.last)
		if !ok {
			return "", false
		}
		return prefixValue(text, v, c.paragraph), true
	case KindRegex:
		return c.regexCandidate(text)
	case KindJSON:
		return findJSON(text, c.keyPath, c.last)
	case KindFirstLine:
		return firstLine(text)
	case KindLastLine:
		return lastLine(text)
	case KindWhole:
		return text, strings.TrimSpace(text) != ""
	}
	return "", false
}

func (c *compiled) regexCandidate(text string) (string, bool) {
	m := c.run.find(text, c.last)
	if m == nil || m[2*c.group] < 0 {
		return "", false
	}
	return text[m[2*c.group]:m[2*c.group+1]], true
}

// exact resolves a candidate that is nothing but a label or alias.
func (x *Extractor) exact(raw string) int {
	v := cleanValue(raw)
	if v == "" {
		return -1
	}
	for _, k := range x.keys {
		if equalNorm(v, k.text, x.space.CaseSensitive) {
			return k.label
		}
	}
	return -1
}

// scan calls fn for each non-negated alias mention in s, left to right, on
// word boundaries; fn returns false to stop.
func (x *Extractor) scan(s string, fn func(label, start int) bool) {
	switch {
	case x.index != nil:
		x.index.scan(s, fn)
	case x.search != nil:
		x.scanRegexp(s, fn)
	}
}

// scanRegexp is scan for spaces with aliases that are not plain words.
func (x *Extractor) scanRegexp(s string, fn func(label, start int) bool) {
	for pos := 0; pos < len(s); {
		loc := x.search.FindStringIndex(s[pos:])
		if loc == nil {
			return
		}
		start, end := pos+loc[0], pos+loc[1]
		if end == start {
			return // cannot happen with non-empty aliases; guards the loop
		}
		if !boundaryBefore(s, start) || !boundaryAfter(s, end) {
			// A longer word contains the alias here ("unacceptable" for
			// "acceptable" when only the latter is listed): step one rune.
			_, n := utf8.DecodeRuneInString(s[start:])
			pos = start + n
			continue
		}
		pos = end
		if negated(s, start) || !x.space.CaseSensitive && articleUse(s, start, end) {
			continue
		}
		if !fn(x.labelOf(s[start:end]), start) {
			return
		}
	}
}

// labelOf maps a matched alias back to its label.
func (x *Extractor) labelOf(m string) int {
	for _, k := range x.keys {
		if utf8.RuneCountInString(k.text) == 1 && !x.space.CaseSensitive {
			if strings.EqualFold(m, k.text) {
				return k.label
			}
			continue
		}
		if equalNorm(m, k.text, x.space.CaseSensitive) {
			return k.label
		}
	}
	return -1
}

// unique returns the label named by every non-negated mention in s, or -1
// when there is none or they disagree (e.g. "A or B").
func (x *Extractor) unique(s string) int {
	label := -1
	x.scan(s, func(l, _ int) bool {
		if label >= 0 && l != label {
			label = -2
			return false
		}
		label = l
		return true
	})
	if label < 0 {
		return -1
	}
	return label
}

func (x *Extractor) findContains(c *compiled, text string) (int, string, bool) {
	label, at := -1, -1
	switch {
	case c.unique:
		label = x.unique(text)
	case c.last:
		x.scan(text, func(l, start int) bool { label, at = l, start; return true })
	default:
		x.scan(text, func(l, start int) bool { label, at = l, start; return false })
	}
	if label < 0 {
		return -1, "", false
	}
	if at >= 0 {
		return label, snippet(text, at), true
	}
	return label, x.space.Labels[label].Value, true
}

// findPhrase returns the label of the last (or first) phrase match across the
// rule's patterns whose label sits on word boundaries and whose phrase is not
// negated ("I don't think the answer is A").
func (x *Extractor) findPhrase(c *compiled, text string) (int, string, bool, int) {
	best, bestAt, bestStart := -1, -1, 0
	// For c.hedge: the first label met and another, with where their
	// phrases start.
	first, other, firstAt, otherAt := -1, -1, 0, 0
	var buf [16]window
	for _, w := range c.phraseWindows(text, buf[:0]) {
		p := &c.phrases[w.phrase]
		for _, m := range p.re.FindAllStringSubmatchIndex(text[w.start:w.end], -1) {
			if m[2*p.group] < 0 {
				continue
			}
			ms, ls, le := w.start+m[0], w.start+m[2*p.group], w.start+m[2*p.group+1]
			// A window may start mid-word, where the pattern's leading \b
			// matched only because the window hid the previous byte.
			if m[0] == 0 && !boundaryBefore(text, ms) || negated(text, ms) {
				continue
			}
			label := -1
			if p.words {
				l, end := x.index.aliasAt(text, ls)
				if l >= 0 && (p.atEnd || end == le) {
					label = l
				}
			} else if boundaryBefore(text, ls) && boundaryAfter(text, le) &&
				(x.space.CaseSensitive || !articleUse(text, ls, le)) {
				label = x.labelOf(text[ls:le])
			}
			if label < 0 {
				continue
			}
			if first < 0 {
				first, firstAt = label, ms
			} else if label != first && other < 0 {
				other, otherAt = label, ms
			}
			if bestAt < 0 || (c.last && ls > bestAt) || (!c.last && ls < bestAt) {
				best, bestAt, bestStart = label, ls, ms
			}
		}
	}
	if best < 0 {
		return -1, "", false, -1
	}
	if c.hedge && other >= 0 {
		if otherAt < firstAt {
			firstAt, otherAt = otherAt, firstAt
		}
		return first, snippet(text, firstAt) + " … " + snippet(text, otherAt), true, other
	}
	return best, snippet(text, bestStart), true, -1
}

// window is a span of the reply one phrase pattern must be run on.
type window struct{ phrase, start, end int }

// phraseWindows lists, per phrase pattern, the merged spans around trigger
// words that pass the pattern's context checks, found in one pass over the
// reply's words; patterns without triggers get the whole reply.
func (c *compiled) phraseWindows(text string, wins []window) []window {
	for i := range c.phrases {
		if c.phrases[i].triggers == nil {
			wins = append(wins, window{i, 0, len(text)})
		}
	}
	if c.triggers.m != nil {
		for i := 0; i < len(text); {
			ts, te := nextToken(text, i)
			if ts >= len(text) {
				break
			}
			i = te
			for _, pi := range c.triggers.get(text[ts:te]) {
				if !c.phrases[pi].plausible(text, ts, te) {
					continue
				}
				ws, we := max(0, ts-phraseWindowBefore), min(len(text), te+phraseWindowAfter)
				for ws > 0 && !utf8.RuneStart(text[ws]) {
					ws--
				}
				for we < len(text) && !utf8.RuneStart(text[we]) {
					we++
				}
				wins = append(wins, window{pi, ws, we})
			}
		}
	}
	slices.SortFunc(wins, func(a, b window) int {
		if a.phrase != b.phrase {
			return a.phrase - b.phrase
		}
		return a.start - b.start
	})
	merged := wins[:0]
	for _, w := range wins {
		if n := len(merged); n > 0 && merged[n-1].phrase == w.phrase && w.start <= merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, w.end)
			continue
		}
		merged = append(merged, w)
	}
	return merged
}

// plausible applies the cheap checks of phraseDef to the trigger at [i, j).
func (p *phraseDef) plausible(text string, i, j int) bool {
	if p.prev != nil && !wordsBefore(text, i, p.prev) {
		return false
	}
	if p.next != nil && !wordIn(nextWord(text, j), p.next) {
		return false
	}
	return p.near == "" || indexFold(text[j:min(len(text), j+phraseWindowAfter)], p.near) >= 0
}

// prevWord returns the word (letters, digits, apostrophes) before i,
// skipping whitespace, and where it starts.
func prevWord(text string, i int) (string, int) {
	for i > 0 && isSpaceASCII(text[i-1]) {
		i--
	}
	k := i
	for k > 0 {
		r, n := utf8.DecodeLastRuneInString(text[:k])
		if !isWordRune(r) && !isApostrophe(r) {
			break
		}
		k -= n
	}
	return text[k:i], k
}

// nextWord returns the word after j, skipping whitespace.
func nextWord(text string, j int) string {
	for j < len(text) && isSpaceASCII(text[j]) {
		j++
	}
	k := j
	for k < len(text) {
		r, n := utf8.DecodeRuneInString(text[k:])
		if !isWordRune(r) && !isApostrophe(r) {
			break
		}
		k += n
	}
	return text[j:k]
}

func isSpaceASCII(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// wordsBefore reports whether one of the phrases (words separated by single
// spaces) ends just before i, word by word.
func wordsBefore(text string, i int, phrases []string) bool {
	w1, k1 := prevWord(text, i)
	if w1 == "" {
		return false
	}
	for _, ph := range phrases {
		rest, last := "", ph
		if sp := strings.LastIndexByte(ph, ' '); sp >= 0 {
			rest, last = ph[:sp], ph[sp+1:]
		}
		if !equalNorm(w1, last, false) {
			continue
		}
		k, ok := k1, true
		for rest != "" && ok {
			w := rest
			if sp := strings.LastIndexByte(rest, ' '); sp >= 0 {
				rest, w = rest[:sp], rest[sp+1:]
			} else {
				rest = ""
			}
			var got string
			got, k = prevWord(text, k)
			ok = equalNorm(got, w, false)
		}
		if ok {
			return true
		}
	}
	return false
}

// wordIn compares case-insensitively, with typographic apostrophes equal to
// straight ones.
func wordIn(w string, list []string) bool {
	for _, l := range list {
		if equalNorm(w, l, false) {
			return true
		}
	}
	return false
}

// snippet is the line of text from i, for LabelRaw.
func snippet(text string, i int) string {
	l, _ := lineAt(text, i)
	return l
}

// findJSON returns the value at path in the last (or first) JSON object of
// the reply that has it, as text. Objects are tried from each "{" outwards;
// at most maxJSONTries starts are decoded so a reply full of braces stays
// cheap.
func findJSON(text string, path []string, last bool) (string, bool) {
	const maxJSONTries = 32
	tries := 0
	try := func(i int) (string, bool) {
		tries++
		return jsonValueAt(text[i:], path)
	}
	if last {
		for end := len(text); end > 0 && tries < maxJSONTries; {
			i := strings.LastIndexByte(text[:end], '{')
			if i < 0 {
				break
			}
			if v, ok := try(i); ok {
				return v, true
			}
			end = i
		}
		return "", false
	}
	for start := 0; start < len(text) && tries < maxJSONTries; {
		j := strings.IndexByte(text[start:], '{')
		if j < 0 {
			break
		}
		if v, ok := try(start + j); ok {
			return v, true
		}
		start += j + 1
	}
	return "", false
}
