package dataset

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPermutationGolden pins the PRNG output: if a Go release or a refactor
// changed it, every published option order would silently change.
func TestPermutationGolden(t *testing.T) {
	tests := []struct {
		seed uint64
		id   string
		n    int
		want []int
	}{
		{1, "C_001", 2, []int{0, 1}},
		{1, "C_003", 2, []int{0, 1}},
		{1, "C_004", 2, []int{0, 1}},
		{1, "C_005", 2, []int{1, 0}},
		{20250915, "aesop_section_1_5", 5, []int{4, 1, 0, 2, 3}},
		{0, "", 5, []int{2, 0, 1, 4, 3}},
	}
	for _, tc := range tests {
		got := permutation(tc.seed, tc.id, tc.n)
		if !slices.Equal(got, tc.want) {
			t.Errorf("permutation(%d, %q, %d) = %v, want %v", tc.seed, tc.id, tc.n, got, tc.want)
		}
	}
	// Sampling draws one key per id from its own stream.
	if got, want := stream(7, "sample", "r000").Uint64(), uint64(7036037942809982800); got != want {
		t.Errorf("sample key = %d, want %d", got, want)
	}
}

func TestPermutationUniform(t *testing.T) {
	// Every one of the 3! orders must occur, each near 1/6 of the time;
	// the bounds are ~6 standard deviations wide, so a fair shuffle fails
	// with negligible probability while a biased one (e.g. a naive
	// "swap with any position" loop) fails reliably.
	counts := map[string]int{}
	const n = 6000
	for i := range n {
		counts[fmt.Sprint(permutation(42, fmt.Sprintf("item-%d", i), 3))]++
	}
	if len(counts) != 6 {
		t.Fatalf("saw %d distinct orders, want 6: %v", len(counts), counts)
	}
	for k, c := range counts {
		if c < 820 || c > 1180 {
			t.Errorf("order %s drawn %d times of %d, want about 1000", k, c, n)
		}
	}
}

func TestShuffleNamedOptions(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 100 {
		gold := `"action1"`
		if i%10 == 9 {
			gold = "null" // high-ambiguity style: no gold
		}
		fmt.Fprintf(&b, `{"id": "C_%03d", "action1": "good %d", "action2": "bad %d", "preferred_action": %s}`+"\n", i, i, i, gold)
	}
	writeFile(t, dir, "mc.jsonl", []byte(b.String()))
	spec := func(filter string) *Spec {
		return &Spec{Path: "mc.jsonl", ID: "id", Filter: filter, Shuffle: &Shuffle{
			Seed: 11, Options: []string{"action1", "action2"}, Into: []string{"option_a", "option_b"}, Gold: "preferred_action",
		}}
	}
	items := load(t, spec(""), dir)
	letters := count(items, "gold_letter")
	if letters["A"] < 25 || letters["B"] < 25 || letters[""] != 10 {
		t.Errorf("gold letters %v: want both A and B often and 10 empty", letters)
	}
	for _, it := range items {
		f := it.Fields
		order := f["option_order"].([]string)
		if !slices.Contains(order, "action1") || !slices.Contains(order, "action2") {
			t.Fatalf("%s: option_order %v is not a permutation", it.ID, order)
		}
		// The text at each position is the option the order names.
		if f["option_a"] != f[order[0]] || f["option_b"] != f[order[1]] {
			t.Errorf("%s: options %v/%v do not follow order %v", it.ID, f["option_a"], f["option_b"], order)
		}
		switch g := f["gold_letter"]; g {
		case "":
			if f["preferred_action"] != nil {
				t.Errorf("%s: empty gold letter but preferred_action %v", it.ID, f["preferred_action"])
			}
		default:
			if f["option_"+strings.ToLower(g.(string))] != f["action1"] {
				t.Errorf("%s: gold %v does not point at action1's text", it.ID, g)
			}
		}
	}
	// The order depends only on (seed, id): filtering leaves it unchanged.
	filtered := load(t, spec(`id >= "C_050"`), dir)
	byID := map[string]Item{}
	for _, it := range items {
		byID[it.ID] = it
	}
	for _, it := range filtered {
		if !reflect.DeepEqual(it.Fields["option_order"], byID[it.ID].Fields["option_order"]) {
			t.Errorf("%s: order changed under filter", it.ID)
		}
	}
}

func TestShuffleList(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, `{"id": "f%d", "options": ["m%d-0", "m%d-1", "m%d-2", "m%d-3", "m%d-4"], "types": ["gt", "t1", "t2", "t3", "t4"], "answer": "A", "answer_index": 0}`+"\n", i, i, i, i, i, i)
	}
	writeFile(t, dir, "mor.jsonl", []byte(b.String()))
	tests := []struct {
		name string
		sh   Shuffle
	}{
		{"letter gold, in place", Shuffle{Seed: 3, List: "options", Parallel: []string{"types"}, Gold: "answer"}},
		{"index gold, new fields", Shuffle{Seed: 3, List: "options", IntoList: "shuffled", Into: []string{"a", "b", "c", "d", "e"}, Parallel: []string{"types"}, Gold: "answer_index", GoldKind: "index", GoldInto: "gold", OrderInto: "order"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sh := tc.sh
			items := load(t, &Spec{Path: "mor.jsonl", ID: "id", Shuffle: &sh}, dir)
			gold, order := sh.goldInto(), sh.orderInto()
			positions := map[any]int{}
			for _, it := range items {
				f := it.Fields
				list := f[sh.intoList()].([]any)
				g := f[gold].(string)
				k := int(g[0] - 'A')
				positions[g]++
				if !strings.HasSuffix(list[k].(string), "-0") || f["types"].([]any)[k] != "gt" {
					t.Errorf("%s: gold %s points at %v (%v), want the original first option", it.ID, g, list[k], f["types"])
				}
				if ord := f[order].([]string); ord[k] != "A" {
					t.Errorf("%s: order %v does not map gold %s back to A", it.ID, ord, g)
				}
				if len(sh.Into) > 0 && f["a"] != list[0] {
					t.Errorf("%s: into fields disagree with the list", it.ID)
				}
			}
			if len(positions) < 4 {
				t.Errorf("gold positions %v: shuffle is not spreading the answer", positions)
			}
		})
	}
}

func TestShuffleAfterExpand(t *testing.T) {
	// Shuffling runs per expanded item, keyed by the expanded id.
	dir := t.TempDir()
	writeFile(t, dir, "p.jsonl", []byte(`{"id": "p1", "x1": "a", "x2": "b", "y1": "c", "y2": "d"}`+"\n"))
	items := load(t, &Spec{Path: "p.jsonl", ID: "id",
		Expand: &Expand{Variants: []Variant{
			{Name: "one", Fields: map[string]string{"o1": "x1", "o2": "x2"}},
			{Name: "two", Fields: map[string]string{"o1": "y1", "o2": "y2"}},
		}},
		Shuffle: &Shuffle{Seed: 5, Options: []string{"o1", "o2"}, Into: []string{"A", "B"}},
	}, dir)
	for _, it := range items {
		want := permutation(5, it.ID, 2)
		if got := it.Fields["option_order"].([]string); got[0] != []string{"o1", "o2"}[want[0]] {
			t.Errorf("%s: order %v, want permutation %v", it.ID, got, want)
		}
	}
}
