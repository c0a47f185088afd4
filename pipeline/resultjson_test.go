package pipeline

import (
	"testing"
)

// The outputs, judge and item columns, written together into one buffer,
// are each what the encoder writes for that value alone, in every mix of
// present and absent.
func TestResultJSONColumnsAsEncodedAlone(t *testing.T) {
	st := &Study{Run: &RunFile{Name: "r"}, ConfigHash: "h"}
	e := &Engine{study: st, subsets: newSubsetNames()}
	outputs := map[string]any{"label": "acceptable", "confidence": 0.7, "reply": "Final Answer: \"Acceptable\"\n", "n": 3, "list": []any{"a", 1.5, nil}}
	judge := map[string]any{"label": "unsafe", "why": "<b>&</b>"}
	fields := map[string]any{"id": "x1", "scenario": "I helped \u2028 a friend", "label_int": int64(0), "is_short": true, "w": 1e6}
	for mask := 0; mask < 8; mask++ {
		item := &Item{ID: "x1", Fields: map[string]any{}}
		r := &Result{Done: true}
		if mask&1 != 0 {
			r.Outputs = outputs
		}
		if mask&2 != 0 {
			r.Judge = judge
		}
		if mask&4 != 0 {
			item.Fields = fields
		}
		c := &Case{Model: &Model{Name: "m"}, Strategy: &Strategy{Name: "s"}, Task: &Task{Name: "t", Spec: &TaskSpec{}}, Item: item}
		row := e.resultValues(c, r)
		cols := e.resultColumns()
		at := func(name string) any {
			for i, col := range cols {
				if col.Name == name {
					return row[i]
				}
			}
			t.Fatalf("no column %s", name)
			return nil
		}
		for _, w := range []struct {
			col string
			v   map[string]any
		}{{"outputs", r.Outputs}, {"judge", r.Judge}, {"item", item.Fields}} {
			var want any
			if len(w.v) > 0 {
				want = string(appendTraceValue(nil, w.v, false))
			}
			if got := at(w.col); got != want {
				t.Errorf("mask %d, %s: %v, want %v", mask, w.col, got, want)
			}
		}
	}
}
