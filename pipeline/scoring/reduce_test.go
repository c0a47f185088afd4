package scoring_test

import (
	"math"
	"testing"

	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// sample is one repeat's answer: a label ("" unparsed), a confidence (NaN
// none) and whether the case errored.
type sample struct {
	label string
	conf  float64
	err   bool
}

// reduceSet builds a result set of one model x strategy x task with the
// given samples per item (item i's samples are repeats 0..k-1).
func reduceSet(items map[string][]sample, gold map[string]string, reduce string) *spec.ResultSet {
	task := &spec.Task{Name: "t", Labels: []string{"A", "B", "C"}, Positive: "A", Spec: &spec.TaskSpec{}}
	m := &spec.Model{Name: "m", Spec: &spec.ModelSpec{Name: "m"}}
	s := &spec.Strategy{Name: "s", Spec: &spec.StrategySpec{Name: "s", Reduce: reduce}}
	st := &spec.Study{Run: &spec.RunFile{}, Strategies: []*spec.Strategy{s}}
	rs := &spec.ResultSet{Study: st}
	cells := map[int]*spec.RowCell{}
	var ids []string
	for id := range items {
		ids = append(ids, id)
	}
	for _, id := range sortedStrings(ids) {
		it := &spec.Item{ID: id, Gold: gold[id]}
		for r, x := range items[id] {
			c := &spec.Case{Model: m, Strategy: s, Task: task, Item: it, Repeat: r}
			if cells[r] == nil {
				cells[r] = spec.NewRowCell(c, "m", "s", nil)
			}
			res := &spec.Result{Done: true, Label: x.label, Parsed: x.label != "", Acct: spec.Account{CostUSD: 1, PromptTokens: 10}}
			if !math.IsNaN(x.conf) {
				v := x.conf
				res.Confidence = &v
			}
			if it.Gold != "" {
				ok := x.label == it.Gold
				res.Correct = &ok
			}
			if x.err {
				res.Err = "boom"
			}
			rs.Rows = append(rs.Rows, cells[r].Row(it, res))
		}
	}
	return rs
}

func sortedStrings(xs []string) []string {
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[j] < xs[i] {
				xs[i], xs[j] = xs[j], xs[i]
			}
		}
	}
	return xs
}

var nan = math.NaN()

// A majority vote counts parsed labels only; a tie at the top is no answer
// and is counted, never broken by order.
func TestReduceMajorityTiesAreExact(t *testing.T) {
	items := map[string][]sample{
		"tie2":     {{"A", 0.9, false}, {"B", 0.8, false}},                                                        // 1:1
		"tie3way":  {{"A", nan, false}, {"B", nan, false}, {"C", nan, false}},                                     // 1:1:1
		"tie_top":  {{"A", .5, false}, {"A", .5, false}, {"B", .5, false}, {"B", .5, false}, {"C", .5, false}},    // 2:2:1
		"win":      {{"B", 0.6, false}, {"A", 0.2, false}, {"A", 0.4, false}, {"", nan, false}, {"", nan, false}}, // A 2, B 1
		"unparsed": {{"", nan, false}, {"", nan, false}},
		"one":      {{"C", 0.7, false}},
		"errored":  {{"A", 0.9, false}, {"A", 0.9, true}, {"A", 0.9, false}},
		"late_tie": {{"", nan, false}, {"B", nan, false}, {"A", nan, false}, {"A", nan, false}, {"B", nan, false}}, // 2:2
	}
	gold := map[string]string{"win": "A", "tie2": "A"}
	rs := reduceSet(items, gold, "majority")
	red, stats := scoring.ReduceRows(rs, func(*spec.ResultRow) string { return "majority" })
	if len(red.Rows) != len(items) {
		t.Fatalf("%d reduced rows for %d items", len(red.Rows), len(items))
	}
	got := map[string]spec.ResultRow{}
	for _, r := range red.Rows {
		got[r.Item.ID] = r
	}
	for _, id := range []string{"tie2", "tie3way", "tie_top", "late_tie"} {
		r := got[id]
		if r.Parsed() || r.Label() != "" {
			t.Errorf("%s: a tie reduced to %q (parsed %v), want no answer", id, r.Label(), r.Parsed())
		}
	}
	tie2 := got["tie2"]
	if c, ok := tie2.Correct(); !ok || c {
		t.Errorf("tie2 has gold A: the tie must count as not correct, got correct=%v graded=%v", c, ok)
	}
	w := got["win"]
	if w.Label() != "A" || !w.Parsed() || math.Abs(w.Conf-0.3) > 1e-12 {
		t.Errorf("win: %q conf %v, want A with the mean confidence of its voters 0.3", w.Label(), w.Conf)
	}
	if c, ok := w.Correct(); !ok || !c {
		t.Errorf("win: want correct")
	}
	if w.Cost != 5 || w.Tokens != 50 {
		t.Errorf("win: a reduced row costs its 5 samples' sum: got $%v, %d tokens", w.Cost, w.Tokens)
	}
	if r := got["unparsed"]; r.Parsed() {
		t.Errorf("no sample parsed: want unparsed, got %q", r.Label())
	}
	if r := got["one"]; r.Label() != "C" || r.Conf != 0.7 {
		t.Errorf("one sample: %q %v", r.Label(), r.Conf)
	}
	if r := got["errored"]; !r.Errored() {
		t.Errorf("an item with an errored sample must reduce to an errored row")
	}
	var ties, n int
	for _, s := range stats {
		ties += s.Ties
		n += s.Items
	}
	if ties != 4 || n != len(items) {
		t.Errorf("stats count %d ties of %d items, want 4 of %d", ties, n, len(items))
	}
	winner, tie := spec.MajorityLabel(nil)
	if winner != "" || tie {
		t.Errorf("no samples: %q %v", winner, tie)
	}
}

func TestReduceAnyAllFirst(t *testing.T) {
	items := map[string][]sample{
		"x": {{"B", nan, false}, {"A", nan, false}, {"B", nan, false}}, // gold A: one correct
		"y": {{"A", nan, false}, {"A", nan, false}},                    // gold A: all correct
		"z": {{"B", nan, false}, {"", nan, false}},                     // no gold: any positive (A)? no
		"w": {{"B", nan, false}, {"A", nan, false}},                    // no gold: one positive
	}
	gold := map[string]string{"x": "A", "y": "A"}
	want := map[string]map[string]string{
		"any":   {"x": "A", "y": "A", "z": "B", "w": "A"},
		"all":   {"x": "B", "y": "A", "z": "B", "w": "B"},
		"first": {"x": "B", "y": "A", "z": "B", "w": "B"},
	}
	for r, exp := range want {
		red, _ := scoring.ReduceRows(reduceSet(items, gold, ""), func(*spec.ResultRow) string { return r })
		for _, row := range red.Rows {
			if row.Label() != exp[row.Item.ID] {
				t.Errorf("%s: item %s reduced to %q, want %q", r, row.Item.ID, row.Label(), exp[row.Item.ID])
			}
		}
	}
	// reduce: none keeps every sample.
	red, _ := scoring.ReduceRows(reduceSet(items, gold, ""), func(*spec.ResultRow) string { return "none" })
	if len(red.Rows) != 9 {
		t.Errorf("none: %d rows, want the 9 samples", len(red.Rows))
	}
}
