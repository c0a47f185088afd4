package parse

import (
	"fmt"
	"strings"
)

// A reply that gives two different answers in the place a rule reads
// ("<answer>A</answer> or <answer>B</answer>", two "Final Answer:" lines
// that disagree) hedges: no label is read from it, and the reason is
// "several answers". A label rule of a kind that reads a designated place
// (tag, prefix, regex, json, phrase) reads every match by default
// (occurrence unique); occurrence first or last takes that match alone,
// for replies whose format puts a first judgement before the final one.

// SeveralAnswers is the reason a hedged reply is unparsed, as Explain and
// the viewer's unparsed groups give it.
const SeveralAnswers = "several answers"

// hedges says whether a rule kind reads every match of its place when its
// occurrence is unique (the label rules' default).
func hedges(kind string) bool {
	switch kind {
	case KindTag, KindPrefix, KindRegex, KindJSON, KindPhrase:
		return true
	}
	return false
}

// each calls fn with every text the rule designates in the reply, in
// order, until fn returns false (tag, prefix, regex and json kinds).
func (c *compiled) each(text string, fn func(raw string) bool) {
	switch c.kind {
	case KindTag:
		eachTag(text, c.open, c.close, fn)
	case KindPrefix:
		c.prefix.each(text, func(v int) bool { return fn(prefixValue(text, v, c.paragraph)) })
	case KindRegex:
		first, last := c.run.find(text, false), c.run.find(text, true)
		switch {
		case last == nil:
			if first != nil && first[2*c.group] >= 0 {
				fn(text[first[2*c.group]:first[2*c.group+1]])
			}
			return
		case first != nil && first[0] == last[0]:
			// One match: the common case, without a search of the whole reply.
			fn(text[last[2*c.group]:last[2*c.group+1]])
			return
		}
		for _, m := range c.re.FindAllStringSubmatchIndex(text, -1) {
			if m[2*c.group] >= 0 && !fn(text[m[2*c.group]:m[2*c.group+1]]) {
				return
			}
		}
	case KindJSON:
		eachJSON(text, c.keyPath, fn)
	}
}

// eachTag calls fn with the body of every closed element (a self-closing
// one is empty); with none closed, with the text after the last opening
// tag, as findTag reads it.
func eachTag(text, open, close string, fn func(string) bool) {
	cur, lastOpen, closed := -1, -1, false
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '<')
		if j < 0 {
			break
		}
		p := i + j
		i = p + 1
		if hasPrefixFold(text[p:], close) && closeEnds(text, p+len(close)) {
			if cur >= 0 {
				closed = true
				if !fn(text[cur:p]) {
					return
				}
				cur = -1
			}
			continue
		}
		if !hasPrefixFold(text[p:], open) {
			continue
		}
		body, selfClosing, ok := tagBody(text, p, open)
		if !ok {
			continue
		}
		if selfClosing {
			closed, cur = true, -1
			if !fn("") {
				return
			}
			continue
		}
		cur, lastOpen = body, body
	}
	if !closed && lastOpen >= 0 {
		fn(unclosed(text[lastOpen:]))
	}
}

// eachJSON calls fn with the value at path of every JSON object of the
// reply that has it, from the first; as findJSON, at most 32 objects are
// decoded.
func eachJSON(text string, path []string, fn func(string) bool) {
	const maxJSONTries = 32
	tries := 0
	for start := 0; start < len(text) && tries < maxJSONTries; {
		j := strings.IndexByte(text[start:], '{')
		if j < 0 {
			break
		}
		tries++
		if v, ok := jsonValueAt(text[start+j:], path); ok && !fn(v) {
			return
		}
		start += j + 1
	}
}

// resolve maps one text a rule read to a label, or -1.
func (x *Extractor) resolve(c *compiled, raw string) int {
	if c.fixed >= 0 {
		return c.fixed
	}
	if l := x.exact(raw); l >= 0 {
		return l
	}
	if c.search {
		return x.unique(raw)
	}
	return -1
}

// findEvery applies a rule that reads every match: the label all matches
// that resolve agree on; when two name different labels, other is the
// second label met (and label the first), else -1. raw is the text of the
// last match that resolved (of the last match when none did).
func (x *Extractor) findEvery(c *compiled, text string) (label int, raw string, found bool, other int) {
	label, other = -1, -1
	lastRaw := ""
	c.each(text, func(s string) bool {
		found, lastRaw = true, s
		l := x.resolve(c, s)
		switch {
		case l < 0:
		case label < 0:
			label, raw = l, s
		case l != label:
			other, raw = l, raw+" … "+s
			return false
		default:
			raw = s
		}
		return true
	})
	if label < 0 {
		raw = lastRaw
	}
	return label, raw, found, other
}

// severalWhy says which answers a hedged reply gives.
func (x *Extractor) severalWhy(a, b int) string {
	return fmt.Sprintf("%s: the reply gives both %s and %s", SeveralAnswers, x.space.Labels[a].Value, x.space.Labels[b].Value)
}
