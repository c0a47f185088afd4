package view

import (
	"fmt"
	"strings"
	"testing"
)

// sides rebuilds the two texts from a diff: A from its "=" and "-" runs,
// B from its "=" and "+" runs.
func sides(d []Span) (a, b string, changed int) {
	for _, s := range d {
		switch s.Op {
		case "=":
			a += s.Text
			b += s.Text
		case "-":
			a += s.Text
			changed++
		case "+":
			b += s.Text
			changed++
		}
	}
	return a, b, changed
}

func TestWordDiff(t *testing.T) {
	d := WordDiff("Reasoning: it is fine.\nFinal Answer: Acceptable", "Reasoning: it is not fine.\nFinal Answer: Unacceptable")
	want := []Span{{"=", "Reasoning: it is "}, {"+", "not "}, {"=", "fine.\nFinal Answer: "}, {"-", "Acceptable"}, {"+", "Unacceptable"}}
	if fmt.Sprint(d) != fmt.Sprint(want) {
		t.Errorf("diff:\n got %q\nwant %q", d, want)
	}
	for _, c := range [][2]string{
		{"", ""}, {"same text", "same text"}, {"", "all new"}, {"all gone", ""},
		{"a b c d e", "e d c b a"}, {"Ünïcode wörds, and “quotes”", "Ünïcode words and “quotes”!"},
		{strings.Repeat("word ", 3000), strings.Repeat("other ", 3000)}, // past the table's bound
	} {
		d := WordDiff(c[0], c[1])
		a, b, changed := sides(d)
		if a != c[0] || b != c[1] {
			t.Errorf("diff of %.40q / %.40q does not give the texts back: %.60q / %.60q", c[0], c[1], a, b)
		}
		if (changed == 0) != (c[0] == c[1]) {
			t.Errorf("diff of %.40q / %.40q: %d changed runs", c[0], c[1], changed)
		}
	}
}

// Side by side lines up every turn of a multi-turn case with the other
// side's, with a word diff of each pair of replies: zero_shot asks once,
// self_correct answers, critiques and revises.
func TestPairShowsEveryTurn(t *testing.T) {
	base, srv := serve(t, demoRun(t))
	r := srv.list()[0]
	c, err := CompareRuns(r, r, Compare{By: "strategy", A: "zero_shot", B: "self_correct", Q: Query{Sel: sel("task", "ethics"), Limit: 1}})
	if err != nil || len(c.Pairs) == 0 {
		t.Fatalf("no pair: %v", err)
	}
	p := c.Pairs[0]
	var pv PairView
	if code := getJSON(t, fmt.Sprintf("%s/api/pair?a=%d&b=%d", base, p.A.I, p.B.I), &pv); code != 200 {
		t.Fatalf("status %d", code)
	}
	cb, err := r.Case(int(p.B.I))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, s := range cb.Steps {
		if s.Calls != nil {
			calls++
		}
	}
	if calls < 3 || len(pv.Turns) != calls {
		t.Fatalf("self_correct made %d calls, side by side shows %d turns", calls, len(pv.Turns))
	}
	first := pv.Turns[0]
	if first.A == nil || first.B == nil || first.A.Stage != "answer" || first.B.Stage != "answer" || first.A.Reply == nil || first.B.Reply == nil {
		t.Fatalf("first turn: %+v", first)
	}
	if a, b, _ := sides(first.Diff); a != *first.A.Reply || b != *first.B.Reply {
		t.Errorf("the first turn's diff does not give the replies back")
	}
	if first.Same != (*first.A.Reply == *first.B.Reply) {
		t.Errorf("same = %v", first.Same)
	}
	var stages []string
	for k, tp := range pv.Turns[1:] {
		if tp.A != nil || tp.Diff != nil {
			t.Errorf("turn %d: zero_shot has a single turn, got %+v", k+2, tp.A)
		}
		if tp.B == nil || tp.B.Reply == nil || *tp.B.Reply == "" {
			t.Fatalf("turn %d of self_correct has no reply: %+v", k+2, tp.B)
		}
		stages = append(stages, fmt.Sprintf("%s#%d", tp.B.Stage, tp.B.Visit))
		// A continued conversation shows only what was new at that turn.
		if tp.B.Earlier == 0 || len(tp.B.Asked) != 1 || tp.B.Asked[0].Role != "user" {
			t.Errorf("turn %d asks %d new message(s) after %d earlier ones, want one user message", k+2, len(tp.B.Asked), tp.B.Earlier)
		}
	}
	if !strings.HasPrefix(strings.Join(stages, " "), "critique#1 revise#1") {
		t.Errorf("later turns: %v", stages)
	}

	// A case beside itself: every turn, every reply the same.
	var self PairView
	getJSON(t, fmt.Sprintf("%s/api/pair?a=%d&b=%d", base, p.B.I, p.B.I), &self)
	for k, tp := range self.Turns {
		if !tp.Same || len(tp.Diff) != 1 || tp.Diff[0].Op != "=" {
			t.Errorf("turn %d of a case beside itself differs: %+v", k+1, tp.Diff)
		}
	}
	var bad map[string]string
	if code := getJSON(t, base+"/api/pair?a=0&b=x", &bad); code != 400 || !strings.Contains(bad["error"], "case number") {
		t.Errorf("bad b: %d %v", code, bad)
	}
}
