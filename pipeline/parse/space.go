package parse

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Label is one answer a task accepts.
type Label struct {
	Value   string   `yaml:"value,omitempty" doc:"canonical label written to results, e.g. unacceptable or B"`
	Aliases []string `yaml:"aliases,omitempty" doc:"other spellings a reply may use for this label, e.g. wrong; matched like the value"`
	Gold    []string `yaml:"gold,omitempty" doc:"raw gold values in the dataset that mean this label, e.g. 1 or true"`
}

// Space is the set of labels a task accepts (its answer space).
//
// Space holds no hidden state so that it can be decoded from YAML as is;
// Normalize and Gold scan the (small) label list on each call without
// allocating. The Extractor keeps its own compiled copy.
type Space struct {
	Labels        []Label `yaml:"labels,omitempty" doc:"the labels the task accepts, in display order"`
	Positive      string  `yaml:"positive,omitempty" doc:"label treated as the positive class by binary metrics; optional"`
	CaseSensitive bool    `yaml:"case_sensitive,omitempty" doc:"match replies to labels and aliases case-sensitively; default case-insensitive"`
}

// Check reports every problem with the space: no labels, empty values or
// aliases, a spelling shared by two entries (after the same cleanup that
// Normalize applies, so "Wrong" and "**wrong**" collide), a gold value claimed
// by two labels, and a positive class that is not a label.
func (s *Space) Check() []error {
	var errs []error
	if s == nil || len(s.Labels) == 0 {
		return []error{fmt.Errorf("answer space has no labels")}
	}
	type entry struct {
		text, what string
		label      int
	}
	var seen []entry
	add := func(raw, what string, label int) {
		c := cleanValue(raw)
		if c == "" {
			errs = append(errs, fmt.Errorf("label %q: %s %q is empty after trimming punctuation and markup", s.Labels[label].Value, what, raw))
			return
		}
		for _, e := range seen {
			if !equalNorm(c, e.text, s.CaseSensitive) {
				continue
			}
			if e.label == label {
				errs = append(errs, fmt.Errorf("label %q: %s %q duplicates its %s", s.Labels[label].Value, what, raw, e.what))
			} else {
				errs = append(errs, fmt.Errorf("label %q: %s %q is also %s of label %q", s.Labels[label].Value, what, raw, e.what, s.Labels[e.label].Value))
			}
			return
		}
		seen = append(seen, entry{c, what + " " + strconv.Quote(raw), label})
	}
	for i, l := range s.Labels {
		add(l.Value, "value", i)
	}
	for i, l := range s.Labels {
		for _, a := range l.Aliases {
			add(a, "alias", i)
		}
	}
	for i, l := range s.Labels {
		for _, g := range l.Gold {
			if strings.TrimSpace(g) == "" {
				errs = append(errs, fmt.Errorf("label %q: empty gold value", l.Value))
				continue
			}
			for j := 0; j < i; j++ {
				for _, h := range s.Labels[j].Gold {
					if s.goldEqual(g, h) {
						errs = append(errs, fmt.Errorf("gold value %q maps to both %q and %q", g, s.Labels[j].Value, l.Value))
					}
				}
			}
		}
	}
	if s.Positive != "" && s.index(s.Positive) < 0 {
		errs = append(errs, fmt.Errorf("positive class %q is not a label value", s.Positive))
	}
	return errs
}

// index returns the label whose canonical value is v, or -1.
func (s *Space) index(v string) int {
	for i := range s.Labels {
		if s.Labels[i].Value == v {
			return i
		}
	}
	return -1
}

// Normalize maps raw text to a label when the whole text, after trimming
// whitespace, quotes, brackets, markdown emphasis and trailing punctuation, is
// a label value or alias (case-folded unless CaseSensitive; internal runs of
// whitespace count as one space). It never searches inside longer text: use an
// Extractor for that.
func (s *Space) Normalize(raw string) (label string, ok bool) {
	if i := s.exact(raw); i >= 0 {
		return s.Labels[i].Value, true
	}
	return "", false
}

func (s *Space) exact(raw string) int {
	c := cleanValue(raw)
	if c == "" {
		return -1
	}
	for i := range s.Labels {
		if equalNorm(c, cleanValue(s.Labels[i].Value), s.CaseSensitive) {
			return i
		}
	}
	for i := range s.Labels {
		for _, a := range s.Labels[i].Aliases {
			if equalNorm(c, cleanValue(a), s.CaseSensitive) {
				return i
			}
		}
	}
	return -1
}

// Gold maps a dataset gold value to a label. Strings, all integer and float
// kinds, bools and json.Number are accepted. Explicit Gold lists are tried
// first, comparing numbers numerically ("1", 1, 1.0 and true are equal; false
// equals 0), then the value is read like a reply with Normalize, so a dataset
// that stores "wrong" needs no gold list.
func (s *Space) Gold(raw any) (label string, ok bool) {
	str, ok := goldString(raw)
	if !ok || str == "" {
		return "", false
	}
	for i := range s.Labels {
		for _, g := range s.Labels[i].Gold {
			if s.goldEqual(str, g) {
				return s.Labels[i].Value, true
			}
		}
	}
	return s.Normalize(str)
}

func goldString(raw any) (string, bool) {
	switch v := raw.(type) {
	case string:
		return strings.TrimSpace(v), true
	case bool:
		return strconv.FormatBool(v), true
	case int:
		return strconv.FormatInt(int64(v), 10), true
	case int8:
		return strconv.FormatInt(int64(v), 10), true
	case int16:
		return strconv.FormatInt(int64(v), 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case uint:
		return strconv.FormatUint(uint64(v), 10), true
	case uint8:
		return strconv.FormatUint(uint64(v), 10), true
	case uint16:
		return strconv.FormatUint(uint64(v), 10), true
	case uint32:
		return strconv.FormatUint(uint64(v), 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	case float32:
		return formatGoldFloat(float64(v))
	case float64:
		return formatGoldFloat(v)
	case json.Number:
		return v.String(), true
	}
	return "", false
}

func formatGoldFloat(f float64) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}

// goldEqual compares gold values as numbers when both parse as numbers (or
// bools), so "1.0" in a parquet file matches gold: ["1"], else as trimmed
// strings, case-insensitively unless the space is case-sensitive.
func (s *Space) goldEqual(a, b string) bool {
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if x, ok := goldNumber(a); ok {
		if y, ok := goldNumber(b); ok {
			return x == y
		}
	}
	if s.CaseSensitive {
		return a == b
	}
	return strings.EqualFold(a, b)
}

func goldNumber(s string) (float64, bool) {
	switch strings.ToLower(s) {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// isTrimRune lists what cleanValue strips from both ends of a candidate:
// whitespace, markdown emphasis/code/heading/list markers, quotes, brackets and
// sentence punctuation. "(B)", "**Unacceptable**", "not wrong." and
// "`REFUSAL`" all reduce to the bare label.
func isTrimRune(r rune) bool {
	switch r {
	case '*', '_', '`', '"', '\'', '\u201c', '\u201d', '\u2018', '\u2019', '\u00ab', '\u00bb',
		'.', ',', ';', ':', '!', '?', '(', ')', '[', ']', '{', '}', '<', '>', '#', '-', '\u2022', '~', '|', '=':
		return true
	}
	return unicode.IsSpace(r)
}

// cleanValue trims a candidate answer to its core text without allocating.
func cleanValue(s string) string {
	return strings.TrimFunc(s, isTrimRune)
}

// equalNorm compares two cleaned strings treating any run of whitespace as a
// single space and, unless cs, folding case. It does not allocate, which keeps
// exact matching in Extract allocation-free.
func equalNorm(a, b string, cs bool) bool {
	i, j := 0, 0
	for {
		ni := skipSpaces(a, i)
		nj := skipSpaces(b, j)
		if (ni > i) != (nj > j) {
			return false
		}
		i, j = ni, nj
		if i >= len(a) || j >= len(b) {
			return i >= len(a) && j >= len(b)
		}
		ra, sa := utf8.DecodeRuneInString(a[i:])
		rb, sb := utf8.DecodeRuneInString(b[j:])
		ra, rb = straightQuote(ra), straightQuote(rb)
		if ra != rb && (cs || !foldEqual(ra, rb)) {
			return false
		}
		i += sa
		j += sb
	}
}

// straightQuote maps typographic apostrophes to "'" so "isn’t wrong" from a
// model matches the alias "isn't wrong" typed in a task file.
//
// (ʼ U+02BC is a letter, so it also glues words without help.)
func straightQuote(r rune) rune {
	if isApostrophe(r) {
		return '\''
	}
	return r
}

// isApostrophe lists the characters models use as an apostrophe.
func isApostrophe(r rune) bool {
	return r == '\'' || r == '\u2019' || r == '\u2018' || r == '\u02bc'
}

func skipSpaces(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return i
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			return i
		}
		i += n
	}
	return i
}

func foldEqual(a, b rune) bool {
	return canonFold(a) == canonFold(b)
}

// canonFold maps r to the smallest rune of its simple case-folding orbit,
// the equivalence regexp's (?i) uses: "k", "K" and the Kelvin sign all map
// to "K", "s" and "ſ" to "S".
func canonFold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// values lists the canonical label values, for messages.
func (s *Space) values() []string {
	out := make([]string, len(s.Labels))
	for i := range s.Labels {
		out[i] = s.Labels[i].Value
	}
	return out
}
