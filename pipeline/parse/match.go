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
		if isWordByte(s[i]) {
			i++
			continue
		}
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

// foldToken writes the case-folded word (canonFold, typographic apostrophes
// made straight) into buf; ok is false when it does not fit.
func foldToken(buf *[maxTokenKey]byte, w string) ([]byte, bool) {
	n := 0
	for i := 0; i < len(w); {
		c := w[i]
		if c < utf8.RuneSelf {
			if n == len(buf) {
				return nil, false
			}
			buf[n] = byte(canonFold(rune(c)))
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(w[i:])
		i += size
		r = canonFold(straightQuote(r))
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

// wordSet maps folded words to lists of ints. Most words of a reply are in
// no set, so a 64-bit filter per word length, keyed by the first and last
// byte, rejects them before folding and hashing.
type wordSet struct {
	m      map[string][]int
	filter [maxFilterLen + 1]uint64
	long   bool // some key is longer than maxFilterLen
}

const maxFilterLen = 32

func filterBit(first, last byte) uint64 {
	return 1 << ((uint(first)*31 + uint(last)) & 63)
}

// add files v under the word w (folded here).
func (ws *wordSet) add(w string, v int) bool {
	key, ok := foldString(w)
	if !ok {
		return false
	}
	if ws.m == nil {
		ws.m = map[string][]int{}
	}
	ws.m[key] = append(ws.m[key], v)
	switch {
	case len(key) > maxFilterLen:
		ws.long = true
	case isASCII(key):
		// A pure-ASCII word folds to a pure-ASCII key of the same length,
		// so only such keys need filter bits; other words bypass the filter.
		ws.filter[len(key)] |= filterBit(key[0], key[len(key)-1])
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// get returns the values filed under the word w.
func (ws *wordSet) get(w string) []int {
	if ws.m == nil {
		return nil
	}
	if n := len(w); n > maxFilterLen {
		if !ws.long {
			return nil
		}
	} else if isASCII(w) && ws.filter[n]&filterBit(byte(canonFold(rune(w[0]))), byte(canonFold(rune(w[n-1])))) == 0 {
		return nil
	}
	var buf [maxTokenKey]byte
	key, ok := foldToken(&buf, w)
	if !ok {
		return nil
	}
	return ws.m[string(key)]
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
	byFirst wordSet
	aliases []tokenAlias
	cs      bool
}

// newAliasIndex indexes keys (sorted longest first). It returns nil when an
// alias is not plain words separated by spaces (e.g. "n/a", "+1"); the
// Extractor then falls back to its regexp.
func newAliasIndex(keys []aliasKey, cs bool) *aliasIndex {
	idx := &aliasIndex{cs: cs}
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
		a := tokenAlias{words: words, label: k.label}
		if r, n := utf8.DecodeRuneInString(k.text); n == len(k.text) && unicode.IsLetter(r) && !cs {
			a.upper, a.words[0] = true, string(unicode.ToUpper(r))
		}
		if !idx.byFirst.add(words[0], len(idx.aliases)) {
			return nil
		}
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
		return te, s[ts:te] == a.words[0] && !articleUse(s, ts, te)
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

// aliasAt returns the label of the longest alias starting exactly at the
// word at i, and where it ends; -1 when none does.
func (idx *aliasIndex) aliasAt(s string, i int) (label, end int) {
	ts, te := nextToken(s, i)
	if ts != i || ts >= len(s) || !boundaryBefore(s, i) {
		return -1, 0
	}
	for _, ai := range idx.byFirst.get(s[ts:te]) {
		if end, ok := idx.aliases[ai].matchAt(s, ts, te, idx.cs); ok {
			return idx.aliases[ai].label, end
		}
	}
	return -1, 0
}

// articleUse reports whether the capital letter s[ts:te] reads as the
// English word "A" or "I" rather than an option letter: it is followed by one
// space and a lower-case word that is not a typical continuation after an
// answer letter ("A better approach is…" but not "A because…", "A is…").
// Such a mention is skipped, leaving the reply unparsed rather than misread.
func articleUse(s string, ts, te int) bool {
	if te-ts != 1 || (s[ts] != 'A' && s[ts] != 'I') || te+1 >= len(s) || s[te] != ' ' {
		return false
	}
	if c := s[te+1]; c < 'a' || c > 'z' {
		return false
	}
	w := nextWord(s, te)
	for _, c := range letterContinuations {
		if w == c {
			return false
		}
	}
	return true
}

// letterContinuations may follow an answer letter in a sentence.
var letterContinuations = []string{
	"is", "was", "would", "will", "seems", "appears", "because", "since", "as", "and", "or",
	"but", "for", "has", "vs", "over", "instead", "here", "too", "remains", "makes",
}

// scan calls fn for each alias mention in s, left to right, longest alias
// first at each word, skipping negated mentions; fn returns false to stop.
func (idx *aliasIndex) scan(s string, fn func(label, start int) bool) {
	for i := 0; i < len(s); {
		ts, te := nextToken(s, i)
		if ts >= len(s) {
			return
		}
		i = te
		for _, ai := range idx.byFirst.get(s[ts:te]) {
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
