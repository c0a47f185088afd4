package parse

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// confWord is a verbal confidence from Spec.ConfidenceWords.
type confWord struct {
	word  string
	value float64
}

// parseConfidence reads the first number in raw and converts it to 0..1.
//
//   - "85%" and "85 percent" are percentages and "85/100", "8/10", "4 out of
//     5" are fractions, whatever the scale.
//   - A bare number follows the scale: unit takes 0..1, percent takes 0..100
//     (so "1" is 0.01), auto takes a value <= 1 as 0..1 (so "1" and "1.0" are
//     1.0: ProMoral's 0–1 replies often say 1.0 while a 0–100 reply of exactly
//     1 is rare) and a value in (1, 100] as a percentage.
//   - Anything outside the scale's range (150, -3, 1.5 under unit) is not
//     clamped: it returns ok=false so the reply is counted as an unparsed
//     confidence rather than a silently invented one.
//   - With no number, the cleaned text is looked up in words (e.g. high: 0.8);
//     without a mapping, verbal confidences stay unparsed.
func parseConfidence(raw, scale string, words []confWord) (float64, bool) {
	v, end, ok := firstNumber(raw)
	if !ok {
		c := cleanValue(raw)
		for _, w := range words {
			if equalNorm(c, w.word, false) {
				return w.value, true
			}
		}
		return 0, false
	}
	rest := strings.TrimLeft(raw[end:], " \t")
	switch {
	case strings.HasPrefix(rest, "%"), hasPrefixFold(rest, "percent"):
		return inRange(v/100, v, 100)
	case strings.HasPrefix(rest, "/"):
		if d, _, ok := leadingNumber(strings.TrimLeft(rest[1:], " \t")); ok && d > 0 {
			return inRange(v/d, v, d)
		}
	case hasPrefixFold(rest, "out of"):
		if d, _, ok := leadingNumber(strings.TrimLeft(rest[len("out of"):], " \t")); ok && d > 0 {
			return inRange(v/d, v, d)
		}
	}
	switch scale {
	case ScaleUnit:
		return inRange(v, v, 1)
	case ScalePercent:
		return inRange(v/100, v, 100)
	}
	if v <= 1 {
		return inRange(v, v, 1)
	}
	return inRange(v/100, v, 100)
}

// inRange accepts conf when the raw value lies in [0, top].
func inRange(conf, v, top float64) (float64, bool) {
	if v < 0 || v > top {
		return 0, false
	}
	return conf, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// firstNumber finds the first decimal number in s ("0.85", ".9", "-3",
// "−3") and returns it and the index after it. Digits glued to a letter
// ("GPT4", "v2") are not a confidence and are skipped.
func firstNumber(s string) (float64, int, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isDigit(c) && !(c == '.' && i+1 < len(s) && isDigit(s[i+1])) {
			continue
		}
		if i > 0 && isASCIILetter(s[i-1]) {
			for i+1 < len(s) && (isDigit(s[i+1]) || s[i+1] == '.') {
				i++
			}
			continue
		}
		v, n, _ := leadingNumber(s[i:])
		if i > 0 && s[i-1] == '-' || strings.HasSuffix(s[:i], "\u2212") {
			v = -v
		}
		return v, i + n, true
	}
	return 0, 0, false
}

// leadingNumber parses digits[.digits] (or .digits) at the start of s.
func leadingNumber(s string) (float64, int, bool) {
	j := 0
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j == 0 {
		return 0, 0, false
	}
	v, err := strconv.ParseFloat(s[:j], 64)
	if err != nil {
		return 0, 0, false
	}
	return v, j, true
}

func isASCIILetter(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// Bin names the confidence band of conf, each band closed below and open
// above except the last: very_low [0, 0.2), low [0.2, 0.4), moderate
// [0.4, 0.6), high [0.6, 0.8), very_high [0.8, 1]. So 0.2 is "low", 0.8 is
// "very_high" and 1 is "very_high". Values outside [0, 1] (and NaN) return "",
// which Extract never produces.
func Bin(conf float64) string {
	switch {
	case !(conf >= 0 && conf <= 1):
		return ""
	case conf < 0.2:
		return "very_low"
	case conf < 0.4:
		return "low"
	case conf < 0.6:
		return "moderate"
	case conf < 0.8:
		return "high"
	}
	return "very_high"
}

// clip bounds diagnostic text kept in a Result, cutting on a rune boundary.
func clip(s string) string {
	const maxRaw = 200
	s = strings.TrimSpace(s)
	if len(s) <= maxRaw {
		return s
	}
	i := maxRaw
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
