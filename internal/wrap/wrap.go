// Package wrap breaks text into lines for an 80-column terminal: between
// words, or between the clauses of a "; "-separated description. Widths
// count characters (runes), not bytes.
package wrap

import (
	"strings"
	"unicode/utf8"
)

// Words breaks text into lines of at most width characters between words
// (a longer word stands on a line alone).
func Words(text string, width int) []string { return fill(strings.Fields(text), width) }

// Clauses breaks a "; "-separated description between its clauses, and
// inside a clause only when it is longer than width.
func Clauses(text string, width int) []string {
	var units []string
	clauses := strings.Split(text, "; ")
	for i, c := range clauses {
		if i < len(clauses)-1 {
			c += ";"
		}
		if utf8.RuneCountInString(c) <= width {
			units = append(units, c)
		} else {
			units = append(units, Words(c, width)...)
		}
	}
	return fill(units, width)
}

// Indent is Words with the first line after first and every later line
// after rest, each line at most width characters in all.
func Indent(text, first, rest string, width int) string {
	lines := Words(text, width-max(utf8.RuneCountInString(first), utf8.RuneCountInString(rest)))
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteString("\n" + rest)
		}
		b.WriteString(l)
	}
	return b.String()
}

// fill joins units with spaces into lines of at most width characters,
// greedily; a unit longer than width stands on a line alone.
func fill(units []string, width int) []string {
	var out []string
	cur, n := "", 0
	for _, u := range units {
		un := utf8.RuneCountInString(u)
		switch {
		case cur == "":
			cur, n = u, un
		case n+1+un <= width:
			cur, n = cur+" "+u, n+1+un
		default:
			out = append(out, cur)
			cur, n = u, un
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// Block wraps every line of text (lines split on "\n") to width
// characters: between clauses, else between words. A line keeps its
// leading spaces, and its continuation lines are indented two more. A word
// longer than the room (a long path) stands on a line of its own.
func Block(text string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		body := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(body)]
		if utf8.RuneCountInString(line) <= width || body == "" {
			b.WriteString(line)
			continue
		}
		rest := indent + "  "
		for j, l := range Clauses(body, width-len(rest)) {
			if j == 0 {
				b.WriteString(indent)
			} else {
				b.WriteString("\n" + rest)
			}
			b.WriteString(l)
		}
	}
	return b.String()
}
