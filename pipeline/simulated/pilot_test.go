package simulated

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ReadPilot asks its scan for results.parquet's four columns and smooths
// each item's share of right samples of the model; samples without a gold
// label and other models' rows do not count.
func TestReadPilot(t *testing.T) {
	rows := []map[string]any{
		{"model": "m", "task": "t", "item_id": "a", "correct": true},
		{"model": "m", "task": "t", "item_id": "a", "correct": true},
		{"model": "m", "task": "t", "item_id": "a", "correct": false},
		{"model": "m", "task": "t", "item_id": "b", "correct": nil},
		{"model": "m", "task": "u", "item_id": int64(7), "correct": false},
		{"model": "other", "task": "t", "item_id": "a", "correct": false},
	}
	var gotPath string
	var gotCols []string
	scan := func(path string, cols []string, fn func(map[string]any)) error {
		gotPath, gotCols = path, cols
		for _, r := range rows {
			fn(r)
		}
		return nil
	}
	p, err := ReadPilot("pilot", "m", scan)
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != filepath.Join("pilot", "results.parquet") || !slices.Equal(gotCols, []string{"model", "task", "item_id", "correct"}) {
		t.Errorf("scanned %s columns %v", gotPath, gotCols)
	}
	if got := p["t"]["a"]; got != 3.0/5 { // (2 right + 1) / (3 samples + 2)
		t.Errorf("t/a = %v, want 3/5", got)
	}
	if _, ok := p["t"]["b"]; ok {
		t.Error("an item without a gold label got a chance")
	}
	if got := p["u"]["7"]; got != 1.0/3 {
		t.Errorf("u/7 = %v, want 1/3", got)
	}

	if _, err := ReadPilot("pilot", "absent", scan); err == nil || !strings.Contains(err.Error(), `no answer of model "absent"`) {
		t.Errorf("a model the pilot lacks: %v", err)
	}
	fail := func(string, []string, func(map[string]any)) error { return errors.New("no such file") }
	if _, err := ReadPilot("pilot", "m", fail); err == nil || !strings.Contains(err.Error(), "pilot pilot: no such file (name a folder apply wrote)") {
		t.Errorf("a failed read: %v", err)
	}
}
