package parse

import (
	"unicode"
	"unicode/utf8"
)

// Word-level matching. Go's regexp runs case-insensitive alternations at a
// few MB/s, too slow for scanning whole replies ~20k times a second, so alias
// search and phrase triggers walk the reply's words once and look each up in
// a map. Words are maximal runs of letters, digits and "_", including a
// hyphen or apostrophe between two of them ("un-acceptable", "isn't"), which
// gives the word-boundary rules of the package for free.

// maxTokenKey bounds folded words used as map keys; longer words cannot be a
// key and are skipped without allocating.
const maxTokenKey = 64

// nextToken returns the first word at or after i as [start, end); start is
// len(s) when there is none.
func nextToken(s string, i int) (start, end int) {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if isWordByte(c) {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if isWordRune(r) {
			break
		}
		i += n
	}
	start = i
	for i < len(s) {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if isWordRune(r) {
			i += n
			continue
		}
		if isGlue(r) {
			if r2, _ := utf8.DecodeRuneInString(s[i+n:]); i+n < len(s) && isWordRune(r2) {
				i += n
				continue
			}
		}
		break
	}
	return start, i
}

func isWordByte(c byte) bool {
	return c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// foldToken writes the lower-cased word (typographic apostrophes made
// straight) into buf; ok is false when it does not fit.
func foldToken(buf *[maxTokenKey]byte, w string) ([]byte, bool) {
	n := 0
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			if n == len(buf) {
				return nil, false
			}
			buf[n] = lowerASCII(c)
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(w[i:])
		i += size
		r = unicode.ToLower(straightQuote(r))
		if n+utf8.RuneLen(r) > len(buf) {
			return nil, false
		}
		n += utf8.EncodeRune(buf[n:], r)
	}
	return buf[:n], true
}

// foldString is foldToken for compile-time keys.
func foldString(w string) (string, bool) {
	var buf [maxTokenKey]byte
	b, ok := foldToken(&buf, w)
	return string(b), ok
}

// tokenAlias is an alias split into words.
type tokenAlias struct {
	words []string
	upper bool // a one-letter alias: only its upper-case form counts
	label int
}

// aliasIndex maps the folded first word of every alias to the aliases
// starting with it, longest first.
type aliasIndex struct {
	byFirst map[string][]int
	aliases []tokenAlias
	cs      bool
}

// newAliasIndex indexes keys (sorted longest first). It returns nil when an
// alias is not plain words separated by spaces (e.g. "n/a", "+1"); the
// Extractor then falls back to its regexp.
func newAliasIndex(keys []aliasKey, cs bool) *aliasIndex {
	idx := &aliasIndex{byFirst: map[string][]int{}, cs: cs}
	for _, k := range keys {
		var words []string
		for i := 0; ; {
			s, e := nextToken(k.text, i)
			if s >= len(k.text) {
				break
			}
			// Only whitespace may separate the words of an alias.
			if len(words) > 0 && skipSpaces(k.text, i) != s || len(words) == 0 && s != 0 {
				return nil
			}
			words = append(words, k.text[s:e])
			i = e
		}
		if len(words) == 0 || skipSpaces(k.text, tokenEnd(k.text)) != len(k.text) {
			return nil
		}
		first, ok := foldString(words[0])
		if !ok {
			return nil
		}
		a := tokenAlias{words: words, label: k.label}
		if r, n := utf8.DecodeRuneInString(k.text); n == len(k.text) && unicode.IsLetter(r) && !cs {
			a.upper, a.words[0] = true, string(unicode.ToUpper(r))
		}
		idx.byFirst[first] = append(idx.byFirst[first], len(idx.aliases))
		idx.aliases = append(idx.aliases, a)
	}
	return idx
}

// tokenEnd is the end of the last word in s.
func tokenEnd(s string) int {
	end := 0
	for i := 0; ; {
		st, e := nextToken(s, i)
		if st >= len(s) {
			return end
		}
		end, i = e, e
	}
}

// matchAt reports whether the alias starts with the word s[ts:te] and
// returns where it ends; its words must be separated by whitespace only.
func (a *tokenAlias) matchAt(s string, ts, te int, cs bool) (int, bool) {
	if a.upper {
		return te, s[ts:te] == a.words[0]
	}
	if !equalNorm(s[ts:te], a.words[0], cs) {
		return 0, false
	}
	end := te
	for _, w := range a.words[1:] {
		ns, ne := nextToken(s, end)
		if ns >= len(s) || ns == end || skipSpaces(s, end) != ns || !equalNorm(s[ns:ne], w, cs) {
			return 0, false
		}
		end = ne
	}
	return end, true
}

// scan calls fn for each alias mention in s, left to right, longest alias
// first at each word, skipping negated mentions; fn returns false to stop.
func (idx *aliasIndex) scan(s string, fn func(label, start int) bool) {
	var buf [maxTokenKey]byte
	for i := 0; i < len(s); {
		ts, te := nextToken(s, i)
		if ts >= len(s) {
			return
		}
		i = te
		key, ok := foldToken(&buf, s[ts:te])
		if !ok {
			continue
		}
		for _, ai := range idx.byFirst[string(key)] {
			a := &idx.aliases[ai]
			end, ok := a.matchAt(s, ts, te, idx.cs)
			if !ok {
				continue
			}
			i = end
			if !negated(s, ts) && !fn(a.label, ts) {
				return
			}
			break
		}
	}
}
