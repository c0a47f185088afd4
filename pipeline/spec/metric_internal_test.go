package spec

import (
	"fmt"
	"testing"
)

// A row keeps its label whatever the number of distinct labels: past the
// table's numbers it holds the text itself.
func TestRowLabelsPastTheTable(t *testing.T) {
	cell := &RowCell{Task: &Task{Name: "t"}, labels: newLabelTable()}
	it := &Item{ID: "i"}
	var rows []ResultRow
	for i := 0; i < labelMore+10; i++ {
		rows = append(rows, rowOf(cell, it, &Result{Done: true, Label: fmt.Sprint("label ", i)}))
	}
	for i, r := range rows {
		if want := fmt.Sprint("label ", i); r.Label() != want {
			t.Fatalf("row %d: label %q, want %q", i, r.Label(), want)
		}
	}
	if r := rows[len(rows)-1].AsUnparsed(); r.Label() != "" {
		t.Errorf("an unparsed row keeps label %q", r.Label())
	}
}
