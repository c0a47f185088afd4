package parse

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Rule kinds.
const (
	KindTag       = "tag"        // <tag>…</tag>, case-insensitive name
	KindPrefix    = "prefix"     // "Final Answer: X" at the start of a line
	KindRegex     = "regex"      // a capture group of a Go RE2 pattern
	KindPhrase    = "phrase"     // explicit choice phrases around {label}
	KindContains  = "contains"   // any non-negated label mention in the whole reply
	KindJSON      = "json"       // a key of a JSON object in the reply
	KindFirstLine = "first_line" // first non-blank line
	KindLastLine  = "last_line"  // last non-blank line
	KindWhole     = "whole"      // the whole reply
)

// Occurrence and match modes.
const (
	OccurrenceLast   = "last"
	OccurrenceFirst  = "first"
	OccurrenceUnique = "unique" // contains only: every mention must name the same label

	MatchExact  = "exact"
	MatchSearch = "search"
)

// Confidence scales.
const (
	ScaleAuto    = "auto"    // 0–1 when the value is <= 1 (so "1" is 1.0), else 0–100
	ScalePercent = "percent" // 0–100 ("1" is 0.01)
	ScaleUnit    = "unit"    // 0–1 (values above 1 are out of range)
)

// Rule locates one piece of text in a reply. Which fields apply depends on
// Kind; Spec.Check rejects fields that the kind would ignore, so a typo in a
// task file fails loudly instead of silently changing what is read.
type Rule struct {
	Kind       string   `yaml:"kind,omitempty" enum:"tag,prefix,regex,phrase,contains,json,first_line,last_line,whole" doc:"where to look: tag, prefix, regex, phrase, contains, json, first_line, last_line or whole"`
	Name       string   `yaml:"name,omitempty" doc:"name recorded in results when this rule matches; default kind:key, e.g. tag:answer"`
	Tag        string   `yaml:"tag,omitempty" doc:"tag kind: element name, e.g. answer for <answer>...</answer>; case-insensitive"`
	Prefix     string   `yaml:"prefix,omitempty" doc:"prefix kind: line label such as Final Answer at a line start (mid-line only before a colon); case-insensitive; value is the rest of the line or the next non-blank line"`
	Pattern    string   `yaml:"pattern,omitempty" doc:"regex kind: Go RE2 pattern; add (?i) for case-insensitive"`
	Group      int      `yaml:"group,omitempty" doc:"regex kind: capture group holding the value; default 1, or the whole match if the pattern has no groups"`
	Patterns   []string `yaml:"patterns,omitempty" doc:"phrase kind: RE2 patterns each containing {label} once; default: built-in explicit-choice phrases"`
	Key        string   `yaml:"key,omitempty" doc:"json kind: key of the value in a JSON object of the reply; dots descend into nested objects"`
	Occurrence string   `yaml:"occurrence,omitempty" enum:"last,first,unique" doc:"which match counts. Label rules of kinds tag, prefix, regex, json and phrase: unique (default; every match must name the same label, else the reply is unparsed with the reason several answers), last or first (that match alone, e.g. the final answer after a first judgement). contains: unique (default; every mention must name the same label, else the next rule is tried), last or first. Confidence and field rules: last (default) or first"`
	Match      string   `yaml:"match,omitempty" enum:"exact,search" doc:"label rules: exact (text must be a label or alias) or search (else the single non-negated label it names); default search, exact for lines and whole"`
	Scale      string   `yaml:"scale,omitempty" enum:"auto,percent,unit" doc:"confidence rules: auto, percent or unit; overrides the spec's confidence_scale"`
	Paragraph  bool     `yaml:"paragraph,omitempty" doc:"prefix kind: take text up to a blank line or the next Header: line instead of one line"`
	// Label turns a regex rule into a verdict rule: a match gives this
	// label, whatever the matched text says, and the matched text (the
	// group) is recorded as the span that decided (label_raw).
	Label string `yaml:"label,omitempty" doc:"regex label rules: the label (a value of the answer space) that a match gives; the matched text (the group) is kept as the span that decided, in label_raw. For rules that recognise a kind of reply (a refusal's wording) rather than read a label written in it"`
}

// Spec is what an extract stage declares.
type Spec struct {
	Label           []Rule             `yaml:"label,omitempty" doc:"ordered rules for the answer label; the first rule yielding a label of the answer space wins"`
	Confidence      []Rule             `yaml:"confidence,omitempty" doc:"ordered rules for the confidence; the first rule yielding a valid number wins"`
	ConfidenceScale string             `yaml:"confidence_scale,omitempty" enum:"auto,percent,unit" doc:"auto (default; <=1 is 0-1, so 1 means 1.0, else 0-100), percent (0-100) or unit (0-1)"`
	ConfidenceWords map[string]float64 `yaml:"confidence_words,omitempty" doc:"optional verbal confidences, e.g. high: 0.8; unmapped words leave confidence unparsed"`
	Fields          map[string][]Rule  `yaml:"fields,omitempty" doc:"free text fields by name, each with ordered rules; the first non-blank match wins"`
}

// Check reports every problem with the spec: unknown kinds, missing or
// ignored options, bad regexes, capture groups out of range, phrase patterns
// without exactly one {label}, and label rules without an answer space.
func (s *Spec) Check(space *Space) []error {
	var errs []error
	if s == nil {
		return []error{fmt.Errorf("extract spec is missing")}
	}
	if len(s.Label) > 0 {
		if space == nil {
			errs = append(errs, fmt.Errorf("label rules need an answer space"))
		} else {
			for _, err := range space.Check() {
				errs = append(errs, fmt.Errorf("answer space: %w", err))
			}
		}
	}
	for i := range s.Label {
		errs = append(errs, checkRule(&s.Label[i], fmt.Sprintf("label[%d]", i), ruleLabel)...)
		if l := s.Label[i].Label; l != "" && space != nil && space.index(l) < 0 {
			errs = append(errs, fmt.Errorf("label[%d] (%s): label %q is not a value of the answer space (%s)", i, s.Label[i].Kind, l, strings.Join(space.values(), ", ")))
		}
	}
	for i := range s.Confidence {
		errs = append(errs, checkRule(&s.Confidence[i], fmt.Sprintf("confidence[%d]", i), ruleConfidence)...)
	}
	if !validScale(s.ConfidenceScale) {
		errs = append(errs, fmt.Errorf("confidence_scale %q: want auto, percent or unit", s.ConfidenceScale))
	}
	for _, w := range slices.Sorted(maps.Keys(s.ConfidenceWords)) {
		v := s.ConfidenceWords[w]
		if cleanValue(w) == "" {
			errs = append(errs, fmt.Errorf("confidence_words: empty word %q", w))
		}
		if !(v >= 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("confidence_words[%q] = %v: want 0..1", w, v))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Fields)) {
		if strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("fields: empty field name"))
		}
		rules := s.Fields[name]
		if len(rules) == 0 {
			errs = append(errs, fmt.Errorf("fields[%s]: no rules", name))
		}
		for i := range rules {
			errs = append(errs, checkRule(&rules[i], fmt.Sprintf("fields[%s][%d]", name, i), ruleField)...)
		}
	}
	return errs
}

type ruleRole int

const (
	ruleLabel ruleRole = iota
	ruleConfidence
	ruleField
)

func validScale(s string) bool {
	return s == "" || s == ScaleAuto || s == ScalePercent || s == ScaleUnit
}

func checkRule(r *Rule, where string, role ruleRole) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s (%s): %s", where, r.Kind, fmt.Sprintf(format, args...)))
	}
	// used lists the options each kind reads; anything else set is an error.
	used := map[string]bool{}
	switch r.Kind {
	case KindTag:
		used["tag"], used["occurrence"], used["match"] = true, true, true
		if !validName(r.Tag) {
			bad("tag %q: want a bare element name like answer", r.Tag)
		}
	case KindPrefix:
		used["prefix"], used["occurrence"], used["match"], used["paragraph"] = true, true, true, true
		if len(prefixWords(r.Prefix)) == 0 {
			bad("prefix is empty")
		}
	case KindRegex:
		used["pattern"], used["group"], used["occurrence"], used["match"] = true, true, true, true
		if role == ruleLabel {
			used["label"] = true
			if r.Label != "" && r.Match != "" {
				bad("match does not apply with label: the match itself gives label %q", r.Label)
			}
		}
		re, err := regexp.Compile(r.Pattern)
		switch {
		case r.Pattern == "":
			bad("pattern is empty")
		case err != nil:
			bad("bad pattern: %v", err)
		case r.Group < 0 || r.Group > re.NumSubexp():
			bad("group %d out of range: pattern has %d groups", r.Group, re.NumSubexp())
		}
	case KindPhrase:
		used["patterns"], used["occurrence"] = true, true
		if role != ruleLabel {
			bad("phrase rules only find labels")
		}
		for _, p := range r.Patterns {
			if strings.Count(p, labelPlaceholder) != 1 {
				bad("pattern %q must contain %s exactly once", p, labelPlaceholder)
				continue
			}
			if _, err := regexp.Compile(strings.Replace(p, labelPlaceholder, "(?:x)", 1)); err != nil {
				bad("bad pattern %q: %v", p, err)
			}
		}
	case KindContains:
		used["occurrence"] = true
		if role != ruleLabel {
			bad("contains rules only find labels")
		}
	case KindJSON:
		used["key"], used["occurrence"], used["match"] = true, true, true
		if strings.TrimSpace(r.Key) == "" {
			bad("key is empty")
		}
	case KindFirstLine, KindLastLine, KindWhole:
		used["match"] = true
	case "":
		bad("kind is missing")
		return errs
	default:
		bad("unknown kind; want tag, prefix, regex, phrase, contains, json, first_line, last_line or whole")
		return errs
	}
	switch r.Occurrence {
	case "", OccurrenceLast, OccurrenceFirst:
	case OccurrenceUnique:
		if r.Kind != KindContains && (role != ruleLabel || !hedges(r.Kind)) {
			bad("occurrence unique is only for label rules (of kinds tag, prefix, regex, json, phrase and contains)")
		}
	default:
		bad("occurrence %q: want last or first", r.Occurrence)
	}
	switch r.Match {
	case "", MatchExact, MatchSearch:
	default:
		bad("match %q: want exact or search", r.Match)
	}
	if role == ruleConfidence {
		used["scale"] = true
		if !validScale(r.Scale) {
			bad("scale %q: want auto, percent or unit", r.Scale)
		}
	}
	if role != ruleLabel {
		used["match"] = false
	}
	set := map[string]bool{
		"tag": r.Tag != "", "prefix": r.Prefix != "", "pattern": r.Pattern != "", "group": r.Group != 0,
		"patterns": len(r.Patterns) > 0, "key": r.Key != "", "occurrence": r.Occurrence != "",
		"match": r.Match != "", "scale": r.Scale != "", "paragraph": r.Paragraph, "label": r.Label != "",
	}
	for _, opt := range slices.Sorted(maps.Keys(set)) {
		if set[opt] && !used[opt] {
			bad("option %s does not apply here", opt)
		}
	}
	return errs
}

// validName accepts tag names that can be searched byte-wise: no spaces or
// markup characters.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c == '<' || c == '>' || c == '/' || c == '"' || c == '\'' || c == '=' {
			return false
		}
	}
	return true
}

// prefixWords splits a configured prefix into words, dropping the trailing
// separator users naturally write ("Final Answer:"): the separator in the
// reply is matched flexibly (":", "-", "=", dashes, or end of line).
func prefixWords(p string) []string {
	p = strings.TrimRight(strings.TrimSpace(p), ":=-\u2013\u2014\uff1a ")
	return strings.Fields(p)
}
