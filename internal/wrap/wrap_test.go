package wrap

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWords(t *testing.T) {
	text := "note: output tokens: worst = max_tokens x samples (32768 where a stage sets none) plus thinking budgets; best = the mean of earlier runs"
	lines := Words(text, 40)
	if strings.Join(lines, " ") != strings.Join(strings.Fields(text), " ") {
		t.Fatalf("words lost or moved: %q", lines)
	}
	for i, l := range lines {
		if utf8.RuneCountInString(l) > 40 {
			t.Errorf("line %q is %d characters", l, utf8.RuneCountInString(l))
		}
		// Greedy: the next line's first word would not have fitted.
		if i+1 < len(lines) && utf8.RuneCountInString(l)+1+utf8.RuneCountInString(strings.Fields(lines[i+1])[0]) <= 40 {
			t.Errorf("line %q could have taken the next word", l)
		}
	}
	if got := Words("a-very-long-word-indeed b", 5); len(got) != 2 || got[0] != "a-very-long-word-indeed" {
		t.Errorf("a word longer than the width: %q", got)
	}
	// Characters, not bytes: 39 en dashes and a space fit in 40.
	dashes := strings.Repeat("–", 39)
	if got := Words(dashes+" x", 41); len(got) != 1 {
		t.Errorf("widths count bytes: %q", got)
	}
}

func TestClausesBreakBetweenClauses(t *testing.T) {
	got := Clauses("unparsed wrong; confidence = confidence in the chosen answer; F1 = weighted_f1; ECE = ece (10 equal-width bins)", 62)
	want := []string{"unparsed wrong; confidence = confidence in the chosen answer;", "F1 = weighted_f1; ECE = ece (10 equal-width bins)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestIndent(t *testing.T) {
	got := Indent("one two three four five six", "note: ", "  ", 16)
	want := "note: one two\n  three four\n  five six"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Block keeps each line's indent, indents its continuation two more, and
// leaves a word wider than the width (a path) on a line of its own.
func TestBlock(t *testing.T) {
	path := "/" + strings.Repeat("p", 90)
	got := Block("run: 3 cases\n  nothing was written to "+path+" (the earlier outputs stand); apply again to resume from the journal", 40)
	want := "run: 3 cases\n  nothing was written to\n    " + path + "\n    (the earlier outputs stand);\n    apply again to resume from the\n    journal"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
