package spec

import (
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/promoral/promoral/pipeline/parse"
)

// An item's shape is the sorted names of its fields whether it is digested
// on its own or after an item of the same, or another, shape; its gold is
// the label its gold value maps to, or says why there is none.
func TestDigestShapeWhateverCameBefore(t *testing.T) {
	spec := &TaskSpec{Gold: "gold", Answer: parse.Space{Labels: []parse.Label{{Value: "no", Gold: []string{"0"}}, {Value: "yes", Gold: []string{"1"}}}}}
	items := []map[string]any{
		{"id": 1, "text": "a", "gold": "0"},
		{"id": 2, "text": "b", "gold": "1"},
		{"id": 3, "note": "c", "gold": "1"},         // as many fields, another name
		{"id": 4, "text": "d", "gold": "0", "x": 1}, // one more
		{"id": 5, "text": "e"},                      // one fewer, no gold
		{"id": 6, "text": "f", "gold": nil},
		{"id": 7, "text": "g", "gold": "7"},
		{"id": 8, "text": "h", "gold": "1"}, // the first shape again
	}
	wantGold := []string{"no", "yes", "yes", "no", "<none>", "<empty>", "<bad>", "yes"}
	g := newDigester(spec)
	for i, f := range items {
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := strings.Join(keys, "\x00")
		d := g.table[g.keep(f)-1]
		if got := g.shapes[d.shape-1]; got != want {
			t.Errorf("item %d: shape %q, want %q", i, got, want)
		}
		var gold string
		switch d.gold {
		case noGold:
			gold = "<none>"
		case emptyGold:
			gold = "<empty>"
		case badGold:
			gold = "<bad>"
		default:
			gold = g.golds[d.gold-goldLabel]
		}
		if gold != wantGold[i] {
			t.Errorf("item %d: gold %s, want %s", i, gold, wantGold[i])
		}
		alone := newDigester(spec)
		if a := alone.digest(f); alone.shapes[a.shape-1] != want {
			t.Errorf("item %d: shape %q alone", i, alone.shapes[a.shape-1])
		}
	}
	if len(g.shapes) != 4 {
		t.Errorf("%d shapes, want 4 (each list of names once): %q", len(g.shapes), g.shapes)
	}
}

// An item is what a million-item study holds a million of: its size is
// watched (88 bytes before its store and shape were shared by the items of
// a shape and the store's Ref became one word).
func TestItemSize(t *testing.T) {
	if s := unsafe.Sizeof(Item{}); s > 64 {
		t.Errorf("an Item takes %d bytes, want at most 64", s)
	}
}
