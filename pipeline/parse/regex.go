package parse

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Regex rules read the last (or first) match of a user's pattern. Go's
// regexp tries the pattern at every position of the reply, and a `last`
// rule walks every match, so on replies of a few hundred words each pass
// costs tens of microseconds. Most patterns say where a match can begin (a
// literal such as "Confidence:", or the start of a line) and name words any
// match contains. A regexRun looks only there: it tries the pattern anchored
// at each possible start, in order, which finds the same matches FindAll
// would, since FindAll's next match is the leftmost start with a match and,
// at that start, the one the anchored pattern prefers. The rune before each
// start is given to the anchored pattern, so \b and (?m)^ see what they
// would have seen in the whole reply.

// startKind is where a pattern's matches can begin.
type startKind int

const (
	startAnywhere startKind = iota // unknown: the plain regexp search
	startLine                      // only at a line start: (?m)^ first
	startLiteral                   // only where the literal prefix occurs
)

type regexRun struct {
	re    *regexp.Regexp
	group int

	// need is a literal every match contains (lower case when needFold);
	// a reply without it has no match.
	need     string
	needFold bool

	starts     startKind
	prefix     string  // startLiteral: the literal every match starts with
	prefixFold bool    // compared ignoring ASCII case; prefix is lower case
	first      runeSet // runes a match can begin with
	at0        *regexp.Regexp
	at         *regexp.Regexp // at a start after a rune: that rune, then the pattern
}

func newRegexRun(re *regexp.Regexp, group int) regexRun {
	r := regexRun{re: re, group: group}
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return r
	}
	tree = tree.Simplify()
	for _, lit := range required(tree, nil) {
		for _, part := range safeRuns(lit) {
			if len(part.text) > len(r.need) {
				r.need, r.needFold = part.text, part.fold
			}
		}
	}
	if minRunes(tree) == 0 {
		// A pattern that can match nothing has FindAll's rules for empty
		// matches; leave it to FindAll.
		return r
	}
	kind, lit := leading(tree)
	switch kind {
	case startLiteral:
		runs := safeRuns(lit)
		if len(runs) == 0 || runs[0].start != 0 {
			return r
		}
		r.prefix, r.prefixFold = runs[0].text, runs[0].fold
		if r.need == r.prefix && r.needFold == r.prefixFold {
			r.need = "" // the search for starts looks for it anyway
		}
	case startLine:
	default:
		return r
	}
	at0, err0 := regexp.Compile(`\A(?:` + re.String() + `)`)
	at, err1 := regexp.Compile(`\A(?s:.)(?:` + re.String() + `)`)
	if err0 != nil || err1 != nil || at0.NumSubexp() != re.NumSubexp() || at.NumSubexp() != re.NumSubexp() {
		return r
	}
	r.starts, r.at0, r.at = kind, at0, at
	if first, nullable := firstRunes(tree); !nullable {
		r.first = first
	} else {
		r.first.any = true
	}
	return r
}

// find returns the submatch indexes of the last match (or of the first, if
// !last) whose group took part, as regexCandidate used them: for last, the
// last match of FindAll with the group set; for first, the first match,
// whatever its group.
func (r *regexRun) find(text string, last bool) []int {
	if r.need != "" && !contains(text, r.need, r.needFold) {
		return nil
	}
	if r.starts == startAnywhere {
		return r.slow(text, last)
	}
	var found []int
	var rd strings.Reader
	pos, tries := 0, 0
	try := func(s int) bool {
		if s < pos || !r.first.startsAt(text, s) {
			return true
		}
		if tries++; tries > maxTries {
			return false
		}
		m := r.matchAt(text, s, &rd)
		if m == nil {
			return true
		}
		if !last {
			found = m
			return false
		}
		if m[2*r.group] >= 0 {
			found = m
		}
		pos = m[1]
		return true
	}
	switch r.starts {
	case startLine:
		for s := 0; s <= len(text); {
			if !try(s) {
				break
			}
			nl := strings.IndexByte(text[s:], '\n')
			if nl < 0 {
				break
			}
			s += nl + 1
		}
	case startLiteral:
		if r.prefixFold {
			newNeedle(r.prefix).each(text, try)
			break
		}
		for s := 0; s < len(text); s++ {
			i := strings.Index(text[s:], r.prefix)
			if i < 0 || !try(s+i) {
				break
			}
			s += i
		}
	}
	if tries > maxTries {
		return r.slow(text, last)
	}
	return found
}

// maxTries bounds the anchored tries on one reply. A try may read the rest
// of the reply (a leading \s* crosses lines), so a reply of thousands of
// blank lines would cost their square; past this many starts the plain
// search, linear in the reply, takes over. The published replies need at
// most 42 tries.
const maxTries = 64

// slow is the plain regexp search, which find must always agree with.
func (r *regexRun) slow(text string, last bool) []int {
	if !last {
		return r.re.FindStringSubmatchIndex(text)
	}
	all := r.re.FindAllStringSubmatchIndex(text, -1)
	for k := len(all) - 1; k >= 0; k-- {
		if all[k][2*r.group] >= 0 {
			return all[k]
		}
	}
	return nil
}

// matchAt runs the pattern anchored at s. On a long rest of the reply, a
// RuneReader makes regexp use a machine that stops once the pattern fails,
// instead of one that clears state for the whole rest on every try; on a
// short one (shortTail bytes) that backtracker is the faster.
const shortTail = 256

func (r *regexRun) matchAt(text string, s int, rd *strings.Reader) []int {
	if s == 0 {
		if len(text) <= shortTail {
			return r.at0.FindStringSubmatchIndex(text)
		}
		rd.Reset(text)
		return r.at0.FindReaderSubmatchIndex(rd)
	}
	_, w := utf8.DecodeLastRuneInString(text[:s])
	var m []int
	if tail := text[s-w:]; len(tail) <= shortTail {
		m = r.at.FindStringSubmatchIndex(tail)
	} else {
		rd.Reset(tail)
		m = r.at.FindReaderSubmatchIndex(rd)
	}
	if m == nil {
		return nil
	}
	for i, v := range m {
		if v >= 0 {
			m[i] = v + s - w
		}
	}
	m[0] = s
	return m
}

func contains(text, lit string, fold bool) bool {
	if fold {
		return indexFold(text, lit) >= 0
	}
	return strings.Contains(text, lit)
}

// leading reports where every match of re begins.
func leading(re *syntax.Regexp) (startKind, *syntax.Regexp) {
	switch re.Op {
	case syntax.OpConcat:
		if len(re.Sub) > 0 {
			return leading(re.Sub[0])
		}
	case syntax.OpCapture, syntax.OpPlus:
		return leading(re.Sub[0])
	case syntax.OpLiteral:
		return startLiteral, re
	case syntax.OpBeginLine:
		return startLine, nil
	}
	return startAnywhere, nil
}

// required lists literals every match of re contains.
func required(re *syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpLiteral:
		out = append(out, re)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			out = required(s, out)
		}
	case syntax.OpCapture, syntax.OpPlus:
		out = required(re.Sub[0], out)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			out = required(re.Sub[0], out)
		}
	}
	return out
}

// minRunes is the fewest runes a match of re can span.
func minRunes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minRunes(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minRunes(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minRunes(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if m := minRunes(s); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	case syntax.OpNoMatch:
		return 1 // never matches, so never matches empty
	}
	return 0
}

// litRun is a piece of a literal that a byte search can find exactly.
type litRun struct {
	text  string // lower case when fold
	fold  bool
	start int // index of its first rune in the literal
}

// safeRuns splits a literal into its longest runs of ASCII runes whose case
// variants are ASCII too: a case-insensitive "s" also matches "ſ" (U+017F)
// and "k" the Kelvin sign, which an ASCII search would miss.
func safeRuns(lit *syntax.Regexp) []litRun {
	fold := lit.Flags&syntax.FoldCase != 0
	var runs []litRun
	var b strings.Builder
	start := 0
	flush := func() {
		if b.Len() > 0 {
			runs = append(runs, litRun{b.String(), fold, start})
			b.Reset()
		}
	}
	for i, r := range lit.Rune {
		if !asciiOrbit(r, fold) {
			flush()
			start = i + 1
			continue
		}
		if fold {
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	flush()
	return runs
}

func asciiOrbit(r rune, fold bool) bool {
	if r >= utf8.RuneSelf {
		return false
	}
	if !fold {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// runeSet is a set of runes, for the first rune of a match.
type runeSet struct {
	any    bool
	ascii  [utf8.RuneSelf]bool
	ranges []rune // pairs lo, hi, inclusive, of runes >= utf8.RuneSelf
}

func (rs *runeSet) add(lo, hi rune) {
	if rs.any {
		return
	}
	for c := lo; c <= hi && c < utf8.RuneSelf; c++ {
		rs.ascii[c] = true
	}
	if hi >= utf8.RuneSelf {
		rs.ranges = append(rs.ranges, max(lo, utf8.RuneSelf), hi)
	}
}

func (rs *runeSet) union(o *runeSet) {
	if o.any {
		rs.any = true
		return
	}
	for c, in := range o.ascii {
		rs.ascii[c] = rs.ascii[c] || in
	}
	rs.ranges = append(rs.ranges, o.ranges...)
}

// startsAt reports whether the rune at s, as regexp decodes it, is in the
// set; there is none at the end of the text.
func (rs *runeSet) startsAt(text string, s int) bool {
	if s >= len(text) {
		return false
	}
	if rs.any {
		return true
	}
	if c := text[s]; c < utf8.RuneSelf {
		return rs.ascii[c]
	}
	r, _ := utf8.DecodeRuneInString(text[s:])
	for i := 0; i+1 < len(rs.ranges); i += 2 {
		if rs.ranges[i] <= r && r <= rs.ranges[i+1] {
			return true
		}
	}
	return false
}

// firstRunes is the set of runes a match of re can begin with, and whether
// re can match without consuming one (then the set says nothing alone).
func firstRunes(re *syntax.Regexp) (set runeSet, nullable bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return set, true
		}
		r := re.Rune[0]
		set.add(r, r)
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				set.add(f, f)
			}
		}
		return set, false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			set.add(re.Rune[i], re.Rune[i+1])
		}
		return set, false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		set.any = true
		return set, false
	case syntax.OpNoMatch:
		return set, false
	case syntax.OpCapture, syntax.OpPlus:
		return firstRunes(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		set, _ = firstRunes(re.Sub[0])
		return set, true
	case syntax.OpRepeat:
		set, nullable = firstRunes(re.Sub[0])
		return set, nullable || re.Min == 0
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			s, null := firstRunes(sub)
			set.union(&s)
			if !null {
				return set, false
			}
		}
		return set, true
	case syntax.OpAlternate:
		nullable = false
		for _, sub := range re.Sub {
			s, null := firstRunes(sub)
			set.union(&s)
			nullable = nullable || null
		}
		return set, nullable
	}
	// Empty-width assertions and the empty match consume nothing.
	return set, true
}
