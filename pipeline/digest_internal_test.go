package pipeline

import (
	"sort"
	"strings"
	"testing"
)

// An item's shape is the sorted names of its fields whether it is digested
// on its own or after an item of the same, or another, shape.
func TestDigestShapeWhateverCameBefore(t *testing.T) {
	spec := &TaskSpec{Gold: "gold"}
	items := []map[string]any{
		{"id": 1, "text": "a", "gold": "0"},
		{"id": 2, "text": "b", "gold": "1"},
		{"id": 3, "note": "c", "gold": "1"},         // as many fields, another name
		{"id": 4, "text": "d", "gold": "0", "x": 1}, // one more
		{"id": 5, "text": "e"},                      // one fewer, no gold
		{"id": 6, "text": "f", "gold": nil},
	}
	var prev *itemDigest
	for i, f := range items {
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := strings.Join(keys, "\x00")
		d := digestOf(spec, f, prev)
		if d.shape != want {
			t.Errorf("item %d: shape %q, want %q", i, d.shape, want)
		}
		g, has := f["gold"]
		if d.gold != g || d.hasGold != has {
			t.Errorf("item %d: gold %v (%v), want %v (%v)", i, d.gold, d.hasGold, g, has)
		}
		if alone := digestOf(spec, f, nil); alone.shape != d.shape {
			t.Errorf("item %d: shape %q alone, %q after another", i, alone.shape, d.shape)
		}
		prev = d
	}
}
