package parse

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The scanners in this file avoid regexp and allocation because tag and
// prefix rules run on every reply in the engine's hot path. Case folding is
// ASCII-only (tags and prefixes are English keywords); non-ASCII bytes must
// match exactly.

// lowerASCIIString lower-cases ASCII letters only, matching hasPrefixFold.
func lowerASCIIString(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lowerASCII(c)
	}
	return string(b)
}

// hasPrefixFold reports whether s starts with sub (already lower-case),
// ignoring ASCII case.
func hasPrefixFold(s, sub string) bool {
	if len(s) < len(sub) {
		return false
	}
	for i := 0; i < len(sub); i++ {
		if lowerASCII(s[i]) != sub[i] {
			return false
		}
	}
	return true
}

// indexFold is strings.Index ignoring ASCII case; sub must be lower-case.
func indexFold(s, sub string) int {
	i := -1
	newNeedle(sub).each(s, func(j int) bool { i = j; return false })
	return i
}

// needle is a lower-case string searched for ignoring ASCII case. It looks
// for its rarest byte (by English letter frequency: the "w" of "answer", the
// "<" of a tag) with IndexByte, which is vectorised, in both cases, and
// checks the whole needle only there.
type needle struct {
	sub  string
	off  int  // index of the rare byte in sub
	c, u byte // its lower and upper case (equal for non-letters)
}

func newNeedle(sub string) needle {
	n := needle{sub: sub}
	if sub == "" {
		return n
	}
	n.off = rarestByte(sub)
	n.c, n.u = sub[n.off], sub[n.off]
	if 'a' <= n.c && n.c <= 'z' {
		n.u = n.c - 'a' + 'A'
	}
	return n
}

// each calls fn with every position of the needle in s, in order, until fn
// returns false. Each case of the rare byte is scanned once, so the whole
// walk is linear.
func (n needle) each(s string, fn func(int) bool) {
	if n.sub == "" {
		fn(0)
		return
	}
	lo, up := -2, -2
	if n.u == n.c {
		up = -1
	}
	last := len(s) - len(n.sub) + n.off // last useful position of the rare byte
	for i := n.off; i <= last; {
		if lo != -1 && lo < i {
			lo = nextByte(s, i, n.c)
		}
		if up != -1 && up < i {
			up = nextByte(s, i, n.u)
		}
		q := lo
		if q < 0 || (up >= 0 && up < q) {
			q = up
		}
		if q < 0 || q > last {
			return
		}
		if hasPrefixFold(s[q-n.off:], n.sub) && !fn(q-n.off) {
			return
		}
		i = q + 1
	}
}

// letterRarity ranks lower-case letters from common (0) to rare (25).
const letterRarity = "etaoinshrdlcumwfgypbvkjxqz"

// rarestByte returns the index in sub of the byte least likely to occur in
// English text: any non-letter other than a space, else the rarest letter.
func rarestByte(sub string) int {
	best, bestRank := 0, -2
	for i := 0; i < len(sub); i++ {
		c := sub[i]
		rank := 26 // punctuation, digits, non-ASCII
		switch {
		case c == ' ':
			rank = -1
		case 'a' <= c && c <= 'z':
			rank = strings.IndexByte(letterRarity, c)
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

func nextByte(s string, i int, c byte) int {
	j := strings.IndexByte(s[i:], c)
	if j < 0 {
		return -1
	}
	return i + j
}

// findTag returns the body of <tag>…</tag>; open is "<tag" and close "</tag",
// both lower-case. A closed element is a closing tag with the latest opening
// tag before it. With last, the last closed element wins, else the first.
// An unclosed opening tag (a reply cut off by max_tokens, or a tag merely
// mentioned in prose) is used only when no closed element exists, and then
// runs to the next "<" or blank line.
//
// It is one forward pass over the "<" bytes (a vectorised IndexByte), so a
// reply without the tag costs a fraction of a nanosecond per byte.
func findTag(text, open, close string, last bool) (string, bool) {
	cur := -1 // body start of the latest opening tag not yet closed
	firstOpen, lastOpen := -1, -1
	best, haveBest := "", false
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '<')
		if j < 0 {
			break
		}
		p := i + j
		i = p + 1
		if hasPrefixFold(text[p:], close) && closeEnds(text, p+len(close)) {
			if cur >= 0 {
				best, haveBest, cur = text[cur:p], true, -1
				if !last {
					return best, true
				}
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
		if selfClosing { // <answer/>: a closed, empty element
			best, haveBest, cur = "", true, -1
			if !last {
				return "", true
			}
			continue
		}
		cur, lastOpen = body, body
		if firstOpen < 0 {
			firstOpen = body
		}
	}
	switch {
	case haveBest:
		return best, true
	case last && lastOpen >= 0:
		return unclosed(text[lastOpen:]), true
	case firstOpen >= 0:
		return unclosed(text[firstOpen:]), true
	}
	return "", false
}

// tagBody checks that an opening tag really starts at i ("<answer>",
// "<answer >", "<answer id=1>", "<answer/>" but not "<answers>") and returns
// the index where its body starts.
func tagBody(text string, i int, open string) (body int, selfClosing, ok bool) {
	p := i + len(open)
	if p >= len(text) {
		return 0, false, false
	}
	switch text[p] {
	case '>':
	case ' ', '\t':
		gt := strings.IndexByte(text[p:], '>')
		if gt < 0 || gt > 200 || strings.ContainsAny(text[p:p+gt], "<\n") {
			return 0, false, false
		}
		p += gt
		if text[p-1] == '/' {
			return p + 1, true, true
		}
	case '/':
		if p+1 < len(text) && text[p+1] == '>' {
			return p + 2, true, true
		}
		return 0, false, false
	default:
		return 0, false, false
	}
	return p + 1, false, true
}

// closeEnds checks what follows "</tag": ">" or spaces then ">".
func closeEnds(s string, k int) bool {
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	return k < len(s) && s[k] == '>'
}

func unclosed(body string) string {
	e := len(body)
	if j := strings.IndexByte(body, '<'); j >= 0 {
		e = j
	}
	if j := strings.Index(body[:e], "\n\n"); j >= 0 {
		e = j
	}
	return body[:e]
}

// prefixMatcher finds "Final Answer: X" style lines.
type prefixMatcher struct {
	words []string // lower-case
	first needle   // words[0]
}

func newPrefixMatcher(prefix string) prefixMatcher {
	words := prefixWords(lowerASCIIString(prefix))
	return prefixMatcher{words: words, first: newNeedle(words[0])}
}

// find returns the offset where the value starts (just after the separator)
// for the last (or first) line introduced by the prefix. A prefix counts at
// the start of a line, after optional markup ("**", "###", "- ", "1. ",
// "> "), followed by optional "**" / a parenthesised qualifier such as
// "(0-100)", then a separator (":", "-", "=", a dash) or the end of the line.
// Anchoring to line starts keeps "my final answer reflects…" in prose from
// stealing the match, and makes the scan one IndexByte per line. Mid-line
// occurrences are a fallback (below).
func (p *prefixMatcher) find(text string, last bool) (int, bool) {
	found, ok := 0, false
	p.each(text, func(v int) bool {
		found, ok = v, true
		return last
	})
	return found, ok
}

// each calls fn with the value offset of every line the prefix introduces,
// in order, until fn returns false; with no such line, of every mid-line
// occurrence followed by a colon (see find).
func (p *prefixMatcher) each(text string, fn func(v int) bool) {
	atLine := false
	for ls := 0; ls < len(text); {
		le := len(text)
		if j := strings.IndexByte(text[ls:], '\n'); j >= 0 {
			le = ls + j
		}
		k := ls
		for k < le && isLeadMarkup(text[k]) {
			k++
		}
		if v, m := p.matchAt(text[:le], k, false); m {
			atLine = true
			if !fn(v) {
				return
			}
		}
		ls = le + 1
	}
	if atLine {
		return
	}
	// Some replies put everything on one line ("Confidence: 0.8. Final
	// Answer: Acceptable"). Only when no line starts with the prefix, accept
	// it mid-line, at a word boundary and followed by a colon, which prose
	// such as "my final answer reflects" lacks.
	p.first.each(text, func(i int) bool {
		if !boundaryBefore(text, i) {
			return true
		}
		le := len(text)
		if e := strings.IndexByte(text[i:], '\n'); e >= 0 {
			le = i + e
		}
		if v, m := p.matchAt(text[:le], i, true); m {
			return fn(v)
		}
		return true
	})
}

// matchAt matches the prefix words at i and returns where the value starts.
// text ends at the end of the line. colon demands ":" as the separator.
func (p *prefixMatcher) matchAt(text string, i int, colon bool) (int, bool) {
	j := i
	for n, w := range p.words {
		if n > 0 {
			k := j
			for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
				k++
			}
			if k == j {
				return 0, false
			}
			j = k
		}
		if !hasPrefixFold(text[j:], w) {
			return 0, false
		}
		j += len(w)
	}
	if !boundaryAfter(text, j) {
		return 0, false
	}
	j = skipBytes(text, j, " \t*_")
	if j < len(text) && text[j] == '(' {
		if e := strings.IndexByte(text[j:min(len(text), j+80)], ')'); e > 0 {
			j = skipBytes(text, j+e+1, " \t*_")
		}
	}
	if !colon && (j == len(text) || text[j] == '\r') {
		return j, true
	}
	r, n := utf8.DecodeRuneInString(text[j:])
	switch r {
	case '-', '=', '\u2013', '\u2014':
		if colon {
			return 0, false
		}
		fallthrough
	case ':', '\uff1a':
		return skipBytes(text, j+n, " \t*_"), true
	}
	return 0, false
}

func isLeadMarkup(c byte) bool {
	switch c {
	case ' ', '\t', '#', '>', '*', '_', '-', '+', '|', '`', '.', ')', '\r':
		return true
	}
	return '0' <= c && c <= '9'
}

func skipBytes(s string, i int, set string) int {
	for i < len(s) && strings.IndexByte(set, s[i]) >= 0 {
		i++
	}
	return i
}

// lineAt returns the line starting at i (without its newline) and the index
// just past the newline.
func lineAt(text string, i int) (string, int) {
	e := strings.IndexByte(text[i:], '\n')
	if e < 0 {
		return text[i:], len(text)
	}
	return text[i : i+e], i + e + 1
}

// prefixValue reads the value that starts at v: the rest of that line, or,
// when that is blank ("### Final Answer" then the answer below), the next
// non-blank line. With paragraph, lines are appended up to a blank line or the
// next "Header:" line.
func prefixValue(text string, v int, paragraph bool) string {
	line, next := lineAt(text, v)
	start, end := v, v+len(line)
	if cleanValue(line) == "" {
		found := false
		for next < len(text) {
			l, n := lineAt(text, next)
			if cleanValue(l) != "" {
				start, end, found = next, next+len(l), true
				next = n
				break
			}
			next = n
		}
		if !found {
			return ""
		}
	}
	if paragraph {
		for next < len(text) {
			l, n := lineAt(text, next)
			if strings.TrimSpace(l) == "" || isHeaderLine(l) {
				break
			}
			end = next + len(l)
			next = n
		}
	}
	return text[start:end]
}

// isHeaderLine spots lines that start a new section in the ProMoral format
// ("Confidence: 0.7", "**Final Answer:**", "### Answer"), so a paragraph
// field stops there even without a blank line.
func isHeaderLine(l string) bool {
	t := strings.TrimLeft(l, " \t")
	if strings.HasPrefix(t, "#") {
		return true
	}
	t = strings.TrimLeft(t, "*_ ")
	c := strings.IndexByte(t, ':')
	if c <= 0 || c > 40 {
		return false
	}
	head := strings.TrimRight(t[:c], "*_ ")
	if head == "" || !unicode.IsUpper(rune(head[0])) {
		return false
	}
	for _, r := range head {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || r == '(' || r == ')' || r == '-') {
			return false
		}
	}
	return len(strings.Fields(head)) <= 4
}

// firstLine and lastLine return the first/last line that is not blank after
// cleanValue (so "---" or "**" separators are skipped).
func firstLine(text string) (string, bool) {
	for i := 0; i < len(text); {
		l, n := lineAt(text, i)
		if cleanValue(l) != "" {
			return l, true
		}
		i = n
	}
	return "", false
}

func lastLine(text string) (string, bool) {
	end := len(text)
	for end > 0 {
		i := strings.LastIndexByte(text[:end], '\n')
		l := text[i+1 : end]
		if cleanValue(l) != "" {
			return l, true
		}
		if i < 0 {
			break
		}
		end = i
	}
	return "", false
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// boundaryBefore reports whether a word may start at i. A hyphen or
// apostrophe between two word characters is part of the word, so
// "un-acceptable" does not contain "acceptable" nor "B's" the letter B (the
// same rule as nextToken).
func boundaryBefore(s string, i int) bool {
	if i <= 0 {
		return true
	}
	r, n := utf8.DecodeLastRuneInString(s[:i])
	if isWordRune(r) {
		return false
	}
	if isGlue(r) && i-n > 0 {
		r2, _ := utf8.DecodeLastRuneInString(s[:i-n])
		return !isWordRune(r2)
	}
	return true
}

// boundaryAfter reports whether a word may end at j.
func boundaryAfter(s string, j int) bool {
	if j >= len(s) {
		return true
	}
	r, n := utf8.DecodeRuneInString(s[j:])
	if isWordRune(r) {
		return false
	}
	if isGlue(r) && j+n < len(s) {
		r2, _ := utf8.DecodeRuneInString(s[j+n:])
		return !isWordRune(r2)
	}
	return true
}

// isGlue lists the characters that join two words into one.
func isGlue(r rune) bool {
	return r == '-' || isApostrophe(r)
}

// negationWindow is how many words before a mention are checked for a
// negation. Four reaches "I don't think it is wrong" while clause punctuation
// stops it, so "No, it is wrong" still counts.
const negationWindow = 4

// negated reports whether the mention starting at i is negated within its
// clause: one of the negationWindow preceding words is a negation. It errs
// towards "negated", which makes the rule fail (unparsed) rather than
// misread.
func negated(s string, i int) bool {
	for w := 0; w < negationWindow; w++ {
		for i > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:i])
			if r == ' ' || r == '\t' || r == '*' || r == '_' || r == '"' || r == '(' || r == '`' ||
				r == '\u201c' || r == '\u201d' {
				i -= n
				continue
			}
			break
		}
		j := i
		for j > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:j])
			if isWordRune(r) || isGlue(r) {
				j -= n
				continue
			}
			break
		}
		if j == i {
			return false // start of text, newline or clause punctuation
		}
		if isNegation(s[j:i]) {
			return true
		}
		i = j
	}
	return false
}

var negations = []string{
	"not", "no", "never", "nothing", "neither", "nor", "without", "hardly", "cannot", "none",
	"isnt", "arent", "wasnt", "werent", "dont", "doesnt", "didnt", "cant", "wont", "wouldnt",
	"shouldnt", "couldnt", "aint", "hasnt", "havent", "hadnt", "mustnt", "neednt",
}

func isNegation(w string) bool {
	if len(w) > 12 {
		return false
	}
	var buf [12]byte
	n := 0
	for _, r := range w {
		switch {
		case isApostrophe(r):
			continue // "isn't" and "isn’t" compare as "isnt"
		case r >= utf8.RuneSelf:
			return false
		}
		buf[n] = lowerASCII(byte(r))
		n++
	}
	for _, neg := range negations {
		if string(buf[:n]) == neg {
			return true
		}
	}
	return false
}
